#!/usr/bin/python3
"""Data-parallel CPU training: ours (`libreyolo profile run --nproc N`) against torch's own DDP.

Each rep, side by side on this machine, on the same model (LibreYOLO9, the fixture weights
shared/fixtures/models/libreyolo9t_seed1234.pt: the same 675 tensors, 2,036,544 parameters, 80
classes), the same imgsz, batch per rank, steps, warmup and threads per rank, both Gloo on
loopback with DDP's defaults (buckets of --bucket-cap-mb, broadcast_buffers, no gradient views):
  1. ours: a libreyolod with N CPU slots (started by this script on a Unix socket in
     --work-dir, unless --remote) runs `libreyolo profile run synthetic:M --nproc N --device cpu`:
     each rank trains --warmup steps, --steps measured steps without the profiler (their step
     times are the rank's metrics.jsonl), then the same warmup + steps under the profiler (the
     trace). Data: our built-in synthetic images (mosaic, HSV, flip, letterbox), --workers 0;
  2. the peer: N processes of the project environment's Python (torch 2.11, the Python
     LibreYOLO 1.6.0 for the model, its loss and its ModelEMA), torch.distributed with Gloo
     and torch.nn.parallel.DistributedDataParallel, the training step ours runs (forward with
     the loss, zero_grad, backward, SGD lr 0.01 momentum 0.937 nesterov with weight decay 5e-4
     on conv weights only, EMA 0.9999), torch.set_num_threads(--threads); --warmup steps, --steps
     timed steps (time.perf_counter, no profiler), then warmup + steps under torch.profiler
     (CPU, shapes, memory, FLOPs on, as our ranks record), one Chrome trace per rank. Data: images
     drawn as our synthetic ones are (flat colour + noise, 1-8 filled rectangles, 80 classes,
     320-800 px), letterboxed to imgsz, generated in the step (no DataLoader, no workers).
Step ms: per rank the median of the unprofiled measured steps, then the mean over ranks (also
without the data loading: ours subtract the rank's measured dataload mean, the peer each step's
own). All-reduce ms per step: `libreyolo profile summary DIR/ --json` on each side's per-rank
traces (the same analyser on both): per rank `allreduce_ms`, the union of the Gloo all-reduce
spans (gloo:all_reduce, which c10d records around each bucket's all-reduce on Gloo's thread)
per profiled step, mean over ranks; also time in all collectives and the exposed part. Reps
alternate which side goes first, so noise hits both; tables quote medians over reps and ours /
torch. A contender that fails is reported with its exit code and stderr tail. Run by hand, not
in CI. See bench/README.md.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURE_WEIGHTS = os.path.normpath(os.path.join(ROOT, "..", "shared", "fixtures", "models",
                                                "libreyolo9t_seed1234.pt"))
NUM_CLASSES = 80  # our synthetic dataset's classes (server/engine/data/dataset_spec.cc)


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def tail(text, n=8):
    return "\n".join((text or "").strip().splitlines()[-n:])


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------------------------------------
# The peer's rank: runs under the project environment's Python (torch, libreyolo, cv2).
# ---------------------------------------------------------------------------------------------

def synthetic_sample(rng, size):
    """An image drawn as server/engine/data/synthetic.cc draws ours (its own RNG, not the same
    pixels), letterboxed to size x size: (CHW float32 RGB 0-1, [[cls, x1, y1, x2, y2] 0-1])."""
    import cv2
    import numpy as np
    width, height = int(rng.integers(40, 101)) * 8, int(rng.integers(40, 101)) * 8
    img = np.empty((height, width, 3), np.int16)
    img[:] = rng.integers(0, 256, 3)
    img += rng.integers(-8, 8, img.shape, dtype=np.int16)
    img = np.clip(img, 0, 255).astype(np.uint8)
    boxes = []
    for _ in range(int(rng.integers(1, 9))):
        w = int(rng.integers(width // 16, width // 2 + 1))
        h = int(rng.integers(height // 16, height // 2 + 1))
        x, y = int(rng.integers(0, width - w + 1)), int(rng.integers(0, height - h + 1))
        img[y:y + h, x:x + w] = rng.integers(0, 256, 3)
        boxes.append((int(rng.integers(0, NUM_CLASSES)), x, y, x + w, y + h))
    r = min(size / width, size / height)
    nw, nh = max(1, round(width * r)), max(1, round(height * r))
    canvas = np.full((size, size, 3), 114, np.uint8)
    left, top = (size - nw) // 2, (size - nh) // 2
    canvas[top:top + nh, left:left + nw] = cv2.resize(img, (nw, nh), interpolation=cv2.INTER_LINEAR)
    chw = np.ascontiguousarray(canvas[:, :, ::-1].transpose(2, 0, 1), dtype=np.float32) / 255.0
    labels = [(c, (x1 * r + left) / size, (y1 * r + top) / size, (x2 * r + left) / size,
               (y2 * r + top) / size) for c, x1, y1, x2, y2 in boxes]
    return chw, labels


def peer_batch(rng, batch, size):
    """A batch as the Python LibreYOLO's trainer feeds YOLO9: images [B, 3, S, S] and targets
    [B, L, 5] (class, x1, y1, x2, y2 normalized; class -1 pads), L the batch's most boxes as
    ours pads (server/engine/data/batch.cc; the Python trainer pads to max_labels 300)."""
    import numpy as np
    import torch
    samples = [synthetic_sample(rng, size) for _ in range(batch)]
    most = max(len(s[1]) for s in samples)
    targets = np.zeros((batch, most, 5), np.float32)
    targets[:, :, 0] = -1
    for i, (_, labels) in enumerate(samples):
        if labels:
            targets[i, :len(labels)] = labels
    return torch.from_numpy(np.stack([s[0] for s in samples])), torch.from_numpy(targets)


def peer_rank(a):
    """One rank of torch's DDP: writes <out>/results/rank<R>.json and <out>/prof/rank<R>.pt.trace.json."""
    import datetime
    import numpy as np
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.profiler import record_function

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    if not os.path.isfile(a.weights):  # never let the Python LibreYOLO try a download
        sys.exit(f"rank {rank}: no weights file {a.weights}")
    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=a.dist_timeout))
    torch.manual_seed(a.seed)
    from libreyolo import LibreYOLO
    from libreyolo.training.ema import ModelEMA
    net = LibreYOLO(model_path=a.weights, size=a.size, device="cpu").model
    net.train()
    loss_fn = net.head._get_loss_fn(torch.device("cpu"))  # the head's YOLO9 loss, made once
    # Ours normalizes the classification loss by the rank's own positives; the Python LibreYOLO
    # all-reduces that count (one more scalar all-reduce per step) unless told not to.
    loss_fn.distributed_normalize = bool(a.peer_global_cls_norm)
    # The optimizer ours runs (server/engine/train/optim.cc): BatchNorm weights and biases
    # without weight decay, the other weights (convolutions) with it.
    bn, decay, bias = [], [], []
    for m in net.modules():
        if getattr(m, "bias", None) is not None and isinstance(m.bias, nn.Parameter):
            bias.append(m.bias)
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            bn.append(m.weight)
        elif isinstance(getattr(m, "weight", None), nn.Parameter):
            decay.append(m.weight)
    opt = torch.optim.SGD([{"params": bn, "weight_decay": 0.0},
                           {"params": decay, "weight_decay": 5e-4},
                           {"params": bias, "weight_decay": 0.0}],
                          lr=0.01, momentum=0.937, nesterov=True)
    ddp = DDP(net, bucket_cap_mb=a.bucket_cap_mb, broadcast_buffers=True,
              gradient_as_bucket_view=False)
    ema = ModelEMA(ddp, decay=0.9999)
    rng = np.random.default_rng([a.seed, rank])
    losses = []

    def step():
        t0 = time.perf_counter()
        with record_function("## data_load ##"):  # the analyser's data-loading range
            imgs, targets = peer_batch(rng, a.batch, a.imgsz)
        t1 = time.perf_counter()
        out = ddp(imgs, targets=targets)
        loss = out["total_loss"]
        t2 = time.perf_counter()
        opt.zero_grad()
        loss.backward()
        t3 = time.perf_counter()
        opt.step()
        t4 = time.perf_counter()
        ema.update(ddp)
        t5 = time.perf_counter()
        losses.append(float(loss.detach()))
        ms = lambda x, y: (y - x) * 1e3
        return {"step_ms": ms(t0, t5), "dataload_ms": ms(t0, t1), "forward_ms": ms(t1, t2),
                "backward_ms": ms(t2, t3), "optimizer_ms": ms(t3, t4), "ema_ms": ms(t4, t5)}

    warm = [step() for _ in range(a.warmup)]
    measured = [step() for _ in range(a.steps)]
    from torch.profiler import ProfilerActivity, profile, schedule
    trace = os.path.join(a.peer_out, "prof", f"rank{rank}.pt.trace.json")
    with profile(activities=[ProfilerActivity.CPU],
                 schedule=schedule(wait=0, warmup=a.warmup, active=a.steps, repeat=1),
                 record_shapes=True, profile_memory=True, with_flops=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(trace)) as prof:
        for _ in range(a.warmup + a.steps):
            step()
            prof.step()
    logging = {}
    try:
        d = ddp._get_ddp_logging_data()
        logging = {k: d.get(k) for k in ("num_buckets_reduced", "bucket_sizes", "comm_hook",
                                         "bucket_cap_bytes") if k in d}
    except Exception:  # private API: informative only
        pass
    dist.barrier()
    dist.destroy_process_group()
    params = sum(p.numel() for p in net.parameters())
    res = {"rank": rank, "world_size": world, "warmup": warm, "measured": measured,
           "loss_first": losses[0], "loss_last": losses[a.warmup + a.steps - 1],
           "threads": torch.get_num_threads(), "torch": torch.__version__,
           "parameters": params, "tensors": len(list(net.parameters())),
           "gradient_bytes": 4 * params, "nc": net.nc, "ddp": logging,
           "global_cls_norm": bool(a.peer_global_cls_norm)}
    with open(os.path.join(a.peer_out, "results", f"rank{rank}.json"), "w") as f:
        json.dump(res, f)
    return 0


