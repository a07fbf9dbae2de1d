#!/usr/bin/env python3
"""Export one family per task other than detection from the Python LibreYOLO's own registry to
TorchScript, from random init, and record what its TorchScript backend makes of it (issue 38 §2).

    python task_exports.py OUT_DIR [--tasks classify,semantic,...] [--list] [--runs N]

Run it with the LibreYOLO Python environment (`$(bash scripts/python-env.sh)/bin/python`).
Everything runs in this one process: each model is built (``Family._from_scratch``, no download),
exported once (``model.export(format="torchscript")``, as ``libreyolo export`` does), loaded with
``libreyolo.LibreYOLO(path)`` (the TorchScript backend) and run on the sample image. For each task
OUT_DIR gets <task>.torchscript (<key>.*: a key such as semantic_letterbox, another family of the
task with its own preprocessing) and:
  <task>.input.npy      the exact blob the backend fed the module
  <task>.output<i>.npy  the module's raw outputs
  <task>.result.npy     the backend's decode: classify: the probabilities [nc]; semantic: the
                        class map [H, W] (as float32); depth: the depth map [H, W]; pose: one
                        row per person [x1, y1, x2, y2, score, class, (x, y, conf) per keypoint]
                        at the first conf of 0.5, 0.3, ... that leaves >= 10 (the random net
                        made informative as registry_exports.py does; HRNet: its one
                        whole-image person at conf 0.25); segment: none
  <task>.reference.json family, size, imgsz, metadata, input and output shapes, the top-5
                        (classify), and with --runs the backend's median preprocess / forward /
                        predict ms at one thread.
A task whose family fails writes <task>.reference.json with "error" and nothing else.
``--list`` prints, from the registry (libreyolo.models.inventory), every family of each task with
whether it is available and whether its export is blocked, and exits.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zipfile
from pathlib import Path

# One family per task, the smallest that exports offline from random init (found from the
# registry with --list; bench/README.md has the sweep). (family, size, imgsz); a key other than
# a task name is "<task>_<what>": another preprocessing of that task, its files named by the key.
TASKS = {
    "classify": ("vit", "ti", 224),
    "semantic": ("ppliteseg", "t50", 128),
    # PIDNet / SegFormer / GTR: their letterbox and the crop of its logits (PIDNet: align_corners)
    "semantic_letterbox": ("pidnet", "s", 128),
    "depth": ("zipdepth", "b", 128),
    "segment": ("dfine", "n", 256),
    "pose": ("yolonas", "n", 256),
    # DEKR: its own letterbox (preprocess/dekr.py: round half up, 127, ImageNet); not decoded
    "pose_dekr": ("dekr", "w32", 128),
    # HRNet: a person-crop head, exported only at its fixed (H, W) canvas; with no detector the
    # backend takes the whole image as one box (affine crop, ImageNet), decoded to one person
    "pose_hrnet": ("hrnet", "w32", (256, 192)),
    # GTR semantic: the letterbox of PIDNet / SegFormer; ImageNet normalisation inside its graph
    "semantic_gtr": ("gtr", "s", 128),
}
# Families whose pose result is not decoded by the engine: no informative heads, one conf.
UNDECODED_POSE = ("dekr",)
# Top-down heads decoded to one person whatever the conf (the whole image as its box): the
# random net's heatmaps as they are, one conf.
ONE_PERSON_POSE = ("hrnet",)
# Keys built with another class count than 80: GTR semantic with its own 19 (Cityscapes): a
# user's class count, and a quarter of the 80 maps the semantic decode upsamples to the image.
NB_CLASSES = {"semantic_gtr": 19}
CONFS = (0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.001)
HERE = Path(__file__).resolve().parent


def list_registry() -> None:
    from libreyolo.models.inventory import collect_model_inventory

    for task in ("classify", "semantic", "segment", "pose", "depth"):
        for fam, d in collect_model_inventory().items():
            if task in d["tasks"]:
                print(f"{task:9s} {fam:16s} available={d['available']} export={d['export_override']}")


def one_task(key: str, family: str, size: str, imgsz, out: Path, image: str, runs: int) -> dict:
    import importlib

    import numpy as np
    import torch

    import libreyolo
    from libreyolo.models.inventory import collect_model_inventory

    task = key.split("_", 1)[0]
    d = collect_model_inventory()[family]
    mod, cls_name = d["class"].rsplit(".", 1)
    cls = getattr(importlib.import_module(mod), cls_name)
    torch.manual_seed(0)
    model = cls._from_scratch(size=size, nb_classes=NB_CLASSES.get(key, 80), device="cpu", seed=0,
                              task=task)
    decoded_pose = task == "pose" and family not in UNDECODED_POSE
    conf_sweep = decoded_pose and family not in ONE_PERSON_POSE
    if conf_sweep:  # constant heads give no person over any conf: as registry_exports.py
        sys.path.insert(0, str(HERE))
        from make_exports import make_informative

        make_informative(model, family, imgsz, image, 0)
    ts = out / f"{key}.torchscript"
    model.export(format="torchscript", output_path=str(ts), imgsz=imgsz, half=False, int8=False,
                 dynamic=False, simplify=True, opset=None, batch=1, device="cpu", verbose=False)
    # The metadata from the archive's extra/ entry, without a second torch.jit.load of the
    # module (~0.8 s for the 116 MB HRNet-W32 and 121 MB DEKR-W32 archives).
    with zipfile.ZipFile(ts) as z:
        entry = next(n for n in z.namelist() if n.endswith("/extra/libreyolo_metadata.json"))
        meta = json.loads(z.read(entry))
    meta.pop("names", None)
    backend = libreyolo.LibreYOLO(str(ts), device="cpu")
    cap: dict = {}
    times = {"pre": [], "fwd": []}
    orig_pre, orig_run = backend._preprocess, backend._run_inference

    def pre(*a, **k):
        t = time.perf_counter()
        r = orig_pre(*a, **k)
        times["pre"].append((time.perf_counter() - t) * 1e3)
        cap["blob"] = np.array(r[0], copy=True)
        return r

    def run(blob):
        t = time.perf_counter()
        outs = orig_run(blob)
        times["fwd"].append((time.perf_counter() - t) * 1e3)
        cap["raw"] = [np.array(o, copy=True) for o in outs]
        return outs

    backend._preprocess, backend._run_inference = pre, run
    conf = 0.25
    for conf in CONFS if conf_sweep else (conf,):
        res = backend(image, conf=conf, iou=0.45, max_det=300)
        if not conf_sweep or len(res.boxes.conf) >= 10:
            break
    rec = {"task": task, "family": family, "size": size, "imgsz": imgsz, "metadata": meta,
           "image": str(Path(image).resolve()), "mb": ts.stat().st_size / 1e6,
           "params": {"conf": conf, "iou": 0.45, "max_det": 300},
           "input_shape": list(cap["blob"].shape), "output_shapes": [list(o.shape) for o in cap["raw"]]}
    np.save(out / f"{key}.input.npy", cap["blob"].astype(np.float32))
    for i, o in enumerate(cap["raw"]):
        np.save(out / f"{key}.output{i}.npy", np.asarray(o, dtype=np.float32))
    if task == "classify":
        probs = np.asarray(res.probs.data, dtype=np.float32)
        np.save(out / f"{key}.result.npy", probs)
        rec["top5"] = [int(c) for c in res.probs.top5]
        srt = np.sort(probs)[::-1]
        rec["top5_margin"] = float(min(srt[i] - srt[i + 1] for i in range(5)))
    elif task == "semantic":
        np.save(out / f"{key}.result.npy", np.asarray(res.semantic_mask.data, dtype=np.float32))
    elif task == "depth":
        np.save(out / f"{key}.result.npy", np.asarray(res.depth_map.data, dtype=np.float32))
    elif decoded_pose:
        boxes = np.asarray(res.boxes.xyxy, dtype=np.float32).reshape(-1, 4)
        n = boxes.shape[0]
        kp = np.asarray(res.keypoints.data, dtype=np.float32).reshape(n, -1)
        rows = np.concatenate([boxes, np.asarray(res.boxes.conf, dtype=np.float32).reshape(n, 1),
                               np.asarray(res.boxes.cls, dtype=np.float32).reshape(n, 1), kp], 1)
        np.save(out / f"{key}.result.npy", rows.astype(np.float32))
    if runs > 0:
        times["pre"].clear()
        times["fwd"].clear()
        e2e = []
        for _ in range(runs):
            t = time.perf_counter()
            backend(image, conf=conf, iou=0.45, max_det=300)
            e2e.append((time.perf_counter() - t) * 1e3)
        rec["timing"] = {"threads": torch.get_num_threads(), "runs": runs,
                         "preprocess_ms_median": statistics.median(times["pre"]),
                         "forward_ms_median": statistics.median(times["fwd"]),
                         "predict_ms_median": statistics.median(e2e)}
    return rec


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir", nargs="?", default="")
    p.add_argument("--tasks", default=",".join(TASKS))
    p.add_argument("--family", action="append", default=[],
                   help="TASK=FAMILY:SIZE:IMGSZ (or HxW) instead of the default for that task")
    p.add_argument("--list", action="store_true")
    p.add_argument("--image", default="")
    p.add_argument("--runs", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.basicConfig(level=logging.ERROR)
    if args.list:
        list_registry()
        return 0
    import torch

    import libreyolo

    torch.set_num_threads(args.threads)
    image = args.image or libreyolo.SAMPLE_IMAGE
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    tasks = dict(TASKS)
    for f in args.family:
        task, spec = f.split("=", 1)
        fam, size, imgsz = spec.split(":")
        # 256x192: an (H, W) canvas (HRNet's fixed person crop)
        tasks[task] = (fam, size, tuple(int(v) for v in imgsz.split("x")) if "x" in imgsz else int(imgsz))
    for task in [t for t in args.tasks.split(",") if t]:
        fam, size, imgsz = tasks[task]
        t = time.perf_counter()
        try:
            rec = one_task(task, fam, size, imgsz, out, image, args.runs)
        except Exception as e:  # the family's own failure, recorded for the test to name
            rec = {"task": task, "family": fam, "size": size, "error": f"{type(e).__name__}: {e}"[:600]}
        (out / f"{task}.reference.json").write_text(json.dumps(rec, indent=1))
        print(f"{task:9s} {fam}-{size} @{imgsz} {time.perf_counter() - t:5.1f}s "
              f"{rec.get('error') or rec['output_shapes']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
