#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Soak: GIB GiB each way through the emulated link between two odl_tb5
# hosts (odl perf bandwidth --bidir over the kernel backend, frame CRC32C
# on, every payload byte checked against its message's pattern) while a
# fault driver hits the link every few seconds, in turn: bit-error bursts
# (payload bytes and header bits damaged on the cable by odl-linkd), a
# dropped frame, a cable unplug and replug, and a reload of B's module
# (its program killed, rmmod, insmod). Every interrupted run must end with
# an error the program reports (never a hang: each run is bounded), no run
# may deliver a corrupt message, and neither kernel may log a warning.
# Only whole runs count towards the bytes: a run cut by a fault counts
# nothing. Not a ctest test (minutes, machine-dependent); figures in
# docs/benchmarks.md ("Soak through faults").
#
# Usage: vm_soak.sh [--kernel 6.12|6.1] [--gib N] [--run-mib M] [--every S]
#                   [--max-minutes T] [--seed N]
#   --gib: GiB each way to move in whole runs (default 10)
#   --run-mib: bytes each way per odl perf run, MiB (default 256)
#   --every: mean seconds between faults, 2..120 (default 6; each wait is
#     uniform in [S/2, 3S/2])
#   --max-minutes: give up (and fail) after this long (default 90)
#   --seed: the fault driver's choices and odl-linkd's damage (default 1)
# Environment: as tests/vm/kmod_test.sh (ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR)
# Output: a line per run and per fault on stderr, then a summary; exit 0
# only when every check held.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12 gib=10 run_mib=256 every=6 max_min=90 seed=1
usage="usage: $0 [--kernel 6.12|6.1] [--gib N] [--run-mib M] [--every S] [--max-minutes T] [--seed N]"
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || { echo "$usage" >&2; exit 2; }
	case "$1" in
	--kernel) kernel=$2 ;;
	--gib) gib=$2 ;;
	--run-mib) run_mib=$2 ;;
	--every) every=$2 ;;
	--max-minutes) max_min=$2 ;;
	--seed) seed=$2 ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
	shift 2
done
for v in "$gib" "$run_mib" "$every" "$max_min" "$seed"; do
	case "$v" in '' | *[!0-9]* | 0) echo "$0: every number must be a positive integer ($v)" >&2; exit 2 ;; esac
done
case "$kernel" in 6.12 | 6.1) ;; *) echo "--kernel: 6.12 or 6.1" >&2; exit 2 ;; esac
[ "$every" -ge 2 ] && [ "$every" -le 120 ] || { echo "--every: 2..120 seconds" >&2; exit 2; }
[ "$run_mib" -le 4096 ] || { echo "--run-mib: at most 4096" >&2; exit 2; }

tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-soak-$kernel}
extra="$ODL_VM_DIR.extra"
linkd_log="$ODL_VM_DIR/linkd.log"
work=$(mktemp -d /tmp/odl-soak.XXXXXX)
stop="$work/stop"

