#!/usr/bin/env python3
"""The table of scripts/gpu-check.sh: reads what its steps wrote under --out and prints
gpu-report.md (also written there). Every number comes from a file a step wrote; a step that
did not run or a number a profile lacks shows as n/a, never a guess.

Rows: the GPU collector, kernel ms per step ours (CUPTI) vs LibTorch's own Kineto trace of the
same configuration (goal: within 2 %), kernels and launches per step, GPU busy and utilisation,
Tensor Core share fp32 vs --half (goal: > 0 with --half), cudaMalloc/Free per step, peak
allocated/reserved, the profiler's overhead (goal: <= 2 % on a training step), latency ours vs
the Python LibreYOLO on the same device, CUDA-event latency, and each step's exit code.
"""
import argparse
import glob
import json
import os
import subprocess
import sys


def load(path):
    if not path:
        return None
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def first(pattern):
    hits = sorted(glob.glob(pattern, recursive=True))
    return hits[0] if hits else None


def summary(libreyolo, path):
    """Our reader's view of any profile or trace (`libreyolo profile summary --json`)."""
    if not path or not os.path.exists(path):
        return None
    try:
        r = subprocess.run([libreyolo, "profile", "summary", "--json", path],
                           capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    try:
        return json.loads(r.stdout)
    except ValueError:
        return None


def num(d, *keys):
    for k in keys:
        if not isinstance(d, dict):
            return None
        d = d.get(k)
    return d if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def fmt(v, unit="", digits=2):
    if v is None:
        return "n/a"
    return f"{v:.{digits}f}{unit}"


def ratio(a, b):
    return a / b if a is not None and b not in (None, 0) else None


def pct_diff(a, b):
    return 100.0 * (a - b) / b if a is not None and b not in (None, 0) else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--libreyolo", required=True, help="our client binary")
    a = ap.parse_args()
    out = a.out

    infer = load(first(f"{out}/infer/**/profile.json"))
    half = load(first(f"{out}/half/**/profile.json"))
    run = load(first(f"{out}/run/**/profile.json"))
    infer_lt = load(first(f"{out}/infer_lt/**/profile.json"))
    run_lt = load(first(f"{out}/run_lt/**/profile.json"))
    ours_k = summary(a.libreyolo, first(f"{out}/kineto/**/profile_trace.json"))
    kineto = summary(a.libreyolo, first(f"{out}/kineto/**/kineto_trace.json"))
    python = load(first(f"{out}/python/**/profile.json"))
    twice1 = load(first(f"{out}/twice/job1/**/profile.json"))
    twice2 = load(first(f"{out}/twice/job2/**/profile.json"))
    ddp = summary(a.libreyolo, f"{out}/ddp/prof") if os.path.isdir(f"{out}/ddp/prof") else None
    export = load(first(f"{out}/export/**/profile.json"))
    unit = load(f"{out}/unit.json")

    rows = []

    def row(metric, value, goal=""):
        rows.append((metric, value, goal))

    def prof(p, key):
        return (p or {}).get("profiler", {}).get(key) if isinstance((p or {}).get("profiler"), dict) else None

    row("GPU collector (infer / run)", f"{prof(infer, 'gpu_collector') or 'n/a'} / "
        f"{prof(run, 'gpu_collector') or 'n/a'}", "cupti")
    dev = (infer or {}).get("device") or {}
    row("device", f"{dev.get('name', 'n/a')} ({fmt(dev.get('memory_mb'), ' MB', 0)})")
    k_ours, k_kineto = num(ours_k, "gpu_kernel_ms_per_step"), num(kineto, "gpu_kernel_ms_per_step")
    row("kernel ms/step: ours (CUPTI) vs LibTorch's Kineto",
        f"{fmt(k_ours, ' ms')} vs {fmt(k_kineto, ' ms')} ({fmt(pct_diff(k_ours, k_kineto), ' %', 1)})",
        "within 2 %")
    row("kernels/step: ours vs Kineto",
        f"{fmt(num(ours_k, 'kernels_per_step'), '', 1)} vs {fmt(num(kineto, 'kernels_per_step'), '', 1)}",
        "equal")
    for name, p in (("infer fp32", infer), ("infer --half", half), ("run (train step)", run)):
        row(f"{name}: GPU busy ms/step, util",
            f"{fmt(num(p, 'gpu_busy_ms_per_step'), ' ms')}, {fmt(num(p, 'gpu_util'), ' %', 1)}")
        row(f"{name}: launches/step, kernels/step",
            f"{fmt(num(p, 'launches_per_step'), '', 1)}, {fmt(num(p, 'kernels_per_step'), '', 1)}")
        row(f"{name}: Tensor Core share", fmt(num(p, "tensorcore_pct"), " %", 1),
            "> 0" if p is half else "")
        row(f"{name}: cudaMalloc/Free per step", fmt(num(p, "cuda_mallocs_per_step"), "", 2))
        row(f"{name}: peak allocated / reserved",
            f"{fmt(num(p, 'peak_vram_mb'), ' MB', 1)} / {fmt(num(p, 'memory', 'peak_reserved_mb') or num(p, 'peak_reserved_mb'), ' MB', 1)}")
        row(f"{name}: profiler overhead", fmt(num(p, "profiler", "overhead_pct"), " %", 1),
            "<= 2 %" if p is run else "")
    for name, native, libtorch, goal in (("infer fp32", infer, infer_lt, "<= 1 %"),
                                         ("run (train step)", run, run_lt, "<= 2 %")):
        row(f"{name}: profiler overhead, native vs libtorch CPU collector "
            f"({prof(native, 'cpu_collector') or 'n/a'} / {prof(libtorch, 'cpu_collector') or 'n/a'})",
            f"{fmt(num(native, 'profiler', 'overhead_pct'), ' %', 1)} "
            f"{prof(native, 'overhead_ci_pct') or ''} vs "
            f"{fmt(num(libtorch, 'profiler', 'overhead_pct'), ' %', 1)} "
            f"{prof(libtorch, 'overhead_ci_pct') or ''}", goal)
    # Two jobs in one worker (two CUPTI collections in one process): the second must measure what
    # the first did (PyTorch's profiler gets a process's second session wrong).
    t1, t2 = num(twice1, "gpu_kernel_ms_per_step"), num(twice2, "gpu_kernel_ms_per_step")
    row("two jobs in one worker: kernel ms/step, job 1 vs job 2",
        f"{fmt(t1, ' ms', 3)} vs {fmt(t2, ' ms', 3)} ({fmt(pct_diff(t2, t1), ' %', 1)})",
        "within 5 %")
    row("two jobs in one worker: kernels/step, job 1 vs job 2",
        f"{fmt(num(twice1, 'kernels_per_step'), '', 1)} vs "
        f"{fmt(num(twice2, 'kernels_per_step'), '', 1)}",
        "equal")
    # Data-parallel: the gang's cross-rank view (summary DIR/ of its prof/ folder).
    row("ddp: world size, backend",
        f"{(ddp or {}).get('world_size', 'n/a')}, {(ddp or {}).get('backend') or 'n/a'}",
        "nccl on a GPU")
    row("ddp: step, time in collectives, exposed (ms/step)",
        f"{fmt(num(ddp, 'step_ms_mean'), ' ms')}, {fmt(num(ddp, 'comm_ms'), ' ms')}, "
        f"{fmt(num(ddp, 'exposed_comm_ms'), ' ms')}")
    row("ddp: all-reduce bytes/step, algbw, busbw",
        f"{fmt(num(ddp, 'allreduce_bytes'), ' B', 0)}, {fmt(num(ddp, 'algbw_gbps'), ' GB/s', 3)}, "
        f"{fmt(num(ddp, 'busbw_gbps'), ' GB/s', 3)}")
    row("ddp: verdict", ((ddp or {}).get("verdict") or "n/a").replace("|", "/"))
    # Another family through its TorchScript export.
    row("export (yolox): model, precision",
        f"{(export or {}).get('model', 'n/a')}, "
        f"{((export or {}).get('config') or {}).get('export_precision', 'n/a')}")
    row("export (yolox): latency p50, kernels/step",
        f"{fmt(num(export, 'latency', 'p50_ms'), ' ms')}, "
        f"{fmt(num(export, 'kernels_per_step'), '', 1)}")
    ours_p50 = num(infer, "latency", "p50_ms")
    py_p50 = num(python, "latency", "p50_ms")
    row("latency p50: ours vs Python LibreYOLO (fp32)",
        f"{fmt(ours_p50, ' ms')} vs {fmt(py_p50, ' ms')} (ratio {fmt(ratio(ours_p50, py_p50), '', 3)})",
        "ratio < 1")
    row("latency p50: host wall vs CUDA events (fp32)",
        f"{fmt(ours_p50, ' ms')} vs {fmt(num(infer, 'latency', 'cuda_event_p50_ms'), ' ms')}")
    if unit:
        row("engine_cuda_runtime_test", f"{unit.get('tests', 0) - unit.get('failures', 0)}"
            f"/{unit.get('tests', 0)} passed ({unit.get('disabled', 0)} disabled)")
    steps = []
    try:
        with open(f"{out}/steps.tsv") as f:
            steps = [line.rstrip("\n").split("\t") for line in f][1:]
    except OSError:
        pass

    lines = ["# GPU check", "", "| metric | value | goal |", "|---|---|---|"]
    lines += [f"| {m} | {v} | {g} |" for m, v, g in rows]
    lines += ["", "| step | exit | seconds |", "|---|---|---|"]
    lines += [f"| {s[0]} | {s[1]} | {s[2]} |" for s in steps if len(s) == 3]
    text = "\n".join(lines) + "\n"
    with open(f"{out}/gpu-report.md", "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
