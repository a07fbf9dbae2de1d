#!/usr/bin/env python3
"""Agreement with Holistic Trace Analysis (HTA 0.5.0) on every fixture trace with GPU kernels.

Usage: hta_agreement.py --cli build/client/libreyolo TRACE [TRACE...]

For each trace, runs `libreyolo profile summary/kernels --json` and HTA (one trace per temporary
folder: HTA reads every trace in a folder), and checks ours against HTA within 0.5 %:

  kernel_total      per-kernel total time (HTA get_gpu_kernel_breakdown, "sum (us)")
  kernel_count      per-kernel call count per step (HTA "sum (us)" / "mean (us)", D8)
  kernel_ms_step    kernel time per step (the sum of those totals / real_steps)
  kernels_per_step  the sum of those counts / real_steps
  active_ms_step    GPU active time per step (HTA get_temporal_breakdown: kernel_time - idle_time)
  busy_ms_step      kernel-only union per step (HTA temporal breakdown on HTA's kernel rows only)
  util_raw          busy / (end of the last kernel, or w1, minus w0), from HTA's own rows
  comm_ms_step      communication union per step (HTA's kernel-type breakdown)
  comm_exposed_ms_step  the part of it no computation overlaps (same breakdown)
  comm_overlap_pct  HTA get_comm_comp_overlap (rounded by HTA to 0.01 %)

Where a definition differs on purpose, HTA's own table is first brought to ours, and the
difference is named (see DIFFERENCES); the numbers are then HTA's computations on that table.
Exit 0 when every check passes, 1 otherwise. HTA_AGREEMENT_VERBOSE=1 prints every comparison.
"""

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"  # else HTA rounds every kernel to whole us

import pandas as pd  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402

REL_TOL = 0.005

DIFFERENCES = {
    "D1 window": "HTA keeps a GPU activity whose launch starts at any time up to the last "
                 "ProfilerStep's end (and keeps everything with fewer than two steps); ours keeps "
                 "it when its launch starts in [w0, w1) and leaves out activities with no launch "
                 "call. HTA's rows are restricted to ours before HTA computes.",
    "D2 kernels": "HTA's kernel breakdown and temporal breakdown include memcpy/memset rows "
                  "(MEMORY); our kernel metrics are cat == kernel only, our active time includes "
                  "them. Kernel checks use HTA's non-MEMORY kernel rows.",
    "D3 utilisation": "HTA's temporal breakdown divides by the span of the GPU activities (first "
                      "start to last end); ours by max(w1, last kernel end) - w0, the span from "
                      "the window's CPU start. Checked against that span over HTA's kernel rows.",
    "D4 names": "our JSON cuts raw kernel names to 90 characters: per-kernel totals are "
                "compared by the cut name on both sides.",
    "D5 GPU work": "HTA treats every row on a GPU stream as GPU work, including cuda_sync rows "
                   "(\"Stream Wait Event\"); ours only kernels, memcpy and memset. Those rows "
                   "are removed from HTA's table.",
    "D6 no steps": "without ProfilerStep events the window is the whole trace, from events HTA "
                   "does not load too (the `Trace` span): utilisation divides HTA's busy time by "
                   "our window length (checked against the oracle), which ends at or after the "
                   "last kernel.",
    "D7 communication": "our communication kernels are the `communication` category, HTA's "
                        "those whose name matches NCCL, and our other kernels are every non-"
                        "communication kernel, HTA's its COMPUTATION type; comm_overlap_pct is "
                        "compared directly, so the test fails where the two selections differ.",
    "D8 counts": "our counts per step are integers, the Python LibreYOLO's rule (total // "
                 "steps; a kernel row at least 1): HTA's totals are put through the same rule "
                 "before they are compared.",
}


