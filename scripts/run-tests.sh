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
# XCTest only (there are no swift-testing tests), each test run once, and a plain closing line
# counting test cases. A failure fails `make test`.
test_flags=(-c release -Xswiftc -enable-testing --skip-build --disable-swift-testing)
log=$(mktemp)
set +e
swift test "${test_flags[@]}" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
summary=$(grep -E 'Executed [0-9]+ tests?, with ' "$log" | tail -n 1 || true)
failed=$(grep -oE "Test Case '[A-Za-z0-9_]+\.[A-Za-z0-9_]+' failed" "$log" | sort -u | grep -c . || true)
rm -f "$log"
if [[ ! $summary =~ Executed\ ([0-9]+)\ tests? ]]; then
    echo "run-tests: no XCTest summary found" >&2
    exit 1
fi
executed=${BASH_REMATCH[1]}
skipped=0
if [[ $summary =~ with\ ([0-9]+)\ tests?\ skipped ]]; then skipped=${BASH_REMATCH[1]}; fi
if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
    failed=1  # the runner failed without naming a test case (a crash)
fi
echo "tests: $((executed - failed - skipped)) passed, $failed failed, $skipped skipped"
exit "$status"
