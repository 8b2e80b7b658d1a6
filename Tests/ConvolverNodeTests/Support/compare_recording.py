"""Compares a recording of a node's inputs and outputs with numpy's convolution (double precision).

Usage: compare_recording.py SPEC.json   (SPEC: see `ReferenceSpec` in AudioGraph.swift)

The recording holds the node's input channels (what pw-play sent, recorded by pw-record) followed by
its output channels, taken by one pw-record stream in the same cycles. Expected output o:
    wet · Σ_entries(input i ∗ IR) + dry · input o.

Graph events. Under load PipeWire 0.3.65 now and then runs a node once more in a cycle: a player
that finished late signals its readers after the next cycle has begun. The recorder then has
silence where the node processed the player's real block, and the node's output differs from the
convolution of the recorded input for one IR length (measured here: the recorded output matched,
at float precision, a node input with exactly that one block more). Such places are modelled, not
excused: the node's input is taken to hold one more block there, a graph quantum long, and only
blocks the graph can have handed it are tried (the block the recorder missed, as the played file
has it; the block the node had just processed; the next block early). The event counts only if
the model then explains the output at float precision from that point for the IR's length (or up
to the next event). Anything else is a glitch: start and length of the run of wrong samples.
"""
import json
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np
from scipy.io import wavfile
from scipy.signal import fftconvolve

TOLERANCE = 1e-4
QUANTA = (1024, 512, 256, 128, 64, 2048, 32, 16)


def load(path):
    rate, data = wavfile.read(path)
    data = np.asarray(data, dtype=np.float64)
    return data.reshape(len(data), -1)


def find_lag(got, probe, offset):
    n = 1 << int(np.ceil(np.log2(len(got) + len(probe))))
    corr = np.fft.irfft(np.fft.rfft(got, n) * np.conj(np.fft.rfft(probe, n)), n)[: len(got)]
    return int(np.argmax(np.abs(corr))) - offset


def db(num, den):
    return float(10 * np.log10(max(num, 1e-300) / max(den, 1e-300)))


