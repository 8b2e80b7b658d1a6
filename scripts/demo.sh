#!/usr/bin/env bash
# make demo: play a test signal through the swift-convolver node (builtin:hall) in PipeWire, show
# live statistics, then stop everything this script started.
#
# With your running PipeWire (`pw-cli info 0` answers) and a default output (the session manager's
# default.audio.sink, with playback_FL and playback_FR ports), you hear it there at a moderate level
# (-12 dBFS peaks in) and nothing is left behind. Otherwise the result is recorded to a file: in your
# PipeWire without a default output, or in a private headless daemon started in a temporary runtime
# dir (scripts/private-pipewire.sh) when none answers. It never stops or reconfigures your own
# PipeWire: it only adds its own nodes (node.autoconnect = false, so your session manager leaves
# them alone) and removes them at the end; Ctrl-C stops it early, as cleanly.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${PW_CONVOLVER:-$root/.build/release/pw-convolver}
work=$(mktemp -d /tmp/swift-convolver-demo.XXXXXX)
tag=$$  # node names must be unique: pw-link picks the first node of a name
node=swift-convolver-demo-$tag
ports='adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve }'
private_dir=
output=  # your default output, when the demo plays there
node_pid= player_pid= recorder_pid=

# Ends one process this script started with signal $1 (pw-record writes its WAV header on SIGINT;
# the node exits cleanly on SIGTERM: bash starts background jobs with SIGINT ignored), SIGKILL if it
# is still there after 5 s.
stop_process() {
    kill -"$1" "$2" 2>/dev/null || return 0
    for _ in $(seq 50); do kill -0 "$2" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$2" 2>/dev/null || true
    wait "$2" 2>/dev/null || true
}

cleanup() {
    for pid in $player_pid $recorder_pid; do stop_process INT "$pid"; done
    [ -z "$node_pid" ] || stop_process TERM "$node_pid"
    player_pid= recorder_pid= node_pid=
    [ -z "$private_dir" ] || "$root/scripts/private-pipewire.sh" stop "$private_dir"
    private_dir=
    [ -z "$output" ] || rm -rf "$work"  # nothing to keep: it was heard
}
trap cleanup EXIT
trap 'exit 130' INT TERM  # through the EXIT trap

wait_for_port() {
    for _ in $(seq 100); do pw-link -o -i 2>/dev/null | grep -qx "$1" && return 0; sleep 0.1; done
    echo "demo: port $1 did not appear" >&2; return 1
}

# 1. Which PipeWire, and where the sound goes: your default output, else a recording.
output=
if timeout 3 pw-cli info 0 >/dev/null 2>&1; then
    echo "== Using your running PipeWire (XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-unset})"
    output=$(timeout 3 pw-metadata -n default 0 default.audio.sink 2>/dev/null |
        sed -n 's/.*"name" *: *"\([^"]*\)".*/\1/p' | head -n 1) || output=
    inputs=$(pw-link -i 2>/dev/null) || inputs=
    for channel in FL FR; do grep -qxF "$output:playback_$channel" <<<"$inputs" || output=; done
else
    private_dir=$work/pipewire
    echo "== No PipeWire answering: starting a private headless one in $private_dir"
    eval "$("$root/scripts/private-pipewire.sh" start "$private_dir")"
    pw-metadata -n settings 0 clock.force-quantum 256 >/dev/null  # the private daemon only
fi

# 2. The node, with the built-in hall IR, as a client process.
echo "== Starting the node: pw-convolver run --ir builtin:hall --name $node"
"$bin" run --ir builtin:hall --name "$node" >"$work/node.log" 2>&1 &
node_pid=$!
wait_for_port "$node:input_FL" || { cat "$work/node.log" >&2; exit 1; }

# 3. A short test signal: four plucked notes, then 2 s of silence (the hall rings on; pw-play stays
#    linked through it).
signal=$work/test-signal.wav
for note in 1-C4 2-E4 3-G4 4-C5; do
    sox -n -r 48000 -c 2 -b 32 -e floating-point "$work/note-$note.wav" synth 0.6 pluck "${note#*-}"
done
# Peaks at -12 dBFS in: a moderate level on any output.
sox "$work"/note-*.wav "$signal" norm -12 pad 0 2
recording=$work/hall-recording.wav

# 4. The node's output to your default output, or to a recorder; the signal into the node (linked
#    by port names).
if [ -n "$output" ]; then
    echo "== Your default output is $output: you hear the test signal through $node there (about 6 s; Ctrl-C stops it)"
    destination=$output:playback
else
    pw-record -P "{ node.name = demo-rec-$tag node.want-driver = true node.autoconnect = false $ports }" \
        --format f32 --rate 48000 --channels 2 "$recording" &
    recorder_pid=$!
    wait_for_port "demo-rec-$tag:input_FL"
    destination=demo-rec-$tag:input
fi
pw-play -P "{ node.name = demo-play-$tag node.want-driver = false node.autoconnect = false $ports }" "$signal" &
player_pid=$!
wait_for_port "demo-play-$tag:output_FL"
for channel in FL FR; do
    pw-link "$node:output_$channel" "${destination}_$channel"
    pw-link "demo-play-$tag:output_$channel" "$node:input_$channel"
done
echo "== Playing $signal through $node; live statistics (pw-convolver top --batch --seconds 3):"
"$bin" top --batch --seconds 3

# 5. Let the signal end and the hall ring out, then stop what was started.
wait "$player_pid" || true
player_pid=
sleep 3
[ -z "$recorder_pid" ] || stop_process INT "$recorder_pid"
recorder_pid=
cleanup

if [ -n "$output" ]; then
    printf '\n== Done: that was four notes through builtin:hall, on %s.\n' "$output"
else
    printf '\n== Done. No default output to play to: the recording (input through builtin:hall) is\n'
    printf '   %s\n   (play it with: pw-play %s)\n' "$recording" "$recording"
fi
cat <<EOF

== In a real session, run the node and route it with pw-link or qpwgraph:
   $bin --ir builtin:hall --name hall          # or --ir /path/to/ir.wav
   pw-link <player>:output_FL hall:input_FL ; pw-link <player>:output_FR hall:input_FR
   pw-link hall:output_FL <sink>:playback_FL ; pw-link hall:output_FR <sink>:playback_FR
   (list ports with pw-link -o / pw-link -i; in qpwgraph drag the same links)
   Statistics: $bin top --node hall
EOF
