#!/usr/bin/python3
"""Stalls of the machine that a thread is charged for as its own CPU time.

A SCHED_FIFO thread (priority 70, like PipeWire's data thread at 88 it outranks every normal
process) works like a data thread: every 5 ms it spins for 2 ms, reading CLOCK_MONOTONIC and its
own CLOCK_THREAD_CPUTIME_ID in a tight loop, then sleeps. Between two reads of that loop the thread
does nothing but read the clocks (about a microsecond); a gap of more than GAP_US between two reads
is a stall. If the thread's CPU time advanced by the gap too, the stall was charged to the thread as
its own work (the virtual CPU itself was held up: the host, not the guest's scheduler); if it did
not, the guest preempted the thread (interrupt threads, other RT threads).

node.convolver.late-cycles-own counts a late call whose CPU time plus helper waits exceed the
period: a charged stall longer than the period minus the call's work makes such a call. This script
counts those stalls on the machine, with no PipeWire and no convolver running.

    sudo /usr/bin/python3 scripts/host-stalls.py [SECONDS]      # default 60; needs CAP_SYS_NICE
"""
import os
import sys
import time

GAP_US = 200
seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(70))
steal_before = int(open("/proc/stat").readline().split()[8])

charged, preempted = [], []
spins = 0
end = time.monotonic_ns() + int(seconds * 1e9)
while time.monotonic_ns() < end:
    start = time.monotonic_ns()
    wall, cpu = start, time.thread_time_ns()
    while wall - start < 2_000_000:
        next_wall, next_cpu = time.monotonic_ns(), time.thread_time_ns()
        gap = next_wall - wall
        if gap > GAP_US * 1000:
            (charged if next_cpu - cpu > gap / 2 else preempted).append((gap // 1000, (next_cpu - cpu) // 1000))
        wall, cpu = next_wall, next_cpu
    spins += 1
    time.sleep(0.003)

steal = int(open("/proc/stat").readline().split()[8]) - steal_before
print(f"{seconds:.0f} s, {spins} spins of 2 ms at SCHED_FIFO 70; /proc/stat steal during the run: {steal} ticks")
for name, stalls in (("charged to the thread as CPU time", charged), ("not charged (guest preemption)", preempted)):
    gaps = sorted(gap for gap, _ in stalls)
    summary = f"longest {gaps[-1]} us, median {gaps[len(gaps) // 2]} us" if gaps else ""
    print(f"stalls > {GAP_US} us {name}: {len(stalls)} {summary}")
    for threshold in (1000, 1333, 5333):
        print(f"    longer than {threshold} us: {sum(gap > threshold for gap in gaps)}")
