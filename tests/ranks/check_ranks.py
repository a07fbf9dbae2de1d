#!/usr/bin/env python3
"""Cross-rank analysis on real DDP traces, checked against what the run guarantees and HTA.

Usage: check_ranks.py --cli build/client/libreyolo ROOT

ROOT is what `make_ddp_traces.py ROOT --pair D` wrote (or tests/ranks/engine_ddp_test.sh, our
own engine's ranks, laid out the same): ROOT/balanced and ROOT/slow, two 2-rank Gloo runs on the
CPU, rank 1 of the slow one sleeping D ms in its data loading per step (ROOT/*/run.txt says so;
ctest passes D = LIBREYOLO_TEST_DDP_DELAY_MS = 600 from tests/CMakeLists.txt). No check depends
on the machine's load or timing: of the slow run only what the injected delay guarantees is
asserted (against D/2), and both runs are checked against HTA's reading of the same traces,
which holds whatever the load. Nothing is asserted of the balanced run's straggler: under
`ctest -j` on CI a rank of it was descheduled ~106 ms per step, a real straggler that our
analysis rightly named (the balanced run's wait once had to stay under D/2; no longer).

  1. slow: `libreyolo profile summary ROOT/slow --json` names rank 1 the straggler, the others'
     wait for it is at least D/2 ms per step, its dataload at least D/2 ms above theirs, and
     the verdict says so.
  2. all-reduce bytes per step = 4 x the model's parameter count (float32 gradients, each
     all-reduced once per step by DDP): exact, both runs.
  3. HTA (Holistic Trace Analysis, TraceAnalysis) on the same folders:
     - as they are, HTA has nothing to say on a CPU-only Gloo run, and this script records why:
       get_comm_comp_overlap keeps only GPU rows (stream != -1): every rank's ratio is 0/0 =
       NaN; get_potential_stragglers looks for communication kernels named ncclKernel* on a
       GPU stream (stream > 0) and fails (ValueError: argmax of an empty sequence) without one.
     - so HTA is given the same run shaped as it expects (SHAPED below): each collective span
       (gloo:all_reduce, on Gloo's thread) becomes a communication kernel COMM_KERNEL + "_..."
       on stream COMM_STREAM, the computation ops (our definition: cpu_op other than c10d::
       calls and record_param_comms, outside data loading) compute kernels on stream
       COMPUTE_STREAM (their union within each step, one kernel per merged interval: HTA
       merges a stream's kernels before its overlap, so the figures are those of one kernel
       per op), each with a launch (cudaLaunchKernel, same correlation) on the CPU at its
       start, so that HTA assigns it to its ProfilerStep.
       Ours counts time per step, inside the ProfilerStep spans only (a collective that runs on
       across the gap between two steps, or past the last one, is cut there): the kernels are
       cut to the same window, as tests/hta/hta_agreement.py restricts HTA's rows to our window
       (its D1). HTA is told to keep the last step (include_last_profiler_step=True: by default
       it drops it, and with it a quarter of this run).
     - both runs, per rank: the time in collectives per step, HTA's own interval merging
       (hta.utils.utils.merge_kernel_intervals) over the rank's communication kernels divided
       by its ProfilerStep count (the same count as ours), against ours (`comm_ms`: the length
       of the union of its collective spans in the window, ms per step; rank_trace.cc) within
       COMM_TOL_MS = 0.01 ms per step (the rest of the JSON's microsecond floats).
     - both runs, from those HTA figures: the rank the others wait for is the one with the
       least time in collectives, their wait the mean of the others' minus its own
       (cross_rank.cc, FindStraggler): ours (`wait_for_rank`, `collective_wait_ms`) must be
       the same rank and the same wait within WAIT_TOL_MS = 2 x COMM_TOL_MS (the others' mean
       and the rank's own each within COMM_TOL_MS). Two ranks whose HTA figures are within
       WAIT_TOL_MS of each other cannot be told apart by the tolerance: either may be ours.
       A straggler, if ours names one (whether it does depends on the load for the balanced
       run), must be HTA's rank the others wait for.
     - both runs: HTA's overlap % per rank against ours (100 x (1 - exposed_comm_ms /
       comm_ms)) within 0.05 percentage point, absolute: HTA rounds its percentage to 0.01
       (0.005 pp at most), the rest is margin for the microsecond floats of the JSON. A ratio
       of a few % makes a relative tolerance meaningless.
     - slow run: HTA's straggler (num_candidates=1) must be ours and the slowed rank.
     - HTA's straggler heuristic, as is, names rank 0 on the shaped slow run, and why: it keeps
       only communication kernels longer than 1 % of the mean iteration
       (min_normalized_duration=0.01), then per iteration names the rank whose last such kernel
       starts latest. The straggler's own all-reduce is short precisely because nobody keeps
       it waiting (Gloo, 21 KB: ~0.3 ms of a step), so in most iterations only the
       waiting rank 0 has a kernel left and is named. On NCCL the transfer itself keeps every
       rank's kernel long, which is what the filter presumes. Where the filter leaves every
       iteration with one rank's kernel only, HTA's per-rank deviation is NaN and it fails
       (ValueError: argmax of an empty sequence) instead. The check therefore runs HTA's
       own algorithm (its _compute_normalized_start_time_of_significant_comm_kernels and
       _get_top_k_stragglers_with_metric, through get_potential_stragglers'
       straggler_identification_impl) with min_normalized_duration=0, and records the default's
       answer.
Exit 0 when every check passes, 1 otherwise.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

# The trace shaped for HTA (shape_for_hta): where it puts the collectives and the computation.
COMM_STREAM = 7
COMPUTE_STREAM = 8
COMM_KERNEL = "ncclKernel"  # HTA's communication kernels are named so (its NCCL_KERNEL_RE)

OVERLAP_TOL_PP = 0.05
COMM_TOL_MS = 0.01  # per step: ours vs HTA's time in collectives per rank
WAIT_TOL_MS = 2 * COMM_TOL_MS  # the others' mean and the least rank's own, each within that
# Data loading: PyTorch's DataLoader span, and our engine's (libreyolo-engine's ranks).
DATALOAD_SPANS = ("enumerate(DataLoader)#", "step/dataload")
FAILURES = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        FAILURES.append(what)


def ours(cli, folder):
    out = subprocess.run([cli, "profile", "summary", folder, "--json"], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout)


def is_compute_op(e, dataload):
    name = e.get("name", "")
    if e.get("cat") != "cpu_op" or name.startswith("c10d::") or name == "record_param_comms":
        return False
    ts, end = e["ts"], e["ts"] + e["dur"]
    return not any(a <= ts and end <= b for a, b in dataload)


def merged(intervals):
    out = []
    for a, b in sorted(intervals):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def clip(ts, end, window):
    """The pieces of [ts, end) inside the merged window."""
    return [(max(ts, a), min(end, b)) for a, b in window if max(ts, a) < min(end, b)]


def shape_for_hta(src, dst):
    """SHAPED: the CPU run as HTA expects a GPU run (module docstring, check 3)."""
    with open(src) as f:
        d = json.load(f)
    events = d["traceEvents"]
    xs = [e for e in events if e.get("ph") == "X" and isinstance(e.get("ts"), (int, float))]
    dataload = [(e["ts"], e["ts"] + e["dur"]) for e in xs
                if e.get("name", "").startswith(DATALOAD_SPANS)]
    steps = [e for e in xs if e.get("name", "").startswith("ProfilerStep#")]
    window = merged([(e["ts"], e["ts"] + e["dur"]) for e in steps])
    main = steps[0]
    step_windows = sorted((e["ts"], e["ts"] + e["dur"]) for e in steps)
    corr = 10_000_000
    added = []

    def launch(stream, kname, ts, end):
        nonlocal corr
        corr += 1
        added.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                      "pid": main["pid"], "tid": main["tid"], "ts": ts, "dur": 0,
                      "args": {"correlation": corr}})
        added.append({"ph": "X", "cat": "kernel", "name": kname, "pid": 0, "tid": stream,
                      "ts": ts, "dur": end - ts,
                      "args": {"device": 0, "stream": stream, "correlation": corr}})

    compute = []
    for e in xs:
        name = e.get("name", "")
        if e.get("cat") in ("cpu_op", "user_annotation") and name.startswith(("gloo:", "nccl:")):
            kname = COMM_KERNEL + "_" + name.replace(":", "_")
            for ts, end in clip(e["ts"], e["ts"] + e["dur"], window):
                launch(COMM_STREAM, kname, ts, end)
        elif is_compute_op(e, dataload):
            compute += clip(e["ts"], e["ts"] + e["dur"], step_windows)
    # HTA merges a stream's compute kernels into their union before any figure we compare
    # (communication_analysis.get_comm_comp_overlap: merge_kernel_intervals), so one kernel per
    # merged interval, cut at each step's edges, gives HTA the same figures as one per op, and
    # parses in seconds instead of half a minute (~128k ops on a 3-step CPU run).
    for a, b in step_windows:
        for ts, end in merged([(x, y) for x, y in compute if a <= x and y <= b]):
            launch(COMPUTE_STREAM, "compute_merged", ts, end)
    # Of the CPU rows HTA's compared figures read only the ProfilerStep spans (its iterations)
    # and the launches added above; the rest (~128k ops and ~69k memory instants on a 3-step
    # run) would only cost its parser time. Metadata rows (ph M) stay.
    step_ids = {id(e) for e in steps}
    kept = [e for e in events if id(e) in step_ids or
            (e.get("ph") not in ("X", "i") and e.get("cat") != "cpu_instant_event")]
    d["traceEvents"] = kept + added
    with open(dst, "w") as f:
        f.write(json.dumps(d))  # dumps: the C encoder; dump(d, f) encodes in Python, ~10x slower


def hta_analysis(folder):
    from hta.trace_analysis import TraceAnalysis
    # HTA drops the last ProfilerStep unless told not to; ours counts every step.
    return TraceAnalysis(trace_dir=folder, include_last_profiler_step=True)


def late_start_no_duration_filter(df, symbol_table, n_stragglers=2, visualize=False):
    """HTA's find_stragglers_with_late_start_comm_kernels with min_normalized_duration=0."""
    from hta.analyzers import straggler as hs
    metric_df, metric_name = hs._compute_normalized_start_time_of_significant_comm_kernels(
        df, symbol_table, visualize, min_normalized_duration=0.0)
    return hs._get_top_k_stragglers_with_metric(metric_df, metric_name, n_stragglers=n_stragglers)


