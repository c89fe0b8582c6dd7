#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Two-VM test: the unmodified Linux thunderbolt.ko + thunderbolt_net in two
# QEMU guests joined by the modelled cable. Boot, NHI probe, XDomain
# discovery, thunderbolt0, ping both ways, iperf3 both ways, cable unplug and
# replug, a killed QEMU seen as an unplug by the peer, the command channel
# after an exec that timed out, a testbed whose owner was killed taken
# down by its watchdog, and clean kernel logs.
# Every check fails the test; nothing is skipped.
#
# Usage: two_vm_test.sh [--kernel 6.12|6.1] [--gen gen3|gen4] [--quick] [--nhi-impl model|rtl|lockstep]
#   --gen: the modelled cable, 2 lanes (default gen3: USB4 v1 Gen3 x2, 40 Gb/s)
#   --quick: boot, discovery, link speed and ping only
#   --nhi-impl: the NHIs' interrupt unit in odl-linkd (docs/rtl.md; checked)
# Environment: ODL_LINKD (odl-linkd binary), ODL_VM_DIR (state/log dir).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=qemu-device/pid_lib.sh
. "$here/../../qemu-device/pid_lib.sh"
tb="$here/../../qemu-device/testbed.sh"
export ODL_TESTBED_OWNER=$$  # a ctest timeout kills this shell alone: the testbed goes with it (testbed.sh)
kernel=6.12 gen=gen3 quick=0 impl=model
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--gen) gen=$2; shift 2 ;;
	--quick) quick=1; shift ;;
	--nhi-impl) impl=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
# What Linux must report per lane for the modelled cable (sysfs rx/tx_speed
# is per lane): Gen3 20 Gb/s x 2 = 40 Gb/s; Gen4 40 Gb/s x 2 = 80 Gb/s, which
# only 6.12 decodes (6.1 falls back to 10 Gb/s).
case "$gen-$kernel" in
gen3-*) want_speed="20.0 Gb/s" ;;
gen4-6.12) want_speed="40.0 Gb/s" ;;
*) echo "no expectation for $gen on $kernel" >&2; exit 2 ;;
esac
case "$impl" in model | rtl | lockstep) ;; *) echo "--nhi-impl model|rtl|lockstep" >&2; exit 2 ;; esac
export ODL_LINKD_ARGS="${ODL_LINKD_ARGS:-} --nhi-impl $impl"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-test-$$}
results="$ODL_VM_DIR/results-$kernel-$gen.txt"

step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
fail() {
	printf 'FAIL: %s\n' "$*"
	for v in A B; do
		echo "--- $v console (last 40 lines)"
		tail -n 40 "$ODL_VM_DIR/$v.console.log" 2>/dev/null || true
	done
	echo "--- odl-linkd log"
	tail -n 20 "$ODL_VM_DIR/linkd.log" 2>/dev/null || true
	exit 1
}
vexec() { "$tb" exec "$@"; }
record() { echo "$1" | tee -a "$results"; }

# Polls @cmd in VM @vm until it succeeds, at most @secs seconds.
wait_in() {
	local vm=$1 secs=$2 cmd=$3 i
	for i in $(seq "$secs"); do
		vexec "$vm" "$cmd" >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}

