#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# odl_tb5.ko against a hostile peer: odl-linkd, which carries the cable
# between the two guests, rewrites odl_tb5's LOGIN / LOGIN_RESP packets
# (control packet CRC recomputed, so thunderbolt.ko takes them and the module
# has to judge the payload) and damages DMA frames during odl perf
# (odl-linkd --fault, armed at run time on its control socket: docs/vm.md).
#
# Login: A's LOGINs with a ring count out of range, a HopID out of range,
# HopIDs used twice, a non-zero reserved word and a foreign major version,
# then one bad LOGIN_RESP from B. B must refuse each LOGIN (its xd_bad
# counts them; A logs "peer refused login" with the status), A must refuse
# the bad answer (A's xd_bad), no session may form while a fault is armed,
# and once they are spent the login succeeds and odl perf passes.
# Data (A -> B during odl perf bandwidth --checksum): header fields out of
# range and a truncated frame must be counted and dropped by B's module
# (rx_bad grows by the number odl-linkd injected), and the engines make up
# for the missing frame (retransmission, protocol 1.2: the run passes, every
# byte checked, A resent the frame); a payload
# bit and a seq jump beyond the credit pass the module and must be caught by
# the receiving engine (the run fails); a dropped and a duplicated frame
# pass the module and the engines recover them; random header bit flips: the
# run ends (bounded) either way. Never a hang (every run bounded), never a
# damaged run reported as passed; fresh sessions work afterwards (each
# case runs 40 good DATA frames first; a whole good run after each kind).
# Split pairs (split=1 on both, odl_tb5_dmabuf's bench sender and receiver):
# a dropped header, a dropped raw frame, a header len that does not match
# its raw frame and a raw frame with whole-frame PDFs must each cost exactly
# the damaged pair (rx_bad_split), every other pair must be joined
# (rx_split), the receiver must get exactly the good ones; a clean run after.
# Throughout: no BUG/WARNING/Oops/general protection/KASAN/UBSAN in either
# guest, both guests alive, odl_tb5 unloads cleanly at the end.
#
# Usage: hostile_peer_test.sh [--kernel 6.12|6.1]
# Environment: ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR (odl binary, libodl)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12
[ "${1:-}" = --kernel ] && kernel=$2
tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-hostile-$kernel}
extra="$ODL_VM_DIR.extra"
linkd_log="$ODL_VM_DIR/linkd.log"

step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
. "$here/vm_lib.sh"

step "build odl_tb5.ko ($kernel), guest extras and the stats helper"
mkdir -p "$ODL_VM_DIR"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
gcc -O2 -Wall -Wextra -Werror -static -I"$repo/include" "$here/hostile_peer_stats.c" \
	-o "$extra/usr/bin/hostile_peer_stats" || fail "hostile_peer_stats"
step "testbed up"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" || fail "testbed up"

# stats VM: the module's INFO state and judging counters, one line.
stats() { # the counters, or what the guest said instead
	local out rc=0
	out=$(vexec "$1" 'hostile_peer_stats /dev/odl_tb5_0' 2>&1) || rc=$?
	[ "$rc" = 0 ] || { echo "stats $1: exit $rc: $out" >&2; return "$rc"; }
	echo "$out"
}
# field LINE NAME: the number after NAME in a stats line.
field() { echo " $1" | sed -n "s/.*[ (]$2 \([0-9]*\).*/\1/p"; }
# injected: faults odl-linkd has injected so far (its status line).
injected() { linkd_ctl fault status | sed -n 's/^ok injected \([0-9]*\) .*/\1/p'; }
# alive: both guests answer and odl-linkd runs.
alive() {
	local v
	for v in A B; do vexec "$v" true || fail "VM $v stopped answering"; done
	linkd_ctl status >/dev/null || fail "odl-linkd not answering"
}
# peer_svc: the guest's thunderbolt.ko holds a service of the peer's odl_tb5
# (a 0-1.N device with the key odl_tb5 announces).
peer_svc='grep -qsx odinlink /sys/bus/thunderbolt/devices/*/key'
# load_a_then_b [ARGS]: A first, B once it holds A's service, so B binds it
# (and registers its protocol handler) at load, before it announces its
# own; A binds B's service, and sends LOGINs, only after re-reading B's
# properties: so A's LOGINs always find B's handler (a LOGIN faulted while
# nobody listens is injected but judged by no one, and the count of B's
# answers the login faults rely on is off by one). A service left from
# before an unload goes once the peer's properties are re-read: wait for
# that first, or B could bind it and lose it again under A's first LOGIN.
# A fixed sleep of 1 s instead failed once in CI: one of A's five bad
# LOGINs got no answer from B (which of these windows, the log did not say;
# login_seen below prints what each side saw).
load_a_then_b() {
	local v
	for v in A B; do
		wait_in "$v" 30 "! $peer_svc" || fail "VM $v: the peer's odinlink service still there 30 s after unload"
	done
	vexec A "insmod /lib/modules/odl_tb5.ko $*" || fail "insmod A $*"
	wait_in B 30 "$peer_svc" || fail "VM B: no odinlink service of A's within 30 s of loading A"
	vexec B "insmod /lib/modules/odl_tb5.ko $*" || fail "insmod B $*"
}
unload_both() {
	local v
	for v in A B; do
		vexec "$v" 'rmmod odl_tb5' || fail "rmmod $v"
		vexec "$v" '! test -e /dev/odl_tb5_0 && ! grep -q "^odl_tb5 " /proc/modules' ||
			fail "VM $v still has odl_tb5 after rmmod"
	done
}

