#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# NCCL over the sim backend against two predictions, from run_sim_check.sh's
# output folders (sim.json, loopback.json, model.json):
#   link: `odl model predict` (the modelled cable and hosts, no NCCL);
#   host-bound: the slower of that and the same job over the loopback backend
#   in the same call (NCCL, the plugin and libodl on this host with no link),
#   since the host's path and the link are stages one collective passes
#   through at once, so the slower one sets its time.
# Prints one table per folder and, over all of them, how many sizes each
# prediction has within +-10 % of the measured time (at 1 MiB and below, and
# above). Exit 2 on unreadable input.
#
# Usage: plugin/gpu/host_bound.py FOLDER [FOLDER...]
import json
import math
import os
import sys

KIND = {"allreduce": "all_reduce", "allgather": "all_gather"}
SMALL = 1 << 20  # the bands: <= 1 MiB, and above


def load(folder):
    """(op, size) -> (sim us, link-model us, loopback us), sizes all three have."""
    try:
        sim = json.load(open(os.path.join(folder, "sim.json")))
        lo = json.load(open(os.path.join(folder, "loopback.json")))
        model = json.load(open(os.path.join(folder, "model.json")))
        link = {(KIND[c["kind"]], c["size_bytes"]): c["time_us"] for c in model["collectives"]}
        host = {(r["op"], r["size"]): r["time_us"] for r in lo["rows"]}
        rows = {}
        for r in sim["rows"]:
            k = (r["op"], r["size"])
            if k in link and k in host:
                rows[k] = (float(r["time_us"]), float(link[k]), float(host[k]))
                if min(rows[k]) <= 0:
                    raise ValueError(f"{k[0]} {k[1]} B: a time that is not positive {rows[k]}")
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"host_bound: {folder}: not a run_sim_check.sh folder: {e!r}", file=sys.stderr)
        sys.exit(2)
    if not rows:
        print(f"host_bound: {folder}: no size is in all of sim.json, loopback.json and model.json",
              file=sys.stderr)
        sys.exit(2)
    return rows


def predictions(link_us, host_us):
    return {"link": link_us, "host-bound": max(link_us, host_us)}


def main(folders):
    tally = {}  # (prediction, band) -> [within 10 %, count, |log error| list]
    for folder in folders:
        rows = load(folder)
        print(f"{folder}\n")
        print("| op | size | sim (us) | link model (us) | loopback (us) | host-bound (us) "
              "| link/sim | host-bound/sim |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|")
        for (op, size), (sim_us, link_us, host_us) in sorted(rows.items()):
            p = predictions(link_us, host_us)
            print(f"| {op} | {size} | {sim_us:.1f} | {link_us:.1f} | {host_us:.1f} | {p['host-bound']:.1f} "
                  f"| {p['link'] / sim_us:.2f} | {p['host-bound'] / sim_us:.2f} |")
            band = "<= 1 MiB" if size <= SMALL else "> 1 MiB"
            for name, t in p.items():
                e = tally.setdefault((name, band), [0, 0, []])
                ratio = t / sim_us
                e[0] += abs(ratio - 1) <= 0.10
                e[1] += 1
                e[2].append(abs(math.log(ratio)))
        print()
    print(f"over {len(folders)} run(s):\n")
    print("| prediction | sizes | within +-10 % | median off by |")
    print("|---|---|---:|---:|")
    for (name, band), (ok, n, errs) in sorted(tally.items()):
        med = sorted(errs)[len(errs) // 2]
        print(f"| {name} | {band} | {ok} of {n} ({100 * ok / n:.0f} %) | x{math.exp(med):.2f} |")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print("usage: host_bound.py FOLDER [FOLDER...] (run_sim_check.sh output folders)", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1:])
