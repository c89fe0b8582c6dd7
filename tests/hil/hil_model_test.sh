#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl hil calibrate and compare without hosts, on results whose truth is
# known: "measured" runs are the model's own with a hidden profile (3x the
# Intel profile's per-message costs, 600 ns per frame), written as odl hil
# run writes them. calibrate must find the hidden values from one scenario,
# compare must pass on another scenario with the fitted profile and fail
# with the unfitted one; bad input is refused with a clear error.
# Usage: hil_model_test.sh ODL_BINARY REPO
set -euo pipefail
odl=${1:?usage: hil_model_test.sh ODL_BINARY REPO}
repo=${2:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v rsvg-convert >/dev/null || fail "rsvg-convert is not installed (./odl installs librsvg2-bin)"
tmp=$(mktemp -d /tmp/odl-hil-model.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ssh-keygen -q -t ed25519 -N '' -f "$tmp/key"
: >"$tmp/known_hosts"
cat >"$tmp/inv.yaml" <<YAML
inventory: 1
ssh: {user: root, key: key, known_hosts: known_hosts}
pairs:
  - name: bench-1
    profile: lab-pair
    expect: gen4x2
    hosts:
      a: {destination: 192.0.2.1}
      b: {destination: 192.0.2.2}
YAML

# The hidden truth: a calibration file with profile "truth".
python3 - "$repo/model/calibration/default.yaml" "$tmp/truth.yaml" <<'PY'
import re, sys
src, dst = sys.argv[1], sys.argv[2]
text = open(src).read()
start = text.index("  intel-tb5-discrete:")
end = text.index("\n  apple-tb5:")
block = text[start:end].replace("intel-tb5-discrete:", "truth:", 1)
block = re.sub(r"post: \{value: 250ns", "post: {value: 750ns", block)
block = re.sub(r"completion: \{value: 150ns", "completion: {value: 450ns", block)
block = re.sub(r"frame_overhead: \{value: [0-9]+ns", "frame_overhead: {value: 600ns", block)
for line in ("post: {value: 750ns", "completion: {value: 450ns", "frame_overhead: {value: 600ns"):
    assert line in block, line
open(dst, "w").write(text[:end] + "\n" + block + text[end:])
PY

# Scenario $1 with a ping-pong of $2 bytes and a stream of $3 x $4 bytes,
# one after the other, on platform $5 of calibration $6.
scenario() {
	cat >"$tmp/$1.yaml" <<YAML
name: $1
seed: 1
duration: 200ms
calibration: $6
hosts:
  - {name: a, platform: $5}
  - {name: b, platform: $5}
cables:
  - {between: [a, b], generation: tb5, lanes: 2, length: 1m}
workloads:
  - {name: ping, type: pingpong, from: a, to: b, size: $2, iterations: 400}
  - {name: bulk, type: stream, from: a, to: b, size: $3, count: $4, start: 50ms}
  - {name: ar, type: allreduce, hosts: [a, b], size: 1MiB, iterations: 4, start: 150ms}
YAML
}
# "Measures": the model with the truth, rewritten as odl hil run's report.
measure() {
	scenario "$1-truth" "$2" "$3" "$4" truth "$tmp/truth.yaml"
	"$odl" run "$tmp/$1-truth.yaml" --out "$tmp/model-$1" --no-frame-trace >/dev/null 2>&1 ||
		fail "model run of $1 with the truth failed"
	mkdir -p "$tmp/meas-$1"
	python3 - "$tmp/model-$1/report.json" "$tmp/meas-$1/report.json" "$1" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
ws = []
for w in m["workloads"]:
    o = {"name": w["name"], "type": w["type"], "size_bytes": w["size_bytes"], "count": w["count"],
         "run": True, "completed": w["completed"], "messages_received": w["messages_received"]}
    if w["type"] == "pingpong":
        l = w["one_way_us"]
        # A spread around the model's (noise-free) value, as a host would show.
        cdf = [l["p50"] * (0.9 + 0.2 * q / 100) for q in range(101)]
        o["one_way_us"] = {"p50": l["p50"], "p99": l["p99"] * 1.5, "mean": l["mean"], "max": l["max"], "cdf": cdf}
    elif w["type"] == "allreduce":  # as a NCCL run on the hosts reports it
        o["time_us"], o["busbw_gbps"] = w["time_us"], w["busbw_gbps"]
    else:
        o["gbps"] = w["gbps"]
    ws.append(o)
r = {"scenario": sys.argv[3], "on": "hosts bench-1", "workloads": ws, "passed": True,
     "hosts": {"pair": "bench-1", "profile": "lab-pair", "expect": "gen4x2", "measured_at": "2026-11-25T12:00:00Z",
               "a": {"target": "a (root@192.0.2.1 port 22)"}, "b": {"target": "b (root@192.0.2.2 port 22)"}}}
json.dump(r, open(sys.argv[2], "w"), indent=2)
PY
	scenario "$1" "$2" "$3" "$4" intel-tb5-discrete "$repo/model/calibration/default.yaml"
}
measure fit 64 1MiB 32
measure other 4KiB 256KiB 64

run() {
	set +e
	timeout 300 "$odl" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
}

# calibrate recovers the hidden costs from one scenario.
run hil calibrate "$tmp/fit.yaml" "$tmp/inv.yaml" --results "$tmp/meas-fit" --out "$tmp/fitted.yaml"
[ "$rc" = 0 ] || fail "calibrate: exit $rc: $err $out"
grep -q "lab-pair is not in .*default.yaml: starting from intel-tb5-discrete" <<<"$err" ||
	fail "calibrate: the base is not named: $err"
python3 - "$tmp/fitted.yaml" <<'PY' || fail "calibrate: fitted values: $(cat "$tmp/fitted.yaml")"
import re, sys
text = open(sys.argv[1]).read()
def block(name):
    m = re.search(r"^  " + re.escape(name) + r":\n((?:    .*\n)+)", text, re.M)
    assert m, f"no profile {name}"
    return m.group(1)
p = block("lab-pair")
block("intel-tb5-discrete")
def param(key):
    m = re.search(r"^    " + key + r': \{value: ([0-9.e+-]+)ns, source: "(.*)"\}$', p, re.M)
    assert m, f"no {key} in {p}"
    return float(m.group(1)), m.group(2)
want = {"post": 750, "completion": 450, "frame_overhead": 600}
for k, w in want.items():
    v, src = param(k)
    # Within 10 %: the model's latencies step with its 100 ns busy-poll
    # period, so a range of costs gives the same p50 (about +-5 % here).
    assert abs(v - w) / w < 0.10, f"{k}: fitted {v} ns, truth {w} ns"
    assert src.startswith("F: ") and "pair bench-1" in src and "2026-11-25T12:00:00Z" in src, src
assert param("pcie_rtt")[0] == 900, p
assert "fitted to pair bench-1" in p, p
PY
echo "ok: calibrate found the hidden profile: $(grep -o 'post and completion x [0-9.]*' <<<"$out")"

# compare on another scenario: the fitted profile predicts it...
run hil compare "$tmp/other.yaml" "$tmp/inv.yaml" --results "$tmp/meas-other" --calibration "$tmp/fitted.yaml" --out "$tmp/cmp"
[ "$rc" = 0 ] || fail "compare with the fitted profile: exit $rc: $out $err"
grep -Eq '^  ping +p50_us .* PASS$' <<<"$out" || fail "compare: no p50 row: $out"
grep -Eq '^  bulk +gbps .* PASS$' <<<"$out" || fail "compare: no Gb/s row: $out"
grep -Eq '^  ping +p99_us .*\(not judged\)$' <<<"$out" || fail "compare: p99 judged without a tolerance: $out"
grep -Eq '^  ar +busbw_gbps .* PASS$' <<<"$out" || fail "compare: no bus bandwidth row for the all-reduce: $out"
grep -Eq '^  ar +time_us .*\(not judged\)$' <<<"$out" || fail "compare: all-reduce time judged: $out"
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["passed"] and len(j["rows"])==5, j' "$tmp/cmp/compare.json" ||
	fail "compare.json"
grep -q '89 50 4e 47 0d 0a 1a 0a' <<<"$(head -c 8 "$tmp/cmp/latency-ping.png" | od -An -tx1)" || fail "no PNG plot"
grep -q 'measured (bench-1)' "$tmp/cmp/latency-ping.svg" || fail "plot without the measured series"
echo "ok: compare, fitted profile, other scenario: $(tail -n 1 <<<"$out")"

# ... the unfitted one does not, and says by how much.
run hil compare "$tmp/other.yaml" "$tmp/inv.yaml" --results "$tmp/meas-other" --profile intel-tb5-discrete --out "$tmp/cmp2"
[ "$rc" = 1 ] || fail "compare with the unfitted profile: exit $rc, want 1: $out $err"
grep -Eq '^  ping +p50_us .* -[0-9.]+% .* FAIL$' <<<"$out" || fail "compare, unfitted: p50 not failed: $out"
echo "ok: compare, unfitted profile: $(tail -n 1 <<<"$out")"

# A tail tolerance makes p99 part of the verdict (the measured tail is 1.5x).
run hil compare "$tmp/other.yaml" "$tmp/inv.yaml" --results "$tmp/meas-other" --calibration "$tmp/fitted.yaml" --out "$tmp/cmp3" --tolerance-tail 20
[ "$rc" = 1 ] && grep -Eq '^  ping +p99_us .* FAIL$' <<<"$out" || fail "--tolerance-tail: exit $rc: $out"
echo "ok: --tolerance-tail judges p99"

# Several results folders: the median per metric. One run at twice the
# latency and half the rate, one at half and twice: the median is the truth.
for f in 2 0.5; do
	mkdir -p "$tmp/meas-other-x$f"
	python3 - "$tmp/meas-other/report.json" "$tmp/meas-other-x$f/report.json" "$f" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
f = float(sys.argv[3])
for w in r["workloads"]:
    if "one_way_us" in w:
        l = w["one_way_us"]
        for k in ("p50", "p99", "mean", "max"):
            l[k] *= f
        l["cdf"] = [v * f for v in l["cdf"]]
    elif "busbw_gbps" in w:
        w["time_us"] *= f
        w["busbw_gbps"] /= f
    else:
        w["gbps"] /= f
json.dump(r, open(sys.argv[2], "w"))
PY
done
run hil compare "$tmp/other.yaml" "$tmp/inv.yaml" --results "$tmp/meas-other-x2" --results "$tmp/meas-other" \
	--results "$tmp/meas-other-x0.5" --calibration "$tmp/fitted.yaml" --out "$tmp/cmp4"
[ "$rc" = 0 ] && grep -q "median of 3 runs" <<<"$out" || fail "median of three: exit $rc: $out $err"
run hil compare "$tmp/other.yaml" "$tmp/inv.yaml" --results "$tmp/meas-other-x2" --results "$tmp/meas-other" \
	--calibration "$tmp/fitted.yaml" --out "$tmp/cmp5"
[ "$rc" = 1 ] && grep -Eq '^  ping +p50_us .* -3[0-9.]+% .* FAIL$' <<<"$out" ||
	fail "median of two (1.5x the truth): exit $rc: $out $err"
echo "ok: --results several times: their median"

# Bad input: each a clear error, exit 2.
run hil compare "$tmp/fit.yaml" "$tmp/inv.yaml" --results "$tmp/meas-other" --calibration "$tmp/fitted.yaml" --out "$tmp/x"
[ "$rc" = 2 ] && grep -q "holds a run of scenario other, not fit" <<<"$err" || fail "other scenario's results: exit $rc: $err"
run hil compare "$tmp/other.yaml" "$tmp/inv.yaml" --results "$tmp/meas-other" --out "$tmp/x"
[ "$rc" = 2 ] && grep -q "unknown platform 'lab-pair'" <<<"$err" || fail "profile not in the file: exit $rc: $err"
run hil compare "$tmp/other.yaml" "$tmp/inv.yaml" --results "$tmp/model-other" --calibration "$tmp/fitted.yaml" --out "$tmp/x"
[ "$rc" = 2 ] && grep -q "not the report of a HIL run" <<<"$err" || fail "a model report: exit $rc: $err"
echo '{"scenario": "oth' >"$tmp/meas-other/report.json"
run hil calibrate "$tmp/other.yaml" "$tmp/inv.yaml" --results "$tmp/meas-other" --out "$tmp/y.yaml"
[ "$rc" = 2 ] && grep -q "report.json: not JSON" <<<"$err" && [ ! -e "$tmp/y.yaml" ] ||
	fail "truncated report: exit $rc: $err"
run hil calibrate "$tmp/other.yaml" "$tmp/inv.yaml" --out "$tmp/y.yaml" --base no-such
[ "$rc" = 2 ] && grep -q "unknown platform 'no-such'" <<<"$err" || fail "--base no-such: exit $rc: $err"
echo "ok: bad input refused"
echo "PASS"
