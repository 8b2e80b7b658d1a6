#!/usr/bin/python3
"""Our node's output beside filter-chain's, both fed by one player and recorded by one recorder in
the same cycles (FilterChainComparisonTests): frame for frame they must agree.

Spec (JSON, argv[1]): recording (raw interleaved float32), channels, ours and theirs (the recorded
channels of each system's outputs, in the same order), miswired (the outputs of our node run on a
deliberately mistranslated config).
Answer (JSON, stdout):
  frames      frames where filter-chain's output is not silent
  error_db    the worse output's energy of (ours - theirs) over theirs, in dB, over every frame
  worst       the largest absolute difference
  miswired_error_db, swapped_error_db, one_sample_late_error_db   the same judge against the
                mistranslated node, our outputs swapped, and ours delayed by one frame: each must
                fail it (the negative controls).
"""
import json
import sys

import numpy as np


def error_db(ours, theirs):
    worst = -np.inf
    for o, t in zip(ours.T, theirs.T):
        energy = np.sum(t * t)
        if energy == 0:
            return np.inf
        worst = max(worst, 10 * np.log10(max(np.sum((o - t) ** 2), 1e-30) / energy))
    return float(worst)


def main():
    spec = json.load(open(sys.argv[1]))
    frames = np.fromfile(spec["recording"], dtype=np.float32).reshape(-1, spec["channels"]).astype(np.float64)
    ours, theirs = frames[:, spec["ours"]], frames[:, spec["theirs"]]
    late = np.vstack([np.zeros((1, ours.shape[1])), ours[:-1]])
    print(json.dumps({
        "frames": int(np.sum(np.abs(theirs).max(axis=1) > 1e-3)),
        "error_db": error_db(ours, theirs),
        "worst": float(np.abs(ours - theirs).max(initial=0)),
        "miswired_error_db": error_db(frames[:, spec["miswired"]], theirs),
        "swapped_error_db": error_db(ours[:, ::-1], theirs),
        "one_sample_late_error_db": error_db(late, theirs),
    }))


main()
