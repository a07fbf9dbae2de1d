#!/usr/bin/python3
"""PyTorch-eager peer of the C++ engine's inference path, for bench/engine_bench.py.

LibreYOLO9 (YOLOv9 t/s/m/c) written out in Python with the module attribute names of the public
LibreYOLO (github.com/LibreYOLO/libreyolo, MIT: libreyolo/models/yolo9/nn.py), so a LibreYOLO
checkpoint's state dict loads with strict=True. Runs on Debian's python3-torch 1.13 and numpy
alone: no LibreYOLO package, no OpenCV, PIL or torchvision.

  --check    eval predictions on the model fixtures must match LibreYOLO's (exit 1 if not)
  (default)  time (a) forward only, predict() under inference_mode on a fixed [B,3,S,S] input,
             and (b) end to end like the C++ `profile infer` iteration: decode the image file
             (24-bit BMP, numpy; the C++ side decodes with OpenCV), letterbox (top-left, pad 114),
             BGR->RGB /255, forward, postprocess (conf multi-label, class-aware greedy NMS in
             torch, max_det). Prints one JSON object.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

FIXTURES = "/work/shared/fixtures/models"

# ---------------------------------------------------------------------------------------------
# The model. Attribute names reproduce the LibreYOLO9 state-dict keys (backbone.*, neck.*,
# head.cv2/cv3); BatchNorm eps 1e-3 as in LibreYOLO.
# ---------------------------------------------------------------------------------------------


class Conv(nn.Module):
    def __init__(self, c1, c2, k=1, s=1, p=None, g=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, (k - 1) // 2 if p is None else p, groups=g, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=0.001, momentum=0.03)
        self.act = nn.SiLU() if act else nn.Identity()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class RepConvN(nn.Module):
    """3x3 conv-bn + 1x1 conv-bn, summed, then SiLU (unfused, as LibreYOLO and the C++ run it)."""

    def __init__(self, c1, c2):
        super().__init__()
        self.act = nn.SiLU()
        self.conv1 = Conv(c1, c2, 3, 1, p=1, act=False)
        self.conv2 = Conv(c1, c2, 1, 1, p=0, act=False)

    def forward(self, x):
        return self.act(self.conv1(x) + self.conv2(x))


class RepNBottleneck(nn.Module):
    def __init__(self, c1, c2, shortcut=True):
        super().__init__()
        self.cv1 = RepConvN(c1, c2)
        self.cv2 = Conv(c2, c2, 3, 1)
        self.add = shortcut and c1 == c2

    def forward(self, x):
        y = self.cv2(self.cv1(x))
        return x + y if self.add else y


class RepNCSP(nn.Module):
    def __init__(self, c1, c2, n=1):
        super().__init__()
        c_ = c2 // 2
        self.cv1 = Conv(c1, c_, 1, 1)
        self.cv2 = Conv(c1, c_, 1, 1)
        self.cv3 = Conv(2 * c_, c2, 1)
        self.m = nn.Sequential(*(RepNBottleneck(c_, c_) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class ELAN(nn.Module):
    def __init__(self, c1, c2, c3, c4, n=1):
        super().__init__()
        self.cv1 = Conv(c1, c2, 1, 1)
        self.cv2 = Conv(c2 // 2, c3, 3, 1)
        self.cv3 = Conv(c3, c3, 3, 1)
        self.cv4 = Conv(c2 + c3 * (1 + n), c4, 1, 1)
        self.m = nn.ModuleList(Conv(c3, c3, 3, 1) for _ in range(n - 1))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.append(self.cv2(y[-1]))
        y.append(self.cv3(y[-1]))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv4(torch.cat(y, 1))


class RepNCSPELAN(nn.Module):
    def __init__(self, c1, c2, c3, c4, n=1):
        super().__init__()
        self.cv1 = Conv(c1, c2, 1, 1)
        self.cv2 = nn.Sequential(RepNCSP(c2 // 2, c3, n), Conv(c3, c3, 3, 1))
        self.cv3 = nn.Sequential(RepNCSP(c3, c3, n), Conv(c3, c3, 3, 1))
        self.cv4 = Conv(c2 + 2 * c3, c4, 1, 1)

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.append(self.cv2(y[-1]))
        y.append(self.cv3(y[-1]))
        return self.cv4(torch.cat(y, 1))


class AConv(nn.Module):
    def __init__(self, c1, c2):
        super().__init__()
        self.cv = Conv(c1, c2, 3, 2, 1)

    def forward(self, x):
        return self.cv(F.avg_pool2d(x, 2, 1, 0, False, True))


class ADown(nn.Module):
    def __init__(self, c1, c2):
        super().__init__()
        self.cv1 = Conv(c1 // 2, c2 // 2, 3, 2, 1)
        self.cv2 = Conv(c1 // 2, c2 // 2, 1, 1, 0)

    def forward(self, x):
        x1, x2 = F.avg_pool2d(x, 2, 1, 0, False, True).chunk(2, 1)
        return torch.cat((self.cv1(x1), self.cv2(F.max_pool2d(x2, 3, 2, 1))), 1)


class SPPELAN(nn.Module):
    def __init__(self, c1, c2, c3, k=5):
        super().__init__()
        self.cv1 = Conv(c1, c2, 1, 1)
        self.pools = nn.ModuleList(nn.MaxPool2d(k, 1, k // 2) for _ in range(3))
        self.cv5 = Conv(4 * c2, c3, 1, 1)

    def forward(self, x):
        y = [self.cv1(x)]
        for pool in self.pools:
            y.append(pool(y[-1]))
        return self.cv5(torch.cat(y, 1))


class DFL(nn.Module):
    def __init__(self, bins=16):
        super().__init__()
        self.bins = bins
        self.register_buffer("project", torch.arange(bins, dtype=torch.float32).view(1, 1, bins, 1),
                             persistent=False)

    def forward(self, x):
        b, _, a = x.shape
        return F.softmax(x.view(b, 4, self.bins, a), dim=2).mul(self.project).sum(2)


class DDetect(nn.Module):
    def __init__(self, nc, ch, reg_max=16, strides=(8, 16, 32)):
        super().__init__()
        self.nc, self.reg_max, self.strides = nc, reg_max, strides
        groups, box_out = 4, 4 * reg_max
        box_hidden = max(-(-(ch[0] // 4) // groups) * groups, box_out, reg_max)
        cls_hidden = max(ch[0], min(nc, 100))
        self.cv2 = nn.ModuleList(
            nn.Sequential(Conv(c, box_hidden, 3), Conv(box_hidden, box_hidden, 3, g=groups),
                          nn.Conv2d(box_hidden, box_out, 1, groups=groups)) for c in ch)
        self.cv3 = nn.ModuleList(
            nn.Sequential(Conv(c, cls_hidden, 3), Conv(cls_hidden, cls_hidden, 3),
                          nn.Conv2d(cls_hidden, nc, 1)) for c in ch)
        self.dfl = DFL(reg_max)
        self._grid_key, self._grid = None, None

    def grid(self, feats):
        key = tuple(tuple(f.shape[2:]) for f in feats)
        if key != self._grid_key:
            pts, st = [], []
            for f, s in zip(feats, self.strides):
                h, w = f.shape[2:]
                sy, sx = torch.meshgrid(torch.arange(h, dtype=f.dtype) + 0.5,
                                        torch.arange(w, dtype=f.dtype) + 0.5, indexing="ij")
                pts.append(torch.stack([sx, sy], -1).reshape(-1, 2))
                st.append(torch.full((h * w, 1), float(s), dtype=f.dtype))
            self._grid_key = key
            self._grid = (torch.cat(pts).transpose(0, 1), torch.cat(st).transpose(0, 1))
        return self._grid

    def forward(self, feats):
        preds = [torch.cat((self.cv2[i](f), self.cv3[i](f)), 1) for i, f in enumerate(feats)]
        anchors, strides = self.grid(preds)
        box, score = zip(*(p.flatten(2).split((4 * self.reg_max, self.nc), 1) for p in preds))
        lt, rb = self.dfl(torch.cat(box, 2)).chunk(2, 1)
        a = anchors.unsqueeze(0)
        boxes = torch.cat((a - lt, a + rb), 1) * strides
        return torch.cat((boxes, torch.cat(score, 2).sigmoid()), 1)


# (conv0, conv1, first block kind, first out, first part, down kind, stages (down, out, part),
#  spp, n, neck up1 (out, part), up2, down1 out, elan_down1, down2 out, elan_down2, head chans)
CONFIGS = {
    "t": dict(c0=16, c1=32, first="elan", fo=32, fp=32, down="aconv",
              stages=[(64, 64, 64), (96, 96, 96), (128, 128, 128)], spp=128, n=3,
              up1=(96, 96), up2=(64, 64), d1=48, ed1=(96, 96), d2=64, ed2=(128, 128)),
    "s": dict(c0=32, c1=64, first="elan", fo=64, fp=64, down="aconv",
              stages=[(128, 128, 128), (192, 192, 192), (256, 256, 256)], spp=256, n=3,
              up1=(192, 192), up2=(128, 128), d1=96, ed1=(192, 192), d2=128, ed2=(256, 256)),
    "m": dict(c0=32, c1=64, first="rep", fo=128, fp=128, down="aconv",
              stages=[(240, 240, 240), (360, 360, 360), (480, 480, 480)], spp=480, n=1,
              up1=(360, 360), up2=(240, 240), d1=184, ed1=(360, 360), d2=240, ed2=(480, 480)),
    "c": dict(c0=64, c1=128, first="rep", fo=256, fp=128, down="adown",
              stages=[(256, 512, 256), (512, 512, 512), (512, 512, 512)], spp=512, n=1,
              up1=(512, 512), up2=(256, 256), d1=256, ed1=(512, 512), d2=512, ed2=(512, 512)),
}


class Backbone9(nn.Module):
    def __init__(self, c):
        super().__init__()
        Down = ADown if c["down"] == "adown" else AConv
        n, st = c["n"], c["stages"]
        self.conv0 = Conv(3, c["c0"], 3, 2)
        self.conv1 = Conv(c["c0"], c["c1"], 3, 2)
        if c["first"] == "elan":
            self.elan1 = ELAN(c["c1"], c["fp"], c["fp"] // 2, c["fo"], n=1)
        else:
            self.elan1 = RepNCSPELAN(c["c1"], c["fp"], c["fp"] // 2, c["fo"], n)
        prev = c["fo"]
        for i, (d, o, p) in enumerate(st, start=2):
            setattr(self, f"down{i}", Down(prev, d))
            setattr(self, f"elan{i}", RepNCSPELAN(d, p, p // 2, o, n))
            prev = o
        self.spp = SPPELAN(prev, c["spp"] // 2, c["spp"])

    def forward(self, x):
        x = self.elan1(self.conv1(self.conv0(x)))
        p3 = self.elan2(self.down2(x))
        p4 = self.elan3(self.down3(p3))
        return p3, p4, self.spp(self.elan4(self.down4(p4)))


class Neck9(nn.Module):
    def __init__(self, c):
        super().__init__()
        Down = ADown if c["down"] == "adown" else AConv
        n, b3, b4, spp = c["n"], c["stages"][0][1], c["stages"][1][1], c["spp"]
        self.up1 = nn.Upsample(scale_factor=2, mode="nearest")
        self.elan_up1 = RepNCSPELAN(spp + b4, c["up1"][1], c["up1"][1] // 2, c["up1"][0], n)
        self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
        self.elan_up2 = RepNCSPELAN(c["up1"][0] + b3, c["up2"][1], c["up2"][1] // 2, c["up2"][0], n)
        self.down1 = Down(c["up2"][0], c["d1"])
        self.elan_down1 = RepNCSPELAN(c["d1"] + c["up1"][0], c["ed1"][1], c["ed1"][1] // 2,
                                      c["ed1"][0], n)
        self.down2 = Down(c["ed1"][0], c["d2"])
        self.elan_down2 = RepNCSPELAN(c["d2"] + spp, c["ed2"][1], c["ed2"][1] // 2, c["ed2"][0], n)

    def forward(self, p3, p4, p5):
        n4 = self.elan_up1(torch.cat([self.up1(p5), p4], 1))
        o3 = self.elan_up2(torch.cat([self.up2(n4), p3], 1))
        o4 = self.elan_down1(torch.cat([self.down1(o3), n4], 1))
        o5 = self.elan_down2(torch.cat([self.down2(o4), p5], 1))
        return o3, o4, o5


class LibreYOLO9(nn.Module):
    def __init__(self, size="t", nc=80):
        super().__init__()
        c = CONFIGS[size]
        self.backbone = Backbone9(c)
        self.neck = Neck9(c)
        self.head = DDetect(nc, (c["up2"][0], c["ed1"][0], c["ed2"][0]))

    def predict(self, x):
        """LibreYOLO's eval `predictions`: [B, 4 + nc, A], xyxy input pixels + sigmoid scores."""
        return self.head(list(self.neck(*self.backbone(x))))

    forward = predict


