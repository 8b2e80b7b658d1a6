#!/usr/bin/env python3
"""Two builds of pw-convolver side by side: `pw-convolver bench --json` of each, rounds
alternating (old, new, old, new ...), so that a refactoring can be shown to cost nothing.
Prints, per case and figure, each build's median and range (min-max over the rounds: the noise)
and the ratio of the medians, new / old.

    scripts/bench-builds.py --old /tmp/old/.build/release/pw-convolver \
        --new .build/release/pw-convolver --rounds 5 -- --ir-seconds 3,10 --blocks 256,1024
"""
import argparse
import json
import statistics
import subprocess
import sys

FIGURES = ["cpu_percent", "data_thread_cpu_percent", "call_p99_us", "call_max_us", "late"]


def bench(executable, arguments):
    """One run: {(engine, ir_seconds, block, split): {figure: value}}."""
    output = subprocess.run(
        [executable, "bench", "--json", *arguments], check=True, capture_output=True, text=True
    ).stdout
    cases = {}
    for line in output.splitlines():
        if not line.startswith("{"):
            continue
        case = json.loads(line)
        key = (case["engine"], case["ir_seconds"], case["block"], case.get("split"))
        cases[key] = {figure: case[figure] for figure in FIGURES if case.get(figure) is not None}
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", required=True, help="the baseline pw-convolver")
    parser.add_argument("--new", required=True, help="the pw-convolver to compare")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("bench_arguments", nargs="*", help="arguments for `pw-convolver bench` (after --)")
    options = parser.parse_args()

    runs = {"old": [], "new": []}
    for round_index in range(options.rounds):
        for name in ("old", "new") if round_index % 2 == 0 else ("new", "old"):
            runs[name].append(bench(getattr(options, name), options.bench_arguments))
            print(f"round {round_index + 1}: {name} done", file=sys.stderr)

    print(f"{'case':<44} {'figure':<24} {'old':>10} {'new':>10} {'new/old':>8}   {'old range':<19} new range")
    for key in sorted(runs["old"][0], key=str):
        engine, ir_seconds, block, split = key
        label = f"{engine} {ir_seconds} s IR, block {block}" + (f", split {split}" if split else "")
        for figure in FIGURES:
            old = [run[key][figure] for run in runs["old"] if figure in run.get(key, {})]
            new = [run[key][figure] for run in runs["new"] if figure in run.get(key, {})]
            if not old or not new:
                continue
            old_median, new_median = statistics.median(old), statistics.median(new)
            ratio = f"{new_median / old_median:8.2f}" if old_median else "       -"
            spread = f"{min(old):8.3f}-{max(old):<10.3f} {min(new):8.3f}-{max(new):.3f}"
            print(f"{label:<44} {figure:<24} {old_median:10.3f} {new_median:10.3f} {ratio}   {spread}")


if __name__ == "__main__":
    main()