def hta_as_is(folder):
    t = hta_analysis(folder)
    overlap = t.get_comm_comp_overlap(visualize=False)
    nan = all(math.isnan(v) for v in overlap["comp_comm_overlap_pctg"])
    check(nan, f"HTA as is on {folder}: comm/comp overlap NaN on every rank (no GPU rows)")
    try:
        t.get_potential_stragglers(num_candidates=1)
        check(False, "HTA as is: get_potential_stragglers fails without ncclKernel rows")
    except ValueError as e:
        check(True, f"HTA as is: get_potential_stragglers fails without ncclKernel rows ({e})")


def hta_comm_per_step(t):
    """rank -> (HTA's time in collectives, ms per step; its step count), on a SHAPED run."""
    from hta.utils.utils import merge_kernel_intervals
    sym = t.t.symbol_table.get_sym_table()
    out = {}
    for rank, df in t.t.get_all_traces().items():
        names = df["name"].map(lambda i: sym[i])
        kernels = df[df["stream"].eq(COMM_STREAM) & names.str.startswith(COMM_KERNEL)]
        merged = merge_kernel_intervals(kernels[["ts", "dur"]].copy())  # ts, end: us
        steps = names[df["stream"].lt(0) & names.str.startswith("ProfilerStep#")].nunique()
        out[int(rank)] = (float((merged["end"] - merged["ts"]).sum()) / 1e3 / steps, steps)
    return out


