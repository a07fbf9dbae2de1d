#!/usr/bin/env python3
"""Independent test oracle for the Chrome-trace analyser (docs/metrics.md).

Python 3.11, standard library only.  Written from docs/metrics.md alone, without
looking at the C++ analyser.

Usage:
    python3 tests/oracle/trace_oracle.py TRACE [TRACE...] [--out-dir DIR]

For every trace (.json or .json.gz; an object with "traceEvents" or a bare list)
it computes the metrics of docs/metrics.md and prints one JSON object per trace,
or writes DIR/<name>.expected.json (<name> = basename without .json/.json.gz).
All times are ms (microseconds / 1000), kept at full float precision.

Readings chosen where docs/metrics.md leaves room (the C++ side should match):

 R1  Usable complete event: dict with ph == "X" and numeric, finite ts (bool is
     not numeric).  Missing dur -> 0; a dur that is present but not numeric makes
     the event unusable (skipped).  A name/cat that is not a string makes the
     event unusable; a missing name/cat is "".  args that is not an object = {}.
 R2  Lower-casing (cat, kernel names) is ASCII only (A-Z -> a-z).  Regexes are
     searched (not anchored) with ASCII \\b semantics (re.ASCII), like ECMAScript.
 R3  Step events: name fully matches ProfilerStep#<digits>; N compared as an
     integer.  Among copies of one N the first (file order) whose lower-cased cat
     is cpu_op/user_annotation is kept, else the first copy.
 R4  "Every metric uses only events in the window" is applied to everything
     before any analysis.  CPU-side complete events, [memory] instants and ac2g
     flow starts are kept only when w0 <= ts < w1.  A GPU activity (kernel,
     memcpy, memset) is kept when its launch call (R6, found over the WHOLE
     trace) has w0 <= launch.ts < w1, whatever the activity's own ts; one with
     no launch call is dropped and counted in unattributed_kernels.  Fallback:
     when no GPU activity of the trace has a launch call, activities are kept by
     their own ts and unattributed_kernels = 0 (gpu_attribution "start", else
     "launch").  So a launch call, phase span or parent op that starts before w0
     does not exist for the analysis.  Intervals are never clipped to the
     window.  w_gpu_end = max(w1, max end of the kept kernels).
 R5  Containment is half-open: an event [ts, ts+dur) contains time t when
     ts <= t < ts+dur (a zero-duration event contains nothing).  "Innermost"
     among several containing events = latest ts, then shorter dur, then later
     in file order.  The same ordering defines nesting (stack rule below).
 R6  Correlation, over the whole trace (before the window is applied): the
     launch call is the first runtime event (file order) whose args.correlation
     equals the activity's args.correlation (JSON value equality); any runtime
     event counts, not only names on the launch list.  Fallback: the first ac2g
     flow start (ph "s") whose id equals the activity's correlation, then the
     innermost runtime event on that flow start's pid/tid containing the flow's
     ts (R5); none when no runtime event contains it.
 R7  gpu_wait_host: kernel intervals are sorted by (ts, file order) and merged
     (touching intervals merge; zero-length ones are included).  "The next
     kernel" after a gap is the first kernel in that order that starts the next
     merged interval.  No gap is counted before the first busy interval or after
     the last.
 R8  host_overhead_method = "measured" iff at least one in-window kernel has a
     launch call (R6); otherwise "residual" and host_overhead_ms_per_step equals
     host_overhead_residual_ms_per_step.
 R9  Phases: phase spans are in-window cpu_op/user_annotation events whose name
     is exactly "## forward ##" etc., starts with "step/" (rest, as is, is the
     phase), or starts with "enumerate(DataLoader)#", "Optimizer.step#",
     "Optimizer.zero_grad#".  The autograd rule looks for ANY in-window cpu_op
     on the thread containing the time whose name starts with
     "autograd::engine::evaluate_function: ".  The time-overlap fallback applies
     only to kernels with no launch call; a kernel whose launch has no enclosing
     span (nor autograd op) is unattributed.  A CPU op may be its own enclosing
     span / autograd op (its own ts lies in its own interval when dur > 0).
     ops_per_step counts cpu_op events only.  wall_ms_per_step is null only when
     the phase has no span in the window.  dataload_ms is 0 when dataload is
     absent or its wall is null.
 R10 Nesting per (pid, tid) (values compared as given: "1" != 1) over in-window
     cpu_op, user_annotation and runtime events, sorted by (ts asc, dur desc, file
     order); parent = top of a stack after popping every event whose end <= ts.
     Self CPU per event = max(dur - sum of direct children's dur, 0), floored per
     event, then summed.
 R19 kernels_per_step, launches_per_step and cuda_mallocs_per_step are means:
     total / real_steps (one kernel in two steps is 0.5; issue 40).  The rows'
     counts are integers, the Python LibreYOLO's rule: a phase's kernels and ops
     total // real_steps, a kernel or op row max(count // real_steps, 1).
 R21 Inferred forward (docs/metrics.md "Phases"): only when no cpu_op or
     user_annotation of the whole trace is a "forward" phase span (R9 names).
     Kineto's fwdbwd flow starts (ph "s", cat "fwdbwd") are kept like ac2g ones
     (in window by ts).  Top-level candidates: in-window cpu_ops that are not a
     phase span and whose name does not start with "ProfilerStep#".  A forward
     root is the OUTERMOST (smallest inner_key) candidate on a flow start's
     pid/tid containing its ts (R5).  A (thread, time) with no span and no
     autograd op around it is "forward" when the outermost candidate on that
     thread containing the time is a forward root.  wall stays null (no span).
 R22 A phase's cpu_ms_per_step = sum over its cpu_ops (the phase of the op's
     own (thread, ts), as ops_per_step counts them) of the op's self CPU (R10)
     / real_steps; null when the phase has no cpu_op.
 R20 A CPU job (no kernel, no memcpy/memset time, no runtime event, no device
     memory) has null GPU-side metrics (GPU_ONLY_KEYS), never 0.
 R11 Device time of ops: a kernel with a launch call belongs to the nearest
     cpu_op ancestor of its launch call in the nesting tree (R10).  Inclusive
     values (device_ms, cpu_mem_bytes) = own + all descendants in that tree
     (annotations/runtime events in between pass values through).  Per name
     group, inclusive values of nested same-name ops add up (as in PyTorch).
 R12 [memory] instants: ph "i", name "[memory]", in window; they belong to the
     innermost (R5) cpu_op on their pid/tid containing their ts; Device Type 0 =
     CPU, any other numeric value = device.  Memory byte columns are per step.
     peak_vram_mb uses in-window device [memory] instants with a numeric
     "Total Allocated"; null when there is none.
 R13 Ratios with a zero denominator are 0 (pct, util, frac, mean), except
     comm_overlap_pct, which is null without communication (as documented).
 R18 Communication kernels = kept kernels whose category is "communication";
     "other kernels" = every other kept kernel (memcpy/memset excluded).
     Exposed = length of comm union minus length of (comm union ∩ other union).
 R14 Sort ties: kernels/categories by raw us sum desc then name asc; ops by CPU
     total us desc then name asc (Python str order = code point order).
 R15 kernels[].raw_name is the FULL name (the 90-character cut of the docs is a
     display concern); the friendly "kernel" column is not produced here.
 R16 The window with no step events comes from all usable complete events of any
     cat (including "Trace"); real_steps = 1.
 R17 Time arithmetic is exact: ts/dur are read from their JSON text as exact
     decimals, scaled to integers, and every sum, union, gap and comparison is
     done on integers; each reported float is the correctly rounded exact value.
     This matters: amd_trace has float ts around 4.2e12 us, where a double's
     spacing is ~0.001 us, so ts+dur in doubles moves a 5 us kernel by up to
     1e-4 relative.  An implementation that parses ts as double and computes
     unions/gaps from absolute times will be ~3e-6 off on gpu_busy there; store
     times as int64 nanoseconds (or rebase exactly) to stay within 1e-6.
     Threshold tests (gpu_util >= 0.8, dataload_frac >= 0.2, gpu_util_raw >
     1.05, mallocs/step >= 5) are decided on the exact values.
"""

