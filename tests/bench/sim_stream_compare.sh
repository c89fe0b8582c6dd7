#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two odl-linkd builds side by side on the sim backend's hardest case for
# the server: a 1 MiB-message stream (odl perf bandwidth), TB5 profile,
# alternated run by run. Per run: the stream's rate, how many frames
# arrived late, and from the server's -v profile the frames per busy turn,
# actions per frame, model time per frame and how far past due frames were
# handed over. Not a ctest test (timings); docs/benchmarks.md "The sim
# backend".
#
# Usage: sim_stream_compare.sh OLD_BUILD NEW_BUILD [ROUNDS (5)]
#   a build directory holds model/src/linkd/odl-linkd and bin/odl
# Environment: BYTES (default 2G), CORES ("SERVER A B": pin the server and
#   the two programs; default "2 4 6" with 7 or more CPUs, else unpinned)
set -euo pipefail
old=${1:?usage: $0 OLD_BUILD NEW_BUILD [ROUNDS]}
new=${2:?usage: $0 OLD_BUILD NEW_BUILD [ROUNDS]}
rounds=${3:-5}
for b in "$old" "$new"; do
	[ -x "$b/model/src/linkd/odl-linkd" ] && [ -x "$b/bin/odl" ] ||
		{ echo "no odl-linkd and odl in $b" >&2; exit 2; }
done
cores=${CORES:-}
[ -n "$cores" ] || { [ "$(nproc)" -ge 7 ] && cores="2 4 6"; }
pin=(); pin_a=(); pin_b=()
if [ -n "$cores" ]; then
	read -r cs ca cb <<<"$cores"
	pin=(taskset -c "$cs"); pin_a=(taskset -c "$ca"); pin_b=(taskset -c "$cb")
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-sim-cmp.XXXXXX")
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
export ODL_SIM_SOCKET=$tmp/sim.sock SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

one() {
	local b=$1
	rm -f "$ODL_SIM_SOCKET"
	"${pin[@]}" "$b/model/src/linkd/odl-linkd" -v --sim --socket "$ODL_SIM_SOCKET" --gen gen4 --lanes 2 \
		--profile intel-tb5-discrete >"$tmp/linkd.log" 2>&1 &
	server=$!
	for _ in $(seq 100); do [ -S "$ODL_SIM_SOCKET" ] && break; sleep 0.1; done
	[ -S "$ODL_SIM_SOCKET" ] || { echo "odl-linkd did not start: $(cat "$tmp/linkd.log")" >&2; exit 1; }
	ODL_SIM_END=b "${pin_b[@]}" "$b/bin/odl" perf bandwidth --backend sim --server --quiet >/dev/null 2>&1 &
	local srv=$!
	sleep 0.3
	ODL_SIM_END=a "${pin_a[@]}" "$b/bin/odl" perf bandwidth -s 1M --bytes "${BYTES:-2G}" --backend sim \
		--client 0 --json --quiet >"$tmp/out.json" 2>/dev/null || { echo "odl perf failed" >&2; exit 1; }
	wait "$srv"
	kill -INT "$server"
	wait "$server" || true
	server=
	python3 - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
t = d.get("model_timing", {})
print("%6.2f Gb/s, late %d/%d" % (d["results"][0]["gbps"], t.get("late_frames", 0), t.get("frames", 0)), end=" | ")
PY
	grep -o 'turns .*' "$tmp/linkd.log" | tail -n 1 | grep -o '[0-9.]* frames each\|[0-9.]* actions per frame\|model [0-9]*% ([0-9]* ns/frame)\|handed over [0-9.]* us' |
		paste -sd' '
}
echo "pinning: ${cores:-none}; $(nproc) CPUs; ${BYTES:-2G} of 1 MiB messages per run"
for r in $(seq "$rounds"); do
	echo -n "round $r old: "; one "$old"
	echo -n "round $r new: "; one "$new"
done
