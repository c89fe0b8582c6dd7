#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Three hosts: three QEMU guests in a ring of modelled cables (A-B, B-C,
# C-A; odl-linkd --hosts 3 --topology ring), each running the unmodified
# thunderbolt.ko and thunderbolt_net. Every host must find both of its
# peers as XDomains on its two USB4 ports, each port must lead to the host
# the topology says, IP must cross each cable both ways, and pulling one
# cable must take down exactly that link (the other two keep working) until
# it is plugged in again. Then odl_tb5: two devices per host, each logged
# in with the peer its port leads to, and odl perf with checksums over every
# cable, all three at once. Last, a three-host scenario replayed with `odl
# run --on vm` (tests/vm/scenarios/vm-three.yaml): every workload on its
# cable, cable 1 pulled and plugged back, an all-reduce and an all-gather
# around the three guests through the NCCL plugin (odl-plugin-collective),
# its assertions. Refusals come
# first: a bad host count, a topology odl-linkd cannot build, and options
# that speak of one pair.
#
# Usage: three_host_test.sh [--kernel 6.12|6.1] [--odl PATH]
# Environment: ODL_LINKD (odl-linkd binary), ODL_VM_DIR (state/log dir).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
tb="$repo/qemu-device/testbed.sh"
kernel=6.12 odl=""
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--odl) odl=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-three-$$}
mkdir -p "$ODL_VM_DIR"
# shellcheck source=tests/vm/vm_lib.sh
. "$here/vm_lib.sh"
step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }

step "refused before anything boots"
out=$("$tb" up --hosts 5 2>&1) && fail "--hosts 5 accepted"
grep -q -- "--hosts must be 2, 3 or 4" <<<"$out" || fail "--hosts 5: unclear error: $out"
out=$("$tb" up --hosts 3 --gen gen4 --lanes 2 --asymmetric 2>&1) && fail "--asymmetric with 3 hosts accepted"
grep -q -- "--asymmetric needs 2 hosts" <<<"$out" || fail "--asymmetric: unclear error: $out"
out=$("$tb" up --hosts 3 --root 2>&1) && fail "--root with 3 hosts accepted"
grep -q -- "--root boots a HIL pair" <<<"$out" || fail "--root: unclear error: $out"
out=$("$tb" up --kernel "$kernel" --hosts 3 --topology 0-1,1-1 --timeout 60 2>&1) && fail "a self-loop cable accepted"
grep -q "joins host 1 to itself" <<<"$out" || fail "self-loop: unclear error: $out"
out=$("$tb" up --kernel "$kernel" --hosts 3 --topology 0-1,1-0 --timeout 60 2>&1) && fail "two cables between A and B accepted"
grep -q "both join hosts" <<<"$out" || fail "double cable: unclear error: $out"
for v in A B C; do
	[ ! -e "$ODL_VM_DIR/$v.qemu.pid" ] || fail "a refused up left VM $v behind"
done

step "boot three VMs ($kernel) in a ring, odl_tb5 and odl in the guests"
t0=$SECONDS
extra="$ODL_VM_DIR.extra"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" --hosts 3 --topology ring --timeout 300 ||
	fail "testbed did not come up"
echo "up in $((SECONDS - t0)) s"
out=$(linkd_ctl status) || fail "odl-linkd status: $out"
grep -q "^ok hosts 3 " <<<"$out" || fail "odl-linkd does not serve 3 hosts: $out"
# A guest this testbed does not have is an error, never another guest.
out=$("$tb" exec D 'echo ran' 2>&1) && fail "exec on D (3 hosts) ran: $out"
grep -q "unknown VM 'D' (have: A B C)" <<<"$out" || fail "exec on D: unclear error: $out"

# Which host sits behind each USB4 port (ring order: cable N takes the next
# free port of both its hosts; a host's ports are lane adapters 1 and 3).
declare -A peer_of=([A1]=B [A3]=C [B1]=A [B3]=C [C1]=B [C3]=A)
declare -A uid
step "each host finds both peers on the ports the ring says"
for v in A B C; do
	for p in 1 3; do
		wait_in "$v" 120 "test -e /sys/bus/thunderbolt/devices/0-$p" ||
			fail "VM $v: no XDomain on port $p within 120 s: $(vexec "$v" 'ls /sys/bus/thunderbolt/devices' 2>&1)"
	done
	uid[$v]=$(vexec "$v" 'cat /sys/bus/thunderbolt/devices/0-0/unique_id') || fail "VM $v: no host router UUID"
