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
output after that point still carries the lost block for one IR length. A stall of the whole machine
loses it several cycles in a row (reproduced with a SCHED_FIFO hog on both cores: 8 ms lost 5 to 6
cycles of 64; 25 ms lost 4 cycles of 256). Around stalls and quantum changes the recording also
shows (each traced inside the node, whose own input and output were right every time):
- the input of a block but the node's output of the call after it, or before it;
- no buffer from some of the node's output ports (exact silence there for one cycle), or from the
  player's ports (its input silent, or the next block a cycle early, while the node got the blocks);
- a played block that reached neither the node nor pw-record (the recording lacks it and the block
  before it, which the node got);
- after a stall PipeWire can run the node twice at one clock position; the second call gets silence
  when the player did not run again, and pw-record may take the node's port buffer while that call
  rewrites it (the recorded row: that call's output half written).
Such places are modelled, not excused: the node's input is taken to hold one or more graph quanta
more there (up to STALL_FRAMES, or as many as the recorded input shows missing), and only blocks
the node can have had are tried: silence (the player late in that cycle too), then the played
blocks the recording lacks, as the played file has them,
never blocks the recording already has, and as many as the recorded input shows missing there (or
all but the last one). The simplest model that explains the output longest wins; every model must
explain a quantum of output beyond the rows it overrides (silence matches any input). An event counts
only if the model then explains the output at float precision from that point. A row that no model
explains stays a glitch even when lost cycles after it are modelled (the half-written row above).
Anything else is a glitch (a block the node never processed, say, because it ran too late): start and
length of a run of wrong samples; modelling goes on after it, and the lag at the end is measured
against the model.
"""
import json
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np
from scipy.io import wavfile
from scipy.signal import fftconvolve

TOLERANCE = 1e-4
# The longest stall of the whole machine modelled as lost cycles: 16 ms at 48 kHz (this VM stalls
# its vCPUs up to ~9 ms; a SCHED_FIFO hog on both cores for 8 ms loses pw-record 5 to 6 cycles of 64).
STALL_FRAMES = 768
# Lost cycles the recorded input itself shows (the played blocks it lacks, found in the played file)
# are modelled beyond STALL_FRAMES, up to this many: a SCHED_FIFO hog on both cores for 25 ms lost
# pw-record 4 cycles of 256 in a row, while the node's output carried every one of them.
MAX_SHOWN_LOST_CYCLES = 64
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

    def render_change(self, delta):
        """The first len(delta) output frames that input frames `delta` (frames × inputs, from the
        node's input at that place) add to every output: a short direct convolution."""
        frames = len(delta)
        out = np.zeros((frames, self.no))
        for o, routes in enumerate(self.routes):
            for i, h in routes:
                out[:, o] += self.wet * np.convolve(delta[:, i], h[:frames])[:frames]
            if o < self.ni:
                out[:, o] += self.dry * delta[:, o]
        return out

    def missed_block(self, recorded_before, recorded_next, length, anchor="next"):
        """The played file's `length` frames just before the recorded frames `recorded_next`
        (`anchor` "next"; when those are silence, the player late there too: as for "before"), or
        just after `recorded_before` ("before"). Frames × inputs; 64 of them identify the place.
        None when they are not in the file."""
        if length == 0:
            return np.zeros((0, self.ni))
        start = self.played_position(recorded_next[:64]) if anchor == "next" else None
        if start is None:
            before = self.played_position(recorded_before[-64:])
            start = None if before is None else before + 64 + length
        if start is None or start < length or start > len(self.played):
            return None
        return self.played[start - length : start, : self.ni]

    def compare(self):
        frames = len(self.x)
        active = np.nonzero(np.any(np.abs(self.x) > 0, axis=1))[0]
        first, last = int(active[0]), int(active[-1])
        plain = self.render(self.x)
        end_from = max(first, last - 48000)
        lags = [find_lag(self.y[:, o], plain[: first + 48000, o], 0) for o in range(self.no)]
        end_lags = [find_lag(self.y[:, o], plain[end_from:last, o], end_from) for o in range(self.no)]
        node_input, shift_points, events, overrides = self.x.copy(), [], [], []
        # One lag for all outputs: compare there (a zero-latency node has lag 0), modelling the
        # cycles the recording lost one after the other.
        recorded = [len(self.y) - lag for lag in lags]  # frames recorded from expected frame 0 on
        # Output and input the same length (the recording may be shorter or longer than the input).
        self.y = np.vstack([self.y, np.zeros((max(0, frames + max(lags) - len(self.y)), self.no))])[: frames + max(lags)]
        if len(set(lags)) == 1 and lags[0] >= 0:
            self.y = self.y[lags[0]:]
            start = 0
            while True:
                mapped = self.mapped(node_input, shift_points, overrides, frames)
                end = min(recorded)
                bad = np.nonzero(np.any(np.abs(self.y[start:end] - mapped[start:end]) > TOLERANCE, axis=1))[0]
                if len(bad) == 0:
                    break
                at = start + int(bad[0])
                # The simplest model first: silence on some outputs for one cycle, nothing lost.
                span = self.silent_cycle(mapped, at)
                if span is not None:
                    overrides.append(span + (0,))
                    events.append({"kind": f"recording silent on output {','.join(map(str, span[2]))} for one cycle",
                                   "at": at, "frames": span[1]})
                    start = at
                    continue
                # Then the recorded input not the node's for a cycle or so (no shift), or lost cycles:
                # whichever explains the output further, the simpler on a tie.
                inputs = self.played_input_rows(node_input, shift_points, mapped, at)
                lost = self.lost_cycles(node_input, shift_points, at)
                if inputs is not None and (lost is None or inputs[2] >= lost[5]):
                    node_input, length, _ = inputs
                    events.append({"kind": "recording's input not the node's (which had the played blocks)", "at": at, "frames": length})
                    start = at
                    continue
                if lost is not None:
                    node_input, shift_points, length, kind, override, _ = lost
                    if override:
                        overrides.append(override)
                    events.append({"kind": kind, "at": at, "frames": length})
                    start = at
                    continue
                # Cycles lost after a row that holds the first lost call's output (pw-record took it
                # a call late), or an output the node never finished (pw-record took its port buffer
                # while a repeated call rewrote it): that row stays a glitch.
                model = self.lost_cycles_after_wrong_row(node_input, shift_points, at)
                if model is not None:
                    node_input, shift_points, length, kind, override, _, after = model
                    if override:
                        overrides.append(override)
                    row = self.first_lost_output_row(node_input, shift_points, at, after - at)
                    if row:
                        overrides.append(row)
                    events.append({"kind": kind + (", the cycle before it holding the first lost call's output" if row
                                                   else ", after a wrong row"), "at": after, "frames": length})
                    start = after
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
        rows = max(0, min(frames, len(expected) - shift[-1]))
        expected = self.mapped(node_input, shift_points, overrides, rows, expected)
        results = []
        for o in range(self.no):
            lag = lags[o]
            offset = 0 if lags_applied[o] else lag  # y already shifted when the lag was applied
            m = max(0, min(rows, frames - lag, recorded[o]))
            exp = expected[:m, o]
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
    def node_frame(shift_points, at):
        """The node's frame that recording frame `at` holds, after the modelled lost cycles."""
        return at + sum(extra for point, extra in shift_points if point <= at)

    def window(self, at):
        """How far a model is checked from recording frame `at`: the IR's length, or up to the end
        of the recording (events in the last IR length count too)."""
        return min(self.irFrames + 3 * max(self.quanta), len(self.y) - at)

    @staticmethod
    def shifts(shift_points, frames):
        """Per recording frame: how many frames the node had processed beyond the recording."""
        shift = np.zeros(frames, dtype=int)
        for at, extra in shift_points:
            shift[at:] += extra
        return shift

    def lost_cycles(self, node_input, shift_points, at):
        """Tries 'the recording lost cycles just before recording frame `at`' for each quantum, as
        many as a stall of STALL_FRAMES takes, and each set of blocks the node can have had in them.
        Of the candidates that explain the output from `at` on for at least one quantum, the one that
        explains it longest (the IR's length, or up to the next event) wins; the simplest, in the
        order tried, on a tie. Returns (node input, shift points, length, kind, override of the row
        at `at` for `mapped`, frames explained) or None."""
        node_at = self.node_frame(shift_points, at)
        window = self.window(at)
        if window < max(self.quanta) + 512:
            return None
        best, best_length = None, 0
        lacked_before = self.lacked_frames(at)
        # The count to try first: across silent rows too, when the rows next to `at` are silent.
        shown = lacked_before if lacked_before is not None else self.lacked_frames(at, True)
        for quantum in self.quanta:
            # Per place the lost cycles may sit (see `delay` below): the played frames the recording
            # lacks there, and what the row at `at` may hold.
            lacked = {0: lacked_before, quantum: self.lacked_frames(at + quantum)}
            overrides = {delay: self.first_row_overrides(at, quantum, delay) for delay in (0, quantum)}
            for cycles in self.cycle_counts(shown, quantum):
                length = cycles * quantum
                # `delay` 0: the lost cycles come before the recorded block at `at`; `quantum`: after
                # it, and the recording has that block's input but took the next call's output.
                for delay in (0, quantum):
                    insert = node_at + delay
                    if insert < length:
                        continue
                    # The lost cycles in order: `silent` ones (the player late in them too), then
                    # the played blocks the recording lacks (where the recording shows them): all of
                    # them, or all but the last when that one reached neither the node nor the
                    # recording (a stalled cycle's buffer of the player's that no one took).
                    for silent, anchor in ((s, a) for s in sorted({0, 1, 2, cycles} & set(range(cycles + 1)))
                                           for a in ("next", "before")):
                        wanted, known = (cycles - silent) * quantum, lacked[delay]
                        if anchor == "next" and known is not None and known != wanted:
                            continue
                        if anchor == "before" and (known is None or wanted == 0 or known != wanted + quantum):
                            continue
                        played = self.missed_block(node_input[max(insert - 64, 0) : insert], node_input[insert : insert + 64],
                                                   wanted, anchor)
                        if played is None:
                            continue
                        neither = f", {known - wanted} played frames reached neither" if anchor == "before" else ""
                        if len(played) and np.array_equal(played, node_input[insert - len(played) : insert]):
                            continue  # the recording has these blocks: that would be the node repeating them
                        block = np.concatenate([np.zeros((silent * quantum, self.ni)), played])
                        candidate = np.concatenate([node_input[:insert], block, node_input[insert:]])
                        for override, note in overrides[delay]:
                            # Overridden rows prove little (silence matches any input, and so does
                            # a lost call's output that rang out): explain a quantum beyond them.
                            needed = quantum + (override[0] if override else 0)
                            if self.explained(candidate, at, node_at + length, min(window, needed + 512), override) < needed:
                                continue  # a cheap first look
                            explained = self.explained(candidate, at, node_at + length, window, override)
                            if explained > best_length and explained >= needed:
                                kind = (f"recording lost {cycles} cycle{'s' if cycles > 1 else ''} ({silent} silent)"
                                        + neither + (", output one call late" if delay else "") + note)
                                best = (candidate, shift_points + [(at, length)], length, kind,
                                        override and (at,) + override, explained)
                                best_length = explained
                                if explained == window:
                                    return best
        return best

    def played_input_rows(self, node_input, shift_points, mapped, at):
        """Tries 'the recording's input at `at` is not what the node got for one to three cycles'
        (pw-record got no buffer from the player's ports, or took one a cycle early) while the node
        got the played blocks that follow the one before. Of the candidates that explain those
        rows at least, the one that explains the output longest wins, the shortest on a tie.
        Returns (node input, frames replaced, frames explained) or None."""
        node_at = self.node_frame(shift_points, at)
        before = self.played_position(node_input[max(node_at - 64, 0) : node_at])
        if before is None:
            return None
        window = self.window(at)
        best = None
        for quantum in self.quanta:
            for frames in (quantum, 2 * quantum, 3 * quantum):
                block = self.played[before + 64 : before + 64 + frames, : self.ni]
                if (len(block) < frames or len(self.y[at : at + frames]) < frames
                        or np.array_equal(block, node_input[node_at : node_at + frames])):
                    continue
                # A cheap first look: the current model's output plus what the changed rows add.
                change = self.render_change(block - node_input[node_at : node_at + frames])
                if np.any(np.abs(self.y[at : at + frames] - mapped[at : at + frames] - change) > TOLERANCE):
                    continue
                candidate = node_input.copy()
                candidate[node_at : node_at + frames] = block
                explained = self.explained(candidate, at, node_at, window)
                if explained >= frames and (best is None or explained > best[2]):
                    best = (candidate, frames, explained)
        return best

    def lost_cycles_after_wrong_row(self, node_input, shift_points, at):
        """Tries 'the row at `at` is wrong for one cycle, and the recording lost cycles after it'.
        Returns `lost_cycles`' model with where it starts, or None."""
        for quantum in self.quanta:
            model = self.lost_cycles(node_input, shift_points, at + quantum)
            if model is not None:
                return model + (at + quantum,)
        return None

    def first_lost_output_row(self, node_input, shift_points, at, quantum):
        """The override (for `mapped`) when the recording's row at `at` holds the output of the
        node's call after it, the first of the cycles modelled lost just after the row; else None."""
        node_at = self.node_frame(shift_points, at)
        expected = self.render(node_input, node_at + quantum, node_at + 2 * quantum)
        if len(self.y[at : at + quantum]) < quantum or np.any(np.abs(self.y[at : at + quantum] - expected) > TOLERANCE):
            return None
        return (at, quantum, list(range(self.no)), -quantum)

    def first_row_overrides(self, at, quantum, delay):
        """What the recording's row at `at` may hold instead of the model's output, as (override
        for `explained`, note): the model's output; after lost cycles, the last lost call's output
        (pw-record took that port buffer again); silence on the outputs that are exactly zero
        there (pw-record got no buffer from those ports)."""
        overrides = [(None, "")]
        if delay == 0:
            overrides.append(((quantum, list(range(self.no)), quantum), ", the next cycle's output the last lost one's"))
        row = self.y[at : at + quantum]
        silent = [int(o) for o in np.nonzero(np.all(row == 0, axis=0))[0]] if len(row) == quantum else []
        if silent:
            overrides.append(((quantum, silent, 0), f", the cycle at it silent on output {','.join(map(str, silent))}"))
        return overrides

    @staticmethod
    def cycle_counts(lacked, quantum):
        """How many lost cycles to try: one up to a stall's worth, first the count the recorded
        input shows missing (`lacked` played frames, None: not known), even beyond a stall's worth:
        the played file then says which blocks those cycles held, and the output must carry them."""
        counts = list(range(1, max(3, STALL_FRAMES // quantum) + 1))
        if lacked and lacked % quantum == 0 and lacked // quantum <= MAX_SHOWN_LOST_CYCLES:
            if lacked // quantum in counts:
                counts.remove(lacked // quantum)
            counts.insert(0, lacked // quantum)
        return counts

    def lacked_frames(self, at, through_silence=False):
        """How many frames of the played file the recorded input lacks just before recording frame
        `at` (None: not known there, as in silence). `through_silence`: counted across silent rows
        just before and from `at` (at most a quantum of 2048 each way), which hold no played frames:
        cycles in which the player's buffer reached neither the recorder nor the node, or the
        player, late after a stall, sent both silence. The count of cycles to try first, not a
        constraint on the blocks the node had."""
        end, resume = at, at
        while through_silence and end >= 64 and at - end < max(QUANTA) and not np.any(self.x[end - 64 : end]):
            end -= 64
        while through_silence and resume - at < max(QUANTA) and len(self.x[resume : resume + 64]) == 64 \
                and not np.any(self.x[resume : resume + 64]):
            resume += 64
        before = self.played_position(self.x[max(end - 64, 0) : end])
        here = self.played_position(self.x[resume : resume + 64])
        return None if end < 64 or before is None or here is None else here - before - 64

    def played_position(self, recorded):
        """Where the 64 recorded input frames `recorded` are in the played file (None: nowhere, or silence)."""
        if self.played is None or len(recorded) < 64 or not np.any(recorded):
            return None
        frame, channel = (int(v) for v in np.argwhere(recorded != 0)[0])
        column = self.played[:, channel]
        for index in np.nonzero(column == recorded[frame, channel])[0]:
            start = index - frame
            if 0 <= start and start + 64 <= len(column) and np.array_equal(self.played[start : start + 64, : self.ni], recorded):
                return int(start)
        return None

    def mapped(self, node_input, shift_points, overrides, rows, rendered=None):
        """The expected output per recording frame [0, rows): the output of a node that received
        `node_input` (`rendered`: already rendered), shifted by the modelled lost cycles, with the
        modelled overrides: (at, frames, outputs, back) is silence on those outputs for `back` 0, or
        else the node's output of `back` frames earlier (a port buffer the recorder took again), or
        for a negative `back`, later (an output the recorder took a call late)."""
        rendered = self.render(node_input) if rendered is None else rendered
        shift = self.shifts(shift_points, rows)
        expected = rendered[np.arange(rows) + shift]
        for at, length, outputs, back in overrides:
            length = min(length, rows - at)
            if back:
                source = at + shift[at] - back
                expected[at : at + length, outputs] = rendered[source : source + length][:, outputs]
            else:
                expected[at : at + length, outputs] = 0
        return expected

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

    def explained(self, node_input, at, node_frame, span, override=None):
        """How many frames from `at` on the recorded output equals the output of a node that
        received `node_input`, from its frame `node_frame` on (`span` when all of them).
        `override` (frames, outputs, back), for the first `frames` rows on those outputs: silence
        (`back` 0), or the node's output of `back` frames earlier (`back` = `frames`: all outputs,
        the rows after it from `node_frame + back` on)."""
        frames, outputs, back = override or (0, [], 0)
        expected = self.render(node_input, node_frame - back, node_frame + span)
        if back:
            expected = np.concatenate([expected[:back], expected[2 * back :]])
        else:
            expected[:frames, outputs] = 0
        wrong = np.nonzero(np.any(np.abs(self.y[at : at + span] - expected) > TOLERANCE, axis=1))[0]
        return int(wrong[0]) if len(wrong) else span


def main():
    spec = json.load(open(sys.argv[1]))
    print(json.dumps(Reference(spec).compare()))


if __name__ == "__main__":
    main()
