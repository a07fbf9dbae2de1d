"""Issue 36 §3: `libreyolo profile infer --repeat 2` writes the Python LibreYOLO's files where it
writes them, and the Python tool reads them by its own definitions.

Runs our `libreyolo profile infer --repeat 2` (a private daemon, CPU, imgsz 64, 2 runs, the
fixture checkpoint) and checks that

  - the project holds the Python LibreYOLO 1.6.0's tree for the same command: infer_0/ and
    infer_1/ with a profile.json each, infer_repeat.json at the root, no infer/ (ours adds the
    recorded window's trace and report.html in the final trial's folder);
  - the repeat file's numbers are the Python tool's statistics of the trials' img/s: img_per_s
    their statistics.fmean, img_per_s_std their statistics.pstdev, img_per_s_n their count, as
    its `profile infer --repeat` computes them (libreyolo/cli/commands/profile.py);
  - the Python tool's own readers (its typer functions, in this process) read each file: its
    `get` prints the value our file holds for every metric (img_per_s the mean on the repeat
    file, each trial's own on a trial's), its `phases`, `kernels` and `ops` run;
  - each trial folder holds profile_summary.json with the Python tool's keys (its recorded
    tests/fixtures/python_cli/profile_summary/infer/profile_summary.json) and our profile.json's
    numbers, and the Python tool's analyze_trace on our trace reads its step time from it.

usage: python_reads_our_repeat_test.py LIBREYOLO_CLIENT LIBREYOLOD WEIGHTS
(run with the project environment's python, which holds the Python LibreYOLO).
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

os.environ.setdefault("MPLBACKEND", "Agg")
from libreyolo.cli.commands import profile as py  # noqa: E402

CLIENT, LIBREYOLOD, WEIGHTS = (os.path.abspath(a) for a in sys.argv[1:4])
from python_tool_calls import fail, failures, run  # noqa: E402


with tempfile.TemporaryDirectory() as tmp:
    env = dict(os.environ, LIBREYOLOD=LIBREYOLOD, XDG_RUNTIME_DIR=os.path.join(tmp, "run"),
               LIBREYOLO_STATE_DIR=os.path.join(tmp, "state"), HOME=os.path.join(tmp, "home"))
    for d in ("run", "home"):
        os.makedirs(os.path.join(tmp, d))
    project = os.path.join(tmp, "proj")
    job = subprocess.run(
        [CLIENT, "profile", "infer", "--weights", WEIGHTS, "--device", "cpu", "--imgsz", "64",
         "--warmup", "1", "--runs", "2", "--repeat", "2", "--threads", "1", "--project", project,
         "--json"], env=env, cwd=tmp, capture_output=True, text=True, timeout=240)
    if job.returncode != 0:
        print(job.stdout, job.stderr)
        sys.exit(f"our `profile infer --repeat 2` exited {job.returncode}")
    tree = sorted(os.path.relpath(os.path.join(d, f), project)
                  for d, _, files in os.walk(project) for f in files)
    python_tree = ["infer_0/profile.json", "infer_0/profile_summary.json", "infer_1/profile.json",
                   "infer_1/profile_summary.json", "infer_repeat.json"]
    ours_adds = ["infer_1/profile_trace.json", "infer_1/report.html"]
    if tree != sorted(python_tree + ours_adds):
        fail(f"the project holds {tree}, the Python tool's tree is {python_tree} (+ {ours_adds})")
    answer = json.loads(job.stdout)
    if answer.get("profile") != os.path.join(project, "infer_repeat.json"):
        fail(f"--json `profile` is {answer.get('profile')!r}, the Python tool names the repeat file")

    repeat = json.load(open(os.path.join(project, "infer_repeat.json")))
    trials = repeat.get("img_per_s_trials") or []
    if len(trials) != 2 or repeat.get("img_per_s_n") != 2:
        fail(f"img_per_s_trials {trials}, img_per_s_n {repeat.get('img_per_s_n')}: expected 2")
    else:
        for key, want in [("img_per_s", statistics.fmean(trials)),
                          ("img_per_s_std", statistics.pstdev(trials))]:
            if abs(repeat[key] - want) > 1e-9 * max(1.0, abs(want)):
                fail(f"infer_repeat.json {key} = {repeat[key]}, the Python tool's is {want}")

    for rel, img_per_s in [("infer_repeat.json", repeat.get("img_per_s")),
                           ("infer_0/profile.json", trials[0] if trials else None),
                           ("infer_1/profile.json", trials[-1] if trials else None)]:
        path = os.path.join(project, rel)
        doc = json.load(open(path))
        if doc.get("img_per_s") != img_per_s:
            fail(f"{rel}: img_per_s {doc.get('img_per_s')}, expected {img_per_s}")
        if rel != "infer_repeat.json" and "img_per_s_n" in doc:
            fail(f"{rel}: a trial's file holds img_per_s_n (the Python tool's trial files do not)")
        # Its `get` prints exactly the value our file holds, for every metric.
        for key, value in doc["metrics"].items():
            out, err = run(py.get_cmd, path, field=key, json_output=True)
            if err is not None or json.loads(out) != {key: value}:
                fail(f"{rel}: Python `get {key}` gave {out.strip()!r} ({err!r}), file {value!r}")
        for label, fn, kw in [
            ("phases", py.phases_cmd, {"json_output": True}),
            ("kernels", py.kernels_cmd, dict(top=20, category=None, grep=None, tensorcore=False,
                                             sort="time", phase=None, json_output=True)),
            ("ops", py.ops_cmd, dict(top=20, phase=None, json_output=True)),
        ]:
            _, err = run(fn, path, **kw)
            if err is not None:
                fail(f"{rel}: Python `profile {label}` raised {err!r}")
        print(f"{rel}: read by the Python LibreYOLO's readers (img_per_s {doc.get('img_per_s')})")

    # profile_summary.json in each trial folder, as the Python tool writes it: every key of its
    # own (recorded from its `profile infer`), with our profile.json's numbers; and its trace
    # analyser (analyze_trace, which reads the sibling profile_summary.json) takes its step time
    # from ours.
    from libreyolo.training.profiler import analyze_trace  # noqa: E402
    recorded = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures",
                            "python_cli", "profile_summary", "infer", "profile_summary.json")

    def key_paths(v, prefix=""):
        if not isinstance(v, dict):
            return {prefix}
        return {prefix} | {p for k, x in v.items() for p in key_paths(x, f"{prefix}.{k}")}

    python_keys = key_paths(json.load(open(recorded)))
    for trial in ("infer_0", "infer_1"):
        path = os.path.join(project, trial, "profile_summary.json")
        if not os.path.exists(path):
            fail(f"{trial}/profile_summary.json: not written")
            continue
        summary = json.load(open(path))
        doc = json.load(open(os.path.join(project, trial, "profile.json")))
        missing = sorted(python_keys - key_paths(summary))
        if missing:
            fail(f"{trial}/profile_summary.json lacks the Python tool's keys {missing}")
        expect = {("real", "step_ms"): doc["step_ms"], ("real", "img_per_s"): doc["img_per_s"],
                  ("meta", "batch"): doc["config"]["batch"], ("bound",): doc["bound"]}
        for k in ("p50_ms", "p90_ms", "p99_ms", "mean_ms", "min_ms", "max_ms", "n"):
            expect[("latency", k)] = doc["latency"][k]
        for k in ("preprocess", "forward", "postprocess"):
            expect[("stages_ms", k)] = doc["stages_ms"][k]
        for keys, want in expect.items():
            got = summary
            for k in keys:
                got = got.get(k) if isinstance(got, dict) else None
            if got != want:
                fail(f"{trial}/profile_summary.json {'.'.join(keys)} = {got!r}, "
                     f"profile.json's {want!r}")
        print(f"{trial}/profile_summary.json: the Python tool's keys, profile.json's numbers")
    analysed = analyze_trace(os.path.join(project, "infer_1", "profile_trace.json"))
    ours_step = json.load(open(os.path.join(project, "infer_1", "profile.json")))["step_ms"]
    if analysed.get("step_ms") != round(ours_step, 2):
        fail(f"the Python tool's analyze_trace on our trace: step_ms {analysed.get('step_ms')}, "
             f"ours (from profile_summary.json) {round(ours_step, 2)}")
    else:
        print(f"analyze_trace took step_ms {analysed['step_ms']} from our profile_summary.json")

print(f"{len(failures)} failed" if failures else "our --repeat files read as the Python tool's")
sys.exit(1 if failures else 0)