import argparse
import bisect
import gzip
import json
import math
import re
import sys

TC_RE = re.compile(
    r"h884|h1688|h16816|s1688|s16816|i8816|i16832|hmma|imma|xmma|gmma|tensorop|wmma|16816|16832|884gemm|1688gemm",
    re.ASCII)

CATEGORY_RULES = [
    ("communication", r"nccl|rccl|all_reduce|allreduce|all_gather|allgather|reduce_scatter|alltoall|all_to_all"),
    ("reduction / norm", r"bn_bw|bn_fw|batchnorm|batch_norm|layer_norm|group_norm|instance_norm|softmax|welford|\breduce|variance|rms_norm|devicereduce"),
    ("layout / copy", r"nchwtonhwc|nhwctonchw"),
    ("gemm / conv", r"gemm|conv|implicit|cutlass|cudnn|wgrad|dgrad|winograd"),
    ("layout / copy", r"memcpy|memset|\bcopy|catarray|concat|contiguous|\bgather|\bscatter|\bpermute|\btranspose"),
    ("elementwise", r"elementwise|vectorized|pointwise|activation|silu|relu|sigmoid|unary|binary|clamp|fill|arange|multi_tensor_apply"),
]
CATEGORY_RULES = [(n, re.compile(p, re.ASCII)) for n, p in CATEGORY_RULES]

LAUNCH_PREFIXES = (
    "cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaGraphLaunch",
    "cuLaunchKernel", "cuLaunchCooperativeKernel", "cuGraphLaunch",
    "hipLaunchKernel", "hipExtLaunchKernel", "hipModuleLaunchKernel",
    "hipExtModuleLaunchKernel", "hipGraphLaunch",
)
MALLOC_NAMES = {"cudaMalloc", "cudaFree", "cuMemAlloc", "cuMemFree", "hipMalloc", "hipFree"}
VSUFFIX_RE = re.compile(r"_v[0-9]+$")
STEP_RE = re.compile(r"ProfilerStep#([0-9]+)")
PHASE_ORDER = ["dataload", "to_device", "preprocess", "forward", "backward", "postprocess", "optimizer"]
AUTOGRAD_PREFIX = "autograd::engine::evaluate_function: "

