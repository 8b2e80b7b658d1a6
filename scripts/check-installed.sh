#!/usr/bin/env bash
# The installed package, as a user has it (run by scripts/check-distros.sh inside a Debian root after
# `apt install ./swift-convolver_*.deb`): `pw-convolver --help` and `man pw-convolver` work, and the
# module, loaded by name from PipeWire's own module directory in a private daemon, plays a file
# exactly: its output, call by call, is numpy's convolution of its own input with the IR.
# CHECK_INSTALLED_EXTRA_ARGS adds module keys (`test.fault = delay-one-sample` must make it fail).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/swift-convolver-check.XXXXXX)
daemon=$work/pipewire client_pid=
cleanup() {
    [ -z "$client_pid" ] || { kill "$client_pid" 2>/dev/null || true; wait "$client_pid" 2>/dev/null || true; }
    "$here/scripts/private-pipewire.sh" stop "$daemon" 2>/dev/null || true
}
trap cleanup EXIT
fail() { echo "check-installed: $*" >&2; exit 1; }
wait_for_port() {
    for _ in $(seq 100); do pw-link -o -i 2>/dev/null | grep -qx "$1" && return 0; sleep 0.1; done
    cat "$work/client.log" >&2; fail "port $1 did not appear"
}

pw-convolver --help | grep -q '^Usage: pw-convolver' || fail "pw-convolver --help printed no usage"
MANWIDTH=100 man pw-convolver 2>&1 | grep -q 'COMMANDS' || fail "man pw-convolver has no COMMANDS section"
module=$(pkg-config --variable=moduledir libpipewire-0.3 2>/dev/null || echo /usr/lib/x86_64-linux-gnu/pipewire-0.3)
[ -f "$module/libpipewire-module-swift-convolver.so" ] || fail "the module is not in PipeWire's module directory $module"

python3 - "$work" <<'EOF'
import sys, wave, numpy as np
work = sys.argv[1]
def write(path, frames):  # 32-bit float WAV (format 3), as libsndfile reads it
    data = np.asarray(frames, dtype="<f4")
    header = (b"RIFF" + (36 + data.nbytes).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
              + (3).to_bytes(2, "little") + (2).to_bytes(2, "little") + (48000).to_bytes(4, "little")
              + (48000 * 8).to_bytes(4, "little") + (8).to_bytes(2, "little") + (32).to_bytes(2, "little")
              + b"data" + data.nbytes.to_bytes(4, "little"))
    open(path, "wb").write(header + data.tobytes())
random = np.random.default_rng(44)
n = np.arange(9600)
write(f"{work}/ir.wav", np.stack([random.standard_normal(9600) * np.exp(-n / 2000) * 0.3 for _ in range(2)], 1))
noise = random.standard_normal((96000, 2)) * 0.2
write(f"{work}/input.wav", np.concatenate([np.zeros((24000, 2)), noise, np.zeros((24000, 2))]))
EOF

eval "$("$here/scripts/private-pipewire.sh" start "$daemon")"
pw-metadata -n settings 0 clock.force-quantum 256 >/dev/null
cat >"$work/client.conf" <<EOF
context.spa-libs = { audio.convert.* = audioconvert/libspa-audioconvert support.* = support/libspa-support }
context.modules = [
    { name = libpipewire-module-protocol-native }
    { name = libpipewire-module-client-node }
    { name = libpipewire-module-adapter }
    { name = libpipewire-module-swift-convolver
      args = { node.name = check audio.position = [ FL FR ] filename = "$work/ir.wav" test.record-calls = "$work/calls.f32" ${CHECK_INSTALLED_EXTRA_ARGS:-} } }
]
EOF
pipewire -c "$work/client.conf" >"$work/client.log" 2>&1 &
client_pid=$!
wait_for_port check:input_FR
ports='adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve }'
# The node's outputs go to a recorder: unlinked ports get no buffers, and the node then writes nothing.
pw-record -P "{ node.name = check-rec node.autoconnect = false $ports }" --channels 2 "$work/output.wav" &
recorder=$!
pw-play -P "{ node.name = check-play node.want-driver = false node.autoconnect = false $ports }" "$work/input.wav" &
player=$!
wait_for_port check-play:output_FR
wait_for_port check-rec:input_FR
pw-link check:output_FL check-rec:input_FL
pw-link check:output_FR check-rec:input_FR
pw-link check-play:output_FL check:input_FL
pw-link check-play:output_FR check:input_FR
wait "$player"
sleep 0.5
kill -INT "$client_pid" "$recorder"; wait "$client_pid" || true; wait "$recorder" || true; client_pid=
[ -s "$work/calls.f32" ] || { cat "$work/client.log" >&2; fail "the node wrote no record of its calls"; }

python3 - "$work" <<'EOF'
import sys, numpy as np
work = sys.argv[1]
def read(path):
    raw = open(path, "rb").read()
    at = raw.index(b"data") + 8
    return np.frombuffer(raw[at:], dtype="<f4").reshape(-1, 2).astype(np.float64)
ir, played = read(f"{work}/ir.wav"), read(f"{work}/input.wav")
calls = np.fromfile(f"{work}/calls.f32", dtype=np.float32).reshape(-1, 4).astype(np.float64)
heard, output = calls[:, :2], calls[:, 2:]
if np.isnan(heard).any():
    sys.exit("check-installed: the node's record of its input has NaN")
judged = ~np.isnan(output).any(axis=1)  # frames the node had output buffers for
received = np.count_nonzero((heard[judged] != 0).any(axis=1))
loud = np.count_nonzero((played != 0).any(axis=1))
worst, error_db = 0.0, -np.inf
for channel in range(2):
    expected = np.convolve(heard[:, channel], ir[:, channel])[: len(heard)][judged]
    difference = output[judged, channel] - expected
    worst = max(worst, float(np.abs(difference).max()))
    error_db = max(error_db, 10 * np.log10(max(np.sum(difference**2), 1e-30) / np.sum(expected**2)))
print(f"check-installed: {len(heard)} frames, {received} of {loud} played frames received and judged; "
      f"worst {worst:.2e}, {error_db:.1f} dB")
if not received >= 0.9 * loud or not worst <= 1e-4 or not error_db <= -90:
    sys.exit("check-installed: the installed module did not play the file exactly")
EOF
echo "check-installed: pw-convolver --help, man pw-convolver and the module loaded by name: all good"
