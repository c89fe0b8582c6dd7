#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The irq_throttle_us knob changed at run time (sysfs, docs/kmod.md) on the
# two-VM testbed: one session, never reloaded; in every round each value in
# turn is written on both hosts and odl perf latency (64 B, kernel backend)
# runs. Prints each sample's p50 and the medians per value. Not a ctest test
# (timings); docs/benchmarks.md "Kernel module".
#
# Usage: vm_irq_throttle.sh [KERNEL (6.12)] [ROUNDS (3)] [VALUES ("0 8 128")]
# Environment: ODL_BUILD_DIR (default build/), ODL_LINKD, ODL_VM_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=${1:-6.12} rounds=${2:-3} values=${3:-0 8 128}
case "$rounds" in *[!0-9]* | "") echo "usage: $0 [KERNEL] [ROUNDS] [VALUES]" >&2; exit 2 ;; esac
tb=$repo/qemu-device/testbed.sh
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-throttle-$kernel}
export ODL_BUILD_DIR=${ODL_BUILD_DIR:-$repo/build}
export ODL_LINKD=${ODL_LINKD:-$ODL_BUILD_DIR/bin/odl-linkd}
extra=$ODL_VM_DIR.extra
. "$repo/tests/vm/vm_lib.sh"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" >/dev/null
load_cable_out
wait_login 60 first
knob=/sys/class/odl_tb5/odl_tb5_0/irq_throttle_us
p50() { # prints the p50 of one odl perf latency run, us
	local out
	vexec B "(odl perf latency --backend kernel --server -d 0 --connect-timeout 60 -s 64 -n 300 --warmup 30 >/tmp/srv.log 2>&1; echo rc=\$? >>/tmp/srv.log) &" ||
		fail server
	out=$(ODL_VM_EXEC_TIMEOUT=300 vexec A "odl perf latency --backend kernel --client 0 --connect-timeout 60 -s 64 -n 300 --warmup 30 -q --json") ||
		fail "client: $out"
	wait_in B 30 'grep -q "^rc=0" /tmp/srv.log' || fail "server: $(vexec B 'cat /tmp/srv.log')"
	echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); r=d["results"][0]; print(r["p50_us"])'
}
declare -A samples
for round in $(seq "$rounds"); do
	for v in $values; do
		for h in A B; do vexec "$h" "echo $v >$knob" || fail "write $v on $h"; done
		s=$(p50)
		samples[$v]+="$s "
		echo "round $round irq_throttle_us=$v: p50 $s us"
	done
done
for v in $values; do
	med=$(echo "${samples[$v]}" | tr ' ' '\n' | grep . | sort -g | awk '{a[NR]=$1} END {print a[int((NR + 1) / 2)]}')
	echo "irq_throttle_us=$v: p50 per round ${samples[$v]}-> median $med us"
done
