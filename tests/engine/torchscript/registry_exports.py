#!/usr/bin/env python3
"""Export every detection family of the Python LibreYOLO's own registry to TorchScript, from random
init, and record what its TorchScript backend makes of it.

    python registry_exports.py OUT_DIR [--families a,b] [--list] [--imgsz 320] [--timeout 240]
                               [--isolate]

Run it with the LibreYOLO Python environment (`$(bash scripts/python-env.sh)/bin/python`).

The families come from ``libreyolo.models.inventory.collect_model_inventory()`` (the registry
the Python tool's CLI and docs use): every family whose tasks include "detect", that is
``available`` (its optional runtime installed) and whose export is not ``blocked``. ``--list``
prints them, one a line, and exits.

For each family, all in this one process (the imports, ~5 s a process, are paid once; a family
that raises or runs past --timeout, a SIGALRM, writes its error and the next one goes on), or with
--isolate each in a child process of its own (a family that crashes or hangs in native code costs
only itself; bench/export_bench.py's whole-registry sweep, whose latencies a shared process would
also skew):
  1. builds the smallest size from random init without a download (``Family._from_scratch``),
  2. makes the random net informative (make_exports.make_informative: constant weights re-drawn,
     BatchNorm statistics from the sample image), so detections have distinct scores,
  3. exports OUT_DIR/<family>.torchscript as ``libreyolo export --format torchscript`` does,
     at --imgsz, or the family's own size when that one fails,
  4. loads it with ``libreyolo.LibreYOLO(path)`` (the TorchScript backend) and runs predict on
     the sample image at a conf that leaves some detections (the first of 0.5, 0.3, ... 0.001
     giving >= 10; iou 0.45, max_det 300), and writes OUT_DIR/<family>.reference.json: metadata,
     output shapes, conf, detections, the backend's median predict / forward time (--runs).
A family that fails writes <family>.reference.json with "error" (the reason) and no detections.
A file already there is reused (delete it to redo the family). OUT_DIR/registry.txt lists the
registry's detection families (all of them, whatever --families picks).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
CONFS = (0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.001)


def registry_families() -> list[tuple[str, str, str, int]]:
    """(family, module.Class, smallest size, its default imgsz) for every exportable detector."""
    import warnings

    warnings.filterwarnings("ignore")
    from libreyolo.models.inventory import collect_model_inventory

    out = []
    for family, d in collect_model_inventory().items():
        if "detect" not in d["tasks"] or not d["available"] or d["export_override"] == "blocked":
            continue
        sizes = d["default_imgsz"] or d["sizes"]
        if not sizes:
            continue
        size = next(iter(sizes))
        imgsz = sizes[size]
        imgsz = max(imgsz) if isinstance(imgsz, list) else int(imgsz)
        out.append((family, d["class"], size, imgsz))
    return out


def export_metadata(ts: Path) -> dict:
    """The archive's extra file <folder>/extra/libreyolo_metadata.json, read from the zip (what
    torch.jit.load's _extra_files gives, without loading the graph a second time)."""
    import zipfile

    with zipfile.ZipFile(ts) as z:
        names = [n for n in z.namelist() if n.endswith("/extra/libreyolo_metadata.json")]
        return json.loads(z.read(names[0]) or b"{}") if names else {}


def _shapes(outs) -> list:
    return [list(o.shape) for o in outs]


