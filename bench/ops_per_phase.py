"""Ops per training step and phase: our `run` against the real Python LibreYOLO's `profile run`.

Both train LibreYOLO9 from the same checkpoint on the same generated YOLO dataset (same images,
labels, imgsz, batch, no AMP, 0 workers, --threads / OMP_NUM_THREADS T) on this machine's CPU,
each under its own profiler, and each exports a Chrome trace of the measured steps. Both traces
are then counted the same way, here: every `cpu_op` event inside a `ProfilerStep#N` window,
attributed to the innermost `step/<phase>` annotation that contains its start (any thread; the
Python tool's own rule). The Python trainer has no `step/ema` span: its EMA update
(`ModelEMA.update`) and the step's logging (`loss.item()`, the loss components) run after
`step/optimizer`, so the ops between the end of `step/optimizer` and the end of the step are
its "ema" row (the `.item()` ops among them are counted apart). "all" counts nested ops too (the
Python tool's `ops_per_step`); "top" only ops with no enclosing cpu_op on their thread (the op
chains the framework dispatches). Per phase it also lists the op names whose counts differ most.

  python bench/ops_per_phase.py --engine /work/main/build/bench/libreyolo-engine
  python bench/ops_per_phase.py --engine ... --imgsz 160 --batch 2 --steps 3 --json /tmp/o.json

Run it with the project environment's python ($(bash scripts/python-env.sh)/bin/python): its
bin/ holds the Python `libreyolo`. Nothing is downloaded (HF_HUB_OFFLINE=1; local weights).
"""
import argparse
import bisect
import collections
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURE_WEIGHTS = os.path.join(ROOT, "..", "shared", "fixtures", "models",
                               "libreyolo9t_seed1234.pt")
PHASES = ["dataload", "to_device", "forward", "backward", "optimizer", "ema"]
ITEM_OPS = {"aten::item", "aten::_local_scalar_dense"}


