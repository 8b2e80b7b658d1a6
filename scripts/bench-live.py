#!/usr/bin/python3
"""make bench-live: swift-convolver's node beside PipeWire's filter-chain convolver, in one run.

Same private headless daemon, same input (stereo noise), same synthetic stereo IR, same quantum for
both; one system at a time (the machine has few cores, running both at once would measure the
competition). Per case it reports: process CPU over the run (all threads, /proc/PID/stat utime+stime),
data-thread busy p99/max and late cycles (`pw-convolver top --batch`), the graph driver's own late
cycles (the whole graph stalled: the machine, not the system measured), and how far the recorded
output is from numpy's convolution of the input recorded beside it.
Beside them, the recorder's busy p99/max in the same case: a node that does nothing but hand its
input to a file writer, so about the least any node's busy time is in this graph on this machine (a
stall of the machine lifts both maxima alike). Below the table: our figures over filter-chain's per
case, CPU by thread (where each process spends it) and our node's own statistics (its convolver.*
properties: late levels, helper margin, busy inside the node's process call). With --own-record,
also its own record of every call's input and output (module key `test.record-calls`) held to
numpy's convolution: when the machine stalls, pw-record loses cycles, and the node's record still
shows whether its output was right. It is off by default: the record is a test seam whose copying
costs our node CPU and busy time a user's node does not spend.

The machine is shared: a system's CPU in one case moves by up to 40 % from one run to the next,
and both systems' with it. With --rounds N each case runs N times, the two systems alternating
(first one, then the other first), and the ratios are given per round, with their median.
Our node is measured once it runs an engine planned for the case's quantum (`pw-convolver run`
plans for 256 and re-plans at its first cycle of another quantum, a one-off build and crossfade).
With a 0.001 s IR among the cases, each system's CPU there is its floor (a client process woken
every cycle: on a small virtual machine most of what either system costs), and the CPU above it,
the convolution's own, is compared too; each round runs the floor beside the other IRs.
That difference is noisy: a floor alone moves between 0.7 and 1.6 % of a core within one case, with
the machine (waking an idle virtual CPU is most of it). So perf, where installed, also samples each
process every 50 µs of its CPU time, and the samples in each system's convolution code (class
Profile) give the CPU the convolution itself took, free of the wake-ups; above the floor in the same
terms it is compared too. "rest %" is the process's other samples: it should stay near its
floor's; what it gains over it is cost the classification missed, or the machine's drift.

--pipewire 1.4 runs both on PipeWire 1.4.2 and WirePlumber 0.5.8 from the prefix of
scripts/pipewire-1.4.sh (our node built against it by `make test-pipewire-1.4`): filter-chain 1.4.2
is the rival there (it has AVX kernels). WirePlumber runs beside the daemon only to configure the
filter-chain streams' ports (headless, 1.4.2's streams get one port each without it); nothing is
autoconnected. The recorder is the tests' own (Tests/SyncRecorder), which runs in the cycle on
both versions (1.x's pw-record runs a cycle late).

--pipewire 1.6 runs this script again inside Debian sid's root (scripts/debian-root.sh sid-pipewire:
PipeWire 1.6, WirePlumber 0.5, filter-chain 1.6 with its AVX2+FMA kernels), with the checkout and
the toolchain bound in, on the system build's node (`make test`'s); perf is not in that root.

Uses Debian's /usr/bin/python3 with python3-numpy and python3-scipy (installed by `make deps`).
  /usr/bin/python3 scripts/bench-live.py                      # all cases: IR 1,3,10 s x quantum 64,256,1024
  /usr/bin/python3 scripts/bench-live.py --seconds 5 --ir 1 --quantum 256   # a smoke run
  /usr/bin/python3 scripts/bench-live.py --ir 3 --quantum 256 --rounds 3      # ratios and their median
  /usr/bin/python3 scripts/bench-live.py --ir 0.001,3 --quantum 256 --rounds 3  # and the CPU above each floor
  /usr/bin/python3 scripts/bench-live.py --pipewire 1.4 --ir 0.001,3,10 --quantum 256,1024 --rounds 3
  /usr/bin/python3 scripts/bench-live.py --pipewire 1.6 --ir 0.001,3,10 --quantum 256,1024 --rounds 3
  /usr/bin/python3 scripts/bench-live.py --ir 0.001,3 --quantum 256 --rounds 3 --baseline .build/before/pw-convolver
                                              # a change against the build before it, in the same rounds
"""
import argparse
import json
import math
import os
import statistics
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from scipy.io import wavfile
from scipy.signal import fftconvolve


