#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NCCL net plugin across the two-VM testbed, over libodl's kernel backend
# (odl_tb5.ko): each guest runs tests/plugin/plugin_vm_peer, which dlopen()s
# libnccl-net-odl.so as NCCL does and plays one rank. The host carries the
# 128-byte handles between the guests (hex files through testbed exec); then
# both connect/accept without blocking and exchange 0 B ... 4 MiB both ways,
# 8 requests in flight tested out of order, every byte checked. That
# connection then carries the loopback harness's channel (pair_harness.h):
# each table v8 ... v12 connects and exchanges (sizes, 8 in flight, grouped
# receive, bad arguments), then the request limits and close with requests
# pending + reconnect on the --version table; close and finalize. Every wait
# is bounded; the testbed is always torn down.
#
# Usage: plugin_vm_test.sh [--kernel 6.12|6.1] [--version 8-12]
#   --version: the table of the first connection and the limit/close checks
# Environment: ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR (bin/odl, lib/libodl.so.0,
#   lib/libnccl-net-odl.so, tests/plugin/plugin_vm_peer), ODL_NCCL_PLUGIN and
#   ODL_PLUGIN_VM_PEER (override those two paths)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12
version=12
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--version) version=$2; shift 2 ;;
	*) echo "usage: plugin_vm_test.sh [--kernel 6.12|6.1] [--version 8-12]" >&2; exit 2 ;;
	esac
done
build=${ODL_BUILD_DIR:-$repo/build}
tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-plugin-$kernel}
extra="$ODL_VM_DIR.extra"
plugin=${ODL_NCCL_PLUGIN:-$build/lib/libnccl-net-odl.so}
peer=${ODL_PLUGIN_VM_PEER:-$build/tests/plugin/plugin_vm_peer}

step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
. "$here/vm_lib.sh"

[ -f "$plugin" ] || fail "no $plugin (build the plugin first)"
[ -x "$peer" ] || fail "no $peer (build target plugin_vm_peer)"

step "guest extras: odl_tb5.ko ($kernel), odl, libodl (kmod/guest-extra.sh), plus the plugin and plugin_vm_peer"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" "$build" \
	"$plugin:/usr/lib/libnccl-net-odl.so" "$peer:/usr/bin/plugin_vm_peer" >/dev/null ||
	fail "guest extras"

step "testbed up ($kernel)"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" || fail "testbed up"
step "odl_tb5 on both hosts (cable out), plug, login"
# Modules first, cable second, as kmod_test.sh does (docs/kmod.md: the
# late-load announcement race).
load_cable_out
wait_login 90 "first load"

step "plugin_vm_peer in both guests (ncclNetPlugin_v$version, ODL_NCCL_DEVICES=kernel:0)"
for v in A B; do
	vexec "$v" "rm -rf /tmp/pv && mkdir -p /tmp/pv && (ODL_NCCL_DEVICES=kernel:0 plugin_vm_peer --plugin /usr/lib/libnccl-net-odl.so --dir /tmp/pv --role $v --version $version --timeout 240 >/tmp/pv/log 2>&1; echo rc=\$? >>/tmp/pv/log) &" ||
		fail "start plugin_vm_peer in $v"
done
for v in A B; do
	wait_in "$v" 60 'test -s /tmp/pv/handle.hex' ||
		fail "VM $v: no handle within 60 s: $(vexec "$v" 'cat /tmp/pv/log' 2>&1)"
done
ha=$(vexec A 'cat /tmp/pv/handle.hex' | tr -d '\r\n')
hb=$(vexec B 'cat /tmp/pv/handle.hex' | tr -d '\r\n')
[[ "$ha" =~ ^[0-9a-f]{256}$ ]] || fail "A's handle is not 128 bytes of hex: '$ha'"
[[ "$hb" =~ ^[0-9a-f]{256}$ ]] || fail "B's handle is not 128 bytes of hex: '$hb'"
vexec A "echo $hb >/tmp/pv/peer.tmp && mv /tmp/pv/peer.tmp /tmp/pv/peer.hex" || fail "handle to A"
vexec B "echo $ha >/tmp/pv/peer.tmp && mv /tmp/pv/peer.tmp /tmp/pv/peer.hex" || fail "handle to B"

for v in A B; do
	wait_in "$v" 300 'grep -q "^rc=" /tmp/pv/log' || fail "VM $v: plugin_vm_peer did not finish: $(vexec "$v" 'cat /tmp/pv/log' 2>&1)"
done
ok=1
for v in A B; do
	log=$(vexec "$v" 'cat /tmp/pv/log')
	printf '%s\n' "$log" | sed "s/^/$v: /"
	# Here-strings, not printf | grep -q: under pipefail grep -q leaving
	# early gives printf SIGPIPE and a passing run reads as failed.
	grep -q '^rc=0$' <<<"$log" || ok=0
	grep -q "plugin_vm_peer $v: OK" <<<"$log" || ok=0
done
[ "$ok" = 1 ] || fail "plugin_vm_peer failed"
# The testbed's default cable is Gen3 x2: 40 Gb/s, not the 80 of a TB5 port.
for v in A B; do
	vexec "$v" 'grep -q "speed 40000 Mb/s" /tmp/pv/log' ||
		fail "VM $v: NCCL was not told the link's 40000 Mb/s: $(vexec "$v" 'grep speed /tmp/pv/log')"
done
for v in A B; do
	if vexec "$v" 'dmesg | grep -v "module verification failed" | grep -E "WARNING:|BUG[: ]|Oops"'; then
		fail "VM $v: kernel log has warnings"
	fi
done
step "PASS"