cleanup() { "$tb" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
mkdir -p "$ODL_VM_DIR"
: >"$results"

step "prebuilt parts: bad ODL_QEMU / ODL_GUEST_IMAGE refused before anything starts"
mkdir -p "$ODL_VM_DIR/empty-image"
out=$(ODL_QEMU=/nonexistent/qemu "$tb" up --kernel "$kernel" 2>&1) && fail "ODL_QEMU=/nonexistent/qemu accepted"
grep -q "ODL_QEMU=/nonexistent/qemu is not an executable" <<<"$out" || fail "ODL_QEMU: unclear error: $out"
out=$(ODL_GUEST_IMAGE="$ODL_VM_DIR/empty-image" "$tb" up --kernel "$kernel" 2>&1) && fail "empty ODL_GUEST_IMAGE accepted"
grep -q "has no vmlinuz" <<<"$out" || fail "ODL_GUEST_IMAGE: unclear error: $out"
[ ! -e "$ODL_VM_DIR/linkd.pid" ] || fail "a refused up left odl-linkd behind"

if [ "$quick" = 0 ] && [ "$kernel" = 6.12 ]; then
	step "a testbed whose owner is killed (as ctest kills a test at its timeout) is taken down by its watchdog"
	sleep 300 &
	owner=$!
	set +e
	ODL_TESTBED_OWNER=$owner "$tb" up --kernel "$kernel" --gen "$gen" --lanes 2 --timeout 240 >"$ODL_VM_DIR/owned-up.log" 2>&1
	up_rc=$?
	set -e
	pids=$(cat "$ODL_VM_DIR/A.qemu.pid" "$ODL_VM_DIR/B.qemu.pid" "$ODL_VM_DIR/linkd.pid" 2>/dev/null || true)
	kill -KILL "$owner"
	wait "$owner" 2>/dev/null || true
	[ "$up_rc" = 0 ] || fail "testbed with an owner did not come up: $(tail -n 5 "$ODL_VM_DIR/owned-up.log")"
	[ "$(wc -w <<<"$pids")" = 3 ] || fail "no pids of the owned testbed: $pids"
	t0=$SECONDS
	for _ in $(seq 150); do
		left=
		for p in $pids; do pid_runs "$p" && left="$left $p"; done
		[ -z "$left" ] && break
		sleep 0.1
	done
	[ -z "$left" ] || fail "15 s after its owner was killed, the testbed still runs:$left"
	grep -q "owner $owner gone" "$ODL_VM_DIR/watchdog.log" || fail "the watchdog left no line"
	[ ! -e "$ODL_VM_DIR/watchdog.pid" ] || fail "watchdog.pid left behind"
	record "owner_killed_testbed_down_s=$((SECONDS - t0))"
	rm -f "$ODL_VM_DIR/watchdog.log"
fi

step "boot two VMs ($kernel)"
t0=$SECONDS
"$tb" up --kernel "$kernel" --gen "$gen" --lanes 2 --timeout 240 || fail "testbed did not come up"
# (Read whole, then matched: grep -q on a pipe may close it under the writer.)
nhi=$("$tb" ctl nhi) || fail "odl-linkd's nhi command"
for h in 0 1; do
	grep -q "^host $h interrupt unit $impl: " <<<"$nhi" || fail "host $h does not run interrupt unit $impl: $nhi"
done
record "kernel=$kernel cable=${gen}x2 boot_to_ready_s=$((SECONDS - t0))"

step "NHI on the PCI bus, thunderbolt.ko bound"
for v in A B; do
	vexec "$v" 'grep -l 0x0c0340 /sys/bus/pci/devices/*/class' >/dev/null ||
		fail "VM $v: no device of class 0x0c0340"
	vexec "$v" 'ls /sys/bus/pci/drivers/thunderbolt/ | grep -q "^0000:"' ||
		fail "VM $v: thunderbolt.ko did not bind to the NHI"
done

step "XDomain discovery and thunderbolt0"
t0=$SECONDS
for v in A B; do
	peer=$([ $v = A ] && echo B || echo A)
	wait_in "$v" 90 "grep -qx odl-$peer /sys/bus/thunderbolt/devices/0-1/device_name" ||
		fail "VM $v: peer host odl-$peer not discovered as XDomain 0-1"
	wait_in "$v" 60 'ip link show thunderbolt0' || fail "VM $v: no thunderbolt0"
done
record "xdomain_and_thunderbolt0_s=$((SECONDS - t0))"
for v in A B; do
	speed=$(vexec "$v" 'cd /sys/bus/thunderbolt/devices/0-1 && echo "rx_speed=$(cat rx_speed) rx_lanes=$(cat rx_lanes) tx_speed=$(cat tx_speed) tx_lanes=$(cat tx_lanes)"') ||
		fail "VM $v: no link speed/lanes in sysfs"
	record "vm=$v $speed"
	[ "$speed" = "rx_speed=$want_speed rx_lanes=2 tx_speed=$want_speed tx_lanes=2" ] ||
		fail "VM $v: link reported as '$speed', want $want_speed x 2 lanes each way"
done

net_up() {
	vexec A 'ip addr add 10.99.0.1/24 dev thunderbolt0 && ip link set thunderbolt0 up' ||
		fail "VM A: cannot configure thunderbolt0"
	vexec B 'ip addr add 10.99.0.2/24 dev thunderbolt0 && ip link set thunderbolt0 up' ||
		fail "VM B: cannot configure thunderbolt0"
	# The first packets wait for thunderbolt_net's login; allow for it.
	wait_in A 60 'ping -c 1 -W 2 10.99.0.2' || fail "no ping reply A -> B within 60 s"
}

step "ping both ways"
net_up
# The modelled link is lossless: every echo must come back.
out=$(vexec A 'ping -c 5 -W 3 10.99.0.2') || fail "ping A -> B failed: $out"
grep -q ' 0% packet loss' <<<"$out" || fail "ping A -> B lost packets: $out"
record "ping_a_to_b $(echo "$out" | grep round-trip)"
out=$(vexec B 'ping -c 5 -W 3 10.99.0.1') || fail "ping B -> A failed: $out"
grep -q ' 0% packet loss' <<<"$out" || fail "ping B -> A lost packets: $out"
record "ping_b_to_a $(echo "$out" | grep round-trip)"
step "command channel: a command that outlives its exec does not answer the next one"
rc=0
out=$(ODL_VM_EXEC_TIMEOUT=1 vexec A 'sleep 3; echo stale; exit 7' 2>&1) || rc=$?
[ "$rc" != 0 ] && grep -q "timed out" <<<"$out" || fail "a 3 s command within a 1 s exec bound: exit $rc: $out"
rc=0
out=$(vexec A 'echo fresh; exit 3') || rc=$?
[ "$rc" = 3 ] && [ "$out" = fresh ] ||
	fail "the exec after a timed-out one got another answer: exit $rc: $out"
step "command channel: an orphan that ends while a command line arrives costs the line nothing"
# busybox timeout leaves one (its watcher) after every command; here a
# background sleep ends between the two halves of the next line, which the
# agent reads byte by byte: the whole line must run under its own id.
vexec A '(sleep 1) </dev/null >/dev/null 2>&1 &'
out=$(python3 - "$ODL_VM_DIR/A.ctl" <<'PY'
import re, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"half.1 echo ")
time.sleep(3)
s.sendall(b"whole\n")
buf, deadline = b"", time.monotonic() + 20
while not re.search(rb"@@ODL-DONE \S* \d+@@\n", buf):
    left = deadline - time.monotonic()
    if left <= 0:
        break
    s.settimeout(left)
    try:
        chunk = s.recv(4096)
    except socket.timeout:
        break
    if not chunk:
        break
    buf += chunk
sys.stdout.write(buf.decode(errors="replace"))
PY
)
[ "$out" = $'whole\n@@ODL-DONE half.1 0@@' ] ||
	fail "a line split around an orphan's end was not run whole under its id: $out"

