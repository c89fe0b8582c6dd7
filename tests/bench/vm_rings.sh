#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl_tb5 rings=1 against rings=N on the two-VM testbed, one session, the
# two alternating in every round: odl perf mimo (4 streams) and bandwidth (1
# stream) over the kernel backend (mmap path, --checksum). Prints each sample
# and the medians. Not a ctest test (timings); docs/benchmarks.md "Kernel
# module".
#
# Usage: vm_rings.sh [KERNEL (6.12)] [ROUNDS (3)] [N (4)]
# Environment: ODL_BUILD_DIR (odl, default build/), ODL_LINKD, ODL_VM_DIR;
#   OLD_KO: an odl_tb5.ko of login 1.0 (e.g. built from f78963b~1 with
#   kmod/build.sh), loaded on B at the end against rings=N on A: the pair
#   must fall back to one ring and odl perf mimo must pass.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=${1:-6.12} rounds=${2:-3} n=${3:-4}
case "$rounds$n" in *[!0-9]*) echo "usage: $0 [KERNEL] [ROUNDS] [N]" >&2; exit 2 ;; esac
tb=$repo/qemu-device/testbed.sh
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-rings-$kernel}
export ODL_BUILD_DIR=${ODL_BUILD_DIR:-$repo/build}
export ODL_LINKD=${ODL_LINKD:-$ODL_BUILD_DIR/model/src/linkd/odl-linkd}
extra=$ODL_VM_DIR.extra
. "$repo/tests/vm/vm_lib.sh"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
# OLD_KO: a 1.0 (pre-rings) odl_tb5.ko, loaded on B at the end against rings=4 on A.
[ -n "${OLD_KO:-}" ] && install -m 0644 "$OLD_KO" "$extra/lib/modules/odl_tb5_old.ko"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" >/dev/null
load_cable_out rings=1
wait_login 60 first
reload() {
	vexec A 'rmmod odl_tb5' && vexec B 'rmmod odl_tb5' || fail rmmod
	vexec A "insmod /lib/modules/odl_tb5.ko rings=$1" && vexec B "insmod /lib/modules/odl_tb5.ko rings=$1" || fail insmod
	wait_login 60 "rings=$1"
	vexec A "odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q ' rings $1 '" || fail "rings $1 not in use"
}
perf() { # TEST ARGS...: prints Gb/s of the aggregate line
	local t=$1 out
	shift
	vexec B "(odl perf $t --backend kernel --server -d 0 --connect-timeout 60 $* >/tmp/srv.log 2>&1; echo rc=\$? >>/tmp/srv.log) &" || fail server
	wait_in B 30 'ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q odl_tb5_0' || fail "server did not open"
	out=$(ODL_VM_EXEC_TIMEOUT=300 vexec A "odl perf $t --backend kernel --client 0 --connect-timeout 60 -q $*") || fail "client: $out"
	wait_in B 30 'grep -q "^rc=0" /tmp/srv.log' || fail "server: $(vexec B 'cat /tmp/srv.log')"
	echo "$out" | awk '/Gb\/s/ { getline; print $4; exit }'
}
declare -A res
for r in $(seq "$rounds"); do
	for k in 1 "$n"; do
		reload "$k"
		m=$(perf mimo --streams 4 -s 256K --bytes 32M --checksum)
		b=$(perf bandwidth -s 1M --bytes 32M --checksum)
		echo "round $r rings=$k mimo4 $m Gb/s bandwidth1 $b Gb/s"
		res[m$k]+="$m " res[b$k]+="$b "
	done
done
med() { tr ' ' '\n' | grep . | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
for k in 1 "$n"; do
	echo "median rings=$k: mimo4 $(echo "${res[m$k]}" | med) Gb/s, bandwidth1 $(echo "${res[b$k]}" | med) Gb/s"
done
if [ -n "${OLD_KO:-}" ]; then
	vexec A 'rmmod odl_tb5' && vexec B 'rmmod odl_tb5' || fail rmmod
	vexec A "insmod /lib/modules/odl_tb5.ko rings=$n" && vexec B "insmod /lib/modules/odl_tb5_old.ko" || fail insmod
	wait_login 90 "rings=$n against a 1.0 module"
	vexec A "odl_tb5_ioctl /dev/odl_tb5_0 0 | grep 'INFO state'; dmesg | grep odl_tb5 | tail -n 3"
	vexec A "odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q ' rings 1 '" || fail "A: not one ring against 1.0"
	echo "1.0 interop: mimo4 $(perf mimo --streams 4 -s 64K --bytes 4M --checksum) Gb/s"
fi
