#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl mount: the peer's served folder through FUSE, read-only. The tree,
# sizes, mtimes and bytes match the served folder; writes are refused; a
# file is fetched once and then read from the cache; a change on the peer
# shows after the listing's TTL; with the server gone an uncached file fails
# with EIO (bounded) and works again once it is back; unmounting ends the
# process and removes its cache. Every process and mount it starts, it stops.
#
# Usage: files_mount_test.sh ODL
set -euo pipefail
odl=$1
. "$(dirname "${BASH_SOURCE[0]}")/files_lib.sh"
files_setup files-mount 4
files_extra_cleanup() {
	local cache
	fusermount3 -u "$tmp/mnt" 2>/dev/null || true
	# A mount killed on a failure cannot remove its private cache: do it here.
	cache=$(sed -n 's/.*, cache \(.*\)$/\1/p' "$tmp/mount.log" 2>/dev/null || true)
	case $cache in */odl-mount-cache.*) rm -rf "$cache" ;; esac
}
[ -c /dev/fuse ] || fail "no /dev/fuse on this machine: odl mount cannot be tested here"
command -v fusermount3 >/dev/null || fail "fusermount3 missing (Debian package fuse3, installed by ./odl)"
mkdir -p share/tree/sub mnt
mounted() { grep -q " $tmp/mnt fuse" /proc/mounts; }

step "pair, serve, mount"
pair_hosts
echo alpha >share/tree/a.txt
head -c 3000000 /dev/urandom >share/tree/sub/b.bin
chmod 640 share/tree/sub/b.bin
start_server
"$odl" mount mnt "${L[@]}" --keys kb --ttl 0.5 --retry-for 2 -v >mount.log 2>&1 &
mnt_pid=$!
pids+=("$mnt_pid")
wait_for 20 mounted || fail "not mounted within 20 s"
grep -q "^odl ro\?.*$tmp/mnt" /proc/mounts || grep -q "[ ,]ro[ ,]" <<<"$(grep " $tmp/mnt " /proc/mounts)" ||
	fail "not mounted read-only: $(grep " $tmp/mnt " /proc/mounts)"

step "tree, sizes, mtimes and bytes as served"
[ "$(cd share && find . | sort)" = "$(cd mnt && find . | sort)" ] || fail "trees differ"
for f in tree/a.txt tree/sub/b.bin; do
	[ "$(stat -c '%s %Y' "share/$f")" = "$(stat -c '%s %Y' "mnt/$f")" ] || fail "$f: size or mtime differs"
	cmp "share/$f" "mnt/$f" || fail "$f: bytes differ"
done
[ "$(stat -c %a mnt/tree/sub/b.bin)" = 440 ] || fail "b.bin shows mode $(stat -c %a mnt/tree/sub/b.bin), want 440"

step "writes refused"
out=$(touch mnt/new 2>&1) && fail "created a file on a read-only mount"
grep -q "Read-only file system" <<<"$out" || fail "touch: $out"
out=$( (echo x >mnt/tree/a.txt) 2>&1) && fail "wrote into a read-only mount"
grep -q "Read-only file system" <<<"$out" || fail "write: $out"

step "fetched once, then read from the cache"
cat mnt/tree/a.txt mnt/tree/a.txt >/dev/null
[ "$(grep -c 'fetched /tree/a.txt' mount.log)" = 1 ] || fail "a.txt fetched $(grep -c 'fetched /tree/a.txt' mount.log) times"

step "a change on the peer shows after the TTL"
sleep 0.1
echo beta >share/tree/a.txt
echo new >share/tree/added.txt
sleep 0.7
[ "$(cat mnt/tree/a.txt)" = beta ] || fail "a.txt still shows '$(cat mnt/tree/a.txt)'"
[ "$(cat mnt/tree/added.txt)" = new ] || fail "added.txt not shown"

step "server gone: an uncached file fails with EIO in bounded time; back again"
echo gamma >share/tree/late.txt
sleep 0.7
ls mnt/tree >/dev/null
kill "$server"
wait "$server" 2>/dev/null || true
t0=$SECONDS
out=$(timeout 30 cat mnt/tree/late.txt 2>&1) && fail "read a file with the server gone: $out"
grep -q "Input/output error" <<<"$out" || fail "cat with the server gone: $out"
[ $((SECONDS - t0)) -le 8 ] || fail "the failure took $((SECONDS - t0)) s (--retry-for 2)"
kill -0 "$mnt_pid" || fail "odl mount died with the server"
start_server
sleep 0.7
[ "$(timeout 30 cat mnt/tree/late.txt)" = gamma ] || fail "late.txt after the server came back"

step "unmount"
cache=$(sed -n 's/.*, cache \(.*\)$/\1/p' mount.log)
[ -d "$cache" ] || fail "no cache folder named in the log"
fusermount3 -u mnt || fail "fusermount3 -u"
for _ in $(seq 100); do kill -0 "$mnt_pid" 2>/dev/null || break; sleep 0.1; done
wait "$mnt_pid" || fail "odl mount exited $?"
grep -q "unmounted" mount.log || fail "no unmount line"
[ ! -d "$cache" ] || fail "cache $cache left behind"
kill "$server"
wait "$server" 2>/dev/null || true
step "PASS"
