#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-plugin-collective over loopback links: rings of 2, 3 and 4 ranks (each
# pair of neighbours has its own link, so a rank of 3 or 4 has two devices and
# the plugin must pick the one that reaches the listener), every result
# checked by the ranks and reported by rank 0; a damaged result must be
# reported WRONG by every rank; bad arguments and a missing rank end with a
# reason, never a hang.
#
# Usage: collective_test.sh TOOL
set -euo pipefail

tool=${1:?usage: collective_test.sh TOOL}
work=$(mktemp -d "${TMPDIR:-/tmp}/odl-collective-test.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*" >&2
	for f in "$work"/*/err.* "$work"/*/out.0; do
		[ -s "$f" ] && { echo "--- $f" >&2; tail -n 20 "$f" >&2; }
	done
	exit 1
}
export ODL_RUNTIME_DIR=$work/runtime

# ring NAME WORLD EXTRA...: starts WORLD ranks, waits (bounded by timeout),
# leaves out.R, err.R and rc.R in $work/NAME.
ring() {
	local name=$1 world=$2
	shift 2
	local dir=$work/$name
	mkdir -p "$dir"
	export ODL_LOOPBACK_NAMESPACE="coll-$$-$name"
	pids=()
	for ((r = 0; r < world; r++)); do
		# Link k joins ranks k and k+1 (mod world); two ranks share link 0.
		local devs="loopback:$(((r + world - 1) % world)),loopback:$r"
		[ "$world" -eq 2 ] && devs=loopback:0
		(
			rc=0
			ODL_NCCL_DEVICES=$devs timeout 120 "$tool" --rank "$r" --world "$world" --dir "$dir" \
				--timeout 60 "$@" >"$dir/out.$r" 2>"$dir/err.$r" || rc=$?
			echo "$rc" >"$dir/rc.$r"
		) &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || true; done
	pids=()
}

# results NAME WORLD: rank 0's ODL-RESULT rows must be 2 ops x 3 sizes, each
# ok over WORLD ranks with a positive time; every rank must exit 0.
results_ok() {
	local name=$1 world=$2 dir=$work/$1
	for ((r = 0; r < world; r++)); do
		[ "$(cat "$dir/rc.$r")" = 0 ] || fail "$name: rank $r exited $(cat "$dir/rc.$r")"
	done
	python3 - "$dir/out.0" "$world" <<'EOF' || fail "$name: rank 0's results"
import json, sys
rows = [json.loads(l.split(" ", 1)[1]) for l in open(sys.argv[1]) if l.startswith("ODL-RESULT ")]
want = {(op, s) for op in ("all_reduce", "all_gather") for s in (8, 4096, 1048576)}
got = {(r["op"], r["size"]) for r in rows}
assert got == want, f"rows {sorted(got)} != {sorted(want)}"
for r in rows:
    assert r["ok"] is True and r["wrong_calls"] == 0, r
    assert r["ranks"] == int(sys.argv[2]), r
    assert r["time_us"] > 0 and r["busbw_GBps"] > 0, r
EOF
}

for world in 2 3 4; do
	ring "w$world" "$world" --sizes 8,4096,1048576 --iters 2 --result-line
	results_ok "w$world" "$world"
	echo "ok: a ring of $world ranks: all_reduce and all_gather, 3 sizes, every result checked"
done

# One rank damages its result after the exchange: the check must see it,
# rank 0 must report WRONG and every rank must exit 1.
ring bad 3 --sizes 4096 --iters 1 --ops all_reduce --result-line --inject-error 1
for r in 0 1 2; do
	[ "$(cat "$work/bad/rc.$r")" = 1 ] || fail "damaged result: rank $r exited $(cat "$work/bad/rc.$r"), not 1"
done
grep -q '"ok":false' "$work/bad/out.0" || fail "damaged result: rank 0 did not report ok:false"
grep -q 'WRONG' "$work/bad/out.0" || fail "damaged result: no WRONG row"
echo "ok: a damaged result is reported WRONG by rank 0 and every rank exits 1"

# Bad arguments: exit 2 with the reason, before any rank waits.
expect_usage() {
	local why=$1
	shift
	local out rc=0
	out=$("$tool" "$@" 2>&1) || rc=$?
	[ "$rc" = 2 ] || fail "'$*' exited $rc, not 2: $out"
	grep -q -- "$why" <<<"$out" || fail "'$*' did not say '$why': $out"
}
mkdir -p "$work/args"
expect_usage "world" --rank 0 --world 1 --dir "$work/args"
expect_usage "rank" --rank 3 --world 3 --dir "$work/args"
expect_usage "sizes" --rank 0 --world 2 --dir "$work/args" --sizes 8,abc
expect_usage "ops" --rank 0 --world 2 --dir "$work/args" --ops all_to_all
expect_usage "dir" --rank 0 --world 2 --dir "$work/no-such-folder"
echo "ok: bad arguments end with status 2 and the reason"

# A rank whose next rank never comes: status 3 with the reason, in bounded time.
mkdir -p "$work/alone"
rc=0
ODL_LOOPBACK_NAMESPACE="coll-$$-alone" ODL_NCCL_DEVICES=loopback:0 timeout 30 "$tool" --rank 0 --world 2 \
	--dir "$work/alone" --timeout 2 >"$work/alone/out.0" 2>"$work/alone/err.0" || rc=$?
[ "$rc" = 3 ] || fail "a rank alone exited $rc, not 3"
grep -q "handle.1.hex before the timeout" "$work/alone/err.0" || fail "a rank alone did not say what it waited for"
echo "ok: a rank whose neighbour never comes gives up after --timeout, saying why"