def check_comm_and_wait(run, mine, hta):
    """Ours against HTA's: time in collectives per rank, the rank the others wait for, the wait.

    Holds whatever the machine's load did to the run: both read the same trace."""
    comm = {}
    for r in mine["ranks"]:
        hta_ms, hta_steps = hta[r["rank"]]
        comm[r["rank"]] = hta_ms
        check(r["steps"] == hta_steps,
              f"{run} rank {r['rank']}: {r['steps']} steps, HTA {hta_steps}")
        check(abs(r["comm_ms"] - hta_ms) <= COMM_TOL_MS,
              f"{run} rank {r['rank']} time in collectives: ours {r['comm_ms']:.4f} ms/step, "
              f"HTA {hta_ms:.4f} (merge_kernel_intervals; tolerance {COMM_TOL_MS})")
    least = min(comm, key=comm.get)
    others = [ms for rank, ms in comm.items() if rank != least]
    hta_wait = sum(others) / len(others) - comm[least]
    ours_rank, ours_wait = mine["wait_for_rank"], mine["collective_wait_ms"]
    tie = ours_rank in comm and comm[ours_rank] - comm[least] <= WAIT_TOL_MS
    note = ""
    if ours_rank != least:
        note = (f" (a tie: HTA's figures within {WAIT_TOL_MS} ms)" if tie else
                f" (HTA: rank {ours_rank} {comm.get(ours_rank, math.nan):.4f}, "
                f"rank {least} {comm[least]:.4f} ms/step)")
    check(ours_rank == least or tie,
          f"{run}: the others wait for rank {ours_rank}, HTA's least in collectives {least}"
          + note)
    check(ours_wait is not None and abs(ours_wait - hta_wait) <= WAIT_TOL_MS,
          f"{run}: their wait ours {ours_wait if ours_wait is None else round(ours_wait, 4)} "
          f"ms/step, HTA {hta_wait:.4f} (tolerance {WAIT_TOL_MS})")
    if mine["straggler"] is not None:
        check(mine["straggler"] == least,
              f"{run}: our straggler {mine['straggler']} is HTA's least in collectives {least}")
    else:
        print(f"note  {run}: no straggler named (wait {hta_wait:.2f} ms/step by HTA)")


