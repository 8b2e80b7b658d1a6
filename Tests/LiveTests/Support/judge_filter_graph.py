#!/usr/bin/python3
"""The graph judge: a filter-chain config evaluated on its own, as filter-chain runs it, held to
the node's record of its calls (FilterGraphTests). Spec's config: the file as loaded (its
filter-chain or swift-convolver module's args).

Independent of the node's compiler: this script reads the config file with its own SPA-JSON reader,
and runs the graph on the recorded input signal node by node in the time domain (copy, mixer
gains, delay by truncated seconds × rate, linear/invert, convolver and convolver2 by scipy's
convolution of the IR file's channel, the spatializer by the filters libmysofa itself gives, the
biquads by scipy's lfilter with biquad.c's coefficients for the version: 0.3.x's or 1.x's;
param_eq's bands from its filters arrays and EqualizerAPO files, with 1.x's; 1.x's non-linear
builtins by their formulas in float32; LADSPA plugins by a host of the judge's own,
ladspa_reference.py, in the node's call sizes; each engine the node took from its own start: the
calls before the last swap and those from it, the record's .swaps), instance by
instance as filter-chain replicates the graph over the streams' channels, in double precision.
The node instead folds the graph into one matrix of impulse responses before it runs.

Spec (JSON, argv[1]): config (the filter-chain config file; its first module's args), calls (the
record, float32 frames: inputs then outputs), rate, pipewire (the version filter-chain's rules
are those of), optionally `controls` ({"node:Port": value}: changed live before the record began)
and `mutate`: a deliberate mistake in this evaluation ("link": the first link left out; "gain":
the first mixer's first gain 10 % off; "delay": the first output one sample late; "biquad": the
first biquad's Freq, if not 0, or a bq_raw's b0, 1 % off; "band": the first param_eq's first band
left out; "direction": the first spatializer's azimuth 10 degrees off; "function": each non-linear
builtin's first control 1 % off). A mutated evaluation must not match a correct node (negative test).
Answer (JSON): inputs, outputs, frames, and per output errorDB (error energy over expected energy)
and worst (largest difference), over the frames that had output buffers.
With `evaluations` in the spec (a list of {mutate, controls}, either null), one answer per entry,
as a list: one run of this script for a test's evaluation and its negative ones.
"""
import json
import re
import sys
import warnings

warnings.simplefilter("ignore")
import numpy as np
from scipy.io import wavfile
from scipy.signal import fftconvolve, lfilter

from ladspa_reference import Plugin

TOKEN = re.compile(r'\s+|#[^\n]*|"(?:[^"\\]|\\.)*"|[{}\[\]=:,]|[^\s{}\[\]=:,"#]+')


def spa_json(text):
    """SPA-JSON (PipeWire's relaxed JSON) into Python values: bare words, `=` or `:`, optional commas."""
    tokens = [t for t in TOKEN.findall(text) if t.strip() and not t.startswith("#") and t != ","]
    position = 0

    def value():
        nonlocal position
        token = tokens[position]
        position += 1
        if token == "{":
            members = {}
            while tokens[position] != "}":
                key = value()
                if tokens[position] in ("=", ":"):
                    position += 1
                members[key] = value()
            position += 1
            return members
        if token == "[":
            elements = []
            while tokens[position] != "]":
                elements.append(value())
            position += 1
            return elements
        if token.startswith('"'):
            return json.loads(token)
        return token

    tokens = ["{"] + tokens + ["}"]
    return value()


def number(text, default=0.0):
    return default if text is None else float(text)