# ---------------------------------------------------------------------------------------------
# The benchmark.
# ---------------------------------------------------------------------------------------------

def find_binary(explicit, build_dir, rel):
    path = explicit or os.path.join(build_dir, rel)
    return path if os.path.isfile(path) and os.access(path, os.X_OK) else None


def summary(a, folder):
    """`libreyolo profile summary FOLDER/ --json`: (dict, None) or (None, error)."""
    try:
        p = subprocess.run([a.client, "profile", "summary", folder + "/", "--json"],
                           capture_output=True, text=True, timeout=a.timeout)
    except subprocess.TimeoutExpired:
        return None, f"summary: timeout after {a.timeout} s"
    if p.returncode != 0:
        return None, f"summary rc {p.returncode}: {tail(p.stderr or p.stdout, 4)}"
    try:
        return json.loads(p.stdout), None
    except ValueError as e:
        return None, f"summary: not JSON ({e})"


def cross_rank(v):
    """The figures we compare from a summary --json (means over ranks of the per-rank ones)."""
    ranks = v.get("ranks") or []
    return {"allreduce_ms": mean([r.get("allreduce_ms") for r in ranks]),
            "comm_ms": v.get("comm_ms"), "exposed_comm_ms": v.get("exposed_comm_ms"),
            "profiled_step_ms": v.get("step_ms_mean"), "allreduce_bytes": v.get("allreduce_bytes"),
            "collectives_per_step": mean([(r.get("collectives") or 0) / r["steps"]
                                          for r in ranks if r.get("steps")]),
            "comm_timed_on": sorted({r.get("comm_timed_on") for r in ranks} - {None}),
            "world_size": v.get("world_size"), "backend": v.get("backend"),
            "ranks_steps": [r.get("steps") for r in ranks], "verdict": v.get("verdict")}


