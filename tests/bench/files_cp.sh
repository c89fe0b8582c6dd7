#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl cp against odl perf bandwidth on the same backend: ROUNDS alternated
# runs of `odl perf bandwidth -s 1M --bytes SIZE` and of `odl cp` pushing a
# SIZE file of random bytes into a served folder on tmpfs (/dev/shm), SHA-256
# checked; medians and their ratio. Loopback by default: both ends on this
# machine. Not a ctest test; docs/benchmarks.md "File service".
# Usage: files_cp.sh [BUILD_DIR] [SIZE_MIB] [ROUNDS]
set -euo pipefail
build=${1:-build}
mib=${2:-1024}
rounds=${3:-3}
odl="$build/bin/odl"
[ -x "$odl" ] || { echo "no $odl (build first)" >&2; exit 2; }
tmp=$(mktemp -d /dev/shm/odl-files-bench.XXXXXX)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
export ODL_LOOPBACK_NAMESPACE=files-bench-$$
L=(--backend loopback --device 5)
mkdir -p "$tmp/share"
"$odl" pair "${L[@]}" --keys "$tmp/ka" --yes >/dev/null &
pids+=($!)
"$odl" pair "${L[@]}" --keys "$tmp/kb" --yes >/dev/null
head -c $((mib << 20)) /dev/urandom >"$tmp/src.bin"
"$odl" files serve "$tmp/share" "${L[@]}" --keys "$tmp/ka" &
pids+=($!)
gbps() { python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)[sys.argv[1]])' "$1"; }
perf=() cp=()
for r in $(seq "$rounds"); do
	p=$("$odl" perf bandwidth -b loopback -s 1M --bytes "${mib}M" --json 2>/dev/null |
		python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.2f" % d["results"][0]["gbps"])')
	rm -f "$tmp/share/src.bin"
	c=$("$odl" cp "$tmp/src.bin" peer: "${L[@]}" --keys "$tmp/kb" --json | gbps gbps)
	cmp -s "$tmp/src.bin" "$tmp/share/src.bin" || { echo "copy $r differs" >&2; exit 1; }
	echo "round $r: perf bandwidth $p Gb/s, odl cp $c Gb/s"
	perf+=("$p") cp+=("$c")
done
python3 - "${perf[*]}" "${cp[*]}" <<'PY'
import statistics, sys
p = statistics.median(map(float, sys.argv[1].split()))
c = statistics.median(map(float, sys.argv[2].split()))
print(f"median: perf bandwidth {p:.2f} Gb/s, odl cp {c:.2f} Gb/s, ratio {c / p:.2f}")
PY
