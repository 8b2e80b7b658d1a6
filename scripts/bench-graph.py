#!/usr/bin/python3
"""make bench-live, its graph cases: one filter-chain config run on filter-chain and on
swift-convolver (the same file, only the module's name changed), one system at a time, rounds
alternating which goes first, in a private headless daemon (scripts/bench-live.py's Graph).

Cases:
  floor   two copies between the same two streams: each system's cost of being there, which the
          other cases' "above the floor" figures subtract.
  hesuvi  PipeWire's 7.1 HeSuVi sink (16 convolvers, 8 copies, 2 mixers; 0.3.65's example file),
          on a 14-channel HRIR of 0.1 s (4800 taps): 8 inputs, 2 outputs.
  room    a room-correction sink in filter-chain's form: one 65 536-tap FIR per speaker with a
          gain, the right one behind a `delay` node (speaker alignment): 2 inputs, 2 outputs.
  room-eq the same with a sub-sonic `bq_highpass` (20 Hz) and a 10-band `param_eq` in front of
          each FIR (filter-chain has `param_eq` from 1.4 on: `--pipewire 1.4`).
  speaker speaker DSP with LADSPA plugins (swh: gains, mid/side, limiters, crossovers; the tests'
          ladspa-speaker-dsp.conf), then per-driver FIRs of 8 192 taps: 2 inputs, 4 outputs.
  speaker-long  the same with 65 536-tap FIRs.
Per case: the process's CPU (all threads, then by thread), its data-thread busy p99/max and late
cycles (the profiler, `pw-convolver top --batch`, the worse of each system's two streams), the
driver's own late cycles, and for ours its own late cycles (convolver.late-cycles-own) and its record
of every call held to an independent evaluation of the config (judge_filter_graph.py, error in dB).
The record (`test.record-calls`, a test seam: a copy of every call's input and output) costs our
node CPU and busy time that a user's node does not spend, so by default the timed rounds run
without it and one check run of ours per case and quantum (round "check", at most 5 s, not in
the ratios) records and is judged; `--record rounds` records in every timed round instead.

  /usr/bin/python3 scripts/bench-graph.py --cases hesuvi,room --quantum 256,1024 --rounds 3
  /usr/bin/python3 scripts/bench-graph.py --pipewire 1.4 --cases hesuvi --quantum 64,128 --seconds 30
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
JUDGE_GRAPH = os.path.join(ROOT, "Tests/LiveTests/Support/judge_filter_graph.py")
HESUVI = os.path.join(ROOT, "Tests/LiveTests/FilterChainConfigs/sink-virtual-surround-7.1-hesuvi.conf")
SPEAKER = os.path.join(ROOT, "Tests/LiveTests/FilterChainConfigs/ladspa-speaker-dsp.conf")
SURROUND = ["FL", "FR", "FC", "LFE", "RL", "RR", "SL", "SR"]

# Each system's floor: the same two streams around a graph that only copies.
FLOOR = """
context.modules = [
  { name = libpipewire-module-filter-chain
    args = {
      node.description = "Floor"
      filter.graph = {
        nodes = [ { type = builtin label = copy name = copyL } { type = builtin label = copy name = copyR } ]
        inputs  = [ "copyL:In" "copyR:In" ]
        outputs = [ "copyL:Out" "copyR:Out" ]
      }
      capture.props = {
        node.name      = "effect_input.floor"
        media.class    = Audio/Sink
        audio.position = [ FL FR ]
      }
      playback.props = {
        node.name      = "effect_output.floor"
        node.passive   = true
        audio.position = [ FL FR ]
      }
    }
  }
]
"""

ROOM = """
context.modules = [
  { name = libpipewire-module-filter-chain
    args = {
      node.description = "Room correction"
      media.name       = "Room correction"
      filter.graph = {
        nodes = [
          { type = builtin label = convolver name = firL config = { filename = "FIR" channel = 0 gain = 0.5 } }
          { type = builtin label = convolver name = firR config = { filename = "FIR" channel = 1 gain = 0.5 } }
          { type = builtin label = delay name = alignR config = { max-delay = 0.01 } control = { "Delay (s)" = 0.001 } }
        ]
        links = [ { output = "firR:Out" input = "alignR:In" } ]
        inputs  = [ "firL:In" "firR:In" ]
        outputs = [ "firL:Out" "alignR:Out" ]
      }
      capture.props = {
        node.name      = "effect_input.room-correction"
        media.class    = Audio/Sink
        audio.position = [ FL FR ]
      }
      playback.props = {
        node.name      = "effect_output.room-correction"
        node.passive   = true
        audio.position = [ FL FR ]
      }
    }
  }
]
"""

# room with what users put in front of the FIRs: a sub-sonic high-pass and a 10-band EQ.
TEN_BANDS = " ".join(
    f"{{ type = bq_peaking freq = {freq} q = 1.4 gain = {gain} }}"
    for freq, gain in zip([31, 63, 125, 250, 500, 1000, 2000, 4000, 8000, 16000], [3, 2, -1, -2, 1, -3, 2, -1, 1, -2]))
ROOM_EQ = ROOM.replace("        nodes = [\n", f"""        nodes = [
          {{ type = builtin label = bq_highpass name = hpL control = {{ "Freq" = 20 "Q" = 0.707 }} }}
          {{ type = builtin label = bq_highpass name = hpR control = {{ "Freq" = 20 "Q" = 0.707 }} }}
          {{ type = builtin label = param_eq name = eq config = {{ filters = [ {TEN_BANDS} ] }} }}
""").replace("""links = [ { output = "firR:Out" input = "alignR:In" } ]
        inputs  = [ "firL:In" "firR:In" ]""", """links = [
          { output = "hpL:Out" input = "eq:In 1" } { output = "hpR:Out" input = "eq:In 2" }
          { output = "eq:Out 1" input = "firL:In" } { output = "eq:Out 2" input = "firR:In" }
          { output = "firR:Out" input = "alignR:In" }
        ]
        inputs  = [ "hpL:In" "hpR:In" ]""")


def write_impulses(directory):
    rng = np.random.default_rng(7)
    taps = int(0.1 * RATE)
    hrir = (rng.standard_normal((taps, 14)) * np.exp(-np.arange(taps) / (taps / 8))[:, None] * 0.1).astype(np.float32)
    hrir[np.arange(14) * 3, np.arange(14)] += 0.5
    wavfile.write(os.path.join(directory, "hrir.wav"), RATE, hrir)
    # Linear phase, energy over all of its 65 536 taps (about -90 dB at its ends): nothing to trim.
    fir = (rng.standard_normal((65536, 2)) * np.exp(-np.abs(np.arange(65536) - 32768) / 6000)[:, None] * 0.02).astype(np.float32)
    fir[32768] += 0.7
    wavfile.write(os.path.join(directory, "fir.wav"), RATE, fir)
    short = (rng.standard_normal((8192, 2)) * np.exp(-np.abs(np.arange(8192) - 4096) / 800)[:, None] * 0.02).astype(np.float32)
    short[4096] += 0.7
    wavfile.write(os.path.join(directory, "fir-short.wav"), RATE, short)


def case_config(case, directory):
    """(config text, capture node, playback node, input positions, outputs)."""
    if case == "floor":
        return (FLOOR, "effect_input.floor", "effect_output.floor", ["FL", "FR"], 2)
    if case == "hesuvi":
        text = open(HESUVI).read().replace('"hrir_hesuvi/hrir.wav"', f'"{directory}/hrir.wav"')
        return (text, "effect_input.virtual-surround-7.1-hesuvi", "effect_output.virtual-surround-7.1-hesuvi", SURROUND, 2)
    if case in ("speaker", "speaker-long"):
        fir = "fir.wav" if case == "speaker-long" else "fir-short.wav"
        text = open(SPEAKER).read().replace('"ir-stereo.wav"', f'"{directory}/{fir}"')
        return (text, "effect_input.ladspa-speaker-dsp", "effect_output.ladspa-speaker-dsp", ["FL", "FR"], 4)
    room = ROOM_EQ if case == "room-eq" else ROOM
    return (room.replace('"FIR"', f'"{directory}/fir.wav"'), "effect_input.room-correction", "effect_output.room-correction",
            ["FL", "FR"], 2)


def client_config(text, module, tag, one_dot_x, record):
    """The config as a `pipewire -c` client: the module's name, node names tagged, streams left to link."""
    ports = "" if one_dot_x else " " + live.PORTS.replace(" node.autoconnect = false", "")
    text = text.replace("libpipewire-module-filter-chain", module)
    text = text.replace("capture.props = {", f"capture.props = {{ node.autoconnect = false{ports}")
    text = text.replace("playback.props = {", f"playback.props = {{ node.autoconnect = false{ports}")
    text = text.replace('node.name      = "effect_', f'node.name = "{tag}.effect_')
    extra = (f'test.record-calls = "{record}" ' if record else "") + ("" if one_dot_x else f"audio.rate = {RATE} ")
    text = text.replace("args = {", "args = { " + extra, 1)
    return f"""
context.properties = {{ log.level = 2 }}
context.spa-libs = {{ audio.convert.* = audioconvert/libspa-audioconvert  support.* = support/libspa-support }}
""" + text.replace("context.modules = [", """context.modules = [
  { name = libpipewire-module-rt args = { nice.level = -11 rt.prio = 88 rtkit.enabled = false rtportal.enabled = false }
    flags = [ ifexists nofail ] }
  { name = libpipewire-module-protocol-native }
  { name = libpipewire-module-client-node }
  { name = libpipewire-module-adapter }""", 1)


def stream_ports(graph, node, prefixes):
    listed = graph.run("pw-link", "-o", "-i").split()
    return [port for port in listed if port.startswith(node + ":") and port.split(":", 1)[1].startswith(prefixes)]


def play_through(graph, tag, capture, playback, positions, input_path, recording, recorder_seconds):
    """pw-play of `input_path` into the capture stream's ports, the test recorder on the playback
    stream's FL and FR, linked by hand; (recorder, player)."""
    recorder = graph.start([graph.recorder, f"rec-{tag}", "FL,FR", recording, str(int(recorder_seconds))],
                           f"rec-{tag}.log", {"PIPEWIRE_PROPS": "{ node.want-driver = true }"})
    player = graph.start(["pw-play", "-P", f"{{ node.name = play-{tag} node.want-driver = false {live.PORTS} }}",
                          "--channels", str(len(positions)), "--channel-map", ",".join(positions), input_path],
                         f"play-{tag}.log")
    graph.wait_for_ports([f"play-{tag}:output_FL", f"rec-{tag}:input_FL"])
    for position in ("FL", "FR"):
        graph.run("pw-link", f"{playback}:output_{position}", f"rec-{tag}:input_{position}")
    for position in positions:
        graph.run("pw-link", f"play-{tag}:output_{position}", f"{capture}:playback_{position}")
    return recorder, player


def run_case(graph, system, case, quantum, seconds, directory, executable, one_dot_x, pipewire, recorded):
    tag = f"{system}-{case}-{quantum}-{time.monotonic_ns() % 100000}"
    text, capture, playback, positions, outputs = case_config(case, directory)
    capture, playback = f"{tag}.{capture}", f"{tag}.{playback}"
    record = os.path.join(directory, f"calls-{tag}.f32") if system == "swift-convolver" and recorded else None
    module = "libpipewire-module-swift-convolver" if system == "swift-convolver" else "libpipewire-module-filter-chain"
    conf = os.path.join(directory, f"{tag}.conf")
    with open(conf, "w") as out:
        out.write(client_config(text, module, tag, one_dot_x, record))
    graph.run("pw-metadata", "-n", "settings", "0", "clock.force-quantum", str(quantum))
    node = graph.start(["pipewire", "-c", conf], f"{tag}.log")
    try:
        deadline = time.monotonic() + 180
        while len(stream_ports(graph, capture, ("playback_",))) < len(positions) or \
                len(stream_ports(graph, playback, ("output_",))) < outputs:
            if time.monotonic() > deadline or node.poll() is not None:
                raise RuntimeError(f"{system} {case}: its streams have no ports; see {directory}/{tag}.log")
            time.sleep(0.2)
        noise = np.random.default_rng(3).uniform(-0.2, 0.2, (int(seconds * RATE), len(positions))).astype(np.float32)
        played = np.vstack([np.zeros((3 * RATE, len(positions)), np.float32), noise, np.zeros((RATE * 2, len(positions)), np.float32)])
        input_path = os.path.join(directory, f"input-{tag}.wav")
        wavfile.write(input_path, RATE, played)
        recording = os.path.join(directory, f"{tag}.f32")
        recorder, player = play_through(graph, tag, capture, playback, positions, input_path, recording, 3 * seconds + 60)
        if system == "swift-convolver":
            live.settle_on_quantum(graph, capture, quantum)
        cpu_start, wall_start = live.process_cpu_seconds(node.pid), time.monotonic()
        threads_start = live.thread_cpu_seconds(node.pid)
        top = subprocess.Popen([executable, "top", "--batch"], env=graph.env, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)
        player.wait(timeout=seconds + 60)
        cpu = live.process_cpu_seconds(node.pid) - cpu_start
        wall = time.monotonic() - wall_start
        threads = live.thread_percent_since(node.pid, threads_start, wall)
        stats = live.node_statistics(graph, capture) if system == "swift-convolver" else {}
        time.sleep(1.0)
        top.send_signal(signal.SIGINT)
        top_output = top.communicate(timeout=30)[0]
        recorder.send_signal(signal.SIGINT)
        recorder.wait(timeout=30)
    finally:
        node.send_signal(signal.SIGINT)
        try:
            node.wait(timeout=20)
        except subprocess.TimeoutExpired:
            node.kill()
    rows = live.parse_top_total(top_output)
    busy = [rows[name] for name in (capture, playback) if name in rows]
    if not busy:
        raise RuntimeError(f"top saw neither {capture} nor {playback}:\n{top_output[-2000:]}")
    result = {"cpu": 100 * cpu / wall, "threads": threads, "p99": max(r["busy_p99"] for r in busy), "max": max(r["busy_max"] for r in busy),
              "late": max(r["late"] for r in busy), "driver_late": rows.get("Dummy-Driver", {}).get("late"), "stats": stats}
    if record and os.path.exists(record):
        judge_spec = record + ".json"
        with open(judge_spec, "w") as out:
            json.dump({"config": conf, "calls": record, "rate": RATE, "pipewire": pipewire}, out)
        answer = json.loads(subprocess.run([sys.executable, JUDGE_GRAPH, judge_spec], check=True, capture_output=True,
                                           text=True).stdout)
        result["own_error_db"] = max(o["errorDB"] for o in answer["outputErrors"])
        os.remove(record)
    os.remove(recording)
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", default="floor,hesuvi,room")
    parser.add_argument("--quantum", default="256,1024")
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--pipewire", choices=["system", "1.4"], default="system")
    parser.add_argument("--record", choices=["check", "rounds"], default="check",
                        help="our node's record of its calls: in one check run per case and quantum (default), or in every round")
    parser.add_argument("--executable", help="pw-convolver, for `top` (default: the build for that PipeWire)")
    args = parser.parse_args()
    if args.executable is None:
        build = ".build/release" if args.pipewire == "system" else ".build/pipewire-1.4/build/release"
        args.executable = f"{ROOT}/{build}/pw-convolver"
    base_env = live.pipewire_environment(args.pipewire)
    if args.pipewire == "system":
        base_env["PIPEWIRE_MODULE_DIR"] = f"{ROOT}/.build/release:" + subprocess.run(
            ["pkg-config", "--variable=moduledir", "libpipewire-0.3"], capture_output=True, text=True).stdout.strip()
    else:
        base_env["PIPEWIRE_MODULE_DIR"] = f"{ROOT}/.build/pipewire-1.4/build/release:" + base_env["PIPEWIRE_MODULE_DIR"]
    version = subprocess.run(["pkg-config", "--modversion", "libpipewire-0.3"], env=base_env, capture_output=True,
                             text=True).stdout.strip()
    one_dot_x = not version.startswith("0.")
    directory = tempfile.mkdtemp(prefix="swconv-bench-graph-")
    os.chmod(directory, 0o700)
    write_impulses(directory)
    graph = live.Graph(os.path.join(directory, "pw"), base_env, session_manager=one_dot_x)
    systems = ["filter-chain", "swift-convolver"]
    results = {}

    def run(system, case, quantum, round_index, seconds, recorded):
        print(f"... {system}: {case}, quantum {quantum}, round {round_index or 'check'}", file=sys.stderr, flush=True)
        try:
            results[(case, quantum, round_index, system)] = run_case(
                graph, system, case, quantum, seconds, directory, args.executable, one_dot_x, version, recorded)
        except (RuntimeError, subprocess.SubprocessError) as error:
            print(f"    failed: {error}", file=sys.stderr)

    try:
        for quantum in [int(q) for q in args.quantum.split(",")]:
            for round_index in range(1, args.rounds + 1):
                for case in args.cases.split(","):
                    for system in (systems if round_index % 2 else systems[::-1]):
                        run(system, case, quantum, round_index, args.seconds, args.record == "rounds")
            if args.record == "check":
                for case in args.cases.split(","):
                    run("swift-convolver", case, quantum, 0, min(args.seconds, 5), True)
    finally:
        graph.stop()
        subprocess.run(["rm", "-rf", directory], check=False)

    print(f"\nbench-graph: {args.seconds:g} s noise at {RATE} Hz, private headless PipeWire {version} (Dummy-Driver); "
          + ("our record in every round" if args.record == "rounds" else "our record in the check runs only"))
    print(f"{'case':<7} {'quantum':>7} {'round':>5}  {'system':<16} {'CPU %':>6} {'busy p99 µs':>11} {'busy max µs':>11}"
          f" {'late':>5} {'drv late':>8}  own late / own record vs the graph's evaluation")
    check_last = lambda item: (item[0][0], item[0][1], item[0][2] or args.rounds + 1, item[0][3])
    for (case, quantum, round_index, system), r in sorted(results.items(), key=check_last):
        own = ""
        if system == "swift-convolver":
            record = f"record {r['own_error_db']:.1f} dB" if "own_error_db" in r else "not recorded"
            own = (f"own late {r['stats'].get('late-cycles-own')}, late levels {r['stats'].get('late-levels')}, "
                   f"{record}, plan {r['stats'].get('plan')}")
        print(f"{case:<7} {quantum:>7} {round_index or 'check':>5}  {system:<16} {r['cpu']:>6.2f} {r['p99']:>11.1f} {r['max']:>11.1f}"
              f" {r['late']:>5} {str(r['driver_late']):>8}  {own}")
    print("\nswift-convolver / filter-chain, same case and round (median, then each round):")
    cases = sorted({(case, quantum) for case, quantum, _, _ in results})
    for case, quantum in cases:
        ratios = {key: [] for key in ("cpu", "p99", "max")}
        for round_index in range(1, args.rounds + 1):
            ours, theirs = results.get((case, quantum, round_index, "swift-convolver")), results.get((case, quantum, round_index, "filter-chain"))
            if ours and theirs:
                for key in ratios:
                    ratios[key].append(ours[key] / theirs[key] if theirs[key] else float("nan"))
        if ratios["cpu"]:
            print(f"{case:<7} {quantum:>7}  " + ", ".join(
                f"{label} {statistics.median(values):.2f}x ({' '.join(f'{v:.2f}' for v in values)})"
                for label, values in (("CPU", ratios["cpu"]), ("busy p99", ratios["p99"]), ("busy max", ratios["max"]))))
    print_above_floor(results, args.rounds)
    print("\nCPU % by thread (threads of one name summed; N stands for a number; main: the process's main loop):")
    for (case, quantum, round_index, system), r in sorted(results.items(), key=check_last):
        print(f"{case:<7} {quantum:>7} {round_index or 'check':>5}  {system:<16} {live.thread_shares(r['threads'])}")


def print_above_floor(results, rounds):
    """Each case's CPU above its system's floor (same quantum and round): the convolution's own cost."""
    lines = []
    for case, quantum in sorted({(case, quantum) for case, quantum, _, _ in results if case != "floor"}):
        parts = []
        for round_index in range(1, rounds + 1):
            try:
                ours = results[(case, quantum, round_index, "swift-convolver")]["cpu"] - results[("floor", quantum, round_index, "swift-convolver")]["cpu"]
                theirs = results[(case, quantum, round_index, "filter-chain")]["cpu"] - results[("floor", quantum, round_index, "filter-chain")]["cpu"]
            except KeyError:
                continue
            parts.append((ours, theirs, ours / theirs if theirs > 0 else float("nan")))
        if parts:
            lines.append(f"{case:<7} {quantum:>7}  {statistics.median(p[2] for p in parts):.2f}x  ("
                         + ", ".join(f"{o:.2f} / {t:.2f}" for o, t, _ in parts) + ")")
    if lines:
        print("\nCPU above each system's floor (the floor case, same quantum and round), % of a core: ours / filter-chain's:")
        print("\n".join(lines))


if __name__ == "__main__":
    main()
