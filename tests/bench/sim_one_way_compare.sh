#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two builds side by side on the sim backend, one way (TB5, gen4 x2,
# pipeline timing), alternated run by run: a 1 MiB-message stream on the
# shipped profile (the model says 41.54 Gb/s), the same stream on that
# profile without its NHI's DMA cap (PCIe rate and per-frame DMA cost set to
# zero: the model then allows more than two programs can send, so the run
# shows what the programs and the sim transport carry), and the latency of
# 64 B and 64 KiB messages. Not a ctest test (timings); docs/benchmarks.md
# "Frames published a few at a time".
#
# Usage: sim_one_way_compare.sh OLD_BUILD NEW_BUILD [ROUNDS (3)]
#   a build directory holds model/src/linkd/odl-linkd, bin/odl and lib/
#   (libodl.so.0: each build runs with its own, ahead of LD_LIBRARY_PATH)
# Environment: BYTES (stream size, default 16G)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
old=${1:?usage: $0 OLD_BUILD NEW_BUILD [ROUNDS]}
new=${2:?usage: $0 OLD_BUILD NEW_BUILD [ROUNDS]}
rounds=${3:-3}
bytes=${BYTES:-16G}
for b in "$old" "$new"; do
	[ -x "$b/model/src/linkd/odl-linkd" ] && [ -x "$b/bin/odl" ] ||
		{ echo "no odl-linkd and odl in $b" >&2; exit 2; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-sim-1way.XXXXXX")
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
export ODL_SIM_SOCKET=$tmp/sim.sock SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
base_ld=${LD_LIBRARY_PATH:-}

# The shipped calibration with intel-tb5-discrete's DMA cap taken out.
python3 - "$repo/model/calibration/default.yaml" "$tmp/nocap.yaml" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
i = s.index("\n  intel-tb5-discrete:")
nxt = re.compile(r"\n  \S[^\n]*:\n").search(s, i + 1)  # the next platform
j = nxt.start() if nxt else len(s)
blk = s[i:j]
new = re.sub(r"pcie_gbps: \{value: [0-9.]+", "pcie_gbps: {value: 0", blk)
new = re.sub(r"frame_overhead: \{value: [0-9.]+ns", "frame_overhead: {value: 0ns", new)
assert new != blk, "intel-tb5-discrete has no pcie_gbps / frame_overhead to clear"
open(sys.argv[2], "w").write(s[:i] + new + s[j:])
PY

# run BUILD LABEL LINKD_ARG... -- PERF_ARG...
run() {
	local b=$1 label=$2
	shift 2
	# Each build's own libodl (a build tree's, or a copied build's lib/).
	local LD_LIBRARY_PATH="$b/lib${base_ld:+:$base_ld}"
	export LD_LIBRARY_PATH
	local largs=()
	while [ "$1" != -- ]; do largs+=("$1"); shift; done
	shift
	rm -f "$ODL_SIM_SOCKET"
	"$b/model/src/linkd/odl-linkd" --sim --socket "$ODL_SIM_SOCKET" --gen gen4 --lanes 2 \
		--sim-timing pipeline "${largs[@]}" >"$tmp/linkd.log" 2>&1 &
	server=$!
	for _ in $(seq 100); do [ -S "$ODL_SIM_SOCKET" ] && break; sleep 0.05; done
	[ -S "$ODL_SIM_SOCKET" ] || { echo "odl-linkd did not start: $(tail -n 3 "$tmp/linkd.log")" >&2; exit 1; }
	ODL_SIM_END=b timeout 120 "$b/bin/odl" perf "$1" --backend sim --server --quiet >/dev/null 2>&1 &
	local srv=$!
	sleep 0.3
	ODL_SIM_END=a timeout 120 "$b/bin/odl" perf "$@" --backend sim --client 0 --json --quiet >"$tmp/out.json" ||
		{ echo "odl perf $* failed" >&2; exit 1; }
	wait "$srv"
	kill "$server"
	wait "$server" 2>/dev/null || true
	server=
	python3 - "$b" "$label" "$tmp/out.json" <<'PY'
import json, sys
b, label, path = sys.argv[1:4]
d = json.load(open(path))
t = d.get("model_timing", {})
late = "late %s/%s" % (t.get("late_frames"), t.get("frames"))
for r in d["results"]:
    if "gbps" in r:
        print("%-24s %-10s %8.2f Gb/s      %s" % (b[-24:], label, r["gbps"], late))
    else:
        print("%-24s %-10s %8.2f us p50 %-6d %s" % (b[-24:], label, r["p50_us"], r["size"], late))
PY
}

for r in $(seq "$rounds"); do
	for b in "$old" "$new"; do
		run "$b" stream -- bandwidth -s 1M --bytes "$bytes" --no-verify
		run "$b" no-cap --calibration "$tmp/nocap.yaml" -- bandwidth -s 1M --bytes "$bytes" --no-verify
		run "$b" latency -- latency -s 64,64K -n 2000 --warmup 200
	done
done