def load_model(size, weights):
    """Returns (model, label). weights: a LibreYOLO checkpoint, or None/absent for seeded init."""
    nc = 80
    ck = None
    if weights and os.path.exists(weights):
        ck = torch.load(weights, map_location="cpu")
        sd = ck.get("model", ck) if isinstance(ck, dict) else ck
        nc = int(ck.get("nc", nc)) if isinstance(ck, dict) else nc
        size = ck.get("size", size) if isinstance(ck, dict) and "model" in ck else size
    torch.manual_seed(0)
    model = LibreYOLO9(size, nc)
    if ck is not None:
        model.load_state_dict(sd, strict=True)
    return model.eval(), (os.path.basename(weights) if ck is not None else "random-init")


# ---------------------------------------------------------------------------------------------
# Image path: decode, letterbox, postprocess (mirrors server/engine/{data,infer}/).
# ---------------------------------------------------------------------------------------------


def write_bmp(path, bgr):
    """24-bit bottom-up BMP of an HxWx3 uint8 BGR array."""
    h, w, _ = bgr.shape
    row = (w * 3 + 3) & ~3
    pix = np.zeros((h, row), np.uint8)
    pix[:, : w * 3] = bgr[::-1].reshape(h, w * 3)
    header = b"BM" + np.array([54 + pix.size, 0, 54], "<u4").tobytes()
    info = np.array([40, w, h], "<i4").tobytes() + np.array([1, 24], "<u2").tobytes() + \
        np.array([0, pix.size, 2835, 2835, 0, 0], "<u4").tobytes()
    with open(path, "wb") as f:
        f.write(header + info + pix.tobytes())


