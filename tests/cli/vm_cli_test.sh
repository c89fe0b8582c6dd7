#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl vm with no testbed up (an empty state folder, no QEMU, no odl-linkd):
# every command that needs one says which part is missing, once, and fails;
# bad arguments are refused before the testbed script is asked.
# Usage: vm_cli_test.sh ODL_BINARY
set -euo pipefail
odl=${1:?usage: vm_cli_test.sh ODL_BINARY}
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-vm-cli.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export ODL_VM_DIR=$tmp/vm

# run ARGS...: odl vm ARGS, bounded; sets rc and err.
run() {
	set +e
	timeout 30 "$odl" vm "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
	rc=$?
	set -e
	err=$(cat "$tmp/err")
}

# A cable event with odl-linkd not running: one line that says so (the
# testbed script's control helper used to add "cable ...: " with no reason).
for ev in "unplug" "ber 1e-9" "ber abc" "degrade gen3 1"; do
	# shellcheck disable=SC2086 # words on purpose
	run cable $ev
	[ "$rc" = 1 ] || fail "cable $ev with no testbed: exit $rc: $err"
	[ "$err" = "odl: vm: error: odl-linkd is not running" ] || fail "cable $ev with no testbed said: $err"
done
echo "ok: a cable event with no testbed names odl-linkd, once"

# Wrong argument counts never reach the testbed.
run cable degrade gen3
[ "$rc" != 0 ] && grep -q "takes GEN LANES" <<<"$err" || fail "cable degrade with one word: exit $rc: $err"
run cable ber
[ "$rc" != 0 ] && grep -q "takes RATE" <<<"$err" || fail "cable ber with no rate: exit $rc: $err"
run cable unplug now
[ "$rc" != 0 ] && grep -q "takes no arguments" <<<"$err" || fail "cable unplug with a word: exit $rc: $err"
echo "ok: cable arguments counted before the testbed is asked"

# A seed that is no whole number is refused before the testbed is asked
# (-1 was taken into a 64-bit seed as 2^64 - 1 and the guests booted).
run up --deterministic --seed -1
[ "$rc" != 0 ] && grep -q "'-1' is not a whole number below 10^18" <<<"$err" || fail "up --seed -1: exit $rc: $err"
[ ! -e "$ODL_VM_DIR" ] || fail "up --seed -1 reached the testbed: $(ls "$ODL_VM_DIR")"
echo "ok: a negative seed is refused up front"

# status names every part that is down and fails.
run status
[ "$rc" = 1 ] || fail "status with no testbed: exit $rc"
for part in "odl-linkd not running" "VM A not running" "VM B not running"; do
	grep -q "$part" "$tmp/out" "$tmp/err" || fail "status does not say '$part': $(cat "$tmp/out" "$tmp/err")"
done
echo "ok: status names what is not running"
echo PASS
