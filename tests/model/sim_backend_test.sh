#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libodl's sim backend against odl-linkd --sim: bad setups refused with the
# reason; odl perf latency and bandwidth between two processes with
# checksums over a modelled link; pacing (a 10 Gb/s Gen2 x1 cable carries
# what the model says, not what the machine could); the cable unplugged
# mid-stream and the model server killed mid-stream end the run with the
# cause within a bound; bit errors mid-stream cost resent frames, not the
# run; a third program is refused; pipeline timing (the reduced model)
# refused where it does not fit, paced and unplugged like the full model.
# Every process the test starts is stopped by it.
#
# Usage: sim_backend_test.sh ODL ODL_LINKD
set -euo pipefail
odl=$1
linkd=$2
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-sim-test.XXXXXX")
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done
	exit 1
}
step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
# wait_gone PID SECONDS: until PID has exited (bounded), 20 checks a second.
wait_gone() {
	local i
	for i in $(seq $(($2 * 20))); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.05
	done
	return 1
}
export ODL_SIM_SOCKET=$tmp/sim.sock
# The hand-made programs below speak the protocol through sim_proto.py.
export PYTHONPATH=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)${PYTHONPATH:+:$PYTHONPATH}
# No SYSTEMC_DISABLE_COPYRIGHT_MESSAGE here: the server keeps SystemC's banner
# off its log by itself (the quiet checks below see it if not).
unset SYSTEMC_DISABLE_COPYRIGHT_MESSAGE

# start_server ARGS...: odl-linkd --sim on $ODL_SIM_SOCKET, waits for it.
# The full model unless ARGS name a timing: the default (auto) has steps of
# its own, which empty default_timing.
default_timing=(--sim-timing event)
start_server() {
	local timing=("${default_timing[@]}")
	[[ " $* " == *" --sim-timing "* ]] && timing=()
	# Emptied here, not by the background redirection: the loop below must
	# not find the last server's banner before the new one has started.
	: >"$tmp/linkd.log"
	"$linkd" --sim --socket "$ODL_SIM_SOCKET" --control "$tmp/ctl.sock" "${timing[@]}" "$@" >>"$tmp/linkd.log" 2>&1 &
	server=$!
	pids+=("$server")
	for _ in $(seq 100); do
		grep -q 'serving the sim backend' "$tmp/linkd.log" && [ -S "$ODL_SIM_SOCKET" ] && return 0
		kill -0 "$server" 2>/dev/null || fail "odl-linkd --sim exited: $(cat "$tmp/linkd.log")"
		sleep 0.1
	done
	fail "odl-linkd --sim did not start within 10 s"
}
stop_server() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
}
ctl() { python3 - "$tmp/ctl.sock" "$*" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n")
print(s.recv(4096).decode().strip())
PY
}

step "bad setups: no server, unknown profile, bad cable, options without --sim"
set +e
out=$("$odl" perf latency --backend sim -n 5 2>&1)
rc=$?
set -e
[ "$rc" != 0 ] && grep -q "no model server at $ODL_SIM_SOCKET" <<<"$out" ||
	fail "perf without a server: exit $rc: $out"
# refused "OPTIONS:REASON": odl-linkd --sim OPTIONS exits 1 saying REASON,
# before it listens (no socket left).
refused() {
	local bad=$1 out rc
	set +e
	out=$("$linkd" --sim --socket "$tmp/x.sock" ${bad%%:*} 2>&1)
	rc=$?
	set -e
	[ "$rc" = 1 ] && grep -q -- "${bad#*:}" <<<"$out" || fail "odl-linkd --sim ${bad%%:*}: exit $rc: $out"
	[ ! -e "$tmp/x.sock" ] || fail "odl-linkd --sim ${bad%%:*} left a socket: it listened before refusing"
}
for bad in "--profile nope:unknown platform 'nope'" "--gen gen2 --asymmetric:bad cable" \
	"--lanes 1 --asymmetric:bad cable" "--links 2 --profile nope:unknown platform 'nope'" \
	"--links 3 --gen gen2 --asymmetric:link 0: bad cable"; do
	refused "$bad"
