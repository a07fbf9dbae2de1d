#!/usr/bin/python3
"""Engine benchmark: the C++ LibreYOLO9 inference path against PyTorch eager, and the profiler's cost.

In one run, side by side, for each --imgsz (default 640 and 320), --batch 1, --threads T:
  1. the profiler's overhead: `libreyolo-engine infer` with the trace on reports
     profiler.overhead_pct (profiled window's mean iteration vs the unprofiled window's), twice:
     with the default switches (auto: --record-shapes/--profile-memory/--with-flops stay on while
     the probed overhead stays within --overhead-budget, default 3 %; the profile records which
     the engine turned off) and with all three forced on;
  2. a run with --no-trace gives the baseline latency; C++ forward (stages_ms.forward) and
     end-to-end latency (latency.p50_ms of that run) against bench/pytorch_peer.py (the same
     model, weights, image and thread count in PyTorch eager from Python): its forward
     (predict() on a fixed input) and end to end (decode, letterbox, forward, postprocess).
Each rep runs auto -> forced -> no-trace -> peer for every size, so machine noise hits all of
them; the table quotes medians over reps. Targets: C++/PyTorch forward <= 1.0, C++/PyTorch e2e
< 1.0, overhead with the default (auto) switches <= 3 %. See bench/README.md.
"""
import collections
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURE_WEIGHTS = "/work/shared/fixtures/models/libreyolo9t_seed1234.pt"
ENGINE_CANDIDATES = ["build/bench/libreyolo-engine", "build-me/bench/libreyolo-engine",
                     "build-bench/bench/libreyolo-engine"]
# The public Python LibreYOLO, `libreyolo profile infer --device cpu`, 2 threads, OpenBLAS, on a
# 2-core x86-64 (shared/fixtures/profiles/): latency p50 in ms, for context only.
PYTHON_LIBREYOLO_P50 = {640: 153.0, 320: 76.0}


def find_engine(explicit):
    if explicit:
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    for rel in ENGINE_CANDIDATES:
        path = os.path.join(ROOT, rel)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def run(cmd, env, timeout):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout}s", time.monotonic() - t0
    except OSError as e:
        return None, f"cannot run: {e}", time.monotonic() - t0
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return None, f"rc {p.returncode}: {' | '.join(tail)}", time.monotonic() - t0
    return p.stdout, None, time.monotonic() - t0


SWITCHES = ("record_shapes", "profile_memory", "with_flops")


def engine_run(a, env, imgsz, mode, tag):
    """mode: "auto" (trace, default switches), "forced" (trace, all three on), "notrace"."""
    project = os.path.join(a.work_dir, "runs", tag)
    shutil.rmtree(project, ignore_errors=True)
    cmd = [a.engine, "infer", a.image, "--device", "cpu", "--weights", a.weights, "--size", a.size,
           "--imgsz", str(imgsz), "--batch", str(a.batch), "--warmup", str(a.warmup), "--runs",
           str(a.runs), "--threads", str(a.threads), "--conf", str(a.conf), "--project", project,
           "--json"]
    if mode == "notrace":
        cmd += ["--no-trace"]
    else:
        cmd += ["--profiled-runs", str(a.profiled_runs)]
        if a.overhead_budget is not None:
            cmd += ["--overhead-budget", str(a.overhead_budget)]
    if mode == "forced":
        cmd += ["--record-shapes", "--profile-memory", "--with-flops"]
    out, err, wall = run(cmd, env, a.timeout)
    if err:
        return {"error": err, "wall_s": wall}
    try:
        with open(os.path.join(project, "infer", "profile.json")) as f:
            prof = json.load(f)
    except (OSError, ValueError) as e:
        return {"error": f"profile.json: {e}", "wall_s": wall}
    lat, st, pr = prof.get("latency") or {}, prof.get("stages_ms") or {}, prof.get("profiler") or {}
    cfg = prof.get("config") or {}
    return {"p50_ms": lat.get("p50_ms"), "mean_ms": lat.get("mean_ms"), "n": lat.get("n"),
            "forward_ms": st.get("forward"), "preprocess_ms": st.get("preprocess"),
            "postprocess_ms": st.get("postprocess"), "overhead_pct": pr.get("overhead_pct"),
            "switches_on": [k for k in SWITCHES if pr.get(k)],
            "auto_disabled": pr.get("auto_disabled"),
            "probe_overhead_pct": pr.get("probe_overhead_pct"),
            "threads": cfg.get("threads"), "blas": cfg.get("blas"),
            "blas_threads": cfg.get("blas_threads"), "omp_wait_policy": cfg.get("omp_wait_policy"),
            "wall_s": round(wall, 1)}