def one_family(family: str, cls_path: str, size: str, native_imgsz: int, args,
               variant: dict | None = None) -> dict:
    """variant (a user's own export, --variants): {"name", "nb_classes", "imgsz": [h, w],
    "batch"}: the files are named after it, the export made only at its size."""
    import importlib
    import logging
    import warnings

    import numpy as np
    import torch

    warnings.filterwarnings("ignore")
    logging.basicConfig(level=logging.ERROR)
    torch.set_num_threads(args.threads)
    sys.path.insert(0, str(HERE))
    import libreyolo
    from make_exports import make_informative

    mod, cls_name = cls_path.rsplit(".", 1)
    cls = getattr(importlib.import_module(mod), cls_name)
    rec: dict = {"family": family, "class": cls_name, "size": size, "native_imgsz": native_imgsz}
    name, nb_classes, batch, sizes = family, 80, 1, (args.imgsz, native_imgsz)
    if variant:
        name, nb_classes, batch = variant["name"], variant["nb_classes"], variant["batch"]
        h, w = variant["imgsz"]
        sizes = (h if h == w else (h, w),)
        rec.update(variant=name, batch=batch)
    torch.manual_seed(0)
    model = cls._from_scratch(size=size, nb_classes=nb_classes, device="cpu", seed=0)
    ts = Path(args.out_dir) / f"{name}.torchscript"
    errors = []
    for imgsz in dict.fromkeys(sizes):
        try:
            try:
                rec["init"] = make_informative(model, family, imgsz, args.image, 0)
            except Exception as e:  # a preprocess the fake backend lacks: random init as it is
                rec["init"] = {"error": f"{type(e).__name__}: {e}"[:300]}
            model.export(format="torchscript", output_path=str(ts), imgsz=imgsz, half=False,
                         int8=False, dynamic=batch > 1, simplify=True, opset=None, batch=batch,
                         device="auto", verbose=False)
            rec["imgsz"] = imgsz
            break
        except Exception as e:
            errors.append(f"export at {imgsz}: {type(e).__name__}: {e}"[:400])
    if "imgsz" not in rec:
        raise RuntimeError("; ".join(errors))
    rec["metadata"] = export_metadata(ts)
    rec["metadata"].pop("names", None)
    backend = libreyolo.LibreYOLO(str(ts), device="cpu")
    captured = {}
    orig_run = backend._run_inference

    def recording_run(blob):
        outs = orig_run(blob)
        captured["input"] = list(np.asarray(blob).shape)
        captured["blob"] = np.array(blob, copy=True)
        captured["outs"] = _shapes(outs)
        captured["raw"] = [np.array(o, copy=True) for o in outs]
        return outs

    backend._run_inference = recording_run
    for conf in CONFS:
        res = backend(args.image, conf=conf, iou=0.45, max_det=300)
        if len(res.boxes.conf) >= 10:
            break
    backend._run_inference = orig_run
    rec["input_shape"], rec["output_shapes"] = captured["input"], captured["outs"]
    rec["image"] = str(Path(args.image).resolve())
    # The exact blob the backend fed the module and its raw outputs (the last predict's).
    np.save(Path(args.out_dir) / f"{name}.input.npy", captured["blob"].astype(np.float32))
    for i, o in enumerate(captured["raw"]):
        np.save(Path(args.out_dir) / f"{name}.output{i}.npy", np.asarray(o, dtype=np.float32))
    boxes = np.asarray(res.boxes.xyxy, dtype=np.float32).reshape(-1, 4)
    scores = np.asarray(res.boxes.conf, dtype=np.float32).reshape(-1)
    classes = np.asarray(res.boxes.cls).reshape(-1).astype(np.int64)
    rec["params"] = {"conf": conf, "iou": 0.45, "max_det": 300}
    rec["detections"] = [{"box": [float(v) for v in b], "score": float(s), "cls": int(c)}
                         for b, s, c in zip(boxes, scores, classes)]
    if args.runs > 0:
        pred, fwd = [], []
        for _ in range(args.runs):
            t = time.perf_counter()
            backend(args.image, conf=conf, iou=0.45, max_det=300)
            pred.append((time.perf_counter() - t) * 1e3)
        for _ in range(args.runs):
            t = time.perf_counter()
            backend._run_inference(captured["blob"])
            fwd.append((time.perf_counter() - t) * 1e3)
        rec["timing"] = {"threads": torch.get_num_threads(), "runs": args.runs,
                         "predict_ms_median": statistics.median(pred),
                         "forward_ms_median": statistics.median(fwd)}
    return rec


class FamilyTimeout(BaseException):
    """Not an Exception: the `except Exception` inside a family's own code does not swallow it."""