if [ "$quick" = 1 ]; then
	for v in A B; do
		if vexec "$v" 'dmesg | grep -E "WARNING:|BUG[: ]|Oops|Call Trace"'; then
			fail "VM $v: kernel warning in dmesg"
		fi
	done
	step "PASS ($kernel, $gen, quick)"
	cat "$results"
	exit 0
fi

iperf() {
	local client=$1 server=$2 addr=$3 out mbps
	vexec "$server" 'iperf3 -s -D -1 >/dev/null 2>&1' || fail "VM $server: iperf3 -s failed"
	sleep 1
	out=$(ODL_VM_EXEC_TIMEOUT=60 vexec "$client" "iperf3 -c $addr -t 3 -f m") ||
		fail "iperf3 $client -> $server failed: $out"
	mbps=$(echo "$out" | awk '/receiver/ { print $(NF-2) }')
	[ -n "$mbps" ] || fail "iperf3 $client -> $server: no receiver line"
	awk -v m="$mbps" 'BEGIN { exit !(m > 0) }' || fail "iperf3 $client -> $server: 0 Mbit/s"
	record "iperf3_${client}_to_${server}_mbps=$mbps"
}
step "iperf3 both ways"
iperf A B 10.99.0.2
iperf B A 10.99.0.1

step "cable unplug"
"$tb" cable unplug || fail "cable unplug refused"
for v in A B; do
	wait_in "$v" 30 '! test -e /sys/bus/thunderbolt/devices/0-1' ||
		fail "VM $v: XDomain still present 30 s after unplug"
	wait_in "$v" 30 '! ip link show thunderbolt0' ||
		fail "VM $v: thunderbolt0 still present 30 s after unplug"
done

step "cable replug, traffic resumes"
t0=$SECONDS
"$tb" cable plug || fail "cable plug refused"
for v in A B; do
	wait_in "$v" 90 'test -e /sys/bus/thunderbolt/devices/0-1 && ip link show thunderbolt0' ||
		fail "VM $v: no rediscovery within 90 s of replug"
done
net_up
record "replug_to_ping_s=$((SECONDS - t0))"

