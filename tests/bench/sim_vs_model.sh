#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The sim backend against the model's own prediction, per cable: odl perf
# latency and bandwidth between two processes over odl-linkd --sim, next to
# `odl run --on model` of a scenario with the same hosts, cable and message
# sizes. Prints one table; the model-timing columns say how many frames
# arrived late (the run is then slower than the model, and marked); the
# loopback column is the same program over the loopback backend in frames (no
# model, no server: its own cost), and for streams the slower of the model and
# that ("model+own", the rate a program on the sim backend can reach, and its
# error; a message's latency has none: the modelled host costs stand for the
# library's work, docs/sim.md); under each cable, where the server's wall time
# went (odl-linkd -v). The stream the model predicts checks no payload:
# `1M Gb/s` runs `--no-verify`; `1M chk Gb/s` is the same stream with every
# byte checked by the receiver, a cost of the program that the model does not
# hold. Not a ctest test (timings); docs/benchmarks.md "The sim backend".
#
# Usage: sim_vs_model.sh [PROFILE (intel-tb5-discrete)] [CABLES ("gen3:2 gen4:2 gen4:2:asym")]
# Environment: ODL_BUILD_DIR (default build/), LINKD_ARGS (more odl-linkd options,
#   e.g. "--lookahead 0")
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${ODL_BUILD_DIR:-$repo/build}
profile=${1:-intel-tb5-discrete}
cables=${2:-gen3:2 gen4:2 gen4:2:asym}
odl=$build/bin/odl
model=$build/bin/odl-model
linkd=$build/model/src/linkd/odl-linkd
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-sim-bench.XXXXXX")
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
export ODL_SIM_SOCKET=$tmp/sim.sock SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1

# The same runs over the loopback backend (no link model, no server): what
# the program itself costs. In frames, as over sim: the loopback backend's
# single-copy rendezvous (the receiver reads a large message straight from
# the sender's memory) would skip the frame path (ODL_LOOPBACK_RNDV=0).
loop_perf() {
	ODL_LOOPBACK_RNDV=0 "$odl" perf "$1" --backend loopback --server --quiet 2>/dev/null &
	local srv=$!
	sleep 0.3
	ODL_LOOPBACK_RNDV=0 "$odl" perf "$@" --backend loopback --client 0 --json --quiet 2>/dev/null
	wait "$srv"
}
loop_perf latency -s 64,64K -n 1000 --warmup 100 >"$tmp/loop-lat.json"
loop_perf bandwidth -s 1M --bytes 1G --no-verify >"$tmp/loop-bw.json"
loop_perf bandwidth -s 1M --bytes 256M >"$tmp/loop-bwchk.json"
printf '%-18s %-11s %12s %12s %8s %14s %10s %11s %8s\n' cable metric "sim" "model" "error" "late/frames" "loopback" \
	"model+own" "error"
for c in $cables; do
	IFS=: read -r gen lanes asym <<<"$c"
	args=(--gen "$gen" --lanes "$lanes" --profile "$profile")
	tb=$gen
	case "$gen" in gen3) tb=tb4 ;; gen4) tb=tb5 ;; esac
	ycable="{between: [a, b], generation: $tb, lanes: $lanes, length: 1m"
	[ "$asym" = asym ] && { args+=(--asymmetric); ycable+=", asymmetric: true"; }
	ycable+="}"
	cat >"$tmp/s.yaml" <<YAML
name: sim-vs-model
duration: 400ms
hosts:
  - {name: a, platform: $profile}
  - {name: b, platform: $profile}
cables:
  - $ycable
workloads:
  - {name: lat64, type: pingpong, from: a, to: b, size: 64, iterations: 1000}
  - {name: lat64k, type: pingpong, from: a, to: b, size: 64KiB, iterations: 300, start: 20ms}
  - {name: bulk, type: stream, from: a, to: b, size: 1MiB, count: 1024, start: 60ms}
