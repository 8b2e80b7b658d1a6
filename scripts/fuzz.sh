#!/usr/bin/env bash
# The parsers under libFuzzer (Fuzz/FuzzParsers): each target runs FUZZ_SECONDS (default 600) from
# its seed corpus, then prints executions, coverage, corpus size and findings.
#   scripts/fuzz.sh [TARGET...]        (default: every target)
#   scripts/fuzz.sh --build            only builds the fuzzer (run-tests.sh does it at idle priority)
# Seeds: Fuzz/Corpus/TARGET (text, committed), and what is made here: small WAV, FLAC and broken
# audio files from sox, libmysofa's own SOFA file. Findings (crashes, leaks, hangs over 1 s) land in
# .build/fuzz/findings/TARGET; a finding is fixed, then committed to Fuzz/Findings/TARGET, which
# FuzzCorpusTests replays with the plain build in `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-600}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(module-arguments equalizer-apo impulse-response hrtf-set)
work=$PWD/.build/fuzz
mkdir -p "$work"

# Instrumented as -sanitize=fuzzer would, linked with libFuzzer's driver without its main (SwiftPM
# gives executables an entry of their own; the tools it builds on the way keep theirs).
runtime=$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")/lib/clang
runtime=$(ls -d "$runtime"/*/lib/linux | head -n 1)/libclang_rt.fuzzer_no_main-x86_64.a
[ -f "$runtime" ] || { echo "fuzz: no libFuzzer runtime at $runtime" >&2; exit 1; }
swift build --scratch-path "$work/build" -c release --product fuzz-parsers -Xswiftc -DFUZZING \
    -Xswiftc -sanitize=address -Xswiftc -sanitize-coverage=edge,indirect-calls,trace-cmp \
    -Xswiftc -Xllvm -Xswiftc -sanitizer-coverage-inline-8bit-counters -Xswiftc -Xllvm -Xswiftc -sanitizer-coverage-pc-table \
    -Xswiftc -Xllvm -Xswiftc -sanitizer-coverage-trace-pc-guard=false -Xlinker "$runtime" -Xlinker -lstdc++ \
    >"$work.log" 2>&1 || { tail -n 30 "$work.log" >&2; exit 1; }
fuzzer=$(swift build --scratch-path "$work/build" -c release --show-bin-path)/fuzz-parsers
[ "${targets[0]}" = --build ] && exit 0

# The audio seeds: a few frames each, every format and shape the loader meets.
seeds=$work/seeds/impulse-response
if [ ! -d "$seeds" ]; then
    mkdir -p "$seeds"
    sox -n -r 48000 -c 1 -b 16 "$seeds/mono16.wav" synth 0.005 sine 1000
    sox -n -r 44100 -c 2 -e floating-point -b 32 "$seeds/stereo-float.wav" synth 0.005 noise
    sox -n -r 96000 -c 4 -b 24 "$seeds/quad24.wav" synth 0.002 sine 300
    sox -n -r 48000 -c 2 "$seeds/stereo.flac" synth 0.005 sine 500
    sox -n -r 8000 -c 1 -b 8 "$seeds/mono8.aiff" synth 0.01 sine 100
    head -c 60 "$seeds/mono16.wav" >"$seeds/truncated.wav"
    : >"$seeds/empty.wav"
fi
mkdir -p "$work/seeds/hrtf-set"
cp -n /usr/share/libmysofa/default.sofa "$work/seeds/hrtf-set/kemar.sofa" 2>/dev/null || true

status=0
for target in "${targets[@]}"; do
    corpus=$work/corpus/$target findings=$work/findings/$target
    mkdir -p "$corpus" "$findings"
    sources=("$corpus")
    for seed in "Fuzz/Corpus/$target" "$work/seeds/$target" "Fuzz/Findings/$target"; do [ -d "$seed" ] && sources+=("$seed"); done
    log=$work/$target.log
    echo "fuzz: $target for ${seconds} s"
    # -timeout: an input that takes over a second is a hang; -rss_limit_mb: a file that makes the
    # loader take 2 GB is a finding too; leaks are reported (ASan's LeakSanitizer).
    # SWIFT_BACKTRACE off: a trap is reported by libFuzzer and written as a finding at once.
    if ! FUZZ_TARGET=$target SWIFT_BACKTRACE=enable=no "$fuzzer" "${sources[@]}" -max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 \
        -artifact_prefix="$findings/" -print_final_stats=1 >"$log" 2>&1; then
        status=1
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    coverage=$(grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+/[0-9]+[a-zA-Z]*' "$log" | tail -n 1)
    found=$(find "$findings" -type f | wc -l)
    echo "fuzz: $target: ${runs:-?} executions in ${seconds} s, ${coverage:-no coverage line}, findings: $found"
    if [ "$found" -gt 0 ] || [ $status -ne 0 ]; then
        grep -E "ERROR|SUMMARY|Fatal error|deadly signal|Test unit written" "$log" | head -n 20 >&2 || true
        status=1
    fi
done
exit $status
