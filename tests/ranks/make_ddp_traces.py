#!/usr/bin/env python3
"""Per-rank Chrome traces of a real PyTorch DistributedDataParallel run, for the cross-rank tests.

Usage: make_ddp_traces.py OUT_DIR [--slow-rank K --delay-ms D] [--steps N] [--world 2]
       make_ddp_traces.py OUT_DIR --pair D   (OUT_DIR/balanced and OUT_DIR/slow: rank 1 +D ms;
                                              ctest: D = LIBREYOLO_TEST_DDP_DELAY_MS)

Runs torch's Python DDP with Gloo on the CPU (one process per rank, torch.multiprocessing spawn,
rendezvous on 127.0.0.1 and a free port), a small conv model, under torch.profiler with a
schedule (wait 1, warmup 1, active N): the trace of rank r is OUT_DIR/rank<r>.pt.trace.json,
with the `distributedInfo` torch writes and `ProfilerStep#N` steps. With --slow-rank K, rank K
sleeps D ms inside its data loading each step (in the DataLoader's __next__, so the trace shows
it under `enumerate(DataLoader)#...`): the other ranks then wait for it inside the gradient
all-reduce. One thread per rank keeps it cheap on a small shared machine. OUT_DIR/run.txt (JSON)
records what the run was (world, steps, slow rank, delay, the model's parameter count and the
bytes DDP all-reduces per step: every float32 gradient once), for the checks to assert on.
"""

import argparse
import json
import os
import socket
import sys
import time


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def build_model():
    import torch.nn as nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def worker(rank, args, port):
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    from torch.nn.parallel import DistributedDataParallel as DDP
    from torch.utils.data import DataLoader, Dataset

    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.world)
    torch.manual_seed(0)

    delay_s = args.delay_ms / 1000.0 if rank == args.slow_rank else 0.0

    class Images(Dataset):
        def __len__(self):
            return 10_000

        def __getitem__(self, i):
            if delay_s > 0 and i % args.batch == 0:
                time.sleep(delay_s)  # once per batch: the rank's data loading is slow
            return torch.randn(3, 32, 32), torch.randint(0, 10, ()).item()

    ddp = DDP(build_model())
    opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    loader = DataLoader(Images(), batch_size=args.batch, num_workers=0)
    it = iter(loader)

    from torch.profiler import ProfilerActivity, profile, schedule
    total = 2 + args.steps
    sched = schedule(wait=1, warmup=1, active=args.steps, repeat=1)
    out = os.path.join(args.out_dir, f"rank{rank}.pt.trace.json")
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, record_shapes=True,
                 on_trace_ready=lambda p: p.export_chrome_trace(out)) as prof:
        for _ in range(total):
            x, y = next(it)
            opt.zero_grad()
            loss = loss_fn(ddp(x), y)
            loss.backward()
            opt.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


def make(args):
    os.makedirs(args.out_dir, exist_ok=True)
    for f in os.listdir(args.out_dir):
        if f.endswith(".json"):
            os.remove(os.path.join(args.out_dir, f))
    import torch.multiprocessing as mp
    mp.spawn(worker, args=(args, free_port()), nprocs=args.world, join=True)
    missing = [r for r in range(args.world)
               if not os.path.exists(os.path.join(args.out_dir, f"rank{r}.pt.trace.json"))]
    if missing:
        print(f"make_ddp_traces: no trace for ranks {missing}", file=sys.stderr)
        return 1
    params = sum(p.numel() for p in build_model().parameters())
    run = {"world": args.world, "steps": args.steps, "slow_rank": args.slow_rank,
           "delay_ms": args.delay_ms, "params": params, "allreduce_bytes_per_step": 4 * params}
    with open(os.path.join(args.out_dir, "run.txt"), "w") as f:  # not *.json: not a trace
        json.dump(run, f)
    print(f"make_ddp_traces: {args.world} traces in {args.out_dir}")
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out_dir")
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--slow-rank", type=int, default=-1)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--pair", type=float, default=None, metavar="D",
                    help="two runs: OUT_DIR/balanced and OUT_DIR/slow (rank 1 sleeps D ms)")
    args = ap.parse_args()
    if args.pair is None:
        return make(args)
    root = args.out_dir
    for name, slow, delay in (("balanced", -1, 0.0), ("slow", 1, args.pair)):
        args.out_dir, args.slow_rank, args.delay_ms = os.path.join(root, name), slow, delay
        if make(args) != 0:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
