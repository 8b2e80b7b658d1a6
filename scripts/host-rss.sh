#!/usr/bin/env bash
# Resident memory of a `pipewire -c` process hosting one convolver (3 s stereo IR) while it
# convolves noise (6 s after the player is linked), ours (the module in MODULE_DIR, default
# .build/dist/release: `make build`) beside filter-chain's. Playing matters: filter-chain builds
# its convolvers only when its capture stream gets a format, so an idle one holds no IR at all.
#   scripts/host-rss.sh [MODULE_DIR]
set -euo pipefail
moddir=${1:-$(cd "$(dirname "$0")/.." && pwd)/.build/dist/release}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap '"$root/scripts/private-pipewire.sh" stop "$work/run"; rm -rf "$work"' EXIT
dir=$work/run
eval "$($root/scripts/private-pipewire.sh start $dir)"
"${PYTHON:-/usr/bin/python3}" -c "
import numpy as np, scipy.io.wavfile as w
r=np.random.default_rng(1); n=144000
ir=(r.standard_normal((n,2))*np.exp(-np.arange(n)/48000*3)[:,None]*0.1).astype(np.float32)
w.write('$work/ir.wav',48000,ir)
w.write('$work/noise.wav',48000,(r.standard_normal((48000*20,2))*0.1).astype(np.float32))"
dsp='adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve }'
# The id of the node named $1.
node_id() { pw-cli ls Node | awk -v name="\"$1\"" '/^\tid /{id=$2} $3 == name {sub(",", "", id); print id}'; }
common='context.properties = { log.level = 2 }
context.spa-libs = { audio.convert.* = audioconvert/libspa-audioconvert support.* = support/libspa-support }
context.modules = [
 { name = libpipewire-module-rt args = { rtkit.enabled = false rtportal.enabled = false } flags = [ ifexists nofail ] }
 { name = libpipewire-module-protocol-native } { name = libpipewire-module-client-node } { name = libpipewire-module-adapter }'
cat > $work/ours.conf <<C
$common
 { name = libpipewire-module-swift-convolver args = { node.name = ours audio.position = [ FL FR ] filename = "$work/ir.wav" } }
]
C
cat > $work/fc.conf <<C
$common
 { name = libpipewire-module-filter-chain args = { node.name = fc audio.channels = 2 audio.position = [ FL FR ]
   filter.graph = { nodes = [
     { type = builtin name = l label = convolver config = { filename = "$work/ir.wav" channel = 0 } }
     { type = builtin name = r label = convolver config = { filename = "$work/ir.wav" channel = 1 } } ]
     inputs = [ "l:In" "r:In" ] outputs = [ "l:Out" "r:Out" ] }
   capture.props = { node.name = fc-in } playback.props = { node.name = fc-out } } }
]
C
for which in ours fc; do
  PIPEWIRE_MODULE_DIR=$moddir:/usr/lib/x86_64-linux-gnu/pipewire-0.3 pipewire -c $work/$which.conf > $work/$which.log 2>&1 &
  pid=$!; sleep 3
  inputs=ours
  if [ $which = fc ]; then
    # Ports for filter-chain's two streams, as a session manager gives them.
    for stream in fc-in:Input fc-out:Output; do
      pw-cli s "$(node_id ${stream%:*})" PortConfig "{ direction: ${stream#*:}, mode: dsp, monitor: false, control: false,
        format: { mediaType: audio, mediaSubtype: raw, format: F32P, rate: 48000, channels: 2, position: [ FL, FR ] } }" > /dev/null
    done
    inputs=fc-in; sleep 1
  fi
  pw-play --properties "{ node.name = play node.autoconnect = false $dsp }" $work/noise.wav &
  player=$!; sleep 1
  for channel in FL FR; do pw-link play:output_$channel $inputs:input_$channel; done
  sleep 6
  echo "$which: $(grep -E 'VmRSS' /proc/$pid/status) $(grep -c -i 'icu\|Foundation' /proc/$pid/maps) icu/foundation maps"
  # Where it is: the largest mappings (kB), heap and files.
  awk '/^[0-9a-f]+-/{name=$6} /^Rss:/{kb[name]+=$2} END{for (n in kb) print kb[n], n}' /proc/$pid/smaps |
    sort -rn | head -5 | sed 's|^|    |'
  kill $player $pid; wait $player $pid 2>/dev/null || true
done
