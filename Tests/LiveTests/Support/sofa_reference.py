"""libmysofa's own view of a SOFA file, for SOFATests: the judge of the node's HRTF filters.

Spec (JSON file, argv[1]): {"path": ..., "directions": [[azimuth, elevation, radius or null], ...]}
Prints JSON: {"rate", "filterLength", "measured": [...], "interpolated": [...]} with, per direction,
- measured: the measurement stored at exactly that direction (the file's raw Data.IR, as
  mysofa_load reads it; null if no measurement is there), its Data.Delay;
- interpolated: what mysofa_getfilter_float returns for it (mysofa_open_no_norm at the file's own
  rate: no resampling, no normalisation).
Called through ctypes: this is libmysofa's code, not the node's.
"""
import ctypes
import json
import math
import sys

lib = ctypes.CDLL("libmysofa.so.1")


class Array(ctypes.Structure):
    _fields_ = [("values", ctypes.POINTER(ctypes.c_float)), ("elements", ctypes.c_uint), ("attributes", ctypes.c_void_p)]


class HRTF(ctypes.Structure):
    _fields_ = [(name, ctypes.c_uint) for name in ("I", "C", "R", "E", "N", "M")] + [
        (name, Array) for name in ("ListenerPosition", "ReceiverPosition", "SourcePosition", "EmitterPosition",
                                   "ListenerUp", "ListenerView", "DataIR", "DataSamplingRate", "DataDelay")]


class Easy(ctypes.Structure):
    _fields_ = [("hrtf", ctypes.POINTER(HRTF)), ("lookup", ctypes.c_void_p), ("neighborhood", ctypes.c_void_p),
                ("fir", ctypes.POINTER(ctypes.c_float))]


lib.mysofa_load.restype = ctypes.POINTER(HRTF)
lib.mysofa_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
lib.mysofa_tospherical.argtypes = [ctypes.POINTER(HRTF)]
lib.mysofa_free.argtypes = [ctypes.POINTER(HRTF)]
lib.mysofa_open_no_norm.restype = ctypes.POINTER(Easy)
lib.mysofa_open_no_norm.argtypes = [ctypes.c_char_p, ctypes.c_float, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
lib.mysofa_getfilter_float.argtypes = [ctypes.POINTER(Easy)] + [ctypes.c_float] * 3 + [ctypes.POINTER(ctypes.c_float)] * 4
lib.mysofa_s2c.argtypes = [ctypes.POINTER(ctypes.c_float)]
lib.mysofa_close.argtypes = [ctypes.POINTER(Easy)]


def main():
    spec = json.load(open(sys.argv[1]))
    path = spec["path"].encode()
    error = ctypes.c_int(0)
    hrtf = lib.mysofa_load(path, ctypes.byref(error))
    if not hrtf:
        sys.exit(f"mysofa_load failed: {error.value}")
    lib.mysofa_tospherical(hrtf)
    h = hrtf.contents
    rate = h.DataSamplingRate.values[0]
    n, m = h.N, h.M
    positions = [(h.SourcePosition.values[3 * i], h.SourcePosition.values[3 * i + 1], h.SourcePosition.values[3 * i + 2])
                 for i in range(m)]
    measured_radius = max(p[2] for p in positions)

    def same_angle(a, b):
        return abs(((a - b) + 180) % 360 - 180) < 1e-3

    measured = []
    for azimuth, elevation, radius in spec["directions"]:
        radius = measured_radius if radius is None else radius
        index = next((i for i, p in enumerate(positions)
                      if same_angle(p[0], azimuth) and abs(p[1] - elevation) < 1e-3 and abs(p[2] - radius) < 1e-3), None)
        if index is None:
            measured.append(None)
            continue
        ir = h.DataIR.values
        delays = h.DataDelay
        delay = ([delays.values[2 * index], delays.values[2 * index + 1]] if delays.elements > 2
                 else [delays.values[0], delays.values[1]] if delays.elements == 2 else [0.0, 0.0])
        measured.append({"left": [ir[(2 * index) * n + k] for k in range(n)],
                         "right": [ir[(2 * index + 1) * n + k] for k in range(n)], "delay": delay})
    lib.mysofa_free(hrtf)

    length = ctypes.c_int(0)
    easy = lib.mysofa_open_no_norm(path, ctypes.c_float(rate), ctypes.byref(length), ctypes.byref(error))
    if not easy:
        sys.exit(f"mysofa_open_no_norm failed: {error.value}")
    interpolated = []
    for azimuth, elevation, radius in spec["directions"]:
        radius = measured_radius if radius is None else radius
        c = (ctypes.c_float * 3)(azimuth, elevation, radius)
        lib.mysofa_s2c(c)
        left, right = (ctypes.c_float * length.value)(), (ctypes.c_float * length.value)()
        delay_left, delay_right = ctypes.c_float(0), ctypes.c_float(0)
        lib.mysofa_getfilter_float(easy, c[0], c[1], c[2], left, right, ctypes.byref(delay_left), ctypes.byref(delay_right))
        interpolated.append({"left": list(left), "right": list(right), "delay": [delay_left.value, delay_right.value]})
    lib.mysofa_close(easy)
    print(json.dumps({"rate": rate, "filterLength": n, "measured": measured, "interpolated": interpolated}))


main()
