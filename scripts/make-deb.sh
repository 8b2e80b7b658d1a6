#!/usr/bin/env bash
# Builds swift-convolver_<version>_amd64.deb from the static-stdlib products (`make deb`), with
# dpkg-deb and no network: the module in PipeWire's module directory, pw-convolver in /usr/bin,
# the configs in /usr/share/swift-convolver/ (the daemon drop-in among them as an example, not
# enabled), the systemd user unit, the man pages, Depends computed by dpkg-shlibdeps.
# Usage: scripts/make-deb.sh BUILD_DIR MAN_DIR VERSION OUTDIR
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1 man=$2 version=$3 out=$4
package=swift-convolver
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
moduledir=/usr/lib/$multiarch/pipewire-0.3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# dpkg-shlibdeps wants the tree where dpkg-buildpackage puts it: debian/<package>/, with DEBIAN/.
root=$work/debian/$package
mkdir -p "$root/DEBIAN"

# Binaries stripped (as dh_strip does); the Swift runtime is linked in, nothing points into a toolchain.
install -D -m 755 "$build/pw-convolver" "$root/usr/bin/pw-convolver"
install -D -m 644 "$build/libpipewire-module-swift-convolver.so" "$root$moduledir/libpipewire-module-swift-convolver.so"
strip --strip-unneeded "$root/usr/bin/pw-convolver" "$root$moduledir/libpipewire-module-swift-convolver.so"
for binary in "$root/usr/bin/pw-convolver" "$root$moduledir/libpipewire-module-swift-convolver.so"; do
    if readelf -d "$binary" | grep -E 'NEEDED.*libswift|R(UN)?PATH.*swift'; then
        echo "make-deb: $binary still needs the Swift toolchain (build with -static-stdlib: make build)" >&2
        exit 1
    fi
done
install -d "$root/usr/share/$package"
install -m 644 pipewire-conf/swift-convolver*.conf README.md "$root/usr/share/$package/"
install -d "$root/usr/lib/systemd/user"
sed 's|@BINDIR@|/usr/bin|g' contrib/systemd/swift-convolver.service.in >"$root/usr/lib/systemd/user/swift-convolver.service"
chmod 644 "$root/usr/lib/systemd/user/swift-convolver.service"
sed -e 's|@DATADIR@|/usr/share/swift-convolver|g' -e 's|@BINDIR@|/usr/bin|g' \
    contrib/systemd/swift-convolver@.service.in >"$root/usr/lib/systemd/user/swift-convolver@.service"
chmod 644 "$root/usr/lib/systemd/user/swift-convolver@.service"
install -D -m 644 "$man/pw-convolver.1" "$root/usr/share/man/man1/pw-convolver.1"
install -D -m 644 "$man/libpipewire-module-swift-convolver.7" "$root/usr/share/man/man7/libpipewire-module-swift-convolver.7"
gzip -9n "$root/usr/share/man/man1/pw-convolver.1" "$root/usr/share/man/man7/libpipewire-module-swift-convolver.7"
install -d "$root/usr/share/doc/$package"
cat >"$root/usr/share/doc/$package/copyright" <<COPYRIGHT
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: swift-convolver
Comment: The binaries in this package link FFTW 3 (libfftw3f), which is licensed under the
 GNU General Public License, version 2 or later. The package as distributed is therefore covered
 by the GPL-2+: whoever distributes it must offer its complete source under GPL-compatible terms
 (the project's own MIT code is compatible). The Swift runtime linked into the binaries is
 Apache-2.0 with the Runtime Library Exception. libsndfile and libsoxr are LGPL-2.1+,
 libmysofa is BSD-3-Clause, libpipewire is MIT.

Files: *
Copyright: 2026 The swift-convolver authors
License: MIT and GPL-2+
 The source code is MIT (below); the binaries, linked with FFTW, are distributed under GPL-2+.
 .
$(sed 's/^$/./; s/^/ /' LICENSE)
 .
 On Debian systems the GPL version 2 is in /usr/share/common-licenses/GPL-2.
COPYRIGHT

# Depends from the binaries' NEEDED entries and the installed libraries' shlibs/symbols files.
printf 'Source: %s\n\nPackage: %s\nArchitecture: any\n' "$package" "$package" >"$work/debian/control"
depends=$(cd "$work" && dpkg-shlibdeps -O "$root/usr/bin/pw-convolver" "$root$moduledir/libpipewire-module-swift-convolver.so" \
    | sed -n 's/^shlibs:Depends=//p')
[ -n "$depends" ] || { echo "make-deb: dpkg-shlibdeps computed no dependencies" >&2; exit 1; }

cat >"$root/DEBIAN/control" <<CONTROL
Package: $package
Version: $version
Architecture: $(dpkg --print-architecture)
Maintainer: The swift-convolver authors <swift-convolver@users.noreply.example>
Installed-Size: $(du -sk --exclude=DEBIAN "$root" | cut -f1)
Depends: $depends
Recommends: pipewire
Section: sound
Priority: optional
Description: zero-latency convolver for PipeWire (module and command-line tool)
 A PipeWire filter node that convolves live audio with impulse responses: concert-hall
 reverbs, room and speaker correction FIRs, guitar cabinets, true-stereo and multichannel
 (virtual surround) responses, with no added latency for any IR length and any quantum.
 The long partitions run on the node's own workgroup of real-time helper threads.
 .
 This package has libpipewire-module-swift-convolver (load it from PipeWire config; examples
 in /usr/share/swift-convolver, none enabled) and pw-convolver (run the node as a client,
 render files offline, benchmark, inspect IRs, watch the graph's timing).
CONTROL
(cd "$root" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z | xargs -0 md5sum) >"$root/DEBIAN/md5sums"
mkdir -p "$out"
deb="$out/${package}_${version}_$(dpkg --print-architecture).deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
