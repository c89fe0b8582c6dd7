#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Safe unload under traffic: both hosts flood every ring both ways
# (odl_tb5_ioctl flood, rings=4); B kills its flood and unloads odl_tb5 at
# once, while A's frames are still arriving and B's completions are still
# queued, then loads it again; N cycles (default 20). A's flood must end
# with a clean error each time (the peer's service went), A must log in
# again and flood again. No warning, oops or leak on either side: every
# cycle reallocates B's rings and HopIDs (a leak would run the NHI out of
# them), and B's unreclaimable slab may not grow by more than 4 MiB.
# Then a peer replaced mid-login (A's test_login_delay_ms; see the step),
# with its LOGOUT delivered and with it dropped by odl-linkd.
# Then a reset caught by the unplug: B unbinds (its LOGOUT starts a reset on
# A), A's reset holds the session and, through odl_tb5's test hook
# (test_unplug_race_ms), waits for the domain lock that A's unplug handler
# holds while it removes the service: the removal must not wait for the
# reset (it once did: the Thunderbolt workqueue hung), A's device goes, and
# both log in again after the replug. Once more with A's NHI unbound
# instead of the cable pulled: the rings must be freed before thunderbolt.ko
# shuts the NHI down, and both log in again after A binds it again.
# Both loops run inside the guests (one exec per host), so a cycle costs
# seconds, not host round trips. Every wait is bounded; the testbed is
# always torn down.
#
# Usage: unload_test.sh [--kernel 6.12|6.1] [--cycles N]
# Environment: ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12
cycles=20
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--cycles) cycles=$2; shift 2 ;;
	*) echo "usage: unload_test.sh [--kernel 6.12|6.1] [--cycles N]" >&2; exit 2 ;;
	esac
done
tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-unload-$kernel}
extra="$ODL_VM_DIR.extra"

step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
. "$here/vm_lib.sh"

ARGS="rings=4"
state=/sys/class/odl_tb5/odl_tb5_0/state
# In-guest: until the device is logged in, 0.1 s steps, at most 90 s (a
# subshell: its exit must not end the loop that runs it, silently).
wait_connected="(i=0; until grep -qx -e connected -e session $state 2>/dev/null; do i=\$((i + 1)); [ \$i -lt 900 ] || exit 1; sleep 0.1; done)"

step "build odl_tb5.ko ($kernel) and guest extras"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
step "testbed up"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" || fail "testbed up"
load_cable_out $ARGS
wait_login 90 "first load"

step "B reloads while A's device is held open: A's new device keeps the name odl_tb5_0"
# A file left open on the old device must not push the returning peer's
# device to odl_tb5_1 under programs that open it by index.
vexec A '(exec 3<>/dev/odl_tb5_0; sleep 60) >/dev/null 2>&1 & echo $! >/tmp/holder.pid' || fail "A: hold odl_tb5_0 open"
vexec B "rmmod odl_tb5" || fail "B: rmmod"
# A drops the peer's service once it reads B's new XDomain properties.
wait_in A 60 "! test -e /sys/class/odl_tb5/odl_tb5_0" ||
	fail "A: odl_tb5_0 still there 60 s after B's unload: $(vexec A 'ls /sys/class/odl_tb5; dmesg | tail -n 5')"
vexec B "insmod /lib/modules/odl_tb5.ko $ARGS" || fail "B: insmod"
ODL_VM_EXEC_TIMEOUT=120 vexec A "$wait_connected" ||
	fail "A: no logged-in odl_tb5_0 after B's reload with the old one held open: $(vexec A 'ls /dev | grep odl_tb5; dmesg | tail -n 5')"
vexec A 'kill $(cat /tmp/holder.pid)' || fail "A: stop the holder"
[ "$(vexec A 'ls /dev | grep -c odl_tb5')" = 1 ] || fail "A: $(vexec A 'ls /dev | grep odl_tb5')"
wait_login 90 "after the held-open reload"
slab() { vexec B 'sed -n "s/^SUnreclaim: *\([0-9]*\) kB/\1/p" /proc/meminfo'; }
slab0=$(slab)