def impulse(ir, instance, rate, one_dot_x):
    """One convolver IR as filter-chain's plugin_builtin.c reads it: `length` counts from the file's
    start and `offset` is cut from it; delays truncated in single precision, whole samples going
    through seconds on 1.x (delay_i / (float)rate, then x rate)."""
    f32 = np.float32
    filename = ir["filename"][0] if isinstance(ir["filename"], list) else ir["filename"]
    gain = number(ir.get("gain"), 1.0)
    delay_text = ir.get("delay", "0")
    if "." in delay_text or "e" in delay_text.lower():
        delay = int(f32(float(delay_text)) * f32(rate))
    else:
        delay = int(f32(int(delay_text)) / f32(rate) * f32(rate)) if one_dot_x else int(delay_text)
    offset, length = int(number(ir.get("offset"))), int(number(ir.get("length")))
    if filename == "/dirac":
        samples = np.array([1.0])
    elif filename == "/hilbert":
        length = length if length > 0 else 1024
        length -= min(offset, length)
        samples, half = np.zeros(length), length // 2
        for i in range(1, half, 2):
            v = (2 / np.pi / i) * (0.43 + 0.57 * np.cos(i * np.pi / half))
            samples[half + i], samples[half - i] = -v, v
    else:
        data = wavfile.read(filename)[1].astype(np.float64)
        data = data[:, None] if data.ndim == 1 else data
        channel = int(ir["channel"]) if "channel" in ir else instance
        length = min(length, len(data)) if length > 0 else len(data)
        length -= min(offset, length)
        samples = data[offset:offset + length, channel % data.shape[1]]
    return np.concatenate([np.zeros(delay), samples]) * gain


HRTF_SETS = {}


def hrtf_filters(config, control, rate, turned, gain_read):
    """A spatializer's two filters, through libmysofa itself (ctypes): the set opened as
    filter-chain's sofa plugin opens it (mysofa_open at the graph's rate: resampled and
    loudness-normalized), the filters for Azimuth/Elevation/Radius by mysofa_getfilter_float, each
    ear's delay kept as whole samples (filter-chain drops it), times `gain` where filter-chain reads
    it (`gain_read`: 1.6 and later). `turned`: the
    azimuth 10 degrees off (a mistake)."""
    import ctypes
    lib = ctypes.CDLL("libmysofa.so.1")
    lib.mysofa_open.restype = ctypes.c_void_p
    lib.mysofa_open.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    lib.mysofa_getfilter_float.argtypes = [ctypes.c_void_p] + [ctypes.c_float] * 3 + [ctypes.POINTER(ctypes.c_float)] * 4
    lib.mysofa_s2c.argtypes = [ctypes.POINTER(ctypes.c_float)]
    path = config["filename"]
    if path not in HRTF_SETS:
        length, error = ctypes.c_int(0), ctypes.c_int(0)
        easy = lib.mysofa_open(path.encode(), ctypes.c_float(rate), ctypes.byref(length), ctypes.byref(error))
        if not easy:
            raise SystemExit(f"mysofa_open({path}) failed: {error.value}")
        HRTF_SETS[path] = (easy, length.value)
    easy, length = HRTF_SETS[path]
    azimuth = number(control.get("Azimuth")) + (10 if turned else 0)
    c = (ctypes.c_float * 3)(azimuth, number(control.get("Elevation")), number(control.get("Radius"), 1.0))
    lib.mysofa_s2c(c)
    left, right = (ctypes.c_float * length)(), (ctypes.c_float * length)()
    delays = [ctypes.c_float(0), ctypes.c_float(0)]
    lib.mysofa_getfilter_float(easy, c[0], c[1], c[2], left, right, ctypes.byref(delays[0]), ctypes.byref(delays[1]))
    gain = number(config.get("gain"), 1.0) if gain_read else 1.0
    return [np.concatenate([np.zeros(int(round(d.value)) if np.isfinite(d.value) else 0), np.array(ear[:], dtype=np.float64)]) * gain
            for ear, d in zip((left, right), delays)]


