#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugin/gpu/host_bound.py on made-up run folders whose answers are known:
# the host-bound prediction is the slower of the link model and the loopback
# run, each size is counted in its band, and a folder that is not a
# run_sim_check.sh output is refused with its name, exit 2.
set -euo pipefail
script=${1:?usage: $0 host_bound.py}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# op, size, sim us, link-model us, loopback us
mk() {
	local dir=$1
	shift
	mkdir -p "$dir"
	python3 - "$dir" "$@" <<'PY'
import json, os, sys
d = sys.argv[1]
rows = [a.split(",") for a in sys.argv[2:]]
kind = {"all_reduce": "allreduce", "all_gather": "allgather"}
json.dump({"rows": [{"op": r[0], "size": int(r[1]), "time_us": float(r[2])} for r in rows], "failures": 0},
          open(os.path.join(d, "sim.json"), "w"))
json.dump({"rows": [{"op": r[0], "size": int(r[1]), "time_us": float(r[4])} for r in rows], "failures": 0},
          open(os.path.join(d, "loopback.json"), "w"))
json.dump({"collectives": [{"kind": kind[r[0]], "size_bytes": int(r[1]), "time_us": float(r[3])} for r in rows]},
          open(os.path.join(d, "model.json"), "w"))
PY
}
# 8 B: NCCL's own 40 us against a 7 us link; 16 MiB: the link is slower.
mk "$tmp/a" all_reduce,8,41,7,40 all_reduce,16777216,3500,3200,3000
# 1 MiB: 30 % off either way; 64 MiB: both within 10 %.
mk "$tmp/b" all_gather,1048576,400,210,280 all_gather,67108864,13000,12500,12000

out=$("$script" "$tmp/a" "$tmp/b") || fail "exit $?: $out"
grep -qF "| all_reduce | 8 | 41.0 | 7.0 | 40.0 | 40.0 | 0.17 | 0.98 |" <<<"$out" || fail "8 B row: $out"
grep -qF "| all_reduce | 16777216 | 3500.0 | 3200.0 | 3000.0 | 3200.0 | 0.91 | 0.91 |" <<<"$out" ||
	fail "16 MiB row (the link is the slower stage): $out"
grep -qF "| all_gather | 1048576 | 400.0 | 210.0 | 280.0 | 280.0 | 0.53 | 0.70 |" <<<"$out" || fail "1 MiB row: $out"
grep -qF "| host-bound | <= 1 MiB | 1 of 2 (50 %) |" <<<"$out" || fail "host-bound, small sizes: $out"
grep -qF "| host-bound | > 1 MiB | 2 of 2 (100 %) |" <<<"$out" || fail "host-bound, large sizes: $out"
grep -qF "| link | <= 1 MiB | 0 of 2 (0 %) |" <<<"$out" || fail "link, small sizes: $out"
grep -qF "| link | > 1 MiB | 2 of 2 (100 %) |" <<<"$out" || fail "link, large sizes: $out"
grep -qF "over 2 run(s)" <<<"$out" || fail "run count: $out"

# Not a run folder: refused with its name.
mkdir -p "$tmp/empty"
rc=0
err=$("$script" "$tmp/empty" 2>&1 >/dev/null) || rc=$?
[ "$rc" = 2 ] && grep -qF "$tmp/empty: not a run_sim_check.sh folder" <<<"$err" || fail "empty folder: exit $rc: $err"
# Folders with no size in common.
mk "$tmp/c" all_reduce,8,41,7,40
python3 -c "import json;json.dump({'collectives':[]},open('$tmp/c/model.json','w'))"
rc=0
err=$("$script" "$tmp/c" 2>&1 >/dev/null) || rc=$?
[ "$rc" = 2 ] && grep -qF "no size is in all of" <<<"$err" || fail "no common size: exit $rc: $err"
# A time of zero (a broken run) is refused, not divided by.
mk "$tmp/d" all_reduce,8,0,7,40
rc=0
err=$("$script" "$tmp/d" 2>&1 >/dev/null) || rc=$?
[ "$rc" = 2 ] && grep -qF "a time that is not positive" <<<"$err" || fail "zero time: exit $rc: $err"
echo "host_bound_test: ok"
