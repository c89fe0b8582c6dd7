#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl hil and odl run --on <inventory> without any host: bad inventories,
# hosts that refuse the connection (loopback ports nobody listens on: the
# real OpenSSH client runs and its failure is named), scenarios a pair
# cannot run, a packages folder without packages. Every case is bounded.
# Usage: hil_cli_test.sh ODL_BINARY REPO
set -euo pipefail
odl=${1:?usage: hil_cli_test.sh ODL_BINARY REPO}
repo=${2:?}
fail() { echo "FAIL: $*" >&2; exit 1; }
. "$repo/tests/hil/ssh_left.sh"
command -v ssh >/dev/null || fail "the OpenSSH client is not installed (./odl installs it)"
tmp=$(mktemp -d /tmp/odl-hil-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
ssh-keygen -q -t ed25519 -N '' -f "$tmp/key"
: >"$tmp/known_hosts"

# Two loopback ports with nothing behind them (bound, then closed).
ports=$(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(" ".join(str(x.getsockname()[1]) for x in s))')
set -- $ports
cat >"$tmp/inv.yaml" <<YAML
inventory: 1
ssh: {user: root, key: key, known_hosts: known_hosts, connect_timeout: 5}
pairs:
  - name: nobody
    profile: testbed-vm
    expect: gen3x2
    hosts:
      a: {destination: 127.0.0.1, port: $1}
      b: {destination: 127.0.0.1, port: $2}
YAML

run() {
	set +e
	timeout 120 "$odl" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	out=$(cat "$tmp/out")
	err=$(cat "$tmp/err")
}

run hil check "$tmp/inv.yaml"
[ "$rc" = 40 ] || fail "closed ports: exit $rc, want 40: $err"
grep -q "host a (root@127.0.0.1 port $1): not reachable over SSH: connection refused" <<<"$err" ||
	fail "closed ports: not named: $err"
grep -q "reach        FAIL connection refused" <<<"$out" || fail "closed ports: table: $out"
echo "ok: check, nobody listening: $err"

run hil check "$tmp/inv.yaml" --json
python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["exit_code"]==40 and not j["hosts"][1]["reachable"], j' <<<"$out" ||
	fail "check --json: $out"
echo "ok: check --json"

printf 'inventory: 1\npairs:\n  - name: x\n    hosts: [\n' >"$tmp/bad.yaml"
run hil check "$tmp/bad.yaml"
[ "$rc" = 2 ] && grep -q "bad.yaml:[0-9]*: expected valid YAML" <<<"$err" || fail "bad YAML: exit $rc: $err"
sed 's/port: /prot: /' "$tmp/inv.yaml" >"$tmp/typo.yaml"
run hil deploy "$tmp/typo.yaml" --debs "$tmp"
[ "$rc" = 2 ] && grep -q "typo.yaml:8: unknown key 'prot'" <<<"$err" || fail "typo: exit $rc: $err"
echo "ok: bad inventories: $err"

mkdir "$tmp/empty"
run hil deploy "$tmp/inv.yaml" --debs "$tmp/empty"
[ "$rc" = 2 ] && grep -q "has no odl package" <<<"$err" || fail "no packages: exit $rc: $err"
echo "ok: deploy without packages: $err"
# The runtime without any module package: refused before any host is reached.
mkdir "$tmp/runtime-only"
: >"$tmp/runtime-only/odl_0.1.0_amd64.deb"
run hil deploy "$tmp/inv.yaml" --debs "$tmp/runtime-only"
[ "$rc" = 2 ] && grep -q "has no odl-tb5-dkms or odl-tb5-modules-KVER package" <<<"$err" ||
	fail "no module package: exit $rc: $err"
# A module package built for some kernel is one: deploy goes on to reach the
# hosts (nobody listens: exit 40), and says which kernel a host lacks later.
: >"$tmp/runtime-only/odl-tb5-modules-6.12.0-x_0.1.0_amd64.deb"
run hil deploy "$tmp/inv.yaml" --debs "$tmp/runtime-only"
[ "$rc" = 40 ] && grep -q "host a (root@127.0.0.1 port $1): not reachable" <<<"$err" ||
	fail "module package for one kernel: exit $rc: $err"
echo "ok: deploy wants DKMS's package or one built for a kernel"
# odl package (what deploy installs): a jobs count that is no count, and a
# folder that cannot be made, refused before the build (which takes minutes).
run package -j 0
[ "$rc" != 0 ] && grep -q -- "--jobs: Value 0 not in range 1 to 4096" <<<"$err" || fail "package -j 0: exit $rc: $err"
run package --out /etc/passwd/debs
[ "$rc" = 2 ] && grep -q "cannot create /etc/passwd/debs" <<<"$err" && ! grep -q "cmake" <<<"$err" ||
	fail "package into /etc/passwd/debs: exit $rc: $err"
# --kernel: a release that is none, and one without headers here.
run package --kernel '6.1 bad'
[ "$rc" = 2 ] && grep -q -- "--kernel '6.1 bad': not a kernel release" <<<"$err" && ! grep -q "cmake" <<<"$err" ||
	fail "package --kernel '6.1 bad': exit $rc: $err"
run package --kernel 0.0.1-odl-none
[ "$rc" = 2 ] && grep -q -- "--kernel 0.0.1-odl-none: no headers for it here (install linux-headers-0.0.1-odl-none)" <<<"$err" &&
	! grep -q "cmake" <<<"$err" || fail "package --kernel without headers: exit $rc: $err"
# Signing: key and certificate together, for --kernel's modules, readable.
run package --sign-key "$tmp/inv.yaml"
[ "$rc" = 2 ] && grep -q -- "--sign-key and --sign-cert go together" <<<"$err" || fail "package --sign-key alone: exit $rc: $err"
run package --sign-key "$tmp/inv.yaml" --sign-cert "$tmp/inv.yaml"
[ "$rc" = 2 ] && grep -q -- "--sign-key signs the modules of --kernel" <<<"$err" || fail "package --sign-key without --kernel: exit $rc: $err"
k=$(ls /usr/src | sed -n 's/^linux-headers-\([0-9].*-amd64\)$/\1/p' | head -n1)
if [ -n "$k" ]; then
	run package --kernel "$k" --sign-key "$tmp/nope.pem" --sign-cert "$tmp/inv.yaml"
	[ "$rc" = 2 ] && grep -q "$tmp/nope.pem: cannot read it" <<<"$err" && ! grep -q "cmake" <<<"$err" ||
		fail "package --sign-key missing: exit $rc: $err"
fi
echo "ok: odl package refuses a bad job count, folder, kernel and signing pair up front"

run run "$repo/scenarios/quickstart.yaml" --on "$tmp/nope.yaml"
[ "$rc" = 2 ] && grep -q "expected model, vm or a HIL inventory file" <<<"$err" || fail "--on missing file: exit $rc: $err"
run run "$repo/scenarios/four-host-ring-allreduce.yaml" --on "$tmp/inv.yaml"
[ "$rc" = 2 ] && grep -q "has 4 hosts; a HIL pair has two" <<<"$err" || fail "4 hosts: exit $rc: $err"
run run "$repo/scenarios/quickstart.yaml" --on model --pair x
[ "$rc" = 2 ] && grep -q -- "--pair is for --on <inventory.yaml>" <<<"$err" || fail "--pair on model: exit $rc: $err"
echo "ok: scenarios a pair cannot run"

run hil run "$repo/scenarios/quickstart.yaml" "$tmp/inv.yaml" --out "$tmp/results"
[ "$rc" = 3 ] || fail "run, nobody listening: exit $rc, want 3: $err"
grep -q "error: host a (root@127.0.0.1 port $1): not reachable over SSH: connection refused" <<<"$out" ||
	fail "run: host not named: $out"
python3 - "$tmp/results" <<'PY' || fail "run: report"
import json, sys, xml.etree.ElementTree as ET
r = json.load(open(sys.argv[1] + "/report.json"))
assert not r["passed"] and "connection refused" in r["error"], r
assert all(a["status"] == "NOT EVALUATED" for a in r["assertions"]), r["assertions"]
suite = ET.parse(sys.argv[1] + "/junit.xml").getroot().find("testsuite")
assert int(suite.get("failures")) >= 1, suite.attrib
PY
echo "ok: run with the hosts unreachable: exit 3, report and junit.xml say why"
# Time scales: finite numbers from 0 to 100000, refused before any host is
# reached (nan started every workload at once, inf waited forever).
for bad in "hil run $repo/scenarios/quickstart.yaml $tmp/inv.yaml --time-scale nan" \
	"hil calibrate $repo/scenarios/quickstart.yaml $tmp/inv.yaml --out $tmp/cal --time-scale inf" \
	"run $repo/scenarios/quickstart.yaml --on $tmp/inv.yaml --vm-time-scale -1"; do
	# shellcheck disable=SC2086 # words on purpose
	run $bad
	[ "$rc" != 0 ] && grep -q "is not a number from 0 to 100000" <<<"$err" || fail "odl $bad: exit $rc: $err"
done
echo "ok: time scales that are not finite numbers in range are refused"
# Tolerances likewise: CLI::Range let nan through ("±nan%", exit 1).
run hil compare "$repo/scenarios/quickstart.yaml" "$tmp/inv.yaml" --results "$tmp" --tolerance-latency nan
[ "$rc" != 0 ] && grep -q "'nan' is not a number from 0 to 1000" <<<"$err" ||
	fail "hil compare --tolerance-latency nan: exit $rc: $err"
echo "ok: a tolerance of nan is refused"
# hil run's two words swapped (or a wrong path): the inventory is named as
# check and deploy name it, not as a value of odl run's --on.
run hil run "$tmp/inv.yaml" "$repo/scenarios/quickstart"
[ "$rc" = 2 ] && grep -q "odl: hil: $repo/scenarios/quickstart: cannot read the file" <<<"$err" &&
	! grep -q -- "--on" <<<"$err" || fail "hil run with no inventory there: exit $rc: $err"
echo "ok: hil run names a missing inventory"
run run "$repo/scenarios/quickstart.yaml" --on model --seed -5 --out "$tmp/neg-seed"
[ "$rc" != 0 ] && grep -q "'-5' is not a whole number below 10^18" <<<"$err" || fail "run --seed -5: exit $rc: $err"
echo "ok: a negative seed is refused (it was taken as no seed)"
left=$(odl_ssh_left)
[ -z "$left" ] || fail "SSH processes left running: $left"
echo "PASS"
