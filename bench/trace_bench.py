#!/usr/bin/env python3
"""Speed benchmark of the C++ trace analyser against the Python peer and the bare-parse floor.

    python3 bench/trace_bench.py                 # S = 256 MiB and 2S = 512 MiB, 3 reps
    python3 bench/trace_bench.py --quick         # S = 16 MiB (a minute or so)
    python3 bench/trace_bench.py --size-mb 64 --reps 5 --json /tmp/bench.json

Contenders (each run as a child process; wall time = perf_counter around it, peak RSS = the
ru_maxrss that os.wait4 returns for that child):
  ours     build/client/libreyolo profile summary --json TRACE      (simdjson reader, igzip)
  old      build/bench/trace_analyse --parser=rapidjson TRACE        (the RapidJSON reader it replaced)
  peer     python3 tests/oracle/trace_oracle.py TRACE          (json.load, like the Python profiler)
  floor    build/bench/trace_parse_floor TRACE                  (bare RapidJSON SAX parse, counts only)
  inflate  build/bench/trace_analyse --inflate-only TRACE.gz    (--gzip only: igzip inflation alone)
  prev     PREV profile summary --json TRACE  (--prev PREV only: an earlier build of the analyser,
           e.g. the commit before a change, run like ours on every trace: before/after, same run)
With --gzip, ours, old and inflate also run on S gzip-compressed (gzip -1, label Sgz).
A contender whose program is missing is reported as "missing" and skipped. Traces are made by
bench/make_big_trace.py and cached in --work-dir. See bench/README.md for what the numbers mean.
Sizes are MiB (2^20 bytes) throughout.
"""

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIB = 1 << 20
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no bench/__pycache__
import make_big_trace  # noqa: E402

TARGETS = {
    "peer_over_ours": (">=", 15.0),
    "ours_mb_per_s": (">=", 1000.0),
    "old_over_ours": (">=", 1.0),
    "ours_gz_over_inflate": ("<=", 1.1),
    "ours_over_floor": ("<=", 3.0),
    "ours_peak_over_size": ("<=", 0.5),
    "ours_time_2s_over_s": ("<=", 2.2),
}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=256, help="S in MiB; traces of S and 2S (default 256)")
    ap.add_argument("--quick", action="store_true", help="S = 16 MiB")
    ap.add_argument("--reps", type=int, default=3, help="runs per size for ours and the floor (default 3)")
    ap.add_argument("--peer-reps", type=int, default=1, help="runs per size for the Python peer (default 1)")
    ap.add_argument("--peer-sizes", choices=["2S", "S", "both", "none"], default="2S",
                    help="sizes the peer runs at (default 2S)")
    ap.add_argument("--work-dir", default="/tmp/libreyolo-bench", help="trace cache and run outputs")
    ap.add_argument("--regen", action="store_true", help="regenerate traces even if cached")
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--ours", help="analyser binary (default BUILD/client/libreyolo)")
    ap.add_argument("--floor", help="floor binary (default BUILD/bench/trace_parse_floor)")
    ap.add_argument("--tool", help="trace_analyse binary, the old reader and the inflate floor"
                                   " (default BUILD/bench/trace_analyse)")
    ap.add_argument("--gzip", action="store_true",
                    help="also time ours, old and igzip inflation alone on S gzip-compressed")
    ap.add_argument("--prev", help="an earlier build of BUILD/client/libreyolo (another worktree's),"
                                   " timed like ours as 'prev' (before/after in the same run)")
    ap.add_argument("--peer", default=os.path.join(ROOT, "tests", "oracle", "trace_oracle.py"))
    ap.add_argument("--python", default=sys.executable or "python3", help="interpreter for the peer")
    ap.add_argument("--source", default=make_big_trace.DEFAULT_SOURCE, help="trace to replicate")
    ap.add_argument("--timeout", type=float, default=600,
                    help="seconds per run of ours/floor; killed after (default 600)")
    ap.add_argument("--peer-timeout", type=float, default=600,
                    help="seconds per peer run; a peer killed at the limit still gives a lower bound"
                         " on peer/ours (default 600)")
    ap.add_argument("--json", metavar="FILE", help="also write the results as JSON to FILE")
    ap.add_argument("--strict", action="store_true", help="exit 1 if a target is missed")
    a = ap.parse_args()
    if a.quick:
        a.size_mb = 16
    if a.size_mb <= 0 or a.size_mb > 8192:
        ap.error("--size-mb must be in (0, 8192]")
    if a.reps < 1 or a.reps > 50 or a.peer_reps < 0 or a.peer_reps > 50:
        ap.error("--reps must be 1..50 and --peer-reps 0..50")
    a.ours = a.ours or os.path.join(a.build_dir, "client", "libreyolo")
    a.floor = a.floor or os.path.join(a.build_dir, "bench", "trace_parse_floor")
    a.tool = a.tool or os.path.join(a.build_dir, "bench", "trace_analyse")
    return a