_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def lower(s):
    return s.translate(_LOWER)


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def key_of(v):
    """A hashable key for a JSON value compared 'as given'."""
    if isinstance(v, (list, dict)):
        return ("json", json.dumps(v, sort_keys=True))
    if isinstance(v, str):
        return ("s", v)
    return ("v", v)


def div(a, b):
    return a / b if b else 0.0


class DecFloat(float):
    """A JSON float that remembers its source text, so times can be made exact."""

    def __new__(cls, text):
        obj = float.__new__(cls, text)
        obj.text = text
        return obj


DEC_RE = re.compile(r"(-?)([0-9]+)(?:\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?")


def dec_parts(v):
    """Exact value of a JSON number as (integer mantissa, power of ten)."""
    if isinstance(v, int):
        return v, 0
    m = DEC_RE.fullmatch(v.text)
    sign, ip, fp, ex = m.group(1), m.group(2), m.group(3) or "", m.group(4) or "0"
    mant = int(ip + fp)
    return (-mant if sign else mant), int(ex) - len(fp)


def load_events(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f, parse_float=DecFloat)
    if isinstance(data, dict):
        data = data.get("traceEvents", [])
    return data if isinstance(data, list) else []


class Ev:
    __slots__ = ("idx", "name", "cat", "ts", "dur", "end", "pid", "tid", "thr", "args",
                 "parent", "children_dur", "launch", "fid")

    def __init__(self, idx, name, cat, ts, dur, pid, tid, args):
        self.idx, self.name, self.cat, self.ts, self.dur = idx, name, cat, ts, dur
        self.end = ts + dur
        self.pid, self.tid = pid, tid
        self.thr = (key_of(pid), key_of(tid))
        self.args = args
        self.parent = None
        self.children_dur = 0
        self.launch = None
        self.fid = None


def classify(cat):
    if cat == "kernel":
        return "kernel"
    if cat == "gpu_memcpy":
        return "memcpy"
    if cat == "gpu_memset":
        return "memset"
    if cat == "cpu_op":
        return "cpu_op"
    if cat == "user_annotation":
        return "annotation"
    if cat in ("cuda_runtime", "cuda_driver"):
        return "runtime"
    return None


def own_name(name):
    """The kernel's own name: template argument lists (any depth; an unclosed one runs to the
    end) and a trailing balanced parameter list removed; "(anonymous namespace)" stays."""
    out, depth = [], 0
    for c in name:
        if c == "<":
            depth += 1
        elif c == ">" and depth > 0:
            depth -= 1
        elif depth == 0:
            out.append(c)
    s = "".join(out).rstrip(" ")
    if s.endswith(")"):
        d = 0
        for i in range(len(s) - 1, -1, -1):
            if s[i] == ")":
                d += 1
            elif s[i] == "(":
                d -= 1
                if d == 0:
                    if i > 0:
                        s = s[:i]
                    break
    return s


def category_of(name):
    ln = lower(own_name(name))
    for cname, rx in CATEGORY_RULES:
        if rx.search(ln):
            return cname
    return "other"


def is_tensorcore(name):
    return TC_RE.search(lower(name)) is not None


def strip_v(name):
    return VSUFFIX_RE.sub("", name)


def phase_of_span(name):
    if name.startswith("step/"):
        return name[len("step/"):]
    if name in ("## forward ##",):
        return "forward"
    if name in ("## backward ##",):
        return "backward"
    if name in ("## data_load ##", "## dataload ##") or name.startswith("enumerate(DataLoader)#"):
        return "dataload"
    if name == "## to_device ##":
        return "to_device"
    if name == "## optimizer ##" or name.startswith("Optimizer.step#") or name.startswith("Optimizer.zero_grad#"):
        return "optimizer"
    return None


def contains(e, t):
    return e.ts <= t < e.end


def inner_key(e):
    # innermost = latest ts, then shorter dur, then later in file order (R5)
    return (e.ts, -e.dur, e.idx)


def innermost(cands, t):
    """Reference definition of R5 (one query, linear scan).  The analysis uses
    innermost_each / innermost_on_threads, which give the same answers."""
    best = None
    for e in cands:
        if contains(e, t) and (best is None or inner_key(e) > inner_key(best)):
            best = e
    return best


def innermost_each(cands, times):
    """[innermost(cands, t) for t in times] in O((n + q) log(n + q)).

    One sweep over the queries in ascending t: candidates are pushed in
    inner_key order once their ts <= t, so the stack top is the innermost of the
    pushed ones; a top whose end <= t contains no later (larger) t either, so it
    is popped for good.  The first top that contains t is the answer (R5)."""
    evs = sorted(cands, key=inner_key)
    out = [None] * len(times)
    stack = []
    i, n = 0, len(evs)
    for qi in sorted(range(len(times)), key=times.__getitem__):
        t = times[qi]
        while i < n and evs[i].ts <= t:
            stack.append(evs[i])
            i += 1
        while stack and stack[-1].end <= t:
            stack.pop()
        if stack:
            out[qi] = stack[-1]
    return out


