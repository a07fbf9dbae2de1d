#!/usr/bin/env python3
"""Make random-init LibreYOLO TorchScript exports plus Python reference outputs.

    python make_exports.py OUT_DIR [--image IMG] [--families yolo9,yolox,yolo7,dfine]
                           [--imgsz 320] [--conf C] [--iou 0.45] [--max-det 300]
                           [--runs 0] [--seed 0] [--threads 1] [--no-npy]

Run it with the LibreYOLO Python environment, e.g.
    ~/.cache/libreyolo/py311-torch2.11.0-33e6eb8529/bin/python make_exports.py /tmp/ts

For every family it
  1. builds the model without any download (``Family._from_scratch``, the
     scratch-training constructor: random init, no pretrained backbone),
  2. makes the random net informative (see ``make_informative``): constant
     (zero/prior-filled) Conv/Linear weights and biases get seeded normal
     values, and BatchNorm running stats are set from one forward of the
     sample image. Without this every score of a random net is the same
     (YOLO9: sigmoid(-10) = 4.54e-5 everywhere), which makes ordering
     and NMS checks meaningless.
  3. exports OUT_DIR/<family>.torchscript through ``model.export(format=
     "torchscript", ...)`` with the same kwargs ``libreyolo export --format
     torchscript`` passes (cli/commands/export.py),
  4. loads it back with ``libreyolo.LibreYOLO(path)`` (-> TorchScriptBackend,
     what the Python tool does with a .torchscript file), runs predict on IMG
     and writes OUT_DIR/<family>.reference.json (and, unless --no-npy,
     <family>.input.npy / <family>.output<i>.npy: the exact blob fed to the
     module and its raw outputs).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

_T0 = time.perf_counter()

import numpy as np  # noqa: E402
import torch  # noqa: E402

# family -> (class name in libreyolo.models, size, default imgsz, default conf)
# Default confs are picked so the random nets give a few dozen to a few hundred
# detections (see FAMILIES.md); override with --conf.
FAMILIES = {
    # conf picked for seed 0 / imgsz 320 / parkour.jpg: ~60-130 final boxes,
    # below max_det, so both the conf cut and NMS / top-k matter.
    "yolo9": ("LibreYOLO9", "t", 320, 0.9),  # 113 dets
    "yolox": ("LibreYOLOX", "n", 320, 0.5),  # 62
    "yolo7": ("LibreYOLO7", "b", 320, 0.7),  # 76 (only size "b" exists; 151 MB file)
    "dfine": ("LibreDFINE", "n", 320, 0.83),  # 132 of the top-300
    "deim": ("LibreDEIM", "n", 320, 0.82),  # 95 of the top-300
    "rtdetr": ("LibreRTDETR", "r18", 320, 0.84),  # 75 of the top-300
    "lwdetr": ("LibreLWDETR", "t", 320, 0.035),  # 74 of the top-100
}
DEFAULT_FAMILIES = "yolo9,yolox,yolo7,dfine"
# Known not to work offline in this environment:
#   rfdetr: libreyolo/models/rfdetr/backbone.py imports transformers.AutoBackbone,
#           and transformers is not installed (ModuleNotFoundError).


def _stats(a: np.ndarray) -> dict:
    a64 = a.astype(np.float64)
    return {
        "shape": list(a.shape),
        "dtype": str(a.dtype),
        "mean": float(a64.mean()) if a.size else None,
        "min": float(a64.min()) if a.size else None,
        "max": float(a64.max()) if a.size else None,
        "sum": float(a64.sum()) if a.size else None,
    }


def _fake_backend(family: str, model) -> object:
    """A TorchScriptBackend shell (no __init__) to call the backend's own
    ``BaseBackend._preprocess`` before the export exists."""
    from libreyolo.backends.base import _validate_letterbox_pad
    from libreyolo.backends.torchscript import TorchScriptBackend

    fake = TorchScriptBackend.__new__(TorchScriptBackend)
    fake.model_family = family
    fake.family = family
    fake.task = "detect"
    fake.model_size = model.size
    fake.letterbox_pad = _validate_letterbox_pad(getattr(model, "letterbox_pad", None))
    return fake


def make_informative(model, family: str, imgsz: int, image: str, seed: int) -> dict:
    """Re-init constant Conv/Linear params, then set BatchNorm running stats
    from the sample image (cumulative average over image + its h-flip)."""
    net = model.model
    gen = torch.Generator().manual_seed(seed + 1)
    n_reinit = 0
    with torch.no_grad():
        for mod in net.modules():
            if not isinstance(mod, (torch.nn.Conv2d, torch.nn.Linear)):
                continue
            w = mod.weight
            if w.numel() > 1 and float(w.detach().std()) == 0.0:
                w.copy_(torch.randn(w.shape, generator=gen) / math.sqrt(w[0].numel()))
                n_reinit += 1
            b = mod.bias
            if b is not None and b.numel() > 1 and float(b.detach().std()) == 0.0:
                b.copy_(torch.randn(b.shape, generator=gen) * 0.1)
                n_reinit += 1

    x = _fake_backend(family, model)._preprocess(image, imgsz, "auto")[0]
    x = torch.as_tensor(x).float()
    net.eval()
    bns = []
    for mod in net.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm) and mod.track_running_stats:
            mod.reset_running_stats()
            mod.momentum = None  # cumulative average
            mod.train()
            bns.append(mod)
    # An uncalibrated random net produces denormals that make CPU convs ~30x
    # slower. Flush them for this pass only, on one thread (the flag is per
    # thread); export and predict run with the defaults.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    torch.set_flush_denormal(True)
    try:
        with torch.no_grad():
            net(torch.cat([x, x.flip(-1)], 0))
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(threads)
    net.eval()
    return {"reinit_constant_params": n_reinit, "bn_calibrated": len(bns)}


def run_family(name: str, args, out_dir: Path) -> dict:
    import libreyolo
    from libreyolo import models as M

    cls_name, size, default_imgsz, default_conf = FAMILIES[name]
    imgsz = args.imgsz or default_imgsz
    conf = args.conf if args.conf is not None else default_conf
    times = {}

    t = time.perf_counter()
    torch.manual_seed(args.seed)
    model = getattr(M, cls_name)._from_scratch(size=size, device="cpu", seed=args.seed)
    init_info = make_informative(model, name, imgsz, args.image, args.seed)
    times["build_s"] = time.perf_counter() - t

    # Same kwargs as `libreyolo export --format torchscript --imgsz N`
    # (cli/commands/export.py builds export_kwargs exactly like this).
    t = time.perf_counter()
    ts_path = out_dir / f"{name}.torchscript"
    model.export(
        format="torchscript",
        output_path=str(ts_path),
        imgsz=imgsz,
        half=False,
        int8=False,
        dynamic=False,
        simplify=True,
        opset=None,
        batch=1,
        device="auto",
        verbose=False,
    )
    times["export_s"] = time.perf_counter() - t
    if args.native:
        # The family's own checkpoint, as the Python tool saves one (its metadata names the family).
        model.save(str(out_dir / f"{name}.pt"))

    # Load the way the Python tool runs a .torchscript file.
    t = time.perf_counter()
    backend = libreyolo.LibreYOLO(str(ts_path), device="cpu")
    extra = {"libreyolo_metadata.json": ""}
    torch.jit.load(str(ts_path), map_location="cpu", _extra_files=extra)
    metadata = json.loads(extra["libreyolo_metadata.json"] or "{}")

    captured = {}
    orig_run = backend._run_inference

    def recording_run(blob):
        outs = orig_run(blob)
        captured["blob"] = np.array(blob, copy=True)
        captured["outs"] = [np.array(o, copy=True) for o in outs]
        return outs

    backend._run_inference = recording_run
    res = backend(args.image, conf=conf, iou=args.iou, max_det=args.max_det)
    backend._run_inference = orig_run
    times["load_and_first_predict_s"] = time.perf_counter() - t

    boxes = np.asarray(res.boxes.xyxy, dtype=np.float32).reshape(-1, 4)
    scores = np.asarray(res.boxes.conf, dtype=np.float32).reshape(-1)
    classes = np.asarray(res.boxes.cls).reshape(-1).astype(np.int64)
    order = np.argsort(-scores, kind="stable")
    boxes, scores, classes = boxes[order], scores[order], classes[order]

    timing = {}
    if args.runs > 0:
        pred_ms, fwd_ms = [], []
        blob = captured["blob"]
        for _ in range(args.runs):
            t = time.perf_counter()
            backend(args.image, conf=conf, iou=args.iou, max_det=args.max_det)
            pred_ms.append((time.perf_counter() - t) * 1e3)
        for _ in range(args.runs):
            t = time.perf_counter()
            backend._run_inference(blob)
            fwd_ms.append((time.perf_counter() - t) * 1e3)
        timing = {
            "runs": args.runs,
            "threads": torch.get_num_threads(),
            "predict_ms_median": statistics.median(pred_ms),
            "forward_ms_median": statistics.median(fwd_ms),
            "predict_ms_all": [round(v, 3) for v in pred_ms],
        }

    h, w = (metadata.get("imgsz_h", imgsz), metadata.get("imgsz_w", imgsz))
    orig_w, orig_h = res.orig_shape[1], res.orig_shape[0]
    ref = {
        "family": name,
        "size": size,
        "torchscript": ts_path.name,
        "metadata": metadata,
        "imgsz": [int(h), int(w)],
        "image": str(Path(args.image).resolve()),
        "orig_size_wh": [int(orig_w), int(orig_h)],
        "params": {"conf": conf, "iou": args.iou, "max_det": args.max_det},
        "init": {"seed": args.seed, "constructor": f"{cls_name}._from_scratch(size={size!r})", **init_info},
        "input": _stats(captured["blob"]),
        "input_channel_mean": [float(v) for v in captured["blob"][0].reshape(captured["blob"].shape[1], -1).astype(np.float64).mean(1)],
        "input_corner_pixels": {
            "top_left": captured["blob"][0, :, 0, 0].tolist(),
            "bottom_right": captured["blob"][0, :, -1, -1].tolist(),
        },
        "outputs": [_stats(o) for o in captured["outs"]],
        "num_detections": int(len(scores)),
        "distinct_scores": int(len(np.unique(scores))),
        "detections": [
            {"box": [float(v) for v in b], "score": float(s), "cls": int(c)}
            for b, s, c in zip(boxes, scores, classes)
        ],
        "timing": timing,
        "versions": {"libreyolo": libreyolo.__version__, "torch": torch.__version__},
        "step_seconds": {k: round(v, 3) for k, v in times.items()},
    }
    (out_dir / f"{name}.reference.json").write_text(json.dumps(ref, indent=1))
    if name in args.half_families:
        # As `libreyolo export --format torchscript --half`: an fp16 graph (after the fp32
        # reference, so nothing above sees a half model).
        model.export(format="torchscript", output_path=str(out_dir / f"{name}.fp16.torchscript"),
                     imgsz=imgsz, half=True, int8=False, dynamic=False, simplify=True, opset=None,
                     batch=1, device="auto", verbose=False)
    if not args.no_npy:
        np.save(out_dir / f"{name}.input.npy", captured["blob"])
        for i, o in enumerate(captured["outs"]):
            np.save(out_dir / f"{name}.output{i}.npy", o)
    return ref


def main(argv=None) -> int:
    import libreyolo

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--image", default=libreyolo.SAMPLE_IMAGE, help="default: libreyolo/assets/parkour.jpg (1280x852)")
    p.add_argument("--families", default=DEFAULT_FAMILIES, help=f"comma list from {','.join(FAMILIES)}, or 'all'")
    p.add_argument("--imgsz", type=int, default=None, help="square export size (default 320)")
    p.add_argument("--conf", type=float, default=None, help="default: per family, see FAMILIES table")
    p.add_argument("--iou", type=float, default=0.45)
    p.add_argument("--max-det", dest="max_det", type=int, default=300)
    p.add_argument("--runs", type=int, default=0, help="timed predict runs (median stored); 0 = skip")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--half-families", dest="half_families", type=lambda v: [f for f in v.split(",") if f], default=[],
                   help="also export these families with half=True as OUT_DIR/<family>.fp16.torchscript")
    p.add_argument("--native", action="store_true", help="also save OUT_DIR/<family>.pt with the model's own save()")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1: 2 threads on a busy 2-core box is much slower)")
    p.add_argument("--no-npy", action="store_true", help="do not write <family>.input.npy/.output<i>.npy")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = list(FAMILIES) if args.families == "all" else [f.strip() for f in args.families.split(",") if f.strip()]
    bad = [n for n in names if n not in FAMILIES]
    if bad:
        p.error(f"unknown families {bad}; known: {', '.join(FAMILIES)}")

    import logging
    import warnings

    warnings.filterwarnings("ignore")  # TracerWarnings from tracing DETR decoders
    # A root handler makes libreyolo's ensure_default_logging() stand down, so
    # its INFO export summaries are not printed.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    print(f"import: {time.perf_counter() - _T0:.1f}s  (libreyolo {libreyolo.__version__}, torch {torch.__version__}, threads {torch.get_num_threads()})")
    failed = []
    for name in names:
        t = time.perf_counter()
        try:
            ref = run_family(name, args, out_dir)
        except Exception as e:  # keep going; report at the end
            failed.append(name)
            print(f"{name:7s} FAILED: {type(e).__name__}: {e}", file=sys.stderr)
            continue
        tm = ref["timing"]
        extra = f" predict median {tm['predict_ms_median']:.1f} ms, forward {tm['forward_ms_median']:.1f} ms" if tm else ""
        outs = " ".join("x".join(map(str, o["shape"])) for o in ref["outputs"])
        print(
            f"{name:7s} {ref['size']:4s} imgsz {ref['imgsz']} conf {ref['params']['conf']}: "
            f"{ref['num_detections']} dets ({ref['distinct_scores']} distinct scores), "
            f"outputs {outs}, {time.perf_counter() - t:.1f}s "
            f"{ref['step_seconds']}{extra}"
        )
    print(f"total: {time.perf_counter() - _T0:.1f}s -> {out_dir}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