done
for v in A B C; do
	for p in 1 3; do
		got=$(vexec "$v" "cat /sys/bus/thunderbolt/devices/0-$p/unique_id") || fail "VM $v port $p: no unique_id"
		want=${uid[${peer_of[$v$p]}]}
		[ "$got" = "$want" ] || fail "VM $v port $p leads to $got, expected ${peer_of[$v$p]} ($want)"
		speed=$(vexec "$v" "cat /sys/bus/thunderbolt/devices/0-$p/rx_speed") || fail "VM $v port $p: no rx_speed"
		[ "$speed" = "20.0 Gb/s" ] || fail "VM $v port $p: rx_speed '$speed', expected 20.0 Gb/s (Gen3)"
	done
	echo "VM $v: port 1 -> ${peer_of[${v}1]}, port 3 -> ${peer_of[${v}3]}"
done

# net_up VM PORT ADDR: the thunderbolt_net interface of PORT's XDomain gets ADDR/24.
net_up() {
	local v=$1 p=$2 addr=$3 i
	for i in $(seq 60); do
		# One line: the guest's command channel takes one.
		vexec "$v" "for n in /sys/class/net/thunderbolt*; do case \$(readlink -f \$n/device) in */0-$p.0) d=\${n##*/}; ip addr flush dev \$d; ip addr add $addr/24 dev \$d && ip link set \$d up && exit 0 ;; esac; done; exit 1" \
			>/dev/null 2>&1 && return 0
		sleep 1
	done
	fail "VM $v: no thunderbolt_net interface for port $p within 60 s: $(vexec "$v" 'ls -l /sys/class/net/' 2>&1)"
}
# One subnet per cable: A-B 10.99.1.x, B-C 10.99.2.x, C-A 10.99.3.x.
nets_up() {
	net_up A 1 10.99.1.1
	net_up B 1 10.99.1.2
	net_up B 3 10.99.2.2
	net_up C 1 10.99.2.3
	net_up C 3 10.99.3.3
	net_up A 3 10.99.3.1
}
# ping_ok FROM ADDR WHAT: FROM reaches ADDR within 60 s.
ping_ok() { wait_in "$1" 60 "ping -c 1 -W 2 $2" || fail "VM $1 cannot reach $2 ($3)"; }

step "IP over each cable, both ways"
nets_up
ping_ok A 10.99.1.2 "A->B, cable 0"
ping_ok B 10.99.1.1 "B->A, cable 0"
ping_ok B 10.99.2.3 "B->C, cable 1"
ping_ok C 10.99.2.2 "C->B, cable 1"
ping_ok C 10.99.3.1 "C->A, cable 2"
ping_ok A 10.99.3.3 "A->C, cable 2"
for pair in "A 10.99.1.2" "B 10.99.2.3" "C 10.99.3.1"; do
	set -- $pair
	out=$(vexec "$1" "ping -c 20 -i 0.05 -W 2 $2") || fail "VM $1: 20 pings to $2: $out"
	grep -q " 0% packet loss" <<<"$out" || fail "VM $1: pings to $2 lost: $out"
done

step "pull cable 1 (B-C): only that link goes"
"$tb" cable 1 unplug
wait_in B 30 '! test -e /sys/bus/thunderbolt/devices/0-3' || fail "B still sees C after cable 1 was pulled"
wait_in C 30 '! test -e /sys/bus/thunderbolt/devices/0-1' || fail "C still sees B after cable 1 was pulled"
for v in A B C; do
	for p in 1 3; do
		[ "$v$p" = B3 ] || [ "$v$p" = C1 ] && continue
		vexec "$v" "test -e /sys/bus/thunderbolt/devices/0-$p" || fail "VM $v lost port $p when cable 1 was pulled"
	done
