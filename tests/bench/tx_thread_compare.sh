#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The engine's send thread (ODL_OPEN_TX_THREAD) off and on, side by side:
# odl perf bandwidth one way and both ways at once over the loopback backend
# in frames (ODL_LOOPBACK_RNDV=0) and over the sim backend (odl-linkd --sim,
# TB5: gen4 x2, pipeline timing), and odl perf latency over loopback, in
# alternating rounds. Prints every run, then per case the medians of off and
# on and the median of the per-round ratios on/off. Not a ctest test
# (timings); docs/benchmarks.md "The send thread".
#
# Usage: tx_thread_compare.sh [ROUNDS (3)]
# Environment: ODL_BUILD_DIR (default build/)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${ODL_BUILD_DIR:-$repo/build}
rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive number, not '$rounds'" >&2; exit 2; }
odl=$build/bin/odl
linkd=$build/model/src/linkd/odl-linkd
for f in "$odl" "$linkd"; do [ -x "$f" ] || { echo "$f is missing: build first" >&2; exit 2; }; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-txthread.XXXXXX")
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
export ODL_SIM_SOCKET=$tmp/sim.sock SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1 ODL_LOOPBACK_RNDV=0
echo "$(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"

# One result line per run: case mode round value.
results=$tmp/results
gbps() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["gbps"])' "$1"; }
loop_bw() {  # mode round oneway|bidir
	local extra=()
	[ "$3" = bidir ] && extra=(--bidir)
	ODL_TX_THREAD=$1 timeout 120 "$odl" perf bandwidth -s 1M --bytes 4G --no-verify "${extra[@]}" --json --quiet \
		>"$tmp/o.json"
	echo "loopback-$3-Gb/s $1 $2 $(gbps "$tmp/o.json")" |
		tee -a "$results"
}
sim_bw() {
	local extra=()
	[ "$3" = bidir ] && extra=(--bidir)
	rm -f "$ODL_SIM_SOCKET"
	"$linkd" --sim --socket "$ODL_SIM_SOCKET" --gen gen4 --lanes 2 --sim-timing pipeline >"$tmp/linkd.log" 2>&1 &
	server=$!
	for _ in $(seq 100); do [ -S "$ODL_SIM_SOCKET" ] && break; sleep 0.1; done
	ODL_TX_THREAD=$1 ODL_SIM_END=b timeout 120 "$odl" perf bandwidth --backend sim --server --quiet 2>/dev/null &
	local srv=$!
	sleep 0.3
	ODL_TX_THREAD=$1 ODL_SIM_END=a timeout 120 "$odl" perf bandwidth --backend sim --client 0 -s 1M --bytes 1G \
		--no-verify "${extra[@]}" --json --quiet >"$tmp/o.json" 2>/dev/null
	wait "$srv" || true
	kill "$server"
	wait "$server" 2>/dev/null || true
	server=
	echo "sim-tb5-$3-Gb/s $1 $2 $(gbps "$tmp/o.json")" |
		tee -a "$results"
}
loop_lat() {
	ODL_TX_THREAD=$1 timeout 120 "$odl" perf latency -s 64,4K,64K,1M -n 3000 --json --quiet >"$tmp/o.json"
	python3 - "$1" "$2" "$tmp/o.json" <<'PY' | tee -a "$results"
import json, sys
for r in json.load(open(sys.argv[3]))["results"]:
    print("loopback-latency-p50-us-%d %s %s %s" % (r["size"], sys.argv[1], sys.argv[2], r["p50_us"]))
PY
}
for r in $(seq "$rounds"); do
	for mode in off on; do
		loop_bw "$mode" "$r" oneway
		loop_bw "$mode" "$r" bidir
		sim_bw "$mode" "$r" oneway
		sim_bw "$mode" "$r" bidir
		loop_lat "$mode" "$r"
	done
done
python3 - "$results" <<'PY'
import collections, statistics, sys
v = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    case, mode, rnd, val = line.split()
    v[case][(mode, rnd)] = float(val)
print("\n%-34s %10s %10s %16s" % ("case", "off", "on", "on/off (rounds)"))
for case, d in v.items():
    rounds = sorted({r for _, r in d})
    off = [d[("off", r)] for r in rounds if ("off", r) in d]
    on = [d[("on", r)] for r in rounds if ("on", r) in d]
    ratios = [d[("on", r)] / d[("off", r)] for r in rounds if ("on", r) in d and ("off", r) in d and d[("off", r)]]
    print("%-34s %10.2f %10.2f %16.2f" % (case, statistics.median(off), statistics.median(on), statistics.median(ratios)))
PY
