"""The DSP judge: the node's own record of its calls held to numpy's convolution of its own input.

Usage: judge_record.py SPEC.json   (SPEC: see `RecordJudge.Spec` in LiveJudges.swift)

The record (`test.record-calls`, CallRecorder) holds float32 frames: every input channel, then
every output channel, call after call, as the node's data thread saw them. Output o is expected to
be wet · Σ_entries(input i ∗ IR) + dry · input o, computed in double precision by scipy, for every
frame that had output buffers (frames without them are NaN in the record: nothing was heard).

`segments` gives (wet, dry) for each stretch of sound the test played, in order; a stretch starts
at the first input frame that is not zero after at least `gap` silent frames, and its expectation
runs until the next one starts (so its IR tail is inside it). A segment with wet = null is not
judged (a crossfade in progress, late levels on purpose).

Prints one JSON object: frames, withoutOutputs, receivedFrames (input frames not silent),
playedFrames (the same, of the file the player played), segmentStarts, and per output: worst
(largest difference), errorDB (error energy over expected energy), wrongFrames (> TOLERANCE),
firstWrong (or null).
"""
import json
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np
from scipy.io import wavfile
from scipy.signal import fftconvolve

TOLERANCE = 1e-4


def read_wav(path):
    data = wavfile.read(path)[1].astype(np.float64)
    return data[:, None] if data.ndim == 1 else data


def sound_starts(loud, gap):
    """First frames of the stretches of sound: loud frames after at least `gap` silent ones."""
    frames = np.flatnonzero(loud)
    if len(frames) == 0:
        return []
    breaks = np.flatnonzero(np.diff(frames) > gap)
    return [int(frames[0])] + [int(frames[index + 1]) for index in breaks]


def main():
    spec = json.load(open(sys.argv[1]))
    inputs, outputs = spec["inputs"], spec["outputs"]
    calls = np.fromfile(spec["calls"], dtype=np.float32).reshape(-1, inputs + outputs).astype(np.float64)
    signal, produced = calls[:, :inputs], calls[:, inputs:]
    heard = ~np.isnan(produced)
    loud = (signal != 0).any(axis=1)
    starts = sound_starts(loud, spec.get("gap", 12000))
    segments = spec["segments"]
    result = {"frames": len(calls), "withoutOutputs": int(np.count_nonzero(~heard.all(axis=1))),
              "receivedFrames": int(np.count_nonzero(loud)), "segmentStarts": starts}
    if spec.get("played"):
        result["playedFrames"] = int(np.count_nonzero((read_wav(spec["played"]) != 0).any(axis=1)))
    if len(segments) > 1 and len(starts) != len(segments):
        result["error"] = f"the node's input has {len(starts)} stretches of sound, the test played {len(segments)}"
        print(json.dumps(result))
        return
    bounds = ([0] + starts[1:] + [len(calls)]) if len(segments) > 1 else [0, len(calls)]
    impulses = {}
    for entry in spec["entries"]:
        if entry["file"] not in impulses and entry["file"] != "none":
            impulses[entry["file"]] = read_wav(entry["file"])
    expected = np.zeros_like(produced)
    judged = np.zeros(len(calls), dtype=bool)
    for (start, end), segment in zip(zip(bounds, bounds[1:]), segments):
        if segment["wet"] is None:
            continue
        judged[start:end] = True
        piece = signal[start:end]
        for entry in spec["entries"]:
            ir = np.array([1.0]) if entry["file"] == "none" else impulses[entry["file"]][:, entry["channel"]]
            wet = fftconvolve(piece[:, entry["input"]], ir * entry.get("gain", 1.0))[: end - start]
            expected[start:end, entry["output"]] += segment["wet"] * wet
        for output in range(min(inputs, outputs)):
            expected[start:end, output] += segment["dry"] * piece[:, output]
    result["judgedFrames"] = int(np.count_nonzero(judged))
    result["outputs"] = []
    for output in range(outputs):
        compared = judged & heard[:, output]
        difference = np.where(compared, np.abs(np.nan_to_num(produced[:, output]) - expected[:, output]), 0)
        energy = float(np.sum(expected[compared, output] ** 2))
        error = float(np.sum(difference ** 2))
        wrong = difference > TOLERANCE
        result["outputs"].append({
            "worst": float(difference.max(initial=0)),
            "errorDB": 10 * np.log10(max(error, 1e-30) / max(energy, 1e-30)),
            "wrongFrames": int(wrong.sum()),
            "firstWrong": int(np.argmax(wrong)) if wrong.any() else None,
        })
    print(json.dumps(result))


main()