done
ping_ok A 10.99.1.2 "A->B with cable 1 out"
ping_ok C 10.99.3.1 "C->A with cable 1 out"
vexec B "ping -c 2 -W 1 10.99.2.3" >/dev/null 2>&1 && fail "B still reaches C with cable 1 out"
out=$(linkd_ctl nhi) || fail "odl-linkd nhi: $out"
grep -q "cable 1 (hosts 1-2): cable pulled" <<<"$out" || fail "odl-linkd does not show cable 1 pulled: $out"
out=$("$tb" cable 3 unplug 2>&1) && fail "a fourth cable accepted"
grep -q "no cable 3" <<<"$out" || fail "cable 3: unclear error: $out"

step "plug cable 1 back: B and C find each other again"
"$tb" cable 1 plug
wait_in B 120 'test -e /sys/bus/thunderbolt/devices/0-3' || fail "B did not find C again"
wait_in C 120 'test -e /sys/bus/thunderbolt/devices/0-1' || fail "C did not find B again"
net_up B 3 10.99.2.2
net_up C 1 10.99.2.3
ping_ok B 10.99.2.3 "B->C after the replug"
ping_ok A 10.99.1.2 "A->B after the replug"
ping_ok A 10.99.3.3 "A->C after the replug"

# dev_of VM PORT: the N of the odl_tb5 device whose service sits on PORT.
dev_of() {
	vexec "$1" "for d in /sys/class/odl_tb5/odl_tb5_*; do case \$(readlink -f \$d/device) in */0-$2/0-$2.*) echo \${d##*_}; exit 0 ;; esac; done; exit 1"
}
step "odl_tb5: two devices per host, each logged in with its port's peer"
for v in A B C; do vexec "$v" "insmod /lib/modules/odl_tb5.ko" || fail "insmod $v"; done
declare -A dev
for v in A B C; do
	for p in 1 3; do
		for i in $(seq 60); do
			dev[$v$p]=$(dev_of "$v" "$p" 2>/dev/null) && break
			sleep 1
		done
		[ -n "${dev[$v$p]:-}" ] || fail "VM $v: no odl_tb5 device on port $p: $(vexec "$v" 'ls -l /sys/class/odl_tb5/' 2>&1)"
		wait_in "$v" 60 "odl_tb5_ioctl /dev/odl_tb5_${dev[$v$p]} 0 | grep -q 'INFO state 2'" ||
			fail "VM $v: odl_tb5_${dev[$v$p]} (port $p) not logged in within 60 s"
	done
	[ "${dev[${v}1]}" != "${dev[${v}3]}" ] || fail "VM $v: both ports on one device"
	echo "VM $v: port 1 -> /dev/odl_tb5_${dev[${v}1]}, port 3 -> /dev/odl_tb5_${dev[${v}3]}"
