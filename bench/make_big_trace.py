#!/usr/bin/env python3
"""Generate a large, realistic Chrome trace by replicating the ProfilerStep windows of a real one.

    python3 bench/make_big_trace.py --size-mb 512 -o /tmp/big.json
    python3 bench/make_big_trace.py --size-mb 16 -o t.json --source other_trace.json.gz

The source (default: the real training rank shared/fixtures/traces/trace_filter.json.gz, two
ProfilerSteps, 1,154 kernels) is split into
  - metadata events (ph "M"): written once, first;
  - the profiler-span event (cat "Trace"): written once, last, its dur stretched over all copies;
  - every other event: replicated. Copy k shifts ts by k * span, where span = max(ts + dur) -
    min(ts) over the replicated events, so copies follow each other without overlapping;
    adds k * id_stride to args "correlation" / args "External id" / flow "id" (id_stride = the
    range of all those ids + 1, one stride for all keys, so the links between them stay intact
    and no value repeats across copies); renumbers ProfilerStep#N to N + k * step_stride
    (step_stride = max N - min N + 1), so every step is distinct.
Copies are appended until the file reaches --size-mb MiB (whole copies only, so the file ends a
little above the target), or exactly --copies of them. Output is uncompressed {"traceEvents": [...]} written event by event
(never built in memory), first to FILE.tmp then renamed, so a file at FILE is always complete.
Standard library only; deterministic (same source and size -> byte-identical file).
"""

import argparse
import gzip
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SOURCE = os.path.normpath(
    os.path.join(HERE, "..", "..", "shared", "fixtures", "traces", "trace_filter.json.gz"))
if not os.path.exists(DEFAULT_SOURCE):
    DEFAULT_SOURCE = "/work/shared/fixtures/traces/trace_filter.json.gz"

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
ID_ARGS = ("correlation", "External id")
SENTINEL_RE = re.compile(r'"@@(TS|ID|STEP)(\d*)@@"')
MIB = 1 << 20


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    return [e for e in events if isinstance(e, dict)]


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def num(v):
    return str(v) if is_int(v) else json.dumps(v)


def compile_template(ev):
    """Return (parts, ids, ts, step) where parts alternates literal text and field tags."""
    e = dict(ev)
    ids = []
    ts = e.get("ts")
    if isinstance(ts, (int, float)) and not isinstance(ts, bool):
        e["ts"] = "@@TS@@"
    else:
        ts = None
    if e.get("ph") in ("s", "f", "t") and is_int(e.get("id")):
        ids.append(e["id"])
        e["id"] = "@@ID%d@@" % (len(ids) - 1)
    args = e.get("args")
    if isinstance(args, dict):
        args = dict(args)
        for k in ID_ARGS:
            if is_int(args.get(k)):
                ids.append(args[k])
                args[k] = "@@ID%d@@" % (len(ids) - 1)
        e["args"] = args
    step = None
    m = STEP_RE.match(e.get("name", "")) if isinstance(e.get("name"), str) else None
    if m:
        step = int(m.group(1))
        e["name"] = "@@STEP@@"
    text = json.dumps(e)
    pieces = SENTINEL_RE.split(text)  # literal, tag, idx, literal, tag, idx, ...
    parts = []
    for i in range(0, len(pieces), 3):
        parts.append(pieces[i])
        if i + 1 < len(pieces):
            tag, idx = pieces[i + 1], pieces[i + 2]
            parts.append((tag, int(idx) if idx else 0))
    return parts, ids, ts, step


def render(tpl, k, span, id_stride, step_stride):
    parts, ids, ts, step = tpl
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif p[0] == "TS":
            out.append(num(ts + k * span))
        elif p[0] == "ID":
            out.append(str(ids[p[1]] + k * id_stride))
        else:
            out.append('"ProfilerStep#%d"' % (step + k * step_stride))
    return "".join(out)


def generate(source, out_path, size_mb=None, quiet=False, copies_wanted=None):
    events = load(source)
    meta = [e for e in events if e.get("ph") == "M"]
    spans = [e for e in events if e.get("ph") != "M" and str(e.get("cat", "")).lower() == "trace"]
    body = [e for e in events if e.get("ph") != "M" and str(e.get("cat", "")).lower() != "trace"]
    tpls = [compile_template(e) for e in body]

    starts = [t[2] for t in tpls if t[2] is not None]
    if not starts:
        sys.exit("make_big_trace: no event with a numeric ts in %s" % source)
    ends = [float(e["ts"]) + float(e.get("dur", 0) or 0)
            for e in body if isinstance(e.get("ts"), (int, float))]
    span = max(ends) - min(starts)
    span = int(span) + 1 if all(is_int(s) for s in starts) else span
    all_ids = [i for t in tpls for i in t[1]]
    id_stride = (max(all_ids) - min(all_ids) + 1) if all_ids else 0
    steps = [t[3] for t in tpls if t[3] is not None]
    step_stride = (max(steps) - min(steps) + 1) if steps else 0

    target = int(size_mb * MIB) if size_mb else 0
    tmp = out_path + ".tmp"
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    copies = 0
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        written = f.write('{"traceEvents": [')
        first = True
        for e in meta:
            written += f.write(("" if first else ",\n") + json.dumps(e))
            first = False
        while (copies < copies_wanted) if copies_wanted else (copies == 0 or written < target):
            k = copies
            chunk = []
            for t in tpls:
                chunk.append(render(t, k, span, id_stride, step_stride))
            text = ("" if first else ",\n") + ",\n".join(chunk)
            first = False
            written += len(text.encode("utf-8")) if not text.isascii() else len(text)
            f.write(text)
            copies += 1
        for e in spans:
            e = dict(e)
            if isinstance(e.get("dur"), (int, float)):
                e["dur"] = e["dur"] + (copies - 1) * span
            written += f.write(("" if first else ",\n") + json.dumps(e))
            first = False
        written += f.write("]}\n")
    os.replace(tmp, out_path)
    info = {
        "path": out_path, "bytes": os.path.getsize(out_path), "copies": copies,
        "events": len(meta) + len(spans) + copies * len(tpls),
        "steps": copies * len(set(steps)), "span_us": span, "id_stride": id_stride,
        "source": source,
    }
    if not quiet:
        print(json.dumps(info))
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, default=512, help="target size in MiB (default 512)")
    ap.add_argument("--copies", type=int, help="write exactly this many copies (overrides --size-mb)")
    ap.add_argument("-o", "--output", required=True, help="output .json path")
    ap.add_argument("--source", default=DEFAULT_SOURCE, help="trace to replicate (.json or .json.gz)")
    ap.add_argument("-q", "--quiet", action="store_true")
    a = ap.parse_args()
    if a.size_mb <= 0 or a.size_mb > 64 * 1024:
        ap.error("--size-mb must be in (0, 65536]")
    if a.copies is not None and not 1 <= a.copies <= 100000:
        ap.error("--copies must be in [1, 100000]")
    generate(a.source, a.output, a.size_mb, a.quiet, a.copies)


if __name__ == "__main__":
    main()