def biquad(shape, freq, q, gain, rate, one_dot_x):
    """biquad.c's coefficients (b, a), with its float frequency and float coefficients."""
    f = float(np.float32(np.float32(freq) * np.float32(2) / np.float32(rate)))
    q, gain = float(np.float32(q)), float(np.float32(gain))
    clipped = max(0.0, min(f, 1.0))
    A = 10 ** (gain / 40)
    w0 = np.pi * clipped
    k = np.cos(w0)
    default_q = 0.707106781186548
    coefficients = None
    if shape in ("lowpass", "highpass"):
        low = shape == "lowpass"
        if clipped in (0.0, 1.0):
            coefficients = ((clipped if low else 1 - clipped), 0, 0, 1, 0, 0)
        elif not one_dot_x:
            g = 10 ** (0.05 * max(0.0, q))
            d = np.sqrt((4 - np.sqrt(16 - 16 / (g * g))) / 2)
            sn = 0.5 * d * np.sin(w0)
            beta = 0.5 * (1 - sn) / (1 + sn)
            gamma = (0.5 + beta) * np.cos(w0)
            alpha = 0.25 * (0.5 + beta - gamma) if low else 0.25 * (0.5 + beta + gamma)
            coefficients = (2 * alpha, (4 if low else -4) * alpha, 2 * alpha, 1, -2 * gamma, 2 * beta)
        else:
            alpha = np.sin(w0) / (2 * (q if q > 0 else default_q))
            b = ((1 - k) / 2, 1 - k, (1 - k) / 2) if low else ((1 + k) / 2, -(1 + k), (1 + k) / 2)
            coefficients = b + (1 + alpha, -2 * k, 1 - alpha)
    elif shape in ("lowshelf", "highshelf"):
        low = shape == "lowshelf"
        if clipped == 1:
            coefficients = (A * A if low else 1, 0, 0, 1, 0, 0)
        elif clipped <= 0:
            coefficients = (1 if low else A * A, 0, 0, 1, 0, 0)
        else:
            if one_dot_x:
                alpha = np.sin(w0) / (2 * (q if q > 0 else default_q))
            else:
                alpha = 0.5 * np.sin(w0) * np.sqrt(2)  # slope 1
            k2 = 2 * np.sqrt(A) * alpha
            p, m = A + 1, A - 1
            if low:
                coefficients = (A * (p - m * k + k2), 2 * A * (m - p * k), A * (p - m * k - k2),
                                p + m * k + k2, -2 * (m + p * k), p + m * k - k2)
            else:
                coefficients = (A * (p + m * k + k2), -2 * A * (m + p * k), A * (p + m * k - k2),
                                p - m * k + k2, 2 * (m - p * k), p - m * k - k2)
    else:
        q = max(0.0, q)
        outside = (f <= 0 or f >= 1) if shape == "bandpass" else (clipped <= 0 or clipped >= 1)
        if outside:
            coefficients = (0 if shape == "bandpass" else 1, 0, 0, 1, 0, 0)
        elif q <= 0:
            coefficients = ({"bandpass": 1, "peaking": A * A, "notch": 0, "allpass": -1}[shape], 0, 0, 1, 0, 0)
        else:
            alpha = np.sin(w0) / (2 * q)
            coefficients = {
                "bandpass": (alpha, 0, -alpha, 1 + alpha, -2 * k, 1 - alpha),
                "peaking": (1 + alpha * A, -2 * k, 1 - alpha * A, 1 + alpha / A, -2 * k, 1 - alpha / A),
                "notch": (1, -2 * k, 1, 1 + alpha, -2 * k, 1 - alpha),
                "allpass": (1 - alpha, -2 * k, 1 + alpha, 1 + alpha, -2 * k, 1 - alpha),
            }[shape]
    b0, b1, b2, a0, a1, a2 = coefficients
    inverse = 1 / a0
    b = [float(np.float32(x * inverse)) for x in (b0, b1, b2)]
    a = [1.0] + [float(np.float32(x * inverse)) for x in (a1, a2)]
    return b, a