done
# Each port's peer is the host behind it, and its device is listed under
# it (odl link --json: peers by XDomain, their name, their devices).
for v in A B C; do
	out=$(vexec "$v" "odl link --json") || fail "VM $v: odl link: $out"
	for p in 1 3; do
		got=$(python3 -c 'import json, sys
xd, dev = sys.argv[1], sys.argv[2]
for x in json.loads(sys.stdin.read())["peers"]:
    if x["xdomain"] == xd:
        print(x["peer"], dev in [d["device"] for d in x["devices"]])' "0-$p" "/dev/odl_tb5_${dev[$v$p]}" <<<"$out") ||
			fail "VM $v: odl link --json unreadable: $out"
		[ "$got" = "odl-${peer_of[$v$p]} True" ] ||
			fail "VM $v port $p: odl link says '$got', expected 'odl-${peer_of[$v$p]} True': $out"
	done
done

step "odl perf with checksums over every cable at once (B serves A, C serves B, A serves C)"
# perf_server VM DEV / perf_client VM DEV: one odl perf latency pair end.
for sc in "B ${dev[B1]}" "C ${dev[C1]}" "A ${dev[A3]}"; do
	set -- $sc
	vexec "$1" "(odl perf latency --backend kernel --server -d $2 --connect-timeout 120 >/tmp/perf-srv-$2.log 2>&1; echo rc=\$? >>/tmp/perf-srv-$2.log) &" ||
		fail "server on $1"
done
pids=()
for cc in "A ${dev[A1]} B" "B ${dev[B3]} C" "C ${dev[C3]} A"; do
	set -- $cc
	(ODL_VM_EXEC_TIMEOUT=300 vexec "$1" "odl perf latency --backend kernel --client $2 --connect-timeout 120 -s 4096 -n 200 --warmup 20 --checksum -q" \
		>"$ODL_VM_DIR/perf-$1-$3.log" 2>&1) &
	pids+=($!)
done
for i in 0 1 2; do
	wait "${pids[$i]}" || { cat "$ODL_VM_DIR"/perf-*.log; fail "odl perf client $i failed"; }
done
for f in "$ODL_VM_DIR"/perf-*.log; do echo "${f##*/}: $(tail -n 1 "$f")"; done
for sc in "B ${dev[B1]}" "C ${dev[C1]}" "A ${dev[A3]}"; do
	set -- $sc
	wait_in "$1" 30 "grep -q '^rc=0' /tmp/perf-srv-$2.log" ||
		fail "server on $1 did not finish cleanly: $(vexec "$1" "cat /tmp/perf-srv-$2.log")"
done

step "clean kernel logs, all three"
for v in A B C; do kernel_log_clean "$v"; done
"$tb" down >/dev/null

if [ -n "$odl" ]; then
	step "a three-host scenario with odl run --on vm"
	out="$ODL_VM_DIR.run"
	rm -rf "$out"
	set +e
	# --vm-time-scale 200 (a simulated ms is 0.2 s, as for the shipped
	# scenarios): the workloads run one after another whatever the scale and
	# the events wait for a running one, so only the idle gaps shrink.
	ODL_VM_DIR="$out/vm" "$odl" run "$here/scenarios/vm-three.yaml" --on vm --vm-kernel "$kernel" --vm-time-scale 200 --out "$out" \
		>"$out.txt" 2>&1
	rc=$?
	set -e
	cat "$out.txt"
	[ $rc = 0 ] || fail "odl run vm-three.yaml --on vm exited with $rc"
	python3 - "$out/report.json" <<'PY' || fail "report.json of vm-three"
import json, sys
r = json.load(open(sys.argv[1]))
def need(cond, what):
    if not cond:
        sys.exit("report.json: " + what)
need(r["on"] == "vm" and r["passed"] is True, "on/passed")
st = [a["status"] for a in r["assertions"]]
need(st == ["PASS"] * 8, f"assertions {st}")
how = {w["name"]: w["measured_with"] for w in r["workloads"]}
for name, path in (("ab", "(A -> B, odl_tb5)"), ("bc", "(B -> C, odl_tb5)"), ("ca", "(C -> A, odl_tb5)"),
                   ("ab-cable1-out", "(A -> B, odl_tb5)"), ("bc-back", "(C -> B, odl_tb5)")):
    need(path in how[name], f"workload {name} ran as {how[name]}")
# The collectives: odl-plugin-collective ranks around the workload's hosts in
# its order, every result checked on every rank.
for name, op, ring in (("ring-sum", "all_reduce", "A -> B -> C -> A"), ("ring-gather", "all_gather", "C -> B -> A -> C")):
    w = next(x for x in r["workloads"] if x["name"] == name)
    need(w["run"] and w["completed"] and w["messages_lost"] == 0, f"collective {name}: {w}")
    need(f"ring {op} " in w["measured_with"] and ring in w["measured_with"] and "over 3 ranks" in w["measured_with"],
         f"collective {name} ran as {w['measured_with']}")
    need(w["time_us"] > 0 and w["busbw_gbps"] > 0, f"collective {name}: time/busbw {w}")
ev = r["events_applied"]
need(len(ev) == 2 and ev[0].startswith("unplug cable 1 at 12 ms") and ev[1].startswith("plug cable 1 at 20 ms"),
     f"events applied {ev}")
need(r["kernel_logs_clean"] is True, "guest kernel logs")
print("report.json ok:", how)
PY
fi
echo "PASS: three hosts in a ring ($kernel), $((SECONDS - t0)) s"
