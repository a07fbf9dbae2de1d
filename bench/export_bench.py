#!/usr/bin/python3
"""TorchScript exports of every family: our engine against the Python LibreYOLO, per family.

Each rep, side by side on this machine with the same torch (the project environment's 2.11
wheel, which our engine links) and the same thread count:
  1. the Python LibreYOLO exports each family from a random-init model and times its own
     TorchScript backend on the sample image (tests/engine/torchscript/make_exports.py --runs N:
     the median of `predict()`, end to end, and of the module's forward alone);
  2. ours: `libreyolo-engine infer --weights <family>.torchscript --no-trace` on the same file and
     image: latency p50 (end to end: preprocess, forward, postprocess) and the forward stage.
The table quotes medians over reps and the ratio ours / Python (below 1: ours is faster). The
Python tool's own `libreyolo profile infer` cannot profile a TorchScript file (1.6.0: its
profiler calls the backend's _preprocess with an argument it does not take), so its backend's
predict is the peer. See bench/README.md.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

from engine_bench import median, python_env_dir  # the same environment and statistic

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MAKE_EXPORTS = os.path.join(ROOT, "tests", "engine", "torchscript", "make_exports.py")
FAMILIES = "yolo9,yolox,yolo7,dfine,deim,rtdetr,lwdetr"


def ours(a, family, rep):
    project = os.path.join(a.work_dir, "runs", f"{family}_{rep}")
    shutil.rmtree(project, ignore_errors=True)
    ref = json.load(open(os.path.join(a.work_dir, "exports", f"{family}.reference.json")))
    cmd = [a.engine, "infer", ref["image"], "--device", "cpu", "--weights",
           os.path.join(a.work_dir, "exports", f"{family}.torchscript"), "--warmup",
           str(a.warmup), "--runs", str(a.runs), "--threads", str(a.threads), "--conf",
           str(ref["params"]["conf"]), "--no-trace", "--project", project, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        return {"error": (p.stderr or p.stdout).strip().splitlines()[-1:]}
    prof = json.load(open(os.path.join(project, "infer", "profile.json")))
    return {"e2e_ms": (prof.get("latency") or {}).get("p50_ms"),
            "fwd_ms": (prof.get("stages_ms") or {}).get("forward"), "model": prof.get("model")}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--engine", default=os.path.join(ROOT, "build", "bench", "libreyolo-engine"))
    ap.add_argument("--families", default=FAMILIES)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1,
                    help="both tools (default 1: the Python backend's timing at 1 thread)")
    ap.add_argument("--work-dir", default="/tmp/libreyolo-export-bench")
    ap.add_argument("--timeout", type=int, default=900)
    a = ap.parse_args()
    if not os.access(a.engine, os.X_OK):
        sys.exit(f"export_bench: no engine tool at {a.engine} (bash scripts/build.sh)")
    python = os.path.join(python_env_dir(None), "bin", "python")
    families = a.families.split(",")
    rows = {f: {"py_e2e": [], "py_fwd": [], "e2e": [], "fwd": []} for f in families}
    for rep in range(a.reps):
        exports = os.path.join(a.work_dir, "exports")
        shutil.rmtree(exports, ignore_errors=True)
        p = subprocess.run([python, MAKE_EXPORTS, exports, "--families", a.families, "--runs",
                            str(a.runs), "--threads", str(a.threads), "--no-npy"],
                           capture_output=True, text=True, timeout=a.timeout)
        if p.returncode != 0:
            sys.exit(f"make_exports failed: {(p.stderr or p.stdout)[-2000:]}")
        for f in families:
            t = json.load(open(os.path.join(exports, f"{f}.reference.json")))["timing"]
            rows[f]["py_e2e"].append(t.get("predict_ms_median"))
            rows[f]["py_fwd"].append(t.get("forward_ms_median"))
            o = ours(a, f, rep)
            if "error" in o:
                print(f"{f}: ours failed: {o['error']}", file=sys.stderr)
                continue
            rows[f]["e2e"].append(o["e2e_ms"])
            rows[f]["fwd"].append(o["fwd_ms"])
        print(f"rep {rep + 1}/{a.reps} done", file=sys.stderr)
    print(f"TorchScript exports, CPU, {a.threads} thread(s), {a.runs} runs, medians of {a.reps} reps")
    print(f"{'family':8} {'py e2e ms':>10} {'ours e2e':>9} {'ratio':>6} {'py fwd ms':>10} "
          f"{'ours fwd':>9} {'ratio':>6}")
    for f in families:
        r = {k: median(v) for k, v in rows[f].items()}
        def ratio(x, y):
            return f"{x / y:.2f}" if x and y else "-"
        def cell(v):
            return f"{v:.1f}" if v is not None else "-"
        print(f"{f:8} {cell(r['py_e2e']):>10} {cell(r['e2e']):>9} {ratio(r['e2e'], r['py_e2e']):>6} "
              f"{cell(r['py_fwd']):>10} {cell(r['fwd']):>9} {ratio(r['fwd'], r['py_fwd']):>6}")


if __name__ == "__main__":
    main()
