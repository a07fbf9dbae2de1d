#!/usr/bin/python3
"""Engine benchmark: the C++ LibreYOLO9 profiler against the real Python LibreYOLO, and its cost.

In one run, side by side, on this machine, with the same torch (the project environment's
2.11 wheel: our engine links its LibTorch), the same weights, the same image or dataset and the
same thread count (--threads T: ours `--threads T`, the Python tool OMP_NUM_THREADS=T, which
torch takes as its intra-op pool; the header prints what torch reports under it):

 inference, for each --imgsz (default 640 and 320), --batch 1:
  1. ours `libreyolo-engine infer` with the trace on: profiler.overhead_pct, the interleaved
     A/B estimate (unprofiled, profiled, unprofiled, ... single-iteration windows, at least 8
     pairs: the median paired difference and its sign-test confidence interval,
     profiler.overhead_ci_pct; docs/metrics.md "Profiler overhead budget"), twice: with the
     default switches (auto: --record-shapes/--profile-memory/--with-flops go off only when the
     interval's lower bound is over --overhead-budget, default 3 %) and with all three forced
     on (shapes on); each with our native collector (the default) and again with LibTorch's
     profiler as the CPU collector (--collector libtorch), the collector it replaced, so the
     two collectors' costs come from the same run (unless --collectors native);
  2. ours with --no-trace: the baseline latency p50 (end to end) and stages_ms.forward;
  3. the Python LibreYOLO's `libreyolo profile infer --no-trace` (its latency p50 and synced
     forward stage, no torch profiler) and `libreyolo profile infer` as a user runs it (trace
     on: its measured iterations run under torch.profiler);
 training (unless --no-train), at --train-imgsz (default 320), --train-batch 2:
  4. ours `libreyolo-engine run` (and again with --collector libtorch: the profiler's
     overhead_pct of a training step with each collector) and the Python LibreYOLO's
     `libreyolo profile run` on the
     same generated YOLO dataset (no AMP, 0 workers): step_ms, img/s and the forward,
     backward and optimizer walls each tool reports; both train LibreYOLO9 with its PGI
     auxiliary branch (aux_weight 0.25, the Python tool's default, issue 38 section 0); and
     both again without it: ours `--aux-weight 0`, the Python training through its API with
     aux_weight=0.
Each rep runs them all in that order, so machine noise hits every contender; the tables quote
medians over reps and the ratio ours / Python. Targets: fwd ratio <= 1.0, e2e ratio < 1.0,
overhead with the default (auto) switches <= 3 %. See bench/README.md.
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
FIXTURE_WEIGHTS = os.path.normpath(os.path.join(ROOT, "..", "shared", "fixtures", "models",
                                                "libreyolo9t_seed1234.pt"))
ENGINE_CANDIDATES = ["build/bench/libreyolo-engine", "build-me/bench/libreyolo-engine",
                     "build-bench/bench/libreyolo-engine"]


def find_engine(explicit):
    if explicit:
        return explicit if os.path.isfile(explicit) and os.access(explicit, os.X_OK) else None
    for rel in ENGINE_CANDIDATES:
        path = os.path.join(ROOT, rel)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def python_env_dir(explicit):
    if explicit:
        return explicit
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "python-env.sh")],
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def run(cmd, env, timeout, cwd=None):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, f"timeout after {timeout}s", time.monotonic() - t0
    except OSError as e:
        return None, f"cannot run: {e}", time.monotonic() - t0
    if p.returncode != 0:
        tail = (p.stderr or p.stdout).strip().splitlines()[-3:]
        return None, f"rc {p.returncode}: {' | '.join(tail)}", time.monotonic() - t0
    return p.stdout, None, time.monotonic() - t0


def load(path):
    try:
        with open(path) as f:
            return json.load(f), None
    except (OSError, ValueError) as e:
        return None, f"{os.path.basename(path)}: {e}"


SWITCHES = ("record_shapes", "profile_memory", "with_flops")


def infer_numbers(prof):
    lat, st = prof.get("latency") or {}, prof.get("stages_ms") or {}
    return {"p50_ms": lat.get("p50_ms"), "mean_ms": lat.get("mean_ms"), "n": lat.get("n"),
            "forward_ms": st.get("forward"), "preprocess_ms": st.get("preprocess"),
            "postprocess_ms": st.get("postprocess")}


def train_numbers(prof):
    # Ours records the phase walls of its unprofiled measured window (config.measured_phases_ms,
    # the window its step_ms comes from); the Python tool only the synced half of its profiled
    # window (phases[].wall_ms_per_step).
    walls = {r.get("phase"): r.get("wall_ms_per_step") for r in prof.get("phases") or []}
    walls.update((prof.get("config") or {}).get("measured_phases_ms") or {})
    return {"step_ms": prof.get("step_ms"), "img_per_s": prof.get("img_per_s"),
            "forward_ms": walls.get("forward"), "backward_ms": walls.get("backward"),
            "optimizer_ms": walls.get("optimizer"), "ema_ms": walls.get("ema"),
            "dataload_ms": prof.get("dataload_ms")}


def engine_infer(a, env, imgsz, mode, tag):
    """mode: "auto" (trace, default switches), "forced" (trace, all three on), "notrace"; an
    "_lt" suffix: the same with LibTorch's profiler as the CPU collector."""
    collector = "libtorch" if mode.endswith("_lt") else "native"
    mode = mode.removesuffix("_lt")
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
    if mode != "notrace":
        cmd += ["--collector", collector]
    out, err, wall = run(cmd, env, a.timeout)
    if err:
        return {"error": err, "wall_s": wall}
    prof, err = load(os.path.join(project, "infer", "profile.json"))
    if err:
        return {"error": err, "wall_s": wall}
    pr, cfg = prof.get("profiler") or {}, prof.get("config") or {}
    return {**infer_numbers(prof), "overhead_pct": pr.get("overhead_pct"),
            "overhead_ci_pct": pr.get("overhead_ci_pct"),
            "overhead_pairs": pr.get("overhead_pairs"),
            "switches_on": [k for k in SWITCHES if pr.get(k)],
            "auto_disabled": pr.get("auto_disabled"),
            "probe_overhead_pct": pr.get("probe_overhead_pct"),
            "cpu_collector": pr.get("cpu_collector"),
            "threads": cfg.get("threads"), "blas": cfg.get("blas"),
            "blas_threads": cfg.get("blas_threads"), "omp_wait_policy": cfg.get("omp_wait_policy"),
            "torch": (prof.get("tool") or {}).get("torch"), "wall_s": round(wall, 1)}


