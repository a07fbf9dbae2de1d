"""TorchScript exports of every detection family: our engine against the Python LibreYOLO.

Each rep, side by side on this machine with the same torch (the project environment's 2.11
wheel, which our engine links) and the same thread count:
  1. the Python LibreYOLO exports every detection family of its own registry that it builds
     from random init without a download (tests/engine/torchscript/registry_exports.py, which
     reads libreyolo.models.inventory), and times its own TorchScript backend on the sample image
     (`predict()` end to end and the module's forward alone, medians of --runs);
  2. ours: `libreyolo-engine infer --weights <family>.torchscript --with-flops` (a trace: FLOPs
     are counted from it) on
     the same file and image: latency p50 (end to end), the forward stage, and the FLOPs the
     profile counts per step;
  3. the independent count: torch.utils.flop_counter.FlopCounterMode around the export's own
     forward on the backend's input blob, in the Python environment;
  4. whether the detections agree: engine_torchscript_registry_test on the same folder (our
     input, decode and forward against the backend's detections; its max box difference).
The table quotes medians over reps and ratios ours / Python (latency) and ours / FlopCounterMode.
See bench/README.md.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

from engine_bench import median, python_env_dir  # the same environment and statistic

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
REGISTRY = os.path.join(ROOT, "tests", "engine", "torchscript", "registry_exports.py")
# FlopCounterMode (torch 2.11) has no formula for the CPU's SDPA kernel,
# aten._scaled_dot_product_flash_attention_for_cpu (its SDPA entry covers the CUDA kernels only),
# so on the CPU it leaves every attention uncounted (EC and TinyFormer: 1.48 GFLOP at 320, -16 %).
# Those calls are counted here by torch's own sdpa_flop_count, seen by a dispatch mode.
FLOPS = """
import sys, json, numpy as np, torch
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count
from torch.utils._python_dispatch import TorchDispatchMode
CPU_SDPA = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
class CpuSdpa(TorchDispatchMode):
    flops = 0
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket is CPU_SDPA:
            CpuSdpa.flops += sdpa_flop_count(args[0].shape, args[1].shape, args[2].shape)
        return func(*args, **(kwargs or {}))
m = torch.jit.load(sys.argv[1], map_location="cpu")
x = torch.from_numpy(np.load(sys.argv[2]))
with torch.no_grad(), FlopCounterMode(display=False) as fc, CpuSdpa():
    m(x)
print(json.dumps({"flops": fc.get_total_flops() + CpuSdpa.flops,
                  "cpu_sdpa_flops": CpuSdpa.flops}))