def peer_run(a, env, imgsz):
    cmd = [a.python, os.path.join(HERE, "pytorch_peer.py"), "--weights", a.weights, "--size", a.size,
           "--imgsz", str(imgsz), "--batch", str(a.batch), "--threads", str(a.threads),
           "--warmup", str(a.warmup), "--runs", str(a.runs), "--image", a.image,
           "--conf", str(a.conf)]
    out, err, wall = run(cmd, env, a.timeout)
    if err:
        return {"error": err, "wall_s": wall}
    try:
        r = json.loads(out.strip().splitlines()[-1])
    except (ValueError, IndexError) as e:
        return {"error": f"bad output: {e}", "wall_s": wall}
    return {"forward_p50_ms": r["forward"]["p50"], "forward_mean_ms": r["forward"]["mean"],
            "e2e_p50_ms": r["e2e"]["p50"], "e2e_mean_ms": r["e2e"]["mean"],
            "e2e_stages_mean_ms": r.get("e2e_stages_mean_ms"), "threads": r.get("threads"),
            "detections": r.get("detections"), "wall_s": round(wall, 1)}


def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)


def abbreviate(on):
    """["record_shapes", "with_flops"] -> "S-F" (S shapes, M memory, F FLOPs, - off)."""
    if on is None:
        return "?"
    return "".join(letter if key in on else "-" for key, letter in zip(SWITCHES, "SMF"))