# pw-record writes a LIST chunk scipy does not read; harmless.
warnings.filterwarnings("ignore", category=wavfile.WavFileWarning)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATE = 48000
PORTS = ("adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve }"
         " node.autoconnect = false")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# An IR this short costs next to nothing: a run with it measures a system's floor (see print_above_floor).
FLOOR_IR_SECONDS = 0.001
PROFILE_PERIOD_NS = 50_000  # perf: one sample per 50 µs of a process's CPU time
# A `pipewire -c` client process's config up to its own modules: real-time threads, the protocol,
# client nodes and the adapter; the modules measured follow, then "]".
CLIENT_MODULES = """context.properties = { log.level = 2 }
context.spa-libs = { audio.convert.* = audioconvert/libspa-audioconvert  support.* = support/libspa-support }
context.modules = [
  { name = libpipewire-module-rt args = { nice.level = -11 rt.prio = 88 rtkit.enabled = false rtportal.enabled = false }
     flags = [ ifexists nofail ] }
  { name = libpipewire-module-protocol-native }
  { name = libpipewire-module-client-node }
  { name = libpipewire-module-adapter }
"""
JUDGE_RECORD = os.path.join(ROOT, "Tests/LiveTests/Support/judge_record.py")
SYNC_RECORDER = os.path.join(ROOT, "Tests/SyncRecorder/sync_record.c")


def pipewire_environment(version):
    """The environment for one PipeWire: this system's (or the sid root's, for 1.6), or 1.4.2's prefix
    (scripts/pipewire-1.4.sh env)."""
    if version in ("system", "1.6"):
        return dict(os.environ)
    dump = subprocess.run(["bash", "-c", f'eval "$({ROOT}/scripts/pipewire-1.4.sh env)" && env -0'], check=True,
                          capture_output=True, text=True).stdout
    return dict(item.split("=", 1) for item in dump.split("\0") if "=" in item)


def synthetic_ir(seconds, seed):
    """Stereo exponentially decaying noise (RT60 = the IR's length), decorrelated channels, a direct
    sound at 0: like a hall, and deterministic."""
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    decay = np.exp(-6.9 * np.arange(n) / n)  # -60 dB at the end
    ir = (rng.standard_normal((n, 2)) * decay[:, None] * 0.05).astype(np.float32)
    ir[0] = [0.5, 0.4]
    return ir


