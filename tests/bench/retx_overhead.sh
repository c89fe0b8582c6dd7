#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What retransmission (protocol 1.2) costs on a healthy link: odl perf over
# the sim backend with it on and off (ODL_RETX=off), alternated, ROUNDS
# rounds; prints the median of each figure. Not a test: a benchmark whose
# figures go in docs/benchmarks.md.
#
# Usage: tests/bench/retx_overhead.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-5}
odl=$build/bin/odl
linkd=$build/model/src/linkd/odl-linkd
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-retx-bench.XXXXXX")
server=
cleanup() {
	[ -z "$server" ] || { kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; }
	rm -rf "$tmp"
}
trap cleanup EXIT
export ODL_SIM_SOCKET=$tmp/sim.sock SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
"$linkd" --sim --socket "$ODL_SIM_SOCKET" >"$tmp/linkd.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q 'serving the sim backend' "$tmp/linkd.log" && break; sleep 0.1; done
grep -q 'serving the sim backend' "$tmp/linkd.log" || { cat "$tmp/linkd.log"; exit 1; }
for r in $(seq "$rounds"); do
	for v in on off; do
		ODL_RETX=$v "$odl" perf latency --backend sim -s 64,4K -n 2000 --warmup 200 --json --quiet \
			>"$tmp/lat.$v.$r.json" 2>/dev/null
		ODL_RETX=$v "$odl" perf bandwidth --backend sim -s 1M --bytes 1G --json --quiet \
			>"$tmp/bw.$v.$r.json" 2>/dev/null
	done
done
python3 - "$tmp" "$rounds" <<'PY'
import json, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def med(kind, v, pick):
    return statistics.median(pick(json.load(open(f"{tmp}/{kind}.{v}.{r}.json"))) for r in range(1, rounds + 1))
rows = [("one-way p50, 64 B (us)", "lat", lambda d: d["results"][0]["p50_us"]),
        ("one-way p50, 4 KiB (us)", "lat", lambda d: d["results"][1]["p50_us"]),
        ("1 MiB stream (Gb/s)", "bw", lambda d: d["results"][0]["gbps"])]
print(f"| figure (median of {rounds}) | retransmission on | off (ODL_RETX=off) | on / off |")
print("|---|---:|---:|---:|")
for name, kind, pick in rows:
    on, off = med(kind, "on", pick), med(kind, "off", pick)
    print(f"| {name} | {on:.2f} | {off:.2f} | {on / off:.3f} |")
PY
