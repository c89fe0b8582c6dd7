#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `odl run --on vm`: a scenario that needs more than the testbed is refused
# without booting anything; tests/vm/scenarios/vm-small.yaml runs in the two
# VMs (thunderbolt_net: ping, iperf3; a ber event, unplug/replug, a degrade
# to one Gen2 lane that Linux must then report, a host reset of b) and its report must show what
# was measured, applied and not evaluated; nothing of the testbed may be left
# running.
#
# Usage: run_on_vm_test.sh ODL_BINARY
# Environment: ODL_LINKD, ODL_VM_DIR (as the other vm tests)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
odl=${1:?usage: run_on_vm_test.sh ODL_BINARY}
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-run-$$}
out="$ODL_VM_DIR.run"
tb="$repo/qemu-device/testbed.sh"
export ODL_TESTBED_OWNER=$$  # a ctest timeout kills this shell alone: the testbed goes with it (testbed.sh)
trap '"$tb" down >/dev/null 2>&1 || true' EXIT

step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
fail() {
	printf 'FAIL: %s\n' "$*"
	cat "$out/report.txt" 2>/dev/null || true
	exit 1
}

step "scenarios the testbed cannot map are refused (no VM started)"
# refused FILE REASON: odl run --on vm exits 2 naming REASON.
refused() {
	local msg rc
	set +e
	msg=$("$odl" run "$1" --on vm 2>&1)
	rc=$?
	set -e
	[ $rc = 2 ] || fail "$1: status $rc, want 2: $msg"
	grep -q -- "$2" <<<"$msg" || fail "$1: no reason given: $msg"
	echo "$msg"
}
three="$here/scenarios/vm-three.yaml"
bad="$ODL_VM_DIR.bad.yaml"
mkdir -p "$(dirname "$bad")"
# Five hosts: one more than the testbed boots.
python3 - "$three" "$bad" <<'PY'
import sys
s = open(sys.argv[1]).read()
s = s.replace("  - {name: c}\n", "  - {name: c}\n  - {name: d}\n  - {name: e}\n")
s = s.replace("  - {between: [c, a], generation: tb4, lanes: 2}\n",
              "  - {between: [c, a], generation: tb4, lanes: 2}\n  - {between: [c, d], generation: tb4, lanes: 2}\n"
              "  - {between: [d, e], generation: tb4, lanes: 2}\n")
open(sys.argv[2], "w").write(s)
PY
refused "$bad" "at most 4 VMs"
# A line (no c-a cable) with a workload from c to a: nothing routes it.
sed 's/  - {between: \[c, a\], generation: tb4, lanes: 2}//' "$three" >"$bad"
refused "$bad" "no cable between 'c' and 'a'"
# Cables of two kinds: odl-linkd models one.
sed 's/{between: \[b, c\], generation: tb4, lanes: 2}/{between: [b, c], generation: tb4, lanes: 1}/' "$three" >"$bad"
refused "$bad" "cable 1 is gen3 x1, cable 0 gen3 x2"
rm -f "$bad"

step "vm-small on vm (thunderbolt_net)"
rm -rf "$out"
set +e
"$odl" run "$here/scenarios/vm-small.yaml" --on vm --vm-driver tbnet --out "$out" 2>"$ODL_VM_DIR.run.err"
rc=$?
set -e
cat "$ODL_VM_DIR.run.err" >&2
[ $rc = 0 ] || fail "odl run --on vm exited with $rc"
# host-reset's down: 2ms at the default scale: B powered off for 2 s.
grep -q "odl: vm: VM B off for 2.000 s" "$ODL_VM_DIR.run.err" || fail "the reset did not keep B off for its down time"

step "report"
python3 - "$out/report.json" <<'PY' || fail "report.json check"
import json, sys
r = json.load(open(sys.argv[1]))
def need(cond, what):
    if not cond:
        sys.exit("report.json: " + what)
need(r["on"] == "vm" and r["passed"] is True, "on/passed")
st = {a["assertion"].split(" ")[0]: a["status"] for a in r["assertions"]}
need(st == {"ping.messages_lost": "PASS", "ping.p99_us": "PASS", "bulk.gbps": "PASS",
            "after.completed": "PASS", "slower.completed": "PASS", "reborn.completed": "PASS",
            "frames_damaged": "PASS", "link_down_noticed_us": "PASS"}, f"statuses {st}")
