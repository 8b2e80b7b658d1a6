#!/usr/bin/env bash
# make check-distros: what a user of Debian 13 (trixie) and of sid does, in a root of each made by
# scripts/debian-root.sh: with the suite's own Swift (swiftlang) and PipeWire headers, `make deb`
# builds the package natively, apt installs it, scripts/check-installed.sh runs it as a user would,
# and the unit tests (ConvolutionTests, WorkgroupTests, LevelSchedulingTests) pass with that
# toolchain. The checkout's files (tracked and new, not ignored ones) are copied into each root.
#   scripts/check-distros.sh [trixie-swift|sid-swift]...    (default: both)
set -euo pipefail
cd "$(dirname "$0")/.."
roots=("$@")
[ ${#roots[@]} -gt 0 ] || roots=(trixie-swift sid-swift)
results=()
for name in "${roots[@]}"; do
    started=$SECONDS
    root=$(scripts/debian-root.sh "$name" path)
    rm -rf "$root/build/swift-convolver"
    mkdir -p "$root/build/swift-convolver"
    git ls-files -co --exclude-standard -z | tar --null -T - -cf - | tar -xf - -C "$root/build/swift-convolver"
    echo "check-distros: $name: $(scripts/debian-root.sh "$name" run -- swift --version 2>&1 | head -n 1)"
    if scripts/debian-root.sh "$name" run -- sh -euc '
        cd /build/swift-convolver
        make deb
        apt-get install -y --reinstall ./.build/dist/swift-convolver_*_amd64.deb
        scripts/check-installed.sh
        # SwiftPM 6.2 generates a test runner that imports Testing beside Foundation, whose
        # cross-import overlay Debian'"'"'s swiftlang 6.2.3 ships without its library: not imported.
        flags="-Xswiftc -enable-testing -Xswiftc -Xfrontend -Xswiftc -disable-cross-import-overlays"
        swift build -c release $flags --build-tests --disable-swift-testing
        swift test -c release $flags --skip-build --disable-swift-testing \
            --filter "ConvolutionTests|WorkgroupTests|LevelSchedulingTests"
        apt-get remove -y swift-convolver
    '; then
        results+=("$name: passed in $((SECONDS - started)) s")
    else
        results+=("$name: FAILED after $((SECONDS - started)) s")
    fi
done
printf 'check-distros: %s\n' "${results[@]}"
! printf '%s\n' "${results[@]}" | grep -q FAILED
