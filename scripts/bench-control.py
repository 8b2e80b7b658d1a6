#!/usr/bin/python3
"""How long a graph control takes to be heard: `pw-convolver set NODE band:Gain=G` on a running
filter-chain graph, timed from the command's start to its exit. `set` exits when the node answers,
and the node answers once the graph, compiled again off the real-time thread, is installed: its
crossfade starts in the next cycle. So each time is an upper bound of the delay before the change
starts to be heard (it also holds the client's connection to PipeWire).

Cases (bench-graph's configs, a `bq_peaking` node "band" put in front of the first input):
  hesuvi  PipeWire's 7.1 HeSuVi sink on a 0.1 s HRIR (16 convolvers: the whole matrix is rebuilt)
  room    the room-correction sink on 65 536-tap FIRs

  /usr/bin/python3 scripts/bench-control.py --quantum 256 --changes 20
  /usr/bin/python3 scripts/bench-control.py --pipewire 1.4
"""
import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.io import wavfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


graphs = load("bench_graph", "scripts/bench-graph.py")
live = graphs.live
BAND = '{ type = builtin label = bq_peaking name = band control = { "Freq" = 1000 "Q" = 1.0 "Gain" = 0 } }'


def with_band(text, first_input):
    """`text` with the node "band" in front of its first input `first_input` ("node:In")."""
    text = text.replace("nodes = [", "nodes = [\n          " + BAND, 1)
    text = text.replace(f'inputs  = [ "{first_input}"', f'inputs  = [ "band:In"', 1)
    link = f'{{ output = "band:Out" input = "{first_input}" }}'
    if "links = [" in text:
        return text.replace("links = [", "links = [ " + link, 1)
    return text.replace("inputs  = [", f"links = [ {link} ]\n        inputs  = [", 1)


def run_case(graph, case, quantum, changes, directory, executable, one_dot_x):
    text, capture, playback, positions, outputs = graphs.case_config(case, directory)
    first = {"hesuvi": "copyFL:In", "room": "firL:In"}[case]
    text = with_band(text, first)
    tag = f"{case}-{quantum}"
    capture, playback = f"{tag}.{capture}", f"{tag}.{playback}"
    conf = os.path.join(directory, f"{tag}.conf")
    with open(conf, "w") as out:
        out.write(graphs.client_config(text, "libpipewire-module-swift-convolver", tag, one_dot_x, None))
    graph.run("pw-metadata", "-n", "settings", "0", "clock.force-quantum", str(quantum))
    node = graph.start(["pipewire", "-c", conf], f"{tag}.log")
    times = []
    try:
        deadline = time.monotonic() + 180
        while len(graphs.stream_ports(graph, capture, ("playback_",))) < len(positions):
            if time.monotonic() > deadline or node.poll() is not None:
                raise RuntimeError(f"{case}: the node has no ports; see {directory}/{tag}.log")
            time.sleep(0.2)
        seconds = changes * 0.6 + 20
        noise = np.random.default_rng(3).uniform(-0.2, 0.2, (int(seconds * live.RATE), len(positions))).astype(np.float32)
        input_path = os.path.join(directory, f"input-{tag}.wav")
        wavfile.write(input_path, live.RATE, noise)
        recorder, player = graphs.play_through(graph, tag, capture, playback, positions, input_path, "/dev/null", seconds + 60)
        live.settle_on_quantum(graph, capture, quantum)
        for index in range(changes):
            gain = -6 if index % 2 == 0 else 3
            start = time.monotonic()
            answer = subprocess.run([executable, "set", capture, f"band:Gain={gain}"], env=graph.env,
                                    capture_output=True, text=True, timeout=60)
            elapsed = time.monotonic() - start
            if answer.returncode != 0:
                raise RuntimeError(f"{case}: set refused: {answer.stdout}{answer.stderr}")
            times.append(1000 * elapsed)
            time.sleep(0.5)
        stats = live.node_statistics(graph, capture)
        player.terminate()
        recorder.terminate()
    finally:
        node.terminate()
        try:
            node.wait(timeout=20)
        except subprocess.TimeoutExpired:
            node.kill()
    return times, stats


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="hesuvi,room")
    parser.add_argument("--quantum", type=int, default=256)
    parser.add_argument("--changes", type=int, default=20)
    parser.add_argument("--pipewire", choices=["system", "1.4"], default="system")
    args = parser.parse_args()
    build = ".build/release" if args.pipewire == "system" else ".build/pipewire-1.4/build/release"
    executable = f"{ROOT}/{build}/pw-convolver"
    env = live.pipewire_environment(args.pipewire)
    module_dir = env.get("PIPEWIRE_MODULE_DIR") or subprocess.run(
        ["pkg-config", "--variable=moduledir", "libpipewire-0.3"], capture_output=True, text=True).stdout.strip()
    env["PIPEWIRE_MODULE_DIR"] = f"{ROOT}/{build}:{module_dir}"
    version = subprocess.run(["pkg-config", "--modversion", "libpipewire-0.3"], env=env, capture_output=True,
                             text=True).stdout.strip()
    one_dot_x = not version.startswith("0.")
    directory = tempfile.mkdtemp(prefix="swconv-bench-control-")
    graphs.write_impulses(directory)
    graph = live.Graph(os.path.join(directory, "pw"), env, session_manager=one_dot_x)
    results = {}
    try:
        for case in args.cases.split(","):
            print(f"... {case}, quantum {args.quantum}", file=sys.stderr, flush=True)
            results[case] = run_case(graph, case, args.quantum, args.changes, directory, executable, one_dot_x)
    finally:
        graph.stop()
        subprocess.run(["rm", "-rf", directory], check=False)
    print(f"\nbench-control: `pw-convolver set NODE band:Gain=G`, {args.changes} changes per case, quantum {args.quantum},"
          f" private headless PipeWire {version}")
    for case, (times, stats) in results.items():
        print(f"{case:<7} median {statistics.median(times):6.1f} ms, max {max(times):6.1f} ms"
              f"  (each: {' '.join(f'{t:.0f}' for t in times)}); swaps {stats.get('swaps')}, own late {stats.get('late-cycles-own')}")


if __name__ == "__main__":
    main()