step "$cycles cycles: A floods and logs in again each time, B floods, unloads mid-traffic, reloads"
# A: flood until the link goes, wait for the next login, again; the flood
# of each cycle logs to /tmp/a.N. A flood that starts on the old login (B
# killed its flood, not yet unloaded) waits across B's reload, unless A
# replaces its device meanwhile (it read B's properties while B was
# unloaded): then it is not this cycle's flood and runs again, at most 3
# times, on the next device.
vexec A "(n=0; while [ \$n -lt $cycles ]; do n=\$((n + 1)); t=0; while odl_tb5_ioctl /dev/odl_tb5_0 0 flood 90 >/tmp/a.\$n 2>&1; echo rc=\$? >>/tmp/a.\$n; grep -q 'device went while waiting' /tmp/a.\$n && [ \$t -lt 3 ]; do t=\$((t + 1)); echo \"cycle \$n: the device went before a session; again on the next one\" >>/tmp/a.log; $wait_connected || break; done; $wait_connected || { echo \"no login after cycle \$n (devices: \$(ls /dev | grep odl_tb5 | tr '\\n' ' '))\" >>/tmp/a.log; exit 1; }; done; echo done >>/tmp/a.log) >/dev/null 2>&1 &" ||
	fail "A: flood loop did not start"
# B: wait for the login, flood until every stream carries frames both ways,
# a varying moment later kill the flood and unload at once, load again.
vexec B "(n=0; while [ \$n -lt $cycles ]; do n=\$((n + 1)); $wait_connected || { echo \"cycle \$n: no login\" >>/tmp/b.log; exit 1; }; odl_tb5_ioctl /dev/odl_tb5_0 0 flood 90 >/tmp/b.\$n 2>&1 & p=\$!; i=0; until grep -q ^flooding /tmp/b.\$n; do i=\$((i + 1)); [ \$i -lt 900 ] || { echo \"cycle \$n: no flood\" >>/tmp/b.log; exit 1; }; sleep 0.1; done; sleep 0.\$((n * 3 % 10)); kill -9 \$p; wait \$p; rmmod odl_tb5 || { echo \"cycle \$n: rmmod failed\" >>/tmp/b.log; exit 1; }; insmod /lib/modules/odl_tb5.ko $ARGS || { echo \"cycle \$n: insmod failed\" >>/tmp/b.log; exit 1; }; echo \"cycle \$n: reloaded\" >>/tmp/b.log; done; echo done >>/tmp/b.log) >/dev/null 2>&1 &" ||
	fail "B: unload loop did not start"
t0=$SECONDS
# On a failure: both loops' logs, each host's latest flood, link state and
# kernel log, since one side's failure is often the other side's doing.
loops_report() {
	local w
	for w in A B; do
		echo "--- VM $w"
		vexec "$w" "l=\$(echo $w | tr AB ab); cat /tmp/\$l.log 2>/dev/null | tail -n 3; f=\$(ls -t /tmp/\$l.[0-9]* 2>/dev/null | head -n 1); [ -n \"\$f\" ] && { echo \"--- \$f\"; tail -n 5 \$f; }; ls /dev | grep odl_tb5; cat $state; (cd /sys/class/odl_tb5/odl_tb5_0/statistics 2>/dev/null && grep . * | tr '\\n' ' '); echo; dmesg | tail -n 12" 2>&1
	done
}
# Bounded: 30 s a cycle at most.
for v in a b; do
	V=$(echo "$v" | tr a-z A-Z)
	wait_in "$V" $((cycles * 30)) "grep -q -e ^done -e ^no -e failed -e 'no flood' -e 'no login' /tmp/$v.log" ||
		fail "VM $V: loop did not finish in $((cycles * 30)) s: $(vexec "$V" "tail -n 3 /tmp/$v.log; ls /tmp; f=\$(ls -t /tmp/$v.[0-9]* 2>/dev/null | head -n 1); [ -n \"\$f\" ] && { echo \"--- \$f\"; tail -n 5 \$f; }; for p in /proc/[0-9]*; do grep -qx odl_tb5_ioctl \$p/comm 2>/dev/null || continue; echo \"--- kernel stack of odl_tb5_ioctl \${p#/proc/}\"; cat \$p/stack; done; ls /dev | grep odl_tb5; cat /sys/class/odl_tb5/odl_tb5_0/state; dmesg | tail -n 15")"
	vexec "$V" "grep -qx done /tmp/$v.log" || fail "VM $V: $(vexec "$V" "cat /tmp/$v.log")
