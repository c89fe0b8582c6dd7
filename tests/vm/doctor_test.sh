#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `odl doctor` across the two-VM testbed: each fault is made for real and
# doctor must name its layer with its exit code (docs/doctor.md):
# odl_tb5 not loaded (14), the peer's module absent (15), the link trained
# below the port's rating (30, the testbed's cable is Gen3 x1 on a Gen4 x2
# port), the device node not accessible to the user (18), the NCCL plugin
# not findable (21), NCCL_NET unset (31), cable unplugged (13); and healthy
# (0, ping measured) once the rating is given as what the cable trained.
# Every wait is bounded; the testbed is always torn down.
#
# Usage: doctor_test.sh [--kernel 6.12|6.1]
# Environment: ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR (odl, libodl, plugin)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12
[ "${1:-}" = --kernel ] && kernel=$2
tb="$repo/qemu-device/testbed.sh"
build=${ODL_BUILD_DIR:-$repo/build}
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-doctor-$kernel}
extra="$ODL_VM_DIR.extra"

step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
. "$here/vm_lib.sh"

plugin=/usr/lib/odl/libnccl-net-odl.so
nccl_env="NCCL_NET_PLUGIN=$plugin NCCL_NET=ODL"

# doctor WANT_RC WANT_TEXT VM [ENV/ARGS...]: odl doctor on VM exits WANT_RC
# and prints WANT_TEXT (a grep -E pattern).
doctor() {
	local want=$1 text=$2 v=$3 out rc
	shift 3
	set +e
	out=$(vexec "$v" "$* 2>&1; echo rc=\$?")
	set -e
	echo "$out" | sed 's/^/    /'
	rc=$(echo "$out" | sed -n 's/^rc=//p' | tail -n1)
	[ "$rc" = "$want" ] || fail "doctor on $v ($*): exit $rc, want $want"
	grep -Eq "$text" <<<"$out" || fail "doctor on $v ($*): no '$text' in its report"
}

step "build odl_tb5.ko ($kernel) and guest extras (odl, libodl, the NCCL plugin)"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" "$build" \
	"$build/lib/libnccl-net-odl.so:$plugin" >/dev/null || fail "guest extras"
step "testbed up: a Gen3 x1 cable between two Gen4 x2 ports"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" --gen gen3 --lanes 1 || fail "testbed up"

wait_in A 60 'test -e /sys/bus/thunderbolt/devices/0-1' || fail "A: no XDomain peer within 60 s"
step "odl_tb5 not loaded"
doctor 14 'FAIL +module +odl_tb5 is not loaded' A "$nccl_env odl doctor"
doctor 14 '"first_broken": "module"' A "$nccl_env odl doctor --json"

step "odl_tb5 on A only: the peer does not offer the service"
vexec A 'insmod /lib/modules/odl_tb5.ko' || fail "insmod A"
doctor 15 'FAIL +service +peer 0-1 .* does not offer the OdinLink service' A "$nccl_env odl doctor"

step "odl_tb5 on both: degraded link (Gen3 x1 on a Gen4 x2 port), ping measured"
vexec B 'insmod /lib/modules/odl_tb5.ko' || fail "insmod B"
wait_in A 60 'grep -qx connected /sys/class/odl_tb5/odl_tb5_0/state' || fail "A: no login within 60 s"
doctor 30 'warn +link +link degraded: 0-1 trained Gen3 x1 \(20 Gb/s\) below its rating Gen4 x2 \(80 Gb/s\)' \
	A "$nccl_env odl doctor"
doctor 30 'ok +ping +peer answers, round trip' A "$nccl_env odl doctor"

step "healthy when held to what the cable is rated for (--expect gen3x1)"
doctor 0 'odl doctor: healthy' A "$nccl_env odl doctor --expect gen3x1"
doctor 0 'ok +link +Gen3 x1 \(20 Gb/s\) each way at its rating' B "$nccl_env odl doctor --expect gen3x1"
doctor 2 "want genN or genNxL" A "odl doctor --expect gen5x9"

step "odl link: the trained link against the rating, the device, its counters after traffic"
out=$(vexec A 'odl link') || fail "odl link on A failed"
echo "$out" | sed 's/^/    /'
grep -q 'link     tx Gen3 x1 (20 Gb/s), rx Gen3 x1 (20 Gb/s)' <<<"$out" || fail "odl link: no Gen3 x1 line"
grep -q 'WARNING  0-1 trained Gen3 x1 (20 Gb/s) below its rating Gen4 x2 (80 Gb/s)' <<<"$out" ||
	fail "odl link: no warning about the rating"
vexec A 'odl link --json | grep -q "\"below_rating\": true"' || fail "odl link --json: below_rating not true"
vexec A 'odl link --expect gen3x1 | grep -q WARNING' && fail "odl link --expect gen3x1 still warns"
vexec B '(odl perf latency --backend kernel --server -d 0 --connect-timeout 60 -s 64 -n 20 --warmup 2 >/tmp/srv.log 2>&1; echo rc=$? >>/tmp/srv.log) &' ||
	fail "B: perf server did not start"
