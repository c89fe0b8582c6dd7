#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl sync between a local folder and the served one: the first pass makes
# both the union; a change on either side reaches the other; a removal moves
# the other side's copy into .odl-trash/ (nothing deleted outright); a file
# changed on both sides keeps both copies on both hosts; the watching mode
# sends a local change by itself within seconds. Every process it starts,
# it stops.
#
# Usage: files_sync_test.sh ODL
set -euo pipefail
odl=$1
. "$(dirname "${BASH_SOURCE[0]}")/files_lib.sh"
files_setup files-sync 6
mkdir -p share/docs here
pair_hosts
start_server
once() { "$odl" sync here peer:docs "${L[@]}" --keys kb --once >>sync.log 2>&1 || fail "sync pass"; }
# same_trees: the synced folders hold the same files with the same bytes.
same_trees() {
	diff -r --exclude=.odl-sync --exclude=.odl-trash here share/docs >diff.log 2>&1
}

step "first pass: the union on both sides"
echo peer >share/docs/from-peer.txt
mkdir -p share/docs/sub here/mine
echo deep >share/docs/sub/deep.txt
echo mine >here/mine/local.txt
once
same_trees || fail "trees differ after the first pass: $(cat diff.log)"
[ "$(cat here/sub/deep.txt)" = deep ] || fail "deep.txt"
[ "$(cat share/docs/mine/local.txt)" = mine ] || fail "local.txt"

step "a change on either side reaches the other"
sleep 0.05
echo changed-here >here/mine/local.txt
echo changed-there >share/docs/from-peer.txt
once
[ "$(cat share/docs/mine/local.txt)" = changed-here ] || fail "local change not sent"
[ "$(cat here/from-peer.txt)" = changed-there ] || fail "peer's change not fetched"
same_trees || fail "trees differ: $(cat diff.log)"
grep -q "from-peer.txt: fetched (changed on the peer)" sync.log || fail "no fetch line"

step "removals go to the other side's trash"
rm here/mine/local.txt
rm share/docs/sub/deep.txt
once
[ ! -e share/docs/mine/local.txt ] || fail "removed here, still on the peer"
[ ! -e here/sub/deep.txt ] || fail "removed on the peer, still here"
[ "$(cat share/.odl-trash/*/docs/mine/local.txt)" = changed-here ] || fail "the peer's copy is not in its trash"
[ "$(cat here/.odl-trash/*/sub/deep.txt)" = deep ] || fail "our copy is not in our trash"
same_trees || fail "trees differ: $(cat diff.log)"

step "changed on both sides: both copies kept on both hosts"
sleep 0.05
echo ours >here/from-peer.txt
echo theirs >share/docs/from-peer.txt
once
once
[ "$(cat here/from-peer.txt)" = ours ] || fail "our version lost here"
[ "$(cat share/docs/from-peer.txt)" = ours ] || fail "the peer does not hold our version"
conflict=$(cd here && ls from-peer.txt.conflict-* 2>/dev/null | head -1 || true)
[ -n "$conflict" ] || fail "no conflict copy here"
[ "$(cat "here/$conflict")" = theirs ] || fail "the conflict copy here is not the peer's version"
[ "$(cat "share/docs/$conflict")" = theirs ] || fail "the peer lacks the conflict copy"
same_trees || fail "trees differ: $(cat diff.log)"

step "watching: a local change goes by itself"
"$odl" sync here peer:docs "${L[@]}" --keys kb --interval 1 >watch.log 2>&1 &
w=$!
pids+=("$w")
sleep 1
echo live >here/live.txt
for _ in $(seq 100); do [ "$(cat share/docs/live.txt 2>/dev/null)" = live ] && break; sleep 0.1; done
[ "$(cat share/docs/live.txt 2>/dev/null)" = live ] || fail "live.txt not sent within 10 s"
echo from-there >share/docs/there.txt
for _ in $(seq 100); do [ -e here/there.txt ] && break; sleep 0.1; done
[ "$(cat here/there.txt 2>/dev/null)" = from-there ] || fail "there.txt not fetched within 10 s"
kill "$w"
wait "$w" || fail "odl sync did not stop cleanly on SIGTERM"

step "bad arguments"
out=$("$odl" sync nowhere "${L[@]}" --keys kb --once 2>&1) && fail "a missing folder was accepted"
grep -q "not a directory" <<<"$out" || fail "missing folder: $out"
out=$("$odl" sync here peer:../x "${L[@]}" --keys kb --once 2>&1) && fail "peer:../x accepted"
grep -q "'.' or '..'" <<<"$out" || fail "peer:../x: $out"
out=$("$odl" sync here peer:other "${L[@]}" --keys kb --once 2>&1) && fail "a second peer folder for the same local folder accepted"
grep -q "was synced with peer:docs" <<<"$out" || fail "other folder: $out"
step "PASS"
