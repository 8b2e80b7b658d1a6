#!/usr/bin/env python3
"""The independent reference for IR resampling: scipy.signal.resample_poly.

    resample_reference.py SPEC.json     prints a JSON answer

SPEC {"task": "cabinet", "out": f32 path, "rate": Hz} writes a cabinet-like IR at that rate
(energy from its first samples, band-limited well inside the band of every rate); answer {"frames"}.
SPEC {"task": "compare", "source": f32 path, "sourceRate": Hz, "targetRate": Hz, "ours": f32 path}
judges our resampled IR; answer: peak frames and errors. Files are raw float32 mono.
The reference is resample_poly(source, up, down) scaled by sourceRate/targetRate (the filter's gain
kept, as the loader does), with a long Kaiser-windowed low-pass of scipy's own design, so that its
passband is flat to well below -60 dB where the test IR has its energy.
"""
import json
import sys
from fractions import Fraction

import numpy as np
from scipy import signal


PEAK_FRAME = 4


def cabinet(rate, onset=PEAK_FRAME):
    """As a cabinet IR file: its peak on frame `onset`, what came before it trimmed off, so that
    its energy starts at frame 0. Made from decaying noise through a steep elliptic low-pass at
    half the source's Nyquist frequency (at most 12 kHz), where both resamplers' passbands are flat."""
    rng = np.random.default_rng(7)
    n = int(0.05 * rate)
    t = np.arange(n) / rate
    excitation = rng.standard_normal(n) * np.exp(-t / 0.006)
    sos = signal.ellip(10, 0.01, 120, min(0.25 * rate, 12000), fs=rate, output="sos")
    ir = signal.sosfilt(sos, excitation)
    ir = ir[max(0, int(np.argmax(np.abs(ir))) - onset):]
    return (0.5 * ir / np.max(np.abs(ir))).astype(np.float32)


def reference(source, source_rate, target_rate):
    ratio = Fraction(int(round(target_rate)), int(round(source_rate)))
    up, down = ratio.numerator, ratio.denominator
    taps = 2 * 64 * max(up, down) + 1
    lowpass = signal.firwin(taps, 1.0 / max(up, down), window=("kaiser", 12.0))  # resample_poly scales it by up
    return signal.resample_poly(source.astype(np.float64), up, down, window=lowpass) * (source_rate / target_rate)


def compare(spec):
    source = np.fromfile(spec["source"], dtype=np.float32)
    ours = np.fromfile(spec["ours"], dtype=np.float32).astype(np.float64)
    expected = reference(source, spec["sourceRate"], spec["targetRate"])
    length = max(len(ours), len(expected))
    ours = np.pad(ours, (0, length - len(ours)))
    expected = np.pad(expected, (0, length - len(expected)))
    energy = np.sum(expected ** 2)
    head = 64
    error_after_head = np.sum((ours[head:] - expected[head:]) ** 2)
    error_all = np.sum((ours - expected) ** 2)
    db = lambda e: float(10 * np.log10(e / energy)) if e > 0 else -400.0
    return {
        "oursPeakFrame": int(np.argmax(np.abs(ours))),
        "referencePeakFrame": int(np.argmax(np.abs(expected))),
        "errorAfterHeadDB": db(error_after_head),
        "errorDB": db(error_all),
        "gainDB": float(10 * np.log10(np.sum(ours ** 2) / energy)),
    }


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    if spec["task"] == "cabinet":
        ir = cabinet(float(spec["rate"]))
        ir.tofile(spec["out"])
        print(json.dumps({"frames": len(ir)}))
    else:
        print(json.dumps(compare(spec)))
