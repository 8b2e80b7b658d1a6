#!/usr/bin/python3
"""Soak test (`make soak`; not in CI): the convolver module in a `pipewire -c` client process on a
private headless daemon, quantum 256, a generated 10 s stereo IR, noise played through it for
10 minutes (SOAK_SECONDS). Prints, from the node's own statistics (node properties) and /proc:
late cycles the node's own work caused and late levels over the run (goal 0; late cycles that
started late, the call itself shorter than the period, are counted apart: the graph before the node
or the machine delayed them), the hosting process's RSS at start and end
(goal: growth < 1 MB) and the helpers' deadline margin p99 (sampled every 10 s).

Needs a release build: swift build -c release (or SWIFT_CONVOLVER_BUILD_DIR).
Exit status 1 if a goal is missed, so it can gate a release.
"""
import json, os, shutil, signal, subprocess, sys, tempfile, time

import numpy as np
from scipy.io import wavfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("SWIFT_CONVOLVER_BUILD_DIR", os.path.join(ROOT, ".build", "release"))
SECONDS = float(os.environ.get("SOAK_SECONDS", "600"))
QUANTUM = int(os.environ.get("SOAK_QUANTUM", "256"))
RATE = 48000
NODE = "soak-convolver"
POSITIONS = ["FL", "FR"]
STREAM = "{ node.name = %s node.want-driver = false adapter.auto-port-config = { mode = dsp monitor = false control = false position = preserve } }"


