#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One fuzz target, bounded, for ctest: every input of the tree's folders
# once (seeds, the corpus of the longer campaigns, and regressions: inputs
# that once failed must pass now), then SECONDS of fuzzing from a scratch
# corpus started from them (the tree is never written), with a fixed random
# seed so that a run can be repeated. A crash, leak, sanitizer report or
# timeout fails the test; the input is kept in ARTIFACTS and printed in hex
# so it can join regressions/<target>. An input that runs longer than
# INPUT_TIMEOUT seconds (wall clock) is a hang.
# Usage: run_fuzz.sh BINARY SECONDS INPUT_TIMEOUT ARTIFACTS DIR...
set -euo pipefail
bin=$1 seconds=$2 input_timeout=$3 artifacts=$4
shift 4
dirs=()
for d in "$@"; do [ -d "$d" ] && dirs+=("$d"); done
# Scratch beside ARTIFACTS, in the build tree: a run killed at its ctest
# limit (SIGKILL, no trap) leaves it there, not in /tmp, and the next run
# of the target clears it.
scratch="$(dirname "$artifacts")/.scratch-$(basename "$artifacts")"
mkdir -p "$(dirname "$artifacts")"
rm -rf "$scratch".*
work=$(mktemp -d "$scratch.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$work/tmp" "$artifacts"
export TMPDIR="$work/tmp"  # the targets' own files go with $work, whatever happens
opts=(-timeout="$input_timeout" -rss_limit_mb=2048 -artifact_prefix="$artifacts/")

report() {
	echo "FAIL: $1" >&2
	for f in "$artifacts"/*; do
		[ -f "$f" ] || continue
		echo "--- $f ($(stat -c %s "$f") bytes):" >&2
		od -An -tx1 -v "$f" | head -n 32 >&2
	done
	exit 1
}

[ "${#dirs[@]}" -gt 0 ] || report "none of these folders exists: $*"
mapfile -t inputs < <(find "${dirs[@]}" -type f | sort)
[ "${#inputs[@]}" -gt 0 ] || report "no inputs in $*"
"$bin" "${opts[@]}" "${inputs[@]}" >"$work/replay.log" 2>&1 ||
	{ tail -n 40 "$work/replay.log" >&2; report "a seed or regression input fails"; }
echo "replayed ${#inputs[@]} inputs"

# At nice 10: a unit test beside a fuzz target in the sanitizer pass gets
# the CPU first; the target fuzzes for a wall-clock time either way.
nice -n 10 "$bin" "${opts[@]}" -seed=1 -max_total_time="$seconds" -print_final_stats=1 "$work/corpus" "${dirs[@]}" \
	>"$work/fuzz.log" 2>&1 || { tail -n 60 "$work/fuzz.log" >&2; report "fuzzing found an input that fails"; }
grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$work/fuzz.log" || true
tail -n 1 "$work/fuzz.log"