def in_process(fam: str, cls_path: str, size: str, imgsz: int, args,
               variant: dict | None = None) -> dict:
    """one_family's record, or its error: an exception, or --timeout s passing (SIGALRM, raised
    between Python steps: a hang inside one native call is --isolate's to cut)."""

    def expire(signum, frame):
        raise FamilyTimeout(f"timed out after {args.timeout:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, args.timeout)
    try:
        return one_family(fam, cls_path, size, imgsz, args, variant)
    except (Exception, FamilyTimeout) as e:
        return {"family": fam, "class": cls_path, "size": size,
                "error": f"{type(e).__name__}: {e}"[:600]}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--families", default="", help="comma list (default: the whole registry)")
    p.add_argument("--list", action="store_true", help="print the registry's detection families")
    p.add_argument("--imgsz", type=int, default=320)
    p.add_argument("--image", default="")
    p.add_argument("--runs", type=int, default=0)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--timeout", type=float, default=240, help="seconds per family")
    p.add_argument("--variants", default="",
                   help="a user's own exports, FAMILY:CLASSES:H[xW]:BATCH,... (files named "
                        "FAMILY_CLASSES_HxW_BATCH), besides --families")
    p.add_argument("--isolate", action="store_true",
                   help="each family in a child process of its own (default: all in this one)")
    p.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if not args.image:
        import libreyolo

        args.image = libreyolo.SAMPLE_IMAGE
    if args.child:
        fam, cls_path, size, imgsz = json.loads(args.child)
        rec = in_process(fam, cls_path, size, imgsz, args)
        (out / f"{fam}.reference.json").write_text(json.dumps(rec, indent=1))
        return 0
    fams = registry_families()
    # The whole registry's detection families, whichever are exported below.
    (out / "registry.txt").write_text("".join(f"{f[0]}\n" for f in fams))
    if args.list:
        for f in fams:
            print(f[0])
        return 0
    # A user's own exports (--variants): each after the registry's families, in this process.
    variants = []
    for v in filter(None, args.variants.split(",")):
        fam, nc, hw, batch = v.split(":")
        h, _, w = hw.partition("x")
        variants.append({"name": v.replace(":", "_"), "family": fam, "nb_classes": int(nc),
                         "imgsz": [int(h), int(w or h)], "batch": int(batch)})
    registry = {f[0]: f for f in fams}
    for v in variants:
        if v["family"] not in registry:
            sys.exit(f"--variants: {v['family']} is not a detection family of the registry")
    want = [f for f in args.families.split(",") if f]
    if want or variants:
        fams = [f for f in fams if f[0] in want]
    for v in variants:
        _, cls_path, size, imgsz = registry[v["family"]]
        ref = out / f"{v['name']}.reference.json"
        t = time.perf_counter()
        if not ref.exists():
            ref.write_text(json.dumps(in_process(v["family"], cls_path, size, imgsz, args, v),
                                      indent=1))
        rec = json.loads(ref.read_text())
        print(f"{v['name']:16s} {time.perf_counter() - t:6.1f}s "
              f"{rec.get('error') or rec['output_shapes']}", flush=True)
    for fam, cls_path, size, imgsz in fams:
        ref = out / f"{fam}.reference.json"
        t = time.perf_counter()
        if not ref.exists() and not args.isolate:
            ref.write_text(json.dumps(in_process(fam, cls_path, size, imgsz, args), indent=1))
        elif not ref.exists():
            cmd = [sys.executable, __file__, str(out), "--imgsz", str(args.imgsz), "--image",
                   args.image, "--runs", str(args.runs), "--threads", str(args.threads),
                   "--child", json.dumps([fam, cls_path, size, imgsz])]
            try:
                subprocess.run(cmd, timeout=args.timeout, check=False)
            except subprocess.TimeoutExpired:
                ref.write_text(json.dumps({"family": fam, "size": size,
                                           "error": f"timed out after {args.timeout:.0f} s"}))
        rec = json.loads(ref.read_text()) if ref.exists() else {"error": "no record written"}
        what = rec.get("error") or (f"{rec['size']} @{rec['imgsz']} outs {rec['output_shapes']} "
                                    f"conf {rec['params']['conf']} dets {len(rec['detections'])}")
        print(f"{fam:16s} {time.perf_counter() - t:6.1f}s {what}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
