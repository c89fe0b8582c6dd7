#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# odl_tb5.ko of this tree against the last release of the module with login
# 1.0 (one ring pair, no split frames), built from git history, on the
# two-VM testbed: the new module with rings=4 split=1 on one host and the
# 1.0 module on the other, in both placements, must log in, fall back to one
# ring pair without split frames and carry odl perf mimo with checksums in
# both directions; the new module at its defaults must log in with the 1.0
# one too. Kernel logs
# must stay clean. Needs the git history of this repository (a tarball or
# shallow checkout has no 1.0 module to build: exit 77, reported as skipped).
#
# Usage: interop_test.sh [--kernel 6.12|6.1]
# Environment: ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR (odl binary, libodl)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12
[ "${1:-}" = --kernel ] && kernel=$2
tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-interop-$kernel}
extra="$ODL_VM_DIR.extra"
old="$ODL_VM_DIR.old"
# The last commit whose module speaks only login 1.0 (its child, f78963b,
# added ring pairs and login 1.1).
old_commit=529b21a7bc296bc58cab7b5bffb917dd796c2f54

step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }

if ! git -C "$repo" cat-file -e "$old_commit^{commit}" 2>/dev/null; then
	echo "SKIP: commit $old_commit (login 1.0 module) is not in this checkout's history"
	exit 77
fi
. "$here/vm_lib.sh"

step "build the login 1.0 module from $old_commit ($kernel)"
rm -rf "$old" && mkdir -p "$old"
git -C "$repo" archive "$old_commit" kmod include | tar -x -C "$old"
old_ko=$("$old/kmod/build.sh" "$kernel" "$old/out" | tail -n1)
[ -f "$old_ko" ] || fail "no 1.0 module built"
step "build odl_tb5.ko of this tree and guest extras"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
install -m 0644 "$old_ko" "$extra/lib/modules/odl_tb5_old.ko"
step "testbed up"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" >/dev/null || fail "testbed up"

# pair NEW_VM NEW_ARGS: the new module on NEW_VM, the 1.0 one on the other,
# loaded with the cable out, then plug and wait for the login.
pair() {
	local new=$1 args=$2 oldvm=A
	[ "$new" = A ] && oldvm=B
	vexec A 'rmmod odl_tb5 2>/dev/null; true'
	vexec B 'rmmod odl_tb5 2>/dev/null; true'
	"$tb" cable unplug || fail "unplug"
	wait_in A 30 '! test -e /sys/bus/thunderbolt/devices/0-1' || fail "A still sees the peer after unplug"
	vexec "$new" "insmod /lib/modules/odl_tb5.ko $args" || fail "insmod new on $new"
	vexec "$oldvm" 'insmod /lib/modules/odl_tb5_old.ko' || fail "insmod 1.0 on $oldvm"
	"$tb" cable plug || fail "plug"
	# The guest's checker is this tree's (ABI 4) and refuses the 1.0 module's
	# INFO; that side's session shows in odl perf (libodl takes ABI >= 2).
	wait_in "$new" 90 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "INFO state 2"' ||
		fail "$new: no logged-in /dev/odl_tb5_0 within 90 s (new ($args) on $new, 1.0 on $oldvm)"
	vexec "$new" "odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q ' rings 1 '" ||
		fail "$new: not one ring pair against the 1.0 module: $(vexec "$new" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep INFO')"
	vexec "$new" "odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q ' split 0 '" ||
		fail "$new: split frames in use against the 1.0 module: $(vexec "$new" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep INFO')"
}

# mimo SERVER CLIENT: four streams, checksummed and verified, SERVER <- CLIENT.
mimo() {
	local s=$1 c=$2 out
	vexec "$s" "(odl perf mimo --backend kernel --server -d 0 --connect-timeout 60 --streams 4 -s 64K --bytes 8M --checksum >/tmp/srv.log 2>&1; echo rc=\$? >>/tmp/srv.log) &" ||
		fail "server on $s"
	wait_in "$s" 30 'ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q odl_tb5_0' || fail "server on $s did not open the device"
	out=$(ODL_VM_EXEC_TIMEOUT=300 vexec "$c" "odl perf mimo --backend kernel --client 0 --connect-timeout 60 --streams 4 -s 64K --bytes 8M --checksum") ||
		fail "client on $c: $out"
	wait_in "$s" 60 'grep -q "^rc=" /tmp/srv.log' || fail "server on $s did not finish"
	vexec "$s" 'grep -q "^rc=0" /tmp/srv.log' || fail "server on $s: $(vexec "$s" 'cat /tmp/srv.log')"
	echo "$out" | awk '/Gb\/s/ { getline; print "  " $0; exit }'
}

for new in A B; do
	step "new module (rings=4 split=1) on $new against the 1.0 module"
	pair "$new" "rings=4 split=1"
	mimo A B
	mimo B A
done
step "new module at its defaults on A against the 1.0 module"
pair A ""
mimo B A

step "clean kernel logs, unload"
for v in A B; do
	if vexec "$v" 'dmesg | grep -v "module verification failed" | grep -E "WARNING:|BUG[: ]|Oops|refcount|leak"'; then
		fail "$v: kernel log has warnings"
	fi
	vexec "$v" 'rmmod odl_tb5' || fail "rmmod on $v"
done
step "PASS"
