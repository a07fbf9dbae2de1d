#!/usr/bin/env python3
"""`libreyolo profile report` pages in a real browser (headless Chromium, Debian's `chromium`).

    report_browser_test.py LIBREYOLO FIXTURES_DIR [--screenshots DIR]

For every fixture (real Kineto traces, the Python LibreYOLO's profiles), a comparison and a
trace with hostile names, it writes the report, loads it from file:// and checks: no console
error, no exception, no network request attempted; every section present; every number of the
summary section equal to `libreyolo profile summary --json` (and the comparison's to
`compare --json`); the op table sorts on a click; no chart label runs off its chart; a
screenshot is taken. The cross-rank pages (`report DIR/` of a two-rank folder made from the
real NCCL fixture, and `report BEFORE/ AFTER/`) get the same console, network, section and
label checks. A negative control (a page with a console error and an external image) proves
the watchers see what they look for.
Exits 77 (ctest SKIP) when no chromium is installed.
"""

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdp_pipe  # noqa: E402

SECTIONS = ["verdict", "summary", "steps", "gpu-timeline", "kernels", "ops", "layers", "memory",
            "profiler"]
COMPARE_SECTIONS = ["significance", "deltas", "side-by-side"]
RANKS_SECTIONS = ["verdict", "ranks-chart", "figures", "ranks"]
RANKS_COMPARE_SECTIONS = ["significance", "verdicts", "ranks-chart", "deltas", "ranks"]
EVIL = "<script>window.__pwned=1</script><img src=x onerror=\"window.__pwned=2\">\"'&"

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}")
    return cond


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {r.returncode}: {r.stderr}")
    return r.stdout


def hostile_trace(path):
    """Two steps; a module scope, kernels and ops with <script>, quotes, a 20,000-character name."""
    long_name = "void k<" + "L" * 20000 + ">"
    ev = []
    for n, t0 in ((1, 0), (2, 1000)):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1,
                   "tid": 1, "ts": t0, "dur": 1000})
        ev.append({"ph": "X", "cat": "user_annotation", "name": "step/forward", "pid": 1,
                   "tid": 1, "ts": t0 + 10, "dur": 400})
        ev.append({"ph": "X", "cat": "python_function", "name": "nn.Module: " + EVIL,
                   "pid": 1, "tid": 1, "ts": t0 + 5, "dur": 500})
        ev.append({"ph": "X", "cat": "cpu_op", "name": EVIL, "pid": 1, "tid": 1,
                   "ts": t0 + 20, "dur": 100})
        ev.append({"ph": "X", "cat": "cpu_op", "name": long_name, "pid": 1, "tid": 1,
                   "ts": t0 + 200, "dur": 100})
        for k, (name, ts) in enumerate(((EVIL, 30), (long_name, 210))):
            corr = n * 10 + k
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1,
                       "tid": 1, "ts": t0 + ts, "dur": 5, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                       "ts": t0 + ts + 20, "dur": 50, "args": {"correlation": corr}})
        ev.append({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": t0 + 25,
                   "args": {"Device Type": 1, "Bytes": 1 << 20, "Total Allocated": n << 24,
                            "Total Reserved": 1 << 26}})
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev}, f)


def page_data(b):
    return b.evaluate("""(() => {
      const num = (s) => s === '' ? null : parseFloat(s);
      const grab = (root) => Array.from(root.querySelectorAll('[data-key][data-value]'))
          .map(e => [e.getAttribute('data-key'), e.getAttribute('data-value')]);
      return {
        sections: Array.from(document.querySelectorAll('body > section')).map(s => s.id),
        summary: grab(document.querySelector('#summary') || document.createElement('div')),
        before: grab(document.querySelector('[data-side=before]') ||
                     document.createElement('div')),
        after: grab(document.querySelector('[data-side=after]') ||
                    document.createElement('div')),
        deltas: Array.from(document.querySelectorAll('tr[data-before]')).map(r =>
            [r.getAttribute('data-metric'), r.getAttribute('data-before'),
             r.getAttribute('data-after')]),
        scripts: document.querySelectorAll('script').length,
        imgs: document.querySelectorAll('img').length,
        pwned: window.__pwned === undefined ? null : window.__pwned,
        charts: ['steps', 'gpu-timeline', 'kernels', 'memory'].filter(id => {
            const sec = document.getElementById(id);
            return !sec || !(sec.querySelector('svg') || sec.querySelector('.na'));
        }),
        text: document.body.innerText.length,
      };
    })()""")


def clipped_labels(b):
    """The chart texts whose box leaves their SVG's viewBox (by more than a pixel)."""
    return b.evaluate("""(() => {
      const out = [];
      for (const svg of document.querySelectorAll('svg')) {
        const vb = svg.viewBox.baseVal;
        for (const t of svg.querySelectorAll('text')) {
          const r = t.getBBox();
          if (r.x < vb.x - 1 || r.y < vb.y - 1 || r.x + r.width > vb.x + vb.width + 1 ||
              r.y + r.height > vb.y + vb.height + 1) {
            out.push(t.textContent.slice(0, 40) + ' at x ' + r.x.toFixed(1) + '..' +
                     (r.x + r.width).toFixed(1));
          }
        }
      }
      return out;
    })()""")


