#!/usr/bin/python3
"""make bench-live, its multi-node case: four convolver nodes in one `pipewire -c` process, on one
process-wide workgroup (`workgroup.shared = true`, the default) and each on helpers of its own
(`shared = false`, the behaviour before), rounds alternating which goes first, in a private
headless daemon (scripts/bench-live.py's Graph).

The four nodes, fed the same stereo noise by one pw-play and recorded by one recorder:
  reverb  a 10 s stereo reverb (bench-live's synthetic hall), 2 in, 2 out;
  hrir    a 7.1 -> 2 HRIR matrix (16 filters of 0.1 s), 8 in, 2 out;
  fir     a 2x2 true-stereo FIR of 65 536 taps, 2 in, 2 out;
  sofa    a SOFA source: Debian's KEMAR set at azimuth 30, 1 in, 2 out.
Per mode and round: the process's CPU (all threads, /proc/PID/stat), its helper threads
(swconv-*: level helpers, and with --split the split helpers of separate pools), and per node its
data-thread busy p99 (`pw-convolver top --batch`), its late levels and own late cycles (its
convolver.* properties), and its own record of every call held to
an independent convolution (judge_record.py: numpy/scipy; the SOFA node's filters are what
`pw-convolver render` makes of a unit impulse with the same keys, so that one checks the live
path against the offline one). Then the same four at `--late-quantum` for `--late-seconds`: each
node's own late cycles in each mode.

  /usr/bin/python3 scripts/bench-workgroup.py                           # 20 s x 2 rounds at 256, 60 s at 64
  /usr/bin/python3 scripts/bench-workgroup.py --seconds 10 --rounds 1 --late-seconds 10   # a smoke run
  /usr/bin/python3 scripts/bench-workgroup.py --threads 3 --rounds 4    # pools of 3 helpers per node on 2 CPUs
  /usr/bin/python3 scripts/bench-workgroup.py --split on --late-seconds 0   # every node's head split in two parts
"""
import argparse
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.io import wavfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("bench_live", os.path.join(ROOT, "scripts/bench-live.py"))
live = importlib.util.module_from_spec(spec)
spec.loader.exec_module(live)
RATE = live.RATE
KEMAR = "/usr/share/libmysofa/MIT_KEMAR_normal_pinna.sofa"
SURROUND = ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"]
# Recorder channel pairs, one per node's two outputs.
RECORDED = {"reverb": ("FL", "FR"), "hrir": ("RL", "RR"), "fir": ("SL", "SR"), "sofa": ("FC", "LFE")}
NODES = list(RECORDED)


def write_impulses(directory, executable):
    """The nodes' IR files, and per node its judge entries (input, output, file, channel)."""
    wavfile.write(os.path.join(directory, "reverb.wav"), RATE, live.synthetic_ir(10, seed=5))
    rng = np.random.default_rng(11)
    taps = int(0.1 * RATE)
    hrir = (rng.standard_normal((taps, 16)) * np.exp(-np.arange(taps) / (taps / 8))[:, None] * 0.1).astype(np.float32)
    hrir[np.arange(16) * 3, np.arange(16)] += 0.5
    wavfile.write(os.path.join(directory, "hrir.wav"), RATE, hrir)
    fir = (rng.standard_normal((65536, 4)) * np.exp(-np.abs(np.arange(65536) - 32768) / 6000)[:, None] * 0.02).astype(np.float32)
    fir[32768] += [0.6, 0.1, 0.1, 0.6]
    wavfile.write(os.path.join(directory, "fir.wav"), RATE, fir)
    impulse = np.zeros(RATE, np.float32)
    impulse[0] = 1
    wavfile.write(os.path.join(directory, "unit.wav"), RATE, impulse)
    subprocess.run([executable, "render", "--ir", KEMAR, "--set", "sofa.azimuth=30", "--rate", str(RATE),
                    os.path.join(directory, "unit.wav"), os.path.join(directory, "sofa-filters.wav")],
                   check=True, capture_output=True)
    path = lambda name: os.path.join(directory, name)
    return {
        "reverb": [(c, c, path("reverb.wav"), c) for c in range(2)],
        "hrir": [(i, o, path("hrir.wav"), 2 * i + o) for i in range(8) for o in range(2)],
        "fir": [(i, o, path("fir.wav"), 2 * i + o) for i in range(2) for o in range(2)],
        "sofa": [(0, o, path("sofa-filters.wav"), o) for o in range(2)],
    }