def read_bmp(path):
    """HxWx3 uint8 BGR view of an uncompressed 24-bit BMP (what write_bmp writes)."""
    data = np.fromfile(path, np.uint8)
    if data[:2].tobytes() != b"BM":
        raise ValueError(f"{path}: not a BMP (the peer decodes 24-bit BMP only)")
    off = int(data[10:14].view("<u4")[0])
    w, h = (int(v) for v in data[18:26].view("<i4"))
    bpp, comp = int(data[28:30].view("<u2")[0]), int(data[30:34].view("<u4")[0])
    if bpp != 24 or comp != 0:
        raise ValueError(f"{path}: {bpp}-bit compression {comp}; need 24-bit uncompressed")
    row = (w * 3 + 3) & ~3
    pix = data[off: off + row * abs(h)].reshape(abs(h), row)[:, : w * 3].reshape(abs(h), w, 3)
    return pix[::-1] if h > 0 else pix


def sample_image(width=810, height=1080, seed=7):
    """A portrait BGR scene like the engine's built-in sample: sky, ground, coloured shapes."""
    rng = np.random.default_rng(seed)
    img = np.empty((height, width, 3), np.uint8)
    img[: height // 2] = (235, 206, 135)
    img[height // 2:] = (60, 110, 70)
    for _ in range(6):
        x0, y0 = rng.integers(0, width - 200), rng.integers(0, height - 300)
        img[y0: y0 + rng.integers(80, 300), x0: x0 + rng.integers(60, 200)] = rng.integers(0, 256, 3)
    noise = rng.integers(-6, 7, img.shape)
    return np.clip(img.astype(np.int16) + noise, 0, 255).astype(np.uint8)


def letterbox_tensor(bgr_images, size):
    """[B,3,S,S] float RGB in [0,1]: top-left letterbox (scale = min(S/h, S/w), bilinear), pad 114."""
    out = torch.full((len(bgr_images), 3, size, size), 114.0)
    for i, img in enumerate(bgr_images):
        h, w = img.shape[:2]
        scale = min(size / h, size / w)
        nw, nh = min(max(int(w * scale), 1), size), min(max(int(h * scale), 1), size)
        t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1).flip(0).float()
        if (nh, nw) != (h, w):
            t = F.interpolate(t.unsqueeze(0), size=(nh, nw), mode="bilinear",
                              align_corners=False)[0]
        out[i, :, :nh, :nw] = t
    return out.div_(255.0)


CLASS_OFFSET = 7680.0


def nms(boxes, scores, iou):
    """Greedy NMS (IoU > iou suppresses); kept indices by descending score."""
    if boxes.shape[0] == 0:
        return torch.empty(0, dtype=torch.long)
    order = scores.argsort(descending=True)
    b = boxes[order]
    x1, y1, x2, y2 = b.unbind(1)
    area = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    alive = torch.ones(b.shape[0], dtype=torch.bool)
    keep = []
    idx = 0
    n = b.shape[0]
    while idx < n:
        keep.append(idx)
        rest = slice(idx + 1, n)
        w = (torch.minimum(x2[idx], x2[rest]) - torch.maximum(x1[idx], x1[rest])).clamp(min=0)
        h = (torch.minimum(y2[idx], y2[rest]) - torch.maximum(y1[idx], y1[rest])).clamp(min=0)
        inter = w * h
        alive[rest] &= ~(inter / (area[idx] + area[rest] - inter) > iou)
        nxt = alive[rest].nonzero()
        if nxt.numel() == 0:
            break
        idx = idx + 1 + int(nxt[0])
    return order[torch.tensor(keep, dtype=torch.long)]


def postprocess(pred, conf=0.25, iou=0.45, max_det=300, max_candidates=30000):
    out = []
    cap = max(max_det, max_candidates)
    for p in pred:
        p = p.transpose(0, 1)
        boxes, cls_scores = p[:, :4], p[:, 4:]
        anchor, cls = (cls_scores > conf).nonzero(as_tuple=True)
        score = cls_scores[anchor, cls]
        if score.shape[0] > cap:
            top = score.topk(cap).indices
            anchor, cls, score = anchor[top], cls[top], score[top]
        cand = boxes[anchor]
        keep = nms(cand + cls.unsqueeze(1).float() * CLASS_OFFSET, score, iou)[:max_det]
        out.append((cand[keep], score[keep], cls[keep]))
    return out


# ---------------------------------------------------------------------------------------------


def check(weights):
    model, _ = load_model("t", weights)
    x = torch.from_numpy(np.load(os.path.join(FIXTURES, "input_2x3x320x320.npy")))
    want = np.load(os.path.join(FIXTURES, "libreyolo9t_eval_predictions.npy"))
    with torch.inference_mode():
        got = model.predict(x).numpy()
    if got.shape != want.shape:
        print(f"check: FAIL shape {got.shape} != {want.shape}")
        return 1
    box_err = float(np.abs(got[:, :4] - want[:, :4]).max())
    s_got, s_want = got[:, 4:], want[:, 4:]
    score_rel = float((np.abs(s_got - s_want) / np.maximum(np.abs(s_want), 1e-6)).max())
    ok = box_err < 1e-2 and score_rel < 1e-3
    print(json.dumps({"check": "PASS" if ok else "FAIL", "box_max_abs_px": box_err,
                      "score_max_rel": score_rel, "params": sum(p.numel() for p in model.parameters())}))
    return 0 if ok else 1


def summarize(ms):
    return {"p50": round(statistics.median(ms), 3), "mean": round(statistics.fmean(ms), 3),
            "min": round(min(ms), 3)}


def bench(a):
    torch.set_num_threads(a.threads)
    model, label = load_model(a.size, a.weights)
    tmp = None
    image = a.image
    if not image:
        fd, tmp = tempfile.mkstemp(suffix=".bmp")
        os.close(fd)
        write_bmp(tmp, sample_image())
        image = tmp
    try:
        result = {"model": label, "size": a.size, "imgsz": a.imgsz, "batch": a.batch,
                  "threads": torch.get_num_threads(), "image": a.image or "generated sample",
                  "torch": torch.__version__}
        fwd, e2e = [], []
        dets = 0
        with torch.inference_mode():
            if a.mode in ("both", "forward"):
                x = torch.rand(a.batch, 3, a.imgsz, a.imgsz, generator=torch.Generator().manual_seed(0))
                for i in range(a.warmup + a.runs):
                    t0 = time.perf_counter()
                    model.predict(x)
                    if i >= a.warmup:
                        fwd.append((time.perf_counter() - t0) * 1e3)
                result["forward"] = summarize(fwd)
            if a.mode in ("both", "e2e"):
                stages = {"preprocess": [], "forward": [], "postprocess": []}
                for i in range(a.warmup + a.runs):
                    t0 = time.perf_counter()
                    x = letterbox_tensor([read_bmp(image) for _ in range(a.batch)], a.imgsz)
                    t1 = time.perf_counter()
                    pred = model.predict(x)
                    t2 = time.perf_counter()
                    dets = sum(int(d[1].shape[0]) for d in postprocess(pred, a.conf, a.iou, a.max_det))
                    t3 = time.perf_counter()
                    if i >= a.warmup:
                        e2e.append((t3 - t0) * 1e3)
                        for k, dt in zip(stages, (t1 - t0, t2 - t1, t3 - t2)):
                            stages[k].append(dt * 1e3)
                result["e2e"] = summarize(e2e)
                result["e2e_stages_mean_ms"] = {k: round(statistics.fmean(v), 3) for k, v in stages.items()}
                result["detections"] = dets
        result["n"] = a.runs
        print(json.dumps(result))
        return 0
    finally:
        if tmp:
            os.unlink(tmp)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="validate against the fixtures and exit")
    ap.add_argument("--weights", default=os.path.join(FIXTURES, "libreyolo9t_seed1234.pt"),
                    help="LibreYOLO checkpoint ('' or a missing path: seeded random init)")
    ap.add_argument("--size", default="t", choices=sorted(CONFIGS), help="size when random init")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--image", default="", help="24-bit BMP (default: a generated 810x1080 sample)")
    ap.add_argument("--mode", default="both", choices=["both", "forward", "e2e"])
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.45)
    ap.add_argument("--max-det", type=int, default=300)
    ap.add_argument("--write-sample", metavar="BMP", help="write the generated sample image and exit")
    a = ap.parse_args()
    if a.write_sample:
        write_bmp(a.write_sample, sample_image())
        return 0
    if a.check:
        return check(a.weights)
    return bench(a)


if __name__ == "__main__":
    sys.exit(main())