def run_ours(a, rep):
    project = os.path.join(a.work_dir, "runs", f"ours{rep}")
    shutil.rmtree(project, ignore_errors=True)
    images = a.nproc * a.batch * (2 * (a.warmup + a.steps) + 2)
    cmd = [a.client, "profile", "run", f"synthetic:{images}", "--device", "cpu", "--nproc",
           str(a.nproc), "--imgsz", str(a.imgsz), "--batch", str(a.batch), "--steps",
           str(a.steps), "--warmup", str(a.warmup), "--workers", "0", "--threads",
           str(a.threads), "--size", a.size, "--weights", a.weights, "--bucket-cap-mb",
           str(a.bucket_cap_mb), "--dist-timeout", str(a.dist_timeout), "--remote", a.remote,
           "--project", project, "--json"]
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=a.env)
    except subprocess.TimeoutExpired as e:
        return {"error": f"timeout after {a.timeout} s", "stderr_tail": tail(e.stderr or "")
                if isinstance(e.stderr, str) else "", "cmd": cmd}
    wall = time.monotonic() - t0
    if p.returncode != 0:
        return {"error": f"rc {p.returncode}", "rc": p.returncode,
                "stderr_tail": tail(p.stderr or p.stdout), "cmd": cmd, "wall_s": round(wall, 1)}
    try:
        v = json.loads(p.stdout)
    except ValueError as e:
        return {"error": f"stdout not JSON ({e})", "stderr_tail": tail(p.stderr), "cmd": cmd}
    per_rank = []
    for r in range(a.nproc):
        d = os.path.join(project, "prof", f"rank{r}")
        try:
            prof = json.load(open(os.path.join(d, "profile.json")))
            steps = [json.loads(l) for l in open(os.path.join(d, "metrics.jsonl")) if l.strip()]
        except (OSError, ValueError) as e:
            return {"error": f"rank {r}: {e}", "cmd": cmd}
        cfg = prof.get("config") or {}
        phases = cfg.get("measured_phases_ms") or {}
        measured = [s["step_ms"] for s in steps if s.get("stage") == "measuring"]
        dp = cfg.get("data_parallel") or {}
        per_rank.append({"rank": r, "step_ms_median": median(measured), "steps": measured,
                         "step_ms_mean": prof.get("step_ms"), "phases_ms": phases,
                         "dataload_ms": phases.get("dataload"), "threads": cfg.get("threads"),
                         "loss_first": cfg.get("loss_first"), "loss_last": cfg.get("loss_last"),
                         "buckets": dp.get("buckets"), "gradient_bytes": dp.get("gradient_bytes"),
                         "parameters": dp.get("parameters"),
                         "replica_divergence": dp.get("replica_divergence")})
    return finish({"per_rank": per_rank, "summary": v, **cross_rank(v)}, wall, cmd)