def python_infer(a, env, imgsz, traced, tag):
    """The real Python LibreYOLO: `libreyolo profile infer` (--no-trace unless traced)."""
    project = os.path.join(a.work_dir, "runs", tag)
    shutil.rmtree(project, ignore_errors=True)
    cmd = [a.py_libreyolo, "profile", "infer", a.image, "--device", "cpu", "--weights", a.weights,
           "--size", a.size, "--imgsz", str(imgsz), "--batch", str(a.batch), "--warmup",
           str(a.warmup), "--runs", str(a.runs), "--conf", str(a.conf), "--project", project,
           "--trace" if traced else "--no-trace", "--json"]
    out, err, wall = run(cmd, a.py_env, a.timeout, cwd=a.work_dir)
    if err:
        return {"error": err, "wall_s": wall}
    prof, err = load(os.path.join(project, "infer", "profile.json"))
    if err:
        return {"error": err, "wall_s": wall}
    return {**infer_numbers(prof), "wall_s": round(wall, 1)}


def engine_train(a, env, tag, collector="native", aux_weight=None):
    project = os.path.join(a.work_dir, "runs", tag)
    shutil.rmtree(project, ignore_errors=True)
    cmd = [a.engine, "run", a.dataset, "--device", "cpu", "--weights", a.weights, "--size", a.size,
           "--imgsz", str(a.train_imgsz), "--batch", str(a.train_batch), "--workers", "0",
           "--no-amp", "--steps", str(a.train_steps), "--warmup", str(a.train_warmup),
           "--threads", str(a.threads), "--project", project, "--collector", collector, "--json"]
    if aux_weight is not None:
        cmd += ["--aux-weight", str(aux_weight)]
    out, err, wall = run(cmd, env, a.timeout)
    if err:
        return {"error": err, "wall_s": wall}
    prof, err = load(os.path.join(project, "prof", "profile.json"))
    if err:
        return {"error": err, "wall_s": wall}
    pr = prof.get("profiler") or {}
    return {**train_numbers(prof), "overhead_pct": pr.get("overhead_pct"),
            "overhead_ci_pct": pr.get("overhead_ci_pct"),
            "overhead_pairs": pr.get("overhead_pairs"),
            "switches_on": [k for k in SWITCHES if pr.get(k)],
            "cpu_collector": pr.get("cpu_collector"), "wall_s": round(wall, 1)}


