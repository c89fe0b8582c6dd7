#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One fuzz target, bounded, for ctest: every seed and regression input once
# (an input that once failed must pass now), then SECONDS of fuzzing from a
# scratch corpus seeded from the tree (the tree is never written). A crash,
# leak, sanitizer report or timeout fails the test; the input is kept in
# ARTIFACTS and printed in hex so it can join regressions/<target>.
# Usage: run_fuzz.sh BINARY SEEDS REGRESSIONS SECONDS ARTIFACTS
set -euo pipefail
bin=$1 seeds=$2 regressions=$3 seconds=$4 artifacts=$5
work=$(mktemp -d "${TMPDIR:-/tmp}/odl-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$artifacts"
opts=(-timeout=10 -rss_limit_mb=2048 -artifact_prefix="$artifacts/")

report() {
	echo "FAIL: $1" >&2
	for f in "$artifacts"/*; do
		[ -f "$f" ] || continue
		echo "--- $f ($(stat -c %s "$f") bytes):" >&2
		od -An -tx1 -v "$f" | head -n 32 >&2
	done
	exit 1
}

mapfile -t inputs < <(find "$seeds" "$regressions" -type f 2>/dev/null | sort)
[ "${#inputs[@]}" -gt 0 ] || report "no seeds in $seeds"
"$bin" "${opts[@]}" "${inputs[@]}" >"$work/replay.log" 2>&1 ||
	{ tail -n 40 "$work/replay.log" >&2; report "a seed or regression input fails"; }
echo "replayed ${#inputs[@]} seed and regression inputs"

"$bin" "${opts[@]}" -max_total_time="$seconds" -print_final_stats=1 "$work/corpus" "$seeds" \
	>"$work/fuzz.log" 2>&1 || { tail -n 60 "$work/fuzz.log" >&2; report "fuzzing found an input that fails"; }
grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$work/fuzz.log" || true
tail -n 1 "$work/fuzz.log"