ODL_VM_EXEC_TIMEOUT=120 vexec A 'odl perf latency --backend kernel --client 0 --connect-timeout 60 -s 64 -n 20 --warmup 2 -q' >/dev/null ||
	fail "odl perf latency A -> B: $(vexec B 'cat /tmp/srv.log')"
wait_in B 30 'grep -q "^rc=0" /tmp/srv.log' || fail "B: perf server: $(vexec B 'cat /tmp/srv.log')"
frames=$(vexec A 'cat /sys/class/odl_tb5/odl_tb5_0/statistics/tx_frames')
[ "${frames:-0}" -ge 22 ] || fail "A: statistics/tx_frames $frames after 22 messages"
grep -q "counters: .*tx_frames $frames" <<<"$(vexec A 'odl link')" || fail "odl link does not show tx_frames $frames"

step "runtime knob: irq_throttle_us written while logged in"
vexec A 'echo 64 >/sys/class/odl_tb5/odl_tb5_0/irq_throttle_us' || fail "A: cannot write irq_throttle_us"
vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "irq_throttle_ns 64000"' ||
	fail "A: throttle not applied: $(vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "INFO state"')"
vexec A 'odl link | grep -q "irq_throttle_us 64"' || fail "odl link does not show irq_throttle_us 64"
vexec A 'echo 5000 >/sys/class/odl_tb5/odl_tb5_0/irq_throttle_us' && fail "irq_throttle_us=5000 was accepted"
vexec A 'echo 8 >/sys/class/odl_tb5/odl_tb5_0/irq_throttle_us' || fail "A: cannot write irq_throttle_us back"
vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "irq_throttle_ns 8192"' || fail "A: throttle 8 not applied"

step "runtime knob: poll written to the module parameter, A's service rebound"
rebind_a='s=$(ls /sys/bus/thunderbolt/drivers/odl_tb5 | grep "^[0-9]*-"); echo $s >/sys/bus/thunderbolt/drivers/odl_tb5/unbind && echo $s >/sys/bus/thunderbolt/drivers/odl_tb5/bind'
vexec A "echo 1 >/sys/module/odl_tb5/parameters/poll && $rebind_a" || fail "A: poll=1 and rebind"
wait_in A 60 'grep -qx connected /sys/class/odl_tb5/odl_tb5_0/state' || fail "A: no login after the rebind"
vexec A 'grep -qx 1 /sys/class/odl_tb5/odl_tb5_0/poll && odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "rx_poll 1"' ||
	fail "A: not in polling mode after poll=1 and a rebind"
vexec A 'odl link | grep -q "polling mode"' || fail "odl link does not show polling mode"
vexec B 'grep -qx 0 /sys/class/odl_tb5/odl_tb5_0/poll' || fail "B changed mode too"
vexec A "echo 0 >/sys/module/odl_tb5/parameters/poll && $rebind_a" || fail "A: poll=0 and rebind"
wait_in A 60 'grep -qx 0 /sys/class/odl_tb5/odl_tb5_0/poll && grep -qx connected /sys/class/odl_tb5/odl_tb5_0/state' ||
	fail "A: not back in interrupt mode, logged in"

step "NCCL: plugin not findable; NCCL_NET unset"
doctor 21 'FAIL +nccl +NCCL would not find the OdinLink plugin' A \
	"NCCL_NET_PLUGIN=/nonexistent/libnccl-net-odl.so NCCL_NET=ODL odl doctor --expect gen3x1"
doctor 21 'FAIL +nccl +NCCL would not find' A "NCCL_NET=ODL odl doctor --expect gen3x1"
doctor 31 'warn +nccl .*NCCL_NET is unset' A "NCCL_NET_PLUGIN=$plugin odl doctor --expect gen3x1"

step "device node not accessible to an unprivileged user"
vexec A 'grep -q ^nobody: /etc/passwd || echo nobody:x:65534:65534:nobody:/:/bin/sh >>/etc/passwd' ||
	fail "A: cannot add the user nobody"
doctor 18 'FAIL +device +/dev/odl_tb5_0: Permission denied' A "su -s /bin/sh nobody -c 'odl doctor --no-nccl'"

step "cable unplugged"
"$tb" cable unplug || fail "unplug"
wait_in A 30 '! test -e /sys/bus/thunderbolt/devices/0-1' || fail "A still sees the peer after unplug"
doctor 13 'FAIL +peer +no peer host seen' A "$nccl_env odl doctor --expect gen3x1"
"$tb" cable plug || fail "plug"
wait_in A 60 'grep -qx connected /sys/class/odl_tb5/odl_tb5_0/state' || fail "A: no login after replug"
doctor 0 'odl doctor: healthy' A "$nccl_env odl doctor --expect gen3x1"

kernel_log_clean A "doctor"
kernel_log_clean B "doctor"
step "PASS"