done
set +e
out=$("$linkd" --socket "$tmp/x.sock" --profile apple-tb5 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] && grep -q -- "--profile needs --sim" <<<"$out" || fail "--profile without --sim: exit $rc: $out"
printf 'link:\n  gen4_coding_efficiency: {value: [1]}\n' >"$tmp/bad-cal.yaml"
set +e
out=$("$linkd" --sim --socket "$tmp/x.sock" --calibration "$tmp/bad-cal.yaml" 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "bad-cal.yaml:[0-9]" <<<"$out" || fail "bad calibration: exit $rc: $out"
# A negative seed is no seed (it wrapped to 2^64 - 1 and the server ran).
set +e
out=$(timeout 10 "$linkd" --sim --socket "$tmp/x.sock" --seed -1 2>&1)
rc=$?
set -e
[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "'-1' is not a whole number below 10^18" <<<"$out" ||
	fail "--seed -1: exit $rc: $out"
[ ! -e "$tmp/x.sock" ] || fail "odl-linkd --sim --seed -1 left a socket: it listened before refusing"
rm -f "$tmp/x.sock"

# fake_client SOCK: waits (bounded) for a hand-made server at SOCK, then runs
# a short odl perf client against it; sets out and rc.
fake_client() {
	for _ in $(seq 50); do [ -S "$1" ] && break; sleep 0.1; done
	set +e
	out=$(ODL_SIM_SOCKET=$1 timeout 20 "$odl" perf latency --backend sim --client 0 -n 5 --connect-timeout 5 2>&1)
	rc=$?
	set -e
}

step "TB5 (gen4 x2, intel-tb5-discrete): latency 64 B and 64 KiB, two processes, checksums"
start_server
# The default warmup (1000 round trips), not a short one: on two CPUs the
# first few hundred round trips of a fresh pair of programs (three busy
# processes) measured 6.5 us at 64 B against 4.1 us after them, so the
# 64 B size, measured first, came out slower than 4 KiB in half the runs.
# 64 KiB rather than 4 KiB beside it: the model puts 64 KiB some 13 us
# above 64 B (4 KiB about 1 us), more than a test running beside this one
# on two CPUs can move a median.
"$odl" perf latency --backend sim -s 64,64K -n 300 --checksum --json --quiet >"$tmp/lat.json" 2>"$tmp/lat.log" ||
	fail "perf latency over sim"
python3 - "$tmp/lat.json" <<'PY' || fail "latency results"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "sim" and d["checksum"], d
r = {x["size"]: x for x in d["results"]}
assert set(r) == {64, 65536}, r.keys()
m = d["model_timing"]
assert m["frames"] >= 2 * 300 * (1 + 16), m  # 64 KiB: 16 frames or more
for s, x in r.items():
    assert x["samples"] == 300, x
    # Never faster than a TB5 link can be (>= 1 us one way); slow only
    # when the run says the model fell behind.
    assert x["p50_us"] >= 1.0, x
    assert x["p50_us"] < 5000 or m["distorted"], x
assert r[65536]["p50_us"] > r[64]["p50_us"] or m["distorted"], r
print("latency p50 64 B %.1f us, 64 KiB %.1f us; model frames %d, late %d, lag max %.1f us"
      % (r[64]["p50_us"], r[65536]["p50_us"], m["frames"], m["late_frames"], m["lag_max_us"]))
PY
# Quiet when healthy: two programs that ended in order leave nothing in the
# server's log but its banner (a goodbye is no error).
for _ in $(seq 20); do [ -z "$(grep -v 'serving the sim backend' "$tmp/linkd.log")" ] || break; sleep 0.1; done
noise=$(grep -v 'serving the sim backend' "$tmp/linkd.log" || true)
[ -z "$noise" ] || fail "an orderly run left this in the server's log: $noise"
step "the server spinning between busy turns (--spin on; auto turns it on with 4 or more CPUs)"
stop_server
start_server --spin on
"$odl" perf latency --backend sim -s 64,4K -n 200 --warmup 20 --checksum --json --quiet >"$tmp/spin.json" 2>"$tmp/spin.log" ||
	fail "perf latency over sim with the server spinning"
python3 - "$tmp/spin.json" <<'PY' || fail "latency results with the server spinning"
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["size"]: x for x in d["results"]}
assert set(r) == {64, 4096} and all(x["samples"] == 200 for x in r.values()), r
assert all(x["p50_us"] >= 1.0 for x in r.values()), r
print("spinning: p50 64 B %.1f us, 4 KiB %.1f us" % (r[64]["p50_us"], r[4096]["p50_us"]))
PY
step "a message's own host costs are charged once per message, not per frame"
# A profile whose post costs 2 ms a message: a 64 KiB message (17 frames)
# pays it once, as in the model's own runs, so it takes little longer than
# a 64 B one; charged per frame it would take 16 x 2 ms more. (Milliseconds:
# on two CPUs a program may wait that long for one anyway.)
stop_server
python3 - "$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/model/calibration/default.yaml" "$tmp/post-cal.yaml" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
at = text.index("\n  intel-tb5-discrete:")
m = re.compile(r"\n    post: \{value: [^,]+,").search(text, at)
assert m, "no post cost in the intel-tb5-discrete profile"
open(sys.argv[2], "w").write(text[:m.start()] + "\n    post: {value: 2ms," + text[m.end():])
PY
start_server --calibration "$tmp/post-cal.yaml"
"$odl" perf latency --backend sim -s 64,64K -n 20 --warmup 2 --json --quiet >"$tmp/post.json" 2>"$tmp/post.log" ||
	fail "perf latency over sim with a costly post"
python3 - "$tmp/post.json" <<'PY' || fail "a message's costs per message"
import json, sys
r = {x["size"]: x["p50_us"] for x in json.load(open(sys.argv[1]))["results"]}
assert r[64] >= 2000, r             # the post is paid
assert r[65536] < r[64] + 10000, r  # once, not once per frame (+32 ms)
print("a 2 ms post: p50 64 B %.1f us, 64 KiB %.1f us" % (r[64], r[65536]))
PY
stop_server
start_server
step "a third program is refused while two hold the link"
"$odl" perf latency --backend sim --server --quiet >"$tmp/srv3.log" 2>&1 &
holder=$!
pids+=("$holder")
sleep 0.5
set +e
out=$(ODL_SIM_END=a timeout 20 "$odl" perf latency --backend sim --client 0 -n 5 --connect-timeout 3 2>&1)
rc=$?
set -e
echo "$out" | tail -n 2
# The holder took one end; ODL_SIM_END=a may be free or taken, so ask for
# the holder's own end too: one of the two must be refused by the server.
set +e
out2=$(ODL_SIM_END=b timeout 20 "$odl" perf latency --backend sim --client 0 -n 5 --connect-timeout 3 2>&1)
rc2=$?
set -e
{ [ "$rc" != 0 ] && grep -q "refused sim device 0: both of its ends are taken" <<<"$out"; } ||
	{ [ "$rc2" != 0 ] && grep -q "refused sim device 0: both of its ends are taken" <<<"$out2"; } ||
	fail "no refusal of an end in use: a: exit $rc: $out / b: exit $rc2: $out2"
kill "$holder" 2>/dev/null || true
wait "$holder" 2>/dev/null || true
stop_server

step "garbage from a program: dropped with the reason, the server serves the next ones"
start_server
# Unplugged, the model delivers nothing: a window overrun cannot be undone
# by acknowledgements arriving in time.
ctl cable unplug >/dev/null
python3 - "$ODL_SIM_SOCKET" <<'PY' || fail "could not send the garbage"
import socket, struct, sys, time
from sim_proto import HDR, MAGIC, SLOT, connect, msg, rings
from sim_proto import hello as hello_payload
hello = hello_payload(pid=1234)
def conn():
    return connect(sys.argv[1])
def drain(s):
    s.settimeout(5)
    try:
        while s.recv(8192):
            pass
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
for bad in [b"\x01\x02", msg(6),                                 # WAKE before HELLO
            msg(1, hello, length=10),                             # length lies
            msg(1, hello.replace(struct.pack("<I", MAGIC), b"\0" * 4)),
            msg(4),                                               # LINK from a client
            msg(1, hello)]:                                       # HELLO without its rings
    s = conn()
    s.send(bad)
    drain(s)
fd, m = rings(4096)                                               # rings too small
s = conn()
socket.send_fds(s, [msg(1, hello)], [fd])
drain(s)
fd, m = rings()                                                   # an impossible head
s = conn()
socket.send_fds(s, [msg(1, hello)], [fd])
struct.pack_into("<Q", m, 128, 1000)
drain(s)
fd, m = rings()                                                   # more than its window
later = time.clock_gettime_ns(time.CLOCK_MONOTONIC) + 500_000_000  # still in the model when the rest come
for i in range(300):
    struct.pack_into("<IIQ", m, HDR + i * SLOT, 64, 0, later)
s = conn()
socket.send_fds(s, [msg(1, hello)], [fd])
struct.pack_into("<Q", m, 128, 300)
drain(s)
PY
for why in "did not start with HELLO" "length field does not match" "bad magic" "LINK from a client" \
	"HELLO without its ring memory" "ring memory of 4096 bytes" "corrupted its ring indices" \
	"more frames than its window"; do
	for _ in $(seq 200); do grep -q "$why" "$tmp/linkd.log" && break; sleep 0.1; done
	grep -q "$why" "$tmp/linkd.log" || fail "no '$why' in the server's log: $(cat "$tmp/linkd.log")"
done
kill -0 "$server" 2>/dev/null || fail "odl-linkd --sim died of garbage"
ctl cable plug >/dev/null
"$odl" perf latency --backend sim -s 64 -n 50 --checksum --quiet >/dev/null 2>"$tmp/after.log" ||
	fail "perf after the garbage: $(cat "$tmp/after.log")"
stop_server

step "a program that says goodbye with the server's messages unread ends in order (nothing logged)"
start_server
python3 - "$ODL_SIM_SOCKET" <<'PY' || fail "could not say goodbye"
import socket, sys, time
from sim_proto import BYE, HELLO, connect, hello, msg, rings
fd, m = rings(name="bye")
s = connect(sys.argv[1])
socket.send_fds(s, [msg(HELLO, hello())], [fd])
time.sleep(0.3)                     # the server's HELLO and LINK wait, unread
s.send(msg(BYE, seq=1))             # then close: Linux resets the connection
s.close()
PY
sleep 0.5
noise=$(grep -v 'serving the sim backend' "$tmp/linkd.log" || true)
[ -z "$noise" ] || fail "a goodbye with unread messages was logged as a failure: $noise"
stop_server

step "each program sees its peer's rings read-only; HELLO carries its host's completion cost"
start_server
python3 - "$ODL_SIM_SOCKET" "$(dirname "$0")/../../model/calibration/default.yaml" <<'PY' || fail "the peer's ring memory"
import mmap, os, re, socket, struct, sys
from sim_proto import HELLO, MAGIC, PEER, SIZE, SLOTS, VERSION, join
ends = [join(sys.argv[1], name, reserved=0xabc0 + i) for i, name in enumerate(("a", "b"))]  # reserved: tells the two apart
s, _ = ends[1]
s.settimeout(5)
peer = None
answer = None
for _ in range(4):
    data, fds, _, _ = socket.recv_fds(s, 256, 1)
    t, arg = struct.unpack_from("<H", data)[0], struct.unpack_from("<Q", data, 24)[0]
    if t == HELLO:
        answer = struct.unpack_from("<I", data, 32 + 24)[0]  # odl_sim_hello.answer_ns
    if t == PEER:
        assert len(fds) == 1 and arg != 0, (fds, arg)
        peer = fds[0]
        break
    for f in fds:
        os.close(f)
assert peer is not None, "no PEER message"
ro = mmap.mmap(peer, SIZE, prot=mmap.PROT_READ)
assert struct.unpack_from("<III", ro, 0) == (MAGIC, VERSION, SLOTS)
assert struct.unpack_from("<I", ro, 12)[0] == 0xabc0, "not the other program's memory"
try:
    mmap.mmap(peer, SIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    raise SystemExit("the peer's ring memory can be mapped writable")
except PermissionError:
    pass
print("PEER: the other program's rings, read-only")
# The default profile's modelled completion cost, from the shipped calibration.
cal = open(sys.argv[2]).read()
block = cal[cal.index("\n  intel-tb5-discrete:"):]
want = int(re.search(r"\n    completion: \{value: (\d+)ns", block).group(1))
assert answer == want, "HELLO's answer_ns %r, the profile's completion %d ns" % (answer, want)
print("HELLO: answer_ns %d (intel-tb5-discrete's completion)" % answer)
PY
stop_server

step "garbage from the server: the program fails with the reason, nothing hangs"
python3 - "$tmp/bad.sock" >"$tmp/badsrv.log" 2>&1 <<'PY' &
import socket, struct, sys, os
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1]); s.listen(1)
c, _ = s.accept()
c.recv(8192)
from sim_proto import HELLO, LINK, hello, msg
c.send(msg(HELLO, hello(end=0, rate=10000, window=256, profile=b"fake", links=1)))
c.send(msg(LINK, seq=1, arg=7))                                   # LINK with unknown bits
c.settimeout(10)
try:
    c.recv(8192)