def main():
    module = os.path.join(BUILD, "libpipewire-module-swift-convolver.so")
    if not os.path.exists(module):
        sys.exit(f"soak: {module} missing: run `swift build -c release` first")
    work = tempfile.mkdtemp(prefix="swconv-soak-")
    os.chmod(work, 0o700)
    env = dict(os.environ, XDG_RUNTIME_DIR=work, SWIFT_BACKTRACE="enable=no",
               PIPEWIRE_MODULE_DIR=BUILD + ":/usr/lib/x86_64-linux-gnu/pipewire-0.3")
    env.pop("PIPEWIRE_REMOTE", None)
    processes = []

    def spawn(args, log):
        p = subprocess.Popen(args, env=env, stdout=open(os.path.join(work, log), "w"), stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL)
        processes.append(p)
        return p

    def run(args, timeout=15):
        return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)

    def node_props(name):
        for obj in json.loads(run(["pw-dump", "-N"]).stdout or "[]"):
            props = (obj.get("info") or {}).get("props") or {}
            if obj.get("type") == "PipeWire:Interface:Node" and props.get("node.name") == name:
                return props
        return None

    def ports(name):
        objs = json.loads(run(["pw-dump", "-N"]).stdout or "[]")
        ids = [o["id"] for o in objs if o.get("type") == "PipeWire:Interface:Node"
               and ((o.get("info") or {}).get("props") or {}).get("node.name") == name]
        return [o for o in objs if o.get("type") == "PipeWire:Interface:Port" and ids
                and ((o.get("info") or {}).get("props") or {}).get("node.id") == ids[0]]

    def wait_ports(name, count, timeout=30):
        end = time.time() + timeout
        while time.time() < end:
            if len(ports(name)) >= count:
                return
            time.sleep(0.2)
        raise SystemExit(f"soak: node {name} has no ports after {timeout} s (logs in {work})")

    def rss_kib(pid):
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return -1

    try:
        shutil.copy(os.path.join(ROOT, "pipewire-conf", "headless-daemon.conf"), os.path.join(work, "daemon.conf"))
        spawn(["pipewire", "-c", os.path.join(work, "daemon.conf")], "pipewire.log")
        for _ in range(200):
            if os.path.exists(os.path.join(work, "pipewire-0")):
                break
            time.sleep(0.05)
        run(["pw-metadata", "-n", "settings", "0", "clock.force-quantum", str(QUANTUM)])

        # A 10 s stereo IR: exponentially decaying noise (RT60 ~ 8 s), different per channel.
        rng = np.random.default_rng(5)
        t = np.arange(10 * RATE) / RATE
        ir = (rng.standard_normal((len(t), 2)) * 0.05 * np.exp(-t * 6.9 / 8)[:, None]).astype(np.float32)
        ir[0] += 0.5
        wavfile.write(os.path.join(work, "ir10s.wav"), RATE, ir)
        # Input: mono 16-bit noise for the whole run (linked to both channels).
        frames = int((SECONDS + 20) * RATE)
        noise = (rng.uniform(-0.25, 0.25, frames) * 32767).astype(np.int16)
        wavfile.write(os.path.join(work, "noise.wav"), RATE, noise)
        del noise

        client_conf = os.path.join(work, "client.conf")
        with open(client_conf, "w") as f:
            f.write("""context.properties = { log.level = 2 }
context.spa-libs = { audio.convert.* = audioconvert/libspa-audioconvert support.* = support/libspa-support }
context.modules = [
  { name = libpipewire-module-rt args = { rtkit.enabled = false rtportal.enabled = false } flags = [ ifexists nofail ] }
  { name = libpipewire-module-protocol-native }
  { name = libpipewire-module-client-node }
  { name = libpipewire-module-adapter }
  { name = libpipewire-module-swift-convolver args = { node.name = %s audio.position = [ FL FR ] filename = "%s" } }
]
""" % (NODE, os.path.join(work, "ir10s.wav")))
        host = spawn(["pipewire", "-c", client_conf], "client.log")
        wait_ports(NODE, 4)

        recorder = spawn(["pw-record", "-P", STREAM % "soak-rec", "--format", "f32", "--rate", str(RATE),
                          "--channels", "2", "--channel-map", "FL,FR", "/dev/null"], "rec.log")
        wait_ports("soak-rec", 2)
        for p in POSITIONS:
            run(["pw-link", f"{NODE}:output_{p}", f"soak-rec:input_{p}"])
        player = spawn(["pw-play", "-P", STREAM % "soak-play", os.path.join(work, "noise.wav")], "play.log")
        wait_ports("soak-play", 1)
        out = [o["info"]["props"]["port.name"] for o in ports("soak-play") if o["info"]["props"].get("port.direction") == "out"]
        for p in POSITIONS:
            run(["pw-link", f"soak-play:{out[0]}", f"{NODE}:input_{p}"])

        time.sleep(10)  # warm-up: first cycles, wisdom, page faults
        start = node_props(NODE)
        rss_start = rss_kib(host.pid)
        margins = []
        t0 = time.time()
        print(f"soak: {SECONDS:.0f} s at quantum {QUANTUM}, 10 s stereo IR, plan {start.get('convolver.plan')}, "
              f"host pid {host.pid}, RSS {rss_start} KiB", flush=True)
        while time.time() - t0 < SECONDS:
            time.sleep(10)
            props = node_props(NODE) or {}
            margin = props.get("convolver.helper-margin-p99-us")
            if margin not in (None, "none"):
                margins.append(float(margin))
            if int(time.time() - t0) % 60 < 10:
                print(f"  {time.time() - t0:4.0f} s: late cycles {props.get('convolver.late-cycles')} (started late "
                      f"{props.get('convolver.late-cycles-started-late')}), late levels "
                      f"{props.get('convolver.late-levels')}, helper margin p99 {margin} µs, busy p99 "
                      f"{props.get('convolver.busy-p99-us')} µs, RSS {rss_kib(host.pid)} KiB", flush=True)
            if host.poll() is not None or player.poll() is not None:
                raise SystemExit(f"soak: a process ended early (host {host.poll()}, player {player.poll()}); logs in {work}")
        end = node_props(NODE)
        rss_end = rss_kib(host.pid)
        def grown(key):
            return int(end[key]) - int(start[key])
        late_cycles = grown("convolver.late-cycles")
        started_late = grown("convolver.late-cycles-started-late")
        own_late_cycles = grown("convolver.late-cycles-own")
        stalled = grown("convolver.late-cycles-stalled")
        late_levels = grown("convolver.late-levels")
        calls = grown("convolver.calls")
        growth = rss_end - rss_start
        print("soak result:")
        print(f"  calls {calls}, late cycles {late_cycles}: {own_late_cycles} from the node's own work (goal 0), "
              f"{started_late} started late, {stalled} stalled by the machine, the rest preempted midway; "
              f"late levels {late_levels} (goal 0)")
        print(f"  RSS start {rss_start} KiB, end {rss_end} KiB, growth {growth} KiB (goal < 1024)")
        if margins:
            print(f"  helper deadline margin p99 (convolver.helper-margin-p99-us, sampled every 10 s): min {min(margins):.1f} µs, "
                  f"median {float(np.median(margins)):.1f} µs, last {margins[-1]:.1f} µs")
        print(f"  busy p99 {end.get('convolver.busy-p99-us')} µs, max {end.get('convolver.busy-max-us')} µs (last window)")
        ok = own_late_cycles == 0 and late_levels == 0 and growth < 1024
        print("soak: " + ("all goals met" if ok else "GOAL MISSED"))
        return 0 if ok else 1
    finally:
        for p in reversed(processes):
            if p.poll() is None:
                p.send_signal(signal.SIGINT if p is not processes[0] else signal.SIGTERM)
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
        if os.environ.get("SWIFT_CONVOLVER_KEEP_TEST_FILES") is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"soak: files kept in {work}")


if __name__ == "__main__":
    sys.exit(main())
