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

# Which suites: `system` (every test, on the system's PipeWire), `pipewire-1.4` (the live tests
# again on PipeWire 1.4.2 + WirePlumber 0.5.8 unpacked by scripts/pipewire-1.4.sh, built against
# its headers in a build directory of its own), `pipewire-1.6` (the live tests of the system's
# build again in a Debian sid root, on its PipeWire 1.6 + WirePlumber 0.5: scripts/debian-root.sh),
# or all three (the default, `make test`).
which=${1:-all}
case "$which" in all|system|pipewire-1.4|pipewire-1.6) ;; *) echo "usage: $0 [all|system|pipewire-1.4|pipewire-1.6]" >&2; exit 2 ;; esac

# Release: the DSP is tested as it ships (debug Swift is many times slower, and the real-time
# contract is a property of the optimised code). -enable-testing for the @testable imports.
# XCTest only (there are no swift-testing tests), each test run once: a failure fails `make test`.
build_flags=(-c release -Xswiftc -enable-testing)
results=$(mktemp) failures=$(mktemp)
trap 'rm -f "$results" "$failures"; end_leftover_processes' EXIT

# record LABEL COMMAND...: runs an XCTest run, shows its output and appends its counts to $results
# and its failures' messages to $failures (repeated at the end: CI may show only the output's tail).
record() {
    local label=$1 log status summary executed skipped=0 failed
    shift
    log=$(mktemp)
    set +e
    "$@" 2>&1 | tee "$log"
    status=${PIPESTATUS[0]}
    set -e
    summary=$(grep -E 'Executed [0-9]+ tests?, with ' "$log" | tail -n 1 || true)
    failed=$(grep -oE "Test Case '[A-Za-z0-9_]+\.[A-Za-z0-9_]+' failed" "$log" | sort -u | grep -c . || true)
    grep -E "^[^ ]*:[0-9]+: error: |Test Case '[^']*' failed|Fatal error: |Exited with unexpected" "$log" | cut -c1-600 | sed "s/^/$label: /" >>"$failures" || true
    rm -f "$log"
    if [[ ! $summary =~ Executed\ ([0-9]+)\ tests? ]]; then
        echo "run-tests: $label: no XCTest summary found" >&2
        echo "$label 0 1 0 1" >>"$results"
        return
    fi
    executed=${BASH_REMATCH[1]}
    if [[ $summary =~ with\ ([0-9]+)\ tests?\ skipped ]]; then skipped=${BASH_REMATCH[1]}; fi
    if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi  # the runner failed without naming a test (a crash)
    echo "$label $((executed - failed - skipped)) $failed $skipped $status" >>"$results"
}

# What users install, for InstallTests and PackageTests: the static-stdlib products and the .deb.
make --no-print-directory -s deb >/dev/null

# PipeWire 1.4.2's build (against its own headers) and sid's root, made at idle priority: with
# `all`, while the system suite runs (its live tests leave most of the CPU idle, and their
# real-time threads and the tests themselves come first).
prepare_pipewire_1_4() (
    eval "$(scripts/pipewire-1.4.sh env)"
    nice -n 19 swift build --scratch-path .build/pipewire-1.4/build "${build_flags[@]}" --build-tests
)
prepare_pipewire_1_6() {
    nice -n 19 scripts/debian-root.sh sid-pipewire path >/dev/null
}
# Live tests that need the machine to themselves, not the other version's suite beside them: those
# that load it on purpose (a data thread spinning past its period, helpers starved by a CPU hog;
# measured: beside it, both failed on 1.4.2), and those that hold our node to filter-chain cycle by
# cycle, two sinks taking one asynchronous player's buffers (beside 1.4.2's suite, filter-chain's
# upmix sink on 1.6.9 was silent in 110 of 281 cycles and 52 others disagreed).
alone_tests='FaultTests|FilterGraphTests|FilterChainComparisonTests'

# live_tests PART: the live test classes of the system's bundle in PART (all, shared: those that run
# beside another suite, alone: the others), as XCTest's comma-separated list.
live_tests() {
    local bundle=$1 part=$2
    "$bundle" --list-tests | grep '^LiveTests\.' | cut -d/ -f1 | sort -u | case $part in
        shared) grep -vE "^LiveTests\.($alone_tests)\$" ;;
        alone) grep -E "^LiveTests\.($alone_tests)\$" ;;
        *) cat ;;
    esac | paste -sd,
}

# run_pipewire_1_4 / run_pipewire_1_6 PART: the live tests in PART on that version (prepared above).
# 1.4's environment (its libraries, tools, pkg-config) stays in its functions' subshells.
run_pipewire_1_4() (
    eval "$(scripts/pipewire-1.4.sh env)"
    local bundle
    bundle=$(swift build --scratch-path .build/pipewire-1.4/build "${build_flags[@]}" --show-bin-path)/swift-convolverPackageTests.xctest
    echo "run-tests: on PipeWire 1.4.2 the live tests (LiveTests, $1)"
    record "PipeWire-$(pkg-config --modversion libpipewire-0.3)" "$bundle" "$(live_tests "$bundle" "$1")"
)
run_pipewire_1_6() {
    # The system build's test bundle, run inside sid's root: its libpipewire, daemon, tools and
    # WirePlumber, with the checkout and the toolchain (the bundle's Swift runtime) bound in.
    local toolchain bundle versions in_sid
    toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
    bundle=$(swift build --scratch-path .build "${build_flags[@]}" --show-bin-path)/swift-convolverPackageTests.xctest
    in_sid=(scripts/debian-root.sh sid-pipewire run --bind "$PWD" --bind "$toolchain" --)
    versions=$("${in_sid[@]}" sh -c 'echo "$(pkg-config --modversion libpipewire-0.3) $(wireplumber --version | sed -n "s/.*libwireplumber //p" | head -n 1)"')
    echo "run-tests: on PipeWire ${versions% *} and WirePlumber ${versions#* } (Debian sid) the live tests (LiveTests, $1)"
    record "PipeWire-${versions% *}" "${in_sid[@]}" env SWIFT_CONVOLVER_TEST_RUN="$SWIFT_CONVOLVER_TEST_RUN" \
        sh -c 'cd "$1" && exec "$2" "$3"' - "$PWD" "$bundle" "$(live_tests "$bundle" "$1")"
}

