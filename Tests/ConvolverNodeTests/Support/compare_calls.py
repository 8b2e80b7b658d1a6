"""Holds a node's own record of its calls to numpy's convolution of its own input.

Usage: compare_calls.py CALLS IR.wav   (CALLS: CallRecorder's file, float32 frames of the stereo
input then the stereo output; IR.wav: one IR channel per channel)

Prints one JSON object: frames (recorded), withoutOutputs (frames of calls without output buffers,
NaN in the record: nothing to hear, left out), playedSamples (input samples not zero, both channels), worst (the largest
difference of the output from the convolution, in double precision), wrongFrames (frames where it
exceeds 1e-4), firstWrong (the first of them, or null).
"""
import json
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np
from scipy.io import wavfile
from scipy.signal import fftconvolve

TOLERANCE = 1e-4

calls = np.fromfile(sys.argv[1], dtype=np.float32).reshape(-1, 4).astype(np.float64)
ir = wavfile.read(sys.argv[2])[1].astype(np.float64)
heard = ~np.isnan(calls[:, 2:]).any(axis=1)
difference = np.zeros(len(calls))
for channel in range(2):
    expected = fftconvolve(calls[:, channel], ir[:, channel])[: len(calls)]
    difference = np.maximum(difference, np.where(heard, np.abs(calls[:, 2 + channel] - expected), 0))
wrong = difference > TOLERANCE
print(json.dumps({"frames": len(calls), "withoutOutputs": int(np.count_nonzero(~heard)),
                  "playedSamples": int(np.count_nonzero(calls[:, :2])),
                  "worst": float(difference.max(initial=0)), "wrongFrames": int(wrong.sum()),
                  "firstWrong": int(np.argmax(wrong)) if wrong.any() else None}))