except Exception:
    pass
PY
fake=$!
pids+=("$fake")
fake_client "$tmp/bad.sock"
[ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q "the model server sent a bad message: LINK with a payload or unknown state bits" <<<"$out" ||
	fail "a server sending garbage: exit $rc: $out"

step "a frame handed over before it is due: the program takes it at once (what it completes waits for the due time: engine_test), 5 s early is refused"
# A server that runs the model ahead (--lookahead, pipeline timing) hands
# frames over early; this one hands one over 300 ms early (then 5 s:
# impossible, refused) and watches when the program takes it (its
# to_client.tail). The completion held until the due time is engine_test's
# TimedPair.
cat >"$tmp/early.py" <<'PY'
import struct, sys, time
from sim_proto import SLOTS, SLOT, HDR, fake_server
path, early_ms = sys.argv[1], int(sys.argv[2])
c, theirs, ours = fake_server(path)
struct.pack_into("<IIQ", ours, HDR, 64, 0, 0)            # our slot 0: a 64-byte frame of junk
ours[HDR + 64:HDR + 128] = b"\x5a" * 64
time.sleep(0.5)
now = lambda: time.clock_gettime_ns(time.CLOCK_MONOTONIC)
due = now() + early_ms * 1_000_000
descs = HDR + SLOTS * SLOT
struct.pack_into("<IIQQQ", theirs, descs, 64, 0, due, 7, now())  # handed over now
struct.pack_into("<Q", theirs, 256, 1)                 # to_client.head
taken = None
end = now() + (early_ms + 2000) * 1_000_000
while now() < end:
    if struct.unpack_from("<Q", theirs, 320)[0] == 1:   # to_client.tail
        taken = now()
        break
    time.sleep(0.0005)
if early_ms > 1000:
    print("taken" if taken else "never taken")
    sys.exit(0 if taken is None else 1)
assert taken is not None, "the program never took the frame"
ahead = (due - taken) / 1e6
assert ahead > early_ms / 2, "the program waited for the due time to take the frame (%.1f ms before it)" % ahead
print("taken %.1f ms before it was due (handed over %d ms early)" % (ahead, early_ms))
PY
for early in 300 5000; do
	rm -f "$tmp/early.sock"
	python3 "$tmp/early.py" "$tmp/early.sock" "$early" >"$tmp/early.log" 2>&1 &
	fake=$!
	pids+=("$fake")
	fake_client "$tmp/early.sock"
	set +e
	wait "$fake"
	frc=$?
	set -e
	[ "$frc" = 0 ] || fail "a frame $early ms early: $(cat "$tmp/early.log"); the program: exit $rc: $out"
	if [ "$early" = 300 ]; then
		echo "$(cat "$tmp/early.log")"
	else
		[ "$rc" != 0 ] && grep -q "handed over a frame due [0-9]* ms from now" <<<"$out" ||
			fail "a frame 5 s early: exit $rc: $out"
		echo "5 s early: $(grep -o 'the model server handed over a frame due [0-9]* ms from now' <<<"$out" | head -1)"
	fi
done

step "a program that has nothing sleeps for the server's WAKE when cores are short (ODL_SIM_SPIN=off), never with ODL_SIM_SPIN=on"
# Spinning and yielding on fewer cores than busy processes let the scheduler
# hold the server off for a time slice (64 B round trips of about 1 ms on two
# cores). This server watches the program's client_waiting flag: with
# ODL_SIM_SPIN=off it must be set while nothing comes, and set again after
# the server clears it and sends WAKE (the program woke and took it); with
# ODL_SIM_SPIN=on never.
cat >"$tmp/nap.py" <<'PY'
import struct, sys, time
from sim_proto import WAKE, BYE, fake_server, msg
path, mode = sys.argv[1], sys.argv[2]
c, theirs, _ = fake_server(path)
flag = lambda: struct.unpack_from("<I", theirs, 20)[0]         # odl_sim_shm.client_waiting
def wait_set(limit_s):
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if flag():
            return True
        time.sleep(0.0002)
    return False
seq = 3
if mode == "off":
    assert wait_set(2), "the program never slept (client_waiting never set)"
    for _ in range(3):
        struct.pack_into("<I", theirs, 20, 0)
        c.send(msg(WAKE, seq=seq)); seq += 1
        assert wait_set(2), "the program did not sleep again after a WAKE"
    print("slept, woke and slept again 3 times")
else:
    assert not wait_set(0.5), "the program slept with ODL_SIM_SPIN=on"
    print("never slept in 0.5 s")
c.send(msg(BYE, seq=seq))
time.sleep(0.2)
PY
for mode in off on; do
	rm -f "$tmp/nap.sock"
	python3 "$tmp/nap.py" "$tmp/nap.sock" "$mode" >"$tmp/nap.log" 2>&1 &
	fake=$!
	pids+=("$fake")
	for _ in $(seq 50); do [ -S "$tmp/nap.sock" ] && break; sleep 0.1; done
	set +e
	out=$(ODL_SIM_SPIN=$mode ODL_SIM_SOCKET=$tmp/nap.sock timeout 20 "$odl" perf latency --backend sim --client 0 -n 5 --connect-timeout 5 2>&1)
	rc=$?
	wait "$fake"
	frc=$?
	set -e
	[ "$frc" = 0 ] || fail "ODL_SIM_SPIN=$mode: $(cat "$tmp/nap.log"); the program: exit $rc: $out"
	grep -q "bad message\|WAKE" <<<"$out" && fail "ODL_SIM_SPIN=$mode: the program refused the server's WAKE: $out"
	echo "ODL_SIM_SPIN=$mode: $(cat "$tmp/nap.log")"
done

step "the server wakes a sleeping program when it hands it a frame (WAKE, client_waiting cleared)"
start_server
python3 - "$ODL_SIM_SOCKET" <<'PY' || fail "the server's WAKE"
import socket, struct, sys, time
from sim_proto import LINK, WAKE, join, msg
ends = [join(sys.argv[1], name) for name in ("a", "b")]
for s, _ in ends:
    s.settimeout(5)
def until_link(s):
    while True:
        data, fds, _, _ = socket.recv_fds(s, 256, 1)
        t, arg = struct.unpack_from("<H", data)[0], struct.unpack_from("<Q", data, 24)[0]
        if t == LINK and arg == 3:
            return
for s, _ in ends:
    until_link(s)
(sa, ma), (sb, mb) = ends
struct.pack_into("<I", mb, 20, 1)                        # b sleeps (client_waiting)
now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
struct.pack_into("<IIQ", ma, 384, 64, 0, now)           # a's slot 0: a 64-byte frame of zeros
struct.pack_into("<Q", ma, 128, 1)                      # to_server.head
if struct.unpack_from("<I", ma, 16)[0]:                 # the server sleeps: wake it
    struct.pack_into("<I", ma, 16, 0)
    sa.send(msg(WAKE, seq=1))                             # after its HELLO (0)
while True:
    data = sb.recv(256)
    if struct.unpack_from("<H", data)[0] == WAKE:
        break
assert struct.unpack_from("<Q", mb, 256)[0] == 1, "WAKE before the descriptor"
assert struct.unpack_from("<I", mb, 20)[0] == 0, "the server left client_waiting set"
print("b woken by the server with the frame in its ring")
PY
stop_server

# pacing [ODL-LINKD OPTIONS]: a Gen2 x1 server; 256 MiB of 4 KiB messages must
# come at the model's rate: never faster than the cable, not far slower
# unless the run says it was distorted.
pacing() {
	start_server --gen gen2 --lanes 1 "$@"
	rate=$(sed -n 's/.*gen2x1 1 m[a-z ]*, \([0-9]*\) Mb\/s each way.*/\1/p' "$tmp/linkd.log")
	[ -n "$rate" ] || fail "no rate in odl-linkd's banner: $(cat "$tmp/linkd.log")"
	"$odl" perf bandwidth --backend sim -s 4K --bytes 256M --checksum --json --quiet >"$tmp/bw.json" 2>"$tmp/bw.log" ||
		fail "perf bandwidth over sim $*: $(cat "$tmp/bw.log")"
	python3 - "$tmp/bw.json" "$rate" <<'PY' || fail "pacing $*"
import json, sys
d = json.load(open(sys.argv[1]))
rate = float(sys.argv[2]) / 1000
g = d["results"][0]["gbps"]
m = d["model_timing"]
print("measured %.2f Gb/s, the model's 4 KiB plateau %.2f Gb/s (%.1f %%); late %d of %d, lag max %.1f us"
      % (g, rate, 100 * (g / rate - 1), m["late_frames"], m["frames"], m["lag_max_us"]))
# The model's payload rate counts the 32-byte frame header; messages of
# 4 KiB take two frames. Never faster than the cable; not far slower
# unless the run says it was distorted.
assert d["verified"], d
assert g <= rate * 1.02, "faster than the modelled cable"
assert m["distorted"] or g >= rate * 0.45, "far slower than the model without saying so"
PY
	stop_server
}
step "pacing: Gen2 x1 (10 Gb/s): 256 MiB of 4 KiB messages at the model's rate"
pacing

step "cable unplugged mid-stream: the program gets the cause"
start_server --gen gen3 --lanes 2
"$odl" perf bandwidth --backend sim -s 64K --bytes 64G --quiet >"$tmp/unplug.out" 2>"$tmp/unplug.log" &
client=$!
pids+=("$client")
sleep 2
kill -0 "$client" 2>/dev/null || fail "the stream ended before the unplug: $(cat "$tmp/unplug.log")"
reply=$(ctl cable unplug)
[ "${reply#ok}" != "$reply" ] || fail "cable unplug: $reply"
t=$SECONDS
set +e
wait_gone "$client" 30
wait "$client"
rc=$?
set -e
[ "$rc" != 0 ] && grep -q "cable unplugged" "$tmp/unplug.log" || fail "after the unplug: exit $rc: $(cat "$tmp/unplug.log")"
echo "ended $((SECONDS - t)) s after the unplug: $(grep -m1 'unplugged' "$tmp/unplug.log")"
ctl status
stop_server

step "a scenario file: its hosts' profiles, its cable, and its unplug at 1.5 s"
cat >"$tmp/unplug.yaml" <<'YAML'
name: sim-unplug
duration: 3s
hosts:
  - {name: a, platform: apple-tb5}
  - {name: b, platform: intel-tb5-discrete}
cables:
  - {between: [a, b], generation: tb4, lanes: 2, length: 2m}
events:
  - {at: 1500ms, event: unplug, cable: 0}
workloads:
  - {name: bulk, type: stream, from: a, to: b, size: 1MiB, count: 4}
YAML
set +e
out=$("$linkd" --sim --socket "$tmp/x.sock" --scenario "$tmp/unplug.yaml" --gen gen2 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] && grep -q -- "--scenario sets the cable" <<<"$out" || fail "--scenario with --gen: exit $rc: $out"
# What the server cannot apply is refused, never run as something else: a
# host's completion override, a cable that starts unplugged.
sed 's/{name: a, platform: apple-tb5}/{name: a, platform: apple-tb5, completion: interrupt}/' \
	"$tmp/unplug.yaml" >"$tmp/override.yaml"
sed 's/length: 2m}/length: 2m, plugged: false}/' "$tmp/unplug.yaml" >"$tmp/unplugged.yaml"
for f in override:"not its 'completion' override" unplugged:"'plugged: false' is not applied"; do
	set +e
	out=$(timeout 10 "$linkd" --sim --socket "$tmp/x.sock" --scenario "$tmp/${f%%:*}.yaml" 2>&1)
	rc=$?
	set -e
	[ "$rc" = 1 ] && grep -qF -- "${f#*:}" <<<"$out" || fail "--scenario ${f%%:*}.yaml: exit $rc: $out"
done
# The model backend's host count is named as --hosts, and a topology with a
# trailing comma is refused (getline dropped the empty field).
for t in "--hosts 1:--hosts 1: the model backend serves 2 to 4 hosts" \
	"--hosts 3 --topology 0-1,:'0-1,' ends without a host pair"; do
	set +e
	# shellcheck disable=SC2086 # words on purpose
	out=$(timeout 10 "$linkd" --socket "$tmp/topo.sock" ${t%%:*} 2>&1)
	rc=$?
	set -e
	[ "$rc" = 1 ] && grep -qF -- "${t#*:}" <<<"$out" || fail "odl-linkd ${t%%:*}: exit $rc: $out"
done
step "socket paths: a file is not removed, a live server not taken over, one path not both"
echo "a user's data" >"$tmp/data.txt"
set +e
out=$(timeout 10 "$linkd" --sim --socket "$tmp/data.txt" 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "exists and is not a socket" <<<"$out" && [ "$(cat "$tmp/data.txt")" = "a user's data" ] ||
	fail "--socket on a file: exit $rc: $out; file now: $(cat "$tmp/data.txt" 2>&1)"
set +e
out=$(timeout 10 "$linkd" --sim --socket "$tmp/same.sock" --control "$tmp/same.sock" 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "are the same path" <<<"$out" || fail "--socket = --control: exit $rc: $out"
start_server
set +e
out=$(timeout 10 "$linkd" --sim --socket "$ODL_SIM_SOCKET" 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] && grep -q "another server is listening on it" <<<"$out" && [ -S "$ODL_SIM_SOCKET" ] ||
	fail "a second server on a live socket: exit $rc: $out"
kill -9 "$server"
wait "$server" 2>/dev/null || true
[ -S "$ODL_SIM_SOCKET" ] || fail "a killed server's socket should be left behind for this step"
start_server  # takes the stale socket over
stop_server
# scenario_unplug [ODL-LINKD OPTIONS]: a server on the scenario above; a
# stream over it must end with the cause within 10 s (the unplug is at
# 1.5 s). The server is left running for checks of its log.
scenario_unplug() {
	start_server --scenario "$tmp/unplug.yaml" "$@"
	local t=$SECONDS rc
	set +e
	"$odl" perf bandwidth --backend sim -s 64K --bytes 64G --quiet >"$tmp/scen.out" 2>"$tmp/scen.log"
	rc=$?
	set -e
	[ "$rc" != 0 ] && grep -q "cable unplugged" "$tmp/scen.log" || fail "scenario unplug $*: exit $rc: $(cat "$tmp/scen.log")"
	[ $((SECONDS - t)) -le 10 ] || fail "the scenario's unplug at 1.5 s ended the run only after $((SECONDS - t)) s"
}
scenario_unplug
grep -q "apple-tb5/intel-tb5-discrete tb4x2 2 m" "$tmp/linkd.log" || fail "scenario's profiles/cable not taken: $(cat "$tmp/linkd.log")"
grep -q "1 workload(s) are not run here" "$tmp/linkd.log" || fail "no word on the scenario's workloads"
grep -q "cable unplug at 1500 ms (scenario sim-unplug)" "$tmp/linkd.log" || fail "no scenario event in the log: $(cat "$tmp/linkd.log")"
stop_server

step "bit errors mid-stream (a scenario's ber 1e-5 for 0.5 s): the stream completes, every byte verified"
# The model drops each frame a bit error damaged; the programs' libodl
# finds the gap, asks again, and the sender resends (protocol 1.2).
# tb5_scenario FILE NAME EVENT...: two intel-tb5-discrete hosts on a 1 m
# TB5 x2 cable with these events (and a workload, which the server leaves
# to the programs).
tb5_scenario() {
	local file=$1 name=$2 e
	shift 2
	{
		printf 'name: %s\nduration: 10s\nhosts:\n' "$name"
		printf '  - {name: %s, platform: intel-tb5-discrete}\n' a b
		printf 'cables:\n  - {between: [a, b], generation: tb5, lanes: 2, length: 1m}\nevents:\n'
		for e in "$@"; do printf '  - {%s}\n' "$e"; done
		printf 'workloads:\n  - {name: bulk, type: stream, from: a, to: b, size: 1MiB, count: 4}\n'
	} >"$file"
}
tb5_scenario "$tmp/ber.yaml" sim-ber "at: 300ms, event: ber, cable: 0, ber: 1e-5" "at: 800ms, event: ber, cable: 0, ber: 0"
# ber_stream [OPTION...]: a server with the bit errors (and the options),
# 1 GiB through them with every byte checked.
ber_stream() {
	start_server --scenario "$tmp/ber.yaml" -v "$@"
	"$odl" perf bandwidth --backend sim -s 64K --bytes 1G --checksum --json --quiet >"$tmp/ber.json" 2>"$tmp/ber.log" ||
		fail "perf bandwidth through bit errors $*: $(cat "$tmp/ber.log")"
	stop_server
	# Either program may take end A (whichever reaches the server first), so the
	# stream's frames go A->B or B->A: count the losses both ways.
	lost=$(sed -n 's/.*frames A->B [0-9]* (lost \([0-9]*\)), B->A [0-9]* (lost \([0-9]*\)).*/\1 \2/p' "$tmp/linkd.log" |
		awk '{ print $1 + $2 }')
	[ -n "$lost" ] && [ "$lost" -ge 1 ] || fail "the model lost no frame to the bit errors $*: $(cat "$tmp/linkd.log")"
	python3 - "$tmp/ber.json" "$lost" <<'PY' || fail "perf's account of the bit errors $*"
import json, sys
d = json.load(open(sys.argv[1]))
r, rec = d["results"][0], d["recovery"]
assert d["verified"] and d["checksum"] and r["bytes"] >= 1 << 30, d
assert rec["resent_frames"] >= 1, rec
print("model lost %s frames; the sender resent %d; %.2f Gb/s, every byte verified"
      % (sys.argv[2], rec["resent_frames"], r["gbps"]))
PY
}
ber_stream

step "two links (--links 2, a process each): streams on both at once, an unplug on link 1 only, no device 2"
start_server --links 2 --gen gen3 --lanes 2
grep -q "sim device 1: " "$tmp/linkd.log" || fail "no second link in the banner: $(cat "$tmp/linkd.log")"
kids=$(ps -o pid= --ppid "$server" | wc -l)
[ "$kids" = 2 ] || fail "want a process per link, the router has $kids children"
"$odl" perf bandwidth --backend sim -d 0 -s 64K --bytes 256M --checksum --json --quiet >"$tmp/l0.json" 2>"$tmp/l0.log" &
l0=$!
pids+=("$l0")
"$odl" perf bandwidth --backend sim -d 1 -s 64K --bytes 64G --quiet >"$tmp/l1.out" 2>"$tmp/l1.log" &
l1=$!
pids+=("$l1")
sleep 1.5
kill -0 "$l1" 2>/dev/null || fail "link 1's stream ended before the unplug: $(cat "$tmp/l1.log")"
reply=$(ctl cable unplug)
[ "${reply#error}" != "$reply" ] && grep -q "needs the link" <<<"$reply" || fail "cable unplug without a link: $reply"
reply=$(ctl cable unplug 1)
[ "${reply#ok}" != "$reply" ] || fail "cable unplug 1: $reply"
set +e
wait_gone "$l1" 30
wait "$l1"
rc1=$?
wait_gone "$l0" 120
wait "$l0"
rc0=$?
set -e
[ "$rc1" != 0 ] && grep -q "cable unplugged" "$tmp/l1.log" || fail "link 1 after its unplug: exit $rc1: $(cat "$tmp/l1.log")"
[ "$rc0" = 0 ] || fail "link 0's stream beside link 1's unplug: exit $rc0: $(cat "$tmp/l0.log")"
python3 - "$tmp/l0.json" <<'PY' || fail "link 0's results"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["backend"] == "sim" and d["checksum"] and d["verified"], d
r = d["results"][0]
assert r["bytes"] == 256 << 20 and r["gbps"] > 0, r
print("link 0: 256 MiB verified at %.2f Gb/s while link 1 was unplugged" % r["gbps"])
PY
# Link 0 still works after link 1's unplug; link 1 stays down.
"$odl" perf latency --backend sim -d 0 -s 64 -n 50 --checksum --quiet >/dev/null 2>"$tmp/l0b.log" ||
	fail "link 0 after link 1's unplug: $(cat "$tmp/l0b.log")"
st=$(ctl status)
[ "$(grep -c '^link [01]: ok sim ' <<<"$st")" = 2 ] || fail "status of two links: $st"
grep -q "^link 1: .*lost" <<<"$st" || fail "status: $st"
reply=$(ctl cable unplug 2)
grep -q "^error no link 2" <<<"$reply" || fail "cable unplug 2: $reply"
set +e
out=$("$odl" perf latency --backend sim -d 2 -s 64 -n 10 2>&1)
rc=$?
set -e
[ "$rc" != 0 ] && grep -q "models 2 links (sim devices 0 to 1): there is no sim device 2" <<<"$out" ||
	fail "sim device 2 of two: exit $rc: $out"
echo "device 2: $(grep -m1 'no sim device' <<<"$out")"
# A link's process that dies takes the server down with the reason; the
# other link's program is told within a second or two.
"$odl" perf bandwidth --backend sim -d 0 -s 64K --bytes 64G --quiet >"$tmp/l0c.out" 2>"$tmp/l0c.log" &
l0=$!
pids+=("$l0")
sleep 1.5
kill -0 "$l0" 2>/dev/null || fail "link 0's stream ended early: $(cat "$tmp/l0c.log")"
link1=$(ps -o pid= --ppid "$server" | sed -n 2p)
[ -n "$link1" ] || fail "no second link process"
kill -9 $link1
t0=$(date +%s%N)
set +e
wait_gone "$l0" 30
wait "$l0"
rc=$?
wait_gone "$server" 10
wait "$server"
rcs=$?
set -e
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" != 0 ] && grep -q -e "model server is shutting down" -e "model server closed" "$tmp/l0c.log" ||
	fail "link 0 after link 1's process died: exit $rc: $(cat "$tmp/l0c.log")"
[ "$ms" -lt 3000 ] || fail "link 0's program took $ms ms to notice"
[ "$rcs" != 0 ] && grep -q "sim link 1: its process was killed by signal 9; stopping the others" "$tmp/linkd.log" ||
	fail "the server after a link's process died: exit $rcs: $(cat "$tmp/linkd.log")"
echo "a link process killed: the server stopped (exit $rcs), link 0's program noticed in $ms ms"

step "pipeline timing (--sim-timing pipeline): refused where it does not fit the full model"
# The reduced model is fitted to the full one at start and checked against
# it; where a single stage cannot carry the profile's costs (linux-tbnet: a
# host CPU both directions share) the server says so and does not listen.
for bad in "--profile linux-tbnet:pipeline timing does not fit linux-tbnet" \
	"--links 2 --profile linux-tbnet:pipeline timing does not fit"; do
	refused "--sim-timing pipeline $bad"
done
set +e
out=$("$linkd" --socket "$tmp/x.sock" --sim-timing pipeline 2>&1)
rc=$?
set -e
[ "$rc" = 1 ] && grep -q -- "--sim-timing needs --sim" <<<"$out" || fail "--sim-timing without --sim: exit $rc: $out"

step "pipeline timing: latency with checksums, and Gen2 x1 pacing, as the full model paces it"
start_server --sim-timing pipeline -v
grep -q "tb5x2 1 m pipeline" "$tmp/linkd.log" || fail "the banner does not say pipeline: $(cat "$tmp/linkd.log")"
grep -q "pipeline timing: .*checked on 11 workloads against the full model, worst" "$tmp/linkd.log" ||
	fail "no account of the fit's check: $(cat "$tmp/linkd.log")"
"$odl" perf latency --backend sim -s 64,4K -n 300 --warmup 30 --checksum --json --quiet >"$tmp/plat.json" 2>"$tmp/plat.log" ||
	fail "perf latency over sim, pipeline timing: $(cat "$tmp/plat.log")"
python3 - "$tmp/plat.json" <<'PY' || fail "pipeline latency results"
import json, sys
d = json.load(open(sys.argv[1]))
r = {x["size"]: x for x in d["results"]}
m = d["model_timing"]
assert d["checksum"] and set(r) == {64, 4096} and m["frames"] >= 2 * 330, d
for x in r.values():
    # The model's one-way time for 64 B is 3.5 us: never faster than that.
    assert x["samples"] == 300 and x["p50_us"] >= 3.0, x
    assert x["p50_us"] < 5000 or m["distorted"], x
print("pipeline: latency p50 64 B %.1f us, 4 KiB %.1f us; model frames %d, late %d"
      % (r[64]["p50_us"], r[4096]["p50_us"], m["frames"], m["late_frames"]))
PY
stop_server
pacing --sim-timing pipeline

step "pipeline timing: a scenario's unplug still ends the run with the cause"
scenario_unplug --sim-timing pipeline
grep -q "tb4x2 2 m pipeline" "$tmp/linkd.log" || fail "scenario with pipeline timing: $(cat "$tmp/linkd.log")"
stop_server

step "pipeline timing: bit errors (the ber scenario): frames lost, resent, every byte verified"
ber_stream --sim-timing pipeline
grep -q "tb5x2 1 m pipeline" "$tmp/linkd.log" || fail "the ber scenario did not get pipeline timing: $(cat "$tmp/linkd.log")"

step "pipeline timing: a degrade (TB5 x2 to Gen2 x1 at 200 ms) retrains the link into the slower cable's stage; a retrain"
# Fitted at start for both cables; at the degrade the stage takes the
# slower cable's times. Programs started after the retrain see the slower
# cable: a 64 KiB message never arrives sooner than its bytes take on it
# (TB5 x2 carries them 8x faster), and a stream is never faster than it.
tb5_scenario "$tmp/degrade.yaml" sim-degrade "at: 200ms, event: degrade, cable: 0, generation: usb4-gen2, lanes: 1" \
	"at: 300ms, event: retrain, cable: 0"
start_server --gen gen2 --lanes 1 --sim-timing pipeline
slow=$(sed -n 's/.*usb4-gen2x1 1 m pipeline, \([0-9]*\) Mb\/s each way.*/\1/p' "$tmp/linkd.log")
stop_server
[ -n "$slow" ] || fail "no rate in the Gen2 x1 banner: $(cat "$tmp/linkd.log")"
start_server --scenario "$tmp/degrade.yaml" --sim-timing pipeline -v
grep -q "sim: pipeline timing after the degrade to usb4-gen2 x1: A->B" "$tmp/linkd.log" ||
	fail "no stage fitted for the degraded cable: $(cat "$tmp/linkd.log")"
for _ in $(seq 50); do grep -q "retrain at 300 ms" "$tmp/linkd.log" && break; sleep 0.1; done
grep -q "degrade to usb4-gen2 x1 at 200 ms" "$tmp/linkd.log" || fail "no degrade in the log: $(cat "$tmp/linkd.log")"
sleep 0.2  # the retrain: 100 us of link training, then the programs may come
"$odl" perf latency --backend sim -s 64K -n 100 --warmup 10 --checksum --json --quiet >"$tmp/deglat.json" \
	2>"$tmp/deglat.log" || fail "perf latency after the degrade: $(cat "$tmp/deglat.log")"
"$odl" perf bandwidth --backend sim -s 64K --bytes 128M --checksum --json --quiet >"$tmp/deg.json" 2>"$tmp/deg.log" ||
	fail "perf bandwidth after the degrade: $(cat "$tmp/deg.log")"
# A program that comes now is told the cable it finds.
python3 - "$ODL_SIM_SOCKET" "$slow" <<'PY' || fail "HELLO after the degrade"
import socket, struct, sys
from sim_proto import HELLO, join
s, _ = join(sys.argv[1], "late")
s.settimeout(5)
data, fds, _, _ = socket.recv_fds(s, 256, 4)
assert struct.unpack_from("<H", data)[0] == HELLO, data
rate = struct.unpack_from("<I", data, 32 + 8)[0]
name = struct.unpack_from("68s", data, 32 + 28)[0].rstrip(b"\0").decode()
assert rate == int(sys.argv[2]) and name == "intel-tb5-discrete usb4-gen2x1 1 m pipeline", (rate, name)
print("HELLO after the degrade: %s, %d Mb/s" % (name, rate))
PY
stop_server
python3 - "$tmp/deglat.json" "$tmp/deg.json" "$slow" <<'PY' || fail "the runs after the degrade"
import json, sys
lat, bw = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
slow = float(sys.argv[3]) / 1000
wire_us = 65536 * 8 / (slow * 1e3)
p50, g = lat["results"][0]["p50_us"], bw["results"][0]["gbps"]
print("after the degrade: 64 KiB one way p50 %.1f us (its bytes on Gen2 x1: %.1f us); stream %.2f Gb/s "
      "(Gen2 x1's 4 KiB plateau %.2f Gb/s)" % (p50, wire_us, g, slow))
assert lat["checksum"] and bw["verified"] and bw["checksum"], (lat, bw)
assert p50 >= 0.95 * wire_us, "a 64 KiB message came sooner than the degraded cable carries it"
# 64 KiB messages: a little above the 4 KiB frames' plateau, never far.
assert g <= slow * 1.05, "faster than the cable the link retrained into"
PY

step "--sim-timing auto (the default): pipeline timing where it fits, else the full model, saying why"
default_timing=()
start_server
grep -q "intel-tb5-discrete tb5x2 1 m pipeline" "$tmp/linkd.log" && ! grep -q "the full model" "$tmp/linkd.log" ||
	fail "the default for the default cable is not pipeline timing: $(cat "$tmp/linkd.log")"
"$odl" perf latency --backend sim -s 64 -n 50 --warmup 5 --checksum --quiet >/dev/null 2>"$tmp/auto.log" ||
	fail "perf latency over the default timing: $(cat "$tmp/auto.log")"
stop_server
for c in "--profile linux-tbnet:the full model (--sim-timing event): pipeline timing does not fit linux-tbnet" \
	"--links 2 --profile linux-tbnet:sim: the full model (--sim-timing event): pipeline timing does not fit"; do
	# shellcheck disable=SC2086 # the options are words
	start_server ${c%%:*}
	grep -qF "${c#*:}" "$tmp/linkd.log" && ! grep -q " pipeline, " "$tmp/linkd.log" ||
		fail "auto with ${c%%:*}: $(cat "$tmp/linkd.log")"
	stop_server
done
start_server --scenario "$tmp/degrade.yaml"
grep -q "tb5x2 1 m pipeline" "$tmp/linkd.log" && ! grep -q "the full model" "$tmp/linkd.log" ||
	fail "auto with a degrade scenario: $(cat "$tmp/linkd.log")"
stop_server
default_timing=(--sim-timing event)
start_server --sim-timing event
grep -q "intel-tb5-discrete tb5x2 1 m, " "$tmp/linkd.log" && ! grep -q "the full model (--sim-timing" "$tmp/linkd.log" ||
	fail "--sim-timing event: $(cat "$tmp/linkd.log")"
stop_server
echo "auto: pipeline timing on the default cable and through a degrade; the full model for linux-tbnet and two linux-tbnet links"

step "model server killed mid-stream: the program says so within a second or two"
start_server
"$odl" perf bandwidth --backend sim -s 64K --bytes 64G --quiet >"$tmp/kill.out" 2>"$tmp/kill.log" &
client=$!
pids+=("$client")
sleep 2
kill -0 "$client" 2>/dev/null || fail "the stream ended before the kill: $(cat "$tmp/kill.log")"
kill -9 "$server"
t0=$(date +%s%N)
set +e
wait_gone "$client" 30
wait "$client"
rc=$?
set -e
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$rc" != 0 ] && grep -q "model server closed" "$tmp/kill.log" || fail "after the kill: exit $rc: $(cat "$tmp/kill.log")"
[ "$ms" -lt 3000 ] || fail "the program took $ms ms to notice the server was gone"
echo "noticed in $ms ms: $(grep -m1 'model server' "$tmp/kill.log")"
echo "PASS: sim backend"