def rank_folder(src, folder):
    """A folder of two ranks of one run (world size 2), each a copy of one rank's real Kineto
    trace with its distributedInfo rewritten."""
    with gzip.open(src, "rt") as f:
        trace = json.load(f)
    os.makedirs(folder, exist_ok=True)
    for rank in (0, 1):
        t = json.loads(json.dumps(trace))
        t["distributedInfo"] = dict(t.get("distributedInfo", {}), rank=rank, world_size=2)
        with gzip.open(os.path.join(folder, f"rank{rank}.json.gz"), "wt") as f:
            json.dump(t, f)
    return folder


def lookup(obj, dotted):
    for part in dotted.split("."):
        if not isinstance(obj, dict) or part not in obj:
            raise KeyError(dotted)
        obj = obj[part]
    return obj


def check_numbers(pairs, summary, what):
    check(len(pairs) >= 20, f"{what}: only {len(pairs)} numbers carry data-value")
    for key, value in pairs:
        try:
            want = lookup(summary, key)
        except KeyError:
            check(False, f"{what}: {key} is not in summary --json")
            continue
        if want is None:
            check(value == "", f"{what}: {key} shows {value}, summary --json has null")
        else:
            check(value != "" and float(value) == float(want),
                  f"{what}: {key} = {value!r} on the page, {want!r} in summary --json")