class Graph:
    """A private headless PipeWire daemon (scripts/private-pipewire.sh) and the processes of one case."""

    def __init__(self, directory, base_env, session_manager):
        self.directory = directory
        self.env = dict(base_env, XDG_RUNTIME_DIR=directory, PIPEWIRE_DEBUG="1")
        self.env.pop("PIPEWIRE_REMOTE", None)
        subprocess.run([f"{ROOT}/scripts/private-pipewire.sh", "start", directory], check=True,
                       stdout=subprocess.DEVNULL, env=self.env)
        self.session_manager = None
        if session_manager:
            self.session_manager = self.start(["wireplumber", "--profile", "policy"], "wireplumber.log",
                                              {"XDG_STATE_HOME": os.path.join(directory, "state"),
                                               "XDG_CONFIG_HOME": os.path.join(directory, "config-home")})
            time.sleep(2)
        self.recorder = os.path.join(directory, "sync_record")
        subprocess.run(["bash", "-c", f'cc -O2 -o "{self.recorder}" "{SYNC_RECORDER}" $(pkg-config --cflags --libs libpipewire-0.3)'],
                       check=True, env=self.env)

    def stop(self):
        if self.session_manager:
            self.session_manager.terminate()
            self.session_manager.wait(timeout=10)
        subprocess.run([f"{ROOT}/scripts/private-pipewire.sh", "stop", self.directory], check=False, env=self.env)

    def run(self, *args):
        return subprocess.run(args, env=self.env, check=True, capture_output=True, text=True).stdout

    def start(self, args, log, extra_env=None):
        with open(os.path.join(self.directory, log), "w") as out:
            return subprocess.Popen(args, env=dict(self.env, **(extra_env or {})), stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def wait_for_ports(self, ports, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            listed = self.run("pw-link", "-o", "-i")
            if all(port in listed.split() for port in ports):
                return
            time.sleep(0.1)
        raise RuntimeError(f"ports {ports} did not appear; see logs in {self.directory}")


def process_cpu_seconds(pid):
    """utime + stime of all threads of a process (fields 14 and 15 of /proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def thread_cpu_seconds(pid):
    """utime + stime per thread name (e.g. the data thread "data-loop.0" or "pipewire", our helpers
    "swconv-…"), summed over threads of the same name: where a process spends its CPU. The process's
    own first thread (its main loop) is "main": PipeWire 0.3.65 names its data thread "pipewire" too."""
    by_name = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as stat:
                head, tail = stat.read().rsplit(")", 1)
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        name = "main" if int(tid) == pid else re.sub(r"\d+$", "N", head.split("(", 1)[1])
        fields = tail.split()
        by_name[name] = by_name.get(name, 0) + (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    return by_name


def thread_percent_since(pid, start, wall):
    """CPU % of a core by thread name since `start` (thread_cpu_seconds then), over `wall` seconds."""
    return {name: 100 * (used - start.get(name, 0)) / wall for name, used in thread_cpu_seconds(pid).items()}


def thread_shares(threads):
    """A case's CPU % by thread (thread_cpu_seconds over the case), largest first, as one line."""
    shares = sorted(threads.items(), key=lambda item: -item[1])
    return "  ".join(f"{name} {share:.2f}" for name, share in shares if share >= 0.005)


class Profile:
    """`perf record` of one process, a cpu-clock sample every PROFILE_PERIOD_NS of its CPU time, and
    which of those samples are the convolution's. Ours: the helper threads' (they run nothing else),
    and the data thread's in the engine (Swift module Convolution), its C kernels, FFTW and the Swift
    runtime. Filter-chain's: its module (in 0.3 the convolver and its FFT live there), the 1.x
    filter-graph libraries and FFTW (1.4's FFT); the graph's copies in and out count with them, as
    they do in its floor. Each sample interrupts the process: a few % more CPU for both."""

    def __init__(self, pid, path):
        self.path = path
        self.process = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-c", str(PROFILE_PERIOD_NS),
                                         "-p", str(pid), "-o", path], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)

    def stop(self):
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)

    def convolution_cpu_seconds(self, system):
        """(CPU s in the convolution, CPU s in everything else) over the recording."""
        script = subprocess.run(["perf", "script", "-i", self.path, "-F", "comm,tid,ip,sym,dso"],
                                capture_output=True, text=True, check=True).stdout
        convolution = other = 0
        for line in script.splitlines():
            fields = re.match(r"\s*(\S+)\s+\d+\s+[0-9a-f]+\s+(.*?)\s*\((.*)\)\s*$", line)
            if not fields:
                continue
            thread, symbol, library = fields.groups()
            if system == "filter-chain":
                ours = any(name in library for name in ("filter-graph", "module-filter-chain", "fftw"))
            else:
                ours = (thread.startswith("swconv-") or "11Convolution" in symbol or symbol.startswith("cspectrum_")
                        or "fftw" in library or "libswiftCore" in library)
            convolution += ours
            other += not ours
        return convolution * PROFILE_PERIOD_NS / 1e9, other * PROFILE_PERIOD_NS / 1e9


def perf_available():
    return shutil.which("perf") is not None and subprocess.run(["perf", "--version"], capture_output=True).returncode == 0


def filter_chain_config(path, ir_path, tag):
    """A `pipewire -c` client process running filter-chain's builtin convolver, one per channel."""
    with open(path, "w") as conf:
        conf.write(f"""
{CLIENT_MODULES}  {{ name = libpipewire-module-filter-chain
     args = {{
       node.description = "filter-chain convolver"
       filter.graph = {{
         nodes = [
           {{ type = builtin label = convolver name = left  config = {{ filename = "{ir_path}" channel = 0 }} }}
           {{ type = builtin label = convolver name = right config = {{ filename = "{ir_path}" channel = 1 }} }}
         ]
         inputs = [ "left:In" "right:In" ]
         outputs = [ "left:Out" "right:Out" ]
       }}
       audio.channels = 2
       audio.position = [ FL FR ]
       audio.rate = {RATE}
       capture.props = {{ node.name = "fc-in-{tag}" node.want-driver = false {PORTS} }}
       playback.props = {{ node.name = "fc-out-{tag}" node.want-driver = false {PORTS} }}
     }}
  }}
]
""")


