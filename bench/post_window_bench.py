#!/usr/bin/python3
"""The stages after the recorded window: analysed in memory against the path before.

A job's post-window time runs from the profiler's stop to the last output written: the trace
exported, analysed, profile.json written, report.html drawn. Two contenders, alternated in
every rep on the same job (so machine noise hits both):

  memory  the pipeline today (server/engine/job/job_files.h): one export pass writes
          profile_trace.json and builds the analyser's in-memory events; the report is drawn
          from the same events;
  files   the path before, kept as the bench's peer (`libreyolo-engine --post-window files`):
          write the trace, read it back to analyse it, write profile.json, then read profile
          and trace again to draw the report (what the daemon did for every job).

The job: `libreyolo-engine run synthetic:32 --steps 10` (a 10-step training trace, the case
the issue names) and optionally `infer`. Each run prints "post-window: T ms (trace written and
analysed A ms, outputs O ms)"; the table quotes medians over reps and the ratio memory / files.
Usage: python3 bench/post_window_bench.py [--reps 5] [--imgsz 160] [--steps 10] [--infer]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
LINE = re.compile(r"post-window: ([0-9.]+) ms \(trace written and analysed ([0-9.]+) ms, "
                  r"outputs ([0-9.]+) ms\)")


def run(engine, job, mode, work, a):
    project = tempfile.mkdtemp(dir=work)
    cmd = [engine, job]
    if job == "run":
        cmd += ["synthetic:32", "--steps", str(a.steps), "--warmup", "2", "--batch", "2"]
    cmd += ["--device", a.device, "--imgsz", str(a.imgsz), "--threads", str(a.threads),
            "--project", project,
            "--report", "job:bench", "--post-window", mode,
            # Explicit switches: the same recording in every run (no budget decision).
            "--record-shapes", "--profile-memory", "--with-flops"]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr[-3000:]}")
    m = LINE.search(out.stderr)
    if not m:
        sys.exit(f"no post-window line in the output of {' '.join(cmd)}")
    trace = os.path.join(project, "prof" if job == "run" else "infer", "profile_trace.json")
    return [float(x) for x in m.groups()] + [os.path.getsize(trace) / 1e6]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default=os.path.join(ROOT, "build/bench/libreyolo-engine"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--imgsz", type=int, default=160)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu", help="cpu, or a CUDA index")
    ap.add_argument("--infer", action="store_true", help="also an infer job")
    a = ap.parse_args()
    if not os.path.exists(a.engine):
        sys.exit(f"{a.engine}: missing; build it with: ninja -C build libreyolo-engine")
    jobs = ["run"] + (["infer"] if a.infer else [])
    with tempfile.TemporaryDirectory(prefix="libreyolo-post-window-") as work:
        results = {(j, m): [] for j in jobs for m in ("memory", "files")}
        for rep in range(a.reps):
            for job in jobs:
                # Alternate which goes first, so neither always runs on a warmer machine.
                order = ("memory", "files") if rep % 2 == 0 else ("files", "memory")
                for mode in order:
                    results[(job, mode)].append(run(a.engine, job, mode, work, a))
            print(f"rep {rep + 1}/{a.reps} done", file=sys.stderr)
    print(f"post-window time, medians over {a.reps} reps (imgsz {a.imgsz}, "
          f"{a.steps} training steps, loadavg {os.getloadavg()[0]:.1f})")
    print(f"{'job':6} {'path':7} {'total ms':>9} {'trace+analysis':>15} {'outputs':>8} "
          f"{'trace MB':>9}")
    for job in jobs:
        med = {}
        for mode in ("files", "memory"):
            cols = list(zip(*results[(job, mode)]))
            med[mode] = [statistics.median(c) for c in cols]
            t, tr, o, mb = med[mode]
            print(f"{job:6} {mode:7} {t:9.1f} {tr:15.1f} {o:8.1f} {mb:9.1f}")
        ratio = med["memory"][0] / med["files"][0] if med["files"][0] > 0 else float("nan")
        print(f"{job:6} ratio memory / files: {ratio:.2f}")


if __name__ == "__main__":
    main()