def make_dataset(root, n_train, size):
    """A YOLO-format dataset of random images with 3 boxes each."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(1234)
    for split, n in (("train", n_train), ("val", 2)):
        os.makedirs(os.path.join(root, "images", split), exist_ok=True)
        os.makedirs(os.path.join(root, "labels", split), exist_ok=True)
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(
                os.path.join(root, "images", split, f"{i:03d}.jpg"))
            with open(os.path.join(root, "labels", split, f"{i:03d}.txt"), "w") as f:
                for k in range(3):
                    f.write(f"{k} {0.3 + 0.2 * k:.2f} 0.5 0.2 0.3\n")
    yaml = os.path.join(root, "data.yaml")
    with open(yaml, "w") as f:
        f.write(f"path: {root}\ntrain: images/train\nval: images/val\nnc: 80\n"
                f"names: [{', '.join(f'c{i}' for i in range(80))}]\n")
    return yaml


def count(trace_path, python_tool):
    """{phase: Counter(op -> count over the window)}, ({phase: top-level Counter}), steps."""
    with open(trace_path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    xs = [e for e in events if e.get("ph") == "X" and "ts" in e]
    steps = sorted((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
                   for e in xs if str(e.get("name", "")).startswith("ProfilerStep#"))
    # De-duplicate (a CPU copy and a GPU copy of the same step have the same span).
    steps = sorted(set(steps))
    spans = []
    for e in xs:
        name = str(e.get("name", ""))
        if name.startswith("step/"):
            spans.append((float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), name[5:]))
    if python_tool:
        # Its EMA + logging run after step/optimizer, up to the end of the step.
        for s0, s1 in steps:
            opt_end = max((b for a, b, p in spans if p == "optimizer" and s0 <= a < s1),
                          default=None)
            if opt_end is not None:
                spans.append((opt_end, s1, "ema"))
    spans.sort()
    starts = [s[0] for s in spans]

    def phase_of(ts):
        # innermost = latest-starting span that contains ts
        i = bisect.bisect_right(starts, ts) - 1
        while i >= 0:
            a, b, p = spans[i]
            if a <= ts < b:
                return p
            i -= 1
        return "unphased"

    def in_window(ts):
        i = bisect.bisect_right(steps, (ts, float("inf"))) - 1
        return i >= 0 and steps[i][0] <= ts < steps[i][1]

    ops = [e for e in xs if e.get("cat") == "cpu_op" and in_window(float(e["ts"]))]
    allc = collections.defaultdict(collections.Counter)
    topc = collections.defaultdict(collections.Counter)
    by_thread = collections.defaultdict(list)
    for e in ops:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e.get("dur", 0))))
        stack = []  # ends of the enclosing cpu_ops
        for e in evs:
            ts, end = float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0))
            while stack and stack[-1] <= ts:
                stack.pop()
            p, name = phase_of(ts), str(e.get("name"))
            allc[p][name] += 1
            if not stack:
                topc[p][name] += 1
            stack.append(end)
    return allc, topc, len(steps)


def run_cmd(cmd, env, cwd, timeout):
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd[:3])} ... failed (rc {p.returncode}):\n{p.stderr[-2000:]}")
    return time.monotonic() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", required=True, help="libreyolo-engine binary (bench/engine_tool.cc)")
    ap.add_argument("--python-libreyolo",
                    default=os.path.join(os.path.dirname(sys.executable), "libreyolo"),
                    help="the Python LibreYOLO CLI (default: beside this interpreter)")
    ap.add_argument("--weights", default=os.path.abspath(FIXTURE_WEIGHTS))
    ap.add_argument("--imgsz", type=int, default=128)
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--images", type=int, default=None,
                    help="training images to generate (default: enough batches for our "
                         "unprofiled window and the profiled one, 2 x (warmup + steps) + 2)")
    ap.add_argument("--work-dir", default="/tmp/libreyolo-ops-per-phase")
    ap.add_argument("--timeout", type=int, default=600)
    ap.add_argument("--top-diffs", type=int, default=4)
    ap.add_argument("--json", metavar="FILE")
    a = ap.parse_args()

    a.images = a.images or (2 * (a.warmup + a.steps) + 2) * a.batch
    shutil.rmtree(a.work_dir, ignore_errors=True)
    os.makedirs(a.work_dir)
    data = make_dataset(os.path.join(a.work_dir, "ds"), a.images, a.imgsz)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", WANDB_MODE="disabled",
               MPLBACKEND="Agg", OMP_WAIT_POLICY=os.environ.get("OMP_WAIT_POLICY", "PASSIVE"),
               OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads))
    common = ["--weights", a.weights, "--size", "t", "--device", "cpu", "--imgsz", str(a.imgsz),
              "--batch", str(a.batch), "--steps", str(a.steps), "--warmup", str(a.warmup),
              "--workers", "0", "--no-amp"]
    ours_dir, py_dir = os.path.join(a.work_dir, "ours"), os.path.join(a.work_dir, "python")
    # Ours without the per-op switches (the Python tool records no shapes/memory/FLOPs either).
    t_ours = run_cmd([a.engine, "run", data, *common, "--threads", str(a.threads), "--project",
                      ours_dir, "--no-record-shapes", "--no-profile-memory", "--no-with-flops"],
                     env, a.work_dir, a.timeout)
    t_py = run_cmd([a.python_libreyolo, "profile", "run", data, *common, "--project", py_dir],
                   env, a.work_dir, a.timeout)
    ours_trace = os.path.join(ours_dir, "prof", "profile_trace.json")
    py_trace = os.path.join(py_dir, "prof", "profile_trace.json")
    o_all, o_top, o_n = count(ours_trace, python_tool=False)
    p_all, p_top, p_n = count(py_trace, python_tool=True)
    with open(os.path.join(ours_dir, "prof", "profile.json")) as f:
        o_prof = {r["phase"]: r["ops_per_step"] for r in json.load(f)["phases"]}
    with open(os.path.join(py_dir, "prof", "profile.json")) as f:
        p_prof = {r["phase"]: r["ops_per_step"] for r in json.load(f)["phases"]}

    print(f"# ours {a.engine} ({t_ours:.0f} s), {o_n} steps; Python LibreYOLO "
          f"{a.python_libreyolo} ({t_py:.0f} s), {p_n} steps; imgsz {a.imgsz}, batch {a.batch}, "
          f"threads {a.threads}, CPU; ops per step")
    hdr = (f"{'phase':<10} | {'ours all':>8} {'py all':>8} {'ratio':>6} | {'ours top':>8} "
           f"{'py top':>8} {'ratio':>6} | {'ours rep':>8} {'py rep':>8} | largest differences "
           f"(top-level ops per step, ours - python)")
    print(hdr)
    rows = []
    phases = PHASES + sorted((set(o_all) | set(p_all)) - set(PHASES))
    for ph in phases:
        oa, pa = sum(o_all[ph].values()) / o_n, sum(p_all[ph].values()) / p_n
        ot, pt = sum(o_top[ph].values()) / o_n, sum(p_top[ph].values()) / p_n
        names = set(o_top[ph]) | set(p_top[ph])
        diffs = sorted(((o_top[ph][n] / o_n - p_top[ph][n] / p_n, n) for n in names),
                       key=lambda d: -abs(d[0]))
        diffs = [(d, n) for d, n in diffs if abs(d) >= 0.5][:a.top_diffs]
        row = {"phase": ph, "ours_all": oa, "python_all": pa, "ours_top": ot, "python_top": pt,
               "ours_reported": o_prof.get(ph), "python_reported": p_prof.get(ph),
               "python_item_ops": (sum(p_all[ph][n] for n in ITEM_OPS) / p_n),
               "diffs": [{"op": n, "delta": d} for d, n in diffs]}
        rows.append(row)

        def r(x, y):
            return f"{x / y:6.2f}" if y else f"{'-':>6}"

        def rep(v):
            return f"{'-':>8}" if v is None else f"{v:8d}"
        print(f"{ph:<10} | {oa:8.0f} {pa:8.0f} {r(oa, pa)} | {ot:8.0f} {pt:8.0f} {r(ot, pt)} | "
              f"{rep(o_prof.get(ph))} {rep(p_prof.get(ph))} | "
              + ", ".join(f"{n} {d:+.0f}" for d, n in diffs))
    ta = sum(r["ours_all"] for r in rows), sum(r["python_all"] for r in rows)
    tt = sum(r["ours_top"] for r in rows), sum(r["python_top"] for r in rows)
    print(f"{'step':<10} | {ta[0]:8.0f} {ta[1]:8.0f} {ta[0] / ta[1]:6.2f} | {tt[0]:8.0f} "
          f"{tt[1]:8.0f} {tt[0] / tt[1]:6.2f} |")
    ema = next(r for r in rows if r["phase"] == "ema")
    print(f"python 'ema' holds {ema['python_item_ops']:.0f} .item() ops per step (logging, not "
          f"EMA). 'rep': each tool's own profile.json phases[].ops_per_step (the Python tool "
          f"lists no ema phase).")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"settings": vars(a), "ours_steps": o_n, "python_steps": p_n,
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