# A 2 MiB stream of 4 KiB frames at a bit error rate of 1e-6 (no FEC on TB4):
# about 3 % of frames damaged, as odl-linkd's cable counts them.
need(isinstance(r["frames_damaged"], int) and r["frames_damaged"] >= 1, f"frames_damaged {r['frames_damaged']}")
# The pull at 4 ms and the degrade at 12 ms took the link down: a guest's
# thunderbolt.ko acknowledged each unplug event.
ld = r["link_down_noticed_us"]
need(isinstance(ld, list) and len(ld) == 2 and all(0 < x < 2e6 for x in ld), f"link_down_noticed_us {ld}")
w = {x["name"]: x for x in r["workloads"]}
need(w["ping"]["messages_received"] == 5 and w["ping"]["one_way_us"]["p50"] > 0, "ping samples")
need(w["bulk"]["gbps"] > 0 and w["bulk"]["messages_lost"] is None, "bulk: gbps, loss not measured")
need(w["after"]["completed"] and w["after"]["messages_lost"] == 0, "ping after replug")
ev = r["events_applied"]
need(len(ev) == 7 and ev[6].startswith("host-reset host b at 16 ms as a power cycle of the VM, off for 2.0 s (wall t="),
     f"events applied {ev}")
# Bit errors are applied at their own (wall) time, whatever runs then; the
# others once the workload before them ended (the unplug at 4 ms after the
# noisy stream, before or after the bit errors stop at 7 ms).
need(len(ev) == 7 and ev[0].startswith("ber cable 0 at 2 ms (1e-06) (wall t=2.")
     and sorted(e.split(" (wall")[0] for e in ev[1:3]) == ["ber cable 0 at 7 ms (0)", "unplug cable 0 at 4 ms"]
     and any(e.startswith("ber cable 0 at 7 ms (0) (wall t=7.") for e in ev[1:3])
     and ev[4].startswith("degrade cable 0 at 12 ms to usb4-gen2 x1"), f"events applied {ev}")
need(ev[5].startswith("after the degrade cable 0") and "Linux reports 10.0 Gb/s per lane x 1 lanes" in ev[5],
     f"the link Linux saw after the degrade: {ev[5]}")
need(not any(s.startswith(("ber", "degrade", "host-reset")) for s in r["not_applied_on_vm"]),
     f"not applied {r['not_applied_on_vm']}")
need(r["kernel_logs_clean"] is True, "guest kernel logs")
print("report.json ok:", st)
PY
step "an asymmetric cable whose fast end is not the first host is refused (no VM started)"
sed 's/between: \[a, b\]/between: [b, a]/' "$here/scenarios/vm-asym.yaml" >"$ODL_VM_DIR.asym-ba.yaml"
set +e
msg=$("$odl" run "$ODL_VM_DIR.asym-ba.yaml" --on vm 2>&1)
rc=$?
set -e
rm -f "$ODL_VM_DIR.asym-ba.yaml"
[ $rc = 2 ] && grep -q "transmits on 3 lanes from A" <<<"$msg" || fail "asymmetric cable b->a: status $rc: $msg"

step "vm-asym on vm (odl_tb5): Linux 6.12 sees 3 lanes out of A and 1 back, traffic both ways"
set +e
"$odl" run "$here/scenarios/vm-asym.yaml" --on vm --out "$out.asym"
rc=$?
set -e
[ $rc = 0 ] || fail "odl run vm-asym exited with $rc: $(cat "$out.asym/report.txt" 2>/dev/null)"
python3 - "$out.asym/report.json" <<'PY' || fail "vm-asym report.json"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["passed"] and "3 lanes" in r["cable"], r["cable"]
assert r["link_seen_by_linux"] == "40.0 Gb/s per lane x 3 lanes", r["link_seen_by_linux"]
w = {x["name"]: x for x in r["workloads"]}
assert all(w[n]["completed"] for n in ("ping", "out", "back")), w
ap = r["events_applied"]
assert "host a: throttle 32 us (odl_tb5 module parameters: irq_throttle_us=32)" in ap, ap
assert "host b: completion poll (odl_tb5 module parameters: poll=1)" in ap, ap
print("vm-asym ok: Linux sees", r["link_seen_by_linux"], "from A; out %.3f Gb/s, back %.3f Gb/s" % (w["out"]["gbps"], w["back"]["gbps"]))
PY

step "testbed torn down"
if "$tb" status >/dev/null 2>&1; then fail "testbed still running after odl run"; fi
for f in "$ODL_VM_DIR"/*.pid; do [ -e "$f" ] && fail "pid file left: $f"; done
echo "PASS"