$(loops_report)"
done
echo "$cycles cycles in $((SECONDS - t0)) s; A's floods run again (began on a device that went): $(vexec A 'grep -c "device went" /tmp/a.log || true')"

step "A's floods: each ended with a clean error when B's module went"
for n in $(seq "$cycles"); do
	out=$(vexec A "cat /tmp/a.$n")
	grep -q '^rc=0' <<<"$out" || fail "A, cycle $n: flood: $out"
	grep -q '^flood: .*ended: ' <<<"$out" || fail "A, cycle $n: flood did not report its end: $out"
done
vexec A "grep -h '^flood:' /tmp/a.1 /tmp/a.$cycles"
[ "$(vexec B 'grep -c reloaded /tmp/b.log')" = "$cycles" ] || fail "B: $(vexec B 'cat /tmp/b.log')"
for v in A B; do
	vexec "$v" "grep -qx connected $state" || fail "VM $v: not logged in after the last cycle: $(vexec "$v" "cat $state")"
done

# A peer replaced mid-login (CI met it once, at a deploy's reloads): B's new
# module logged in to A's, whose own LOGIN was still to come when A's module
# went too; A's new module found B with its login accepted (by A's old
# module) and waited for a LOGIN that never came. A's test_login_delay_ms
# holds that window open: B's service is rebound, A answers its LOGIN and
# holds its own, then A's service is rebound. A's old module must log out
# (B counts the LOGOUT, and B's stale login is void); with that LOGOUT lost
# on the cable (odl-linkd drops it), a module whose LOGIN was accepted must
# send it again when the peer's does not come (3 s): A's new module, or B's
# when A's rebind came more than 3 s after B's LOGIN (CI on a loaded 2-core
# machine: B's steps to it took that long on both kernels). Both must be
# logged in within 30 s.
delay=/sys/module/odl_tb5/parameters/test_login_delay_ms
service_of() { vexec "$1" 'basename $(readlink -f /sys/class/odl_tb5/odl_tb5_0/device)'; }
rebind() {
	local svc d=/sys/bus/thunderbolt/drivers/odl_tb5
	svc=$(service_of "$1") || fail "$1: no odl_tb5 service"
	vexec "$1" "echo $svc >$d/unbind && echo $svc >$d/bind" || fail "$1: rebind $svc"
}
count_in_log() { vexec "$1" "dmesg | grep -c '$2' || true"; }
replaced_mid_login() {
	local logout=$1 held again again_b logouts0 logouts1 stats=/sys/class/odl_tb5/odl_tb5_0/statistics
	step "a peer replaced mid-login, its LOGOUT $logout: the new module's login is answered"
	held=$(count_in_log A 'test: login back in')
	again=$(count_in_log A 'logging in again')
	again_b=$(count_in_log B 'logging in again')
	vexec A "echo 10000 >$delay" || fail "A: set $delay"
	rebind B
	wait_in A 30 "[ \$(dmesg | grep -c 'test: login back in') -gt $held ]" ||
		fail "A: B's new module's LOGIN was not answered with A's own held back: $(vexec A 'dmesg | tail -n 6')"
	logouts0=$(vexec B "cat $stats/logouts") || fail "B: no statistics"
	if [ "$logout" = lost ]; then
		grep -q '^ok' <<<"$(linkd_ctl fault add logout:drop,from=A)" || fail "arm logout:drop"
	fi
	vexec A "echo 0 >$delay" || fail "A: clear $delay"
	rebind A
	wait_login 30 "a peer replaced mid-login, its LOGOUT $logout"
	logouts1=$(vexec B "cat $stats/logouts") || fail "B: no statistics"
	again=$(($(count_in_log A 'logging in again') - again))
	again_b=$(($(count_in_log B 'logging in again') - again_b))
	echo "B's logouts $logouts0 -> $logouts1; logged in again: A's new module $again time(s), B $again_b"
	if [ "$logout" = lost ]; then
		grep -q 'done 1/1' <<<"$(linkd_ctl fault status)" ||
			fail "odl-linkd dropped no LOGOUT: $(linkd_ctl fault status)"
		linkd_ctl fault clear >/dev/null
		[ "$logouts1" = "$logouts0" ] || fail "B counted a LOGOUT that odl-linkd dropped"
		[ $((again + again_b)) -ge 1 ] || fail "neither side sent its LOGIN again: A: $(vexec A 'dmesg | tail -n 8')
B: $(vexec B 'dmesg | tail -n 8')"
	else
		[ "$logouts1" -gt "$logouts0" ] ||
			fail "A's old module did not log out of its half-done login (B's logouts: $logouts0 -> $logouts1)"
	fi
	kernel_log_clean A "a peer replaced mid-login"
	kernel_log_clean B "a peer replaced mid-login"
}
replaced_mid_login sent
replaced_mid_login lost