# ---------------------------------------------------------------- traces

def trace_key(source, size_mb, copies):
    h = hashlib.sha256()
    with open(os.path.join(HERE, "make_big_trace.py"), "rb") as f:
        h.update(f.read())
    st = os.stat(source)
    h.update(("%s|%d|%d|%r|%r" % (os.path.abspath(source), st.st_size, int(st.st_mtime), size_mb,
                                  copies)).encode())
    return h.hexdigest()[:16]


def get_trace(work_dir, source, size_mb, regen, copies=None):
    """Return the generator's info dict for a trace of size_mb (or of exactly `copies` copies of
    the source's steps), generating it if not cached."""
    name = ("trace_%gmb" % size_mb) + ("_%dcopies" % copies if copies else "")
    path = os.path.join(work_dir, name + ".json")
    meta_path = os.path.join(work_dir, name + ".meta.json")
    key = trace_key(source, size_mb, copies)
    if not regen and os.path.exists(path) and os.path.exists(meta_path):
        try:
            with open(meta_path) as f:
                meta = json.load(f)
            if meta.get("key") == key and meta.get("bytes") == os.path.getsize(path):
                print("trace %s: cached (%.1f MiB)" % (path, meta["bytes"] / MIB), flush=True)
                return meta
        except (OSError, ValueError):
            pass
    print("trace %s: generating ..." % path, end=" ", flush=True)
    t0 = time.perf_counter()
    meta = make_big_trace.generate(source, path, size_mb, quiet=True, copies_wanted=copies)
    meta["key"] = key
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    print("%.1f MiB in %.1f s" % (meta["bytes"] / MIB, time.perf_counter() - t0), flush=True)
    return meta


def get_gzip(meta):
    """S gzip-compressed (gzip -1, cached next to it): the generator's info dict for it."""
    import gzip
    import shutil
    path = meta["path"] + ".gz"
    if not (os.path.exists(path) and os.path.getmtime(path) >= os.path.getmtime(meta["path"])):
        print("trace %s: compressing ..." % path, end=" ", flush=True)
        with open(meta["path"], "rb") as src, gzip.open(path + ".tmp", "wb", compresslevel=1) as dst:
            shutil.copyfileobj(src, dst, MIB)
        os.replace(path + ".tmp", path)
        print("%.1f MiB" % (os.path.getsize(path) / MIB), flush=True)
    gz = dict(meta)
    gz["path"] = path
    gz["compressed_bytes"] = os.path.getsize(path)
    return gz


def warm_page_cache(path):
    buf = bytearray(MIB)
    with open(path, "rb", buffering=0) as f:
        while f.readinto(buf):
            pass


# ---------------------------------------------------------------- running

# The child is forked by this small launcher (a fresh `python3 -S -I`, ~8 MiB) rather than by this
# script: on Linux a child's ru_maxrss starts from the memory of the process that forked it
# (vfork/posix_spawn: that process's peak), so spawning from here would add this script's ~20 MiB
# to every reading. From the launcher the reading of `/bin/true` is ~5 MiB (see spawn_baseline).
LAUNCHER = r"""
import os, sys, time, signal
res, timeout, cmd = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
killed = []
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        os.write(2, ("exec %s: %s\n" % (cmd[0], e)).encode())
    os._exit(127)
def on_alarm(signum, frame):
    try:
        os.kill(pid, signal.SIGKILL)
        killed.append(1)
    except OSError:  # it had just exited
        pass
signal.signal(signal.SIGALRM, on_alarm)
signal.setitimer(signal.ITIMER_REAL, timeout)
_, status, ru = os.wait4(pid, 0)
wall = time.perf_counter() - t0
signal.setitimer(signal.ITIMER_REAL, 0)
with open(res, "w") as f:
    f.write("%r %d %d %d %r\n" % (wall, ru.ru_maxrss, os.waitstatus_to_exitcode(status), len(killed),
                                 ru.ru_utime + ru.ru_stime))
"""


