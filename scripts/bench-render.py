#!/usr/bin/python3
"""make bench-render: `pw-convolver render` beside zita's fconvolver on the same files, in one run.

A 10 s stereo IR (decaying noise, as bench-live's) and stereo noise inputs of 40 s and 10 min at
48 kHz, 32-bit float WAV. Each case runs --rounds times (default 3), the two alternating (first
one, then the other first), each as its own process under GNU time: its CPU time (user + system)
and peak RSS (through time's own fork: a child forked from this Python process would report
Python's RSS as its peak, which Linux carries over exec). Every output is held to numpy's
convolution of the input (scipy fftconvolve, float64): the error in dB of the expected signal's
energy, while the input plays and over the whole output (input and tail). fconvolver 1.1.0's
output is exact while the input plays but not in the tail it adds after the input's end.

fconvolver (Debian's jconvolver package, `make deps` installs it) runs with partition 256, as
measured in issue 24; pass --fconvolver-partition to change that. Ours runs `render` as it is
(its default block plans for throughput).

  /usr/bin/python3 scripts/bench-render.py                   # 40 s and 10 min, 3 rounds
  /usr/bin/python3 scripts/bench-render.py --inputs 40 --rounds 1
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np
from scipy.io import wavfile
from scipy.signal import fftconvolve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RATE = 48000


def synthetic_ir(seconds, seed):
    rng = np.random.default_rng(seed)
    n = int(seconds * RATE)
    decay = np.exp(-6.9 * np.arange(n) / n)
    ir = (rng.standard_normal((n, 2)) * decay[:, None] * 0.05).astype(np.float32)
    ir[0] = [0.5, 0.4]
    return ir


def run_measured(args, directory):
    """Runs one process to its end under GNU time; returns (CPU seconds, peak RSS in MB)."""
    report = os.path.join(directory, "time.txt")
    result = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o", report] + args,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{args[0]} failed ({result.returncode}): {result.stderr[-2000:]}")
    with open(report) as text:
        user, system, kilobytes = text.read().split()[-3:]
    return float(user) + float(system), int(kilobytes) / 1024


def error_db(output, expected, frames):
    difference = output[:frames] - expected[:frames]
    return 10 * np.log10(max(np.sum(difference ** 2), 1e-30) / np.sum(expected[:frames] ** 2))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", default="40,600", help="input lengths in seconds (default 40,600)")
    parser.add_argument("--ir", type=float, default=10, help="IR length in seconds (default 10)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--executable", default=f"{ROOT}/.build/release/pw-convolver")
    parser.add_argument("--fconvolver", default="/usr/bin/fconvolver")
    parser.add_argument("--fconvolver-partition", type=int, default=256)
    args = parser.parse_args()
    for tool in (args.executable, args.fconvolver):
        if not os.access(tool, os.X_OK):
            sys.exit(f"bench-render: {tool} is not there (make build; apt-get install jconvolver)")

    directory = tempfile.mkdtemp(prefix="swconv-bench-render-")
    try:
        ir = synthetic_ir(args.ir, seed=3)
        ir_path = os.path.join(directory, "ir.wav")
        wavfile.write(ir_path, RATE, ir)
        config = os.path.join(directory, "fconvolver.conf")
        with open(config, "w") as conf:
            conf.write(f"/convolver/new 2 2 {args.fconvolver_partition} {len(ir)}\n"
                       f"/impulse/read 1 1 1 0 0 0 1 {ir_path}\n/impulse/read 2 2 1 0 0 0 2 {ir_path}\n")
        systems = {
            "swift-convolver": lambda source, out: [args.executable, "render", "--ir", ir_path, source, out],
            "fconvolver": lambda source, out: [args.fconvolver, config, source, out],
        }
        rows = []
        for seconds in [float(s) for s in args.inputs.split(",")]:
            rng = np.random.default_rng(int(seconds))
            signal = rng.uniform(-0.25, 0.25, (int(seconds * RATE), 2)).astype(np.float32)
            source = os.path.join(directory, f"in-{seconds:g}s.wav")
            wavfile.write(source, RATE, signal)
            expected = np.stack([fftconvolve(signal[:, c].astype(np.float64), ir[:, c].astype(np.float64))
                                 for c in range(2)], axis=1)
            del signal
            for round_index in range(1, args.rounds + 1):
                order = list(systems) if round_index % 2 == 1 else list(systems)[::-1]
                for system in order:
                    out = os.path.join(directory, f"out-{system}.wav")
                    print(f"... {system}: {seconds:g} s, round {round_index}", file=sys.stderr, flush=True)
                    cpu, rss = run_measured(systems[system](source, out), directory)
                    output = wavfile.read(out)[1].astype(np.float64)
                    frames = min(len(output), len(expected))
                    rows.append((seconds, round_index, system, cpu, rss,
                                 error_db(output, expected, int(seconds * RATE)), error_db(output, expected, frames), frames))
                    del output
                    os.remove(out)
            os.remove(source)
    finally:
        subprocess.run(["rm", "-rf", directory], check=False)

    print(f"\nbench-render: {args.ir:g} s stereo IR at {RATE} Hz, stereo noise inputs; fconvolver partition "
          f"{args.fconvolver_partition}; CPU = user + system of the whole process, RSS = its peak")
    print(f"{'input s':>7} {'round':>5}  {'system':<16} {'CPU s':>7} {'peak RSS MB':>11}  error dB: {'input':>6} {'all':>6} {'frames':>9}")
    for seconds, round_index, system, cpu, rss, error, error_all, frames in rows:
        print(f"{seconds:>7g} {round_index:>5}  {system:<16} {cpu:>7.3f} {rss:>11.1f}            {error:>6.1f} {error_all:>6.1f} {frames:>9}")
    print("\nswift-convolver / fconvolver, same input and round (the median of the rounds first):")
    for seconds in sorted({row[0] for row in rows}):
        def values(system, index):
            return {r[1]: r[index] for r in rows if r[0] == seconds and r[2] == system}
        for label, index in (("CPU", 3), ("peak RSS", 4)):
            ours, theirs = values("swift-convolver", index), values("fconvolver", index)
            ratios = [ours[r] / theirs[r] for r in sorted(ours) if r in theirs and theirs[r] > 0]
            print(f"{seconds:>7g} s  {label:<9} {statistics.median(ratios):.2f}x  ("
                  + " ".join(f"{ratio:.2f}" for ratio in ratios) + ")")


if __name__ == "__main__":
    main()
