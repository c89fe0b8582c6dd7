#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# One torch.distributed rank of the GPU check: all_reduce and all_gather from
# 8 B to 256 MiB, every result checked exactly, time per call measured.
# Started by run_gpu_check.sh through torchrun; rank 0 writes the JSON.
import argparse
import json
import os
import sys
import time

import torch
import torch.distributed as dist

SIZES = [8 << i for i in range(26)]  # 8 B ... 256 MiB


TRAFFIC = 1 << 30  # bytes per size (--traffic)


def iters_for(size):
    # About TRAFFIC bytes per size, at least 5 and at most 200 calls.
    return max(5, min(200, TRAFFIC // size))


def timed(fn, iters):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / iters


def check_all_reduce(size, rank, world, dev):
    n = size // 4
    idx = torch.arange(n, device=dev, dtype=torch.float32) % 7
    # Correctness: one SUM of rank-specific data, exact in float32.
    x = idx + (rank + 1)
    dist.all_reduce(x)
    ok = torch.equal(x, idx * world + world * (world + 1) / 2)
    # Timed: AVG is a fixed point after the first call, so the buffer after
    # many calls still has one exact expected value; a corrupted call would
    # stay visible in it.
    y = idx + (rank + 1)
    iters = iters_for(size)
    for _ in range(2):
        dist.all_reduce(y, op=dist.ReduceOp.AVG)
    t = timed(lambda: dist.all_reduce(y, op=dist.ReduceOp.AVG), iters)
    ok = ok and torch.equal(y, idx + (world + 1) / 2)
    return t, iters, bool(ok)


def check_all_gather(size, rank, world, dev):
    per = max(1, size // 4 // world)  # size = output bytes, as nccl-tests counts
    def pattern(r):
        return (torch.arange(per, device=dev, dtype=torch.float32) + 3 * r) % 251
    inp = pattern(rank)
    out = torch.zeros(per * world, device=dev, dtype=torch.float32)
    expected = torch.cat([pattern(r) for r in range(world)])
    dist.all_gather_into_tensor(out, inp)
    ok = torch.equal(out, expected)
    iters = iters_for(size)
    for _ in range(2):
        dist.all_gather_into_tensor(out, inp)
    t = timed(lambda: dist.all_gather_into_tensor(out, inp), iters)
    ok = ok and torch.equal(out, expected)
    return t, iters, bool(ok)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transport", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-size", type=int, default=0, help="skip sizes below this (quick sweeps)")
    ap.add_argument("--ops", default="all_reduce,all_gather")
    ap.add_argument("--max-size", type=int, default=SIZES[-1], help="skip sizes above this")
    ap.add_argument("--traffic", type=int, default=TRAFFIC, help="bytes moved per size (default 1 GiB)")
    ap.add_argument("--one-gpu", action="store_true",
                    help="every rank on GPU 0, each its own NCCL host, so only the net plugin carries data")
    args = ap.parse_args()
    globals()["TRAFFIC"] = args.traffic
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    if args.one_gpu:
        # NCCL reads its environment at the first communicator: two "hosts"
        # on one GPU, no P2P or SHM path between them.
        os.environ["NCCL_HOSTID"] = f"odlhost{rank}"
    dev = torch.device("cuda", 0 if args.one_gpu else int(os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(dev)
    dist.init_process_group("nccl", device_id=dev)
    rows = []
    failures = 0
    for op, fn, factor in (("all_reduce", check_all_reduce, 2.0 * (world - 1) / world),
                           ("all_gather", check_all_gather, (world - 1) / world)):
        if op not in args.ops.split(","):
            continue
        for size in (s for s in SIZES if args.min_size <= s <= args.max_size):
            t, iters, ok = fn(size, rank, world, dev)
            # The slowest rank's time, and every rank's verdict.
            agg = torch.tensor([t, 0.0 if ok else 1.0], device=dev, dtype=torch.float64)
            dist.all_reduce(agg, op=dist.ReduceOp.MAX)
            t, bad = float(agg[0]), agg[1].item() > 0
            failures += int(bad)
            algbw = size / t / 1e9
            rows.append({"op": op, "size": size, "iters": iters, "time_us": t * 1e6,
                         "algbw_GBps": algbw, "busbw_GBps": algbw * factor, "ok": not bad})
            if rank == 0:
                print(f"{args.transport} {op:10s} {size:>10d} B  {t * 1e6:10.1f} us  "
                      f"busbw {algbw * factor:8.3f} GB/s  {'ok' if not bad else 'WRONG'}", flush=True)
    if rank == 0:
        with open(args.out, "w") as f:
            json.dump({"transport": args.transport, "world": world, "torch": torch.__version__,
                       "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                       "gpu": torch.cuda.get_device_name(dev), "failures": failures, "rows": rows}, f, indent=1)
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
