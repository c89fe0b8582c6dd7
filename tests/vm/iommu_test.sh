#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The two-VM testbed behind a virtual Intel IOMMU (issue 20): every DMA of
# the emulated NHI is translated by QEMU's VT-d model, the shared-RAM fast
# path steps aside (its address space is not system memory), and the guests'
# thunderbolt.ko and odl_tb5 must still log in and move checked data both
# ways: odl perf latency and bandwidth with payload checks, thunderbolt_net
# ping. Both guests' IOMMU mode is what was asked for (sysfs group type and
# odl doctor's iommu row), no DMAR fault is logged, and the logs stay clean.
# --nhi-impl rtl|lockstep: odl-linkd runs the NHIs' interrupt unit as the
# Verilated RTL block (model/rtl, docs/rtl.md); the test checks that it did
# and that every MSI-X of the run came from it.
#
# Usage: iommu_test.sh [--kernel 6.12|6.1] --iommu translated|pt [--nhi-impl model|rtl|lockstep]
# Environment: ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12
mode=""
impl=model
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--iommu) mode=$2; shift 2 ;;
	--nhi-impl) impl=$2; shift 2 ;;
	*) echo "usage: iommu_test.sh [--kernel 6.12|6.1] --iommu translated|pt [--nhi-impl model|rtl|lockstep]" >&2; exit 2 ;;
	esac
done
case "$mode" in translated | pt) ;; *) echo "iommu_test.sh: --iommu translated|pt" >&2; exit 2 ;; esac
case "$impl" in model | rtl | lockstep) ;; *) echo "iommu_test.sh: --nhi-impl model|rtl|lockstep" >&2; exit 2 ;; esac
export ODL_LINKD_ARGS="${ODL_LINKD_ARGS:-} --nhi-impl $impl"
tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-iommu-$kernel-$mode}
extra="$ODL_VM_DIR.extra"

step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
. "$here/vm_lib.sh"

step "build odl_tb5.ko ($kernel) and guest extras"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
step "testbed up, IOMMU $mode, interrupt unit $impl"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" --iommu "$mode" || fail "testbed up"
# irqs_of HOST: MSI-X messages the model's NHI of host 0|1 sent so far.
irqs_of() { "$tb" ctl nhi | sed -n "s/^host $1 frames tx .* irqs \([0-9]*\) .*/\1/p"; }
nhi=$("$tb" ctl nhi) || fail "odl-linkd's nhi command"
for h in 0 1; do
	grep -q "^host $h interrupt unit $impl: " <<<"$nhi" || fail "host $h does not run interrupt unit $impl: $nhi"
done

step "the guests run behind the IOMMU, in $mode mode"
# The group type of the NHI (00:01.0 after the IOMMU): DMA / DMA-FQ
# (translated) or identity (passthrough).
case "$mode" in
translated) want_type='^DMA(-FQ)?$' want_doctor='IOMMU translated' ;;
pt) want_type='^identity$' want_doctor='IOMMU passthrough' ;;
esac
for v in A B; do
	vexec "$v" 'dmesg | grep -q "DMAR: IOMMU enabled"' || fail "VM $v: no 'DMAR: IOMMU enabled' in the kernel log"
	t=$(vexec "$v" 'for d in /sys/bus/pci/devices/*; do [ "$(cat $d/class)" != 0x0c0340 ] || cat $d/iommu_group/type; done') ||
		fail "VM $v: cannot read the NHI's IOMMU group"
	[ -n "$t" ] || fail "VM $v: the NHI has no IOMMU group"
	echo "VM $v: NHI IOMMU group type $t"
	grep -Eq "$want_type" <<<"$t" || fail "VM $v: IOMMU group type '$t', want $want_type"
done

step "load, login through translated DMA"
load_cable_out
wait_login 120 "IOMMU $mode"
out=$(vexec A 'odl doctor' 2>&1 || true)
echo "$out" | grep -E '^ *(info|ok) +iommu' || true
grep -q "$want_doctor" <<<"$out" || fail "odl doctor on A does not report '$want_doctor': $out"

# perf SERVER CLIENT TEST ARGS...: odl perf with payload checks, bounded.
perf() {
	local s=$1 c=$2 t=$3 out
	shift 3
	vexec "$s" "(timeout 200 odl perf $t --backend kernel --server -d 0 --connect-timeout 60 >/tmp/perf-srv.log 2>&1; echo rc=\$? >>/tmp/perf-srv.log) &" ||
		fail "perf server on $s"
	out=$(ODL_VM_EXEC_TIMEOUT=240 vexec "$c" "timeout 200 odl perf $t --backend kernel --client 0 --connect-timeout 60 --checksum -q $* 2>&1") ||
		fail "odl perf $t $c -> $s: $out"
	echo "$out" | tail -n 2
	wait_in "$s" 60 'grep -q "^rc=0" /tmp/perf-srv.log' ||
		fail "perf server on $s did not end cleanly: $(vexec "$s" 'cat /tmp/perf-srv.log')"
}
step "odl perf latency and bandwidth with checksums, both ways"
perf B A latency -s 64,4K -n 200 --warmup 20
perf B A bandwidth -s 4K,1M --bytes 8M
perf A B bandwidth -s 64K --bytes 8M

step "thunderbolt_net beside it: ping through the same translated rings"
for v in A B; do
	ip=10.77.0.$([ "$v" = A ] && echo 1 || echo 2)
	wait_in "$v" 60 'ip link show thunderbolt0' || fail "VM $v: no thunderbolt0"
	vexec "$v" "ip addr add $ip/24 dev thunderbolt0 && ip link set thunderbolt0 up" || fail "VM $v: thunderbolt0 up"
done
wait_in A 60 'ping -c 1 -W 2 10.77.0.2' || fail "no ping over thunderbolt0 behind the IOMMU"
vexec A 'ping -c 5 -i 0.2 10.77.0.2' | tail -n 2

step "no DMAR fault, kernel logs clean, orderly unload"
for v in A B; do
	if vexec "$v" 'dmesg | grep -E "DMAR: \[DMA (Read|Write)|DMAR: DRHD: handling fault|dmar_fault"'; then
		fail "VM $v: DMA remapping faults"
	fi
	kernel_log_clean "$v" "IOMMU $mode"
done
for v in A B; do vexec "$v" 'rmmod odl_tb5' || fail "rmmod odl_tb5 on $v"; done
for v in A B; do kernel_log_clean "$v" "after unload"; done
for h in 0 1; do
	n=$(irqs_of $h)
	echo "host $h: $n MSI-X messages from interrupt unit $impl"
	[ "${n:-0}" -gt 100 ] || fail "host $h: only ${n:-no} MSI-X messages: $("$tb" ctl nhi)"
done
# odl-linkd still serving: a lock-step difference would have stopped it.
"$tb" status >/dev/null || fail "odl-linkd or a VM stopped: $(tail -n 20 "$ODL_VM_DIR/linkd.log")"
echo "PASS (${SECONDS} s)"
