#!/usr/bin/env python3
"""Re-implement FAMILIES.md without libreyolo and compare with make_exports.py output.

    python check_spec.py OUT_DIR [--families yolo9,yolox,yolo7,dfine]

Uses only what the C++ side will have: cv2.imread (OpenCV decode), cv2.resize,
a port of Pillow's BILINEAR resampler (pil_bilinear_exact), torch.jit.load,
plain NMS / top-k. For
each family it checks the preprocessed tensor against <family>.input.npy, runs
the module, decodes, and compares with <family>.reference.json. Exit 1 on a
mismatch.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import cv2
import numpy as np
import torch
import torch.nn.functional as F

COCO91_CATEGORY_IDS = (
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15, 16, 17, 18, 19, 20, 21,
    22, 23, 24, 25, 27, 28, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44,
    46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65,
    67, 70, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 84, 85, 86, 87, 88, 89, 90,
)


# ---------------------------------------------------------------- preprocess
PRECISION_BITS = 22  # Pillow libImaging/Resample.c: 32 - 8 - 2


def _pil_coeffs(in_size: int, out_size: int):
    """Pillow precompute_coeffs() + normalize_coeffs_8bpc() for the BILINEAR filter."""
    scale = in_size / out_size
    filterscale = max(scale, 1.0)
    support = 1.0 * filterscale  # bilinear support 1.0, widened when downscaling
    ksize = int(math.ceil(support)) * 2 + 1
    bounds = np.zeros((out_size, 2), np.int64)
    kk = np.zeros((out_size, ksize), np.int64)
    for xx in range(out_size):
        center = (xx + 0.5) * scale
        xmin = max(int(center - support + 0.5), 0)
        xmax = min(int(center + support + 0.5), in_size) - xmin
        w = np.array([max(0.0, 1.0 - abs((x + xmin - center + 0.5) / filterscale)) for x in range(xmax)])
        if w.sum() != 0.0:
            w = w / w.sum()
        kk[xx, :xmax] = np.trunc(0.5 + w * (1 << PRECISION_BITS))  # weights >= 0 here
        bounds[xx] = (xmin, xmax)
    return bounds, kk


def _pil_pass(img: np.ndarray, bounds, kk, axis: int) -> np.ndarray:
    src = np.moveaxis(img, axis, 0).astype(np.int64)
    out = np.empty((len(bounds),) + src.shape[1:], np.int64)
    for i, (xmin, xmax) in enumerate(bounds):
        out[i] = (1 << (PRECISION_BITS - 1)) + np.tensordot(kk[i, :xmax], src[xmin : xmin + xmax], axes=(0, 0))
    out = np.where(out <= 0, 0, np.where(out >= (1 << PRECISION_BITS << 8), 255, out >> PRECISION_BITS))
    return np.moveaxis(out.astype(np.uint8), 0, axis)


def pil_bilinear_exact(rgb_u8: np.ndarray, w: int, h: int) -> np.ndarray:
    """Bit-exact Pillow Image.resize((w, h), BILINEAR) for uint8 RGB: horizontal
    pass first (only over the source rows the vertical pass reads), uint8
    intermediate, then vertical pass; 22-bit fixed-point weights."""
    in_h, in_w = rgb_u8.shape[:2]
    bv, kv = _pil_coeffs(in_h, h)
    tmp = rgb_u8
    if w != in_w:
        bh, kh = _pil_coeffs(in_w, w)
        y0, y1 = bv[0, 0], bv[-1, 0] + bv[-1, 1]
        tmp = _pil_pass(rgb_u8[y0:y1], bh, kh, 1)
        bv = bv.copy()
        bv[:, 0] -= y0
    return _pil_pass(tmp, bv, kv, 0) if h != in_h else tmp


def torch_antialias(rgb_u8: np.ndarray, w: int, h: int) -> np.ndarray:
    """libtorch interpolate(uint8, bilinear, antialias=True): close to PIL, not exact."""
    t = torch.from_numpy(rgb_u8).permute(2, 0, 1)[None].contiguous()
    t = F.interpolate(t, size=(h, w), mode="bilinear", align_corners=False, antialias=True)
    return t[0].permute(1, 2, 0).numpy()


pil_bilinear = pil_bilinear_exact


def letterbox_geom(oh, ow, ih, iw):
    r = min(ih / oh, iw / ow)
    return r, max(int(oh * r), 1), max(int(ow * r), 1)


def preprocess(family: str, bgr: np.ndarray, ih: int, iw: int):
    rgb = np.ascontiguousarray(bgr[:, :, ::-1])
    oh, ow = rgb.shape[:2]
    if family in ("yolo9", "yolox", "yolo7"):
        r, nh, nw = letterbox_geom(oh, ow, ih, iw)
        if family == "yolo9":
            resized = cv2.resize(rgb, (nw, nh), interpolation=cv2.INTER_LINEAR)
        else:
            resized = pil_bilinear(rgb, nw, nh)
        canvas = np.full((ih, iw, 3), 114, np.uint8)
        canvas[:nh, :nw] = resized  # top-left
        if family == "yolox":
            x = canvas[:, :, ::-1].astype(np.float32)  # BGR, 0..255
        else:
            x = canvas.astype(np.float32) / np.float32(255.0)
        return np.ascontiguousarray(x.transpose(2, 0, 1))[None], r
    if family in ("dfine", "deim", "lwdetr"):
        x = pil_bilinear(rgb, iw, ih).astype(np.float32) / np.float32(255.0)
        if family == "lwdetr":
            x = (x - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
        return np.ascontiguousarray(x.transpose(2, 0, 1))[None], 1.0
    if family == "rtdetr":
        x = cv2.resize(rgb, (iw, ih), interpolation=cv2.INTER_LINEAR).astype(np.float32) / np.float32(255.0)
        return np.ascontiguousarray(x.transpose(2, 0, 1))[None], 1.0
    raise KeyError(family)


# ---------------------------------------------------------------- postprocess
def nms(boxes, scores, thr):
    x1, y1, x2, y2 = boxes.T
    areas = (x2 - x1) * (y2 - y1)
    order = np.argsort(-scores, kind="stable")
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        w = np.maximum(0.0, np.minimum(x2[i], x2[rest]) - np.maximum(x1[i], x1[rest]))
        h = np.maximum(0.0, np.minimum(y2[i], y2[rest]) - np.maximum(y1[i], y1[rest]))
        inter = w * h
        iou = inter / (areas[i] + areas[rest] - inter)
        order = rest[iou <= thr]
    return np.asarray(keep, np.int64)


def finish_letterbox(boxes, scores, cls, r, ow, oh, iou, max_det, class_aware):
    boxes = boxes / np.float32(r)
    boxes[:, [0, 2]] = np.clip(boxes[:, [0, 2]], 0, ow)
    boxes[:, [1, 3]] = np.clip(boxes[:, [1, 3]], 0, oh)
    ok = (boxes[:, 2] > boxes[:, 0]) & (boxes[:, 3] > boxes[:, 1])
    boxes, scores, cls = boxes[ok], scores[ok], cls[ok]
    if class_aware:
        keep = np.concatenate([np.nonzero(cls == c)[0][nms(boxes[cls == c], scores[cls == c], iou)] for c in np.unique(cls)] or [np.zeros(0, np.int64)])
    else:
        keep = nms(boxes, scores, iou)
    keep = keep[np.argsort(-scores[keep], kind="stable")][:max_det]
    return boxes[keep], scores[keep], cls[keep]


def decode(family, outs, r, ow, oh, conf, iou, max_det, size):
    conf32 = np.float32(conf)
    if family in ("yolo9", "yolo7"):
        o = outs[0][0].T  # (N, 4+nc): xyxy canvas px + sigmoid class scores
        a, c = np.nonzero(o[:, 4:] > conf32)
        boxes, scores = o[a, :4].copy(), o[a, 4 + c]
        if scores.size > max(max_det, 30000):
            k = np.argsort(-scores, kind="stable")[: max(max_det, 30000)]
            boxes, scores, c = boxes[k], scores[k], c[k]
        return finish_letterbox(boxes, scores, c, r, ow, oh, iou, max_det, class_aware=family == "yolo9")
    if family == "yolox":
        o = outs[0][0]  # (N, 5+nc): cx cy w h (canvas px), obj, cls (sigmoided)
        cls_scores = o[:, 5:]
        c = np.argmax(cls_scores, 1)
        s = o[:, 4] * cls_scores.max(1)
        m = s > conf32
        cx, cy, w, h = o[m, 0], o[m, 1], o[m, 2], o[m, 3]
        boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)
        return finish_letterbox(boxes, s[m], c[m], r, ow, oh, iou, max_det, class_aware=True)
    # DETR-style
    logits, boxes = outs[0][0], outs[1][0]
    k_cap = max_det
    if family == "lwdetr":
        k_cap = min(max_det, 100 if size == "t" else 300)
        if logits.shape[-1] == 91:
            logits = logits[:, list(COCO91_CATEGORY_IDS)]
    prob = (1.0 / (1.0 + np.exp(-logits.astype(np.float64)))).astype(np.float32)
    nc = prob.shape[1]
    flat = prob.reshape(-1)
    k = min(k_cap, flat.size)
    idx = np.argsort(-flat, kind="stable")[:k]
    q, c = idx // nc, idx % nc
    cx, cy, w, h = boxes.T
    xyxy = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], 1)[q]
    xyxy[:, [0, 2]] *= ow
    xyxy[:, [1, 3]] *= oh  # no clipping for DETR families
    s = flat[idx]
    m = s > conf32
    return xyxy[m], s[m], c[m]


def main(argv=None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out_dir")
    p.add_argument("--families", default="yolo9,yolox,yolo7,dfine")
    p.add_argument("--torch-resize", action="store_true", help="use torch antialias instead of the exact PIL port")
    args = p.parse_args(argv)
    global pil_bilinear
    if args.torch_resize:
        pil_bilinear = torch_antialias
    torch.set_num_threads(1)
    out = Path(args.out_dir)
    bad = 0
    for fam in args.families.split(","):
        ref = json.loads((out / f"{fam}.reference.json").read_text())
        ih, iw = ref["imgsz"]
        bgr = cv2.imread(ref["image"], cv2.IMREAD_COLOR)
        oh, ow = bgr.shape[:2]
        x, r = preprocess(fam, bgr, ih, iw)
        msg = []
        ref_in = out / f"{fam}.input.npy"
        if ref_in.exists():
            d = np.abs(x - np.load(ref_in))
            msg.append(f"input max|d| {d.max():.3g} ({(d > 0).mean() * 100:.3f}% elems differ)")
        m = torch.jit.load(str(out / ref["torchscript"]), map_location="cpu")
        with torch.no_grad():
            o = m(torch.from_numpy(x))
        outs = [t.numpy() for t in (o if isinstance(o, (tuple, list)) else [o])]
        prm = ref["params"]
        boxes, scores, cls = decode(fam, outs, r, ow, oh, prm["conf"], prm["iou"], prm["max_det"], ref["size"])
        rd = ref["detections"]
        rb = np.array([d["box"] for d in rd], np.float32).reshape(-1, 4)
        rs = np.array([d["score"] for d in rd], np.float32)
        rc = np.array([d["cls"] for d in rd], np.int64)
        n = min(len(rs), len(scores))
        same_n = len(rs) == len(scores)
        cls_eq = same_n and bool((rc == cls).all())
        box_d = float(np.abs(rb[:n] - boxes[:n]).max()) if n else 0.0
        sc_d = float(np.abs(rs[:n] - scores[:n]).max()) if n else 0.0
        ok = same_n and cls_eq and box_d < 0.5 and sc_d < 1e-4
        bad += not ok
        msg.append(f"dets {len(scores)} vs ref {len(rs)}, classes equal {cls_eq}, max|box d| {box_d:.3g} px, max|score d| {sc_d:.3g}")
        print(f"{fam:7s} {'OK ' if ok else 'BAD'} " + "; ".join(msg))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