def on_threads(each, cands_by_thr, queries):
    """queries: list of (thr, t).  Returns each(cands_by_thr[thr], times) per query, asked
    once per thread (None where the thread has no candidates)."""
    out = [None] * len(queries)
    qs_by_thr = {}
    for qi, (thr, _) in enumerate(queries):
        qs_by_thr.setdefault(thr, []).append(qi)
    for thr, qis in qs_by_thr.items():
        cands = cands_by_thr.get(thr)
        if cands:
            res = each(cands, [queries[qi][1] for qi in qis])
            for qi, r in zip(qis, res):
                out[qi] = r
    return out


def innermost_on_threads(cands_by_thr, queries):
    """innermost(cands_by_thr.get(thr, []), t) for each (thr, t), by innermost_each."""
    return on_threads(innermost_each, cands_by_thr, queries)


def outermost_each(cands, times):
    """For each t: the containing (R5) candidate with the SMALLEST inner_key (earliest ts,
    then longer dur, then earlier in file order), or None.

    Queries in ascending t; candidates are added in inner_key order once their ts <= t.  Of two
    added candidates a before b with a.end >= b.end, a contains every t that b contains, so only
    the candidates whose end exceeds every earlier one's are kept (ends strictly increasing);
    the answer is the first kept one whose end > t."""
    evs = sorted(cands, key=inner_key)
    out = [None] * len(times)
    kept, ends = [], []
    i, n = 0, len(evs)
    for qi in sorted(range(len(times)), key=times.__getitem__):
        t = times[qi]
        while i < n and evs[i].ts <= t:
            if not ends or evs[i].end > ends[-1]:
                kept.append(evs[i])
                ends.append(evs[i].end)
            i += 1
        j = bisect.bisect_right(ends, t)
        if j < len(kept):
            out[qi] = kept[j]
    return out


def outermost_on_threads(cands_by_thr, queries):
    """queries: list of (thr, t); outermost_each per thread."""
    return on_threads(outermost_each, cands_by_thr, queries)


def union_length(intervals):
    """intervals: list of (start, end); half-open; returns total covered length."""
    total = 0
    cur_s = cur_e = None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            if cur_e is not None:
                total += cur_e - cur_s
            cur_s, cur_e = s, e
        elif e > cur_e:
            cur_e = e
    if cur_e is not None:
        total += cur_e - cur_s
    return total


