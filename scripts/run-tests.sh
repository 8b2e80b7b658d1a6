#!/usr/bin/env bash
# Builds and runs every test (`make test`). The node tests start private PipeWire daemons, pw-play
# and pw-record; if a test crashes or times out they could outlive it. Every process started here
# inherits a unique marker in its environment, so at exit exactly those are ended (by pid), and
# nothing else on the machine (the user's PipeWire, other test runs) is touched.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_CONVOLVER_TEST_RUN="run-$$-$(date +%s%N)"

end_leftover_processes() {
    local pid leftovers=()
    for environ in /proc/[0-9]*/environ; do
        pid=${environ#/proc/}; pid=${pid%/environ}
        [ "$pid" = $$ ] && continue
        if { tr '\0' '\n' <"$environ"; } 2>/dev/null | grep -qx "SWIFT_CONVOLVER_TEST_RUN=$SWIFT_CONVOLVER_TEST_RUN"; then
            leftovers+=("$pid")
        fi
    done
    [ ${#leftovers[@]} -eq 0 ] && return 0
    echo "run-tests: ending processes the tests left behind:" >&2
    ps -o pid=,args= -p "$(IFS=,; echo "${leftovers[*]}")" >&2 || true
    kill "${leftovers[@]}" 2>/dev/null || true
    sleep 1
    kill -9 "${leftovers[@]}" 2>/dev/null || true
}
trap end_leftover_processes EXIT

# Release: the DSP is tested as it ships (debug Swift is many times slower, and the real-time
# contract is a property of the optimised code). -enable-testing for the @testable imports.
swift build -c release -Xswiftc -enable-testing --build-tests
# XCTest only (there are no swift-testing tests), and a plain closing line from its summary.
log=$(mktemp)
set +e
swift test -c release -Xswiftc -enable-testing --skip-build --disable-swift-testing 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
summary=$(grep -E 'Executed [0-9]+ tests?, with [0-9]+ failures?' "$log" | tail -n 1)
rm -f "$log"
if [[ $summary =~ Executed\ ([0-9]+)\ tests?,\ with\ ([0-9]+)\ failure ]]; then
    echo "tests: $((BASH_REMATCH[1] - BASH_REMATCH[2])) passed, ${BASH_REMATCH[2]} failed"
elif [ "$status" -eq 0 ]; then
    echo "run-tests: no XCTest summary found" >&2
    status=1
fi
exit "$status"
