"""The graph-path judge: what the recorder got is the node's own output, in the cycle of its input.

Usage: judge_graph.py SPEC.json   (SPEC: see `GraphJudge.Spec` in LiveJudges.swift)

The recording (one stream of Tests/SyncRecorder, raw float32, or a WAV file) holds what the player sent, channel by channel as the node's
inputs, then the node's output ports, in the node's channel order (or, with `channels`, the
record channel of each recorded channel: e.g. only the outputs, recorded downstream). The node's record
(`test.record-calls`) holds what its data thread got and put out. Each recorded channel is
located in the record's channel of the same index, run by run: a run is a stretch of recorded
frames that equals the record (to the bit) at one offset; a whole cycle the recorder lost, or got
twice, starts a new run at another offset (a jump, counted). Silent frames (|x| < SILENT) carry
no information and are skipped. A loud recorded frame found nowhere in its channel is unmatched:
not the node's output on that port (a wrong channel, a wrong or half-written buffer), unless
the recorder read it while the node was writing it: after a cycle PipeWire did not finish in
time, it starts the next one anyway, and a node still late then runs beside its consumer, which
may copy a buffer the node is rewriting. The recorder keeps when each cycle's copy began and
ended (RECORDING.times), the node when each call wrote its outputs (CALLS.times); an unmatched
frame whose cycle was copied while a call was writing is counted as readWhileWritten, not as
unmatched. (Outside such a stall the recorder runs only after the node's call has ended.)

Zero added latency through the graph: at every recorded frame where both are located, an output
channel's record frame equals the inputs' (the recorder got the node's output of the very cycle
whose input it got beside it). Frames where they differ are misaligned.

Prints one JSON object: channels (per recorded channel: loudFrames, matchedFrames,
unmatchedFrames, firstUnmatched, unmatchedDetail (the first few: frame, value, the recorder's
copy and the nearest call, ns), readWhileWrittenFrames, jumps [[frame, by], ...] (at most 20), matchesChannel: for a
channel mostly unmatched, the record channel it does match, or null), alignedFrames, misaligned
(frames), offsets (the output-minus-input offsets seen, with their frame counts).
"""
import json
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np
from scipy.io import wavfile

SILENT = 1e-7
WINDOW = 8          # loud frames that must agree to start a run
CANDIDATES = 512    # places tried per new run, nearest the preferred offset first
UNMATCHED_LIMIT = 2000


class Locator:
    """Finds recorded samples in one record channel."""

    def __init__(self, reference):
        self.reference = reference
        valid = np.flatnonzero(~np.isnan(reference))
        order = np.argsort(reference[valid], kind="stable")
        self.positions = valid[order]
        self.values = reference[self.positions]

    def offsets(self, recorded, loud_frames, preferred):
        """Offsets d at which the WINDOW loud frames starting at loud_frames[0] all equal the record."""
        first = loud_frames[0]
        low = np.searchsorted(self.values, recorded[first], "left")
        high = np.searchsorted(self.values, recorded[first], "right")
        candidates = self.positions[low:high] - first
        if len(candidates) == 0:
            return []
        if preferred is not None:
            candidates = candidates[np.argsort(np.abs(candidates - preferred), kind="stable")]
        window = loud_frames[:WINDOW]
        found = []
        for offset in candidates[:CANDIDATES]:
            places = window + offset
            if places[-1] < len(self.reference) and places[0] >= 0 and np.array_equal(
                    recorded[window], self.reference[places]):
                found.append(int(offset))
                break
        return found


def locate(recorded, reference, preferred_offsets=None, unmatched_limit=UNMATCHED_LIMIT):
    """Record frame of every recorded frame (-1: silent or unmatched), unmatched frames, jumps."""
    locator = Locator(reference)
    located = np.full(len(recorded), -1, dtype=np.int64)
    loud_frames = np.flatnonzero(np.abs(recorded) >= SILENT)
    unmatched, jumps = [], []
    offset = None
    index = 0
    window = 256  # grows while a run goes on, so a run of unmatched frames costs little each
    while index < len(loud_frames):
        if offset is not None:
            # Extend the run at `offset` as far as the record agrees.
            frames = loud_frames[index:index + window]
            places = frames + offset
            inside = (places >= 0) & (places < len(reference))
            agree = np.zeros(len(frames), dtype=bool)
            agree[inside] = recorded[frames[inside]] == reference[places[inside]]
            disagree = np.flatnonzero(~agree)
            length = disagree[0] if len(disagree) else len(frames)
            located[frames[:length]] = frames[:length] + offset
            index += length
            if length == len(frames) or index >= len(loud_frames):
                window = min(2 * window, 65536)
                continue
            window = 256
        frame = loud_frames[index]
        preferred = offset
        if preferred_offsets is not None and preferred_offsets[frame] >= 0:
            preferred = int(preferred_offsets[frame] - frame)
        found = locator.offsets(recorded, loud_frames[index:], preferred)
        if found:
            if offset is not None:
                jumps.append([int(frame), found[0] - offset])
            offset = found[0]
            continue
        unmatched.append(int(frame))
        index += 1
        if unmatched_limit is not None and len(unmatched) >= unmatched_limit:
            break
    return located, loud_frames, unmatched, jumps


