#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# odl_tb5.ko across the two-VM testbed: bad module parameter, login on both
# hosts, the bad ioctl/mmap/post table and a bounded randomized ioctl, mmap
# and post stress, frames both ways through the mmap path (ioctl checker on
# both hosts), every odl perf test with checksums over the default mmap path
# (latency, bandwidth each way and both at once, jitter, latency-load, mimo;
# on 6.1 latency, bandwidth and mimo: the others exercise only userspace)
# and latency and bandwidth over the read/write path (ODL_KERNEL_IO=rw),
# coexistence with thunderbolt_net (iperf3 and
# ping over thunderbolt0 while odl perf runs), peer module reload, a late
# announcement (re-announce on an unanswered login) and the discovery race
# behind it, a load/unload loop,
# a damaged link (frames the NHI flags dropped and counted), polling mode,
# cable unplug mid-transfer and replug, ring stops in polling
# mode with traffic on every ring (unplug/replug cycles, unbinding each
# side's service), and clean kernel logs.
# The dma-buf send path (tests/vm/odl_tb5_dmabuf.c): its bad-argument table
# and leak check, frames both ways from dma-bufs, close and cable unplug
# with dma-buf frames in flight; split sends (split=1: device-only imports,
# POST_SEND_SPLIT both ways, and with ring_size=64 in polling mode a
# receiver holding its whole window); on 6.1 guests (no exporter) only the
# cases that need none, and the step says NOT RUN.
# Everything up to the load/unload loop and the polling-mode steps run with
# rings=4 on both hosts (several ring pairs, streams spread over them; the
# per-ring counters must show more than one ring used); the loop covers the
# default rings=1 and a mixed pair (rings=4 against rings=1: one ring). Every
# wait is bounded; the testbed is always torn down.
#
# Usage: kmod_test.sh [--kernel 6.12|6.1]
# Environment: ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR (odl binary, libodl)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12
[ "${1:-}" = --kernel ] && kernel=$2
tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-kmod-$kernel}
extra="$ODL_VM_DIR.extra"

step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
. "$here/vm_lib.sh"

step "build odl_tb5.ko ($kernel) and guest extras"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
step "testbed up"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" || fail "testbed up"

# Ring pairs (and split frames taken) for every load but the loop's
# default and mixed cycles.
RINGS="rings=4 split=1"

step "module parameter validation"
if vexec A 'insmod /lib/modules/odl_tb5.ko ring_size=100'; then
	fail "ring_size=100 was accepted"
fi
for bad in rings=0 rings=5; do
	if vexec A "insmod /lib/modules/odl_tb5.ko $bad"; then
		fail "$bad was accepted"
	fi
done
if vexec A 'insmod /lib/modules/odl_tb5.ko irq_throttle_us=5000'; then
	fail "irq_throttle_us=5000 was accepted"
