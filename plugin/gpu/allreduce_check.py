#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# One torch.distributed rank of the GPU check: all_reduce and all_gather from
# 8 B to 256 MiB, every result checked exactly, time per call measured.
# Started by run_gpu_check.sh through torchrun (rank 0 writes the JSON), or
# by `odl hil run` on each host of a pair for a scenario's collective
# (--sizes, --iters, --result-line; --probe first says whether it can run).
import argparse
import datetime
import glob
import json
import os
import sys
import time

torch = None  # imported in main(): --probe must explain a host without it
dist = None

SIZES = [8 << i for i in range(26)]  # 8 B ... 256 MiB


TRAFFIC = 1 << 30  # bytes per size (--traffic)


ITERS = 0  # --iters: this many calls per size instead


def iters_for(size):
    # About TRAFFIC bytes per size, at least 5 and at most 200 calls.
    if ITERS:
        return ITERS
    return max(5, min(200, TRAFFIC // size))


PER_CALL = False  # --iters: every call timed on its own (median), not a batch


def timed(fn, iters):
    """Seconds per call: the batch's mean, or with PER_CALL the median call."""
    torch.cuda.synchronize()
    if PER_CALL:
        calls = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            calls.append(time.perf_counter() - t0)
        calls.sort()
        return calls[(len(calls) - 1) // 2]
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


def find_plugin(arg):
    """The plugin NCCL is to load: --plugin PATH, or the package's (auto)."""
    if arg != "auto":
        return arg
    found = sorted(glob.glob("/usr/lib/*/odl/libnccl-net-odl.so"))
    return found[0] if found else ""


def probe(plugin):
    """Exit 0 and one line when this host can run a rank; 3 and why not."""
    global torch
    try:
        import torch as t
    except ImportError as e:
        print(f"no PyTorch for {sys.executable} ({e})")
        return 3
    torch = t
    if not torch.cuda.is_available():
        print(f"no CUDA GPU visible to PyTorch {torch.__version__}")
        return 3
    if not plugin or not os.path.isfile(plugin):
        print("no ODL NCCL plugin (install odl-nccl-plugin, or `odl hil deploy --plugin`)"
              if not plugin else f"no ODL NCCL plugin at {plugin}")
        return 3
    print(f"ok: {torch.cuda.device_count()} GPU(s), {torch.cuda.get_device_name(0)}, torch {torch.__version__}, "
          f"NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, plugin {plugin}")
    return 0


def main():
    global torch, dist, PER_CALL, ITERS
    ap = argparse.ArgumentParser()
    ap.add_argument("--transport", default="ODL", help="label of the rows (default ODL)")
    ap.add_argument("--out", help="rank 0 writes the JSON here")
    ap.add_argument("--min-size", type=int, default=0, help="skip sizes below this (quick sweeps)")
    ap.add_argument("--ops", default="all_reduce,all_gather")
    ap.add_argument("--max-size", type=int, default=SIZES[-1], help="skip sizes above this")
    ap.add_argument("--sizes", help="comma-separated sizes in bytes instead of the 8 B ... 256 MiB sweep")
    ap.add_argument("--traffic", type=int, default=TRAFFIC, help="bytes moved per size (default 1 GiB)")
    ap.add_argument("--iters", type=int, default=0,
                    help="calls per size, each timed on its own (the median is reported)")
    ap.add_argument("--one-gpu", action="store_true",
                    help="every rank on GPU 0, each its own NCCL host, so only the net plugin carries data")
    ap.add_argument("--plugin", help="load this NCCL net plugin and insist on it (NCCL_NET=ODL); "
                                     "'auto': the installed odl-nccl-plugin")
    ap.add_argument("--probe", action="store_true", help="say whether this host can run a rank, then exit")
    ap.add_argument("--result-line", action="store_true",
                    help="rank 0 prints each row as one line 'ODL-RESULT <json>'")
    ap.add_argument("--timeout", type=int, default=0,
                    help="seconds to wait for the other ranks (default: torch's)")
    args = ap.parse_args()
    plugin = find_plugin(args.plugin) if args.plugin else os.environ.get("NCCL_NET_PLUGIN", "")
    if args.probe:
        return probe(plugin)
    if args.plugin:
        if not plugin:
            print("allreduce_check: no ODL NCCL plugin installed (odl-nccl-plugin)", file=sys.stderr)
            return 3
        os.environ["NCCL_NET_PLUGIN"] = plugin
        os.environ["NCCL_NET"] = "ODL"  # an error, never a silent fallback to sockets
    if args.iters < 0:
        ap.error("--iters must be positive")
    ITERS = args.iters
    PER_CALL = args.iters > 0
    sizes = SIZES
    if args.sizes:
        try:
            sizes = [int(x) for x in args.sizes.split(",")]
        except ValueError:
            ap.error(f"--sizes: not a list of byte counts: {args.sizes}")
        if any(x < 8 for x in sizes):
            ap.error("--sizes: each size must be at least 8 bytes")
    import torch as t
    import torch.distributed as d
    torch, dist = t, d
    globals()["TRAFFIC"] = args.traffic
    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    if args.one_gpu:
        # NCCL reads its environment at the first communicator: two "hosts"
        # on one GPU, no P2P or SHM path between them.
        os.environ["NCCL_HOSTID"] = f"odlhost{rank}"
    dev = torch.device("cuda", 0 if args.one_gpu else int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(dev)
    kw = {"timeout": datetime.timedelta(seconds=args.timeout)} if args.timeout > 0 else {}
    dist.init_process_group("nccl", device_id=dev, **kw)
    nccl = ".".join(map(str, torch.cuda.nccl.version()))
    rows = []
    failures = 0
    for op, fn, factor in (("all_reduce", check_all_reduce, 2.0 * (world - 1) / world),
                           ("all_gather", check_all_gather, (world - 1) / world)):
        if op not in args.ops.split(","):
            continue
        for size in (s for s in sizes if args.min_size <= s <= args.max_size):
            t, iters, ok = fn(size, rank, world, dev)
            # The slowest rank's time, and every rank's verdict.
            agg = torch.tensor([t, 0.0 if ok else 1.0], device=dev, dtype=torch.float64)
            dist.all_reduce(agg, op=dist.ReduceOp.MAX)
            t, bad = float(agg[0]), agg[1].item() > 0
            failures += int(bad)
            algbw = size / t / 1e9
            row = {"op": op, "size": size, "iters": iters, "time_us": t * 1e6,
                   "algbw_GBps": algbw, "busbw_GBps": algbw * factor, "ok": not bad}
            rows.append(row)
            if rank == 0:
                print(f"{args.transport} {op:10s} {size:>10d} B  {t * 1e6:10.1f} us  "
                      f"busbw {algbw * factor:8.3f} GB/s  {'ok' if not bad else 'WRONG'}", flush=True)
                if args.result_line:
                    line = dict(row, world=world, nccl=nccl, gpu=torch.cuda.get_device_name(dev),
                                torch=torch.__version__, timing="median call" if PER_CALL else "batch mean")
                    print("ODL-RESULT " + json.dumps(line), flush=True)
    if rank == 0 and args.out:
        with open(args.out, "w") as f:
            json.dump({"transport": args.transport, "world": world, "torch": torch.__version__,
                       "nccl": nccl, "gpu": torch.cuda.get_device_name(dev), "failures": failures,
                       "rows": rows}, f, indent=1)
    dist.destroy_process_group()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