def read_times(path):
    """(frames, start, end) rows of a .times file (three uint64 per cycle or call), or None."""
    try:
        return np.fromfile(path, dtype=np.uint64).reshape(-1, 3).astype(np.int64)
    except (FileNotFoundError, ValueError):
        return None


class WriteOverlap:
    """Which recorded frames the recorder copied while one of the node's calls was writing."""

    def __init__(self, recorder_times, call_times):
        self.recorder = recorder_times
        self.calls = call_times
        if recorder_times is not None:
            self.cycle_ends = np.cumsum(recorder_times[:, 0])

    def cycle(self, frame):
        return int(np.searchsorted(self.cycle_ends, frame, "right"))

    def overlapping_call(self, frame):
        """The index of a call that wrote while `frame`'s cycle was copied, or None."""
        if self.recorder is None or self.calls is None:
            return None
        cycle = self.cycle(frame)
        if cycle >= len(self.recorder):
            return None
        _, start, end = self.recorder[cycle]
        first = int(np.searchsorted(self.calls[:, 2], start, "right"))  # first call ending after the copy began
        if first < len(self.calls) and self.calls[first, 1] < end:
            return first
        return None

    def detail(self, frame, value):
        entry = {"frame": int(frame), "value": float(value)}
        if self.recorder is not None:
            cycle = self.cycle(frame)
            if cycle < len(self.recorder):
                entry["cycle"] = cycle
                entry["copy"] = [int(self.recorder[cycle, 1]), int(self.recorder[cycle, 2])]
                if self.calls is not None and len(self.calls):
                    # The call that began last before the copy, and the next one.
                    near = int(np.searchsorted(self.calls[:, 1], self.recorder[cycle, 1]))
                    entry["calls"] = [[int(t) for t in self.calls[i, 1:]] for i in (near - 1, near) if 0 <= i < len(self.calls)]
        return entry


def main():
    spec = json.load(open(sys.argv[1]))
    inputs, outputs = spec["inputs"], spec["outputs"]
    record = np.fromfile(spec["calls"], dtype=np.float32).reshape(-1, inputs + outputs)
    mapping = spec.get("channels") or list(range(inputs + outputs))
    if spec["recording"].endswith(".wav"):
        recording = wavfile.read(spec["recording"])[1].astype(np.float32)
        if recording.ndim == 1:
            recording = recording[:, None]
    else:  # sync_record's raw interleaved float32
        recording = np.fromfile(spec["recording"], dtype=np.float32).reshape(-1, len(mapping))
    if recording.shape[1] != len(mapping):
        print(json.dumps({"error": f"the recording has {recording.shape[1]} channels, expected {len(mapping)}"}))
        return
    overlap = WriteOverlap(read_times(spec["recording"] + ".times"), read_times(spec["calls"] + ".times"))
    channels = []
    input_places = np.full(len(recording), -1, dtype=np.int64)
    for channel, source in enumerate(mapping):
        # Inputs are searched to the end (they only place the outputs in their cycles); an output
        # search stops at UNMATCHED_LIMIT (a swapped channel is settled by then).
        located, loud, unmatched, jumps = locate(recording[:, channel], record[:, source],
                                                 input_places if source >= inputs else None,
                                                 UNMATCHED_LIMIT if source >= inputs else None)
        if source < inputs:
            input_places = np.where(input_places >= 0, input_places, located)
        found_nowhere = len(unmatched)
        read_while_written = []
        if source >= inputs:  # the node writes only its outputs
            excused = [overlap.overlapping_call(f) is not None for f in unmatched]
            read_while_written = [f for f, e in zip(unmatched, excused) if e]
            unmatched = [f for f, e in zip(unmatched, excused) if not e]
        entry = {"loudFrames": int(len(loud)), "matchedFrames": int(np.count_nonzero(located >= 0)),
                 "unmatchedFrames": len(unmatched), "firstUnmatched": unmatched[0] if unmatched else None,
                 "unmatchedDetail": [overlap.detail(f, recording[f, channel]) for f in unmatched[:4]],
                 "readWhileWrittenFrames": len(read_while_written),
                 "jumps": jumps[:20], "jumpCount": len(jumps), "matchesChannel": None}
        if found_nowhere * 2 > max(1, len(loud)) or (source >= inputs and found_nowhere >= UNMATCHED_LIMIT):
            # Where does this channel's sound come from, then? (a swap, a wrong port)
            for other in range(inputs + outputs):
                if other != source and Locator(record[:, other]).offsets(recording[:, channel], loud[len(loud) // 2:], None):
                    entry["matchesChannel"] = other
                    break
        entry["located"] = located
        entry["source"] = source
        channels.append(entry)
    offsets = {}
    misaligned = aligned = 0
    for entry in channels:
        if entry["source"] < inputs:
            continue
        both = (entry["located"] >= 0) & (input_places >= 0)
        difference = entry["located"][both] - input_places[both]
        aligned += int(np.count_nonzero(difference == 0))
        misaligned += int(np.count_nonzero(difference != 0))
        values, counts = np.unique(difference, return_counts=True)
        for value, count in zip(values, counts):
            offsets[str(int(value))] = offsets.get(str(int(value)), 0) + int(count)
    for entry in channels:
        del entry["located"], entry["source"]
    print(json.dumps({"channels": channels, "alignedFrames": aligned, "misalignedFrames": misaligned, "offsets": offsets}))


main()