# perf_ok SERVER CLIENT TEST ARGS...: a bounded odl perf run that must pass.
perf_ok() {
	local s=$1 c=$2 t=$3 out
	shift 3
	vexec "$s" "(timeout 90 odl perf $t --backend kernel --server -d 0 --connect-timeout 60 >/tmp/perf-srv.log 2>&1; echo rc=\$? >>/tmp/perf-srv.log) &" ||
		fail "server $s"
	out=$(ODL_VM_EXEC_TIMEOUT=120 vexec "$c" "timeout 90 odl perf $t --backend kernel --client 0 --connect-timeout 60 -q $* 2>&1") ||
		fail "odl perf $t $c -> $s: $out"
	echo "$out" | tail -n 3
	wait_in "$s" 30 'grep -q "^rc=0" /tmp/perf-srv.log' ||
		fail "server $s did not finish cleanly: $(vexec "$s" 'cat /tmp/perf-srv.log')"
}

step "load (A, then B), login"
"$tb" cable plug >/dev/null 2>&1 || true
load_a_then_b
wait_login 90 "first load"
stats A
perf_ok B A latency -s 64 -n 20 --warmup 5 --checksum

# ---------------------------------------------------------------- login
step "a bad LOGIN from A while armed: refused every time, no session; cleared: login"
unload_both
vexec A "dmesg | grep -q 'peer refused login'" && fail "A: refused logins before any fault"
linkd_ctl fault add "login:features=3,rings=5,from=A,count=1000000" >/dev/null  # ring count 5
load_a_then_b
for i in $(seq 60); do
	n=$(injected)
	[ "${n:-0}" -ge 3 ] && break
	sleep 1
done
[ "${n:-0}" -ge 3 ] || fail "odl-linkd rewrote $n LOGINs of A in 60 s, want >= 3"
for v in A B; do
	out=$(stats "$v" 2>&1 || true)  # no device yet: no session either
	echo "$v: $out"
	[ "$(field "$out" state)" != 2 ] || fail "VM $v logged in while A's LOGINs were bad: $out"
done
# odl-linkd counts a rewrite when it forwards it; B's module counts it once
# it has handled the LOGIN, a moment later: wait for it (bounded).
for i in $(seq 20); do
	[ "$(field "$(stats B)" xd_bad)" -ge 3 ] && break
	sleep 0.5
done
[ "$(field "$(stats B)" xd_bad)" -ge 3 ] || fail "B: bad LOGINs not counted in xd_bad: $(stats B)"
vexec A "dmesg | grep -q 'peer refused login (status 2'" || fail "A: no 'peer refused login' in dmesg"
grep -q "armed 1" <<<"$(linkd_ctl fault status)" || fail "the fault was spent before the checks"
linkd_ctl fault clear
wait_login 90 "after the bad LOGINs stopped"