# What `libreyolo profile run` does (cli/commands/profile.py run_cmd), through the Python API, with
# LibreYOLO's PGI auxiliary branch off (aux_weight=0; the CLI keeps its default 0.25): the model
# our engine trains with --aux-weight 0.
NO_AUX_TRAIN = (
    "import sys; from libreyolo import LibreYOLO; w, z, d, s, b, st, wu, pr = sys.argv[1:]; "
    "m = LibreYOLO(model_path=w, size=z, device='cpu'); "
    "m.train(data=d, epochs=int(wu) + int(st) + 5, batch=int(b), imgsz=int(s), workers=0, "
    "amp=False, device='cpu', profile=True, profile_then_stop=True, profile_steps=int(st), "
    "profile_warmup=int(wu), profile_open=False, no_aug_epochs=0, project=pr, name='prof', "
    "exist_ok=True, aux_weight=0)")


def python_train(a, tag, no_aux=False):
    project = os.path.join(a.work_dir, "runs", tag)
    shutil.rmtree(project, ignore_errors=True)
    cmd = [a.py_libreyolo, "profile", "run", a.dataset, "--device", "cpu", "--weights", a.weights,
           "--size", a.size, "--imgsz", str(a.train_imgsz), "--batch", str(a.train_batch),
           "--workers", "0", "--no-amp", "--steps", str(a.train_steps), "--warmup",
           str(a.train_warmup), "--project", project, "--json"]
    if no_aux:
        cmd = [a.py_python, "-c", NO_AUX_TRAIN, a.weights, a.size, a.dataset, str(a.train_imgsz),
               str(a.train_batch), str(a.train_steps), str(a.train_warmup), project]
    out, err, wall = run(cmd, a.py_env, a.timeout, cwd=a.work_dir)
    if err:
        return {"error": err, "wall_s": wall}
    prof, err = load(os.path.join(project, "prof", "profile.json"))
    if err:
        return {"error": err, "wall_s": wall}
    return {**train_numbers(prof), "wall_s": round(wall, 1)}


def make_dataset(a, root, n_train, size):
    """A YOLO-format dataset of random images, 3 boxes each, written by the Python env's PIL."""
    code = r"""
import os, sys
import numpy as np
from PIL import Image
root, n_train, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
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
with open(os.path.join(root, "data.yaml"), "w") as f:
    f.write(f"path: {root}\ntrain: images/train\nval: images/val\nnc: 80\n"
            f"names: [{', '.join(f'c{i}' for i in range(80))}]\n")
"""
    shutil.rmtree(root, ignore_errors=True)
    subprocess.run([a.py_python, "-c", code, root, str(n_train), str(size)], check=True)
    return os.path.join(root, "data.yaml")


def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)


def fmt_ci(r):
    """'2.31 % [-0.80, 5.12] (n=8)': the interleaved A/B median and its interval."""
    if r.get("overhead_pct") is None:
        return "-"
    ci, n = r.get("overhead_ci_pct") or [None, None], r.get("overhead_pairs")
    return (f"{r['overhead_pct']:.2f} % [{fmt(ci[0], '{:.2f}')}, {fmt(ci[1], '{:.2f}')}]"
            f" (n={n})")