fi
step "load on both hosts (cable out), plug, login"
# Modules first, cable second, as on a host that loads odl_tb5 at boot; the
# reload step below covers loading after discovery, and the late
# announcement step the race in between (docs/kmod.md, re-announce).
load_cable_out $RINGS
# wait_guest VM SECONDS CMD: wait_in's loop run inside the guest in 0.1 s
# steps, one exec instead of one per second (the unplug cycles repeat it;
# the mid-transfer unplug must act within a poll of its condition).
wait_guest() {
	local v=$1 secs=$2
	shift 2
	ODL_VM_EXEC_TIMEOUT=$((secs + 30)) vexec "$v" "i=0; until $*; do i=\$((i + 1)); [ \$i -lt $((secs * 10)) ] || exit 1; sleep 0.1; done" >/dev/null 2>&1
}
wait_login 60 "first load"
vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "INFO state"'
# rings_in VM N: the link uses N ring pairs (INFO rings).
rings_in() {
	vexec "$1" "odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q ' rings $2 '" ||
		fail "VM $1: want $2 ring pair(s): $(vexec "$1" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "INFO state"')"
}
# rings_used VM: more than one ring pair received frames (STATS ring_rx).
rings_used() {
	local out used
	out=$(vexec "$1" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "STATS logins"')
	used=$(echo "$out" | sed -n 's/.*ring_rx \([0-9,]*\).*/\1/p' | tr , '\n' | grep -c '^[1-9]' || true)
	echo "$1: $out"
	[ "${used:-0}" -ge 2 ] || fail "VM $1: frames on $used ring(s), want >= 2: $out"
}
rings_in A 4
rings_in B 4
# split=1 on both: each takes the other's split frames, rx_capacity halved.
for v in A B; do
	vexec "$v" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "split 1 local_split 1 rx_capacity 511"' ||
		fail "VM $v: split frames not negotiated: $(vexec "$v" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "INFO state"')"
done
# Interrupt mode, default irq_throttle_us=8: 32 units of 256 ns.
vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "rx_poll 0 irq_throttle_ns 8192"' ||
	fail "A: default mode/throttle not as expected: $(vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "INFO state"')"
step "coexistence: thunderbolt_net still bound"
wait_in A 60 'ip link show thunderbolt0 >/dev/null' || fail "thunderbolt0 missing with odl_tb5 loaded"

step "bad ioctl table and randomized stress (A)"
vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 20000' || fail "ioctl table"
step "mmap path: frames both ways between the ioctl checkers (A and B at once)"
vexec B '(odl_tb5_ioctl /dev/odl_tb5_0 0 session >/tmp/sess.log 2>&1; echo rc=$? >>/tmp/sess.log) &' ||
	fail "B: session checker did not start"
ODL_VM_EXEC_TIMEOUT=120 vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 session' ||
	fail "A: mmap session check (B: $(vexec B 'sleep 2; cat /tmp/sess.log'))"
wait_in B 60 'grep -q "^rc=" /tmp/sess.log' || fail "B: session checker did not finish"
vexec B 'grep -q "^rc=0" /tmp/sess.log' || fail "B: mmap session check: $(vexec B 'cat /tmp/sess.log')"

step "dma-buf send path: bad-argument table, import limit, segment rule, leak check (A)"
set +e
out=$(vexec A 'odl_tb5_dmabuf /dev/odl_tb5_0 table; echo rc=$?' 2>&1)
set -e
echo "$out" | grep -v '^ok ' || true
grep -q '^rc=[02]$' <<<"$out" || fail "dma-buf table: $(echo "$out" | grep -E '^FAIL|^rc=')"
if grep -q '^rc=2$' <<<"$out"; then
	# Debian's 6.1 has neither udmabuf nor dma heaps: no exporter to test.
	[ "$kernel" = 6.1 ] || fail "dma-buf: no exporter in the $kernel guest"
	printf '== NOT RUN: dma-buf send path on %s (no dma-buf exporter in the guest); only the bad-fd and not-a-dma-buf cases ran and passed. This step is NOT a pass.\n' "$kernel"
else
	step "dma-buf send path: frames both ways from dma-bufs, close with frames in flight (A and B at once)"
	vexec B '(odl_tb5_dmabuf /dev/odl_tb5_0 session B >/tmp/dmabuf.log 2>&1; echo rc=$? >>/tmp/dmabuf.log) &' ||
		fail "B: dma-buf session checker did not start"
	ODL_VM_EXEC_TIMEOUT=120 vexec A 'odl_tb5_dmabuf /dev/odl_tb5_0 session A' ||
		fail "A: dma-buf session check (B: $(vexec B 'sleep 2; cat /tmp/dmabuf.log'))"
	wait_in B 60 'grep -q "^rc=" /tmp/dmabuf.log' || fail "B: dma-buf session checker did not finish"
	vexec B 'cat /tmp/dmabuf.log'
	vexec B 'grep -q "^rc=0" /tmp/dmabuf.log' || fail "B: dma-buf session check"
	step "dma-buf send path: cable unplug with dma-buf frames in flight, replug"
	vexec B '(odl_tb5_dmabuf /dev/odl_tb5_0 sink >/tmp/sink.log 2>&1; echo rc=$? >>/tmp/sink.log) &' ||
		fail "B: dma-buf sink did not start"
	vexec A '(odl_tb5_dmabuf /dev/odl_tb5_0 unplug >/tmp/unplug.log 2>&1; echo rc=$? >>/tmp/unplug.log) &' ||
		fail "A: dma-buf unplug checker did not start"
	wait_in A 90 'grep -q "^sending" /tmp/unplug.log' ||
		fail "A: dma-buf unplug checker not sending: $(vexec A 'cat /tmp/unplug.log')"
	sleep 2
	"$tb" cable unplug || fail "unplug"
	wait_in A 60 'grep -q "^rc=" /tmp/unplug.log' || fail "A: dma-buf unplug checker did not finish"
	vexec A 'grep -v "^ok " /tmp/unplug.log'
	vexec A 'grep -q "^rc=0" /tmp/unplug.log' || fail "A: dma-buf unplug check"
	wait_in B 60 'grep -q "^rc=" /tmp/sink.log' || fail "B: dma-buf sink did not finish"
	vexec B 'grep -q "^rc=0" /tmp/sink.log' || fail "B: dma-buf sink: $(vexec B 'cat /tmp/sink.log')"
	"$tb" cable plug || fail "plug"
	wait_login 90 "after the dma-buf unplug"
	# split_pair MODE X Y: the checker in MODE on B (as Y) and A (as X) at once.
	split_pair() {
		vexec B "(odl_tb5_dmabuf /dev/odl_tb5_0 $1 $3 >/tmp/split.log 2>&1; echo rc=\$? >>/tmp/split.log) &" ||
			fail "B: $1 checker did not start"
		ODL_VM_EXEC_TIMEOUT=180 vexec A "odl_tb5_dmabuf /dev/odl_tb5_0 $1 $2" ||
			fail "A: $1 $2 check (B: $(vexec B 'sleep 2; cat /tmp/split.log'))"
		wait_in B 90 'grep -q "^rc=" /tmp/split.log' || fail "B: $1 checker did not finish"
		vexec B 'grep -v "^ok " /tmp/split.log'
		vexec B 'grep -q "^rc=0" /tmp/split.log' || fail "B: $1 $3 check"
	}
	step "split sends: device-only dma-bufs, POST_SEND_SPLIT both ways at once (rings=4, interrupt mode)"
	split_pair split A B
	step "split sends with ring_size=64 in polling mode (rings=4): receiver holds its whole window, then split both ways"
	for v in A B; do vexec "$v" 'rmmod odl_tb5' || fail "rmmod $v"; done
	for v in A B; do
		vexec "$v" "insmod /lib/modules/odl_tb5.ko ring_size=64 poll=1 $RINGS" || fail "insmod $v ring_size=64"
	done
	wait_login 60 "ring_size=64"
	split_pair window S R
	split_pair split A B
	for v in A B; do vexec "$v" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "STATS logins"'; done
	for v in A B; do vexec "$v" 'rmmod odl_tb5' || fail "rmmod $v"; done
	for v in A B; do vexec "$v" "insmod /lib/modules/odl_tb5.ko $RINGS" || fail "insmod $v"; done
	wait_login 60 "after the small-ring split step"
fi

# PERF_IO: the kernel backend's data path for perf_pair, mmap (default) or rw.
# PERF_ENV: more environment for both ends (e.g. ODL_TX_THREAD=on).
PERF_IO=mmap
PERF_ENV=
perf_pair() { # perf_pair SERVER CLIENT TEST ARGS...
	local s=$1 c=$2 t=$3 out maps
	shift 3
	# TCG guests on a loaded 2-core host: give the rendezvous a minute.
	vexec "$s" "(ODL_KERNEL_IO=$PERF_IO $PERF_ENV odl perf $t --backend kernel --server -d 0 --connect-timeout 60 $* >/tmp/perf-srv.log 2>&1; echo rc=\$? >>/tmp/perf-srv.log) &" ||
		fail "server $s"
	# The path in use shows in the server's mappings of the device: the
	# mmap path maps 3 areas right after open, the rw path none.
	wait_in "$s" 30 'ls -l /proc/[0-9]*/fd 2>/dev/null | grep -q odl_tb5_0' ||
		fail "server $s did not open the device: $(vexec "$s" 'cat /tmp/perf-srv.log')"
	sleep 1
	maps=$(vexec "$s" 'cat /proc/[0-9]*/maps 2>/dev/null | grep -c odl_tb5_0' || true)
	if [ "$PERF_IO" = mmap ] && [ "${maps:-0}" -ne 3 ]; then
		fail "server $s: ${maps:-0} mappings of /dev/odl_tb5_0 on the mmap path, want 3"
	elif [ "$PERF_IO" = rw ] && [ "${maps:-0}" -ne 0 ]; then
		fail "server $s: $maps mappings of /dev/odl_tb5_0 with ODL_KERNEL_IO=rw, want 0"
	fi
	# The copy threads, when asked for, run in the server (on the mmap path).
	if [[ $PERF_ENV == *ODL_TX_THREAD=on* && $PERF_IO == mmap ]]; then
		local txt
		txt=$(vexec "$s" 'cat /proc/[0-9]*/task/*/comm 2>/dev/null | grep -c "^odl-tx-"' || true)
		[ "${txt:-0}" -ge 1 ] || fail "server $s: no send thread with $PERF_ENV on the mmap path"
	fi
	if [[ $PERF_ENV == *ODL_RX_THREAD=on* && $PERF_IO == mmap ]]; then
		local rxt
		rxt=$(vexec "$s" 'cat /proc/[0-9]*/task/*/comm 2>/dev/null | grep -c "^odl-rx-"' || true)
		[ "${rxt:-0}" -ge 1 ] || fail "server $s: no receive thread with $PERF_ENV on the mmap path"
	fi
	out=$(ODL_VM_EXEC_TIMEOUT=300 vexec "$c" "ODL_KERNEL_IO=$PERF_IO $PERF_ENV odl perf $t --backend kernel --client 0 --connect-timeout 60 -q $*") ||
		fail "odl perf $t $c -> $s ($PERF_IO): $out"
	echo "$out"
	wait_in "$s" 30 'grep -q "^rc=0" /tmp/perf-srv.log' || fail "server $s did not finish cleanly: $(vexec "$s" 'cat /tmp/perf-srv.log')"
}
step "odl perf latency 64 B with checksums, A -> B"
perf_pair B A latency -s 64 -n 300 --warmup 30 --checksum
step "odl perf bandwidth with checksums, A -> B and B -> A"
perf_pair B A bandwidth -s 4K,256K --bytes 8M --checksum
perf_pair A B bandwidth -s 256K --bytes 8M --checksum
step "a damaged link (cable ber 1e-6): B drops the frames its NHI flags, counts them; libodl resends, every byte arrives"
# Any of the stream's frames may come damaged: the module drops it (never
# takes the bytes) and counts it in rx_damaged; libodl on B finds the gap
# and A resends from the missing frame (protocol 1.2), so the run passes
# with every byte verified and says what it took.
damaged0=$(vexec B 'cat /sys/class/odl_tb5/odl_tb5_0/statistics/rx_damaged') || fail "no rx_damaged counter"
"$tb" cable ber 1e-6 >/dev/null || fail "cable ber"
vexec B "(odl perf bandwidth --backend kernel --server -d 0 --connect-timeout 20 --stall-timeout-ms 10000 -s 4K --bytes 4M --checksum >/tmp/ber-srv.log 2>&1; echo rc=\$? >>/tmp/ber-srv.log) &" ||
	fail "server B"
sleep 1
out=$(ODL_VM_EXEC_TIMEOUT=180 vexec A 'odl perf bandwidth --backend kernel --client 0 --connect-timeout 20 --stall-timeout-ms 10000 -s 4K --bytes 4M --checksum -q') ||
	fail "odl perf did not survive damaged frames: $out / B: $(vexec B 'cat /tmp/ber-srv.log')"
wait_in B 60 'grep -q "^rc=" /tmp/ber-srv.log' || fail "server B did not end: $(vexec B 'cat /tmp/ber-srv.log')"
grep -q "^rc=0" <<<"$(vexec B 'cat /tmp/ber-srv.log')" || fail "server B failed: $(vexec B 'cat /tmp/ber-srv.log')"
"$tb" cable ber 0 >/dev/null || fail "cable ber 0"
damaged1=$(vexec B 'cat /sys/class/odl_tb5/odl_tb5_0/statistics/rx_damaged')
[ "$damaged1" -gt "$damaged0" ] || fail "rx_damaged did not grow ($damaged0 -> $damaged1): damaged frames taken as good"
resent=$(sed -n 's/^link recovery (this end): \([0-9]*\) frames sent again.*/\1/p' <<<"$out")
[ -n "$resent" ] && [ "$resent" -ge 1 ] || fail "B dropped $((damaged1 - damaged0)) frames but A resent none: $out"
echo "ok: B dropped $((damaged1 - damaged0)) damaged frames, A resent $resent, all 4 MiB verified ($(grep -m1 -E '^ *4096 ' <<<"$out" || true))"
perf_pair B A bandwidth -s 256K --bytes 4M --checksum
if [ "$kernel" = 6.12 ]; then
	# Userspace variants over the same mmap path: once, on the newer kernel.
	step "odl perf bandwidth both directions at once, jitter, latency under load, mimo"
	perf_pair B A bandwidth --bidir -s 64K --bytes 4M --checksum
	# The same with the copy threads forced on (the guests have too few CPUs
	# for them to start by themselves): reservations ahead and frames held on
	# the mmap path.
	PERF_ENV="ODL_TX_THREAD=on ODL_RX_THREAD=on" perf_pair B A bandwidth --bidir -s 1M --bytes 8M --checksum
	perf_pair A B jitter -s 64 -n 50 --warmup 5 --interval-us 2000 --checksum
	perf_pair B A latency-load -s 64 -n 50 --warmup 5 --load-size 256K --bytes 4M --checksum
else
	step "odl perf mimo (bidir, jitter and latency under load: NOT RUN on $kernel, userspace covered on 6.12)"
fi
perf_pair B A mimo --streams 4 -s 256K --bytes 4M --checksum
rings_used B
rings_used A
step "read/write path (ODL_KERNEL_IO=rw): latency, bandwidth both ways"
PERF_IO=rw
perf_pair B A latency -s 64 -n 100 --warmup 10 --checksum
perf_pair A B bandwidth -s 4K,256K --bytes 4M --checksum
PERF_IO=mmap
out=$(vexec A 'ODL_KERNEL_IO=bogus odl perf latency --backend kernel --client 0 --connect-timeout 5 -q 2>&1') &&
	fail "ODL_KERNEL_IO=bogus was accepted: $out"
grep -q "want mmap or rw" <<<"$out" || fail "ODL_KERNEL_IO=bogus: unclear error: $out"

if [ "$kernel" = 6.12 ]; then
	# The file service is userspace over the same device: once, on the newer kernel.
	step "odl pair, odl files serve and odl cp over the link (kernel backend)"
	# Pairing: both hosts at once, the same code on each.
	vexec B "(odl pair --backend kernel -d 0 --keys /tmp/kb --name vm-b --yes --timeout 60 >/tmp/pair.log 2>&1; echo rc=\$? >>/tmp/pair.log) &" ||
		fail "odl pair on B did not start"
	code_a=$(ODL_VM_EXEC_TIMEOUT=90 vexec A 'odl pair --backend kernel -d 0 --keys /tmp/ka --name vm-a --yes --timeout 60') ||
		fail "odl pair on A: $code_a"
	wait_in B 30 'grep -q "^rc=0" /tmp/pair.log' || fail "odl pair on B: $(vexec B 'cat /tmp/pair.log')"
	code_a=$(echo "$code_a" | sed -n 's/.*pairing code \([0-9 ]*\)$/\1/p')
	code_b=$(vexec B 'sed -n "s/.*pairing code \([0-9 ]*\)$/\1/p" /tmp/pair.log')
	[ -n "$code_a" ] && [ "$code_a" = "$code_b" ] || fail "pairing codes differ: A '$code_a', B '$code_b'"
	# B serves a folder; A pushes a file into it and pulls it back, SHA-256
	# checked by odl cp and once more here.
	vexec B "mkdir -p /tmp/share && (odl files serve /tmp/share --backend kernel -d 0 --keys /tmp/kb >/tmp/serve.log 2>&1; echo rc=\$? >>/tmp/serve.log) &" ||
		fail "odl files serve on B did not start"
	vexec A 'dd if=/dev/urandom of=/tmp/f.bin bs=1M count=8 2>/dev/null' || fail "VM A: no test file"
	out=$(ODL_VM_EXEC_TIMEOUT=300 vexec A 'odl cp /tmp/f.bin peer:in/ --backend kernel -d 0 --keys /tmp/ka --json') ||
		fail "odl cp A -> B: $out $(vexec B 'cat /tmp/serve.log')"
	grep -q '"ok": true' <<<"$out" || fail "odl cp A -> B: $out"
	echo "odl cp A -> B, 8 MiB: $(echo "$out" | grep -E '"(gbps|seconds)"' | tr -d '\n ')"
	out=$(ODL_VM_EXEC_TIMEOUT=300 vexec A 'odl cp peer:in/f.bin /tmp/back.bin --backend kernel -d 0 --keys /tmp/ka --json') ||
		fail "odl cp B -> A: $out"
	echo "odl cp B -> A, 8 MiB: $(echo "$out" | grep -E '"(gbps|seconds)"' | tr -d '\n ')"
	sum_a=$(vexec A 'sha256sum </tmp/f.bin; sha256sum </tmp/back.bin' | sort -u)
	sum_b=$(vexec B 'sha256sum </tmp/share/in/f.bin')
	[ "$(echo "$sum_a" | wc -l)" = 1 ] && [ "$sum_a" = "$sum_b" ] || fail "copies differ: A $sum_a, B $sum_b"
	vexec B 'ls -a /tmp/share/in | grep -q odl-part' && fail "partial files left on B"
	step "odl cp with the cable pulled mid-transfer: nothing under the final name, resumed after the replug"
	vexec A 'dd if=/dev/urandom of=/tmp/g.bin bs=1M count=48 2>/dev/null' || fail "VM A: no test file"
	vexec A "(odl cp /tmp/g.bin peer:in/ --backend kernel -d 0 --keys /tmp/ka --json --retry-for 120 >/tmp/cp.json 2>/tmp/cp.err; echo rc=\$? >>/tmp/cp.err) &" ||
		fail "odl cp on A did not start"
	# Pulled once B holds a few MiB of it (the partial file, under its private
	# name). B's server is stopped in the same guest command that sees the
	# size: on a fast machine the rest of the file went over between a 1 s
	# poll and the unplug (CI, stop 54), so the cable is now pulled while the
	# transfer is held still; the server runs again before the replug and
	# finds its device gone, as it would after any pull.
	wait_guest B 60 'for f in /tmp/share/in/.odl-part.*; do [ -f "$f" ] && [ "${f%.state}" = "$f" ] && [ "$(stat -c %s "$f")" -ge 2097152 ] && break; f=; done; [ -n "$f" ] && kill -STOP $(pidof odl)' ||
		fail "no partial file on B: $(vexec A 'cat /tmp/cp.err')"
	"$tb" cable unplug || fail "unplug"
	vexec A 'grep -q "^rc=" /tmp/cp.err' && fail "odl cp ended before the unplug: $(vexec A 'cat /tmp/cp.err /tmp/cp.json')"
	vexec B '[ -e /tmp/share/in/g.bin ]' && fail "g.bin under its final name on B while cut off"
	vexec B 'kill -CONT $(pidof odl)' || fail "odl files serve on B gone while stopped"
	sleep 2
	"$tb" cable plug || fail "plug"
	wait_in A 180 'grep -q "^rc=" /tmp/cp.err' || fail "odl cp did not end after the replug: $(vexec A 'cat /tmp/cp.err')"
	vexec A 'grep -q "^rc=0" /tmp/cp.err' ||
		fail "odl cp after the replug: $(vexec A 'cat /tmp/cp.err /tmp/cp.json'); B's server: $(vexec B 'cat /tmp/serve.log; ls -l /dev/odl_tb5_* /sys/class/odl_tb5/')"
	out=$(vexec A 'cat /tmp/cp.json')
	python3 -c 'import json, sys; r = json.loads(sys.argv[1]); sys.exit(0 if r["ok"] and r["reconnects"] >= 1 and r["resumed_bytes"] > 0 else 1)' "$out" ||
		fail "odl cp after the replug did not reconnect and resume: $out"
	[ "$(vexec A 'sha256sum </tmp/g.bin')" = "$(vexec B 'sha256sum </tmp/share/in/g.bin')" ] || fail "g.bin differs after the resume"
	vexec B 'ls -a /tmp/share/in | grep -q odl-part' && fail "partial files left on B after the resume"
	echo "odl cp across an unplug, 48 MiB: $(echo "$out" | grep -E '"(reconnects|resumed_bytes|seconds)"' | tr -d '\n ')"
	vexec B 'kill -TERM $(pidof odl)' || fail "no odl files serve on B to stop"
	wait_in B 30 'grep -q "^rc=0" /tmp/serve.log' || fail "odl files serve did not end cleanly: $(vexec B 'cat /tmp/serve.log')"
	# What the server says: the device going and coming back, and nothing else.
	vexec B 'grep -v "^rc=0\|device 0 went away; serving again when it is back\|device 0 is back\|device 0: .*; trying again" /tmp/serve.log' &&
		fail "odl files serve logged: $(vexec B 'cat /tmp/serve.log')"
	vexec B 'grep -q "device 0 is back" /tmp/serve.log' || fail "odl files serve did not say the device came back: $(vexec B 'cat /tmp/serve.log')"
	vexec A 'rm -f /tmp/f.bin /tmp/back.bin /tmp/g.bin'; vexec B 'rm -rf /tmp/share'
else
	step "odl pair / files serve / cp (NOT RUN on $kernel: userspace over the same device, covered on 6.12)"
fi

step "coexistence: thunderbolt_net traffic on thunderbolt0 while odl perf runs"
tbnet_up
vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "INFO state 2"' ||
	fail "odl_tb5 lost its login when thunderbolt_net came up"
vexec B 'iperf3 -s -D -1 >/dev/null 2>&1' || fail "VM B: iperf3 -s failed"
sleep 1
vexec A '(iperf3 -c 10.99.0.2 -t 8 -f m >/tmp/iperf.log 2>&1; echo rc=$? >>/tmp/iperf.log) &' ||
	fail "VM A: iperf3 -c failed to start"
vexec B '(ping -c 20 -i 0.3 -W 3 10.99.0.1 >/tmp/ping.log 2>&1; echo rc=$? >>/tmp/ping.log) &' ||
	fail "VM B: ping failed to start"
perf_pair B A bandwidth -s 64K --bytes 4M --checksum
perf_pair A B latency -s 64 -n 50 --warmup 5 --checksum
wait_in A 60 'grep -q "^rc=" /tmp/iperf.log' || fail "iperf3 over thunderbolt0 did not finish"
vexec A 'grep -q "^rc=0" /tmp/iperf.log' || fail "iperf3 over thunderbolt0 failed: $(vexec A 'cat /tmp/iperf.log')"
mbps=$(vexec A 'awk "/receiver/ { print \$(NF-2) }" /tmp/iperf.log')
awk -v m="$mbps" 'BEGIN { exit !(m > 0) }' || fail "iperf3 over thunderbolt0: '$mbps' Mbit/s"
echo "iperf3 A -> B over thunderbolt0 during odl perf: $mbps Mbit/s"
wait_in B 60 'grep -q "^rc=" /tmp/ping.log' || fail "ping over thunderbolt0 did not finish"
vexec B 'grep -q " 0% packet loss" /tmp/ping.log' || fail "ping over thunderbolt0 lost packets: $(vexec B 'cat /tmp/ping.log')"
vexec B 'grep round-trip /tmp/ping.log'

step "peer module reload (B), A's device mapped meanwhile"
# A maps its device and holds it: A's own module must refuse to unload, and
# when B unloads, A's service is removed under the mappings (pages must stay,
# posts answer ENODEV).
vexec A '(odl_tb5_ioctl /dev/odl_tb5_0 0 gone >/tmp/gone.log 2>&1; echo rc=$? >>/tmp/gone.log) &' ||
	fail "A: gone checker did not start"
wait_in A 30 'grep -q "^mapped" /tmp/gone.log' || fail "A: gone checker did not map: $(vexec A 'cat /tmp/gone.log')"
if vexec A 'rmmod odl_tb5 2>/dev/null'; then
	fail "A: rmmod odl_tb5 succeeded while the device was mapped"
fi
vexec B 'rmmod odl_tb5' || fail "rmmod B"
wait_in A 30 '! test -e /dev/odl_tb5_0' || fail "A kept /dev/odl_tb5_0 after B unloaded"
wait_in A 150 'grep -q "^rc=" /tmp/gone.log' || fail "A: gone checker did not finish"
vexec A 'grep -q "^rc=0" /tmp/gone.log' || fail "A: device removed while mapped: $(vexec A 'cat /tmp/gone.log')"
vexec A 'grep "gone: all" /tmp/gone.log'
vexec B "insmod /lib/modules/odl_tb5.ko $RINGS" || fail "insmod B again"
wait_login 60 "after reload"
rings_in A 4
perf_pair B A latency -s 64 -n 50 --warmup 5

step "late announcement: the peer holds our properties from before the load"
# B withdraws its service (A re-reads B's properties without it), then
# loads with announce=0: A is not told, the state the discovery race leaves
# (docs/kmod.md). B's first login gets no answer; B must re-announce once,
# A re-reads, binds and logs in.
vexec B 'rmmod odl_tb5' || fail "rmmod B"
wait_in A 30 '! test -e /dev/odl_tb5_0' || fail "A kept /dev/odl_tb5_0 after B unloaded"
vexec B "insmod /lib/modules/odl_tb5.ko announce=0 $RINGS" || fail "insmod B announce=0"
wait_login 60 "after a late announcement"
out=$(vexec B 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "STATS logins"')
echo "B: $out"
grep -q "reannounces 1 " <<<"$out" || fail "B: expected exactly one re-announcement: $out"
vexec B 'dmesg | grep -q "service re-announced: 0"' || fail "B: no re-announcement notice in dmesg"
perf_pair B A latency -s 64 -n 50 --warmup 5 --checksum

step "discovery race: B loads the moment A reads B's properties after a replug"
# The real race behind the late announcement: A reads B's properties before
# B has added A, and B loads in between. Dynamic debug of xdomain.c on B shows
# A's properties request; B loads right after it. When B had not yet added A
# ("window hit"), only the re-announce gets B's service to A.
vexec B 'rmmod odl_tb5' || fail "rmmod B"
"$tb" cable unplug || fail "unplug"
for v in A B; do
	wait_in "$v" 30 '! test -e /sys/bus/thunderbolt/devices/0-1' || fail "VM $v still sees the peer after unplug"
done
ddc=/sys/kernel/debug/dynamic_debug/control
vexec B "test -w $ddc || mount -t debugfs none /sys/kernel/debug; echo 'file xdomain.c +p' >$ddc" ||
	fail "B: no dynamic debug for xdomain.c"
# One line: the testbed's exec channel is line based.
race='n=$(dmesg | grep -c "properties request"); for k in $(seq 3000); do [ "$(dmesg | grep -c "properties request")" -gt "$n" ] && break; done;'
race="$race"' if test -e /sys/bus/thunderbolt/devices/0-1; then echo "window missed"; else echo "window hit"; fi;'
race="$race"' insmod /lib/modules/odl_tb5.ko '"$RINGS"'; echo "insmod rc=$?"'
vexec B "rm -f /tmp/race.log; ($race) >/tmp/race.log 2>&1 &" || fail "B: race loader"
"$tb" cable plug || fail "plug"
for v in A B; do
	wait_in "$v" 90 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "INFO state 2"' ||
		fail "VM $v: no login after loading in the discovery window: $(vexec B 'cat /tmp/race.log')"
done
vexec B "echo 'file xdomain.c -p' >$ddc" || true
out=$(vexec B 'tr "\n" " " </tmp/race.log; odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "STATS logins"')
echo "B: $out"
grep -q "insmod rc=0" <<<"$out" || fail "B: insmod in the discovery window failed: $out"

# Each cycle a different pairing (a plain repeat adds nothing the
# unplug/unbind steps below do not).
step "load/unload loop: 3 cycles, login each time (1: rings=1; 3: rings=4 against rings=1; 5: polling mode, rings=4)"
for cycle in 1 3 5; do
	args= argsb=
	[ "$cycle" = 3 ] && args=$RINGS
	[ "$cycle" = 5 ] && args="poll=1 irq_throttle_us=2 $RINGS" argsb=$args
	vexec A 'rmmod odl_tb5' || fail "cycle $cycle: rmmod A"
	vexec B 'rmmod odl_tb5' || fail "cycle $cycle: rmmod B"
	for v in A B; do
		vexec "$v" '! test -e /dev/odl_tb5_0 && ! grep -q "^odl_tb5 " /proc/modules' ||
			fail "cycle $cycle: VM $v still has odl_tb5 after rmmod"
	done
	vexec A "insmod /lib/modules/odl_tb5.ko $args" || fail "cycle $cycle: insmod A $args"
	vexec B "insmod /lib/modules/odl_tb5.ko $argsb" || fail "cycle $cycle: insmod B $argsb"
	for v in A B; do
		wait_in "$v" 60 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "INFO state 2"' ||
			fail "cycle $cycle: VM $v: no login within 60 s"
	done
	echo "cycle $cycle: logged in on both"
	if [ "$cycle" = 1 ]; then
		rings_in A 1
		perf_pair A B mimo --streams 4 -s 64K --bytes 1M --checksum
		if [ "$kernel" != 6.1 ]; then
			# split=0 (default) on B: A's split sends are refused.
			vexec B '(odl_tb5_dmabuf /dev/odl_tb5_0 sink >/tmp/sink.log 2>&1; echo rc=$? >>/tmp/sink.log) &' ||
				fail "B: sink did not start"
			vexec A 'odl_tb5_dmabuf /dev/odl_tb5_0 refused' || fail "A: split sends to a peer with split=0"
			wait_in B 60 'grep -q "^rc=" /tmp/sink.log' || fail "B: sink did not finish"
			vexec B 'grep -q "^rc=0" /tmp/sink.log' || fail "B: sink: $(vexec B 'cat /tmp/sink.log')"
		fi
	elif [ "$cycle" = 3 ]; then
		# A offers 4, B (default) 1: both use one ring pair.
		rings_in A 1
		rings_in B 1
		vexec A "odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q 'local_rings 4 peer_rings 1'" ||
			fail "A: mixed pair: $(vexec A 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "INFO state"')"
		perf_pair B A mimo --streams 4 -s 64K --bytes 1M --checksum
	fi
done
for v in A B; do
	if vexec "$v" 'dmesg | grep -v "module verification failed" | grep -E "WARNING:|BUG[: ]|Oops|refcount|leak"'; then
		fail "VM $v: kernel log has warnings after the load/unload loop"
	fi
done

step "polling mode (poll=1, irq_throttle_us=2): odl perf with checksums"
for v in A B; do
	# 2 us: 8 units of 256 ns.
	vexec "$v" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "rx_poll 1 irq_throttle_ns 2048"' ||
		fail "VM $v: polling mode not in effect: $(vexec "$v" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "INFO state"')"
done
perf_pair B A latency -s 64 -n 100 --warmup 10 --checksum
perf_pair B A bandwidth -s 4K,256K --bytes 2M --checksum
perf_pair A B mimo --streams 4 -s 64K --bytes 2M --checksum
rings_in A 4
rings_used A
for v in A B; do
	out=$(vexec "$v" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "STATS logins"')
	echo "$v: $out"
	starts=$(echo "$out" | sed -n 's/.*rx_poll_starts \([0-9]*\).*/\1/p')
	[ "${starts:-0}" -gt 0 ] || fail "VM $v: no polls started in polling mode: $out"
done

step "cable unplug mid-transfer (polling mode, rings=4, mmap path)"
# 64 GiB: far more than any guest moves before the unplug 5 s in (1 GiB
# could be through by then on a fast machine, as odl cp's 48 MiB above was).
vexec B "(odl perf bandwidth --backend kernel --server -d 0 --connect-timeout 60 -s 1M --bytes 64G >/tmp/perf-srv.log 2>&1; echo rc=\$? >>/tmp/perf-srv.log) &"
sleep 1
vexec A "(odl perf bandwidth --backend kernel --client 0 --connect-timeout 60 -q -s 1M --bytes 64G --stall-timeout-ms 5000 >/tmp/perf-cli.log 2>&1; echo rc=\$? >>/tmp/perf-cli.log) &"
sleep 5
"$tb" cable unplug || fail "unplug"
wait_in A 60 'grep -q "^rc=[1-9]" /tmp/perf-cli.log' || fail "client A did not fail after unplug: $(vexec A 'cat /tmp/perf-cli.log')"
wait_in B 60 'grep -q "^rc=[1-9]" /tmp/perf-srv.log' || fail "server B did not fail after unplug: $(vexec B 'cat /tmp/perf-srv.log')"
vexec A 'tail -n 2 /tmp/perf-cli.log'
wait_in A 30 '! test -e /dev/odl_tb5_0' || fail "A kept /dev/odl_tb5_0 after unplug"
"$tb" cable plug || fail "plug"
wait_login 90 "after replug"
rings_in B 4
perf_pair B A mimo --streams 4 -s 64K --bytes 1M --checksum

# Stopping a ring in polling mode while its Rx interrupt is masked for a poll
# warned in tb_ring_stop() ("interrupt for RX ring N is already disabled",
# issue 13; docs/kmod.md). Every ring stop path, with traffic both ways on
# all 4 rings (the checker's flood mode, streams 0..3) when it comes: cable
# unplug (removal by hot-unplug; the unplug comes at a different point of
# the traffic each cycle), and unbinding one side's service (B's; with
# ODL_STOP_UNBINDS=N, B's and A's in turn; that side: remove, the other: the
# peer's LOGOUT resets it; tests/vm/unload_test.sh unloads under traffic). Unbinding stops the rings while frames still arrive, so it hit
# the race far more often than unplug (where the link is dead before the
# removal runs): the module before the fix warned in 7 of 8 unbinds and 5 of
# 50 unplug cycles (6.1 and 6.12 together).
STOP_UNPLUGS=${ODL_STOP_UNPLUGS:-3}
STOP_UNBINDS=${ODL_STOP_UNBINDS:-1}
flood_start() {
	local v
	for v in A B; do
		vexec "$v" '(odl_tb5_ioctl /dev/odl_tb5_0 0 flood 60 >/tmp/flood.log 2>&1; echo rc=$? >>/tmp/flood.log) &' ||
			fail "VM $v: flood did not start ($1)"
	done
	for v in A B; do
		wait_guest "$v" 60 'grep -q "^flooding" /tmp/flood.log' ||
			fail "VM $v: no frames on all 4 streams ($1): $(vexec "$v" 'cat /tmp/flood.log')"
	done
}
# flood_end WHEN [gone]: both floods ended as the link went (and the devices
# are gone); no ring stop warned.
flood_end() {
	local v cond='grep -q "^rc=" /tmp/flood.log'
	[ "${2:-}" = gone ] && cond="$cond && ! test -e /dev/odl_tb5_0"
	for v in A B; do
		wait_guest "$v" 60 "$cond" || fail "VM $v: flood did not end ($1): $(vexec "$v" 'cat /tmp/flood.log; ls /dev/odl_tb5*')"
		vexec "$v" 'grep "^flood:" /tmp/flood.log && grep -q "^rc=0" /tmp/flood.log' ||
			fail "VM $v: flood ($1): $(vexec "$v" 'cat /tmp/flood.log')"
		if vexec "$v" 'dmesg | grep -E "already (disabled|enabled|stopped)|WARNING:|BUG[: ]|Oops"'; then
			fail "VM $v: kernel log after a ring stop ($1)"
		fi
	done
}
wait_login_fast() {
	local v
	for v in A B; do
		wait_guest "$v" 90 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q "INFO state 2"' ||
			fail "VM $v: no logged-in /dev/odl_tb5_0 within 90 s ($1)"
	done
}
# unbind_rebind VM: remove VM's odl_tb5 service mid-traffic and bind it again.
unbind_rebind() {
	local drv=/sys/bus/thunderbolt/drivers/odl_tb5 svc t0=$SECONDS
	svc=$(vexec "$1" "ls $drv | grep '^[0-9]*-'") || fail "VM $1: no bound odl_tb5 service"
	flood_start "unbind $1"
	vexec "$1" "echo $svc >$drv/unbind" || fail "VM $1: unbind $svc"
	flood_end "unbind $1"
	vexec "$1" "echo $svc >$drv/bind" || fail "VM $1: bind $svc"
	wait_login_fast "after unbinding $1"
	echo "unbind $1: clean ($((SECONDS - t0)) s)"
}
step "ring stops with traffic on all 4 rings both ways (polling mode): $STOP_UNPLUGS unplug/replug cycles, $STOP_UNBINDS unbinds"
for cycle in $(seq "$STOP_UNPLUGS"); do
	t0=$SECONDS
	flood_start "unplug cycle $cycle"
	sleep "0.$((cycle * 3 % 10))"
	"$tb" cable unplug >/dev/null || fail "unplug (cycle $cycle)"
	flood_end "unplug cycle $cycle" gone
	"$tb" cable plug >/dev/null || fail "plug (cycle $cycle)"
	wait_login_fast "replug, cycle $cycle"
	echo "unplug cycle $cycle: clean ($((SECONDS - t0)) s)"
done
for cycle in $(seq "$STOP_UNBINDS"); do
	if [ $((cycle % 2)) = 1 ]; then unbind_rebind B; else unbind_rebind A; fi
done
rings_in A 4
for v in A B; do vexec "$v" 'odl_tb5_ioctl /dev/odl_tb5_0 0 | grep "STATS logins"'; done

step "unload both, kernel logs clean"
vexec A 'rmmod odl_tb5' || fail "rmmod A"
vexec B 'rmmod odl_tb5' || fail "rmmod B"
for v in A B; do
	# "module verification failed" is the unsigned-module taint notice.
	if vexec "$v" 'dmesg | grep -v "module verification failed" | grep -E "WARNING:|BUG[: ]|Oops|already (disabled|enabled|stopped)|odl_tb5.*(error|failed)|refcount|leak"'; then
		fail "VM $v: kernel log has warnings"
	fi
done
echo "PASS (${SECONDS} s)"