class Reference:
    def __init__(self, spec):
        both = load(spec["recording"])
        self.ni, self.no = spec["inputs"], spec["outputs"]
        self.x = both[:, : self.ni]
        self.y = both[:, self.ni : self.ni + self.no]
        self.wet, self.dry = spec["wet"], spec["dry"]
        files = {}
        self.routes = [[] for _ in range(self.no)]  # per output: (input, IR)
        for e in spec["entries"]:
            if e["file"] == "none":
                h = np.ones(1)
            else:
                files.setdefault(e["file"], load(e["file"]))
                h = files[e["file"]][:, e["channel"]]
            self.routes[e["output"]].append((e["input"], h * e.get("gain", 1.0)))
        self.irFrames = max(len(h) for routes in self.routes for _, h in routes)
        self.played = load(spec["played"]) if spec.get("played") else None

    def render(self, node_input):
        """Output of a node that received `node_input` (frames × inputs), per output."""
        out = np.zeros((len(node_input) + self.irFrames, self.no))
        for o, routes in enumerate(self.routes):
            for i, h in routes:
                if self.wet != 0:
                    y = self.wet * fftconvolve(node_input[:, i], h)
                    out[: len(y), o] += y
            if o < self.ni:
                out[: len(node_input), o] += self.dry * node_input[:, o]
        return out

    def missed_block(self, recorded_next, length):
        """The played file's `length` frames just before the recorded frames `recorded_next`
        (frames × inputs; 64 of them identify the place), or None when they are not in the file."""
        probe = recorded_next[:64]
        if self.played is None or len(probe) < 64 or not np.any(probe):
            return None
        frame, channel = (int(v) for v in np.argwhere(probe != 0)[0])
        column = self.played[:, channel]
        for index in np.nonzero(column == probe[frame, channel])[0]:
            start = index - frame
            if start >= length and start + 64 <= len(column) \
                    and np.array_equal(self.played[start : start + 64, : self.ni], probe):
                return self.played[start - length : start, : self.ni]
        return None

    def compare(self):
        node_input = self.x.copy()
        # shift[n]: frames the node had processed beyond the recording at recording frame n.
        events, unexplained = [], []
        shift_points = []  # (recording frame, extra frames) in order
        active = np.nonzero(np.any(np.abs(self.x) > 0, axis=1))[0]
        first, last = int(active[0]), int(active[-1])
        frames = len(self.x)
        reference_lag = None
        start = 0
        while True:
            expected = self.render(node_input)
            index = np.arange(frames)
            shift = np.zeros(frames, dtype=int)
            for at, extra in shift_points:
                shift[at:] += extra
            mapped = expected[index + shift]
            if reference_lag is None:
                lags = [find_lag(self.y[:, o], mapped[: first + 48000, o], 0) for o in range(self.no)]
                end_from = max(first, last - 48000)
                end_lags = [find_lag(self.y[:, o], mapped[end_from:last, o], end_from) for o in range(self.no)]
                reference_lag = lags
            if any(lag != 0 for lag in reference_lag):
                break  # not aligned: reported as is, no modelling
            error = self.y - mapped
            bad = np.nonzero(np.any(np.abs(error[start:]) > TOLERANCE, axis=1))[0]
            if len(bad) == 0:
                break
            at = start + int(bad[0])
            model = self.extra_block(node_input, shift_points, at)
            if model is None:
                unexplained.append(at)
                break
            node_input, shift_points, length, kind = model
            events.append({"kind": kind, "at": at, "frames": length})
            start = at
        # Final measures with the accepted model.
        expected = self.render(node_input)
        shift = np.zeros(frames, dtype=int)
        for at, extra in shift_points:
            shift[at:] += extra
        results = []
        for o in range(self.no):
            lag = reference_lag[o]
            m = max(0, min(len(expected) - shift[-1], frames - lag))
            exp = expected[np.arange(m) + shift[:m], o] if lag == 0 else expected[:m, o]
            got = self.y[lag : lag + m, o]
            err = got - exp
            glitches = []
            for index in np.nonzero(np.abs(err) > TOLERANCE)[0]:
                if glitches and index - (glitches[-1][0] + glitches[-1][1]) < 256:
                    glitches[-1][1] = int(index) - glitches[-1][0] + 1
                else:
                    glitches.append([int(index), 1])
            mask = np.ones(m, dtype=bool)
            for g_start, g_length in glitches:
                mask[g_start : g_start + g_length] = False
            results.append({
                "lag": lag, "endLag": end_lags[o],
                "errorDB": db(np.sum(err ** 2), np.sum(exp ** 2)),
                "cleanErrorDB": db(np.sum(err[mask] ** 2), np.sum(exp[mask] ** 2)),
                "glitches": glitches[:20], "graphEvents": events,
                "comparedFrames": int(m), "expectedFrames": int(frames)})
        return results

    def extra_block(self, node_input, shift_points, at):
        """Tries 'the node ran once more, on one block, just before recording frame `at`' for
        each quantum and each block the graph can have handed it: the block the recorder missed
        (the played file's block before what the recorder has next), the block it had just
        processed (run twice on one buffer), or the next block early. Accepted when the output is
        then right from `at` on, for the IR's length or up to the next event, at least one block
        long. Returns (node input, shift points, length, kind) or None."""
        offset = sum(extra for point, extra in shift_points if point <= at)
        node_at = at + offset
        window = self.irFrames + max(QUANTA)
        if at + window > len(self.x):
            return None
        span = np.arange(at, at + window)
        for length in QUANTA:
            if node_at < length:
                continue
            blocks = (("missed block", self.missed_block(node_input[node_at : node_at + 64], length)),
                      ("same block twice", node_input[node_at - length : node_at]),
                      ("next block early", node_input[node_at : node_at + length]))
            for kind, block in blocks:
                if block is None:
                    continue
                candidate = np.concatenate([node_input[:node_at], block, node_input[node_at:]])
                expected = self.render(candidate[: node_at + length + window])
                wrong = np.nonzero(np.any(np.abs(self.y[span] - expected[span + offset + length]) > TOLERANCE, axis=1))[0]
                if len(wrong) == 0 or wrong[0] >= length:
                    return candidate, shift_points + [(at, length)], length, kind
        return None


def main():
    spec = json.load(open(sys.argv[1]))
    print(json.dumps(Reference(spec).compare()))


if __name__ == "__main__":
    main()