def finish(res, wall, cmd):
    pr = res["per_rank"]
    res["step_ms"] = mean([r["step_ms_median"] for r in pr])
    res["dataload_ms"] = mean([r["dataload_ms"] for r in pr])
    res["step_nodata_ms"] = (mean([r["step_nodata_ms"] for r in pr]) if "step_nodata_ms" in pr[0]
                             else (res["step_ms"] - res["dataload_ms"]
                                   if res["step_ms"] is not None and res["dataload_ms"] is not None
                                   else None))
    res["loss_first"] = mean([r["loss_first"] for r in pr])
    res["wall_s"] = round(wall, 1)
    res["cmd"] = cmd
    return res


def run_peer(a, rep):
    out = os.path.join(a.work_dir, "runs", f"peer{rep}")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "prof"))
    os.makedirs(os.path.join(out, "results"))
    port = free_port()
    cmd = [a.py_python, os.path.abspath(__file__), "--peer-out", out, "--imgsz", str(a.imgsz),
           "--batch", str(a.batch), "--steps", str(a.steps), "--warmup", str(a.warmup),
           "--threads", str(a.threads), "--seed", str(a.seed), "--weights", a.weights, "--size",
           a.size, "--bucket-cap-mb", str(a.bucket_cap_mb), "--dist-timeout", str(a.dist_timeout)]
    if a.peer_global_cls_norm:
        cmd.append("--peer-global-cls-norm")
    procs, logs = [], []
    t0 = time.monotonic()
    for r in range(a.nproc):
        env = dict(a.py_env, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(a.nproc),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        log = open(os.path.join(out, f"rank{r}.log"), "w+")
        logs.append(log)
        procs.append(subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                      cwd=a.work_dir, start_new_session=True))
    rcs, first_fail = [None] * a.nproc, None
    while any(rc is None for rc in rcs):
        now = time.monotonic()
        for i, p in enumerate(procs):
            if rcs[i] is None:
                rcs[i] = p.poll()
                if rcs[i] not in (None, 0) and first_fail is None:
                    first_fail = now
        # A rank that failed leaves its peers waiting in a collective: stop them soon after;
        # and every rank past --timeout.
        if (first_fail is not None and now - first_fail > 10) or now - t0 > a.timeout:
            for i, p in enumerate(procs):
                if rcs[i] is None:
                    os.killpg(p.pid, signal.SIGKILL)
                    p.wait()
                    rcs[i] = "killed" if now - t0 <= a.timeout else f"timeout after {a.timeout} s"
        time.sleep(0.1)
    wall = time.monotonic() - t0
    texts = []
    for log in logs:
        log.seek(0)
        texts.append(log.read())
        log.close()
    if any(rc != 0 for rc in rcs):
        return {"error": "; ".join(f"rank {r}: rc {rc}" for r, rc in enumerate(rcs) if rc != 0),
                "rc": rcs, "stderr_tail": "\n".join(f"[rank {r}] {tail(t)}"
                                                    for r, t in enumerate(texts) if rcs[r] != 0),
                "cmd": cmd, "wall_s": round(wall, 1)}
    per_rank = []
    for r in range(a.nproc):
        try:
            res = json.load(open(os.path.join(out, "results", f"rank{r}.json")))
        except (OSError, ValueError) as e:
            return {"error": f"rank {r}: no results ({e})", "stderr_tail": tail(texts[r]),
                    "cmd": cmd}
        m = res["measured"]
        per_rank.append({"rank": r, "step_ms_median": median([s["step_ms"] for s in m]),
                         "steps": [s["step_ms"] for s in m],
                         "step_nodata_ms": median([s["step_ms"] - s["dataload_ms"] for s in m]),
                         "dataload_ms": median([s["dataload_ms"] for s in m]),
                         "phases_ms": {k[:-3]: median([s[k] for s in m]) for k in
                                       ("dataload_ms", "forward_ms", "backward_ms",
                                        "optimizer_ms", "ema_ms")},
                         **{k: res.get(k) for k in ("threads", "loss_first", "loss_last",
                                                    "parameters", "tensors", "gradient_bytes",
                                                    "nc", "ddp", "torch", "global_cls_norm")}})
    v, err = summary(a, os.path.join(out, "prof"))
    if err:
        return {"error": err, "per_rank": per_rank, "cmd": cmd}
    return finish({"per_rank": per_rank, "summary": v, **cross_rank(v)}, wall, cmd)