def check_sort(b, what):
    """Clicks the op table's 'calls/step' header: the rows must come out sorted."""
    got = b.evaluate("""(() => {
      const t = document.querySelector('table.ops');
      if (!t) return null;
      const col = Array.from(t.tHead.rows[0].cells).findIndex(c => c.textContent === 'calls/step');
      t.tHead.rows[0].cells[col].click();
      const desc = Array.from(t.tBodies[0].rows).map(r => parseFloat(r.cells[col].dataset.v));
      t.tHead.rows[0].cells[col].click();
      const asc = Array.from(t.tBodies[0].rows).map(r => parseFloat(r.cells[col].dataset.v));
      return {desc, asc};
    })()""")
    if got is None:
        return
    check(got["desc"] == sorted(got["desc"], reverse=True), f"{what}: op table not sorted desc")
    check(got["asc"] == sorted(got["asc"]), f"{what}: op table not sorted asc")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("libreyolo")
    ap.add_argument("fixtures")
    ap.add_argument("--screenshots",
                    help="keep the screenshots in this folder (else the reports and screenshots "
                         "stay in a temporary folder, printed at the end)")
    args = ap.parse_args()
    chromium = cdp_pipe.find_chromium()
    if chromium is None:
        print("SKIP: no chromium on PATH (scripts/install-deps.sh installs Debian's chromium)")
        return 77
    work = tempfile.mkdtemp(prefix="libreyolo-report-browser-")
    shots = args.screenshots or work
    os.makedirs(shots, exist_ok=True)
    lib = args.libreyolo
    fx = args.fixtures
    hostile = os.path.join(work, "hostile.json.gz")
    hostile_trace(hostile)
    singles = [os.path.join(fx, "traces", n + ".json.gz") for n in
               ("alexnet", "amd_trace", "cpu_only", "cupti_profiler", "simple_add",
                "trace_filter")]
    singles += [os.path.join(fx, "profiles", n) for n in
                ("libreyolo-python-infer.json", "libreyolo-python-run.json")]
    singles.append(hostile)
    pairs = [(os.path.join(fx, "traces", "trace_filter.json.gz"),
              os.path.join(fx, "traces", "amd_trace.json.gz")),
             (os.path.join(fx, "profiles", "libreyolo-python-run.json"),
              os.path.join(fx, "profiles", "libreyolo-python-infer.json"))]

    b = cdp_pipe.Browser(chromium)
    try:
        # Negative control: the watchers must see a console error and an external request.
        neg = os.path.join(work, "negative.html")
        with open(neg, "w") as f:
            f.write("<!DOCTYPE html><html><head><meta charset='utf-8'><meta "
                    "http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
                    "script-src 'unsafe-inline'\"></head><body><img src='http://192.0.2.1/x.png'>"
                    "<script>console.error('boom')</script></body></html>")
        b.load("file://" + neg)
        check(any("boom" in e for e in b.console_errors()), "negative control: console error unseen")
        check(b.network_requests() == ["http://192.0.2.1/x.png"],
              f"negative control: request unseen ({b.network_requests()})")

        for inp in singles:
            failed_before = len(failures)
            name = os.path.basename(inp)
            out = os.path.join(work, name + ".html")
            run([lib, "profile", "report", inp, "-o", out])
            seconds = b.load("file://" + out)
            errors, requests = b.console_errors(), b.network_requests()
            check(not errors, f"{name}: console errors {errors}")
            check(not requests, f"{name}: network requests {requests}")
            d = page_data(b)
            check(d["sections"] == SECTIONS, f"{name}: sections {d['sections']}")
            summary = json.loads(run([lib, "profile", "summary", inp, "--json"]))
            check_numbers(d["summary"], summary, name)
            check(d["scripts"] == 1 and d["imgs"] == 0 and d["pwned"] is None,
                  f"{name}: injected markup ran or rendered ({d})")
            check(not d["charts"] and d["text"] > 500,
                  f"{name}: sections with neither a chart nor an n/a note: {d['charts']}")
            check_sort(b, name)
            clipped = clipped_labels(b)
            check(not clipped, f"{name}: chart labels run off their chart: {clipped[:3]}")
            png = b.screenshot(os.path.join(shots, name + ".png"))
            check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000, f"{name}: screenshot")
            if len(failures) == failed_before:
                print(f"ok:   {name}: {os.path.getsize(out)} bytes, loaded in {seconds:.3f} s, "
                      f"{len(d['summary'])} numbers equal summary --json")
        # The last single page is the hostile trace: its names show as text, in the op table and
        # in the per-layer table of its module scope.
        # (Module names are dot paths: the layers table shows a module's last dot part, indented
        # under its parents, with the full path as the tooltip.)
        for table, shown in (("ops", EVIL.split("<img")[0]), ("layers", EVIL.rsplit(".", 1)[-1])):
            text = b.evaluate(f"(document.querySelector('table.{table}') || {{}}).innerText")
            check(text is not None and shown in text,
                  f"hostile: the name is not shown as text in the {table} table")

        for before, after in pairs:
            failed_before = len(failures)
            name = os.path.basename(before) + "-vs-" + os.path.basename(after)
            out = os.path.join(work, name + ".html")
            run([lib, "profile", "report", before, after, "-o", out])
            seconds = b.load("file://" + out)
            check(not b.console_errors(), f"{name}: console errors {b.console_errors()}")
            check(not b.network_requests(), f"{name}: network requests {b.network_requests()}")
            d = page_data(b)
            check(d["sections"] == COMPARE_SECTIONS, f"{name}: sections {d['sections']}")
            check_numbers(d["before"], json.loads(run([lib, "profile", "summary", before,
                                                       "--json"])), name + " before")
            check_numbers(d["after"], json.loads(run([lib, "profile", "summary", after,
                                                      "--json"])), name + " after")
            cmp = json.loads(run([lib, "profile", "compare", before, after, "--json"]))
            want = {x["metric"]: x for x in cmp["deltas"]}
            check(len(d["deltas"]) >= 3, f"{name}: {len(d['deltas'])} delta rows")
            for metric, bv, av in d["deltas"]:
                for side, v in (("before", bv), ("after", av)):
                    w = want[metric][side]
                    check((v == "" and w is None) or (v != "" and float(v) == w),
                          f"{name}: {metric} {side} {v!r} vs compare --json {w!r}")
            clipped = clipped_labels(b)
            check(not clipped, f"{name}: chart labels run off their chart: {clipped[:3]}")
            png = b.screenshot(os.path.join(shots, name + ".png"))
            check(png[:8] == b"\x89PNG\r\n\x1a\n", f"{name}: screenshot")
            if len(failures) == failed_before:
                print(f"ok:   {name}: loaded in {seconds:.3f} s, {len(d['deltas'])} deltas "
                      f"equal compare --json")

        # The cross-rank pages: one run's folder, and two runs' folders.
        nccl = os.path.join(fx, "traces", "trace_filter.json.gz")
        run_a = rank_folder(nccl, os.path.join(work, "ranks-a"))
        run_b = rank_folder(nccl, os.path.join(work, "ranks-b"))
        for inputs, sections in (([run_a + "/"], RANKS_SECTIONS),
                                 ([run_a + "/", run_b + "/"], RANKS_COMPARE_SECTIONS)):
            failed_before = len(failures)
            name = "-vs-".join(os.path.basename(i.rstrip("/")) for i in inputs)
            out = os.path.join(work, name + ".html")
            run([lib, "profile", "report", *inputs, "-o", out])
            seconds = b.load("file://" + out)
            check(not b.console_errors(), f"{name}: console errors {b.console_errors()}")
            check(not b.network_requests(), f"{name}: network requests {b.network_requests()}")
            d = page_data(b)
            check(d["sections"] == sections, f"{name}: sections {d['sections']}")
            charts = b.evaluate("document.querySelectorAll('#ranks-chart svg').length")
            check(charts == len(inputs), f"{name}: {charts} per-rank charts")
            clipped = clipped_labels(b)
            check(not clipped, f"{name}: chart labels run off their chart: {clipped[:3]}")
            png = b.screenshot(os.path.join(shots, name + ".png"))
            check(png[:8] == b"\x89PNG\r\n\x1a\n", f"{name}: screenshot")
            if len(failures) == failed_before:
                print(f"ok:   {name}: loaded in {seconds:.3f} s, {charts} per-rank chart(s)")
    finally:
        b.close()
        if args.screenshots:
            shutil.rmtree(work, ignore_errors=True)
    print(f"screenshots in {shots}")
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