def module_arguments(node, directory, entries, shared, record, threads, split):
    workgroup = f"workgroup = {{ shared = {'true' if shared else 'false'} threads = {threads} split = {split} }}"
    name = f"node.name = wg-{node} {workgroup} test.record-calls = \"{record}\""
    if node == "reverb":
        return f'{name} filename = "{directory}/reverb.wav" audio.position = [ FL FR ]'
    if node == "sofa":
        return f'{name} filename = "{KEMAR}" sofa = {{ azimuth = 30 }}'
    positions = SURROUND if node == "hrir" else ["FL", "FR"]
    matrix = " ".join(f'{{ input = {i} output = {o} filename = "{f}" channel = {c} }}' for i, o, f, c in entries[node])
    return f"{name} audio.position = [ {' '.join(positions)} ] output.position = [ FL FR ] impulses = [ {matrix} ]"


def client_config(directory, entries, shared, records, threads, split):
    modules = "\n".join(f"  {{ name = libpipewire-module-swift-convolver args = {{ "
                        f"{module_arguments(node, directory, entries, shared, records[node], threads, split)} }} }}"
                        for node in NODES)
    return live.CLIENT_MODULES + modules + "\n]\n"


def input_ports(node):
    return {"reverb": ["FL", "FR"], "fir": ["FL", "FR"], "hrir": SURROUND, "sofa": ["MONO"]}[node]


def helper_threads(pid):
    names = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as comm:
                names.append(comm.read().strip())
        except FileNotFoundError:
            continue
    return sum(name.startswith("swconv-") for name in names)


def run_mode(graph, directory, entries, shared, quantum, seconds, executable, threads, split, tag):
    """Plays noise through the four nodes in one process; the measurements of one mode."""
    tag = f"{tag}-{'shared' if shared else 'separate'}-{quantum}-{time.monotonic_ns() % 100000}"
    records = {node: os.path.join(directory, f"calls-{node}-{tag}.f32") for node in NODES}
    conf = os.path.join(directory, f"{tag}.conf")
    with open(conf, "w") as out:
        out.write(client_config(directory, entries, shared, records, threads, split))
    graph.run("pw-metadata", "-n", "settings", "0", "clock.force-quantum", str(quantum))
    process = graph.start(["pipewire", "-c", conf], f"{tag}.log")
    try:
        deadline = time.monotonic() + 240  # each node plans its FFTs before it shows ports
        while not all(f"wg-{node}:output_FL" in graph.run("pw-link", "-o").split() for node in NODES):
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError(f"the four nodes have no ports; see {directory}/{tag}.log")
            time.sleep(0.2)
        noise = np.random.default_rng(3).uniform(-0.2, 0.2, (int(seconds * RATE), 2)).astype(np.float32)
        input_path = os.path.join(directory, f"input-{tag}.wav")
        wavfile.write(input_path, RATE, np.vstack([np.zeros((RATE, 2), np.float32), noise]))
        recording = os.path.join(directory, f"{tag}.f32")
        channels = [channel for node in NODES for channel in RECORDED[node]]
        recorder = graph.start([graph.recorder, f"rec-{tag}", ",".join(channels), recording, str(int(3 * seconds + 60))],
                               f"rec-{tag}.log", {"PIPEWIRE_PROPS": "{ node.want-driver = true }"})
        player = graph.start(["pw-play", "-P", f"{{ node.name = play-{tag} node.want-driver = false {live.PORTS} }}",
                              input_path], f"play-{tag}.log")
        graph.wait_for_ports([f"play-{tag}:output_FL", f"rec-{tag}:input_FL"])
        for node in NODES:
            for output, recorded in zip(("FL", "FR"), RECORDED[node]):
                graph.run("pw-link", f"wg-{node}:output_{output}", f"rec-{tag}:input_{recorded}")
            for port in input_ports(node):
                source = "FR" if port in ("FR", "RR", "SR") else "FL"
                graph.run("pw-link", f"play-{tag}:output_{source}", f"wg-{node}:input_{port}")
        for node in NODES:
            live.settle_on_quantum(graph, f"wg-{node}", quantum)
        cpu_start, wall_start = live.process_cpu_seconds(process.pid), time.monotonic()
        top = subprocess.Popen([executable, "top", "--batch"], env=graph.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        player.wait(timeout=seconds + 120)
        cpu = live.process_cpu_seconds(process.pid) - cpu_start
        wall = time.monotonic() - wall_start
        helpers = helper_threads(process.pid)
        stats = {node: live.node_statistics(graph, f"wg-{node}") for node in NODES}
        time.sleep(1.0)
        top.send_signal(signal.SIGINT)
        top_output = top.communicate(timeout=30)[0]
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=30)
        os.remove(recording)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
    rows = live.parse_top_total(top_output)
    result = {"cpu": 100 * cpu / wall, "helpers": helpers, "nodes": {}}
    split_parts = {node: int(stats[node].get("split-parts", 1)) for node in NODES}
    if any(parts > 1 for parts in split_parts.values()):
        result["split_parts"] = split_parts
    for node in NODES:
        row = rows.get(f"wg-{node}", {})
        result["nodes"][node] = {
            "p99": row.get("busy_p99", float("nan")),
            "late_levels": int(stats[node].get("late-levels", -1)),
            "own_late": int(stats[node].get("late-cycles-own", -1)),
            "late_splits": int(stats[node].get("late-splits", 0)),
            "error_db": judge(records[node], node, entries[node]),
        }
    return result