class Checker:
    def __init__(self):
        self.failures = 0
        self.worst = {}

    def close(self, trace, metric, ours, hta, abs_tol=0.0):
        diff = abs(ours - hta)
        rel = diff / abs(hta) if hta else (0.0 if diff == 0 else math.inf)
        ok = diff <= max(REL_TOL * abs(hta), abs_tol)
        key = metric
        self.worst[key] = max(self.worst.get(key, 0.0), rel)
        if os.environ.get("HTA_AGREEMENT_VERBOSE"):
            print(f"  {trace}: {metric}: ours {ours!r} HTA {hta!r}")
        if not ok:
            self.failures += 1
            print(f"FAIL {trace}: {metric}: ours {ours!r} vs HTA {hta!r} (rel {rel:.3g})")
        return ok

    def fail(self, trace, what):
        self.failures += 1
        print(f"FAIL {trace}: {what}")


def run_cli(cli, args):
    out = subprocess.run([cli, "profile", *args, "--json"], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout)


def hta_for(trace_path):
    tmp = tempfile.mkdtemp(prefix="hta_agreement_")
    shutil.copy(trace_path, tmp)
    try:
        return TraceAnalysis(trace_dir=tmp, include_last_profiler_step=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def restrict_to_our_window(analysis):
    """D1: keep HTA's GPU rows whose launch (same correlation, a CPU row) starts in [w0, w1)."""
    t = analysis.t
    rank = t.get_ranks()[0]
    df = t.get_trace(rank)
    sym = t.symbol_table.get_sym_table()
    names = df["name"].map(lambda i: sym[i])
    cats = df["cat"].map(lambda i: sym[i]).str.lower()
    end = df["ts"] + df["dur"]  # HTA aligns "ts" to the trace start but leaves "end" absolute
    steps = df[names.str.fullmatch(r"ProfilerStep#[0-9]+") & df["stream"].eq(-1)]
    gpu = df["stream"].ne(-1)
    # D5: only kernels, memcpy and memset are GPU work (cuda_sync rows are not).
    df = df[~gpu | cats.isin(["kernel", "gpu_memcpy", "gpu_memset"])]
    names, cats, end = names[df.index], cats[df.index], end[df.index]
    gpu = df["stream"].ne(-1)
    launches = df[cats.isin(["cuda_runtime", "cuda_driver"]) & df["correlation"].ge(0)]
    launches = launches.drop_duplicates("correlation", keep="first")
    launch_ts = df["correlation"].map(launches.set_index("correlation")["ts"])
    if len(steps) > 0:
        w0, w1 = steps["ts"].min(), (steps["ts"] + steps["dur"]).max()
    else:
        w0, w1 = df["ts"].min(), end.max()
    by_launch = (gpu & launch_ts.notna()).any()
    if by_launch:
        keep_gpu = gpu & launch_ts.notna() & launch_ts.ge(w0) & launch_ts.lt(w1)
    else:
        keep_gpu = gpu & df["ts"].ge(w0) & df["ts"].lt(w1)
    df = df[~gpu | keep_gpu].copy()
    t.traces[rank] = df
    return rank, df, sym, w0, w1, len(steps) > 0


def temporal_active_us(analysis):
    tb = analysis.get_temporal_breakdown(visualize=False)
    return float(tb["kernel_time(us)"].iloc[0] - tb["idle_time(us)"].iloc[0])


def check_trace(chk, cli, path):
    name = os.path.basename(path)
    summary = run_cli(cli, ["summary", path])
    if not summary.get("kernels_per_step"):
        print(f"skip {name}: no GPU kernels")
        return False
    kernels = run_cli(cli, ["kernels", path, "--top", "0"])
    steps = summary["real_steps"]

    a = hta_for(path)
    rank, df, sym, w0, w1, has_steps = restrict_to_our_window(a)
    cats = df["cat"].map(lambda i: sym[i]).str.lower()
    kernel_rows = df[df["stream"].ne(-1) & cats.eq("kernel")]

    # Per-kernel totals and counts (HTA's kernel breakdown, MEMORY rows left out: D2).
    kt, km = a.get_gpu_kernel_breakdown(visualize=False, duration_ratio=1.0, num_kernels=10**9,
                                       include_memory_kernels=False)
    km = km[km["kernel_type"].ne("MEMORY")]
    hta_k = {}
    hta_calls = 0
    for _, r in km.iterrows():
        cut = str(r["name"])[:90]
        total, count = hta_k.get(cut, (0.0, 0))
        # D8: each kernel's count per step by our rule, then summed over names cut alike (D4).
        calls = round(r["sum (us)"] / r["mean (us)"])
        hta_calls += calls
        hta_k[cut] = (total + float(r["sum (us)"]), count + max(calls // steps, 1))
    ours_k = {}
    for r in kernels["kernels"]:
        total, count = ours_k.get(r["raw_name"], (0.0, 0))
        ours_k[r["raw_name"]] = (total + r["ms_per_step"] * steps * 1000,
                                 count + r["count_per_step"])
    if set(hta_k) != set(ours_k):
        chk.fail(name, f"kernel names differ: only ours {sorted(set(ours_k) - set(hta_k))[:3]}, "
                       f"only HTA {sorted(set(hta_k) - set(ours_k))[:3]}")
    for k in sorted(set(hta_k) & set(ours_k)):
        chk.close(name, "kernel_total", ours_k[k][0], hta_k[k][0])
        # D8: our rows count per step, total // steps and at least 1 (the Python tool's rule).
        chk.close(name, "kernel_count", ours_k[k][1], hta_k[k][1])
    hta_sum_ms = sum(v[0] for v in hta_k.values()) / 1000
    chk.close(name, "kernel_ms_step", summary["gpu_kernel_ms_per_step"], hta_sum_ms / steps)
    chk.close(name, "kernels_per_step", summary["kernels_per_step"],
              hta_calls // steps)

    # Active time: HTA's temporal breakdown over the window's GPU rows (kernels, memcpy, memset).
    chk.close(name, "active_ms_step", summary["gpu_active_ms_per_step"],
              temporal_active_us(a) / 1000 / steps)

    # Busy time: the same breakdown over HTA's kernel rows only (D2).
    a.t.traces[rank] = df[df["stream"].eq(-1) | (df["stream"].ne(-1) & cats.eq("kernel"))]
    busy_us = temporal_active_us(a)
    chk.close(name, "busy_ms_step", summary["gpu_busy_ms_per_step"], busy_us / 1000 / steps)
    # Utilisation over the span from w0 to the end of the last kernel (D3).
    if has_steps:
        span = max(w1, (kernel_rows["ts"] + kernel_rows["dur"]).max()) - w0
    else:  # D6: the whole trace is the window, and it ends at or after the last kernel
        span = summary["window_wall_ms"] * 1000
    chk.close(name, "util_raw", summary["gpu_util_raw"], busy_us / span)
    a.t.traces[rank] = df

    # Communication: HTA's kernel-type breakdown splits time into COMMUNICATION, COMPUTATION and
    # their overlaps; the comm union is every row naming COMMUNICATION, the exposed part those
    # that do not also name COMPUTATION.
    types = kt["kernel_type"].astype(str)
    comm_rows = types.str.contains("COMMUNICATION")
    hta_comm = kt[comm_rows]["sum"].sum()
    hta_exposed = kt[comm_rows & ~types.str.contains("COMPUTATION")]["sum"].sum()
    chk.close(name, "comm_ms_step", summary["comm_ms_per_step"], hta_comm / 1000 / steps)
    chk.close(name, "comm_exposed_ms_step", summary["comm_exposed_ms_per_step"],
              hta_exposed / 1000 / steps)
    comm = summary.get("comm_ms_per_step") or 0.0
    if comm > 0:
        ov = a.get_comm_comp_overlap(visualize=False)
        chk.close(name, "comm_overlap_pct", summary["comm_overlap_pct"],
                  float(ov["comp_comm_overlap_pctg"].iloc[0]), abs_tol=0.006)
    return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("traces", nargs="+")
    a = ap.parse_args()
    chk = Checker()
    checked = 0
    for path in a.traces:
        if check_trace(chk, a.cli, path):
            checked += 1
    print("deliberate differences:")
    for k, v in DIFFERENCES.items():
        print(f"  {k}: {v}")
    print(f"{checked} traces with GPU kernels compared with HTA; max relative difference per "
          "metric:")
    for k, v in sorted(chk.worst.items()):
        print(f"  {k:18s} {v:.3g}")
    if checked == 0:
        print("FAIL: no trace with GPU kernels")
        return 1
    if chk.failures:
        print(f"{chk.failures} checks failed")
        return 1
    print("all checks within 0.5 %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
