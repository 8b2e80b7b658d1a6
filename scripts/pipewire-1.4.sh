#!/usr/bin/env bash
# PipeWire 1.4.2 and WirePlumber 0.5.8 from Debian's bookworm-backports, unpacked into a prefix
# beside the system's PipeWire (no install, nothing system-wide changed but Debian's liblua5.4-0,
# which WirePlumber 0.5 needs). Cached: a prefix that is complete is used as it is.
#   scripts/pipewire-1.4.sh prefix     unpacks (if needed) and prints the prefix's path
#   scripts/pipewire-1.4.sh env        unpacks (if needed) and prints `export` lines that run
#                                      PipeWire's tools, daemons and libraries from the prefix
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD/.build/pipewire-1.4
prefix=$root/prefix
lib=$prefix/usr/lib/x86_64-linux-gnu
packages=(pipewire pipewire-bin libpipewire-0.3-0 libpipewire-0.3-dev libspa-0.2-dev libpipewire-0.3-modules
          libspa-0.2-modules libpipewire-0.3-common wireplumber libwireplumber-0.5-0)
sudo=$([ "$(id -u)" -eq 0 ] || echo sudo)

unpack() {
    [ -f "$root/complete" ] && return 0
    rm -rf "$root"
    mkdir -p "$root/lists/partial" "$root/debs" "$prefix"
    # The system's own mirror (its first deb.debian.org-style URI), with the backports suite.
    local mirror
    mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$mirror" ] || mirror=$(awk '/^deb / && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
    [ -n "$mirror" ] || { echo "pipewire-1.4.sh: no Debian mirror found in /etc/apt" >&2; exit 1; }
    cat >"$root/sources.list" <<EOF
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bookworm-backports main
EOF
    local apt=(-o "Dir::Etc::SourceList=$root/sources.list" -o Dir::Etc::SourceParts=/dev/null
               -o "Dir::State::Lists=$root/lists" -o "Dir::Cache=$root/cache" -o Debug::NoLocking=1)
    mkdir -p "$root/cache/archives/partial"
    apt-get "${apt[@]}" update >"$root/apt-update.log" 2>&1 || { cat "$root/apt-update.log" >&2; exit 1; }
    local versioned=()
    for package in "${packages[@]}"; do versioned+=("$package/bookworm-backports"); done
    (cd "$root/debs" && apt-get "${apt[@]}" download "${versioned[@]}") >"$root/apt-download.log" 2>&1 \
        || { cat "$root/apt-download.log" >&2; exit 1; }
    for deb in "$root"/debs/*.deb; do dpkg -x "$deb" "$prefix"; done
    # pkg-config files name /usr: PKG_CONFIG_SYSROOT_DIR puts the prefix before them.
    touch "$root/complete"
}

# WirePlumber 0.5 links liblua5.4 (Debian 12 has it, not installed by default).
lua() {
    dpkg-query -W -f='${Status}' liblua5.4-0 2>/dev/null | grep -q 'install ok installed' && return 0
    $sudo apt-get update >/dev/null && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends liblua5.4-0
}

case "${1:-prefix}" in
    prefix) unpack; lua >&2; echo "$prefix" ;;
    env)
        unpack; lua >&2
        cat <<EOF
export PATH="$prefix/usr/bin:\$PATH"
export LD_LIBRARY_PATH="$lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export SPA_PLUGIN_DIR="$lib/spa-0.2"
export PIPEWIRE_MODULE_DIR="$lib/pipewire-0.3"
export PIPEWIRE_CONFIG_DIR="$prefix/usr/share/pipewire"
export WIREPLUMBER_MODULE_DIR="$lib/wireplumber-0.5"
export WIREPLUMBER_DATA_DIR="$prefix/usr/share/wireplumber"
export WIREPLUMBER_CONFIG_DIR="$prefix/usr/share/wireplumber"
export PKG_CONFIG_SYSROOT_DIR="$prefix"
export PKG_CONFIG_LIBDIR="$lib/pkgconfig:/usr/lib/x86_64-linux-gnu/pkgconfig:/usr/lib/pkgconfig:/usr/share/pkgconfig"
EOF
        ;;
    *) echo "usage: $0 prefix|env" >&2; exit 2 ;;
esac