def judge(record, node, node_entries):
    """The worse output's error of the node's own record against scipy's convolution, dB (None: no record)."""
    if not os.path.exists(record):
        return None
    spec_path = record + ".json"
    inputs = len(input_ports(node))
    with open(spec_path, "w") as out:
        json.dump({"calls": record, "inputs": inputs, "outputs": 2, "segments": [{"wet": 1, "dry": 0}],
                   "entries": [{"input": i, "output": o, "file": f, "channel": c} for i, o, f, c in node_entries]}, out)
    answer = json.loads(subprocess.run([sys.executable, live.JUDGE_RECORD, spec_path], check=True, capture_output=True,
                                       text=True).stdout)
    os.remove(record)
    if answer.get("error"):
        return None
    return max(output["errorDB"] for output in answer["outputs"])


def describe(result):
    parts = []
    for node, r in result["nodes"].items():
        record = "no record" if r["error_db"] is None else f"record {r['error_db']:.0f} dB"
        late_splits = f", late splits {r['late_splits']}" if result.get("split_parts") else ""
        parts.append(f"{node}: p99 {r['p99']:.1f} µs, late levels {r['late_levels']}{late_splits}, own late {r['own_late']}, "
                     f"{record}")
    split = result.get("split_parts")
    split = f" (split parts {', '.join(f'{node} {parts}' for node, parts in split.items())})" if split else ""
    return f"CPU {result['cpu']:.2f} %, helpers {result['helpers']}{split}; " + "; ".join(parts)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20, help="noise played per run (default 20)")
    parser.add_argument("--quantum", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=2, help="rounds, the modes' order alternating (default 2)")
    parser.add_argument("--late-quantum", type=int, default=64)
    parser.add_argument("--late-seconds", type=float, default=60, help="0: no late run")
    parser.add_argument("--threads", default="auto",
                        help="each node's workgroup.threads (default auto: online CPUs - 1); more than the machine "
                        "has shows what separate pools cost where a desktop's cores are many")
    parser.add_argument("--split", default="auto", choices=["auto", "on", "off"],
                        help="each node's workgroup.split (default auto, the module's)")
    parser.add_argument("--executable", default=os.path.join(ROOT, ".build/release/pw-convolver"))
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    args = parser.parse_args()

    directory = tempfile.mkdtemp(prefix="swconv-bench-workgroup-")
    base_env = live.pipewire_environment("system")
    modules = os.path.dirname(os.path.realpath(args.executable))  # the module is built beside pw-convolver
    base_env["PIPEWIRE_MODULE_DIR"] = f"{modules}:" + subprocess.run(
        ["pkg-config", "--variable=moduledir", "libpipewire-0.3"], check=True, capture_output=True, text=True).stdout.strip()
    graph = live.Graph(directory, base_env, session_manager=False)
    ratios = {"cpu": []} | {node: [] for node in NODES}
    try:
        entries = write_impulses(directory, args.executable)
        print(f"four nodes in one process at quantum {args.quantum}, {args.seconds:g} s, {args.rounds} round(s); "
              f"{os.cpu_count()} CPUs; workgroup.threads = {args.threads}, split = {args.split} per node")
        for round_index in range(args.rounds):
            order = [True, False] if round_index % 2 == 0 else [False, True]
            results = {shared: run_mode(graph, directory, entries, shared, args.quantum, args.seconds, args.executable,
                                        args.threads, args.split, f"r{round_index}") for shared in order}
            for shared in order:
                print(f"round {round_index + 1} {'shared  ' if shared else 'separate'}: {describe(results[shared])}")
            ratios["cpu"].append(results[True]["cpu"] / results[False]["cpu"])
            for node in NODES:
                ratios[node].append(results[True]["nodes"][node]["p99"] / results[False]["nodes"][node]["p99"])
        print("shared / separate, median over rounds: CPU "
              f"{statistics.median(ratios['cpu']):.2f}x ({', '.join(f'{r:.2f}' for r in ratios['cpu'])}); busy p99 "
              + ", ".join(f"{node} {statistics.median(ratios[node]):.2f}x" for node in NODES))
        if args.late_seconds > 0:
            for shared in (True, False):
                result = run_mode(graph, directory, entries, shared, args.late_quantum, args.late_seconds, args.executable,
                                  args.threads, args.split, "late")
                print(f"quantum {args.late_quantum}, {args.late_seconds:g} s, {'shared  ' if shared else 'separate'}: "
                      f"{describe(result)}")
    finally:
        graph.stop()
        if args.keep:
            print(f"kept {directory}")
        else:
            subprocess.run(["rm", "-rf", directory])


if __name__ == "__main__":
    main()