"""


def ours(a, exports, family, rep):
    project = os.path.join(a.work_dir, "runs", f"{family}_{rep}")
    shutil.rmtree(project, ignore_errors=True)
    ref = json.load(open(os.path.join(exports, f"{family}.reference.json")))
    cmd = [a.engine, "infer", ref["image"], "--device", "cpu", "--weights",
           os.path.join(exports, f"{family}.torchscript"), "--warmup",
           str(a.warmup), "--runs", str(a.runs), "--threads", str(a.threads), "--conf",
           str(ref["params"]["conf"]), "--with-flops", "--project", project, "--json"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout)
    if p.returncode != 0:
        return {"error": " ".join((p.stderr or p.stdout).strip().splitlines()[-1:])[:300]}
    prof = json.load(open(os.path.join(project, "infer", "profile.json")))
    return {"e2e_ms": (prof.get("latency") or {}).get("p50_ms"),
            "fwd_ms": (prof.get("stages_ms") or {}).get("forward"),
            "flops": prof.get("flops_per_step"), "model": prof.get("model")}


def independent_flops(python, exports, family):
    p = subprocess.run([python, "-c", FLOPS, os.path.join(exports, f"{family}.torchscript"),
                        os.path.join(exports, f"{family}.input.npy")],
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])["flops"]


def agreement(a, exports, family):
    """The registry test on this folder: 'yes (max box diff X px)', 'no: why', or 'n/a'."""
    if not os.access(a.registry_test, os.X_OK):
        return "n/a (no test binary)"
    env = dict(os.environ, LIBREYOLO_REGISTRY_EXPORTS=exports)
    p = subprocess.run([a.registry_test, f"--gtest_filter=Families/RegistryFamily.*/{family}"],
                       capture_output=True, text=True, timeout=a.timeout, env=env)
    diff = re.search(r"max box diff ([0-9.e+-]+) px", p.stdout)
    if p.returncode == 0 and "[  SKIPPED ]" not in p.stdout:
        return f"yes ({float(diff.group(1)):.2g} px)" if diff else "yes"
    if "[  SKIPPED ]" in p.stdout:
        return "skipped"
    failure = [l for l in p.stdout.splitlines() if "Failure" in l or "error" in l.lower()]
    return "no" + (f": {failure[0].strip()[:80]}" if failure else "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--engine", default=os.path.join(ROOT, "build", "bench", "libreyolo-engine"))
    ap.add_argument("--registry-test", default=os.path.join(
        ROOT, "build", "tests", "engine", "infer", "engine_torchscript_registry_test"))
    ap.add_argument("--families", default="", help="comma list (default: the whole registry)")
    ap.add_argument("--imgsz", type=int, default=320)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1,
                    help="both tools (default 1: the Python backend's timing at 1 thread)")
    ap.add_argument("--work-dir", default="/tmp/libreyolo-export-bench")
    ap.add_argument("--fresh", action="store_true", help="export again (default: reuse rep 0's)")
    ap.add_argument("--timeout", type=int, default=900)
    a = ap.parse_args()
    if not os.access(a.engine, os.X_OK):
        sys.exit(f"export_bench: no engine tool at {a.engine} (bash scripts/build.sh)")
    python = os.path.join(python_env_dir(None), "bin", "python")
    rows = {}
    for rep in range(a.reps):
        exports = os.path.join(a.work_dir, f"exports{rep}")
        if a.fresh:
            shutil.rmtree(exports, ignore_errors=True)
        # --isolate: a process per family (its latencies not skewed by the families before it,
        # a crash costs one row).
        cmd = [python, REGISTRY, exports, "--imgsz", str(a.imgsz), "--runs", str(a.runs),
               "--threads", str(a.threads), "--isolate"]
        if a.families:
            cmd += ["--families", a.families]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout * 10)
        if p.returncode != 0:
            sys.exit(f"registry_exports failed: {(p.stderr or p.stdout)[-2000:]}")
        fams = [l.strip() for l in open(os.path.join(exports, "registry.txt")) if l.strip()]
        if a.families:
            fams = [f for f in fams if f in a.families.split(",")]
        for f in fams:
            r = rows.setdefault(f, {"py_e2e": [], "py_fwd": [], "e2e": [], "fwd": [],
                                    "flops": [], "py_flops": None, "agree": None, "error": None,
                                    "size": None})
            ref = json.load(open(os.path.join(exports, f"{f}.reference.json")))
            if "error" in ref:
                r["error"] = "Python: " + ref["error"][:160]
                continue
            r["size"] = f"{ref['size']} @{ref['imgsz']}"
            t = ref.get("timing") or {}
            r["py_e2e"].append(t.get("predict_ms_median"))
            r["py_fwd"].append(t.get("forward_ms_median"))
            if rep == 0:
                r["py_flops"] = independent_flops(python, exports, f)
                r["agree"] = agreement(a, exports, f)
            o = ours(a, exports, f, rep)
            if "error" in o:
                r["error"] = "ours: " + o["error"]
                continue
            r["e2e"].append(o["e2e_ms"])
            r["fwd"].append(o["fwd_ms"])
            r["flops"].append(o["flops"])
        print(f"rep {rep + 1}/{a.reps} done", file=sys.stderr)
    print(f"TorchScript exports, CPU, {a.threads} thread(s), {a.runs} runs, medians of {a.reps} reps")
    print("| family | size @imgsz | detections agree | Python e2e ms | ours e2e ms | ratio | "
          "Python fwd ms | ours fwd ms | ratio | GFLOP ours | GFLOP FlopCounterMode | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")

    def ratio(x, y):
        return f"{x / y:.2f}" if x and y else "-"

    def cell(v, scale=1.0, fmt="{:.1f}"):
        return fmt.format(v / scale) if v is not None else "-"
    for f, r in rows.items():
        m = {k: median(v) for k, v in r.items() if isinstance(v, list)}
        if r["error"] and not r["e2e"]:
            print(f"| {f} | {r['size'] or '-'} | {r['agree'] or '-'} | failed: {r['error']} |")
            continue
        print(f"| {f} | {r['size']} | {r['agree']} | {cell(m['py_e2e'])} | {cell(m['e2e'])} | "
              f"{ratio(m['e2e'], m['py_e2e'])} | {cell(m['py_fwd'])} | {cell(m['fwd'])} | "
              f"{ratio(m['fwd'], m['py_fwd'])} | {cell(m['flops'], 1e9, '{:.3f}')} | "
              f"{cell(r['py_flops'], 1e9, '{:.3f}')} | {ratio(m['flops'], r['py_flops'])} |")


if __name__ == "__main__":
    main()
