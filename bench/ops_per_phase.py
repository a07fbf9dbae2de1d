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

The Python LibreYOLO 1.6 trains YOLOv9 with its PGI auxiliary branch on (`aux_weight` 0.25: 76
more convolutions, 222 more parameter tensors, a second loss); `profile run` cannot turn it off.
--python-no-aux also runs the same training through its Python API with `aux_weight=0` (the
model our engine trains), so the remaining differences are the implementations'.

  python bench/ops_per_phase.py --engine /work/main/build/bench/libreyolo-engine
  python bench/ops_per_phase.py --engine ... --python-no-aux --imgsz 160 --steps 3 --json /tmp/o.json

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
    repaired = repair_rebased_durations(data, xs)
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
    return allc, topc, len(steps), repaired


def repair_rebased_durations(data, xs):
    """Undoes a trace export bug: `dur` rebased like `ts`. Returns how many events it fixed.

    The engine built on LibTorch 2.11 at main 81c4d4d (server/engine/collect/trace_export.cc:
    `s.dur_us = Us(e->dur_ns)`, where Us subtracts baseTimeNanoseconds) writes every duration
    as (dur - base) µs: all negative, about -1.8e15. Adding the base back restores them (to the
    0.25 µs a double holds at that magnitude). A sound trace has no negative `dur`: unchanged.
    """
    base = data.get("baseTimeNanoseconds") if isinstance(data, dict) else None
    if not base:
        return 0
    n = 0
    for e in xs:
        if float(e.get("dur", 0)) < 0:
            e["dur"] = float(e["dur"]) + float(base) / 1000.0
            n += 1
    return n


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
    ap.add_argument("--python-no-aux", action="store_true",
                    help="also train through the Python API with LibreYOLO's PGI auxiliary "
                         "branch off (aux_weight=0), the model our engine trains")
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
    runs = []  # (label, seconds, trace, profile.json, python_tool)
    ours_dir = os.path.join(a.work_dir, "ours")
    # Ours without the per-op switches (the Python tool records no shapes/memory/FLOPs either).
    t = run_cmd([a.engine, "run", data, *common, "--threads", str(a.threads), "--project",
                 ours_dir, "--no-record-shapes", "--no-profile-memory", "--no-with-flops"],
                env, a.work_dir, a.timeout)
    runs.append(("ours", t, os.path.join(ours_dir, "prof"), False))
    py_dir = os.path.join(a.work_dir, "python")
    t = run_cmd([a.python_libreyolo, "profile", "run", data, *common, "--project", py_dir],
                env, a.work_dir, a.timeout)
    runs.append(("python", t, os.path.join(py_dir, "prof"), True))
    if a.python_no_aux:
        # The same training through the Python API (what `profile run` calls), with LibreYOLO's
        # PGI auxiliary branch off (aux_weight=0; the CLI trains with its default 0.25): the
        # model our engine trains.
        nd = os.path.join(a.work_dir, "python_no_aux")
        code = ("import sys; from libreyolo import LibreYOLO; w, d, s, b, st, wu, pr = sys.argv[1:]; "
                "m = LibreYOLO(model_path=w, size='t', device='cpu'); "
                "m.train(data=d, epochs=int(wu) + int(st) + 5, batch=int(b), imgsz=int(s), "
                "workers=0, amp=False, device='cpu', profile=True, profile_then_stop=True, "
                "profile_steps=int(st), profile_warmup=int(wu), profile_open=False, "
                "no_aug_epochs=0, project=pr, name='prof', exist_ok=True, aux_weight=0)")
        t = run_cmd([sys.executable, "-c", code, a.weights, data, str(a.imgsz), str(a.batch),
                     str(a.steps), str(a.warmup), nd], env, a.work_dir, a.timeout)
        runs.append(("py no-aux", t, os.path.join(nd, "prof"), True))

    res = []
    for label, secs, d, py in runs:
        allc, topc, n, repaired = count(os.path.join(d, "profile_trace.json"), python_tool=py)
        if repaired:
            print(f"WARNING: {label}: {repaired} events had a negative duration (dur rebased like "
                  f"ts, an export bug): baseTimeNanoseconds added back (repair_rebased_durations)")
        with open(os.path.join(d, "profile.json")) as f:
            reported = {r["phase"]: r["ops_per_step"] for r in json.load(f).get("phases") or []}
        res.append({"label": label, "seconds": secs, "all": allc, "top": topc, "steps": n,
                    "reported": reported})
    print(f"# {a.engine}; {a.python_libreyolo}; imgsz {a.imgsz}, batch {a.batch}, threads "
          f"{a.threads}, CPU; " + ", ".join(f"{r['label']} {r['steps']} steps ({r['seconds']:.0f} s)"
                                           for r in res) + "; cpu_ops per step")
    ref = res[-1]  # the differences are listed against the last Python run
    w = 9
    print(f"{'phase':<10} | " + " ".join(f"{r['label'][:w] + ' all':>{w + 4}}" for r in res)
          + " | " + " ".join(f"{r['label'][:w] + ' top':>{w + 4}}" for r in res)
          + " | " + " ".join(f"{r['label'][:w] + ' rep':>{w + 4}}" for r in res)
          + f" | largest differences, top-level ops per step, ours - {ref['label']}")
    phases = PHASES + sorted(set().union(*(r["all"].keys() for r in res)) - set(PHASES))
    rows = []
    ours = res[0]
    for ph in phases:
        per = lambda r, kind: sum(r[kind][ph].values()) / r["steps"]  # noqa: E731
        names = set(ours["top"][ph]) | set(ref["top"][ph])
        diffs = sorted(((ours["top"][ph][n] / ours["steps"] - ref["top"][ph][n] / ref["steps"], n)
                        for n in names), key=lambda d: -abs(d[0]))
        diffs = [(d, n) for d, n in diffs if abs(d) >= 0.5][:a.top_diffs]
        row = {"phase": ph, "diffs_vs": ref["label"],
               "diffs": [{"op": n, "delta": d} for d, n in diffs]}
        for r in res:
            row[r["label"]] = {"all": per(r, "all"), "top": per(r, "top"),
                               "reported": r["reported"].get(ph),
                               "item_ops": sum(r["all"][ph][n] for n in ITEM_OPS) / r["steps"]}
        rows.append(row)

        def rep(v):
            return f"{'-':>{w + 4}}" if v is None else f"{v:>{w + 4}d}"
        print(f"{ph:<10} | " + " ".join(f"{per(r, 'all'):>{w + 4}.0f}" for r in res) + " | "
              + " ".join(f"{per(r, 'top'):>{w + 4}.0f}" for r in res) + " | "
              + " ".join(rep(r["reported"].get(ph)) for r in res) + " | "
              + ", ".join(f"{n} {d:+.0f}" for d, n in diffs))
    print(f"{'step':<10} | " + " ".join(f"{sum(x[r['label']]['all'] for x in rows):>{w + 4}.0f}"
                                        for r in res) + " | "
          + " ".join(f"{sum(x[r['label']]['top'] for x in rows):>{w + 4}.0f}" for r in res) + " |")
    ema = next(x for x in rows if x["phase"] == "ema")
    print("the Python runs' 'ema' rows hold " + ", ".join(
        f"{ema[r['label']]['item_ops']:.0f}" for r in res[1:]) + " .item() ops per step (logging, "
          "not EMA). 'rep': each tool's own profile.json phases[].ops_per_step (the Python tool "
          "lists no ema phase).")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"settings": vars(a), "steps": {r["label"]: r["steps"] for r in res},
                       "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