def start_daemon(a):
    """A libreyolod with --nproc CPU slots on a Unix socket in the work dir."""
    d = os.path.join(a.work_dir, "daemon")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    sock = os.path.join(d, "d.sock")
    cmd = [a.daemon, "--listen", f"unix:{sock}", "--state-dir", os.path.join(d, "state"),
           "--store-dir", os.path.join(d, "store"), "--threads", str(a.threads),
           "--allow-local-paths", "--worker-binary", a.worker]
    for r in range(a.nproc):
        cmd += ["--device", "cpu" if r == 0 else f"cpu:{r}"]
    log = open(os.path.join(d, "daemon.log"), "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=a.env,
                            start_new_session=True)
    for _ in range(300):
        if proc.poll() is not None:
            break
        q = subprocess.run([a.client, "jobs", "list", "--remote", f"unix:{sock}"],
                           capture_output=True, text=True)
        if q.returncode == 0:
            return proc, f"unix:{sock}", None
        time.sleep(0.2)
    proc.kill()
    proc.wait()
    return None, None, (f"libreyolod did not answer (rc {proc.returncode}): "
                        f"{tail(open(os.path.join(d, 'daemon.log')).read())}")


def fmt(v, spec="{:.1f}"):
    return "-" if v is None else spec.format(v)


