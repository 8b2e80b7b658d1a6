"""A LADSPA host of the judges' own (ctypes): a plugin found as filter-chain finds it, its control
defaults computed from its hints as filter-chain's get_default computes them, run over a whole
signal in the call sizes the node's record gives, from its instantiation on. Independent of the
node's host: the plugin itself is the only code the two share.
"""
import ctypes
import math
import os

import numpy as np

PORT_INPUT, PORT_OUTPUT, PORT_CONTROL, PORT_AUDIO = 1, 2, 4, 8
HINT_BOUNDED_BELOW, HINT_BOUNDED_ABOVE, HINT_INTEGER, HINT_LOGARITHMIC = 0x1, 0x2, 0x20, 0x10
DEFAULTS = {0x40: "minimum", 0x80: "low", 0xC0: "middle", 0x100: "high", 0x140: "maximum",
            0x200: "0", 0x240: "1", 0x280: "100", 0x2C0: "440"}


class Hint(ctypes.Structure):
    _fields_ = [("descriptor", ctypes.c_int), ("lower", ctypes.c_float), ("upper", ctypes.c_float)]


class Descriptor(ctypes.Structure):
    pass


Descriptor._fields_ = [
    ("unique_id", ctypes.c_ulong), ("label", ctypes.c_char_p), ("properties", ctypes.c_int), ("name", ctypes.c_char_p),
    ("maker", ctypes.c_char_p), ("copyright", ctypes.c_char_p), ("port_count", ctypes.c_ulong),
    ("port_descriptors", ctypes.POINTER(ctypes.c_int)), ("port_names", ctypes.POINTER(ctypes.c_char_p)),
    ("port_hints", ctypes.POINTER(Hint)), ("implementation_data", ctypes.c_void_p),
    ("instantiate", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.POINTER(Descriptor), ctypes.c_ulong)),
    ("connect_port", ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ulong, ctypes.POINTER(ctypes.c_float))),
    ("activate", ctypes.c_void_p), ("run", ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ulong)),
    ("run_adding", ctypes.c_void_p), ("set_run_adding_gain", ctypes.c_void_p), ("deactivate", ctypes.c_void_p),
    ("cleanup", ctypes.CFUNCTYPE(None, ctypes.c_void_p))]


def find(plugin):
    if plugin.startswith("/"):
        return plugin
    directories = os.environ.get("LADSPA_PATH", "/usr/lib64/ladspa:/usr/lib/ladspa:/usr/lib/x86_64-linux-gnu/ladspa")
    for directory in directories.split(":"):
        for name in (plugin + ".so", plugin):
            if os.path.exists(os.path.join(directory, name)):
                return os.path.join(directory, name)
    raise SystemExit(f"LADSPA plugin {plugin} not found")


def default(hint):
    f32 = np.float32
    lower, upper, kind = f32(hint.lower), f32(hint.upper), DEFAULTS.get(hint.descriptor & 0x3C0)
    log = hint.descriptor & HINT_LOGARITHMIC

    def between(low_share):
        low_share = f32(low_share)
        if log:
            return f32(math.exp(f32(math.log(lower)) * low_share + f32(math.log(upper)) * (f32(1) - low_share)))
        return lower * low_share + upper * (f32(1) - low_share)

    value = {"minimum": lower, "maximum": upper, "low": None, "middle": None, "high": None,
             "0": f32(0), "1": f32(1), "100": f32(100), "440": f32(440)}.get(kind)
    if kind in ("low", "middle", "high"):
        value = between({"low": 0.75, "middle": 0.5, "high": 0.25}[kind])
    if kind is None:
        value = upper if upper == lower else min(max(f32(0.5) * upper, lower), upper)
    return float(np.round(value) if hint.descriptor & HINT_INTEGER else value)


class Plugin:
    def __init__(self, plugin, label):
        self.library = ctypes.CDLL(find(plugin))
        self.library.ladspa_descriptor.restype = ctypes.POINTER(Descriptor)
        index = 0
        while True:
            pointer = self.library.ladspa_descriptor(index)
            if not pointer:
                raise SystemExit(f"{plugin} has no label {label}")
            if pointer.contents.label.decode() == label:
                break
            index += 1
        self.pointer, self.descriptor = pointer, pointer.contents
        self.ports = []
        for port in range(self.descriptor.port_count):
            kind = self.descriptor.port_descriptors[port]
            role = ("audio" if kind & PORT_AUDIO else "control") + ("_in" if kind & PORT_INPUT else "_out")
            self.ports.append((self.descriptor.port_names[port].decode(), role, default(self.descriptor.port_hints[port])))

    def names(self, role):
        return [name for name, port_role, _ in self.ports if port_role == role]

    def run(self, inputs, controls, rate, calls):
        """`inputs`: {audio input name: signal}; `controls`: {name: value}; `calls`: the frames of
        each call. Returns {audio output name: signal}."""
        descriptor = self.descriptor
        handle = descriptor.instantiate(self.pointer, rate)
        longest = int(max(calls))
        frames = sum(int(c) for c in calls)
        buffers, outputs = {}, {}
        for port, (name, role, default_value) in enumerate(self.ports):
            if role.startswith("audio"):
                buffer = np.zeros(longest, np.float32)
            else:
                buffer = np.array([controls.get(name, default_value) if role == "control_in" else 0], np.float32)
            buffers[port] = buffer
            descriptor.connect_port(handle, port, buffer.ctypes.data_as(ctypes.POINTER(ctypes.c_float)))
            if role == "audio_out":
                outputs[name] = np.zeros(frames, np.float32)
        if descriptor.activate:
            ctypes.CFUNCTYPE(None, ctypes.c_void_p)(descriptor.activate)(handle)
        start = 0
        for count in calls:
            count = int(count)
            for port, (name, role, _) in enumerate(self.ports):
                if role == "audio_in":
                    buffers[port][:count] = inputs.get(name, np.zeros(frames))[start:start + count]
            descriptor.run(handle, count)
            for port, (name, role, _) in enumerate(self.ports):
                if role == "audio_out":
                    outputs[name][start:start + count] = buffers[port][:count]
            start += count
        if descriptor.deactivate:
            ctypes.CFUNCTYPE(None, ctypes.c_void_p)(descriptor.deactivate)(handle)
        descriptor.cleanup(handle)
        return {name: signal.astype(np.float64) for name, signal in outputs.items()}
