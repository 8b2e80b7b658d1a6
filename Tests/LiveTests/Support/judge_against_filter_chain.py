#!/usr/bin/python3
"""Our node's output beside filter-chain's, both fed by one player and recorded by one recorder in
the same cycles (FilterChainComparisonTests): cycle by cycle they must agree.

Cycle by cycle, not over the whole recording: each sink's capture stream takes the asynchronous
player's buffer on its own (both are ASYNC, as filter-chain's are), and either can miss one in a
cycle (our node's record showed 512 of 96000 played frames missing in one CI run on 1.4.2; on
0.3.65 with a compile beside the suite, 34 of 284 cycles disagreed from cycle 810 on). Where one
sink missed a buffer the two outputs differ in that cycle and for the IR's length after; everywhere
else they must be the same to float precision. The disagreeing cycles are counted, and the longest
run of them is given: the test may set one such run aside (FilterChainJudge.assertAgrees).

Spec (JSON, argv[1]): recording (raw interleaved float32), channels, quantum (frames per cycle,
the recording's cycles from its first frame), ours, theirs and miswired (the recorded channels of
our node's outputs, filter-chain's, and optionally those of our node run on a deliberately
mistranslated config, each in the same order), and optionally limit_db (default -90): where
filter-chain's own float arithmetic is further from the exact result than that (its biquads:
docs/facts.md).
Answer (JSON, stdout):
  cycles      cycles in which filter-chain's output moves (not silent, not a constant)
  agreeing    of those, cycles where ours is within limit_db of filter-chain's on every output
  first_disagreeing   the first few cycles that do not agree (indices)
  longest_disagreeing  the most loud cycles in a row that do not agree
  error_db    over the agreeing cycles, the worse output's energy of (ours - theirs) over theirs
              (null where no cycle agrees)
  worst       over the agreeing cycles, the largest absolute difference
  shifted_agreeing  of the disagreeing cycles, those that agree with filter-chain's output moved by
              whole blocks, or in which one side had no buffer (a sink that missed one of the
              player's buffers)
  miswired_agreeing, swapped_agreeing, one_sample_late_agreeing   the cycles that agree when
              filter-chain's output is held to the mistranslated node (null without one), to our
              outputs swapped, and to ours delayed by one frame: each must agree in almost none
              (negative controls).
"""
import json
import sys

import numpy as np



def cycle_errors_db(candidate, reference, quantum):
    """Per cycle, the worse output's energy of (candidate - reference) over reference, in dB. An
    output quieter than -80 dBFS RMS in a cycle (the input ended, an LFE's stop band) is held to
    that level, not to its own float noise."""
    cycles = len(reference) // quantum
    shape = (cycles, quantum, reference.shape[1])
    difference = ((candidate - reference)[:cycles * quantum] ** 2).reshape(shape).sum(axis=1)
    energy = (reference[:cycles * quantum] ** 2).reshape(shape).sum(axis=1)
    floor = quantum * 1e-8
    return (10 * np.log10(np.maximum(difference / np.maximum(energy, floor), 1e-30))).max(axis=1)


def shifted_agreeing(ours, theirs, agree, loud, quantum, limit_db):
    """The loud cycles that disagree as recorded but agree with filter-chain's output shifted by
    whole blocks of 64 frames (2 to 8192 frames either way), or in which one side had no buffer
    (an output silent for the whole cycle while the other's is loud). That is a sink having
    missed one of the player's buffers, or a cycle: from then on its input, and so its output, is
    the other's moved by that buffer, until the other misses one too. Each cycle may take its own
    shift; the test still wants most cycles to agree as recorded (a node a block late fails)."""
    disagreeing = loud & ~agree
    if not disagreeing.any():
        return 0
    cycles = len(agree)
    recovered = np.zeros(cycles, dtype=bool)
    for lag in [k * 64 for k in range(-128, 129) if k != 0]:
        moved = np.zeros_like(theirs)
        if lag > 0:
            moved[lag:] = theirs[:-lag]
        else:
            moved[:lag] = theirs[-lag:]
        recovered |= cycle_errors_db(ours, moved, quantum) <= limit_db
    shape = (cycles, quantum, theirs.shape[1])
    peak_ours = np.abs(ours[:cycles * quantum]).reshape(shape).max(axis=1)
    peak_theirs = np.abs(theirs[:cycles * quantum]).reshape(shape).max(axis=1)
    no_buffer = (((peak_ours < 1e-6) & (peak_theirs > 1e-3)) | ((peak_theirs < 1e-6) & (peak_ours > 1e-3))).any(axis=1)
    return int(((recovered | no_buffer) & disagreeing).sum())


def main():
    spec = json.load(open(sys.argv[1]))
    frames = np.fromfile(spec["recording"], dtype=np.float32).reshape(-1, spec["channels"]).astype(np.float64)
    quantum = spec["quantum"]
    limit_db = spec.get("limit_db", -90.0)
    ours, theirs = (frames[:, spec[key]] for key in ("ours", "theirs"))
    cycles = len(frames) // quantum
    # A cycle counts where filter-chain's output moves: silence and a builtin's constant (exp of
    # silence is 1) are left out, where nodes that started apart differ and a late one agrees.
    shaped = theirs[:cycles * quantum].reshape(cycles, quantum, -1)
    loud = (shaped.max(axis=1) - shaped.min(axis=1)).max(axis=1) > 1e-3

    def agreeing(candidate):
        return (cycle_errors_db(candidate, theirs, quantum) <= limit_db) & loud

    agree = agreeing(ours)
    shifted = shifted_agreeing(ours, theirs, agree, loud, quantum, limit_db)
    samples = np.repeat(agree, quantum)
    difference, reference = (ours - theirs)[:cycles * quantum][samples], theirs[:cycles * quantum][samples]
    error = max((10 * np.log10(max(np.sum(d * d), 1e-30) / np.sum(r * r)) for d, r in zip(difference.T, reference.T)
                 if np.sum(r * r) > 0), default=None)
    disagreeing = loud & ~agree
    longest = run = 0
    for cycle_disagrees in disagreeing:
        run = run + 1 if cycle_disagrees else 0
        longest = max(longest, run)
    late = np.vstack([np.zeros((1, ours.shape[1])), ours[:-1]])
    print(json.dumps({
        "cycles": int(loud.sum()),
        "agreeing": int(agree.sum()),
        "first_disagreeing": [int(c) for c in np.nonzero(disagreeing)[0][:8]],
        "longest_disagreeing": longest,
        "error_db": None if error is None else float(error),
        "worst": float(np.abs(difference).max(initial=0)),
        "miswired_agreeing": int(agreeing(frames[:, spec["miswired"]]).sum()) if spec.get("miswired") else None,
        "swapped_agreeing": int(agreeing(ours[:, ::-1]).sum()),
        "one_sample_late_agreeing": int(agreeing(late).sum()),
        "shifted_agreeing": shifted,
    }))


main()