step "bad LOGINs from A, one of each kind (5), then a bad LOGIN_RESP from B (1)"
unload_both
r0=$(vexec A "dmesg | grep -c 'peer refused login (status 2'" || true)
i0=$(injected)
# Each spec sees every LOGIN A sends from now on; skip=K makes spec K
# rewrite A's (K+1)-th, so the five run one after the other.
linkd_ctl fault add "login:features=3,rings=5,from=A"                           # ring count out of range
linkd_ctl fault add "login:transmit_path=2,from=A,skip=1"                        # HopID below 8
linkd_ctl fault add "login:features=3,rings=3,transmit_path_ext0=0x90009,from=A,skip=2" # HopID 9 twice
linkd_ctl fault add "login:transmit_path_ext1=0x10000,from=A,skip=3"             # reserved word set
linkd_ctl fault add "login:version_major=2,from=A,skip=4"                        # foreign major version
# B answers A's 6th LOGIN (the first good one) with a reserved word set.
linkd_ctl fault add "login_resp:reserved0=1,from=B,skip=5"
load_a_then_b
wait_login 120 "after the login faults"
st=$(linkd_ctl fault status)
echo "fault status: $st"
# what each side saw, for a failure here (a LOGIN nobody answered shifts the count)
login_seen() {
	local v
	for v in A B; do
		echo "$v: $(stats "$v" 2>&1)"
		echo "$v's kernel log: $(vexec "$v" 'dmesg | grep -E "odl_tb5|thunderbolt" | tail -n 12' 2>&1)"
	done
}
grep -q "^ok injected [0-9]* armed 0" <<<"$st" ||
	fail "odl-linkd: login faults not all injected: $st
$(login_seen)"
[ $(($(injected) - i0)) = 6 ] || fail "odl-linkd: want 6 login faults injected: $st"
grep "odl-linkd: fault .*login" "$linkd_log" | tail -n 6
a=$(stats A) b=$(stats B)
echo "A: $a"
echo "B: $b"
[ "$(field "$b" xd_bad)" = 5 ] || fail "B: want xd_bad 5 (the 5 bad LOGINs refused): $b"
[ "$(field "$a" xd_bad)" = 1 ] || fail "A: want xd_bad 1 (the bad LOGIN_RESP refused): $a"
[ "$(field "$a" login_failures)" -ge 6 ] || fail "A: want >= 6 login failures: $a"
refused=$(vexec A "dmesg | grep 'peer refused login'")
echo "$refused" | tail -n 5
r2=$(($(echo "$refused" | grep -c 'status 2,') - ${r0:-0}))
[ "$r2" = 4 ] || fail "A: want 4 new refusals with status 2 (INVAL), got $r2: $refused"
[ "$(echo "$refused" | grep -c 'status 1,')" = 1 ] || fail "A: want 1 refusal with status 1 (VERSION): $refused"
linkd_ctl fault clear >/dev/null
kernel_log_clean A "login faults"
kernel_log_clean B "login faults"
perf_ok B A bandwidth -s 256K --bytes 4M --checksum

