#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The in-process model (ODL_SIM_SOCKET=inproc, docs/sim.md): odl perf holds
# both ends of a sim link in one process and the model server runs in a
# thread of it, loaded from odl-sim-inproc.so; no odl-linkd. Checked: every
# byte of a latency run, the Gen2 x1 cable's pacing, a scenario's unplug
# seen by the program, the options' errors before anything runs, a missing
# module named, and nothing left in the runtime folder.
# Usage: sim_inproc_test.sh ODL MODULE
set -euo pipefail
odl=$1
module=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-inproc-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/run"
export XDG_RUNTIME_DIR=$tmp/run ODL_SIM_SOCKET=inproc ODL_SIM_MODULE=$module
unset ODL_SIM_ARGS ODL_SIM_END
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
# The server's private folder goes when the program exits.
no_leftovers() {
	[ -z "$(ls -A "$tmp/run")" ] || fail "left in the runtime folder: $(ls -A "$tmp/run")"
}

step "latency, both ends and the model in one process, every byte checked"
"$odl" perf latency --backend sim -s 64,4K,64K -n 100 --warmup 100 --checksum --json >"$tmp/lat.json" 2>"$tmp/lat.log" ||
	fail "perf latency in-process: $(cat "$tmp/lat.log")"
grep -q "both ends of sim0 in this process" "$tmp/lat.log" || fail "not both ends in one process: $(cat "$tmp/lat.log")"
grep -q "started server" "$tmp/lat.log" && fail "a server process was started: $(cat "$tmp/lat.log")"
python3 - "$tmp/lat.json" <<'PY' || fail "latency results: $(cat "$tmp/lat.log")"
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["size"]: x for x in d["results"]}
m = d["model_timing"]
print("in-process: p50 64 B %.1f us, 4 KiB %.1f us, 64 KiB %.1f us; model frames %d, late %d"
      % (r[64]["p50_us"], r[4096]["p50_us"], r[65536]["p50_us"], m["frames"], m["late_frames"]))
assert d["checksum"] and d["backend"] == "sim", d
assert all(r[s]["samples"] == 100 for s in (64, 4096, 65536)), r
assert m["frames"] > 0, m  # the model carried them
# 64 KiB is 16 frames on a TB5 cable: it cannot arrive as soon as 64 B.
assert m["distorted"] or r[65536]["p50_us"] > r[64]["p50_us"], r
PY
no_leftovers

step "pacing: a Gen2 x1 cable from ODL_SIM_ARGS, 128 MiB of 4 KiB messages"
ODL_SIM_ARGS="--gen gen2 --lanes 1 --sim-timing event" \
	"$odl" perf bandwidth --backend sim -s 4K --bytes 128M --checksum --json --quiet >"$tmp/bw.json" 2>"$tmp/bw.log" ||
	fail "perf bandwidth in-process on Gen2 x1: $(cat "$tmp/bw.log")"
python3 - "$tmp/bw.json" <<'PY' || fail "pacing: $(cat "$tmp/bw.log")"
import json, sys
d = json.load(open(sys.argv[1]))
g = d["results"][0]["gbps"]
m = d["model_timing"]
# Gen2 x1 carries 10 Gb/s on the wire; 4 KiB messages (two frames each,
# 32-byte headers, the profile's host costs) get less, never more.
print("in-process Gen2 x1: %.2f Gb/s; late %d of %d frames" % (g, m["late_frames"], m["frames"]))
assert d["verified"], d
assert g <= 10.0, "faster than the modelled cable"
assert m["distorted"] or g >= 3.0, "far slower than the cable without saying so"
PY
no_leftovers

step "a scenario's unplug at 1 s ends the run with the cause"
cat >"$tmp/unplug.yaml" <<'YAML'
name: inproc-unplug
duration: 3s
hosts:
  - {name: a, platform: intel-tb5-discrete}
  - {name: b, platform: intel-tb5-discrete}
cables:
  - {between: [a, b], generation: tb4, lanes: 2, length: 1m}
events:
  - {at: 1000ms, event: unplug, cable: 0}
workloads:
  - {name: bulk, type: stream, from: a, to: b, size: 1MiB, count: 4}
YAML
t=$SECONDS
set +e
ODL_SIM_ARGS="--scenario $tmp/unplug.yaml" timeout 60 "$odl" perf bandwidth --backend sim -s 64K --bytes 64G --quiet \
	>"$tmp/unplug.out" 2>"$tmp/unplug.log"
rc=$?
set -e
[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "cable unplugged" "$tmp/unplug.log" ||
	fail "after the scenario's unplug: exit $rc: $(cat "$tmp/unplug.log")"
[ $((SECONDS - t)) -le 15 ] || fail "the unplug at 1 s ended the run only after $((SECONDS - t)) s"
echo "ended after $((SECONDS - t)) s: $(grep -m1 'unplugged' "$tmp/unplug.log")"
# The server's own lines (the workloads it leaves, the event) went to the
# library's log: libodl never prints, the module it loads neither.
grep -q "odl-linkd" "$tmp/unplug.log" && fail "the in-process model printed: $(cat "$tmp/unplug.log")"
no_leftovers

step "bad options: refused with the reason before anything runs"
# refused ARGS WANT: ODL_SIM_ARGS=ARGS fails within 20 s naming WANT.
refused() {
	local rc=0 t=$SECONDS
	ODL_SIM_ARGS=$1 timeout 60 "$odl" perf latency --backend sim -s 64 -n 5 --quiet >"$tmp/bad.out" 2>"$tmp/bad.log" || rc=$?
	[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -qF -- "$2" "$tmp/bad.log" ||
		fail "ODL_SIM_ARGS='$1': exit $rc, want '$2': $(cat "$tmp/bad.log")"
	[ $((SECONDS - t)) -le 20 ] || fail "ODL_SIM_ARGS='$1' took $((SECONDS - t)) s to be refused"
	echo "ok: $(grep -m1 -F -- "$2" "$tmp/bad.log" | cut -c1-200)"
	no_leftovers
}
refused "--profile no-such-host" "no-such-host"
refused "--links 2" "the in-process model serves one link"
refused "--gen gen9" "--gen: gen9 not in"
refused "--frobnicate" "frobnicate"
printf 'name: broken\nhosts: [\n' >"$tmp/broken.yaml"
refused "--scenario $tmp/broken.yaml" "broken.yaml:"
refused "--scenario $tmp/unplug.yaml --gen gen3" "--scenario sets the cable"

step "a lateness threshold that is not a number: said, and the default used"
# "-5" was taken as 2^64 - 5 ns: no frame could ever count as late.
out=$(ODL_SIM_LATE_NS=-5 timeout 60 "$odl" perf latency --backend sim -s 64 -n 5 --warmup 1 --quiet 2>&1) ||
	fail "perf latency with ODL_SIM_LATE_NS=-5: $out"
grep -q "ODL_SIM_LATE_NS='-5' is not a whole number of nanoseconds; using 50000" <<<"$out" ||
	fail "ODL_SIM_LATE_NS=-5 taken without a word: $out"
no_leftovers

step "the module missing: named, with the package it comes with"
set +e
out=$(ODL_SIM_MODULE=$tmp/none.so "$odl" perf latency --backend sim -s 64 -n 5 --quiet 2>&1)
rc=$?
set -e
[ "$rc" != 0 ] && grep -q "the in-process model could not be loaded" <<<"$out" && grep -q "odl-model package" <<<"$out" ||
	fail "missing module: exit $rc: $out"
echo "ok: $(grep -m1 'could not be loaded' <<<"$out" | cut -c1-200)"
no_leftovers
echo "PASS"