def verdict(value, ok):
    return "n/a" if value is None else ("PASS" if ok(value) else "MISS")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", help="libreyolo-engine binary (default: build*/bench/libreyolo-engine)")
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter for the peer")
    ap.add_argument("--weights", default=FIXTURE_WEIGHTS)
    ap.add_argument("--size", default="t")
    ap.add_argument("--imgsz", default="640,320", help="comma-separated sizes")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=None, help="default 3 (--quick: 1)")
    ap.add_argument("--warmup", type=int, default=None, help="per process; default 5 (--quick: 2)")
    ap.add_argument("--runs", type=int, default=None, help="measured iterations; default 20 (--quick: 8)")
    ap.add_argument("--profiled-runs", type=int, default=None, help="default 20 (--quick: 10)")
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--overhead-budget", type=float, default=None,
                    help="passed to the traced runs (the engine's default: 3)")
    ap.add_argument("--no-peer", action="store_true", help="skip the PyTorch peer (engine only)")
    ap.add_argument("--image", help="24-bit BMP both sides decode (default: a generated 810x1080 sample)")
    ap.add_argument("--omp-wait-policy", default="passive",
                    choices=["passive", "active", "default", "inherit"],
                    help="OMP_WAIT_POLICY for both sides (default passive: see README); 'default' "
                         "is libgomp's own (unset, with GOMP_SPINCOUNT=300000 so that the engine "
                         "tool keeps it); 'inherit' passes this environment (the engine tool "
                         "picks PASSIVE when neither variable is set)")
    ap.add_argument("--quick", action="store_true", help="~1 minute: 1 rep, fewer iterations")
    ap.add_argument("--timeout", type=int, default=300, help="per process, seconds")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run --engine in place (default: a copy in --work-dir)")
    ap.add_argument("--work-dir", default="/tmp/libreyolo-engine-bench")
    ap.add_argument("--json", metavar="FILE", help="write everything (every run) as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 1 on a MISS")
    a = ap.parse_args()
    a.reps = a.reps or (1 if a.quick else 3)
    a.warmup = a.warmup if a.warmup is not None else (2 if a.quick else 5)
    a.runs = a.runs or (8 if a.quick else 20)
    a.profiled_runs = a.profiled_runs or (10 if a.quick else 20)
    sizes = [int(s) for s in a.imgsz.split(",") if s.strip()]
    os.makedirs(a.work_dir, exist_ok=True)

    env = dict(os.environ)
    if a.omp_wait_policy == "default":
        env.pop("OMP_WAIT_POLICY", None)
        env["GOMP_SPINCOUNT"] = "300000"  # libgomp's default spin count: the same as unset
    elif a.omp_wait_policy != "inherit":
        env["OMP_WAIT_POLICY"] = a.omp_wait_policy.upper()
    if not a.image:
        a.image = os.path.join(a.work_dir, "sample_810x1080.bmp")
        subprocess.run([a.python, os.path.join(HERE, "pytorch_peer.py"), "--write-sample", a.image],
                       check=True)
    a.image = os.path.abspath(a.image)
    a.engine = find_engine(a.engine)
    if not a.engine:
        print("engine: missing (pass --engine or build libreyolo-engine); running the peer alone",
              file=sys.stderr)
    elif not a.no_snapshot:
        # Run a copy, so a rebuild during the benchmark cannot swap or remove the binary.
        snap = os.path.join(a.work_dir, "libreyolo-engine")
        shutil.copy2(a.engine, snap)
        a.engine_source, a.engine = a.engine, snap

    print(f"# engine {getattr(a, 'engine_source', a.engine) or 'missing'}; peer {a.python} bench/pytorch_peer.py; weights "
          f"{a.weights}; image {a.image}; batch {a.batch}; threads {a.threads}; reps {a.reps}; "
          f"warmup {a.warmup}, runs {a.runs}, profiled {a.profiled_runs}; overhead budget "
          f"{a.overhead_budget if a.overhead_budget is not None else 'default'}; OMP_WAIT_POLICY="
          f"{env.get('OMP_WAIT_POLICY', '(unset)')}"
          f"{'; GOMP_SPINCOUNT=' + env['GOMP_SPINCOUNT'] if 'GOMP_SPINCOUNT' in env else ''}; loadavg {os.getloadavg()[0]:.2f}", flush=True)
    t_start = time.monotonic()
    runs = {s: {"auto": [], "forced": [], "notrace": [], "peer": []} for s in sizes}
    for rep in range(a.reps):
        for s in sizes:
            if a.engine:
                for kind in ("auto", "forced", "notrace"):
                    r = engine_run(a, env, s, kind, f"{kind}{s}")
                    runs[s][kind].append(r)
                    extra = ""
                    if kind == "auto" and "error" not in r:
                        probes = ", ".join(f"{v:.1f}" for v in r["probe_overhead_pct"] or [])
                        extra = f", on {abbreviate(r['switches_on'])} (probes {probes} %)"
                    print(f"  rep {rep + 1} {s}px engine {kind:7s}: " + (r.get("error") or
                          f"p50 {fmt(r['p50_ms'])} ms, forward {fmt(r['forward_ms'])} ms, "
                          f"overhead {fmt(r['overhead_pct'], '{:.2f}')} %{extra}") +
                          f"  ({r['wall_s']:.0f} s)", flush=True)
            if a.no_peer:
                continue
            r = peer_run(a, env, s)
            runs[s]["peer"].append(r)
            print(f"  rep {rep + 1} {s}px peer          : " + (r.get("error") or
                  f"forward p50 {fmt(r['forward_p50_ms'])} mean {fmt(r['forward_mean_ms'])} ms, "
                  f"e2e p50 {fmt(r['e2e_p50_ms'])} ms") + f"  ({r['wall_s']:.0f} s)", flush=True)

    def med(s, kind, key):
        return median([r.get(key) for r in runs[s][kind] if "error" not in r])

    results, misses = [], 0
    print()
    print(f"{'imgsz':>5} | {'C++ fwd':>8} {'Py fwd':>8} {'ratio':>6} {'':4} | {'C++ e2e':>8} "
          f"{'Py e2e':>8} {'ratio':>6} {'':4} | {'ovh auto':>8} {'':4} {'auto on':>7} | "
          f"{'ovh forced':>10} | {'LibreYOLO py':>12}")
    for s in sizes:
        cf, pf = med(s, "notrace", "forward_ms"), med(s, "peer", "forward_mean_ms")
        ce, pe = med(s, "notrace", "p50_ms"), med(s, "peer", "e2e_p50_ms")
        ov, ovf = med(s, "auto", "overhead_pct"), med(s, "forced", "overhead_pct")
        rf = cf / pf if cf and pf else None
        re_ = ce / pe if ce and pe else None
        # What the auto runs left on, most frequent first ("SMF" all on, "---" all off).
        kept = collections.Counter(abbreviate(r["switches_on"]) for r in runs[s]["auto"]
                                   if "error" not in r)
        auto_on = "/".join(k for k, _ in kept.most_common()) or "-"
        row = {"imgsz": s, "cpp_forward_ms": cf, "peer_forward_ms": pf, "forward_ratio": rf,
               "forward": verdict(rf, lambda v: v <= 1.0), "cpp_e2e_p50_ms": ce,
               "peer_e2e_p50_ms": pe, "e2e_ratio": re_, "e2e": verdict(re_, lambda v: v < 1.0),
               "overhead_pct": ov, "overhead": verdict(ov, lambda v: v <= 3.0),
               "auto_switches_on": dict(kept), "overhead_forced_on_pct": ovf,
               "cpp_traced_run_p50_ms": med(s, "auto", "p50_ms"),
               "peer_forward_p50_ms": med(s, "peer", "forward_p50_ms"),
               "cpp_forward_ms_traced_run": med(s, "auto", "forward_ms"),
               "python_libreyolo_p50_ms": PYTHON_LIBREYOLO_P50.get(s)}
        misses += sum(row[k] == "MISS" for k in ("forward", "e2e", "overhead"))
        results.append(row)
        print(f"{s:>5} | {fmt(cf):>8} {fmt(pf):>8} {fmt(rf, '{:.2f}'):>6} {row['forward']:4} | "
              f"{fmt(ce):>8} {fmt(pe):>8} {fmt(re_, '{:.2f}'):>6} {row['e2e']:4} | "
              f"{fmt(ov, '{:.2f}%'):>8} {row['overhead']:4} {auto_on:>7} | "
              f"{fmt(ovf, '{:.2f}%'):>10} | {fmt(PYTHON_LIBREYOLO_P50.get(s)):>12}")
    print("ms; medians over reps. fwd: C++ stages_ms.forward vs peer forward mean (fixed input); "
          "e2e: latency p50, C++ --no-trace run vs peer; ovh auto: profiler.overhead_pct of the "
          "traced run with the default switches, 'auto on' what they kept (S shapes, M memory, "
          "F FLOPs, - off); ovh forced: the same with all three forced on (no target). Targets: "
          "fwd ratio <= 1.0, e2e ratio < 1.0, ovh auto <= 3%. "
          f"Total {time.monotonic() - t_start:.0f} s; loadavg {os.getloadavg()[0]:.2f}.")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"settings": {k: v for k, v in vars(a).items()},
                       "omp_wait_policy": env.get("OMP_WAIT_POLICY"), "results": results,
                       "runs": {str(s): v for s, v in runs.items()}}, f, indent=1)
    return 1 if a.strict and misses else 0


if __name__ == "__main__":
    sys.exit(main())
