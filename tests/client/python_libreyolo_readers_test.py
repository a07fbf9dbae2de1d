"""Our readers on what the real Python LibreYOLO writes, made at test time.

Runs the public Python LibreYOLO's own `libreyolo profile infer` (twice, `--repeat 2`; and once
with `--no-trace`, its trace-less fallback profile) and `libreyolo profile run` (twice,
`--repeat 2`) on the CPU with tiny settings (imgsz 64, 2 measured steps, 1 thread), on
the fixture checkpoint and a generated 8-image YOLO dataset, fully offline. Then reads every
profile.json it wrote, and its raw profile_trace.json files (a real torch 2.11 Kineto export),
with every reader of our client (`libreyolo profile summary|get|phases|kernels|ops|compare|
what-if`, with and without --json) and checks that

  - each exits 0 with its result on stdout and nothing on stderr;
  - the numbers shown are the Python file's own (step time, verdict, phases and their op counts,
    op rows, latency, the repeat's trials), and what the file lacks (peak VRAM on a CPU, kernels)
    is shown as "n/a" / null, never as 0 or an error;
  - what a reader legitimately cannot do on such a file answers the documented exit 2 with one
    diagnostic on stderr and nothing on stdout (ops --group-by-input-shape: no shapes recorded;
    what-if --remove-category: no kernel categories on a CPU; an unknown phase or metric);
    what-if --remove-launches on a CPU profile is n/a (null projection), exit 0.

usage: python_libreyolo_readers_test.py LIBREYOLO_CLIENT WEIGHTS
(run with the project environment's python: its bin/ holds the Python `libreyolo`).
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

CLIENT, WEIGHTS = sys.argv[1], sys.argv[2]
PY_LIBREYOLO = os.path.join(os.path.dirname(sys.executable), "libreyolo")
failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def close(a, b, rel=1e-6, abs_=1e-9):
    return a is not None and b is not None and math.isclose(float(a), float(b), rel_tol=rel,
                                                            abs_tol=abs_)


def python_env(tmp):
    env = dict(os.environ)
    env.update({
        # Never reach the network (the weights and images are local files).
        "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
        "WANDB_MODE": "disabled", "MPLBACKEND": "Agg", "MPLCONFIGDIR": os.path.join(tmp, "mpl"),
        "XDG_CONFIG_HOME": os.path.join(tmp, "config"), "XDG_CACHE_HOME": os.path.join(tmp, "cache"),
        # One thread, no spinning: the box is shared (bench/README.md, OMP_WAIT_POLICY).
        "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE", "PYTHONUNBUFFERED": "1",
    })
    return env


def make_dataset(root, n_train=8, size=64):
    """A YOLO-format dataset of random images, 3 boxes each (nothing is downloaded)."""
    import numpy as np
    from PIL import Image
    rng = np.random.default_rng(1234)
    for split, n in (("train", n_train), ("val", 2)):
        os.makedirs(os.path.join(root, "images", split))
        os.makedirs(os.path.join(root, "labels", split))
        for i in range(n):
            Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)).save(
                os.path.join(root, "images", split, f"{i:03d}.jpg"))
            with open(os.path.join(root, "labels", split, f"{i:03d}.txt"), "w") as f:
                for k in range(3):
                    f.write(f"{k} {0.3 + 0.2 * k:.2f} 0.5 0.2 0.3\n")
    yaml = os.path.join(root, "data.yaml")
    with open(yaml, "w") as f:
        f.write(f"path: {root}\ntrain: images/train\nval: images/val\nnc: 80\n"
                f"names: [{', '.join(f'c{i}' for i in range(80))}]\n")
    return yaml


def run_python_tool(args, env, cwd):
    t0 = time.monotonic()
    p = subprocess.run([PY_LIBREYOLO, "profile", *args, "--json"], env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=240)
    print(f"python libreyolo profile {args[0]}: rc {p.returncode}, {time.monotonic() - t0:.0f} s",
          flush=True)
    if p.returncode != 0:
        print(p.stdout[-3000:], p.stderr[-3000:], sep="\n")
        sys.exit(f"the Python LibreYOLO failed (rc {p.returncode}): nothing to read")
    # Its --json answer is the last JSON object on stdout (log lines may precede it).
    return json.loads(p.stdout[p.stdout.index("{\n"):])


def ours(*args, want=0):
    """Runs our client; checks the exit code and the stdout/stderr split. Returns stdout."""
    p = subprocess.run([CLIENT, "profile", *args], capture_output=True, text=True, timeout=120)
    what = "libreyolo profile " + " ".join(os.path.basename(a) if os.sep in a else a
                                            for a in args)
    if p.returncode != want:
        fail(f"{what}: exit {p.returncode}, expected {want}; stderr: {p.stderr.strip()[:500]}")
        return p.stdout
    if want == 0:
        check(p.stdout.strip() != "", f"{what}: nothing on stdout")
        check(p.stderr == "", f"{what}: wrote to stderr: {p.stderr.strip()[:300]}")
        check("error" not in p.stdout.lower() or "--json" in args,
              f"{what}: its output mentions an error")
    else:
        check(p.stdout == "", f"{what}: exit {want} but wrote to stdout")
        check(p.stderr.count("\n") == 1 and "error:" in p.stderr,
              f"{what}: expected one diagnostic line on stderr, got {p.stderr!r}")
    return p.stdout


def ours_json(*args):
    out = ours(*args, "--json")
    try:
        return json.loads(out)
    except ValueError as e:
        fail(f"libreyolo profile {args[0]} --json: not JSON ({e}): {out[:200]!r}")
        return {}


def has_number(text):
    return re.search(r"\d+\.\d+|\b\d+\b", text) is not None


def read_profile(py, path, label):
    """Every reader on one profile.json the Python tool wrote; the numbers must be its own."""
    print(f"-- {label}: {path}", flush=True)
    # summary
    text = ours("summary", path)
    check(has_number(text), f"{label} summary: no numbers")
    check("n/a" in text, f"{label} summary: no n/a (peak VRAM, kernels are absent on a CPU)")
    check(f"verdict: {py['bound']}" in text, f"{label} summary: verdict {py['bound']!r} not shown")
    s = ours_json("summary", path)
    check(close(s.get("step_ms"), py["step_ms"]), f"{label} summary --json step_ms "
          f"{s.get('step_ms')} != {py['step_ms']}")
    check(s.get("peak_vram_mb", "absent") is None,
          f"{label} summary --json peak_vram_mb: {s.get('peak_vram_mb', 'absent')!r}, not null")
    # get: the list, one metric, a metric the file lacks, an unknown metric
    listing = ours("get", path)
    check("step_ms" in listing and "n/a" in listing, f"{label} get: list without step_ms or n/a")
    m = ours_json("get", path).get("metrics", {})
    check(close(m.get("step_ms"), py["step_ms"]), f"{label} get --json: step_ms {m.get('step_ms')}")
    check(close(ours("get", path, "step_ms").strip(), py["step_ms"]),
          f"{label} get step_ms != {py['step_ms']}")
    check(ours("get", path, "peak_vram_mb").strip() == "n/a", f"{label} get peak_vram_mb not n/a")
    g = ours_json("get", path, "step_ms")
    check(g.get("metric") == "step_ms" and close(g.get("value"), py["step_ms"]),
          f"{label} get step_ms --json: {g}")
    check(ours_json("get", path, "peak_vram_mb").get("value", 0) is None,
          f"{label} get peak_vram_mb --json: not null")
    ours("get", path, "no_such_metric", want=2)
    # phases: the Python file's phases, in its order, with its op counts
    text = ours("phases", path)
    for ph in py["phases"]:
        check(ph["phase"] in text, f"{label} phases: {ph['phase']} missing")
    ph_json = ours_json("phases", path)
    got = [(r.get("phase"), r.get("ops_per_step")) for r in ph_json.get("phases", [])]
    want = [(r["phase"], r["ops_per_step"]) for r in py["phases"]]
    check(got == want, f"{label} phases --json: {got} != {want}")
    walls = {r.get("phase"): r.get("wall_ms_per_step") for r in ph_json.get("phases", [])}
    for r in py["phases"]:
        if r["wall_ms_per_step"] is None:
            check(walls.get(r["phase"], 0) is None,
                  f"{label} phases --json: {r['phase']} wall should be null")
        else:
            check(close(walls.get(r["phase"]), r["wall_ms_per_step"]),
                  f"{label} phases --json: {r['phase']} wall {walls.get(r['phase'])}")
    # kernels: none on a CPU; every phase of the file is a valid --phase
    ours("kernels", path)
    k = ours_json("kernels", path)
    rows = k.get("kernels")
    check(rows == [], f"{label} kernels --json: expected no kernels, got {str(rows)[:200]}")
    for ph in py["phases"]:
        ours("kernels", path, "--phase", ph["phase"])
    ours("kernels", path, "--phase", "no_such_phase", want=2)
    # ops: the Python file's op rows
    text = ours("ops", path)
    if py["ops"]:
        check(py["ops"][0]["op"] in text, f"{label} ops: the top op {py['ops'][0]['op']} missing")
        check("n/a" in text, f"{label} ops: self CPU is not in Python profiles: expected n/a")
    else:  # made without a trace: no op rows at all
        check("no CPU ops" in text, f"{label} ops: an empty op table should say so: {text!r}")
    o = ours_json("ops", path, "--top", "0")
    orows = o.get("ops", [])
    check(len(orows) == len(py["ops"]), f"{label} ops --json: {len(orows)} rows, "
          f"file has {len(py['ops'])}")
    by_name = {r["op"]: r for r in py["ops"]}
    for r in orows:
        ref = by_name.get(r.get("op"))
        if not check(ref is not None, f"{label} ops: row {r.get('op')} not in the file"):
            continue
        check(close(r.get("ms_per_step"), ref["ms_per_step"]) and
              close(r.get("count_per_step"), ref["count_per_step"]),
              f"{label} ops: {r.get('op')} {r.get('ms_per_step')}/{r.get('count_per_step')} != "
              f"{ref['ms_per_step']}/{ref['count_per_step']}")
    # The default sort keeps the Python tool's own row order, as its `ops` prints it (issue 36
    # §3, 7900a55), not a re-sort by our ms_per_step.
    check([r.get("op") for r in orows] == [r["op"] for r in py["ops"]],
          f"{label} ops: not in the file's own order")
    # Every listed phase is a valid --phase, with the file's rows for it (none when the file
    # has no ops_by_phase entry, as in a profile made without a trace).
    for ph in [r["phase"] for r in py["phases"]]:
        po = ours_json("ops", path, "--phase", ph, "--top", "0")
        names = sorted(r.get("op") for r in po.get("ops", []))
        want = sorted(r["op"] for r in py["ops_by_phase"].get(ph, []))
        check(names == want, f"{label} ops --phase {ph}: rows differ")
        ours("ops", path, "--phase", ph)
    ours("ops", path, "--phase", "no_such_phase", want=2)
    ours("ops", path, "--group-by-input-shape", want=2)  # no shapes in a Python profile
    # what-if on a CPU profile: nothing to project (issue 36 §5): the step now, the projection
    # n/a (null), the reason in the caveat; no kernel categories to remove either
    text = ours("what-if", path, "--remove-launches", "10")
    check(has_number(text) and "projected n/a" in text, f"{label} what-if: {text!r}")
    w = ours_json("what-if", path, "--remove-launches", "10")
    check(close(w.get("step_ms", {}).get("now"), py["step_ms"]),
          f"{label} what-if --json step_ms.now: {w.get('step_ms')}")
    check(w.get("step_ms", {}).get("projected", 0) is None and w.get("applicable") is False,
          f"{label} what-if: a CPU profile projects nothing: {w.get('step_ms')}")
    ours("what-if", path, "--remove-category", "gemm", want=2)
    # compare with itself: every delta 0
    text = ours("compare", path, path)
    check(has_number(text), f"{label} compare: no numbers")
    c = ours_json("compare", path, path)
    check(c != {}, f"{label} compare --json: empty")


def read_trace(path, label, py_profile):
    """Every reader on the Python tool's raw Kineto trace (torch 2.11's own export)."""
    print(f"-- {label}: {path}", flush=True)
    text = ours("summary", path)
    check(has_number(text) and "n/a" in text, f"{label} summary: numbers and n/a expected")
    s = ours_json("summary", path)
    check(isinstance(s.get("real_steps"), int) and s["real_steps"] > 0,
          f"{label} summary --json: no real_steps")
    check("step_ms" in ours("get", path), f"{label} get: no step_ms")
    ours_json("get", path)
    ours("get", path, "peak_vram_mb")
    # Our analyser and the Python tool's (analyze_trace) on the same torch 2.11 trace: the same
    # phases with the same CPU op count per step (every step runs the same ops on a CPU).
    ph = ours_json("phases", path)
    got = {r.get("phase"): r.get("ops_per_step") for r in ph.get("phases", [])}
    for r in py_profile["phases"]:
        check(close(got.get(r["phase"]), r["ops_per_step"]),
              f"{label} phases: {r['phase']} ops/step ours {got.get(r['phase'])}, the Python "
              f"tool's {r['ops_per_step']}")
    ours("phases", path)
    ours("kernels", path)
    ours_json("kernels", path)
    ours("ops", path)
    o = ours_json("ops", path, "--top", "5")
    check(len(o.get("ops", [])) == 5, f"{label} ops --top 5: not 5 rows")
    ours("ops", path, "--phase", "forward")
    ours("what-if", path, "--remove-launches", "10")
    ours_json("what-if", path, "--remove-launches", "10")
    ours("compare", path, py_profile["_path"])
    ours_json("compare", path, py_profile["_path"])


def main():
    tmp = tempfile.mkdtemp(prefix="libreyolo-python-peer-")
    try:
        env = python_env(tmp)
        data = make_dataset(os.path.join(tmp, "ds"))
        image = os.path.join(tmp, "ds", "images", "val", "000.jpg")
        common = ["--weights", WEIGHTS, "--size", "t", "--device", "cpu", "--imgsz", "64"]
        inf = run_python_tool(["infer", image, *common, "--warmup", "2", "--runs", "4",
                               "--repeat", "2", "--project", os.path.join(tmp, "infer")],
                              env, tmp)
        # Without a trace it writes its fallback profile: phases and latency, no op or kernel
        # rows, `trace` null.
        notrace = run_python_tool(["infer", image, *common, "--warmup", "1", "--runs", "2",
                                   "--no-trace", "--project", os.path.join(tmp, "notrace")],
                                  env, tmp)
        # Two trials: prof_0/ and prof_1/ hold one run each, profile_repeat.json their
        # aggregate (mean and standard deviation of img/s, an "aggregation" block).
        run = run_python_tool(["run", data, *common, "--batch", "2", "--steps", "2", "--warmup",
                               "1", "--workers", "0", "--no-amp", "--repeat", "2", "--project",
                               os.path.join(tmp, "train")], env, tmp)
        profiles = {
            "infer trial 0": os.path.join(tmp, "infer", "infer_0", "profile.json"),
            "infer trial 1": os.path.join(tmp, "infer", "infer_1", "profile.json"),
            "infer repeat": inf["profile"],
            "infer no-trace": notrace["profile"],
            "run": os.path.join(tmp, "train", "prof_0", "profile.json"),
            "run repeat": run["profile"],
        }
        loaded = {}
        for label, path in profiles.items():
            with open(path) as f:
                loaded[label] = json.load(f)
            loaded[label]["_path"] = path
            check(loaded[label].get("schema", "").startswith("libreyolo.profile.analysis"),
                  f"{label}: the Python tool wrote schema {loaded[label].get('schema')!r}")
        for label, path in profiles.items():
            read_profile(loaded[label], path, label)

        # Inference: latency and stages are the file's; the repeat's trials make compare's
        # significance call available (n = 2 on both sides).
        nt = loaded["infer no-trace"]
        check(nt.get("trace") is None and nt["ops"] == [] and nt["ops_by_phase"] == {},
              "infer --no-trace: expected the Python tool's trace-less fallback profile")
        rep = loaded["infer repeat"]
        check(rep.get("img_per_s_n") == 2, f"infer repeat: img_per_s_n {rep.get('img_per_s_n')}")
        s = ours_json("summary", profiles["infer repeat"])
        lat = s.get("latency") or {}
        check(close(lat.get("p50_ms"), rep["latency"]["p50_ms"]),
              f"infer summary latency p50 {lat.get('p50_ms')} != {rep['latency']['p50_ms']}")
        check(close(ours("get", profiles["infer repeat"], "nms_ms").strip(),
                    rep["stages_ms"]["postprocess"]), "infer get nms_ms != stages_ms.postprocess")
        text = ours("summary", profiles["infer repeat"])
        check("p50" in text, "infer summary: no latency line")
        c = ours_json("compare", profiles["infer repeat"], profiles["infer repeat"])
        sig = c.get("img_per_s_significance") or {}
        check(sig.get("available") is True, f"compare repeat vs repeat: significance {sig}")
        text = ours("compare", profiles["infer trial 0"], profiles["infer trial 1"])
        check("single run" in text, "compare of single trials: no 'single run' note")
        runrep = loaded["run repeat"]
        check(runrep.get("img_per_s_n") == 2 and "aggregation" in runrep,
              f"run --repeat 2: not an aggregate ({runrep.get('img_per_s_n')})")
        c = ours_json("compare", profiles["run"], profiles["run repeat"])
        sig = c.get("img_per_s_significance") or {}
        check(sig.get("available") is False and sig.get("n_after") == 2,
              f"compare single run vs repeat: significance needs n >= 2 on both sides: {sig}")
        c = ours_json("compare", profiles["run repeat"], profiles["run repeat"])
        sig = c.get("img_per_s_significance") or {}
        check(sig.get("available") is True and sig.get("significant") is False,
              f"compare run repeat with itself: {sig}")
        # Training vs inference: ms per image is each file's step over its batch.
        c = ours_json("compare", profiles["infer trial 0"], profiles["run"])
        mpi = [d for d in c.get("deltas", []) if d.get("metric") == "ms_per_image"]
        if check(len(mpi) == 1, f"compare infer run --json: no ms_per_image delta: {c}"):
            check(close(mpi[0].get("before"), loaded["infer trial 0"]["step_ms"]) and
                  close(mpi[0].get("after"), loaded["run"]["step_ms"] / 2),
                  f"compare ms_per_image {mpi[0]}")
        # The raw traces the Python tool exported (real torch 2.11 Kineto traces).
        read_trace(os.path.join(os.path.dirname(profiles["infer trial 0"]), "profile_trace.json"),
                   "infer trace", loaded["infer trial 0"])
        with open(os.path.join(os.path.dirname(run["trace"]), "profile.json")) as f:
            last_run = json.load(f)  # the trial the trace belongs to
        last_run["_path"] = os.path.join(os.path.dirname(run["trace"]), "profile.json")
        read_trace(run["trace"], "run trace", last_run)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("all readers read the Python LibreYOLO's output")
    return 0


if __name__ == "__main__":
    sys.exit(main())
