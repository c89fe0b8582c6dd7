# SPDX-License-Identifier: MIT
# Shell helpers for scripts that drive the two-VM testbed with odl_tb5
# (tests/vm/kmod_test.sh, tests/vm/plugin_vm_test.sh,
# tests/bench/vm_kmod_vs_tbnet.sh). Source it after setting $tb to
# qemu-device/testbed.sh; it installs the EXIT trap that tears the testbed
# down, so every exit path stops the VMs and odl-linkd.

# What a failure needs to be understood even when the step's own message
# cannot tell: what each QEMU logged (a VM whose QEMU has ended: its console
# too), odl-linkd's last lines.
testbed_report() {
	local d=${ODL_VM_DIR:-${XDG_RUNTIME_DIR:-/tmp}/odl-vm-$(id -u)} v pid
	for v in A B C D; do
		pid=$(cat "$d/$v.qemu.pid" 2>/dev/null) || continue
		if kill -0 "$pid" 2>/dev/null; then
			# Alive, but its link to odl-linkd may have dropped.
			if [ -s "$d/$v.qemu.log" ]; then
				echo "--- VM $v: QEMU's log (last 5 lines)"
				tail -n 5 "$d/$v.qemu.log"
			fi
			continue
		fi
		echo "--- VM $v: QEMU (pid $pid) is not running; its log:"
		tail -n 20 "$d/$v.qemu.log" 2>/dev/null || true
		echo "--- VM $v: console (last 20 lines)"
		tail -n 20 "$d/$v.console.log" 2>/dev/null || true
	done
	echo "--- odl-linkd log (last 10 lines)"
	tail -n 10 "$d/linkd.log" 2>/dev/null || true
}
fail() {
	printf 'FAIL: %s\n' "$*"
	testbed_report
	exit 1
}
# A command that fails under set -e ends the script: say which, where.
# (Inherited by functions; command substitutions run without -e.)
set -E
trap '_odl_rc=$?; if [[ $- == *e* ]]; then printf "FAIL: %s line %s: exit %s: %s\n" "${BASH_SOURCE[0]##*/}" "$LINENO" "$_odl_rc" "$BASH_COMMAND"; testbed_report; fi' ERR
vexec() { "$tb" exec "$@"; }
# wait_in VM SECONDS CMD: until CMD succeeds in VM (bounded).
wait_in() {
	local v=$1 secs=$2 i
	shift 2
	for i in $(seq "$secs"); do
		vexec "$v" "$*" >/dev/null 2>&1 && return 0
		sleep 1
	done
	return 1
}
trap '"$tb" down >/dev/null 2>&1 || true' EXIT
export ODL_TESTBED_OWNER=$$  # a ctest timeout kills this shell alone: the testbed goes with it (testbed.sh)

# wait_login SECONDS WHEN: both VMs have a logged-in /dev/odl_tb5_0.
wait_login() {
	local secs=$1 when=$2 v
	for v in A B; do
		wait_in "$v" "$secs" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "INFO state 2"' ||
			fail "VM $v: no logged-in /dev/odl_tb5_0 within $secs s ($when)"
	done
}

# load_cable_out [MODULE_ARGS...]: odl_tb5 on both hosts with the cable
# out, then plug, as a host that loads the module at boot (docs/kmod.md).
load_cable_out() {
	"$tb" cable unplug || fail "unplug before load"
	wait_in A 30 '! test -e /sys/bus/thunderbolt/devices/0-1' || fail "A still sees the peer after unplug"
	vexec A "insmod /lib/modules/odl_tb5.ko $*" || fail "insmod A $*"
	vexec B "insmod /lib/modules/odl_tb5.ko $*" || fail "insmod B $*"
	"$tb" cable plug || fail "plug after load"
}

# tbnet_up: thunderbolt_net addresses 10.99.0.1 (A) and .2 (B), first ping.
tbnet_up() {
	vexec A 'ip addr add 10.99.0.1/24 dev thunderbolt0 && ip link set thunderbolt0 up' ||
		fail "VM A: cannot configure thunderbolt0"
	vexec B 'ip addr add 10.99.0.2/24 dev thunderbolt0 && ip link set thunderbolt0 up' ||
		fail "VM B: cannot configure thunderbolt0"
	# The first packets wait for thunderbolt_net's login; allow for it.
	wait_in A 60 'ping -c 1 -W 2 10.99.0.2' || fail "no ping reply over thunderbolt0 within 60 s"
}

# linkd_ctl CMD...: one command on odl-linkd's control socket (e.g. "fault
# add SPEC", "fault status"); prints the reply, fails unless it is "ok ...".
linkd_ctl() { "$tb" ctl "$@"; }

# kernel_log_clean VM [WHEN]: no BUG, WARNING, Oops, general protection
# fault, KASAN or UBSAN report in VM's kernel log.
kernel_log_clean() {
	local out
	out=$(vexec "$1" 'dmesg | grep -E "BUG|WARNING|Oops|general protection|KASAN|UBSAN|Call Trace"' || true)
	[ -z "$out" ] || fail "VM $1: kernel log not clean${2:+ ($2)}: $out"
}