def equalizer_bands(config):
    """param_eq's bands per channel (8), as plugin_builtin.c reads them: (shape, freq, q, gain)."""
    bands = [[None] * 64 for _ in range(8)]
    used = 0
    for key, value in config.items():
        if key.startswith("filename"):
            suffix, found = key[8:], []
            lines = open(value).read().splitlines()
            first = lines[0].split() if lines else []
            if len(first) >= 2:
                try:
                    found.append(("highshelf", 0.0, 1.0, float(first[1][:6])))
                except ValueError:
                    pass
            pattern = re.compile(r"\S+\s+[+-]?\d+:\s*(\S{1,3})\s*(\S{1,3})\s*\S+\s*(\S{1,8})\s*\S+\s*\S+\s*(\S{1,6})\s*\S+\s*\S\s*(\S{1,6})")
            for line in lines[1:]:
                match = pattern.match(line.strip())
                if not match or match.group(1) != "ON" or match.group(2) not in ("PK", "LSC", "HSC"):
                    continue
                shape = {"PK": "peaking", "LSC": "lowshelf", "HSC": "highshelf"}[match.group(2)]
                try:
                    found.append((shape, float(match.group(3)), float(match.group(5)), float(match.group(4))))
                except ValueError:
                    pass
        elif key.startswith("filters"):
            suffix, found = key[7:], []
            for band in value:
                shape = band.get("type", "")
                shape = shape[3:] if shape.startswith("bq_") and shape[3:] in (
                    "lowpass", "highpass", "bandpass", "lowshelf", "highshelf", "peaking", "notch", "allpass") else None
                found.append(None if shape is None else (
                    shape, number(band.get("freq")), number(band.get("q"), 1.0), number(band.get("gain"))))
        else:
            continue
        index = int(suffix) if suffix.isdigit() else 0
        channel = 0 if index == 0 else min(max(index, 1), 8) - 1
        bands[channel][:len(found)] = found
        used = max(used, len(found))
        if index == 0:
            for other in range(1, 8):
                bands[other] = list(bands[0])
    return [[band for band in channel[:used] if band is not None] for channel in bands]


# The non-linear builtins' control ports and defaults (plugin_builtin.c of 1.4 and 1.6).
FUNCTIONS = {"clamp": {"Min": 0.0, "Max": 1.0}, "recip": {}, "exp": {"Base": float(np.float32(np.e))},
             "log": {"Base": float(np.float32(np.e)), "M1": 1.0, "M2": 1.0}, "abs": {}, "sqrt": {}, "mult": {}, "max": {}}
LINEAR = {"Mult": 1.0, "Add": 0.0}