def ratio(x, y):
    return x / y if x is not None and y else None


ROWS = [("step ms (median, unprofiled)", "step_ms"),
        ("step ms without data loading", "step_nodata_ms"),
        ("data loading ms", "dataload_ms"),
        ("all-reduce ms / step (trace)", "allreduce_ms"),
        ("collectives ms / step (trace)", "comm_ms"),
        ("exposed comm ms / step (trace)", "exposed_comm_ms"),
        ("profiled step ms (trace)", "profiled_step_ms"),
        ("collectives / step (trace)", "collectives_per_step"),
        ("all-reduce MiB / step", "allreduce_mb"),
        ("first loss (mean of ranks)", "loss_first")]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build-dir", default=os.path.join(ROOT, "build"))
    ap.add_argument("--client", help="libreyolo (default: BUILD/client/libreyolo)")
    ap.add_argument("--daemon", help="libreyolod (default: BUILD/server/daemon/libreyolod)")
    ap.add_argument("--worker", help="libreyolod-worker (default: BUILD/server/worker/...)")
    ap.add_argument("--remote", help="use this libreyolod (unix:/path, HOST:PORT) instead of "
                    "starting one; it needs --nproc CPU slots and must allow local paths")
    ap.add_argument("--no-snapshot", action="store_true",
                    help="run the binaries in place (default: copies in --work-dir, so a "
                         "rebuild cannot swap them mid-run)")
    ap.add_argument("--python-env", help="the project's Python environment (default: what "
                    "scripts/python-env.sh prints)")
    ap.add_argument("--weights", default=FIXTURE_WEIGHTS)
    ap.add_argument("--size", default="t")
    ap.add_argument("--nproc", type=int, default=2, help="ranks (default 2)")
    ap.add_argument("--imgsz", type=int, default=160)
    ap.add_argument("--batch", type=int, default=2, help="per rank")
    ap.add_argument("--steps", type=int, default=10, help="measured steps (and profiled ones)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1, help="per rank, both sides (default 1)")
    ap.add_argument("--seed", type=int, default=0, help="the peer's torch and data seed (ours: "
                    "its synthetic dataset's own seed; the fixture weights make both inits equal)")
    ap.add_argument("--bucket-cap-mb", type=float, default=25.0)
    ap.add_argument("--dist-timeout", type=int, default=120)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-ours", action="store_true")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--peer-global-cls-norm", action="store_true",
                    help="the peer's loss all-reduces its positives count as the Python "
                         "LibreYOLO's DDP training does (one more scalar all-reduce a step); "
                         "default off: the rank's own count, as ours")
    ap.add_argument("--omp-wait-policy", default="passive", choices=["passive", "inherit"],
                    help="OMP_WAIT_POLICY for both sides (default PASSIVE; bench/README.md)")
    ap.add_argument("--timeout", type=int, default=300, help="per run, seconds")
    ap.add_argument("--work-dir", default="/tmp/libreyolo-ddp-bench")
    ap.add_argument("--json", metavar="FILE", help="write everything (every run) as JSON")
    ap.add_argument("--peer-out", help=argparse.SUPPRESS)  # internal: run one peer rank
    a = ap.parse_args()
    if a.peer_out:
        return peer_rank(a)
    a.work_dir = os.path.abspath(a.work_dir)
    os.makedirs(a.work_dir, exist_ok=True)
    a.env = dict(os.environ)
    if a.omp_wait_policy == "passive":
        a.env["OMP_WAIT_POLICY"] = "PASSIVE"
    a.py_env = dict(a.env, OMP_NUM_THREADS=str(a.threads), MKL_NUM_THREADS=str(a.threads),
                    HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", WANDB_MODE="disabled",
                    MPLBACKEND="Agg", GLOO_SOCKET_IFNAME="lo", PYTHONPATH="")
    problems = {}
    daemon_proc = None
    # Binaries (ours).
    a.client = find_binary(a.client, a.build_dir, "client/libreyolo")
    a.daemon = find_binary(a.daemon, a.build_dir, "server/daemon/libreyolod")
    a.worker = find_binary(a.worker, a.build_dir, "server/worker/libreyolod-worker")
    if not a.client:
        problems["ours"] = problems["peer"] = "missing: client/libreyolo (it also reads the traces)"
    elif not a.remote and not (a.daemon and a.worker) and not a.no_ours:
        problems["ours"] = "missing: libreyolod or libreyolod-worker (or pass --remote)"
    if not a.no_snapshot and a.client:
        snap = os.path.join(a.work_dir, "bin")
        os.makedirs(snap, exist_ok=True)
        for attr in ("client", "daemon", "worker"):
            src = getattr(a, attr)
            if src:
                dst = os.path.join(snap, os.path.basename(src))
                shutil.copy2(src, dst)
                setattr(a, attr + "_source", src)
                setattr(a, attr, dst)
    # The peer's Python.
    if not a.no_peer and "peer" not in problems:
        try:
            venv = a.python_env or subprocess.run(
                ["bash", os.path.join(ROOT, "scripts", "python-env.sh")], capture_output=True,
                text=True, check=True).stdout.strip()
            a.py_python = os.path.join(venv, "bin", "python")
            probe = subprocess.run(
                [a.py_python, "-c", "import torch, cv2, libreyolo, importlib.metadata as m; "
                 "print(torch.__version__, m.version('libreyolo'))"],
                env=a.py_env, capture_output=True, text=True, timeout=120)
            if probe.returncode != 0:
                problems["peer"] = (f"{a.py_python}: cannot import torch, cv2, libreyolo (rc "
                                    f"{probe.returncode}): {tail(probe.stderr, 3)}")
            else:
                a.py_versions = probe.stdout.split()
        except (subprocess.SubprocessError, OSError) as e:
            problems["peer"] = f"no Python environment: {e}"
    sides = [s for s in ("ours", "peer") if not getattr(a, f"no_{s}")]
    print(f"# ddp_bench: {a.nproc} ranks, Gloo, CPU; imgsz {a.imgsz}, batch {a.batch} per rank, "
          f"warmup {a.warmup}, steps {a.steps} (+ the same under the profiler), threads "
          f"{a.threads} per rank, reps {a.reps}; weights {a.weights}; client "
          f"{getattr(a, 'client_source', a.client)}; torch/libreyolo (peer) "
          f"{' / '.join(getattr(a, 'py_versions', ['?']))}; OMP_WAIT_POLICY="
          f"{a.env.get('OMP_WAIT_POLICY', '(unset)')}; loadavg {os.getloadavg()[0]:.2f}",
          flush=True)
    if "ours" in sides and "ours" not in problems and not a.remote:
        daemon_proc, a.remote, err = start_daemon(a)
        if err:
            problems["ours"] = err
    runs = {s: [] for s in sides}
    t_start = time.monotonic()
    try:
        for rep in range(a.reps):
            order = sides if rep % 2 == 0 else sides[::-1]
            for side in order:
                if side in problems:
                    continue
                r = run_ours(a, rep) if side == "ours" else run_peer(a, rep)
                if r.get("allreduce_bytes") is not None:
                    r["allreduce_mb"] = r["allreduce_bytes"] / 2**20
                runs[side].append(r)
                label = "ours " if side == "ours" else "torch"
                if "error" in r:
                    print(f"  rep {rep + 1} {label}: FAILED {r['error']}\n"
                          + "\n".join("      " + l for l in (r.get("stderr_tail") or "").splitlines()),
                          flush=True)
                else:
                    print(f"  rep {rep + 1} {label}: step {fmt(r['step_ms'])} ms (without data "
                          f"{fmt(r['step_nodata_ms'])}), all-reduce {fmt(r['allreduce_ms'], '{:.2f}')}"
                          f" ms/step, collectives {fmt(r['comm_ms'], '{:.2f}')} ms/step  "
                          f"({r['wall_s']:.0f} s)", flush=True)
    finally:
        if daemon_proc is not None:
            daemon_proc.send_signal(signal.SIGTERM)
            try:
                daemon_proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                daemon_proc.kill()
                daemon_proc.wait()
    elapsed = time.monotonic() - t_start

    ok = {s: [r for r in runs[s] if "error" not in r] for s in sides}
    table = {}
    for _, key in ROWS:
        o = median([r.get(key) for r in ok.get("ours", [])])
        t = median([r.get(key) for r in ok.get("peer", [])])
        table[key] = {"ours": o, "torch": t, "ratio": ratio(o, t)}
    print(f"\n{a.nproc} ranks x {a.threads} thread(s), Gloo, CPU, imgsz {a.imgsz}, batch {a.batch}"
          f" per rank, {a.steps} steps; medians over {len(ok.get('ours', []))} (ours) and "
          f"{len(ok.get('peer', []))} (torch) reps; {elapsed:.0f} s\n")
    print(f"| {'':32s} | {'ours':>9s} | {'torch DDP':>9s} | {'ours/torch':>10s} |")
    print(f"|{'-' * 34}|{'-' * 11}|{'-' * 11}|{'-' * 12}|")
    for name, key in ROWS:
        spec = "{:.2f}" if key in ("allreduce_ms", "comm_ms", "exposed_comm_ms",
                                   "collectives_per_step", "allreduce_mb", "loss_first") else "{:.1f}"
        row = table[key]
        print(f"| {name:32s} | {fmt(row['ours'], spec):>9s} | {fmt(row['torch'], spec):>9s} | "
              f"{fmt(row['ratio'], '{:.2f}'):>10s} |")
    for s in sides:
        if s in problems:
            print(f"{'ours' if s == 'ours' else 'torch DDP'}: not run: {problems[s]}")
        for r in runs[s]:
            if "error" in r:
                print(f"{'ours' if s == 'ours' else 'torch DDP'}: a run failed: {r['error']}"
                      + (f"\n{r['stderr_tail']}" if r.get("stderr_tail") else ""))
    if a.json:
        settings = {k: v for k, v in vars(a).items() if k not in ("env", "py_env")}
        with open(a.json, "w") as f:
            json.dump({"settings": settings, "problems": problems, "table": table, "runs": runs,
                       "elapsed_s": round(elapsed, 1), "loadavg": os.getloadavg()}, f, indent=1)
        print(f"wrote {a.json}")
    return 0 if all(ok.get(s) for s in sides) else 1


if __name__ == "__main__":
    sys.exit(main())
