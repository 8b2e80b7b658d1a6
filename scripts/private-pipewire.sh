#!/usr/bin/env bash
# Start or stop a private headless PipeWire daemon (pipewire-conf/headless-daemon.conf).
#   scripts/private-pipewire.sh start DIR   -> prints `export XDG_RUNTIME_DIR=DIR` for clients
#   scripts/private-pipewire.sh stop DIR
# DIR is the daemon's own runtime dir (mode 700); its pid and log are kept there.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:?start|stop}; dir=${2:?runtime dir}
case "$cmd" in
start)
    mkdir -p "$dir"; chmod 700 "$dir"
    # stdin from /dev/null: the daemon must hold no fd of whoever started this script.
    XDG_RUNTIME_DIR="$dir" PIPEWIRE_DEBUG=${PIPEWIRE_DEBUG:-2} \
        setsid pipewire -c "$here/pipewire-conf/headless-daemon.conf" </dev/null >"$dir/pipewire.log" 2>&1 &
    echo $! >"$dir/pipewire.pid"
    for _ in $(seq 100); do
        [ -S "$dir/pipewire-0" ] && break
        kill -0 "$(cat "$dir/pipewire.pid")" 2>/dev/null || { cat "$dir/pipewire.log" >&2; exit 1; }
        sleep 0.05
    done
    [ -S "$dir/pipewire-0" ] || { echo "private PipeWire did not start; log: $dir/pipewire.log" >&2; exit 1; }
    echo "export XDG_RUNTIME_DIR=$dir"
    ;;
stop)
    if [ -f "$dir/pipewire.pid" ]; then
        pid=$(cat "$dir/pipewire.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/pipewire.pid"
    fi
    ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
