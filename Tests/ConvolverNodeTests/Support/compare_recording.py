"""Compares a recording of a node's inputs and outputs with numpy's convolution (double precision).

Usage: compare_recording.py SPEC.json   (SPEC: see `NumpyReference.Spec` in AudioGraph.swift; the
optional "quanta" lists the graph quanta to try for graph events, "played" the file pw-play played,
"input" a file that is the node's input when the recording holds only the outputs)

The recording holds the node's input channels (what pw-play sent, recorded by pw-record) followed by
its output channels, taken by one pw-record stream in the same cycles. Expected output o:
    wet · Σ_entries(input i ∗ IR) + dry · input o,
compared at the lag found by cross-correlation (0 for a zero-latency node).

Graph events. Under load pw-record (PipeWire 0.3.65) now and then loses whole cycles: the recording
lacks a block of the node's input and of its output alike, so the two stay aligned, but the node's
output after that point still carries the lost block for one IR length. (Measured: the recorded
output then matched, at float precision, a node input with exactly those blocks more; the node
counted no cycle it was run twice in.) Around quantum changes the recording sometimes also has the
input of a block but the node's output of the call after it. Such places are modelled, not excused:
the node's input is taken to hold one to three graph quanta more there, and only blocks the node
can have had are tried: silence (the player late in that cycle too), then the played blocks the
recording lacks, as the played file has them, never blocks the recording already has. An event
counts only if the model then explains the output at float precision from that point for at least
a quantum; of those, the one that explains it longest wins (best: for the IR's length, up to the
next event or the end). After a late cycle pw-record also sometimes gets no
buffer from one of the node's ports: that output is exact silence for one cycle while the others
are right; modelled as silence there. Anything else is a glitch: start and length of a run of wrong
samples; modelling goes on after it, and the lag at the end is measured against the model.
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
        if spec.get("input"):
            # The recording holds only the outputs (a device's monitor, say); the input is the file.
            self.x = load(spec["input"])[:, : self.ni]
            self.y = both[:, : self.no]
        else:
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
        self.quanta = tuple(spec.get("quanta") or QUANTA)

    def render(self, node_input, start=0, stop=None):
        """Output frames [start, stop) of a node that received `node_input` (frames × inputs),
        per output (stop: the end of the convolution)."""
        stop = len(node_input) + self.irFrames if stop is None else stop
        origin = max(0, start - self.irFrames)
        segment = node_input[origin:stop]
        out = np.zeros((stop - start, self.no))
        for o, routes in enumerate(self.routes):
            for i, h in routes:
                if self.wet != 0:
                    y = self.wet * fftconvolve(segment[:, i], h)[start - origin : stop - origin]
                    out[: len(y), o] += y
            if o < self.ni:
                dry = self.dry * node_input[start:stop, o]
                out[: len(dry), o] += dry
        return out

    def missed_block(self, recorded_next, length):
        """The played file's `length` frames just before the recorded frames `recorded_next`
        (frames × inputs; 64 of them identify the place), or None when they are not in the file."""
        if length == 0:
            return np.zeros((0, self.ni))
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
        frames = len(self.x)
        active = np.nonzero(np.any(np.abs(self.x) > 0, axis=1))[0]
        first, last = int(active[0]), int(active[-1])
        plain = self.render(self.x)
        end_from = max(first, last - 48000)
        lags = [find_lag(self.y[:, o], plain[: first + 48000, o], 0) for o in range(self.no)]
        end_lags = [find_lag(self.y[:, o], plain[end_from:last, o], end_from) for o in range(self.no)]
        node_input, shift_points, events, silent_spans = self.x.copy(), [], [], []
        # One lag for all outputs: compare there (a zero-latency node has lag 0), modelling the
        # cycles the recording lost one after the other.
        recorded = [len(self.y) - lag for lag in lags]  # frames recorded from expected frame 0 on
        # Output and input the same length (the recording may be shorter or longer than the input).
        self.y = np.vstack([self.y, np.zeros((max(0, frames + max(lags) - len(self.y)), self.no))])[: frames + max(lags)]
        if len(set(lags)) == 1 and lags[0] >= 0:
            self.y = self.y[lags[0]:]
            start = 0
            while True:
                mapped = self.render(node_input)[np.arange(frames) + self.shifts(shift_points, frames)]
                self.silence(mapped, silent_spans)
                end = min(recorded)
                bad = np.nonzero(np.any(np.abs(self.y[start:end] - mapped[start:end]) > TOLERANCE, axis=1))[0]
                if len(bad) == 0:
                    break
                at = start + int(bad[0])
                model = self.lost_cycles(node_input, shift_points, at)
                if model is not None:
                    node_input, shift_points, length, kind = model
                    events.append({"kind": kind, "at": at, "frames": length})
                    start = at
                    continue
                span = self.silent_cycle(mapped, at)
                if span is not None:
                    silent_spans.append(span)
                    events.append({"kind": f"recording silent on output {','.join(map(str, span[2]))} for one cycle",
                                   "at": at, "frames": span[1]})
                    start = at
                    continue
                # Unexplained: a glitch. Model on after it, so that one wrong run is not taken for
                # every sample after it.
                start = self.end_of_wrong_run(mapped, at, end)
                if start is None:
                    break
            # The lag at the end against the model: dropped or repeated samples the model does not
            # explain show here.
            end_lags = [lags[0] + find_lag(self.y[:, o], mapped[end_from:last, o], end_from) for o in range(self.no)]
            lags_applied = lags
        else:
            lags_applied = [0] * self.no
        expected = self.render(node_input)
        shift = self.shifts(shift_points, frames)
        self.silence(expected, [(at + shift[at], length, outputs) for at, length, outputs in silent_spans])
        results = []
        for o in range(self.no):
            lag = lags[o]
            offset = 0 if lags_applied[o] else lag  # y already shifted when the lag was applied
            m = max(0, min(len(expected) - shift[-1], frames - lag, recorded[o]))
            exp = expected[np.arange(m) + shift[:m], o]
            got = self.y[offset : offset + m, o]
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
                "glitches": glitches[:20], "glitchCount": len(glitches), "graphEvents": events,
                "correlation": float(np.dot(got, exp) / max(np.sqrt(np.dot(got, got) * np.dot(exp, exp)), 1e-300)),
                "energyRatio": float(np.sum(got ** 2) / max(np.sum(exp ** 2), 1e-300)),
                "comparedFrames": int(m), "expectedFrames": int(frames)})
        return results

    @staticmethod
    def shifts(shift_points, frames):
        """Per recording frame: how many frames the node had processed beyond the recording."""
        shift = np.zeros(frames, dtype=int)
        for at, extra in shift_points:
            shift[at:] += extra
        return shift

    def lost_cycles(self, node_input, shift_points, at):
        """Tries 'the recording lost one to three cycles just before recording frame `at`' for each
        quantum and each set of blocks the node can have had in them. Of the candidates that explain
        the output from `at` on for at least one quantum, the one that explains it longest (the
        IR's length, or up to the next event) wins; the simplest, in the order tried, on a tie.
        Returns (node input, shift points, length, kind) or None."""
        offset = sum(extra for point, extra in shift_points if point <= at)
        node_at = at + offset
        # The IR's length, or up to the end of the recording (events in the last IR length count too).
        window = min(self.irFrames + 3 * max(self.quanta), len(self.y) - at)
        if window < max(self.quanta) + 512:
            return None
        best, best_length = None, 0
        for cycles in (1, 2, 3):
            for quantum in self.quanta:
                length = cycles * quantum
                # `delay` 0: the lost cycles come before the recorded block at `at`; `quantum`: after
                # it, and the recording has that block's input but took the next call's output.
                for delay in (0, quantum):
                    insert = node_at + delay
                    if insert < length:
                        continue
                    # The lost cycles in order: `silent` ones (the player late in them too), then
                    # the played blocks the recording lacks.
                    for silent in range(cycles + 1):
                        played = self.missed_block(node_input[insert : insert + 64], (cycles - silent) * quantum)
                        if played is None:
                            continue
                        if len(played) and np.array_equal(played, node_input[insert - len(played) : insert]):
                            continue  # the recording has these blocks: that would be the node repeating them
                        block = np.concatenate([np.zeros((silent * quantum, self.ni)), played])
                        candidate = np.concatenate([node_input[:insert], block, node_input[insert:]])
                        if self.explained(candidate, at, node_at + length, min(window, quantum + 512)) < quantum:
                            continue  # a cheap first look
                        explained = self.explained(candidate, at, node_at + length, window)
                        if explained > best_length and explained >= quantum:
                            kind = (f"recording lost {cycles} cycle{'s' if cycles > 1 else ''} ({silent} silent)"
                                    + (", output one call late" if delay else ""))
                            best, best_length = (candidate, shift_points + [(at, length)], length, kind), explained
                            if explained == window:
                                return best
        return best

    @staticmethod
    def silence(expected, spans):
        """The modelled silent cycles: the expected output is silence there."""
        for at, length, outputs in spans:
            expected[at : at + length, outputs] = 0

    def silent_cycle(self, mapped, at):
        """Tries 'the recording has silence on some outputs for one cycle at `at`' (pw-record got no
        buffer from those ports then; seen on one channel of two after a late cycle): those outputs
        exactly zero for one quantum from `at`, every output right for the IR's first samples after it.
        Returns (at, quantum, outputs) or None."""
        for quantum in self.quanta:
            got, want = self.y[at : at + quantum], mapped[at : at + quantum]
            wrong = np.any(np.abs(got - want) > TOLERANCE, axis=0)
            outputs = [int(o) for o in np.nonzero(wrong)[0]]
            if len(got) < quantum or not np.all(got[:, outputs] == 0):
                continue
            after = slice(at + quantum, at + 2 * quantum + 512)
            if not np.any(np.abs(self.y[after] - mapped[after]) > TOLERANCE):
                return (at, quantum, outputs)
        return None

    def end_of_wrong_run(self, mapped, at, end):
        """Where the run of wrong samples from `at` ends (runs closer than 256 frames count as one,
        as glitches do), or None when it lasts to the end."""
        wrong = np.nonzero(np.any(np.abs(self.y[at:end] - mapped[at:end]) > TOLERANCE, axis=1))[0]
        gaps = np.nonzero(np.diff(wrong) >= 256)[0]
        last = int(wrong[gaps[0]]) if len(gaps) else int(wrong[-1])
        return at + last + 1 if at + last + 256 < end else None

    def explained(self, node_input, at, node_frame, span):
        """How many frames from `at` on the recorded output equals the output of a node that
        received `node_input`, from its frame `node_frame` on (`span` when all of them)."""
        expected = self.render(node_input, node_frame, node_frame + span)
        wrong = np.nonzero(np.any(np.abs(self.y[at : at + span] - expected) > TOLERANCE, axis=1))[0]
        return int(wrong[0]) if len(wrong) else span


def main():
    spec = json.load(open(sys.argv[1]))
    print(json.dumps(Reference(spec).compare()))


if __name__ == "__main__":
    main()