say() { printf '== [%4ds] %s\n' "$SECONDS" "$*" >&2; }
. "$repo/tests/vm/vm_lib.sh"
# vm_lib.sh's trap stops the testbed; the fault driver and the scratch
# folder go first.
driver=""
cleanup() {
	touch "$stop" 2>/dev/null || true
	[ -n "$driver" ] && { kill "$driver" 2>/dev/null; wait "$driver" 2>/dev/null; } || true
	"$tb" down >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

say "build odl_tb5.ko ($kernel) and guest extras"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" >&2 || fail "testbed up"
load_cable_out >&2
wait_login 90 "first load"

# ------------------------------------------------------------ fault driver
# One fault every [S/2, 3S/2] s, in turn; each logged to $work/faults.
# The data faults hit frames of either direction (odl-linkd counts them).
faults() {
	local n=0 kind w
	set +e # a fault that cannot be applied is logged, not fatal
	RANDOM=$seed
	local kinds=(ber unplug flip ber drop reload)
	while [ ! -e "$stop" ]; do
		w=$((every * 500 + RANDOM % (every * 1000 + 1)))
		sleep "$((w / 1000)).$(printf '%03d' $((w % 1000)))"
		[ -e "$stop" ] && break
		kind=${kinds[$((n % ${#kinds[@]}))]}
		n=$((n + 1))
		case $kind in
		ber) # a burst: 3 frames with a damaged payload byte, 40 frames apart
			linkd_ctl fault add "data:payload,count=3,every=40,seed=$((seed + n))" >/dev/null ;;
		flip) # a burst: 2 frames with 4 random header bits flipped
			linkd_ctl fault add "data:flip,bits=4,count=2,every=25,seed=$((seed + n))" >/dev/null ;;
		drop) linkd_ctl fault add "data:drop,count=1" >/dev/null ;;
		unplug)
			"$tb" cable unplug >/dev/null 2>&1
			sleep 2
			"$tb" cable plug >/dev/null 2>&1 ;;
		reload) # B's program goes, then B's module, then it comes back
			vexec B 'for p in $(pidof odl); do kill -9 $p; done; i=0; until rmmod odl_tb5 2>/dev/null; do i=$((i + 1)); [ $i -lt 50 ] || exit 1; sleep 0.1; done; insmod /lib/modules/odl_tb5.ko' >/dev/null 2>&1 ;;
		esac
		printf '%d %s rc=%d\n' "$SECONDS" "$kind" $? >>"$work/faults"
	done
}
faults &
driver=$!

# ------------------------------------------------------------ runs
target=$((gib * 1024 * 1024 * 1024))
each_ab=0 each_ba=0 runs=0 ok_runs=0 deadline=$((SECONDS + max_min * 60))
declare -A why
# A run: server on B, client on A, both ways at once, 1 MiB messages.
run_once() {
	local r=$1 srv cli crc bytes
	vexec B "(timeout 300 odl perf bandwidth --backend kernel --server -d 0 --connect-timeout 60 --checksum >/tmp/srv.$r 2>&1; echo rc=\$? >>/tmp/srv.$r) >/dev/null 2>&1 &" >/dev/null ||
		return 2
	set +e
	cli=$(ODL_VM_EXEC_TIMEOUT=330 vexec A "timeout 300 odl perf bandwidth --backend kernel --client 0 --connect-timeout 60 -q --json --bidir -s 1M --bytes ${run_mib}M --checksum --stall-timeout-ms 15000 2>&1; echo rc=\$?")
	set -e
	crc=$(echo "$cli" | sed -n 's/^rc=//p' | tail -n 1)
	wait_in B 40 "grep -q '^rc=' /tmp/srv.$r" || true
	srv=$(vexec B "cat /tmp/srv.$r; rm -f /tmp/srv.$r" 2>/dev/null || echo "rc=gone")
	# The program must never be handed a corrupt message, on either end.
	if grep -q 'corrupt' <<<"$cli$srv"; then
		fail "run $r delivered a corrupt message: client: $cli server: $srv"
	fi
	[ "$crc" = 124 ] && fail "run $r: the client hung (no error within 300 s): $cli"
	grep -q '^rc=124' <<<"$srv" && fail "run $r: the server hung (no error within 300 s): $srv"
	if [ "$crc" = 0 ]; then
		grep -q '^rc=0' <<<"$srv" || fail "run $r: the client passed, the server did not: $srv"
		bytes=$(echo "$cli" | grep -v '^rc=' | python3 -c 'import json,sys; print(json.load(sys.stdin)["results"][0]["bytes"])') ||
			fail "run $r: unreadable result: $cli"
		each_ab=$((each_ab + bytes / 2))
		each_ba=$((each_ba + bytes / 2))
		ok_runs=$((ok_runs + 1))
		say "run $r: passed, $((bytes / 2 / 1048576)) MiB each way (total $((each_ab / 1048576)) MiB)"
		return 0
	fi
	# Interrupted: the reason the client reported (its last line).
	local reason
	reason=$(echo "$cli" | grep -v '^rc=' | tail -n 1 | sed -E 's/^odl: error: //; s/(stream|message|device) [0-9]+/\1 N/g; s/ [0-9]{2,}/ N/g')
	[ -n "$reason" ] || fail "run $r ended (rc $crc) without saying why"
	why[$reason]=$((${why[$reason]:-0} + 1))
	say "run $r: interrupted (rc $crc): $reason"
	return 1
}
# After a fault: both ends logged in again (vm_lib's wait_login, bounded;
# in a subshell so that its failure returns here instead of ending the soak).
relogin() { (wait_login 120 "after a fault") >&2; }

say "streaming: $gib GiB each way in runs of $run_mib MiB, a fault every ~$every s"
while [ "$each_ab" -lt "$target" ] || [ "$each_ba" -lt "$target" ]; do
	[ "$SECONDS" -lt "$deadline" ] || fail "not done after $max_min minutes: $((each_ab / 1048576)) MiB each way"
	relogin || fail "no login within 120 s after run $runs (faults: $(tail -n 2 "$work/faults" 2>/dev/null | tr '\n' ' '))"
	runs=$((runs + 1))
	run_once "$runs" || true
done
touch "$stop"
wait "$driver" || true
driver=""
"$tb" cable plug >/dev/null 2>&1 || true
linkd_ctl fault clear >/dev/null || true

# ------------------------------------------------------------ checks
relogin || fail "no login after the last fault"
say "a clean run after the faults"
run_once final || fail "the run after the faults failed"
for v in A B; do kernel_log_clean "$v" "after the soak"; done
injected=$(grep -c 'odl-linkd: fault ' "$linkd_log" || true)
awk -v k="$kernel" -v g="$gib" -v ab="$each_ab" -v ba="$each_ba" -v ok="$ok_runs" -v all="$((runs + 1))" -v s="$SECONDS" \
	'BEGIN { printf "soak: %s, %d GiB target; moved %.2f GiB A->B and %.2f GiB B->A in %d whole runs of %d (%d interrupted); %d s, %.0f MiB/s each way\n",
		k, g, ab / 2^30, ba / 2^30, ok, all, all - ok, s, ab / 2^20 / s }'
echo "faults: $(awk '{print $2}' "$work/faults" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')frames damaged or dropped by odl-linkd: $injected"
awk '$3 != "rc=0" {print "  fault did not apply: " $0}' "$work/faults"
echo "interrupted runs by the reason the program gave:"
for k in "${!why[@]}"; do printf '  %4d  %s\n' "${why[$k]}" "$k"; done | sort -rn
echo "kernel logs: no BUG/WARNING/Oops on either host; no run delivered a corrupt message; no run hung"