YAML
	"$model" run "$tmp/s.yaml" --on model --json --out "$tmp/run" >"$tmp/model.json" 2>"$tmp/model.log" ||
		{ echo "odl run --on model failed: $(tail -n 5 "$tmp/model.log")" >&2; exit 1; }
	# One server per run, so that each run's profile is its own.
	# A (the scenario's first host, the fast end when asymmetric) is the client.
	perf() {
		local out=$1
		shift
		# shellcheck disable=SC2086 # LINKD_ARGS: more odl-linkd options, word-split on purpose
		"$linkd" -v --sim --socket "$ODL_SIM_SOCKET" "${args[@]}" ${LINKD_ARGS:-} >"$tmp/linkd.log" 2>&1 &
		server=$!
		for _ in $(seq 100); do [ -S "$ODL_SIM_SOCKET" ] && break; sleep 0.1; done
		ODL_SIM_END=b "$odl" perf "$1" --backend sim --server --quiet 2>/dev/null &
		sleep 0.3
		ODL_SIM_END=a "$odl" perf "$@" --backend sim --client 0 --json --quiet >"$out" 2>/dev/null
		wait $!
		kill "$server"
		wait "$server" 2>/dev/null || true
		server=
		# Where the server's wall time went: odl-linkd -v's last line.
		echo "$(grep -o 'turns .*' "$tmp/linkd.log" | tail -n 1 || echo 'no profile line in its log')"
	}
	lat_prof=$(perf "$tmp/lat.json" latency -s 64,64K -n 1000 --warmup 100)
	# 1 GiB: a stream's start (the first message's round trip, a sleeping
	# peer's wake-up) weighs a few percent in 256 MiB.
	bw_prof=$(perf "$tmp/bw.json" bandwidth -s 1M --bytes 1G --no-verify)
	perf "$tmp/bwchk.json" bandwidth -s 1M --bytes 256M >/dev/null
	python3 - "$c" "$tmp/model.json" "$tmp/lat.json" "$tmp/bw.json" "$tmp/loop-lat.json" "$tmp/loop-bw.json" \
		"$tmp/bwchk.json" "$tmp/loop-bwchk.json" <<'PY'
import json, sys
cable, m, lat, bw, llat, lbw, bwc, lbwc = sys.argv[1], *(json.load(open(p)) for p in sys.argv[2:])
w = {x["name"]: x for x in m["workloads"]}
l = {x["size"]: x for x in lat["results"]}
ll = {x["size"]: x for x in llat["results"]}
# model+own, streams only: the program and the link overlap, so the slower
# of the two sets the rate. A message's latency gets no such column: the
# modelled host's costs already stand for the library's work on it.
rows = [("p50 64B us", l[64]["p50_us"], w["lat64"]["one_way_us"]["p50"], lat, ll[64]["p50_us"], False),
        ("p50 64K us", l[65536]["p50_us"], w["lat64k"]["one_way_us"]["p50"], lat, ll[65536]["p50_us"], False),
        ("1M Gb/s", bw["results"][0]["gbps"], w["bulk"]["gbps"], bw, lbw["results"][0]["gbps"], True),
        ("1M chk Gb/s", bwc["results"][0]["gbps"], w["bulk"]["gbps"], bwc, lbwc["results"][0]["gbps"], True)]
for name, s, p, run, loop, stream in rows:
    t = run.get("model_timing", {})
    reach = min(p, loop)
    own = "%11.2f %+7.1f%%" % (reach, 100 * (s / reach - 1)) if stream else "%11s %8s" % ("-", "-")
    print("%-18s %-11s %12.2f %12.2f %+7.1f%% %14s %10.2f %s" % (cable, name, s, p, 100 * (s / p - 1),
          "%d/%d" % (t.get("late_frames", 0), t.get("frames", 0)), loop, own))
PY
	echo "  server, latency runs: $lat_prof"
	echo "  server, bandwidth run: $bw_prof"
done