step "malformed cable events refused with the reason, the link left alone"
for bad in "degrade gen9 1:unknown generation 'gen9'" "degrade gen3 3:not 3" "ber 1:from 0 to 1e-3" \
	"ber x:from 0 to 1e-3" "retrain now:usage: cable" "degrade:usage: cable"; do
	# shellcheck disable=SC2086 # the event's words
	if msg=$("$tb" cable ${bad%%:*} 2>&1); then fail "cable ${bad%%:*} accepted: $msg"; fi
	grep -qF "${bad#*:}" <<<"$msg" || fail "cable ${bad%%:*}: no reason given: $msg"
done
vexec A 'ping -c 1 -W 5 10.99.0.2 >/dev/null' || fail "the link went down after refused cable events"

step "clean kernel logs"
for v in A B; do
	if vexec "$v" 'dmesg | grep -E "WARNING:|BUG[: ]|Oops|Call Trace"'; then
		fail "VM $v: kernel warning in dmesg"
	fi
done


step "killed QEMU A: linkd and VM B survive, B sees an unplug"
"$tb" kill A
wait_in B 30 '! test -e /sys/bus/thunderbolt/devices/0-1' ||
	fail "VM B: XDomain still present 30 s after QEMU A died"
"$tb" status >/dev/null 2>&1 && fail "status reports A running after kill"
vexec B 'true' || fail "VM B unresponsive after QEMU A died"
pidfile_runs "$ODL_VM_DIR/linkd.pid" || fail "odl-linkd died with QEMU A"
if vexec B 'dmesg | grep -E "WARNING:|BUG[: ]|Oops|Call Trace"'; then
	fail "VM B: kernel warning after the peer died"
fi
if grep -E "WARNING:|BUG[: ]|Oops|Call Trace" "$ODL_VM_DIR/A.console.log"; then
	fail "VM A: kernel warning on the console"
fi

step "guest garbage in BAR0 (driver unbound, bus mastering off) spares linkd and QEMU"
bdf=$(vexec B 'basename $(dirname $(grep -l 0x0c0340 /sys/bus/pci/devices/*/class))') ||
	fail "VM B: NHI not found"
vexec B "echo $bdf > /sys/bus/pci/drivers/thunderbolt/unbind" || fail "VM B: unbind failed"
# Memory space on, bus master off: the model's DMA must fail cleanly.
vexec B "printf '\\002\\000' | dd of=/sys/bus/pci/devices/$bdf/config bs=1 seek=4 conv=notrunc 2>/dev/null" ||
	fail "VM B: cannot write the PCI command register"
vexec B "bar=\$(head -n1 /sys/bus/pci/devices/$bdf/resource | cut -d' ' -f1); i=0; x=12345; \
while [ \$i -lt 300 ]; do x=\$(( (x * 1103515245 + 12345) & 0x7fffffff )); \
devmem \$(( bar + (x % 65536) * 4 )) 32 \$(( x ^ 0x5a5a5a5a )) 2>/dev/null; \
devmem \$(( bar + ((x >> 3) % 65536) * 4 )) 32 >/dev/null 2>&1; i=\$((i + 1)); done" || fail "VM B: BAR0 garbage loop failed"
vexec B 'true' || fail "VM B unresponsive after BAR0 garbage"
pidfile_runs "$ODL_VM_DIR/linkd.pid" || fail "odl-linkd died from BAR0 garbage"
pidfile_runs "$ODL_VM_DIR/B.qemu.pid" || fail "QEMU B died from BAR0 garbage"

cpu=$(awk '{ printf "%.1f", ($14 + $15) / 100 }' "/proc/$(cat "$ODL_VM_DIR/linkd.pid")/stat")
record "linkd_cpu_s=$cpu test_wall_s=$SECONDS"

step "odl-linkd killed: QEMU B reports the link down, guest B keeps running"
kill -KILL "$(cat "$ODL_VM_DIR/linkd.pid")"
sleep 2
vexec B 'cat /proc/uptime' >/dev/null || fail "VM B unresponsive after odl-linkd died"
vexec B 'cat /sys/bus/pci/devices/*/class' >/dev/null || fail "VM B cannot read PCI sysfs"
pidfile_runs "$ODL_VM_DIR/B.qemu.pid" || fail "QEMU B died with odl-linkd"
grep -q "link to odl-linkd down" "$ODL_VM_DIR/B.qemu.log" ||
	fail "QEMU B did not report the link down"
step "PASS ($kernel, $gen)"
cat "$results"