# ---------------------------------------------------------------- data
# data_case SPEC EXPECT [nocsum|resent]: arm SPEC (on A's frames to B, after 40
# good DATA frames), run odl perf bandwidth A -> B, which must end (bounded).
# EXPECT: "module" (B's module counts and drops exactly the frames odl-linkd
# damaged; the engines make up for them: the run passes), "engine" (they
# pass the module, the receiving engine fails the run), "recovered" (they
# pass the module, the engines make up for them: the run passes), "either"
# (random damage: passed or not, the run ends). A run that passes passed its
# checksums and byte checks; "resent": A must also say it sent frames again.
cases=0
data_case() {
	local spec=$1 expect=$2 csum=--checksum before after n0 n1 d bad srv cli crc
	# nocsum: no frame CRCs, the receiver's byte-by-byte check must catch it.
	[ "${3:-}" = nocsum ] && csum=
	before=$(stats B)
	n0=$(injected)
	linkd_ctl fault add "data:$spec,from=A,skip=40" >/dev/null || fail "arm data:$spec"
	vexec B "(timeout 60 odl perf bandwidth --backend kernel --server -d 0 --connect-timeout 60 >/tmp/perf-srv.log 2>&1; echo rc=\$? >>/tmp/perf-srv.log) &" ||
		fail "server B"
	set +e
	cli=$(ODL_VM_EXEC_TIMEOUT=90 vexec A "timeout 60 odl perf bandwidth --backend kernel --client 0 --connect-timeout 60 -q -s 256K --bytes 4M $csum --stall-timeout-ms 5000 2>&1; echo rc=\$?" 2>&1)
	set -e
	wait_in B 70 'grep -q "^rc=" /tmp/perf-srv.log' || fail "data:$spec: server B did not end"
	srv=$(vexec B 'cat /tmp/perf-srv.log')
	linkd_ctl fault clear >/dev/null
	n1=$(injected)
	after=$(stats B)
	d=$((n1 - n0))
	bad=$(($(field "$after" rx_bad) - $(field "$before" rx_bad)))
	crc=$(echo "$cli" | sed -n 's/^rc=//p')
	echo "data:$spec: injected $d, B rx_bad +$bad; client rc=$crc: $(echo "$cli" | grep -v '^rc=' | tail -n 1)"
	echo "    server: $(echo "$srv" | tail -n 2 | tr '\n' ' ')"
	grep "odl-linkd: fault .*data:$spec" "$linkd_log" | tail -n 1 | sed 's/^/    /' || true
	[ -n "$crc" ] || fail "data:$spec: odl perf on A did not run (no exit status): $cli"
	[ "$d" = 1 ] || fail "data:$spec: odl-linkd injected $d faults, want 1"
	[ "$crc" != 124 ] && ! grep -q '^rc=124' <<<"$srv" || fail "data:$spec: odl perf hung (timeout)"
	case $expect in
	module | recovered)
		if [ "$expect" = module ]; then
			[ "$bad" = "$d" ] || fail "data:$spec: B's rx_bad grew by $bad, odl-linkd damaged $d: $before -> $after"
		else
			[ "$bad" = 0 ] || fail "data:$spec: B's module dropped $bad frames, want 0 (for the engines to recover)"
		fi
		[ "$crc" = 0 ] && grep -q '^rc=0' <<<"$srv" ||
			fail "data:$spec: the run did not recover: client: $cli server: $srv"
		if [ "${3:-}" = resent ]; then
			grep -Eq '^link recovery \(this end\): [1-9][0-9]* frames sent again' <<<"$cli" ||
				fail "data:$spec: the run passed but A resent nothing: $cli"
		fi
		echo "    (recovered: $(grep '^link recovery' <<<"$cli" || echo 'nothing resent'))"
		alive
		cases=$((cases + 1))
		return 0
		;;
	either)
		echo "    (the run $({ [ "$crc" = 0 ] && grep -q '^rc=0' <<<"$srv"; } && echo passed || echo failed); B's module dropped $bad)"
		alive
		cases=$((cases + 1))
		return 0
		;;
	engine)
		[ "$bad" = 0 ] || fail "data:$spec: B's module dropped $bad frames, want 0 (for the engine to judge)"
		;;
	esac
	if [ "$crc" = 0 ] || grep -q '^rc=0' <<<"$srv"; then
		fail "data:$spec: the damaged run passed: client: $cli server: $srv"
	fi
	alive
	cases=$((cases + 1))
}
step "damaged DATA frames A -> B during odl perf; fresh sessions afterwards"
# Each case's run is a fresh session after the previous case, and its fault
# only fires once 40 good DATA frames crossed (injected must be 1); a whole
# good run follows the last case of each kind (and ends the step).
for spec in "len module resent" "stream module resent" "offset module resent" "msg_len module resent" "truncate,seed=5 module resent" \
	"payload,seed=3 engine" "payload,seed=4 engine nocsum" "seq engine" "drop recovered resent" "duplicate recovered" "flip,bits=8,seed=11 either"; do
	data_case $spec
	case $spec in
	truncate* | duplicate* | flip*) perf_ok B A bandwidth -s 256K --bytes 2M --checksum ;;
	esac
done
echo "data cases: $cases"
for v in A B; do kernel_log_clean "$v" "data faults"; done