def analyse(raw_events):
    # ---- parse (R1) ----
    usable = []  # (kind, idx, name, cat, ts, dur, event)
    for idx, e in enumerate(raw_events):
        if not isinstance(e, dict):
            continue
        ph = e.get("ph")
        ts = e.get("ts")
        if not is_num(ts):
            continue
        name = e.get("name", "")
        cat = e.get("cat", "")
        if not isinstance(name, str) or not isinstance(cat, str):
            continue
        args = e.get("args")
        if not isinstance(args, dict):
            args = {}
        if ph == "X":
            dur = e.get("dur", 0)
            if not is_num(dur):
                continue
            usable.append(("X", idx, name, cat, ts, dur, args, e))
        elif ph == "i" and name == "[memory]":
            usable.append(("mem", idx, name, cat, ts, 0, args, e))
        elif ph == "s" and lower(cat) == "ac2g":
            usable.append(("flow", idx, name, cat, ts, 0, args, e))
        elif ph == "s" and lower(cat) == "fwdbwd":
            usable.append(("fwdbwd", idx, name, cat, ts, 0, args, e))

    # Exact time arithmetic (R17): every ts/dur becomes an integer number of
    # ticks, 1 tick = 10**-D us, D = the most decimals any time value has.
    exp_min = 0
    for u in usable:
        for v in (u[4], u[5]):
            exp_min = min(exp_min, dec_parts(v)[1])
    D = -exp_min
    U = 10 ** D  # ticks per microsecond

    def ticks(v):
        mant, ex = dec_parts(v)
        return mant * 10 ** (ex + D)

    complete, instants, flow_starts, fwdbwd_starts = [], [], [], []
    for kind, idx, name, cat, ts, dur, args, e in usable:
        ev = Ev(idx, name, lower(cat), ticks(ts), ticks(dur), e.get("pid"), e.get("tid"), args)
        if kind == "X":
            complete.append(ev)
        elif kind == "mem":
            instants.append(ev)
        elif kind == "fwdbwd":
            fwdbwd_starts.append(ev)
        else:
            ev.fid = e.get("id")
            flow_starts.append(ev)

    # ---- steps and window (R3, R16) ----
    steps = {}
    for ev in complete:
        m = STEP_RE.fullmatch(ev.name)
        if not m:
            continue
        n = int(m.group(1))
        cpu_side = ev.cat in ("cpu_op", "user_annotation")
        if n not in steps:
            steps[n] = (ev, cpu_side)
        elif cpu_side and not steps[n][1]:
            steps[n] = (ev, True)
    if steps:
        real_steps = len(steps)
        w0 = min(s.ts for s, _ in steps.values())
        w1 = max(s.end for s, _ in steps.values())
    else:
        real_steps = 1
        if complete:
            w0 = min(e.ts for e in complete)
            w1 = max(e.end for e in complete)
        else:
            w0 = w1 = 0

    def inwin(e):
        return w0 <= e.ts < w1

    # ---- correlation over the whole trace (R6) ----
    all_runtime = [e for e in complete if classify(e.cat) == "runtime"]
    by_corr = {}
    for r in all_runtime:
        c = r.args.get("correlation")
        if c is None:
            continue
        by_corr.setdefault(key_of(c), r)
    flow_by_id = {}
    for f in flow_starts:
        if f.fid is None:
            continue
        flow_by_id.setdefault(key_of(f.fid), f)
    runtime_by_thr = {}
    for r in all_runtime:
        runtime_by_thr.setdefault(r.thr, []).append(r)
    activities = [e for e in complete if classify(e.cat) in ("kernel", "memcpy", "memset")]
    flow_queries = []  # (activity, flow start) needing the innermost-runtime fallback
    for k in activities:
        c = k.args.get("correlation")
        if c is None:
            continue
        kc = key_of(c)
        r = by_corr.get(kc)
        if r is not None:
            k.launch = r
            continue
        f = flow_by_id.get(kc)
        if f is not None:
            flow_queries.append((k, f))
    found = innermost_on_threads(runtime_by_thr, [(f.thr, f.ts) for _, f in flow_queries])
    for (k, _), r in zip(flow_queries, found):
        k.launch = r

    # ---- the window (R4) ----
    by_launch = any(k.launch is not None for k in activities)
    gpu_attribution = "launch" if by_launch else "start"
    unattributed_kernels = sum(1 for k in activities if k.launch is None) if by_launch else 0

    def keep(e):
        if classify(e.cat) in ("kernel", "memcpy", "memset") and by_launch:
            return e.launch is not None and inwin(e.launch)
        return inwin(e)

    win = [e for e in complete if keep(e)]
    instants = [e for e in instants if inwin(e)]
    flow_starts = [e for e in flow_starts if inwin(e)]
    fwdbwd_starts = [e for e in fwdbwd_starts if inwin(e)]

    kernels = [e for e in win if classify(e.cat) == "kernel"]
    memcpys = [e for e in win if classify(e.cat) in ("memcpy", "memset")]
    cpu_ops = [e for e in win if classify(e.cat) == "cpu_op"]
    runtime = [e for e in win if classify(e.cat) == "runtime"]
    cpu_side = [e for e in win if classify(e.cat) in ("cpu_op", "annotation", "runtime")]

    # All *_us / *_t quantities below are integer ticks; conversions divide
    # integers once at the end (Python's int / int is correctly rounded).
    wall_t = w1 - w0
    window_wall_ms = wall_t / (U * 1000)
    step_ms = wall_t / (U * 1000 * real_steps)

    def per_step_ms(t):
        return t / (U * 1000 * real_steps)

    # ---- GPU time ----
    k_dur = sum(k.dur for k in kernels)
    gpu_kernel_ms_per_step = per_step_ms(k_dur)
    busy_t = union_length([(k.ts, k.end) for k in kernels])
    gpu_busy_ms_per_step = per_step_ms(busy_t)
    w_gpu_end = max([w1] + [k.end for k in kernels])
    span_t = w_gpu_end - w0
    gpu_util_raw = div(busy_t, span_t)
    gpu_util = min(gpu_util_raw, 1.0)
    gpu_active_ms_per_step = per_step_ms(union_length([(e.ts, e.end) for e in kernels + memcpys]))

    # ---- communication (R18) ----
    comm_iv = [(k.ts, k.end) for k in kernels if category_of(k.name) == "communication"]
    other_iv = [(k.ts, k.end) for k in kernels if category_of(k.name) != "communication"]
    comm_t = union_length(comm_iv)
    # |C ∩ O| = |C| + |O| - |C ∪ O|
    overlap_t = comm_t + union_length(other_iv) - union_length(comm_iv + other_iv)
    exposed_t = comm_t - overlap_t
    comm_ms_per_step = per_step_ms(comm_t)
    comm_exposed_ms_per_step = per_step_ms(exposed_t)
    comm_overlap_pct = 100 * (1 - exposed_t / comm_t) if comm_t else None
    kernels_per_step = len(kernels) / real_steps  # R19: a mean
    unique_kernels = len({k.name for k in kernels})
    mean_kernel_us = div(k_dur, U * len(kernels))
    memcpy_ms_per_step = per_step_ms(sum(e.dur for e in memcpys))
    tensorcore_pct = div(100 * sum(k.dur for k in kernels if is_tensorcore(k.name)), k_dur)

    # ---- categories ----
    cat_us = {}
    for k in kernels:
        c = category_of(k.name)
        cat_us[c] = cat_us.get(c, 0) + k.dur
    categories = [{"name": c, "pct": div(us * 100, k_dur), "ms_per_step": per_step_ms(us)}
                  for c, us in sorted(cat_us.items(), key=lambda kv: (-kv[1], kv[0]))]

    # ---- kernel rows ----
    rows = {}
    for k in kernels:
        r = rows.setdefault(k.name, [0, 0])
        r[0] += k.dur
        r[1] += 1
    kernel_rows = [{
        "raw_name": n,
        "category": category_of(n),
        "tensorcore": is_tensorcore(n),
        "ms_per_step": per_step_ms(us),
        "count_per_step": max(cnt // real_steps, 1),
        "pct_of_gpu": div(us * 100, k_dur),
    } for n, (us, cnt) in sorted(rows.items(), key=lambda kv: (-kv[1][0], kv[0]))]

    # ---- launches and API time ----
    launch_calls = [r for r in runtime if strip_v(r.name).startswith(LAUNCH_PREFIXES)]
    if runtime:
        launches_per_step = len(launch_calls) / real_steps
        launches_source = "runtime"
    else:
        launches_per_step = kernels_per_step
        launches_source = "kernels"
    cuda_mallocs_per_step = sum(1 for r in runtime if strip_v(r.name) in MALLOC_NAMES) / real_steps
    launch_api_ms_per_step = per_step_ms(sum(r.dur for r in launch_calls))
    host_api_ms_per_step = per_step_ms(sum(r.dur for r in runtime if "Synchronize" not in r.name))

    # ---- GPU idle waiting for the host (R7) ----
    ks = sorted(kernels, key=lambda k: (k.ts, k.idx))
    wait_us = 0
    cur_e = None
    for k in ks:
        if cur_e is None:
            cur_e = k.end
            continue
        if k.ts > cur_e:
            # k starts the next busy interval after a gap [cur_e, k.ts)
            if k.launch is not None:
                le = k.launch.end
                if le > cur_e:
                    wait_us += min(k.ts, le) - cur_e
            cur_e = k.end
        elif k.end > cur_e:
            cur_e = k.end
    gpu_wait_host_ms_per_step = per_step_ms(wait_us)

    # ---- phases (R9) ----
    spans = []
    for e in win:
        if e.cat in ("cpu_op", "user_annotation"):
            p = phase_of_span(e.name)
            if p is not None:
                spans.append((p, e))
    spans_by_thr = {}
    for p, e in spans:
        spans_by_thr.setdefault(e.thr, []).append(e)
    span_phase = {id(e): p for p, e in spans}
    autograd_by_thr = {}
    for o in cpu_ops:
        if o.name.startswith(AUTOGRAD_PREFIX):
            autograd_by_thr.setdefault(o.thr, []).append(o)
    all_spans = [e for _, e in spans]

    # R21: inferred forward, only when no cpu_op/user_annotation of the WHOLE trace (window or
    # not) is a "forward" phase span.
    infer_forward = not any(e.cat in ("cpu_op", "user_annotation")
                            and phase_of_span(e.name) == "forward" for e in complete)
    top_cands_by_thr = {}
    for o in cpu_ops:
        if phase_of_span(o.name) is None and not o.name.startswith("ProfilerStep#"):
            top_cands_by_thr.setdefault(o.thr, []).append(o)
    forward_roots = set()
    if infer_forward:
        for r in outermost_on_threads(top_cands_by_thr, [(f.thr, f.ts) for f in fwdbwd_starts]):
            if r is not None:
                forward_roots.add(id(r))

    def phases_on_threads(queries):
        """phase of each (thr, t): innermost span on thr containing t, else
        "backward" if any autograd op on thr contains t, else "forward" if the
        outermost candidate op on thr containing t is a forward root (R21), else None."""
        sp = innermost_on_threads(spans_by_thr, queries)
        ag = innermost_on_threads(autograd_by_thr, queries)
        fw = (outermost_on_threads(top_cands_by_thr, queries) if forward_roots
              else [None] * len(queries))
        out = []
        for s, a, f in zip(sp, ag, fw):
            if s is not None:
                out.append(span_phase[id(s)])
            elif a is not None:
                out.append("backward")
            elif f is not None and id(f) in forward_roots:
                out.append("forward")
            else:
                out.append(None)
        return out

    # kernel phases: via the launch call's thread, else time overlap with any span
    k_phase = [None] * len(kernels)
    launched = [i for i, k in enumerate(kernels) if k.launch is not None]
    for i, p in zip(launched, phases_on_threads([(kernels[i].launch.thr, kernels[i].launch.ts)
                                                  for i in launched])):
        k_phase[i] = p
    unlaunched = [i for i, k in enumerate(kernels) if k.launch is None]
    for i, s in zip(unlaunched, innermost_each(all_spans, [kernels[i].ts for i in unlaunched])):
        k_phase[i] = span_phase[id(s)] if s is not None else None

    ph_stats = {}

    def pst(p):
        return ph_stats.setdefault(p, {"k_us": 0, "k_n": 0, "names": set(), "ops": 0, "spans": []})

    for p, e in spans:
        pst(p)["spans"].append((e.ts, e.end))
    for k, p in zip(kernels, k_phase):
        if p is not None:
            st = pst(p)
            st["k_us"] += k.dur
            st["k_n"] += 1
            st["names"].add(k.name)
    op_phases = phases_on_threads([(o.thr, o.ts) for o in cpu_ops])
    for p in op_phases:
        if p is not None:
            pst(p)["ops"] += 1

    def phase_sort_key(p):
        return (PHASE_ORDER.index(p), "") if p in PHASE_ORDER else (len(PHASE_ORDER), p)

    phases = []
    for p in sorted(ph_stats, key=phase_sort_key):
        st = ph_stats[p]
        phases.append({
            "phase": p,
            "gpu_ms_per_step": per_step_ms(st["k_us"]),
            "wall_ms_per_step": per_step_ms(union_length(st["spans"])) if st["spans"] else None,
            "kernels_per_step": st["k_n"] // real_steps,
            "ops_per_step": st["ops"] // real_steps,
            "unique_kernels": len(st["names"]),
            "cpu_ms_per_step": None,  # R22, filled in after the nesting (R10)
        })
    dl_t = 0
    if "dataload" in ph_stats and ph_stats["dataload"]["spans"]:
        dl_t = union_length(ph_stats["dataload"]["spans"])
    dataload_ms = per_step_ms(dl_t)
    dataload_frac = div(dl_t, wall_t)

    # ---- host overhead (R8) ----
    host_overhead_residual_ms_per_step = per_step_ms(max(wall_t - busy_t - dl_t, 0))
    if any(k.launch is not None for k in kernels):
        host_overhead_ms_per_step = gpu_wait_host_ms_per_step
        host_overhead_method = "measured"
    else:
        host_overhead_ms_per_step = host_overhead_residual_ms_per_step
        host_overhead_method = "residual"

    # ---- nesting (R10) ----
    by_thr = {}
    for e in cpu_side:
        by_thr.setdefault(e.thr, []).append(e)
    order = {}  # thread -> events in sorted order
    for thr, evs in by_thr.items():
        evs.sort(key=lambda e: (e.ts, -e.dur, e.idx))
        stack = []
        for e in evs:
            while stack and stack[-1].end <= e.ts:
                stack.pop()
            if stack:
                e.parent = stack[-1]
                e.parent.children_dur += e.dur
            stack.append(e)
        order[thr] = evs

    # own values per event: [self_dev_us, cpu_mem_self, dev_mem_self]
    own = {id(e): [0, 0, 0] for e in cpu_side}
    for k in kernels:
        if k.launch is None:
            continue
        a = k.launch.parent
        while a is not None and classify(a.cat) != "cpu_op":
            a = a.parent
        if a is not None:
            own[id(a)][0] += k.dur

    cpu_ops_by_thr = {}
    for o in cpu_ops:
        cpu_ops_by_thr.setdefault(o.thr, []).append(o)
    peak_alloc = None
    mem_attr = []  # (Device Type, Bytes, instant) to attribute to a cpu_op
    for m in instants:
        dt = m.args.get("Device Type")
        b = m.args.get("Bytes")
        if is_num(dt) and dt != 0:
            ta = m.args.get("Total Allocated")
            if is_num(ta) and (peak_alloc is None or ta > peak_alloc):
                peak_alloc = ta
        if not is_num(dt) or not is_num(b):
            continue
        mem_attr.append((dt, b, m))
    owners = innermost_on_threads(cpu_ops_by_thr, [(m.thr, m.ts) for _, _, m in mem_attr])
    for (dt, b, _), o in zip(mem_attr, owners):
        if o is None:
            continue
        own[id(o)][1 if dt == 0 else 2] += b

    incl = {id(e): list(own[id(e)]) for e in cpu_side}
    for evs in order.values():
        for e in reversed(evs):  # children come after parents in sorted order
            if e.parent is not None:
                pi, ci = incl[id(e.parent)], incl[id(e)]
                for j in range(3):
                    pi[j] += ci[j]

    # ---- phases' CPU time (R22) ----
    phase_self = {}
    for o, p in zip(cpu_ops, op_phases):
        if p is not None:
            phase_self[p] = phase_self.get(p, 0) + max(o.dur - o.children_dur, 0)
    for row in phases:
        if ph_stats[row["phase"]]["ops"] > 0:
            row["cpu_ms_per_step"] = per_step_ms(phase_self[row["phase"]])

    # ---- ops table ----
    groups = {}
    flops_total = 0
    self_cpu_total_us = 0
    for o in cpu_ops:
        g = groups.setdefault(o.name, {"n": 0, "us": 0, "self_us": 0, "self_dev": 0, "dev": 0,
                                       "cpu_mem": 0, "self_cpu_mem": 0, "flops": 0})
        self_us = max(o.dur - o.children_dur, 0)
        fl = o.args.get("flops")
        fl = fl if is_num(fl) else 0
        g["n"] += 1
        g["us"] += o.dur
        g["self_us"] += self_us
        g["self_dev"] += own[id(o)][0]
        g["dev"] += incl[id(o)][0]
        g["self_cpu_mem"] += own[id(o)][1]
        g["cpu_mem"] += incl[id(o)][1]
        g["flops"] += fl
        flops_total += fl
        self_cpu_total_us += self_us
    ops = [{
        "op": n,
        "count_per_step": max(g["n"] // real_steps, 1),
        "ms_per_step": per_step_ms(g["us"]),
        "self_cpu_ms_per_step": per_step_ms(g["self_us"]),
        "self_device_ms_per_step": per_step_ms(g["self_dev"]),
        "device_ms_per_step": per_step_ms(g["dev"]),
        "cpu_mem_bytes": g["cpu_mem"] / real_steps,
        "self_cpu_mem_bytes": g["self_cpu_mem"] / real_steps,
        "flops": g["flops"] / real_steps,
    } for n, g in sorted(groups.items(), key=lambda kv: (-kv[1]["us"], kv[0]))]

    # ---- memory and verdict ----
    peak_vram_mb = peak_alloc / 1e6 if peak_alloc is not None else None
    # thresholds compared exactly on integers (R17)
    n_mallocs = sum(1 for r in runtime if strip_v(r.name) in MALLOC_NAMES)
    memory_pressure = n_mallocs >= 5 * real_steps or busy_t * 100 > 105 * span_t
    if memory_pressure:
        bound = "memory-pressure"
    elif dl_t * 5 >= wall_t:
        bound = "dataloader"
    elif busy_t * 5 >= 4 * span_t or not kernels:
        bound = "compute"
    elif exposed_t * 10 >= wall_t and comm_exposed_ms_per_step >= host_overhead_ms_per_step:
        bound = "communication"  # exposed communication weighed before host launch (issue 40)
    else:
        bound = "host / launch"

    # The profiled step less the GPU's busy time, per step, at least 0 (metrics.md gpu_idle_ms).
    gpu_idle_ms = (None if gpu_busy_ms_per_step is None or window_wall_ms is None
                   or not real_steps
                   else max(window_wall_ms / real_steps - gpu_busy_ms_per_step, 0.0))

    result = {
        "real_steps": real_steps,
        "window_wall_ms": window_wall_ms,
        "step_ms": step_ms,
        "gpu_kernel_ms_per_step": gpu_kernel_ms_per_step,
        "gpu_busy_ms_per_step": gpu_busy_ms_per_step,
        "gpu_idle_ms": gpu_idle_ms,
        "gpu_active_ms_per_step": gpu_active_ms_per_step,
        "comm_ms_per_step": comm_ms_per_step,
        "comm_exposed_ms_per_step": comm_exposed_ms_per_step,
        "comm_overlap_pct": comm_overlap_pct,
        "gpu_attribution": gpu_attribution,
        "unattributed_kernels": unattributed_kernels,
        "gpu_util": gpu_util,
        "gpu_util_raw": gpu_util_raw,
        "kernels_per_step": kernels_per_step,
        "unique_kernels": unique_kernels,
        "mean_kernel_us": mean_kernel_us,
        "memcpy_ms_per_step": memcpy_ms_per_step,
        "tensorcore_pct": tensorcore_pct,
        "launches_per_step": launches_per_step,
        "launches_source": launches_source,
        "cuda_mallocs_per_step": cuda_mallocs_per_step,
        "launch_api_ms_per_step": launch_api_ms_per_step,
        "host_api_ms_per_step": host_api_ms_per_step,
        "gpu_wait_host_ms_per_step": gpu_wait_host_ms_per_step,
        "host_overhead_ms_per_step": host_overhead_ms_per_step,
        "host_overhead_method": host_overhead_method,
        "host_overhead_residual_ms_per_step": host_overhead_residual_ms_per_step,
        "dataload_ms": dataload_ms,
        "dataload_frac": dataload_frac,
        "peak_vram_mb": peak_vram_mb,
        "memory_pressure": memory_pressure,
        "bound": bound,
        "flops_per_step": flops_total / real_steps,
        "categories": categories,
        "phases": phases,
        "kernels": kernel_rows,
        "ops": ops,
        "self_cpu_total_ms_per_step": per_step_ms(self_cpu_total_us),
    }
    # R20: a trace with no GPU activity time, no runtime call and no device memory is a CPU
    # job; its GPU-side metrics do not apply: null, never 0.
    if (not kernels and sum(e.dur for e in memcpys) == 0 and not runtime
            and peak_vram_mb is None):
        for key in GPU_ONLY_KEYS:
            result[key] = None
    return result


# The GPU-side scalars (docs/metrics.md's table, "n/a when: CPU job").
GPU_ONLY_KEYS = (
    "gpu_kernel_ms_per_step", "gpu_busy_ms_per_step", "gpu_idle_ms", "gpu_active_ms_per_step",
    "comm_ms_per_step", "comm_exposed_ms_per_step", "comm_overlap_pct", "gpu_attribution",
    "unattributed_kernels", "gpu_util", "gpu_util_raw", "kernels_per_step", "unique_kernels",
    "mean_kernel_us", "memcpy_ms_per_step", "tensorcore_pct", "launches_per_step",
    "launches_source", "cuda_mallocs_per_step", "launch_api_ms_per_step", "host_api_ms_per_step",
    "gpu_wait_host_ms_per_step", "host_overhead_ms_per_step", "host_overhead_method",
    "host_overhead_residual_ms_per_step", "peak_vram_mb", "memory_pressure",
)


def base_name(path):
    b = path.replace("\\", "/").rsplit("/", 1)[-1]
    for suf in (".json.gz", ".json"):
        if b.endswith(suf):
            return b[:-len(suf)]
    return b


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("traces", nargs="+")
    ap.add_argument("--out-dir")
    a = ap.parse_args(argv)
    for path in a.traces:
        result = analyse(load_events(path))
        text = json.dumps(result, indent=1, sort_keys=False) + "\n"
        if a.out_dir:
            with open(f"{a.out_dir.rstrip('/')}/{base_name(path)}.expected.json", "w", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
