#!/usr/bin/env python3
"""Issue 38 §2: the tasks other than detection, ours against the Python LibreYOLO's TorchScript
backend on the same export, image and thread count; prints bench/README.md's table.

    python3 bench/task_bench.py [--specs classify=vit:ti:224,...] [--runs 20] [--threads 1]

Per TASK=FAMILY:SIZE:IMGSZ (IMGSZ may be HxW; default: the list below; TASK may be a task_exports.py key such as
semantic_letterbox, a family of that task with its own preprocessing):
  1. the Python tool exports the family from random init and times its backend
     (tests/engine/torchscript/task_exports.py --runs: median preprocess, forward and predict ms;
     its postprocess is predict - preprocess - forward, which also holds the image load);
  2. ours: `libreyolo-engine infer --weights <task>.torchscript` (stages_ms from profile.json:
     means of the per-stage half of the measured window; the image is decoded in preprocess);
  3. agreement: engine_task_export_test on that folder (input, decode of the backend's outputs,
     our forward end to end, the job), its one-line result.
Runs on whatever machine it is given: say how loaded it was beside the numbers.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPECS = ("classify=vit:ti:224,classify=resnet:18:224,classify=convnextv2:atto:224,"
         "classify=mobilenetv4:s:224,classify=efficientnetv2:b0:224,classify=deit:t:224,"
         "semantic=ppliteseg:t50:128,semantic=fcn:r50:256,semantic=deeplabv3:r50:256,"
         "semantic_letterbox=pidnet:s:128,semantic_letterbox=segformer:b0:128,"
         "depth=zipdepth:b:128,depth=depth_anything:s:266,segment=dfine:n:256,segment=ec:s:320,"
         "pose=yolonas:n:256,pose_dekr=dekr:w32:128,pose_hrnet=hrnet:w32:256x192,"
         "semantic_gtr=gtr:s:128")


def python_env():
    return subprocess.run(["bash", os.path.join(ROOT, "scripts", "python-env.sh")],
                          capture_output=True, text=True, check=True).stdout.strip()


def ours(a, folder, task):
    project = os.path.join(folder, "runs")
    shutil.rmtree(project, ignore_errors=True)
    ref = json.load(open(os.path.join(folder, f"{task}.reference.json")))
    cmd = [a.engine, "infer", ref["image"], "--device", "cpu", "--weights",
           os.path.join(folder, f"{task}.torchscript"), "--warmup", str(a.warmup), "--runs",
           str(a.runs), "--threads", str(a.threads), "--project", project, "--json"]
    if "params" in ref:
        cmd += ["--conf", str(ref["params"]["conf"])]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        return {"error": " ".join((p.stderr or p.stdout).strip().splitlines()[-1:])[:300]}
    prof = json.load(open(os.path.join(project, "infer", "profile.json")))
    return dict(prof.get("stages_ms") or {}, model=prof.get("model"))


def agreement(a, folder, task):
    env = dict(os.environ, LIBREYOLO_TASK_EXPORTS=folder)
    p = subprocess.run([a.test, f"--gtest_filter=Tasks/TaskExport.*/{task}"], capture_output=True,
                       text=True, timeout=a.timeout, env=env)
    said = [l for l in p.stdout.splitlines()
            if re.match(rf"{task}: ", l) and "preprocess" not in l]
    verdict = "yes" if p.returncode == 0 else "NO"
    return verdict + (f" ({said[0].split(': ', 1)[1]})" if said else "")


def ms(v):
    return "null" if v is None else f"{v:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--specs", default=SPECS)
    ap.add_argument("--engine", default=os.path.join(ROOT, "build", "bench", "libreyolo-engine"))
    ap.add_argument("--test", default=os.path.join(ROOT, "build", "tests", "engine", "infer",
                                                   "engine_task_export_test"))
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--work-dir", default="/tmp/libreyolo-task-bench")
    ap.add_argument("--timeout", type=int, default=900)
    a = ap.parse_args()
    py = os.path.join(python_env(), "bin", "python")
    print("| task | family (export) | MB | Python pre / fwd / post ms | ours pre / fwd / post ms "
          "| agrees with the Python backend |")
    print("|---|---|---|---|---|---|")
    for spec in a.specs.split(","):
        task, rest = spec.split("=", 1)
        family = rest.split(":")[0]
        folder = os.path.join(a.work_dir, f"{task}-{family}")
        if not os.path.exists(os.path.join(folder, f"{task}.reference.json")):
            subprocess.run([py, os.path.join(ROOT, "tests", "engine", "torchscript",
                                             "task_exports.py"), folder, "--tasks", task,
                            "--family", spec, "--runs", str(a.runs), "--threads", str(a.threads)],
                           check=False, timeout=a.timeout)
        ref = json.load(open(os.path.join(folder, f"{task}.reference.json")))
        if "error" in ref:
            print(f"| {task} | {family} | | export failed: {ref['error'][:120]} | | |")
            continue
        t = ref.get("timing", {})
        py_post = (t["predict_ms_median"] - t["preprocess_ms_median"] - t["forward_ms_median"]
                   if t else None)
        o = ours(a, folder, task)
        mine = (o["error"] if "error" in o else
                f"{ms(o.get('preprocess'))} / {ms(o.get('forward'))} / {ms(o.get('postprocess'))}")
        size = ref["imgsz"]
        size = "x".join(map(str, size)) if isinstance(size, list) else size
        print(f"| {task} | {family}-{ref['size']} ({size}) | {ref['mb']:.0f} | "
              f"{ms(t.get('preprocess_ms_median'))} / {ms(t.get('forward_ms_median'))} / "
              f"{ms(py_post)} | {mine} | {agreement(a, folder, task)} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
