#!/usr/bin/env bash
# Minimal roots of other Debian suites (debootstrap from the mirror the machine's apt uses), cached
# under .build/roots/, and commands run inside them in private namespaces: the machine itself is not
# changed. Each root is named for what it is for; it is rebuilt when its suite or package list changes.
#   scripts/debian-root.sh NAME path                      makes the root if needed, prints its path
#   scripts/debian-root.sh NAME run [--bind DIR]... -- COMMAND...
#       runs COMMAND in the root (as root, HOME=/root) with its own mount and pid namespaces, /proc,
#       /dev (null, zero, full, random, urandom, tty, a private /dev/shm) and /tmp; each DIR is bound in
#       at the same path (the checkout, /opt/swift). Every process the command leaves is ended with it.
# Roots:
#   sid-pipewire   PipeWire 1.6 + WirePlumber 0.5 of Debian sid and what the live tests need to run there
#   trixie-swift   Debian 13 with its own Swift (swiftlang) and what the Makefile's `deps` installs
#   sid-swift      Debian sid with the same
set -euo pipefail
cd "$(dirname "$0")/.."
script=$PWD/scripts/debian-root.sh

live_packages=(pipewire pipewire-bin wireplumber libpipewire-0.3-modules libspa-0.2-modules
               libfftw3-single3 libsndfile1 libsoxr0 libmysofa1 python3-numpy python3-scipy sox
               make gcc libc6-dev pkg-config libpipewire-0.3-dev dpkg-dev binutils man-db
               libxml2 liblilv-0-0 swh-plugins lsp-plugins-lv2)
# libxml2: libxml2.so.2, which the toolchain's XCTest needs (FoundationXML); liblilv-0-0: the LV2
# host library the module links; swh-plugins and lsp-plugins-lv2: the LADSPA and LV2 plugins the
# graph tests host.
# What the Makefile's `deps` installs on Debian 12, with the suite's own Swift and g++: swiftlang
# alone cannot link (no libc6-dev, no libstdc++ to link against: measured on trixie).
read -ra build_packages <<<"swiftlang g++ make ca-certificates $(make -s --no-print-directory debian-packages)"

name=${1:?usage: $0 NAME path|run [--bind DIR]... -- COMMAND...}
case "$name" in
    sid-pipewire) suite=sid packages=("${live_packages[@]}") ;;
    trixie-swift) suite=trixie packages=("${build_packages[@]}") ;;
    sid-swift) suite=sid packages=("${build_packages[@]}") ;;
    *) echo "debian-root.sh: no root named '$name' (sid-pipewire, trixie-swift, sid-swift)" >&2; exit 2 ;;
esac
root=$PWD/.build/roots/$name
recipe="$suite ${packages[*]}"
sudo=$([ "$(id -u)" -eq 0 ] || echo sudo)

# The machine's own Debian mirror: the first deb.debian.org-style URI of its apt sources.
mirror() {
    local uri
    uri=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$uri" ] || uri=$(awk '/^deb / { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
    [ -n "$uri" ] || { echo "debian-root.sh: no Debian mirror found in /etc/apt" >&2; exit 1; }
    echo "$uri"
}

make_root() {
    [ -f "$root/.recipe" ] && [ "$(cat "$root/.recipe")" = "$recipe" ] && return 0
    command -v debootstrap >/dev/null || {
        $sudo apt-get update >/dev/null
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends debootstrap >/dev/null
    }
    local uri log=$PWD/.build/roots/$name.log started=$SECONDS
    uri=$(mirror)
    $sudo rm -rf "$root"
    mkdir -p "$root"
    echo "debian-root.sh: making $name ($suite from $uri; log in $log)" >&2
    if ! $sudo debootstrap --variant=minbase "$suite" "$root" "$uri" >"$log" 2>&1; then
        tail -n 20 "$log" >&2
        echo "debian-root.sh: debootstrap of $suite from $uri failed (is the mirror reachable?); log: $log" >&2
        exit 1
    fi
    # The mirror's sid Release file can be past its Valid-Until date: apt would refuse it.
    echo 'Acquire::Check-Valid-Until "false";' | $sudo tee "$root/etc/apt/apt.conf.d/99swift-convolver" >/dev/null
    $sudo cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    # Packages with apt inside the root: debootstrap's own resolver misses dependencies on sid.
    if ! "$script" "$name" _enter -- sh -c "apt-get update && DEBIAN_FRONTEND=noninteractive \
            apt-get install -y --no-install-recommends ${packages[*]} && apt-get clean" >>"$log" 2>&1; then
        tail -n 20 "$log" >&2
        echo "debian-root.sh: installing ${packages[*]} in $name failed; log: $log" >&2
        exit 1
    fi
    echo "$recipe" | $sudo tee "$root/.recipe" >/dev/null
    echo "debian-root.sh: $name made in $((SECONDS - started)) s" >&2
}

# enter [--bind DIR]... -- COMMAND: new mount and pid namespaces; inside, "inside" below runs as pid 1.
enter() {
    exec $sudo unshare --mount --pid --fork --propagation private -- "$script" "$name" _inside "$@"
}

inside() {
    local binds=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        [ "$1" = --bind ] || { echo "debian-root.sh: unknown option $1" >&2; exit 2; }
        binds+=("$(realpath "$2")"); shift 2
    done
    shift
    # The root a mount point of its own: then `unshare --propagation private` works inside it too.
    mount --bind "$root" "$root"
    mount -t proc proc "$root/proc"
    mount -t sysfs -o ro sysfs "$root/sys" 2>/dev/null || mount --rbind -o ro /sys "$root/sys"
    mount -t tmpfs -o mode=755,size=1m tmpfs "$root/dev"
    local device
    for device in null zero full random urandom tty; do
        touch "$root/dev/$device"
        mount --bind "/dev/$device" "$root/dev/$device"
    done
    mkdir "$root/dev/shm" "$root/dev/pts"
    mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
    mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
    ln -s pts/ptmx "$root/dev/ptmx"
    ln -s /proc/self/fd "$root/dev/fd"
    ln -s /proc/self/fd/0 "$root/dev/stdin"
    ln -s /proc/self/fd/1 "$root/dev/stdout"
    ln -s /proc/self/fd/2 "$root/dev/stderr"
    mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
    local dir
    for dir in "${binds[@]}"; do
        mkdir -p "$root$dir"
        mount --bind "$dir" "$root$dir"
    done
    # Not exec: this shell stays pid 1 and reaps what the command orphans; when it ends, the kernel
    # ends every process left in the namespace.
    set +e
    chroot "$root" /usr/bin/env HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$@"
    exit $?
}

case "${2:-path}" in
    path) make_root; echo "$root" ;;
    run) make_root; shift 2; enter "$@" ;;
    _enter) shift 2; enter "$@" ;;
    _inside) shift 2; inside "$@" ;;
    *) echo "usage: $0 NAME path|run [--bind DIR]... -- COMMAND..." >&2; exit 2 ;;
esac
