#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The engine's copy threads (ODL_OPEN_TX_THREAD, ODL_OPEN_RX_THREAD) in
# several settings, side by side: odl perf bandwidth one way and both ways
# at once over the loopback backend in frames (ODL_LOOPBACK_RNDV=0) and over
# the sim backend (odl-linkd --sim, TB5: gen4 x2, pipeline timing), and odl
# perf latency over loopback, in alternating rounds. Prints every run, then
# per case the median of each setting and the median of the per-round
# ratios of each setting to the first. Not a ctest test (timings);
# docs/benchmarks.md "The copy threads".
#
# Usage: copy_thread_compare.sh [ROUNDS (3)]
# Environment: ODL_BUILD_DIR (default build/); MODES, the settings in order
# (default "off send both"): off (no thread), send (the send thread only),
# receive (the receive thread only), both.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${ODL_BUILD_DIR:-$repo/build}
rounds=${1:-3}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "rounds must be a positive number, not '$rounds'" >&2; exit 2; }
odl=$build/bin/odl
linkd=$build/model/src/linkd/odl-linkd
for f in "$odl" "$linkd"; do [ -x "$f" ] || { echo "$f is missing: build first" >&2; exit 2; }; done
modes=${MODES:-off send both}
threads() {  # setting -> the environment that asks for it
	case $1 in
	off) echo ODL_TX_THREAD=off ODL_RX_THREAD=off ;;
	send) echo ODL_TX_THREAD=on ODL_RX_THREAD=off ;;
	receive) echo ODL_TX_THREAD=off ODL_RX_THREAD=on ;;
	both) echo ODL_TX_THREAD=on ODL_RX_THREAD=on ;;
	*) return 1 ;;
	esac
}
for m in $modes; do threads "$m" >/dev/null || { echo "MODES: '$m' is not off, send, receive or both" >&2; exit 2; }; done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-copythreads.XXXXXX")
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
	env $(threads "$1") timeout 120 "$odl" perf bandwidth -s 1M --bytes 4G --no-verify "${extra[@]}" --json --quiet \
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
	env $(threads "$1") ODL_SIM_END=b timeout 120 "$odl" perf bandwidth --backend sim --server --quiet 2>/dev/null &
	local srv=$!
	sleep 0.3
	env $(threads "$1") ODL_SIM_END=a timeout 120 "$odl" perf bandwidth --backend sim --client 0 -s 1M --bytes 1G \
		--no-verify "${extra[@]}" --json --quiet >"$tmp/o.json" 2>/dev/null
	wait "$srv" || true
	kill "$server"
	wait "$server" 2>/dev/null || true
	server=
	echo "sim-tb5-$3-Gb/s $1 $2 $(gbps "$tmp/o.json")" |
		tee -a "$results"
}
loop_lat() {
	env $(threads "$1") timeout 120 "$odl" perf latency -s 64,4K,64K,1M -n 3000 --json --quiet >"$tmp/o.json"
	python3 - "$1" "$2" "$tmp/o.json" <<'PY' | tee -a "$results"
import json, sys
for r in json.load(open(sys.argv[3]))["results"]:
    print("loopback-latency-p50-us-%d %s %s %s" % (r["size"], sys.argv[1], sys.argv[2], r["p50_us"]))
PY
}
for r in $(seq "$rounds"); do
	for mode in $modes; do
		loop_bw "$mode" "$r" oneway
		loop_bw "$mode" "$r" bidir
		sim_bw "$mode" "$r" oneway
		sim_bw "$mode" "$r" bidir
		loop_lat "$mode" "$r"
	done
done
python3 - "$results" $modes <<'PY'
import collections, statistics, sys
modes = sys.argv[2:]
v = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    case, mode, rnd, val = line.split()
    v[case][(mode, rnd)] = float(val)
first = modes[0]
print("\n%-34s" % "case" + "".join("%10s" % m for m in modes) + "".join("%14s" % ("%s/%s" % (m, first)) for m in modes[1:]))
for case, d in v.items():
    rounds = sorted({r for _, r in d})
    line = "%-34s" % case
    for m in modes:
        line += "%10.2f" % statistics.median([d[(m, r)] for r in rounds if (m, r) in d])
    for m in modes[1:]:
        ratios = [d[(m, r)] / d[(first, r)] for r in rounds if (m, r) in d and (first, r) in d and d[(first, r)]]
        line += "%14.2f" % statistics.median(ratios)
    print(line)
PY