def fmt_pair(ci):
    return "-" if not ci or ci[0] is None else f"[{ci[0]:.2f}, {ci[1]:.2f}]"


def ci_bound(r, i):
    ci = r.get("overhead_ci_pct")
    return ci[i] if ci and len(ci) == 2 else None


def ratio(x, y):
    return x / y if x and y else None


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
    ap.add_argument("--python-env", help="the project's Python environment with the Python "
                    "LibreYOLO (default: what scripts/python-env.sh prints)")
    ap.add_argument("--weights", default=FIXTURE_WEIGHTS)
    ap.add_argument("--size", default="t")
    ap.add_argument("--imgsz", default="640,320", help="comma-separated inference sizes")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=None, help="default 3 (--quick: 1)")
    ap.add_argument("--warmup", type=int, default=None, help="per process; default 5 (--quick: 2)")
    ap.add_argument("--runs", type=int, default=None, help="measured iterations; default 20 (--quick: 8)")
    ap.add_argument("--profiled-runs", type=int, default=None, help="default 20 (--quick: 10)")
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--overhead-budget", type=float, default=None,
                    help="passed to our traced runs (the engine's default: 3)")
    ap.add_argument("--no-peer", action="store_true", help="skip the Python LibreYOLO (ours only)")
    ap.add_argument("--no-train", action="store_true", help="skip the training comparison")
    ap.add_argument("--no-infer", action="store_true", help="skip the inference comparison")
    ap.add_argument("--train-imgsz", type=int, default=320)
    ap.add_argument("--train-batch", type=int, default=2)
    ap.add_argument("--train-steps", type=int, default=None, help="default 5 (--quick: 2)")
    ap.add_argument("--train-warmup", type=int, default=None, help="default 2 (--quick: 1)")
    ap.add_argument("--image", help="image both sides decode every iteration (default: the "
                    "Python LibreYOLO's bundled sample photo, parkour.jpg, 1280x720)")
    ap.add_argument("--omp-wait-policy", default="passive",
                    choices=["passive", "active", "default", "inherit"],
                    help="OMP_WAIT_POLICY for both sides (default passive: see README); 'default' "
                         "is libgomp's own (unset, with GOMP_SPINCOUNT=300000 so that the engine "
                         "tool keeps it); 'inherit' passes this environment (the engine tool "
                         "picks PASSIVE when neither variable is set)")
    ap.add_argument("--quick", action="store_true", help="1 rep, fewer iterations")
    ap.add_argument("--timeout", type=int, default=600, help="per process, seconds")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run --engine in place (default: a copy in --work-dir)")
    ap.add_argument("--work-dir", default="/tmp/libreyolo-engine-bench")
    ap.add_argument("--json", metavar="FILE", help="write everything (every run) as JSON")
    ap.add_argument("--strict", action="store_true", help="exit 1 on a MISS")
    ap.add_argument("--collectors", default="native,libtorch",
                    help="CPU collectors whose traced runs to time: native (ours, the default), "
                         "libtorch (LibTorch's profiler, the collector native replaced)")
    a = ap.parse_args()
    a.collectors = [c.strip() for c in a.collectors.split(",") if c.strip()]
    if not a.collectors or any(c not in ("native", "libtorch") for c in a.collectors):
        sys.exit("--collectors: a comma-separated list of native, libtorch")
    a.reps = a.reps or (1 if a.quick else 3)
    a.warmup = a.warmup if a.warmup is not None else (2 if a.quick else 5)
    a.runs = a.runs or (8 if a.quick else 20)
    a.profiled_runs = a.profiled_runs or (10 if a.quick else 20)
    a.train_steps = a.train_steps or (2 if a.quick else 5)
    a.train_warmup = a.train_warmup if a.train_warmup is not None else (1 if a.quick else 2)
    sizes = [] if a.no_infer else [int(s) for s in a.imgsz.split(",") if s.strip()]
    a.work_dir = os.path.abspath(a.work_dir)
    os.makedirs(a.work_dir, exist_ok=True)

    env = dict(os.environ)
    if a.omp_wait_policy == "default":
        env.pop("OMP_WAIT_POLICY", None)
        env["GOMP_SPINCOUNT"] = "300000"  # libgomp's default spin count: the same as unset
    elif a.omp_wait_policy != "inherit":
        env["OMP_WAIT_POLICY"] = a.omp_wait_policy.upper()
    # The Python side: same OpenMP policy; its thread count through OMP_NUM_THREADS (it has no
    # --threads flag; torch sizes its intra-op pool from it); never a download.
    a.py_env = dict(env, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads),
                    HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", WANDB_MODE="disabled",
                    MPLBACKEND="Agg")
    venv = python_env_dir(a.python_env)
    a.py_python = os.path.join(venv, "bin", "python")
    a.py_libreyolo = os.path.join(venv, "bin", "libreyolo")
    probe = subprocess.run(
        [a.py_python, "-c", "import torch, libreyolo, importlib.metadata as m; "
         "print(torch.__version__, torch.get_num_threads(), m.version('libreyolo'), "
         "libreyolo.SAMPLE_IMAGE)"], env=a.py_env, capture_output=True, text=True)
    if probe.returncode != 0:
        sys.exit(f"{a.py_python}: cannot import torch and libreyolo (run scripts/install-deps.sh)"
                 f"\n{probe.stderr[-1000:]}")
    py_torch, py_threads, py_libreyolo, sample = probe.stdout.split()
    a.image = os.path.abspath(a.image or sample)
    a.engine = find_engine(a.engine)
    if not a.engine:
        print("engine: missing (pass --engine or build libreyolo-engine); running the Python "
              "LibreYOLO alone", file=sys.stderr)
    elif not a.no_snapshot:
        # Run a copy, so a rebuild during the benchmark cannot swap or remove the binary.
        snap = os.path.join(a.work_dir, "libreyolo-engine")
        shutil.copy2(a.engine, snap)
        a.engine_source, a.engine = a.engine, snap
    if not a.no_train:
        # Ours runs an unprofiled measured window, then the profiler's: enough batches for both.
        n_train = (2 * (a.train_warmup + a.train_steps) + 2) * a.train_batch
        a.dataset = make_dataset(a, os.path.join(a.work_dir, "dataset"), n_train, a.train_imgsz)

    print(f"# engine {getattr(a, 'engine_source', a.engine) or 'missing'}; Python LibreYOLO "
          f"{py_libreyolo} ({a.py_libreyolo}) on torch {py_torch}, torch.get_num_threads() "
          f"{py_threads}; weights {a.weights}; image {a.image}; batch {a.batch}; threads "
          f"{a.threads}; reps {a.reps}; warmup {a.warmup}, runs {a.runs}, profiled "
          f"{a.profiled_runs}; overhead budget "
          f"{a.overhead_budget if a.overhead_budget is not None else 'default'}; train "
          f"{'off' if a.no_train else f'imgsz {a.train_imgsz} batch {a.train_batch} warmup {a.train_warmup} steps {a.train_steps}'}"
          f"; OMP_WAIT_POLICY={env.get('OMP_WAIT_POLICY', '(unset)')}"
          f"{'; GOMP_SPINCOUNT=' + env['GOMP_SPINCOUNT'] if 'GOMP_SPINCOUNT' in env else ''}; loadavg {os.getloadavg()[0]:.2f}", flush=True)
    t_start = time.monotonic()
    ours_kinds = (["auto", "forced"] if "native" in a.collectors else []) + \
        (["auto_lt", "forced_lt"] if "libtorch" in a.collectors else []) + ["notrace"]
    kinds = tuple(ours_kinds) + ("py_notrace", "py_traced")
    runs = {s: {k: [] for k in kinds} for s in sizes}
    train = {"ours": [], "ours_lt": [], "python": [], "ours_no_aux": [], "py_no_aux": []}
    for rep in range(a.reps):
        for s in sizes:
            if a.engine:
                for kind in ours_kinds:
                    r = engine_infer(a, env, s, kind, f"{kind}{s}")
                    runs[s][kind].append(r)
                    extra = ""
                    if kind.startswith("auto") and "error" not in r:
                        probes = ", ".join(f"{v:.1f}" for v in r["probe_overhead_pct"] or [])
                        extra = f", on {abbreviate(r['switches_on'])} (probes {probes} %)"
                    print(f"  rep {rep + 1} {s}px ours {kind:10s}: " + (r.get("error") or
                          f"p50 {fmt(r['p50_ms'])} ms, forward {fmt(r['forward_ms'])} ms, "
                          f"overhead {fmt_ci(r)}{extra}") +
                          f"  ({r['wall_s']:.0f} s)", flush=True)
            if a.no_peer:
                continue
            for kind, traced in (("py_notrace", False), ("py_traced", True)):
                r = python_infer(a, env, s, traced, f"{kind}{s}")
                runs[s][kind].append(r)
                print(f"  rep {rep + 1} {s}px {kind:15s}: " + (r.get("error") or
                      f"p50 {fmt(r['p50_ms'])} ms, forward {fmt(r['forward_ms'])} ms") +
                      f"  ({r['wall_s']:.0f} s)", flush=True)
        if a.no_train:
            continue
        for who in ("ours", "ours_lt", "python", "ours_no_aux", "py_no_aux"):
            mine = who.startswith("ours")
            if mine and not a.engine or not mine and a.no_peer:
                continue
            if who == "ours_lt" and "libtorch" not in a.collectors:
                continue
            if who == "ours":
                r = engine_train(a, env, "train_ours")
            elif who == "ours_lt":
                r = engine_train(a, env, "train_ours_lt", collector="libtorch")
            elif who == "ours_no_aux":
                r = engine_train(a, env, "train_ours_no_aux", aux_weight=0)
            else:
                r = python_train(a, f"train_{who}", no_aux=who == "py_no_aux")
            train[who].append(r)
            print(f"  rep {rep + 1} train {a.train_imgsz}px {who:11s}: " + (r.get("error") or
                  f"step {fmt(r['step_ms'])} ms, forward {fmt(r['forward_ms'])}, backward "
                  f"{fmt(r['backward_ms'])}, optimizer {fmt(r['optimizer_ms'])} ms" +
                  (f", overhead {fmt_ci(r)}" if mine else "")) +
                  f"  ({r['wall_s']:.0f} s)", flush=True)

    def med(s, kind, key):
        return median([r.get(key) for r in runs[s][kind] if "error" not in r])

    results, misses = [], 0
    print()
    if sizes:
        print("inference (ms; ratio = ours / Python LibreYOLO)")
        print(f"{'imgsz':>5} | {'ours fwd':>8} {'py fwd':>8} {'ratio':>6} {'':4} | {'ours e2e':>8} "
              f"{'py e2e':>8} {'ratio':>6} {'':4} | {'ours trc':>8} {'py trc':>8} {'ratio':>6} | "
              f"{'ovh auto':>8} {'CI':>15} {'':4} {'auto on':>7} | {'ovh forced':>10} {'CI':>15}")
    for s in sizes:
        cf, pf = med(s, "notrace", "forward_ms"), med(s, "py_notrace", "forward_ms")
        ce, pe = med(s, "notrace", "p50_ms"), med(s, "py_notrace", "p50_ms")
        ct, pt = med(s, "auto", "p50_ms"), med(s, "py_traced", "p50_ms")
        ov, ovf = med(s, "auto", "overhead_pct"), med(s, "forced", "overhead_pct")

        def med_ci(kind):
            ok = [r for r in runs[s][kind] if "error" not in r]
            return (median([ci_bound(r, 0) for r in ok]), median([ci_bound(r, 1) for r in ok]))

        ov_ci, ovf_ci = med_ci("auto"), med_ci("forced")
        rf, re_, rt = ratio(cf, pf), ratio(ce, pe), ratio(ct, pt)
        # What the auto runs left on, most frequent first ("SMF" all on, "---" all off).
        kept = collections.Counter(abbreviate(r["switches_on"]) for r in runs[s]["auto"]
                                   if "error" not in r)
        auto_on = "/".join(k for k, _ in kept.most_common()) or "-"
        row = {"imgsz": s, "ours_forward_ms": cf, "python_forward_ms": pf, "forward_ratio": rf,
               "forward": verdict(rf, lambda v: v <= 1.0), "ours_e2e_p50_ms": ce,
               "python_e2e_p50_ms": pe, "e2e_ratio": re_, "e2e": verdict(re_, lambda v: v < 1.0),
               "ours_traced_p50_ms": ct, "python_traced_p50_ms": pt, "traced_ratio": rt,
               "overhead_pct": ov, "overhead": verdict(ov, lambda v: v <= 3.0),
               "overhead_ci_pct": list(ov_ci), "auto_switches_on": dict(kept),
               "overhead_forced_on_pct": ovf, "overhead_forced_on_ci_pct": list(ovf_ci)}
        misses += sum(row[k] == "MISS" for k in ("forward", "e2e", "overhead"))
        results.append(row)
        print(f"{s:>5} | {fmt(cf):>8} {fmt(pf):>8} {fmt(rf, '{:.2f}'):>6} {row['forward']:4} | "
              f"{fmt(ce):>8} {fmt(pe):>8} {fmt(re_, '{:.2f}'):>6} {row['e2e']:4} | "
              f"{fmt(ct):>8} {fmt(pt):>8} {fmt(rt, '{:.2f}'):>6} | "
              f"{fmt(ov, '{:.2f}%'):>8} {fmt_pair(ov_ci):>15} {row['overhead']:4} {auto_on:>7} | "
              f"{fmt(ovf, '{:.2f}%'):>10} {fmt_pair(ovf_ci):>15}")
    if sizes:
        print("medians over reps. fwd: stages_ms.forward (mean of the synced iterations), ours "
              "--no-trace vs `libreyolo profile infer --no-trace`; e2e: latency p50 of the same runs; "
              "trc: latency p50 as each tool runs by default (trace on: ours measures an unprofiled "
              "window, the Python tool's measured iterations run under torch.profiler); ovh auto: "
              "profiler.overhead_pct of our traced run with the default switches (the interleaved "
              "A/B estimate: median paired difference of single-iteration windows; CI: its "
              "sign-test interval, medians of each rep's bounds), 'auto on' what they kept (S "
              "shapes, M memory, F FLOPs, - off); ovh forced: all three forced on (shapes on). "
              "Targets: fwd ratio <= 1.0, e2e ratio < 1.0, ovh auto <= 3%. On a loaded machine "
              "(loadavg above) read the intervals: a wide one says the machine was too noisy to "
              "tell.")
    collector_rows = []
    if sizes and a.engine:
        # The CPU collectors side by side: ours (native) and LibTorch's profiler, same run.
        print()
        print("profiler overhead by CPU collector (overhead_pct, median over reps [CI bounds' "
              "medians]; ratio = native / libtorch)")
        print(f"{'imgsz':>5} | {'native auto':>11} {'CI':>15} {'on':>4} | {'libtorch auto':>13} "
              f"{'CI':>15} {'on':>4} | {'native forced':>13} {'CI':>15} | {'libtorch forced':>15} "
              f"{'CI':>15} | {'ratio':>5}")
        for s in sizes:
            def cell(kind):
                ok = [r for r in runs[s].get(kind, []) if "error" not in r]
                kept = collections.Counter(abbreviate(r["switches_on"]) for r in ok)
                return (med(s, kind, "overhead_pct") if ok else None,
                        (median([ci_bound(r, 0) for r in ok]), median([ci_bound(r, 1) for r in ok]))
                        if ok else (None, None), "/".join(k for k, _ in kept.most_common()) or "-")
            na, la, nf, lf = cell("auto"), cell("auto_lt"), cell("forced"), cell("forced_lt")
            rr = ratio(nf[0], lf[0]) if nf[0] is not None and lf[0] not in (None, 0) else None
            collector_rows.append({"imgsz": s, "native_auto_pct": na[0], "native_auto_ci": list(na[1]),
                                   "libtorch_auto_pct": la[0], "libtorch_auto_ci": list(la[1]),
                                   "native_forced_pct": nf[0], "native_forced_ci": list(nf[1]),
                                   "libtorch_forced_pct": lf[0], "libtorch_forced_ci": list(lf[1]),
                                   "forced_ratio": rr,
                                   "native_forced_goal": verdict(nf[0], lambda v: v <= 3.0)})
            print(f"{s:>5} | {fmt(na[0], '{:.2f}%'):>11} {fmt_pair(na[1]):>15} {na[2]:>4} | "
                  f"{fmt(la[0], '{:.2f}%'):>13} {fmt_pair(la[1]):>15} {la[2]:>4} | "
                  f"{fmt(nf[0], '{:.2f}%'):>13} {fmt_pair(nf[1]):>15} | "
                  f"{fmt(lf[0], '{:.2f}%'):>15} {fmt_pair(lf[1]):>15} | {fmt(rr, '{:.2f}'):>5}")
        print("forced: shapes, memory and FLOPs on. Goal (issue 13): native forced (shapes on) "
              "<= 3 % at 320 and 640 px on the CPU.")
    train_row = None
    if not a.no_train:
        def tmed(who, key):
            return median([r.get(key) for r in train[who] if "error" not in r])
        print()
        print(f"training, {a.train_imgsz} px, batch {a.train_batch} (ms per step; ratio = ours / "
              f"Python LibreYOLO)")
        print(f"{'':>12} | {'ours':>8} {'python':>8} {'ratio':>6} | {'ours noaux':>10} "
              f"{'py noaux':>8} {'ratio':>6}")
        train_row = {}
        for key in ("step_ms", "forward_ms", "backward_ms", "optimizer_ms", "ema_ms",
                    "dataload_ms", "img_per_s"):
            o, p = tmed("ours", key), tmed("python", key)
            on, q = tmed("ours_no_aux", key), tmed("py_no_aux", key)
            train_row[key] = {"ours": o, "python": p, "ratio": ratio(o, p), "ours_no_aux": on,
                              "python_no_aux": q, "ratio_no_aux": ratio(on, q)}
            print(f"{key:>12} | {fmt(o):>8} {fmt(p):>8} {fmt(ratio(o, p), '{:.2f}'):>6} | "
                  f"{fmt(on):>10} {fmt(q):>8} {fmt(ratio(on, q), '{:.2f}'):>6}")
        for who in ("ours", "ours_lt"):
            ok = [r for r in train[who] if "error" not in r]
            if ok:
                ci = (median([ci_bound(r, 0) for r in ok]), median([ci_bound(r, 1) for r in ok]))
                print(f"profiler overhead of a training step, {'native' if who == 'ours' else 'libtorch'}"
                      f" collector: {fmt(tmed(who, 'overhead_pct'), '{:.2f}%')} {fmt_pair(ci)} "
                      f"(switches on: {abbreviate(ok[0]['switches_on'])})")
        print("step_ms: each tool's own (unsynced) step time: ours from its unprofiled measured "
              "window, the Python tool's from its first profiled steps (it has no unprofiled "
              "window); phase rows: ours config.measured_phases_ms (unprofiled), the Python "
              "tool's synced phase walls under its profiler (its EMA update is in no phase). "
              "ours, python: LibreYOLO9 with its PGI auxiliary branch (aux_weight 0.25, the "
              "Python tool's default; python: `libreyolo profile run`); ours noaux: "
              "--aux-weight 0; py noaux: the same training through the Python API with "
              "aux_weight=0.")
    print(f"Total {time.monotonic() - t_start:.0f} s; loadavg {os.getloadavg()[0]:.2f}.")
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"settings": {k: v for k, v in vars(a).items() if k != "py_env"},
                       "python": {"torch": py_torch, "threads": py_threads,
                                  "libreyolo": py_libreyolo},
                       "omp_wait_policy": env.get("OMP_WAIT_POLICY"), "results": results,
                       "collectors": collector_rows,
                       "train": train_row, "runs": {str(s): v for s, v in runs.items()},
                       "train_runs": train}, f, indent=1)
    return 1 if a.strict and misses else 0


if __name__ == "__main__":
    sys.exit(main())