def function(label, x, c):
    """filter-chain's formula for one non-linear builtin, in float32 (x and every control are)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if label == "clamp":
            return np.minimum(np.maximum(x, c["Min"]), c["Max"])
        if label == "linear":
            return c["Mult"] * x + c["Add"]
        if label == "recip":
            return np.where(x == 0, np.float32(0), np.float32(1) / x)
        if label == "exp":
            return np.power(c["Base"], x)
        if label == "log":
            return c["M2"] * np.log2(np.abs(x * c["M1"])) / np.log2(c["Base"])
        if label == "abs":
            return np.abs(x)
        if label == "sqrt":
            return np.where(x <= 0, np.float32(0), np.sqrt(np.maximum(x, 0)))
    raise SystemExit(f"no formula for {label}")


def run_graph(graph, signal, instance, rate, mutate, version, calls):
    one_dot_x = version >= (1, 0)
    nodes = graph["nodes"]
    names = [node["name"] for node in nodes]
    links = [(link["output"], link["input"]) for link in graph.get("links", [])]
    plugins = {node["name"]: Plugin(node["plugin"], node["label"]) for node in nodes if node.get("type") == "ladspa"}

    def split(port, default):
        node, _, name = port.partition(":")
        return (node, name) if node in names else (default, port)

    def inputs_of(node):
        if node["name"] in plugins:
            return plugins[node["name"]].names("audio_in")
        if node["label"] == "max":
            return ["In 1", "In 2"]
        return [f"In {i}" for i in range(1, 9)] if node["label"] in ("mixer", "param_eq", "dcblock", "mult") else ["In"]

    def port_name(node_name, name, input_side):
        node = nodes[names.index(node_name)]
        ports = inputs_of(node) if input_side else (
            plugins[node_name].names("audio_out") if node_name in plugins
            else [f"Out {i}" for i in range(1, 9)] if node["label"] in ("convolver2", "param_eq", "dcblock")
            else ["Out L", "Out R"] if node["label"] == "spatializer" else ["Out"])
        return ports[int(name)] if name.isdigit() else name

    if mutate == "link" and links:
        links = links[1:]
    graph_inputs = [None if p in (None, "null") else split(p, names[0]) for p in graph.get("inputs", [])] or \
        [(names[0], p) for p in inputs_of(nodes[0])]
    graph_outputs = [None if p in (None, "null") else split(p, names[-1]) for p in graph.get("outputs", [])] or \
        [(names[-1], "Out")]
    graph_inputs = [None if p is None else (p[0], port_name(p[0], p[1], True)) for p in graph_inputs]
    graph_outputs = [None if p is None else (p[0], port_name(p[0], p[1], False)) for p in graph_outputs]
    feeds = {}
    for output, input_port in links:
        o, i = split(output, names[0]), split(input_port, names[-1])
        feeds[(i[0], port_name(i[0], i[1], True))] = (o[0], port_name(o[0], o[1], False))
    frames = len(signal)
    produced = {}
    done = set()
    mutated = {"gain": mutate == "gain", "biquad": mutate == "biquad", "band": mutate == "band", "direction": mutate == "direction"}

    def input_signal(node_name, port):
        if (node_name, port) in graph_inputs:
            index = graph_inputs.index((node_name, port))
            return signal[:, index] if index < signal.shape[1] else np.zeros(frames)
        source = feeds.get((node_name, port))
        return np.zeros(frames) if source is None else produced[source]

    while len(done) < len(nodes):
        for node in nodes:
            name = node["name"]
            if name in done or any(source[0] not in done for (dest, _), source in feeds.items() if dest == name):
                continue
            label, control, config = node["label"], node.get("control", {}), node.get("config", {})
            if name in plugins:
                # Hosted: the plugin itself, from its instantiation on, in the node's call sizes.
                plugin = plugins[name]
                heard = {port: input_signal(name, port) for port in plugin.names("audio_in")
                         if (name, port) in graph_inputs or (name, port) in feeds}
                values = {port: float(np.float32(number(value))) for port, value in control.items()}
                for port, result in plugin.run(heard, values, rate, calls).items():
                    produced[(name, port)] = result
            elif label == "copy":
                produced[(name, "Out")] = input_signal(name, "In")
            elif label in FUNCTIONS or (label == "linear" and number(control.get("Add")) != 0):
                # filter-chain 1.x's non-linear builtins, sample by sample in single precision.
                if label in ("mult", "max"):
                    fed = [input_signal(name, port).astype(np.float32) for port in inputs_of(node)
                           if (name, port) in graph_inputs or (name, port) in feeds]
                    produced[(name, "Out")] = np.zeros(frames) if not fed else (
                        np.prod(fed, axis=0, dtype=np.float32) if label == "mult" else np.max(fed, axis=0)).astype(np.float64)
                else:
                    values = {port: np.float32(number(control.get(port), default)) for port, default in FUNCTIONS.get(label, LINEAR).items()}
                    if mutate == "function" and values:
                        first = next(iter(values))
                        values[first] = values[first] * np.float32(1.01)
                    produced[(name, "Out")] = function(label, input_signal(name, "In").astype(np.float32), values).astype(np.float64)
            elif label in ("linear", "invert"):
                produced[(name, "Out")] = input_signal(name, "In") * (
                    -1.0 if label == "invert" else number(control.get("Mult"), 1.0))
            elif label == "delay":
                frames_late = int(np.float32(number(control.get("Delay (s)"))) * np.float32(rate))
                produced[(name, "Out")] = np.concatenate([np.zeros(frames_late), input_signal(name, "In")])[:frames]
            elif label == "mixer":
                # Only connected inputs of non-zero gain are mixed; 0.3.61 to 0.3.80 copy a lone one
                # unscaled (dsp_mix_gain's one-source case, fixed in 0.3.81).
                gains = {i: number(control.get(f"Gain {i}"), 1.0) for i in range(1, 9)}
                mixed = [i for i in range(1, 9) if gains[i] != 0 and
                         ((name, f"In {i}") in graph_inputs or (name, f"In {i}") in feeds)]
                alone = len(mixed) == 1 and (0, 3, 61) <= version < (0, 3, 81)
                total = np.zeros(frames)
                for i in mixed:
                    gain = 1.0 if alone else gains[i]
                    if mutated["gain"]:
                        gain, mutated["gain"] = gain * 1.1, False
                    total += gain * input_signal(name, f"In {i}")
                produced[(name, "Out")] = total
            elif label in ("convolver", "convolver2"):
                irs = [config] if label == "convolver" else config["impulses"]
                for index, ir in enumerate(irs):
                    if label == "convolver2" and "channel" not in ir:
                        ir = dict(ir, channel=str(index))
                    taps = impulse(ir, instance, rate, one_dot_x)
                    out = "Out" if label == "convolver" else f"Out {index + 1}"
                    produced[(name, out)] = fftconvolve(input_signal(name, "In"), taps)[:frames]
            elif label == "spatializer":
                ears = hrtf_filters(config, control, rate, mutated["direction"], version >= (1, 6))
                mutated["direction"] = False
                for ear, out in zip(ears, ("Out L", "Out R")):
                    produced[(name, out)] = fftconvolve(input_signal(name, "In"), ear)[:frames]
            elif label == "param_eq":
                for channel, bands in enumerate(equalizer_bands(config)):
                    out = input_signal(name, f"In {channel + 1}")
                    for shape, freq, q, gain in bands:
                        if mutated["biquad"] and freq > 0:
                            freq, mutated["biquad"] = freq * 1.01, False
                        if mutated["band"]:
                            mutated["band"] = False
                            continue
                        b, a = biquad(shape, freq, q, gain, rate, True)
                        out = lfilter(b, a, out)
                    produced[(name, f"Out {channel + 1}")] = out
            elif label == "dcblock":
                r = float(np.float32(number(control.get("R"), 0.995)))
                for channel in range(8):
                    produced[(name, f"Out {channel + 1}")] = lfilter([1.0, -1.0], [1.0, -r], input_signal(name, f"In {channel + 1}"))
            elif label == "bq_raw":
                best, chosen = 0, [0.0, 0.0, 0.0, 1.0, 0.0, 0.0]
                for entry in config.get("coefficients", []):
                    entry_rate = int(number(entry.get("rate")))
                    if abs(entry_rate - rate) < abs(best - rate):
                        best = entry_rate
                        chosen = [number(entry.get(k), 1.0 if k in ("b0", "a0") else 0.0) for k in ("b0", "b1", "b2", "a0", "a1", "a2")]
                if mutated["biquad"]:
                    chosen[0], mutated["biquad"] = chosen[0] * 1.01, False
                values = [np.float32(v) for v in chosen]
                inverse = np.float32(1) / values[3] if values[3] != 0 else np.float32(0)
                b = [float(values[i] * inverse) for i in (0, 1, 2)]
                a = [1.0] + [float(values[i] * inverse) for i in (4, 5)]
                produced[(name, "Out")] = lfilter(b, a, input_signal(name, "In"))
            elif label.startswith("bq_") and label != "bq_raw":
                freq = number(control.get("Freq"))
                if mutated["biquad"]:
                    freq, mutated["biquad"] = freq * 1.01, False
                b, a = biquad(label[3:], freq, number(control.get("Q")), number(control.get("Gain")), rate, one_dot_x)
                produced[(name, "Out")] = lfilter(b, a, input_signal(name, "In"))
            else:
                raise SystemExit(f"node {name}: {label} is not evaluated here")
            done.add(name)
    results = [np.zeros(frames) if port is None else produced.get(port, np.zeros(frames)) for port in graph_outputs]
    if mutate == "delay":
        results[0] = np.concatenate([[0.0], results[0]])[:frames]
    return results, len(graph_inputs), len(graph_outputs)


def main():
    spec = json.load(open(sys.argv[1]))
    text = open(spec["config"]).read()
    calls = np.fromfile(spec["calls"], dtype=np.float32)
    if "evaluations" in spec:
        answers = [evaluate(spec, text, calls, entry.get("mutate"), entry.get("controls")) for entry in spec["evaluations"]]
        print(json.dumps(answers))
    else:
        print(json.dumps(evaluate(spec, text, calls, spec.get("mutate"), spec.get("controls"))))


def evaluate(spec, text, calls, mutate, controls):
    config = spa_json(text)
    args = next(module["args"] for module in config["context.modules"]
                if module["name"] in ("libpipewire-module-filter-chain", "libpipewire-module-swift-convolver"))
    graph, capture, playback = args["filter.graph"], args.get("capture.props", {}), args.get("playback.props", {})
    rate = spec["rate"]
    for name, value in (controls or {}).items():
        node_name, _, port = name.partition(":")
        node = next(node for node in graph["nodes"] if node["name"] == node_name)
        node.setdefault("control", {})[port] = str(value)

    def channels(props, ports):
        position = props.get("audio.position") or args.get("audio.position")
        if isinstance(position, str):
            position = [p for p in re.split(r"[\s,\[\]]+", position) if p]
        if position:
            return len(position)
        return int(props.get("audio.channels") or args.get("audio.channels") or ports)

    n_inputs = len(graph.get("inputs", [])) or 1
    n_outputs = len(graph.get("outputs", [])) or 1
    inputs, outputs = channels(capture, n_inputs), channels(playback, n_outputs)
    instances = max(1, inputs // n_inputs)
    calls = calls.reshape(-1, inputs + outputs).astype(np.float64)
    # Each call's frames (the record's .times: frames, start, end): plugins run in the same calls.
    call_frames = np.fromfile(spec["calls"] + ".times", dtype=np.uint64).reshape(-1, 3)[:, 0]
    # The node's plugins started with the engine in use at the end: the call of its swap (.swaps).
    swaps = np.fromfile(spec["calls"] + ".swaps", dtype=np.uint64)
    first_call = int(swaps[-1]) if len(swaps) else 0
    signal, recorded = calls[:, :inputs], calls[:, inputs:]
    expected = np.zeros_like(recorded)
    # Each engine the node took starts afresh, its plugins and compiled parts alike (a constant
    # from a builtin's offset shows it: the parts after it start from silence again): the calls
    # before the last swap and those from it on are evaluated each from its own start.
    segments = [(0, first_call), (first_call, len(call_frames))] if first_call > 0 else [(0, len(call_frames))]
    for instance in range(instances):
        piece = signal[:, instance * n_inputs:(instance + 1) * n_inputs]
        version = tuple(int(part) for part in (spec["pipewire"].split(".") + ["0", "0"])[:3])
        for first, end in segments:
            start, stop = int(call_frames[:first].sum()), int(call_frames[:end].sum())
            results, _, _ = run_graph(graph, piece[start:stop], instance, rate, mutate, version, call_frames[first:end])
            for index, result in enumerate(results):
                channel = instance * n_outputs + index
                if channel < outputs:
                    expected[start:stop, channel] = result
    heard = ~np.isnan(recorded).any(axis=1)
    answer = {"inputs": inputs, "outputs": outputs, "frames": int(heard.sum()), "outputErrors": []}
    for output in range(outputs):
        difference = recorded[heard, output] - expected[heard, output]
        energy = float(np.sum(expected[heard, output] ** 2))
        answer["outputErrors"].append({
            "errorDB": 10 * np.log10(max(float(np.sum(difference ** 2)), 1e-30) / max(energy, 1e-30)),
            "worst": float(np.abs(difference).max(initial=0)),
            "energy": energy,
        })
    return answer


main()