def swift_node_available(executable):
    probe = subprocess.run([executable, "run", "--help"], capture_output=True, text=True)
    usage = probe.stdout + probe.stderr
    return probe.returncode == 0 and "--ir" in usage


def run_case(graph, system, ir_path, ir_seconds, quantum, input_path, seconds, executable, profiled, own_record):
    """Plays the input through one system, records it, returns the measurements."""
    tag = f"{system}-{ir_seconds}-{quantum}-{os.getpid()}"
    graph.run("pw-metadata", "-n", "settings", "0", "clock.force-quantum", str(quantum))
    if system == "filter-chain":
        conf = os.path.join(graph.directory, f"fc-{tag}.conf")
        filter_chain_config(conf, ir_path, tag)
        node = graph.start(["pipewire", "-c", conf], f"{tag}.log")
        inputs, outputs = f"fc-in-{tag}:input_", f"fc-out-{tag}:output_"
        measured = [f"fc-in-{tag}", f"fc-out-{tag}"]
        calls_path = None
    else:
        name = f"swconv-{tag}"
        # With --own-record, the node's own record of every call's input and output (CallRecorder,
        # a test seam; its copying, about 4 KB a call at quantum 256, counts against our node's CPU;
        # the file is written when the node stops, after the CPU was measured).
        calls_path = os.path.join(graph.directory, f"calls-{tag}.f32") if own_record else None
        extra = ["--args", f'{{ test.record-calls = "{calls_path}" }}'] if own_record else []
        node = graph.start([executable, "run", "--ir", ir_path, "--name", name] + extra, f"{tag}.log")
        inputs, outputs = f"{name}:input_", f"{name}:output_"
        measured = [name]
    recording = os.path.join(graph.directory, f"{tag}.f32")
    try:
        # The node plans its FFTs (FFTW_MEASURE) before it shows ports: allow for a busy machine.
        graph.wait_for_ports([inputs + "FL", outputs + "FL"], timeout=180)
        # One recorder takes the system's input (FL FR: what pw-play sends) and its output (RL RR)
        # in the same cycles, so the output is judged against what the system received.
        # It wants the driver (PIPEWIRE_PROPS, read by pw_filter) so the chain is clocked; the player waits to be linked.
        recorder = graph.start([graph.recorder, f"rec-{tag}", "FL,FR,RL,RR", recording, str(int(3 * seconds + 60))],
                               f"rec-{tag}.log", {"PIPEWIRE_PROPS": "{ node.want-driver = true }"})
        player = graph.start(["pw-play", "-P", f"{{ node.name = play-{tag} node.want-driver = false {PORTS} }}",
                              input_path], f"play-{tag}.log")
        graph.wait_for_ports([f"play-{tag}:output_FL", f"rec-{tag}:input_FL"])
        for channel, recorded in (("FL", "RL"), ("FR", "RR")):
            graph.run("pw-link", f"{outputs}{channel}", f"rec-{tag}:input_{recorded}")
        for channel in ("FL", "FR"):
            graph.run("pw-link", f"play-{tag}:output_{channel}", f"rec-{tag}:input_{channel}")
            graph.run("pw-link", f"play-{tag}:output_{channel}", inputs + channel)
        if system != "filter-chain":
            settle_on_quantum(graph, name, quantum)
        cpu_start, wall_start = process_cpu_seconds(node.pid), time.monotonic()
        threads_start = thread_cpu_seconds(node.pid)
        profile = Profile(node.pid, os.path.join(graph.directory, f"perf-{tag}.data")) if profiled else None
        top = subprocess.Popen([executable, "top", "--batch"], env=graph.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        player.wait(timeout=seconds + ir_seconds + 60)
        cpu = process_cpu_seconds(node.pid) - cpu_start
        wall = time.monotonic() - wall_start
        if profile:
            profile.stop()
        threads = thread_percent_since(node.pid, threads_start, wall)
        statistics = node_statistics(graph, measured[0]) if system != "filter-chain" else {}
        time.sleep(1.5)  # pw-play exits once it queued its last buffer: let the last of it reach pw-record
        top.send_signal(signal.SIGINT)
        top_output = top.communicate(timeout=30)[0]
        with open(os.path.join(graph.directory, f"top-{tag}.txt"), "w") as saved:  # every node, for --keep
            saved.write(top_output)
        if top.returncode != 0:
            raise RuntimeError(f"pw-convolver top exited {top.returncode}:\n{top_output[-3000:]}")
        recorder.send_signal(signal.SIGINT)  # the recorder writes its file on SIGINT
        recorder.wait(timeout=30)
    finally:
        node.send_signal(signal.SIGINT)
        try:
            node.wait(timeout=10)
        except subprocess.TimeoutExpired:
            node.kill()
    rows = parse_top_total(top_output)
    busy = [rows[m] for m in measured if m in rows]
    if not busy:
        raise RuntimeError(f"top saw none of {measured}:\n{top_output}")
    convolution, rest = profile.convolution_cpu_seconds(system) if profile else (math.nan, math.nan)
    return {
        "cpu_percent": 100 * cpu / wall,
        "convolution_percent": 100 * convolution / wall,
        "rest_percent": 100 * rest / wall,
        "threads": threads,
        "statistics": statistics,
        "busy_p99_us": max(r["busy_p99"] for r in busy),
        "busy_max_us": max(r["busy_max"] for r in busy),
        "late": max(r["late"] for r in busy),
        # The recorder's node only hands its input to a file writer: its busy time is about what any
        # node costs in this graph on this machine (the floor under the systems' busy figures).
        "recorder_busy": rows.get(f"rec-{tag}"),
        # The graph's driver late itself: the machine stalled the whole graph (not one node).
        "driver_late": rows.get("Dummy-Driver", {}).get("late"),
        "recording": recording,
        "own_record": own_record_difference(calls_path, ir_path) if calls_path else None,
    }


def own_record_difference(calls_path, ir_path):
    """Our node's own record of its calls held to numpy's convolution of its own input (the test
    suite's judge_record.py): its result for the worse output, or None if the node wrote no record."""
    if not os.path.exists(calls_path):  # written by the node when it stops
        return None
    spec_path = calls_path + ".json"
    with open(spec_path, "w") as spec:
        json.dump({"calls": calls_path, "inputs": 2, "outputs": 2, "segments": [{"wet": 1, "dry": 0}],
                   "entries": [{"input": c, "output": c, "file": ir_path, "channel": c} for c in range(2)]}, spec)
    judged = json.loads(subprocess.run([sys.executable, JUDGE_RECORD, spec_path], check=True, capture_output=True,
                                       text=True).stdout)
    worse = max(judged["outputs"], key=lambda output: output["worst"])
    return {"frames": judged["frames"], **worse}


def recorder_busy(result):
    row = result.get("recorder_busy")
    return f"{row['busy_p99']:.1f}/{row['busy_max']:.1f}" if row else "-"


def settle_on_quantum(graph, name, quantum):
    """Waits until our node runs an engine planned for the case's quantum (see the module's
    docstring): its one-off re-plan would add a quarter or more to a 20 s floor at quantum 1024."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if str(node_statistics(graph, name).get("plan-quantum")) == str(quantum):
            time.sleep(1.0)  # the crossfade (50 ms), then the old engine retired and freed
            return
        time.sleep(0.2)
    raise RuntimeError(f"{name} did not re-plan for quantum {quantum} within 60 s")


def node_statistics(graph, name):
    """Our node's own statistics (its convolver.* properties, as pw-dump shows them)."""
    for node in json.loads(graph.run("pw-dump", "-N") or "[]"):
        props = (node.get("info") or {}).get("props") or {}
        if node.get("type", "").endswith(":Node") and props.get("node.name") == name:
            return {key[len("convolver."):]: value for key, value in props.items() if key.startswith("convolver.")}
    return {}


def parse_top_total(output):
    """Rows of the TOTAL block of `pw-convolver top --batch`, by node name."""
    rows = {}
    lines = output.split("\nTOTAL ", 1)[-1].splitlines()[2:]
    for line in lines:
        fields = line.split()
        if len(fields) < 14 or fields[9] == "-":
            continue
        rows[" ".join(fields[13:])] = {"busy_p99": float(fields[9]), "busy_max": float(fields[10]),
                                        "late": int(fields[12])}
    return rows


def compare_recording(recording, ir_path):
    """The recorded output against numpy's convolution of the input recorded beside it, at lag 0
    (both systems add no latency): frames off by more than 1e-4 and the error in dB. A cycle the
    recorder lost shows here as wrong frames too; our node's own record (`own_record`) is the
    exact judge of our output, as in the test suite."""
    recorded = np.fromfile(recording, dtype=np.float32).reshape(-1, 4).astype(np.float64)
    ir = wavfile.read(ir_path)[1].astype(np.float64)
    wrong, error, energy = 0, 0.0, 0.0
    for channel in range(2):
        expected = fftconvolve(recorded[:, channel], ir[:, channel])[: len(recorded)]
        difference = recorded[:, 2 + channel] - expected
        wrong += int(np.count_nonzero(np.abs(difference) > 1e-4))
        error += float(np.sum(difference ** 2))
        energy += float(np.sum(expected ** 2))
    return {"wrong": wrong, "errorDB": 10 * np.log10(max(error, 1e-30) / max(energy, 1e-30))}


def print_ratios(by_run, system, reference_system, rounds):
    """Per case, `system`'s CPU and busy times over `reference_system`'s, in the rounds both ran."""
    ratios = {}
    for (ir_seconds, quantum, round_index, name), ours in by_run.items():
        reference = by_run.get((ir_seconds, quantum, round_index, reference_system))
        if name == system and reference:
            ratios.setdefault((ir_seconds, quantum), []).append(
                {key: ours[key] / reference[key] for key in ("cpu_percent", "busy_p99_us", "busy_max_us")})
    if not ratios:
        return
    print(f"\n{system} / {reference_system}, same case" + (" and round: the median of the rounds"
                                                        " (each round's in brackets)" if rounds > 1 else ":"))
    for (ir_seconds, quantum), by_round in ratios.items():
        def ratio(key, digits):
            values = [r[key] for r in by_round]
            median = f"{statistics.median(values):.{digits}f}x"
            return median if len(values) == 1 else f"{median} ({' '.join(f'{v:.{digits}f}' for v in values)})"
        print(f"{ir_seconds:>5g} {quantum:>7}  CPU {ratio('cpu_percent', 2)}, busy p99 {ratio('busy_p99_us', 3)},"
              f" busy max {ratio('busy_max_us', 3)}")


def print_above_floor(by_run, key, label, system, reference_system):
    """With a near-empty IR in the run (--ir 0.001 beside the others), each system's CPU in that case is its
    floor at that quantum and round: waking a client process every cycle and passing buffers, which is
    most of what any node costs here. Each case's CPU above its floor is then the convolution's own cost."""
    floors = {(quantum, round_index, name): r[key]
              for (ir_seconds, quantum, round_index, name), r in by_run.items() if ir_seconds <= FLOOR_IR_SECONDS}
    rows = {}
    for (ir_seconds, quantum, round_index, name), ours in by_run.items():
        reference = by_run.get((ir_seconds, quantum, round_index, reference_system))
        if name != system or not reference or ir_seconds <= FLOOR_IR_SECONDS:
            continue
        our_floor = floors.get((quantum, round_index, system))
        reference_floor = floors.get((quantum, round_index, reference_system))
        if our_floor is None or reference_floor is None:
            continue
        above, reference_above = ours[key] - our_floor, reference[key] - reference_floor
        rows.setdefault((ir_seconds, quantum), []).append(
            (above, reference_above, above / reference_above if reference_above > 0 else float("nan")))
    if not rows:
        return
    print(f"\nCPU above each system's floor ({label}; the floor: its CPU with a {FLOOR_IR_SECONDS:g} s IR at the same"
          f" quantum and round), % of a core: {system} / {reference_system}, ratio; the median ratio first:")
    for (ir_seconds, quantum), rounds in rows.items():
        median = statistics.median(ratio for _, _, ratio in rounds)
        print(f"{ir_seconds:>5g} {quantum:>7}  {median:.2f}x  ("
              + ", ".join(f"{above:.2f} / {reference_above:.2f} = {ratio:.2f}" for above, reference_above, ratio in rounds) + ")")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=40, help="length of the noise input (default 40)")
    parser.add_argument("--ir", default="1,3,10", help="IR lengths in seconds (default 1,3,10)")
    parser.add_argument("--quantum", default="64,256,1024", help="quanta (default 64,256,1024)")
    parser.add_argument("--systems", default="filter-chain,swift-convolver")
    parser.add_argument("--pipewire", choices=["system", "1.4", "1.6"], default="system",
                        help="the PipeWire to run on: this system's, 1.4.2 from scripts/pipewire-1.4.sh, "
                        "or 1.6 in the sid root of scripts/debian-root.sh")
    parser.add_argument("--executable", help="pw-convolver (default: the release build for that PipeWire)")
    parser.add_argument("--baseline", help="an earlier build's pw-convolver (inside the checkout, for --pipewire"
                        " 1.6), run as a third system, 'baseline', in the same rounds: a change before and after")
    parser.add_argument("--rounds", type=int, default=1,
                        help="runs of each case, the systems' order alternating (default 1)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (recordings, logs)")
    parser.add_argument("--own-record", action="store_true",
                        help="our node records every call and is judged on that too (costs it CPU a user's node does not spend)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    if args.pipewire == "1.6" and os.environ.get("SWIFT_CONVOLVER_ROOT") != "sid-pipewire":
        toolchain = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("swift")))))
        os.execv(f"{ROOT}/scripts/debian-root.sh", [
            "debian-root.sh", "sid-pipewire", "run", "--bind", ROOT, "--bind", toolchain, "--",
            "sh", "-c", 'cd "$0" && exec env SWIFT_CONVOLVER_ROOT=sid-pipewire /usr/bin/python3 "$@"',
            os.getcwd(), os.path.realpath(__file__), *sys.argv[1:]])
    if args.executable is None:
        build = ".build/pipewire-1.4/build/release" if args.pipewire == "1.4" else ".build/release"
        args.executable = f"{ROOT}/{build}/pw-convolver"
    base_env = pipewire_environment(args.pipewire)
    version = subprocess.run(["pkg-config", "--modversion", "libpipewire-0.3"], env=base_env, capture_output=True,
                             text=True).stdout.strip()
    systems = args.systems.split(",")
    if "swift-convolver" in systems and not swift_node_available(args.executable):
        print("note: `pw-convolver run` is not available in this build yet: measuring filter-chain only",
              file=sys.stderr)
        systems.remove("swift-convolver")
    if args.baseline:
        systems.append("baseline")

    directory = tempfile.mkdtemp(prefix="swconv-bench-live-")
    os.chmod(directory, 0o700)
    rng = np.random.default_rng(1)
    noise = (rng.uniform(-0.25, 0.25, (int(args.seconds * RATE), 2))).astype(np.float32)
    graph = Graph(os.path.join(directory, "pw"), base_env, session_manager=args.pipewire != "system" and "filter-chain" in systems)
    profiled = perf_available()
    if not profiled:
        print("note: perf (Debian's linux-perf) is not installed: no CPU in the convolution code", file=sys.stderr)
    results = []
    try:
        cases = []
        for ir_seconds in [float(s) for s in args.ir.split(",")]:
            ir = synthetic_ir(ir_seconds, seed=int(ir_seconds * 10))
            ir_path = os.path.join(directory, f"ir-{ir_seconds:g}s.wav")
            wavfile.write(ir_path, RATE, ir)
            # 3 s of silence first: the channels are linked one after the other, and the noise must not
            # start before both are; and our node re-plans for the graph's quantum when it first runs
            # (taken only in silence). Silence after the noise, as long as the IR: pw-play stays linked
            # while the tail rings out (a player that ends unlinks itself and changes the graph).
            played = np.vstack([np.zeros((3 * RATE, 2), np.float32), noise,
                                np.zeros((len(ir) + RATE // 2, 2), np.float32)])
            input_path = os.path.join(directory, f"input-{ir_seconds:g}s.wav")
            wavfile.write(input_path, RATE, played)
            cases.append((ir_seconds, ir_path, input_path))
        # Each round runs every IR (the floor's too) at its quantum, so that a floor is measured
        # minutes, not a whole run, from the cases it is subtracted from: the machine drifts.
        for quantum in [int(q) for q in args.quantum.split(",")]:
            for round_index in range(1, args.rounds + 1):
                for ir_seconds, ir_path, input_path in cases:
                    # Alternate who goes first: a machine getting busier or quieter favours neither.
                    for system in (systems if round_index % 2 == 1 else systems[::-1]):
                        print(f"... {system}: IR {ir_seconds:g} s, quantum {quantum}"
                              + (f", round {round_index}" if args.rounds > 1 else ""), file=sys.stderr, flush=True)
                        try:
                            executable = args.baseline if system == "baseline" else args.executable
                            result = run_case(graph, system, ir_path, ir_seconds, quantum, input_path, args.seconds,
                                              executable, profiled, args.own_record)
                        except (RuntimeError, subprocess.SubprocessError) as error:  # one failed case, not the run
                            print(f"    failed: {error}", file=sys.stderr)
                            results.append((ir_seconds, quantum, round_index, system, None))
                            continue
                        result["compared"] = compare_recording(result["recording"], ir_path)
                        results.append((ir_seconds, quantum, round_index, system, result))
                        if not args.keep:
                            os.remove(result["recording"])
    finally:
        graph.stop()
        if not args.keep:
            subprocess.run(["rm", "-rf", directory], check=False)

    results.sort(key=lambda result: result[:3])  # by case, then round (the run went round by round)
    print(f"\nbench-live: {args.seconds:g} s stereo noise at {RATE} Hz, private headless PipeWire {version} (Dummy-Driver)")
    print("CPU % = the process's; conv % and rest % = perf's samples of it in the convolution code and elsewhere")
    print("wrong = recorded output frames more than 1e-4 from numpy's convolution of the input recorded beside")
    print("        them by one recorder, at lag 0 (a cycle the recorder lost counts too); our node's own")
    print("        record of every call is held to numpy's convolution of its own input below")
    def case(ir_seconds, quantum, round_index):
        return f"{ir_seconds:>5g} {quantum:>7}" + (f" {round_index:>5}" if args.rounds > 1 else "")
    blank = " " * len(case(0, 0, 0))
    print(f"{'IR s':>5} {'quantum':>7}" + (f" {'round':>5}" if args.rounds > 1 else "")
          + f"  {'system':<16} {'CPU %':>6} {'conv %':>6} {'rest %':>6} {'busy p99 µs':>11} {'busy max µs':>11}"
          f" {'late':>5} {'drv late':>8} {'wrong':>7} {'error dB':>8}  recorder busy p99/max µs")
    for ir_seconds, quantum, round_index, system, r in results:
        if r is None:
            print(f"{case(ir_seconds, quantum, round_index)}  {system:<16} failed (see above)")
            continue
        c = r["compared"]
        print(f"{case(ir_seconds, quantum, round_index)}  {system:<16} {r['cpu_percent']:>6.2f}"
              f" {r['convolution_percent']:>6.2f} {r['rest_percent']:>6.2f} {r['busy_p99_us']:>11.1f}"
              f" {r['busy_max_us']:>11.1f} {r['late']:>5} {str(r['driver_late']):>8} {c['wrong']:>7}"
              f" {c['errorDB']:>8.1f}  {recorder_busy(r)}")
    by_run = {(ir_seconds, quantum, round_index, system): r for ir_seconds, quantum, round_index, system, r in results if r is not None}
    pairs = [("swift-convolver", "filter-chain"), ("baseline", "filter-chain"), ("swift-convolver", "baseline")]
    for ours, reference in pairs:
        print_ratios(by_run, ours, reference, args.rounds)
    for ours, reference in pairs:
        print_above_floor(by_run, "cpu_percent", "the process's CPU", ours, reference)
        if profiled:
            print_above_floor(by_run, "convolution_percent", "the CPU in its convolution code, perf's samples",
                              ours, reference)
    print("\nCPU % by thread (threads of one name summed; N stands for a number):")
    for ir_seconds, quantum, round_index, system, r in results:
        if r is not None:
            print(f"{case(ir_seconds, quantum, round_index)}  {system:<16} {thread_shares(r['threads'])}")
    print("\nswift-convolver's own statistics at the end of each case (node properties convolver.*):")
    for ir_seconds, quantum, round_index, system, r in results:
        if r is not None and r["statistics"]:
            st = r["statistics"]
            print(f"{case(ir_seconds, quantum, round_index)}  {system}: calls {st.get('calls')}, late cycles {st.get('late-cycles')} "
                  f"(started late {st.get('late-cycles-started-late')}, own {st.get('late-cycles-own')}, stalled {st.get('late-cycles-stalled')}), missed cycles {st.get('missed-cycles')}, "
                  f"late levels {st.get('late-levels')}, helper margin p99 {st.get('helper-margin-p99-us')} µs, "
                  f"busy p99/max {st.get('busy-p99-us')}/{st.get('busy-max-us')} µs, swaps {st.get('swaps')}, "
                  f"plan {st.get('plan')} (for quantum {st.get('plan-quantum')})")
            if r["own_record"]:
                own = r["own_record"]
                verdict = "exact" if own["wrongFrames"] == 0 else f"WRONG: {own['wrongFrames']} frames from frame {own['firstWrong']}"
                print(f"{blank}  own record of every call ({own['frames']} frames): output - numpy's convolution of "
                      f"its own input, worst {own['worst']:.2g} ({verdict})")
    if args.keep:
        print(f"recordings and logs: {directory}")


if __name__ == "__main__":
    main()