if [ "$which" = all ] || [ "$which" = system ]; then
    swift build --scratch-path .build "${build_flags[@]}" --build-tests
    preparing=()
    if [ "$which" = all ]; then
        prepare_log=$(mktemp)
        # Not marked as the tests' processes: end_leftover_processes must not end it.
        (unset SWIFT_CONVOLVER_TEST_RUN && prepare_pipewire_1_4 && prepare_pipewire_1_6 && nice -n 19 scripts/fuzz.sh --build) \
            >"$prepare_log" 2>&1 &
        preparing=($!)
    fi
    # Every test but those that need the machine alone, beside the preparation (at idle priority),
    # then those, once it has ended.
    system_label="PipeWire-$(pkg-config --modversion libpipewire-0.3)"
    record "$system_label" swift test --scratch-path .build "${build_flags[@]}" --skip-build --disable-swift-testing \
        --skip "^LiveTests\.($alone_tests)/"
    end_leftover_processes
    if [ ${#preparing[@]} -gt 0 ] && ! wait "${preparing[0]}"; then
        cat "$prepare_log" >&2
        echo "run-tests: preparing PipeWire 1.4 and 1.6, or the fuzzer, failed (above)" >&2
        echo "PipeWire-1.4-and-1.6-preparation 0 1 0 1" >>"$results"
        which=system-only
    fi
    record "$system_label" swift test --scratch-path .build "${build_flags[@]}" --skip-build --disable-swift-testing \
        --filter "^LiveTests\.($alone_tests)/"
    end_leftover_processes
fi
case "$which" in
pipewire-1.4) prepare_pipewire_1_4 && run_pipewire_1_4 all ;;
pipewire-1.6) swift build --scratch-path .build "${build_flags[@]}" --build-tests && prepare_pipewire_1_6 && run_pipewire_1_6 all ;;
all)
    # The two versions side by side: their daemons, tests and files share nothing but the CPU.
    # Each suite's output is shown whole when it ends. Then the tests that need the machine alone.
    log_1_4=$(mktemp) log_1_6=$(mktemp)
    run_pipewire_1_4 shared >"$log_1_4" 2>&1 &
    suite_1_4=$!
    run_pipewire_1_6 shared >"$log_1_6" 2>&1 &
    suite_1_6=$!
    # A suite that ended before its tests ran (set -e) recorded nothing: its failure is recorded here.
    wait "$suite_1_4" || echo "PipeWire-1.4-suite 0 1 0 1" >>"$results"
    cat "$log_1_4"
    wait "$suite_1_6" || echo "PipeWire-1.6-suite 0 1 0 1" >>"$results"
    cat "$log_1_6"
    rm -f "$log_1_4" "$log_1_6"
    run_pipewire_1_4 alone
    run_pipewire_1_6 alone
    # The parsers under libFuzzer and AddressSanitizer, FUZZ_SECONDS each from their corpus (60 here;
    # `make fuzz`: 600). Any crash, leak or hang fails the run.
    if FUZZ_SECONDS=${FUZZ_SECONDS:-60} scripts/fuzz.sh; then
        echo "fuzzing 4 0 0 0" >>"$results"
    else
        echo "fuzzing 0 1 0 1" >>"$results"
        echo "fuzzing: scripts/fuzz.sh found a crash, leak or hang (its output above; inputs in .build/fuzz/findings)" >>"$failures"
    fi
    ;;
esac

# One entry per label (a version's live tests may come in two runs), in the order they ended.
passed=0 failed=0 skipped=0 status=0 labels=() each=()
declare -A label_passed label_failed label_skipped
while read -r label suite_passed suite_failed suite_skipped suite_status; do
    [ -n "${label_passed[$label]+set}" ] || { labels+=("$label"); label_passed[$label]=0 label_failed[$label]=0 label_skipped[$label]=0; }
    label_passed[$label]=$((label_passed[$label] + suite_passed))
    label_failed[$label]=$((label_failed[$label] + suite_failed))
    label_skipped[$label]=$((label_skipped[$label] + suite_skipped))
    passed=$((passed + suite_passed)) failed=$((failed + suite_failed)) skipped=$((skipped + suite_skipped))
    [ "$suite_status" -eq 0 ] || status=1
done <"$results"
for label in "${labels[@]}"; do
    each+=("${label//-/ }: ${label_passed[$label]} passed, ${label_failed[$label]} failed, ${label_skipped[$label]} skipped")
done
if [ -s "$failures" ]; then
    echo "run-tests: what failed (the suites' output above has the rest):"
    cat "$failures"
fi
echo "run-tests: $(IFS=';'; echo "${each[*]}" | sed 's/;/; /g')"
echo "tests: $passed passed, $failed failed, $skipped skipped"
exit "$status"
