#!/usr/bin/python3
"""The daemon process's footprint (issue 22, section 4; not a test; run by hand, bench/README.md).

For each libreyolod given (--daemon, and --peer for a second build in the same run, e.g. one
built before a change), --reps times in fresh temp directories (CPU device, a Unix socket):

  serving_s   time from exec to the daemon's "libreyolod: serving on" line (its CPU engine
              worker started and ready: the daemon waits for it);
  rss_mb      the daemon process's VmRSS right after that line, and anon_mb its RssAnon
              (/proc/PID/status; the engine workers are other processes, not counted);
  maps_torch  whether the daemon process maps libtorch (/proc/PID/maps);
  refuse_s    a second copy on the same state and store dirs: time from exec to its exit, and
              its exit code (3: in use, docs/deploy.md "Start-up errors");
  stop_s      SIGTERM to the first copy: time to its exit (code 0).

Prints the medians per binary and, with --peer, the ratios daemon/peer. Exit 1 when a run goes
wrong (no "serving on", a refusal that is not exit code 3, a stop that is not exit code 0).

  python3 bench/daemon_footprint.py --daemon build/server/daemon/libreyolod \\
      --peer /tmp/before/libreyolod --reps 5
"""

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
EXIT_IN_USE = 3


def status_kb(pid, key):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def flags(root):
    dirs = {name: os.path.join(root, name) for name in ("models", "datasets", "images")}
    for d in dirs.values():
        os.makedirs(d, exist_ok=True)
    return ["--listen", "unix:" + os.path.join(root, "d.sock"),
            "--state-dir", os.path.join(root, "state"), "--store-dir", os.path.join(root, "store"),
            "--models-dir", dirs["models"], "--datasets-dir", dirs["datasets"],
            "--images-dir", dirs["images"], "--device", "cpu", "--threads", "1"]


def one_run(binary, timeout):
    root = tempfile.mkdtemp(prefix="libreyolo-footprint-")
    try:
        args = flags(root)
        log_path = os.path.join(root, "daemon.log")
        with open(log_path, "wb") as log:
            t0 = time.monotonic()
            first = subprocess.Popen([binary] + args, stdout=log, stderr=subprocess.STDOUT)
            serving_s = None
            while time.monotonic() - t0 < timeout and first.poll() is None:
                with open(log_path, "rb") as f:
                    if b"libreyolod: serving on" in f.read():
                        serving_s = time.monotonic() - t0
                        break
                time.sleep(0.005)
            if serving_s is None:
                first.kill()
                first.wait()
                with open(log_path, "rb") as f:
                    raise RuntimeError(f"{binary}: no 'serving on' within {timeout} s:\n"
                                       + f.read().decode(errors="replace")[-2000:])
            rss_mb = status_kb(first.pid, "VmRSS") / 1024
            anon_mb = status_kb(first.pid, "RssAnon") / 1024
            with open(f"/proc/{first.pid}/maps") as f:
                maps_torch = "libtorch" in f.read()
            # A second copy on the same directories (its own socket): refused as in use.
            second_args = list(args)
            second_args[1] = "unix:" + os.path.join(root, "second.sock")
            t1 = time.monotonic()
            second = subprocess.run([binary] + second_args, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, timeout=timeout)
            refuse_s = time.monotonic() - t1
            if second.returncode != EXIT_IN_USE:
                raise RuntimeError(f"{binary}: the second copy exited {second.returncode}, not "
                                   f"{EXIT_IN_USE}: {second.stderr.decode(errors='replace')}")
            t2 = time.monotonic()
            first.send_signal(signal.SIGTERM)
            code = first.wait(timeout=timeout)
            stop_s = time.monotonic() - t2
            if code != 0:
                raise RuntimeError(f"{binary}: SIGTERM exit code {code}")
        return {"serving_s": serving_s, "rss_mb": rss_mb, "anon_mb": anon_mb,
                "maps_torch": maps_torch, "refuse_s": refuse_s, "stop_s": stop_s}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def row(name, m):
    return (f"{name:<44} serving {m['serving_s']:6.2f} s  rss {m['rss_mb']:7.1f} MB  "
            f"anon {m['anon_mb']:6.1f} MB  libtorch {'mapped' if m['maps_torch'] else 'no':<6}  "
            f"refuse {m['refuse_s']:6.3f} s  stop {m['stop_s']:5.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--daemon", default=os.path.join(ROOT, "build/server/daemon/libreyolod"))
    ap.add_argument("--peer", help="a second libreyolod measured in the same run")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=120)
    a = ap.parse_args()
    binaries = [a.daemon] + ([a.peer] if a.peer else [])
    results = {}
    try:
        # Interleaved, so load that changes during the run falls on both alike.
        for _ in range(a.reps):
            for b in binaries:
                results.setdefault(b, []).append(one_run(b, a.timeout))
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print(f"daemon_footprint: {e}", file=sys.stderr)
        return 1
    meds = {}
    for b, runs in results.items():
        meds[b] = {k: statistics.median(r[k] for r in runs)
                   for k in ("serving_s", "rss_mb", "anon_mb", "refuse_s", "stop_s")}
        meds[b]["maps_torch"] = all(r["maps_torch"] for r in runs)
    print(f"medians of {a.reps} runs each, {os.cpu_count()} cores")
    for b in binaries:
        print(row(b, meds[b]))
    if a.peer:
        d, p = meds[a.daemon], meds[a.peer]
        print("ratios daemon/peer: " + "  ".join(
            f"{k} {d[k] / p[k]:.3f}" for k in ("serving_s", "rss_mb", "anon_mb", "refuse_s",
                                               "stop_s") if p[k] > 0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
