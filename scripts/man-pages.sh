#!/usr/bin/env bash
# Writes the two man pages into OUTDIR, generated so that they cannot drift from what they describe:
#   pw-convolver.1                        every command's own --help text (from the built binary)
#   libpipewire-module-swift-convolver.7  the module's manual: docs/module.md's sections on the module
# Usage: scripts/man-pages.sh OUTDIR PW_CONVOLVER VERSION   (make man / make install / make deb)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$1 binary=$2 version=$3
mkdir -p "$out"
date=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%d)

# Text as it is (a fenced code block for the translator: escaped, no line taken for a request).
verbatim() { { echo '```'; cat; echo '```'; } | awk -f scripts/markdown-to-man.awk; }
# The manual's section "## TITLE" (up to the next "## "), without its heading, as roff.
manual=docs/module.md
manual_section() { awk -v title="## $1" '$0 == title {on = 1; next} /^## / {on = 0} on' "$manual" | awk -f scripts/markdown-to-man.awk; }

{
    printf '.TH PW-CONVOLVER 1 "%s" "swift-convolver %s" "User Commands"\n' "$date" "$version"
    printf '.SH NAME\npw-convolver \\- zero-latency convolution for PipeWire: run, render, bench, top, inspect, set, status\n'
    printf '.SH SYNOPSIS\n'
    "$binary" --help | sed -n '/^Usage:/,/^$/p' | verbatim
    printf '.SH DESCRIPTION\n'
    printf 'A PipeWire filter node that convolves live audio with impulse responses (reverbs, room and\n'
    printf 'speaker correction, cabinets, true stereo, multichannel) with no added latency; the long\n'
    printf 'partitions run on its own workgroup of real-time helper threads. The same node is a PipeWire\n'
    printf 'module, \\fBlibpipewire-module-swift-convolver\\fR(7), loaded from PipeWire config.\n'
    printf '.SH COMMANDS\n'
    "$binary" --help | sed -n '/^Commands:/,/^$/p' | sed 1d | verbatim
    for command in run render bench top inspect set status; do
        printf '.SS "%s"\n' "$command"
        "$binary" "$command" --help | verbatim
    done
    printf '.SH EXIT STATUS\n0 on success (run: ended by SIGINT or SIGTERM); 1 on an error (a bad IR, PipeWire gone);\n2 on a usage error.\n'
    printf '.SH FILES\n.TP\n\\fI$XDG_CACHE_HOME/swift-convolver/\\fR (\\fI~/.cache/swift-convolver/\\fR)\nFFTW wisdom and the planner'"'"'s machine-cost measurements, kept between runs.\n'
    printf '.TP\n\\fI/usr/share/swift-convolver/\\fR\nready-made PipeWire configs and the README.\n'
    printf '.SH SEE ALSO\n\\fBlibpipewire-module-swift-convolver\\fR(7), \\fBpipewire\\fR(1), \\fBpw-link\\fR(1), \\fBpw-top\\fR(1), \\fBpw-cli\\fR(1)\n'
} >"$out/pw-convolver.1"

{
    printf '.TH LIBPIPEWIRE-MODULE-SWIFT-CONVOLVER 7 "%s" "swift-convolver %s" "PipeWire modules"\n' "$date" "$version"
    printf '.SH NAME\nlibpipewire-module-swift-convolver \\- zero-latency convolver filter node for PipeWire\n'
    printf '.SH DESCRIPTION\n'
    printf 'Convolves live audio with impulse responses with no added latency, for any IR length and any\n'
    printf 'quantum: the first milliseconds of the IR on the data thread, the long tail on the node'"'"'s own\n'
    printf 'workgroup of real-time helper threads. A filter node (ports \\fBinput_<POS>\\fR/\\fBoutput_<POS>\\fR)\n'
    printf 'or a virtual sink. Loaded from PipeWire config as below, or run as a client: \\fBpw-convolver\\fR(1).\n'
    printf '.SH SYNOPSIS\n'
    for section in "Module: \`libpipewire-module-swift-convolver\`" "Sink mode" "Switching from filter-chain" "Live control" "Watching it" "PipeWire 0.3.65, 1.4 and 1.6"; do
        [ -n "$(awk -v title="## $section" '$0 == title' "$manual")" ] || { echo "man-pages: $manual has no section '## $section'" >&2; exit 1; }
        [ "$section" = "Sink mode" ] && printf '.SH "SINK MODE"\n'
        [ "$section" = "Switching from filter-chain" ] && printf '.SH "FILTER-CHAIN CONFIGS"\n'
        [ "$section" = "Live control" ] && printf '.SH "LIVE CONTROL"\n'
        [ "$section" = "Watching it" ] && printf '.SH "MONITORING"\n'
        [ "$section" = "PipeWire 0.3.65, 1.4 and 1.6" ] && printf '.SH "PIPEWIRE VERSIONS"\n'
        manual_section "$section" | sed "s/^Options (keys mean/.SH OPTIONS\n&/"
    done
    printf '.SH FILES\n.TP\n\\fI/usr/share/swift-convolver/*.conf\\fR\nready-made configs: a drop-in example, hall and room-correction sinks, true stereo, cabinets, 7.1 virtual surround.\n'
    printf '.SH SEE ALSO\n\\fBpw-convolver\\fR(1), \\fBpipewire.conf\\fR(5), \\fBlibpipewire-module-filter-chain\\fR(7), \\fBpw-cli\\fR(1)\n'
} >"$out/libpipewire-module-swift-convolver.7"