def run_once(cmd, timeout, out_path, err_path, python):
    """Run cmd; return dict(status, wall_s, peak_rss_mib, rc)."""
    res_path = out_path + ".rusage"
    if os.path.exists(res_path):
        os.remove(res_path)
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        p = subprocess.Popen([python, "-S", "-I", "-c", LAUNCHER, res_path, repr(timeout)] + cmd,
                             stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        try:
            p.wait(timeout + 60)
        except subprocess.TimeoutExpired:  # the launcher itself hung; should not happen
            p.kill()
            p.wait()
            return {"status": "timeout"}
    try:
        with open(res_path) as f:
            wall, maxrss_kib, rc, killed, cpu = f.read().split()
    except (OSError, ValueError):
        return {"status": "error", "error": "launcher failed (rc %s)" % p.returncode}
    rc = int(rc)
    r = {"wall_s": float(wall), "peak_rss_mib": int(maxrss_kib) / 1024.0, "rc": rc,
         "cpu_s": float(cpu)}
    if int(killed):
        r["status"] = "timeout"
    elif rc != 0:
        r["status"] = "failed"
        with open(err_path, "rb") as f:
            r["stderr_tail"] = f.read()[-400:].decode("utf-8", "replace")
    else:
        r["status"] = "ok"
    return r


def spawn_baseline(work_dir, python):
    """Peak RSS that a do-nothing child reads through the launcher: readings at or below it are
    upper bounds, not measurements."""
    true = "/bin/true" if os.path.exists("/bin/true") else "true"
    r = run_once([true], 30, os.path.join(work_dir, "out_baseline.txt"),
                 os.path.join(work_dir, "err_baseline.txt"), python)
    return r.get("peak_rss_mib", 0.0) if r["status"] == "ok" else 0.0


def find_key(obj, key, depth=0):
    if depth > 4:
        return None
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = find_key(v, key, depth + 1)
            if r is not None:
                return r
    return None


def check_output(name, out_path, expect_steps):
    """A light sanity check of what the contender printed: JSON, and real_steps if present."""
    if name in ("floor", "inflate"):
        return None
    try:
        with open(out_path, "rb") as f:
            data = json.loads(f.read())
    except (OSError, ValueError):
        return "output is not JSON"
    steps = find_key(data, "real_steps")
    if steps is not None and expect_steps and steps != expect_steps:
        return "real_steps %s, expected %d" % (steps, expect_steps)
    return None


# ---------------------------------------------------------------- reporting

def fmt(v, spec="%.3f"):
    return "-" if v is None else spec % v


def verdict(name, value):
    if value is None:
        return "n/a"
    op, target = TARGETS[name]
    ok = value >= target if op == ">=" else value <= target
    return "PASS" if ok else "MISS"


def main():
    a = parse_args()
    os.makedirs(a.work_dir, exist_ok=True)
    S = a.size_mb
    traces = {"S": get_trace(a.work_dir, a.source, S, a.regen)}
    # 2S = exactly twice the copies of S, so the two traces differ by 2x in content, not ~2x
    traces["2S"] = get_trace(a.work_dir, a.source, 2 * S, a.regen, copies=2 * traces["S"]["copies"])
    labels = ["S", "2S"]
    if a.gzip:
        traces["Sgz"] = get_gzip(traces["S"])
        labels.append("Sgz")

    contenders = {
        "ours": {"cmd": [a.ours, "profile", "summary", "--json"], "exe": a.ours},
        "peer": {"cmd": [a.python, a.peer], "exe": a.peer},
        "floor": {"cmd": [a.floor], "exe": a.floor},
        "old": {"cmd": [a.tool, "--parser=rapidjson"], "exe": a.tool},
        "inflate": {"cmd": [a.tool, "--inflate-only"], "exe": a.tool},
    }
    if a.prev:
        contenders["prev"] = {"cmd": [a.prev, "profile", "summary", "--json"], "exe": a.prev}
    if not a.gzip:
        del contenders["inflate"]
    missing = {}
    for name, c in contenders.items():
        exe = c["exe"]
        if not os.path.isfile(exe):
            missing[name] = exe
        elif name != "peer" and not os.access(exe, os.X_OK):
            missing[name] = exe + " (not executable)"
    for name, exe in missing.items():
        print("%-7s missing: %s (skipped)" % (name, exe), flush=True)

    peer_labels = {"2S": ["2S"], "S": ["S"], "both": ["S", "2S"], "none": []}[a.peer_sizes]
    plan = []  # (label, name), interleaved so machine noise spreads over all contenders
    for rep in range(a.reps):
        for lab in ("S", "2S"):
            for name in ("floor", "ours", "prev", "old"):
                plan.append((lab, name))
        if a.gzip:
            for name in ("inflate", "ours", "prev", "old"):
                plan.append(("Sgz", name))
    for rep in range(a.peer_reps):
        for lab in peer_labels:
            plan.append((lab, "peer"))
    plan = [(lab, n) for lab, n in plan if n in contenders and n not in missing]

    baseline = spawn_baseline(a.work_dir, a.python)
    print("spawn baseline: a do-nothing child reads %.1f MiB peak RSS (readings at or below it are"
          " upper bounds)" % baseline, flush=True)

    runs = []
    warmed = set()
    for i, (lab, name) in enumerate(plan):
        tr = traces[lab]
        if lab not in warmed:
            warm_page_cache(tr["path"])
            warmed.add(lab)
        out_path = os.path.join(a.work_dir, "out_%s_%s.txt" % (name, lab))
        err_path = os.path.join(a.work_dir, "err_%s_%s.txt" % (name, lab))
        cmd = contenders[name]["cmd"] + [tr["path"]]
        print("[%d/%d] %-7s %-3s (%.0f MiB) ..." % (i + 1, len(plan), name, lab, tr["bytes"] / MIB),
              end=" ", flush=True)
        r = run_once(cmd, a.peer_timeout if name == "peer" else a.timeout, out_path, err_path,
                     a.python)
        if r["status"] == "ok":
            note = check_output(name, out_path, tr.get("steps"))
            if note == "output is not JSON":  # not an answer: the run does not count
                r["status"] = "bad-output"
            elif note:
                r["note"] = note
        r.update({"contender": name, "size": lab, "bytes": tr["bytes"]})
        runs.append(r)
        if r["status"] == "ok":
            print("%.3f s, %.0f MiB%s" % (r["wall_s"], r["peak_rss_mib"],
                                        ("  [" + r["note"] + "]") if r.get("note") else ""), flush=True)
        elif r["status"] == "timeout" and "wall_s" in r:
            print("killed at the time limit, %.1f s (%.0f MiB so far)" % (
                r["wall_s"], r.get("peak_rss_mib", 0)), flush=True)
        else:
            print(r["status"] + (" (rc %d)" % r["rc"] if r["status"] == "failed" else ""),
                  (r.get("stderr_tail") or r.get("error") or "").strip()[-200:], flush=True)

    # summary rows
    rows = []
    stat = {}
    for name in ("ours", "prev", "old", "peer", "floor", "inflate"):
        if name not in contenders:
            continue
        for lab in labels:
            tr = traces[lab]
            size_mib = tr["bytes"] / MIB
            rs = [r for r in runs if r["contender"] == name and r["size"] == lab]
            ok = [r for r in rs if r["status"] == "ok"]
            late = [r for r in rs if r["status"] == "timeout" and "wall_s" in r]
            row = {"contender": name, "size": lab, "size_mib": size_mib, "runs": len(ok)}
            if name in missing:
                row["status"] = "missing"
            elif not rs:
                continue
            elif not ok and late:  # killed at the limit: its time is a lower bound
                t = max(r["wall_s"] for r in late)
                peak = max(r["peak_rss_mib"] for r in late)
                row.update({"status": "timeout", "time_is_lower_bound": True, "median_s": t, "min_s": t,
                            "mib_per_s": size_mib / t, "peak_rss_mib": peak,
                            "peak_over_size": peak / size_mib})
                if name == "peer":  # only the peer's bound feeds a ratio (peer/ours >= bound)
                    stat[(name, lab)] = row
            elif not ok:
                last = rs[-1]
                row["status"] = last["status"] + (" (rc %d)" % last["rc"] if last["status"] == "failed" else "")
            else:
                med = statistics.median(r["wall_s"] for r in ok)
                peak = max(r["peak_rss_mib"] for r in ok)
                row.update({"status": "ok", "median_s": med, "min_s": min(r["wall_s"] for r in ok),
                            "median_cpu_s": statistics.median(r["cpu_s"] for r in ok),
                            "mib_per_s": size_mib / med if med > 0 else None,
                            "peak_rss_mib": peak, "peak_over_size": peak / size_mib})
                notes = sorted({r["note"] for r in ok if r.get("note")})
                if notes:
                    row["note"] = "; ".join(notes)
                if peak <= baseline + 0.5:
                    row["peak_is_upper_bound"] = True
                stat[(name, lab)] = row
            rows.append(row)
            if name in missing:
                break

    print()
    hdr = "%-7s %-3s %9s %5s %9s %9s %9s %9s %12s %10s  %s" % (
        "", "", "size MiB", "runs", "median s", "min s", "MiB/s", "cpu s", "peak RSS MiB", "peak/size", "")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        if r["status"] == "missing":
            print("%-7s %-3s %9s %5s %9s" % (r["contender"], "", "", "", "missing"))
            continue
        if r["status"] not in ("ok", "timeout") or "median_s" not in r:
            print("%-7s %-3s %9.1f %5d  %s" % (r["contender"], r["size"], r["size_mib"], 0, r["status"]))
            continue
        le = "<=" if r.get("peak_is_upper_bound") else ""
        lb = r.get("time_is_lower_bound")
        print("%-7s %-3s %9.1f %5d %9s %9s %9s %9s %12s %10s  %s" % (
            r["contender"], r["size"], r["size_mib"], r["runs"],
            (">" if lb else "") + "%.3f" % r["median_s"], (">" if lb else "") + "%.3f" % r["min_s"],
            ("<" if lb else "") + "%.1f" % r["mib_per_s"],
            "%.3f" % r["median_cpu_s"] if "median_cpu_s" in r else "-",
            le + "%.1f" % r["peak_rss_mib"], le + "%.3f" % r["peak_over_size"],
            "killed at the time limit" if lb else r.get("note", "")))

    # ratios
    def at_largest(num, den, key="median_s"):
        for lab in ("2S", "S"):
            if (num, lab) in stat and (den, lab) in stat:
                return stat[(num, lab)][key] / stat[(den, lab)][key], lab
        return None, None

    ratios = {}
    v, lab = at_largest("peer", "ours")
    ratios["peer_over_ours"] = {"value": v, "at": lab}
    if lab and stat[("peer", lab)].get("time_is_lower_bound"):
        ratios["peer_over_ours"]["lower_bound"] = True
    v, lab = at_largest("ours", "floor")
    ratios["ours_over_floor"] = {"value": v, "at": lab}
    v, lab = at_largest("old", "ours")
    ratios["old_over_ours"] = {"value": v, "at": lab}
    ratios["ours_mb_per_s"] = {"value": None}
    for lab in ("2S", "S"):
        if ("ours", lab) in stat:
            ratios["ours_mb_per_s"] = {"value": traces[lab]["bytes"] / 1e6 / stat[("ours", lab)]["median_s"],
                                       "at": lab}
            break
    ratios["ours_gz_over_inflate"] = {"value": None}
    if ("ours", "Sgz") in stat and ("inflate", "Sgz") in stat:
        ratios["ours_gz_over_inflate"] = {
            "value": stat[("ours", "Sgz")]["median_s"] / stat[("inflate", "Sgz")]["median_s"], "at": "Sgz"}
    peaks = [(stat[("ours", l)]["peak_over_size"], l) for l in ("S", "2S") if ("ours", l) in stat]
    v, lab = max(peaks) if peaks else (None, None)
    ratios["ours_peak_over_size"] = {"value": v, "at": lab}
    if lab and stat[("ours", lab)].get("peak_is_upper_bound"):
        ratios["ours_peak_over_size"]["upper_bound"] = True
    bytes_ratio = traces["2S"]["bytes"] / traces["S"]["bytes"]
    for name, key in (("ours", "ours_time_2s_over_s"), ("floor", "floor_time_2s_over_s")):
        if (name, "S") in stat and (name, "2S") in stat:
            raw = stat[(name, "2S")]["median_s"] / stat[(name, "S")]["median_s"]
            ratios[key] = {"value": raw * 2.0 / bytes_ratio, "raw": raw, "bytes_ratio": bytes_ratio}
        else:
            ratios[key] = {"value": None}

    print()
    lines = [
        ("peer_over_ours", "peer time / ours time", "at %s"),
        ("ours_over_floor", "ours time / floor time", "at %s"),
        ("old_over_ours", "old time / ours time", "at %s"),
        ("ours_mb_per_s", "ours MB/s (10^6 bytes)", "at %s"),
        ("ours_gz_over_inflate", "ours time / inflate time", "at %s (gzip)"),
        ("ours_peak_over_size", "ours peak RSS / trace size", "worst, at %s"),
        ("ours_time_2s_over_s", "ours time(2S) / time(S)", None),
    ]
    for key, label, where in lines:
        r = ratios[key]
        op, target = TARGETS[key]
        r["target"] = "%s %g" % (op, target)
        r["verdict"] = verdict(key, r["value"])
        extra = ""
        if where and r.get("at"):
            extra = where % r["at"]
        if r.get("lower_bound"):
            extra += "; a lower bound (peer killed at --peer-timeout)"
            if r["verdict"] == "MISS":
                r["verdict"] = "n/a"
        if r.get("upper_bound"):
            extra += "; an upper bound (at the spawn baseline)"
            if r["verdict"] == "MISS":
                r["verdict"] = "n/a"
                extra += ", use a larger --size-mb"
        if "raw" in r:
            extra = "scaled to exactly 2x bytes; raw %.3f, bytes x%.3f" % (r["raw"], r["bytes_ratio"])
        if r["value"] is None:
            miss = [n for n in ("ours", "old", "peer", "floor", "inflate")
                    if n in key.split("_") and n in missing]
            extra = ("missing: " + ", ".join(miss)) if miss else "not measured"
        shown = fmt(r["value"], "%.2f")
        if r["value"] is not None and (r.get("lower_bound") or r.get("upper_bound")):
            shown = (">" if r.get("lower_bound") else "<=") + shown
        print("%-28s %8s   target %-6s %-4s  %s" % (label, shown, r["target"],
                                                    r["verdict"], extra))
    for lab in labels:  # before/after: not a target
        if ("prev", lab) in stat and ("ours", lab) in stat:
            p, o = stat[("prev", lab)], stat[("ours", lab)]
            ratios["prev_over_ours_" + lab] = {"value": p["median_s"] / o["median_s"],
                                               "cpu": p["median_cpu_s"] / o["median_cpu_s"]}
            print("%-28s %8.2f   (CPU seconds %.2f) at %s" % (
                "prev time / ours time", ratios["prev_over_ours_" + lab]["value"],
                ratios["prev_over_ours_" + lab]["cpu"], lab))
    f = ratios["floor_time_2s_over_s"]
    if f["value"] is not None:
        print("%-28s %8.2f   (reference: how linear the machine itself is)" % (
            "floor time(2S) / time(S)", f["value"]))

    result = {
        "config": {k: getattr(a, k) for k in ("size_mb", "reps", "peer_reps", "peer_sizes", "timeout", "peer_timeout",
                                              "ours", "prev", "peer", "floor", "tool", "gzip", "python", "source")},
        "machine": {"platform": platform.platform(), "cpus": os.cpu_count(),
                    "python": platform.python_version()},
        "spawn_baseline_rss_mib": baseline, "traces": traces, "missing": missing, "runs": runs, "summary": rows, "ratios": ratios,
    }
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(result, fh, indent=2)
        print("\nwrote", a.json)
    if a.strict and any(ratios[k]["verdict"] == "MISS" for k in TARGETS):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
