#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Side-by-side table of two allreduce_check.py results (ODL vs Socket) in
# Markdown, plus the targets: busbw at >= 64 MiB >= 3x Socket and
# 8 B all_reduce latency no worse than Socket's. Exit 1 if a target fails.
import json
import sys


def human(n):
    for unit, div in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n // div} {unit}"
    return f"{n} B"


def main(odl_path, sock_path):
    odl = json.load(open(odl_path))
    sock = json.load(open(sock_path))
    key = lambda r: (r["op"], r["size"])
    s = {key(r): r for r in sock["rows"]}
    print(f"torch {odl['torch']}, NCCL {odl['nccl']}, {odl['world']} x {odl['gpu']}\n")
    print("| op | size | ODL time (us) | Socket time (us) | ODL busbw (GB/s) | Socket busbw (GB/s) | ODL/Socket busbw | checked |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    targets_ok = True
    for r in odl["rows"]:
        o = s[key(r)]
        ratio = r["busbw_GBps"] / o["busbw_GBps"] if o["busbw_GBps"] else float("inf")
        ok = "both ok" if r["ok"] and o["ok"] else "WRONG"
        print(f"| {r['op']} | {human(r['size'])} | {r['time_us']:.1f} | {o['time_us']:.1f} | "
              f"{r['busbw_GBps']:.3f} | {o['busbw_GBps']:.3f} | {ratio:.2f}x | {ok} |")
    print()
    for r in odl["rows"]:
        o = s[key(r)]
        if r["op"] == "all_reduce" and r["size"] >= 64 << 20:
            good = r["busbw_GBps"] >= 3 * o["busbw_GBps"]
            targets_ok &= good
            print(f"- target all_reduce {human(r['size'])}: busbw {r['busbw_GBps']:.2f} vs 3 x {o['busbw_GBps']:.2f} "
                  f"GB/s: {'met' if good else 'NOT met'}")
        if r["op"] == "all_reduce" and r["size"] == 8:
            good = r["time_us"] <= o["time_us"]
            targets_ok &= good
            print(f"- target all_reduce 8 B latency: {r['time_us']:.1f} us vs Socket {o['time_us']:.1f} us: "
                  f"{'met' if good else 'NOT met'}")
    failures = odl["failures"] + sock["failures"]
    print(f"- result checks: {failures} wrong")
    return 0 if targets_ok and failures == 0 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
