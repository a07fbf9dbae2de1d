#!/usr/bin/env python3
"""Loads our profile_trace.json with Holistic Trace Analysis (HTA 0.5.0) and runs every analysis
HTA has for a single-rank trace; with --kineto, also on LibTorch's own Kineto export of the same
window. Each analysis that works on Kineto's export must work on ours, CallGraph included, and
HTA must see no negative duration in ours (HTA_DISABLE_NS_ROUNDING=1: no µs rounding).
Prints one line per analysis and trace; exits 1 on any such failure, 2 on a usage error.

  hta_check.py OUR_TRACE [--kineto KINETO_TRACE]
"""
import argparse
import os
import shutil
import sys
import tempfile
import warnings

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"
warnings.filterwarnings("ignore")

from hta.common.call_stack import CallGraph  # noqa: E402
from hta.trace_analysis import TraceAnalysis  # noqa: E402


def analyses(t, out_dir):
    """name -> callable: every TraceAnalysis analysis that needs no extra input."""
    return {
        "temporal_breakdown": lambda: t.get_temporal_breakdown(visualize=False),
        "gpu_kernel_breakdown": lambda: t.get_gpu_kernel_breakdown(visualize=False),
        "comm_comp_overlap": lambda: t.get_comm_comp_overlap(visualize=False),
        "idle_time_breakdown": lambda: t.get_idle_time_breakdown(visualize=False),
        "cuda_kernel_launch_stats": lambda: t.get_cuda_kernel_launch_stats(visualize=False),
        "queue_length_summary": lambda: t.get_queue_length_summary(ranks=[0]),
        "memory_bw_summary": lambda: t.get_memory_bw_summary(ranks=[0]),
        "frequent_cuda_kernel_sequences": lambda: t.get_frequent_cuda_kernel_sequences(
            operator_name="aten::conv2d", output_dir=out_dir, visualize=False),
        "call_graph": lambda: CallGraph(t.t),
    }


def run_all(trace, label):
    """Returns ({analysis: error or None}, min duration HTA sees)."""
    d = tempfile.mkdtemp(prefix="hta_")
    try:
        # HTA reads every *.json in the folder as a rank's trace: the trace alone, in its own.
        shutil.copy(trace, os.path.join(d, "trace.json"))
        t = TraceAnalysis(trace_dir=d)
        df = t.t.get_trace(0)
        min_dur = float(df["dur"].min()) if len(df) else 0.0
        results = {}
        for name, fn in analyses(t, d).items():
            try:
                fn()
                results[name] = None
            except Exception as e:  # noqa: BLE001 -- HTA raises anything
                results[name] = f"{type(e).__name__}: {str(e)[:120]}"
        return results, min_dur, len(df)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--kineto")
    a = ap.parse_args()
    for p in [a.trace] + ([a.kineto] if a.kineto else []):
        if not os.path.isfile(p):
            print(f"hta_check: {p} not found", file=sys.stderr)
            return 2
    ours, ours_min, ours_n = run_all(a.trace, "ours")
    print(f"ours: {ours_n} events, smallest dur {ours_min} us")
    failures = []
    if ours_min < 0:
        failures.append(f"HTA sees a negative duration ({ours_min} us) in our trace")
    if ours["call_graph"] is not None:
        failures.append(f"CallGraph fails on our trace: {ours['call_graph']}")
    kin = None
    if a.kineto:
        kin, kin_min, kin_n = run_all(a.kineto, "kineto")
        print(f"kineto: {kin_n} events, smallest dur {kin_min} us")
    for name, err in ours.items():
        k = kin.get(name) if kin else "(no Kineto trace)"
        k_text = "ok" if kin and k is None else (k or "")
        print(f"  {name:32s} ours: {'ok' if err is None else err} | kineto: {k_text}")
        if kin is not None and k is None and err is not None:
            failures.append(f"{name} works on Kineto's export but not on ours: {err}")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
