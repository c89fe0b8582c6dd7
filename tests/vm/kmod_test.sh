#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# odl_tb5.ko across the two-VM testbed: bad module parameter, login on both
# hosts, coexistence with thunderbolt_net, the bad-ioctl table and a bounded
# randomized ioctl stress, odl perf latency/bandwidth with checksums both
# ways, peer module reload, cable unplug mid-transfer and replug, and clean
# kernel logs. Every wait is bounded; the testbed is always torn down.
#
# Usage: kmod_test.sh [--kernel 6.12|6.1]
# Environment: ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR (odl binary, libodl)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12
[ "${1:-}" = --kernel ] && kernel=$2
tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-kmod-$kernel}
extra="$ODL_VM_DIR.extra"

step() { printf '== %s\n' "$*"; }
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }
vexec() { "$tb" exec "$@"; }
# wait_in VM SECONDS CMD: until CMD succeeds in VM.
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

step "build odl_tb5.ko ($kernel) and guest extras"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
step "testbed up"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" || fail "testbed up"

step "module parameter validation"
if vexec A 'insmod /lib/modules/odl_tb5.ko ring_size=100'; then
	fail "ring_size=100 was accepted"
fi
step "load on both hosts (cable out), plug, login"
# Modules first, cable second, as on a host that loads odl_tb5 at boot. A
# module loaded in the moment between the peer discovering us and us
# discovering the peer is never announced to that peer (a known race,
# docs/kmod.md); the reload step below covers loading after discovery.
"$tb" cable unplug || fail "unplug before load"
wait_in A 30 '! test -e /sys/bus/thunderbolt/devices/0-1' || fail "A still sees the peer after unplug"
vexec A 'insmod /lib/modules/odl_tb5.ko' || fail "insmod A"
vexec B 'insmod /lib/modules/odl_tb5.ko' || fail "insmod B"
"$tb" cable plug || fail "plug after load"
for v in A B; do
	wait_in "$v" 60 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "INFO state 2"' ||
		fail "VM $v: no logged-in /dev/odl_tb5_0 within 60 s"
done
vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "INFO state"'
step "coexistence: thunderbolt_net still bound"
wait_in A 60 'ip link show thunderbolt0 >/dev/null' || fail "thunderbolt0 missing with odl_tb5 loaded"

step "bad ioctl table and randomized stress (A)"
vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 20000' || fail "ioctl table"

perf_pair() { # perf_pair SERVER CLIENT TEST ARGS...
	local s=$1 c=$2 t=$3 out
	shift 3
	# TCG guests on a loaded 2-core host: give the rendezvous a minute.
	vexec "$s" "(odl perf $t --backend kernel --server -d 0 --connect-timeout 60 $* >/tmp/perf-srv.log 2>&1; echo rc=\$? >>/tmp/perf-srv.log) &" ||
		fail "server $s"
	sleep 1
	out=$(ODL_VM_EXEC_TIMEOUT=300 vexec "$c" "odl perf $t --backend kernel --client 0 --connect-timeout 60 -q $*") ||
		fail "odl perf $t $c -> $s: $out"
	echo "$out"
	wait_in "$s" 30 'grep -q "^rc=0" /tmp/perf-srv.log' || fail "server $s did not finish cleanly: $(vexec "$s" 'cat /tmp/perf-srv.log')"
}
step "odl perf latency 64 B with checksums, A -> B"
perf_pair B A latency -s 64 -n 300 --warmup 30 --checksum
step "odl perf bandwidth with checksums, A -> B and B -> A"
perf_pair B A bandwidth -s 4K,256K --bytes 8M --checksum
perf_pair A B bandwidth -s 256K --bytes 8M --checksum

step "peer module reload (B)"
vexec B 'rmmod odl_tb5' || fail "rmmod B"
wait_in A 30 '! test -e /dev/odl_tb5_0' || fail "A kept /dev/odl_tb5_0 after B unloaded"
vexec B 'insmod /lib/modules/odl_tb5.ko' || fail "insmod B again"
for v in A B; do
	wait_in "$v" 60 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "INFO state 2"' ||
		fail "VM $v: no login after reload"
done
perf_pair B A latency -s 64 -n 50 --warmup 5

step "cable unplug mid-transfer"
vexec B "(odl perf bandwidth --backend kernel --server -d 0 --connect-timeout 60 -s 1M --bytes 1G >/tmp/perf-srv.log 2>&1; echo rc=\$? >>/tmp/perf-srv.log) &"
sleep 1
vexec A "(odl perf bandwidth --backend kernel --client 0 --connect-timeout 60 -q -s 1M --bytes 1G --stall-timeout-ms 5000 >/tmp/perf-cli.log 2>&1; echo rc=\$? >>/tmp/perf-cli.log) &"
sleep 5
"$tb" cable unplug || fail "unplug"
wait_in A 60 'grep -q "^rc=[1-9]" /tmp/perf-cli.log' || fail "client A did not fail after unplug: $(vexec A 'cat /tmp/perf-cli.log')"
wait_in B 60 'grep -q "^rc=[1-9]" /tmp/perf-srv.log' || fail "server B did not fail after unplug: $(vexec B 'cat /tmp/perf-srv.log')"
vexec A 'tail -n 2 /tmp/perf-cli.log'
wait_in A 30 '! test -e /dev/odl_tb5_0' || fail "A kept /dev/odl_tb5_0 after unplug"
"$tb" cable plug || fail "plug"
for v in A B; do
	wait_in "$v" 90 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "INFO state 2"' ||
		fail "VM $v: no login after replug"
done
perf_pair B A latency -s 64 -n 50 --warmup 5

step "unload both, kernel logs clean"
vexec A 'rmmod odl_tb5' || fail "rmmod A"
vexec B 'rmmod odl_tb5' || fail "rmmod B"
for v in A B; do
	# "module verification failed" is the unsigned-module taint notice.
	if vexec "$v" 'dmesg | grep -v "module verification failed" | grep -E "WARNING:|BUG:|Oops|odl_tb5.*(error|failed)|refcount|leak"'; then
		fail "VM $v: kernel log has warnings"
	fi
done
echo "PASS"
