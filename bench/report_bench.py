#!/usr/bin/env python3
"""Size and render time of `libreyolo profile report` for a 10-step training trace.

    python3 bench/report_bench.py [--build-dir build] [--steps 10] [--reps 5] [--json FILE]

The trace: make_big_trace.py replicates the two ProfilerSteps of the real training rank
shared/fixtures/traces/trace_filter.json.gz (1,154 kernels on five streams, runtime calls,
forward/backward/data_load spans) until it holds --steps steps (--steps / 2 copies). Measured:
  - report bytes (goal <= 2 MB = 2,000,000 bytes);
  - `libreyolo profile report` wall time (parse + analyse + render + write), median of --reps;
  - render time in headless Chromium (tests/browser/cdp_pipe.py, the page loaded from file://):
    the page's load event and the time two animation frames after it (laid out and painted),
    both in ms from the navigation start (the browser's own start-up is not counted); median
    and max of --reps fresh browsers (goal: max < 2 s).
Prints one line per number and PASS/MISS per goal; exit 1 with --strict on a MISS. Standard
library only.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "browser"))
import cdp_pipe  # noqa: E402

SIZE_GOAL = 2_000_000
RENDER_GOAL_MS = 2000.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build-dir", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--libreyolo", help="the libreyolo binary (default: BUILD/client/libreyolo)")
    ap.add_argument("--steps", type=int, default=10, help="steps in the trace (even; default 10)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--work-dir", default=os.path.join(tempfile.gettempdir(),
                                                       "libreyolo-report-bench"))
    ap.add_argument("--json", help="write the numbers here too")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a goal is missed")
    args = ap.parse_args()
    lib = args.libreyolo or os.path.join(args.build_dir, "client", "libreyolo")
    if not os.access(lib, os.X_OK):
        sys.exit(f"report_bench: no libreyolo at {lib} (build it, or pass --libreyolo)")
    chromium = cdp_pipe.find_chromium()
    if chromium is None:
        sys.exit("report_bench: no chromium on PATH (scripts/install-deps.sh installs it)")
    os.makedirs(args.work_dir, exist_ok=True)
    copies = max(1, args.steps // 2)
    trace = os.path.join(args.work_dir, f"train_{copies * 2}steps.json")
    if not os.path.exists(trace):
        subprocess.run([sys.executable, os.path.join(HERE, "make_big_trace.py"), "--copies",
                        str(copies), "-o", trace, "-q"], check=True)
    steps = int(json.loads(subprocess.run(
        [lib, "profile", "get", trace, "real_steps", "--json"], capture_output=True, text=True,
        check=True).stdout)["value"])
    report = os.path.join(args.work_dir, "report.html")
    gen = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        subprocess.run([lib, "profile", "report", trace, "-o", report], check=True,
                       stdout=subprocess.DEVNULL)
        gen.append(time.perf_counter() - t0)
    size = os.path.getsize(report)

    load, painted = [], []
    for _ in range(args.reps):
        b = cdp_pipe.Browser(chromium)  # a fresh browser each time: no cache
        try:
            b.load("file://" + report)
            # Two animation frames after the load event: the page has been laid out and painted.
            t = b.evaluate("""new Promise(done => requestAnimationFrame(() =>
              requestAnimationFrame(() => done({
                load: performance.getEntriesByType('navigation')[0].loadEventEnd,
                painted: performance.now()}))))""")
            errors, requests = b.console_errors(), b.network_requests()
        finally:
            b.close()
        if errors or requests:
            sys.exit(f"report_bench: the page logged errors {errors} or made requests {requests}")
        load.append(t["load"])
        painted.append(t["painted"])

    res = {
        "trace": trace, "trace_bytes": os.path.getsize(trace), "steps": steps,
        "report_bytes": size, "generate_s_median": statistics.median(gen),
        "render_load_ms_median": statistics.median(load), "render_load_ms_max": max(load),
        "render_painted_ms_median": statistics.median(painted), "render_painted_ms_max":
        max(painted),
        "reps": args.reps, "chromium": chromium,
    }
    print(f"trace                {trace} ({res['trace_bytes'] / 2**20:.1f} MiB, {steps} steps)")
    print(f"report size          {size} bytes ({size / 1e6:.3f} MB)   goal <= 2 MB: "
          f"{'PASS' if size <= SIZE_GOAL else 'MISS'}")
    print(f"report generation    {res['generate_s_median']:.3f} s median of {args.reps}")
    print(f"load event           {res['render_load_ms_median']:.0f} ms median, "
          f"{res['render_load_ms_max']:.0f} ms max (from navigation start)")
    print(f"rendered (2 frames)  {res['render_painted_ms_median']:.0f} ms median, "
          f"{res['render_painted_ms_max']:.0f} ms max   goal < 2 s: "
          f"{'PASS' if res['render_painted_ms_max'] < RENDER_GOAL_MS else 'MISS'}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=2)
    miss = size > SIZE_GOAL or res["render_painted_ms_max"] >= RENDER_GOAL_MS
    return 1 if (miss and args.strict) else 0


if __name__ == "__main__":
    sys.exit(main())