step "a reset caught by the unplug: A's removal does not wait for it"
race=/sys/module/odl_tb5/parameters/test_unplug_race_ms
vexec A "echo 20000 >$race" || fail "A: set $race"
# reset_waits N: B unbinds its service; its LOGOUT starts a reset on A that
# waits in the hook for the cable (the hook's Nth such message on A).
reset_waits() {
	vexec B 'basename $(readlink -f /sys/class/odl_tb5/odl_tb5_0/device) >/sys/bus/thunderbolt/drivers/odl_tb5/unbind' ||
		fail "B: unbind the service"
	wait_in A 30 "[ \$(dmesg | grep -c 'test: reset waits for the cable to go') = $1 ]" ||
		fail "A: B's logout started no reset: $(vexec A 'dmesg | tail -n 5')"
}
# reset_reached N: the hook reached the race N times (the reset held the
# session when the service was removed), else the step proved nothing.
reset_reached() {
	[ "$(vexec A 'dmesg | grep -c "test: reset waits for the domain lock"')" = "$1" ] ||
		fail "A: the reset never waited for the domain lock: $(vexec A 'dmesg | tail -n 8')"
}
reset_waits 1
"$tb" cable unplug || fail "unplug"
wait_in A 30 '! test -e /sys/class/odl_tb5/odl_tb5_0 && ! test -e /sys/bus/thunderbolt/devices/0-1' ||
	fail "A: the unplug did not remove the device within 30 s (the removal waits for the reset?): $(vexec A 'ls /sys/class/odl_tb5 /sys/bus/thunderbolt/devices; dmesg | tail -n 8')"
reset_reached 1
"$tb" cable plug || fail "plug"
wait_login 90 "after the unplug that caught a reset"

step "a reset caught by the NHI's unbind: the rings are freed before the NHI shuts down"
# The same reset, but the whole domain goes (A's NHI unbound): the removal
# leaves the teardown to its work item, which must finish before
# thunderbolt.ko shuts the NHI down (else it warns of rings still active).
reset_waits 2
nhi=$(vexec A 'basename $(readlink -f /sys/bus/thunderbolt/devices/domain0/..)') || fail "A: no domain0"
vexec A "echo $nhi >/sys/bus/pci/drivers/thunderbolt/unbind" || fail "A: unbind the NHI $nhi"
wait_in A 30 '! test -e /sys/class/odl_tb5/odl_tb5_0' ||
	fail "A: odl_tb5_0 still there 30 s after the NHI's unbind: $(vexec A 'dmesg | tail -n 8')"
reset_reached 2
kernel_log_clean A "NHI unbound during a reset"
vexec A "echo 0 >$race" || fail "A: clear $race"
vexec A "echo $nhi >/sys/bus/pci/drivers/thunderbolt/bind" || fail "A: bind the NHI $nhi again"
# A fresh start for both sides: B's service is unbound, A's domain is new.
"$tb" cable unplug || fail "unplug"
wait_in A 30 '! test -e /sys/bus/thunderbolt/devices/0-1' || fail "A still sees the peer after unplug"
"$tb" cable plug || fail "plug"
wait_login 90 "after the NHI's unbind during a reset"

step "no leak, kernel logs clean"
slab1=$(slab)
echo "B SUnreclaim: $slab0 kB before, $slab1 kB after $cycles cycles"
[ $((slab1 - slab0)) -lt 4096 ] || fail "B: unreclaimable slab grew by $((slab1 - slab0)) kB over $cycles cycles"
for v in A B; do
	if vexec "$v" 'dmesg | grep -v "module verification failed" | grep -E "WARNING:|BUG[: ]|Oops|already (disabled|enabled|stopped)|refcount|leak|general protection"'; then
		fail "VM $v: kernel log has warnings"
	fi
done
vexec A 'rmmod odl_tb5' || fail "rmmod A"
vexec B 'rmmod odl_tb5' || fail "rmmod B"
step "PASS"