# ---------------------------------------------------------------- split
# split_case MODE LENGTH: A sends $split_n split pairs to B (odl_tb5_dmabuf
# 'bench split' on A, 'bench recv' of the good ones on B, both bounded);
# odl-linkd damages the 7th and the 13th (skip=6,every=6,count=2). B's
# module (kmod/ring.c, odl_rx_callback) must drop each damaged pair and
# count it once in rx_bad_split:
#   drop-header: its raw frame comes with no header pending: the join finds
#                none (+1);
#   drop-raw:    the next pair's header comes while the header waits: the
#                waiting one is dropped (+1), the next pair is joined;
#   len:         the header (len and msg_len one less: still valid for the
#                codec) waits; the join sees len != the raw frame's size (+1);
#   raw-pdf:     a frame with whole-frame PDFs while a header waits: the
#                header is dropped (+1), and the payload, read as a frame,
#                is refused by the codec: bench's payload pages start with a
#                DATA header of len 4064, longer than the 4064-byte frame
#                (+1 rx_bad "length": LENGTH is 2 for this mode, else 0).
# Every other pair is joined: rx_split and rx_frames rise by $split_n - 2,
# the receiver gets exactly that many, nothing is dropped as closed.
split_n=24
split_case() {
	local mode=$1 want_len=$2 good=$((split_n - 2)) before after d out recv f want
	before=$(stats B)
	local n0
	n0=$(injected)
	linkd_ctl fault add "split:$mode,from=A,skip=6,every=6,count=2" >/dev/null || fail "arm split:$mode"
	vexec B "(timeout 40 odl_tb5_dmabuf /dev/odl_tb5_0 bench recv $good >/tmp/split-recv.log 2>&1; echo rc=\$? >>/tmp/split-recv.log) &" ||
		fail "split:$mode: receiver on B"
	set +e
	out=$(ODL_VM_EXEC_TIMEOUT=90 vexec A "timeout 60 odl_tb5_dmabuf /dev/odl_tb5_0 bench split $split_n 2>&1; echo rc=\$?")
	set -e
	wait_in B 50 'grep -q "^rc=" /tmp/split-recv.log' || fail "split:$mode: receiver on B did not end"
	recv=$(vexec B 'cat /tmp/split-recv.log')
	linkd_ctl fault clear >/dev/null
	after=$(stats B)
	d=$(($(injected) - n0))
	echo "split:$mode: injected $d; A: $(echo "$out" | tr '\n' ' '); B: $(echo "$recv" | tr '\n' ' ')"
	echo "    B before: $before"
	echo "    B after:  $after"
	grep "odl-linkd: fault .*split:$mode" "$linkd_log" | tail -n 2 | sed 's/^/    /' || true
	[ "$d" = 2 ] || fail "split:$mode: odl-linkd injected $d faults, want 2"
	grep -q "^bench split: $split_n of $split_n frames sent" <<<"$out" && grep -q '^rc=0' <<<"$out" ||
		fail "split:$mode: sender A: $out"
	grep -q "^bench recv: $good frames" <<<"$recv" && grep -q '^rc=0' <<<"$recv" ||
		fail "split:$mode: receiver B did not get exactly $good pairs: $recv"
	for f in rx_bad_split:2 rx_split:$good rx_frames:$good rx_bad:$want_len length:$want_len \
		rx_bad_pdf:0 rx_dropped_closed:0; do
		want=${f#*:} f=${f%%:*}
		[ $(($(field "$after" "$f") - $(field "$before" "$f"))) = "$want" ] ||
			fail "split:$mode: B's $f rose by $(($(field "$after" "$f") - $(field "$before" "$f"))), want $want: $before -> $after"
	done
	alive
}
step "split pairs A -> B (split=1 on both): damaged pairs dropped and counted, the rest joined"
unload_both
load_a_then_b split=1
wait_login 90 "split=1"
split_case drop-header 0
split_case drop-raw 0
split_case len 0
split_case raw-pdf 2
step "a clean split run afterwards: every pair joined"
before=$(stats B)
vexec B "(timeout 40 odl_tb5_dmabuf /dev/odl_tb5_0 bench recv $split_n >/tmp/split-recv.log 2>&1; echo rc=\$? >>/tmp/split-recv.log) &" ||
	fail "clean split: receiver on B"
out=$(ODL_VM_EXEC_TIMEOUT=90 vexec A "timeout 60 odl_tb5_dmabuf /dev/odl_tb5_0 bench split $split_n 2>&1") ||
	fail "clean split: sender A: $out"
wait_in B 50 'grep -q "^rc=" /tmp/split-recv.log' || fail "clean split: receiver on B did not end"
recv=$(vexec B 'cat /tmp/split-recv.log')
after=$(stats B)
echo "clean split: A: $(echo "$out" | tr '\n' ' '); B: $(echo "$recv" | tr '\n' ' ')"
grep -q '^rc=0' <<<"$recv" || fail "clean split: receiver B: $recv"
for f in rx_split:$split_n rx_bad_split:0 rx_bad:0; do
	want=${f#*:} f=${f%%:*}
	[ $(($(field "$after" "$f") - $(field "$before" "$f"))) = "$want" ] ||
		fail "clean split: B's $f rose by $(($(field "$after" "$f") - $(field "$before" "$f"))), want $want: $before -> $after"
done
for v in A B; do kernel_log_clean "$v" "split faults"; done

step "unload both, kernel logs clean"
unload_both
for v in A B; do kernel_log_clean "$v" "after unload"; done
echo "PASS (${SECONDS} s)"