def hta_shaped(folder, mine, expect_straggler):
    run = os.path.basename(os.path.normpath(folder))
    with tempfile.TemporaryDirectory() as tmp:
        for name in os.listdir(folder):
            if name.endswith(".json"):
                shape_for_hta(os.path.join(folder, name), os.path.join(tmp, name))
        t = hta_analysis(tmp)
        check_comm_and_wait(run, mine, hta_comm_per_step(t))
        overlap = t.get_comm_comp_overlap(visualize=False).set_index("rank")
        for r in mine["ranks"]:
            ours_pct = 100.0 * (1.0 - r["exposed_comm_ms"] / r["comm_ms"])
            hta_pct = float(overlap.loc[r["rank"], "comp_comm_overlap_pctg"])  # rounded: 0.01 %
            check(abs(ours_pct - hta_pct) <= OVERLAP_TOL_PP,
                  f"{run} rank {r['rank']} comm/compute overlap: ours {ours_pct:.3f} %, "
                  f"HTA {hta_pct:.3f} % (tolerance {OVERLAP_TOL_PP} pp)")
        if expect_straggler is not None:
            try:
                default = [int(x) for x in t.get_potential_stragglers(num_candidates=1)]
            except ValueError as e:  # every (stream, kernel) left with one rank: std is NaN
                default = f"no answer ({e})"
            print(f"note  HTA's default straggler heuristic: {default} (not compared: its "
                  "duration filter may drop the straggler's short all-reduce; see the docstring)")
            hta_stragglers = [int(x) for x in t.get_potential_stragglers(
                num_candidates=1, straggler_identification_impl=late_start_no_duration_filter)]
            check(hta_stragglers == [expect_straggler] == [mine["straggler"]],
                  f"HTA straggler (late start, no duration filter) {hta_stragglers}, "
                  f"ours {mine['straggler']}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("root")
    args = ap.parse_args()
    slow_dir, balanced_dir = (os.path.join(args.root, n) for n in ("slow", "balanced"))
    with open(os.path.join(slow_dir, "run.txt")) as f:
        run = json.load(f)
    delay = run["delay_ms"]
    slow, balanced = ours(args.cli, slow_dir), ours(args.cli, balanced_dir)

    check(slow["straggler"] == run["slow_rank"],
          f"slow run: straggler {slow['straggler']} (rank {run['slow_rank']} slept {delay} ms)")
    check((slow["collective_wait_ms"] or 0) >= delay / 2,
          f"slow run: the others wait {slow['collective_wait_ms']:.1f} ms >= {delay / 2} ms")
    check((slow["straggler_extra_dataload_ms"] or 0) >= delay / 2,
          f"slow run: its extra dataload {slow['straggler_extra_dataload_ms']:.1f} ms >= "
          f"{delay / 2} ms")
    check(slow["verdict"].startswith(f"rank {run['slow_rank']} is a straggler: its dataload"),
          f"slow run verdict: {slow['verdict']}")
    # The balanced run's straggler, if any, is whatever the load made it: not asserted here,
    # checked against HTA's reading of the trace below (check_comm_and_wait).
    bw = balanced["collective_wait_ms"]
    print(f"note  balanced run: straggler {balanced['straggler']}, the others wait "
          f"{bw if bw is None else round(bw, 2)} ms/step for rank {balanced['wait_for_rank']} "
          "(not asserted: load-dependent)")
    for view, name in ((slow, "slow"), (balanced, "balanced")):
        for r in view["ranks"]:
            check(r["allreduce_bytes"] == run["allreduce_bytes_per_step"],
                  f"{name} rank {r['rank']}: all-reduce {r['allreduce_bytes']} bytes per step "
                  f"= 4 x {run['params']} parameters")

    hta_as_is(balanced_dir)  # the smaller run: the check is of the rows' kinds, not figures
    hta_shaped(slow_dir, slow, expect_straggler=run["slow_rank"])
    hta_shaped(balanced_dir, balanced, expect_straggler=None)
    if FAILURES:
        print(f"{len(FAILURES)} check(s) failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
