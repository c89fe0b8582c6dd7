#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl pair, odl files serve and odl cp as users run them: two processes per
# step over a loopback device. Bad arguments refused with the reason;
# pairing (the same code on both sides, keys 0600, nothing saved unconfirmed);
# push and pull of a file and a tree, checked with sha256sum; the server
# killed mid-transfer and restarted (the client resumes, nothing partial
# visible meanwhile); the client killed mid-pull and rerun (resumes); a full
# disk at the receiver (an ERROR, the server lives on). Every process it
# starts, it stops.
#
# Usage: files_cli_test.sh ODL
set -euo pipefail
odl=$1
. "$(dirname "${BASH_SOURCE[0]}")/files_lib.sh"
files_setup files-cli 3
mkdir -p share local
A=("${L[@]}" --keys "$tmp/ka") # the serving host
B=("${L[@]}" --keys "$tmp/kb") # the copying host

# expect_fail WHAT PATTERN CMD...: CMD exits non-zero saying PATTERN.
expect_fail() {
	local what=$1 pattern=$2 out rc=0
	shift 2
	out=$("$@" 2>&1) || rc=$?
	[ "$rc" -ne 0 ] || fail "$what: exit 0 ($out)"
	grep -q -- "$pattern" <<<"$out" || fail "$what: no '$pattern' in: $out"
}
json_field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
size_of() { stat -c %s "$1" 2>/dev/null || echo 0; }
partial_size() {
	local f s=0
	for f in "$1"/.odl-part.*; do
		case $f in *.state|*.tmp|*'*') ;; *) s=$(size_of "$f") ;; esac
	done
	echo "$s"
}
# partial_over DIR BYTES: a partial file in DIR holds more than BYTES.
partial_over() { [ "$(partial_size "$1")" -gt "$2" ]; }

step "bad arguments"
echo x >local/x
expect_fail "no peer side" "one side must\|either DEST or every SOURCE" "$odl" cp local/x local/y "${B[@]}"
expect_fail "both peer" "both sides are on the peer" "$odl" cp peer:a peer:b "${B[@]}"
expect_fail "no pairing" "no paired peer" "$odl" cp local/x peer:x "${B[@]}"
expect_fail "bad chunk" "power of two" "$odl" cp local/x peer:x --chunk 3K "${B[@]}"
expect_fail "negative chunk" "bad --chunk '-4K'" "$odl" cp local/x peer:x --chunk=-4K "${B[@]}"
expect_fail "serve without keys" "no paired peer" "$odl" files serve share "${A[@]}"
expect_fail "serve a missing folder" "nope" "$odl" files serve nope "${A[@]}"
# serve's own chunk option is named as serve's, and before the keys are read.
expect_fail "serve max chunk" "odl: files serve: --max-chunk 0: want a power of two" \
	"$odl" files serve share "${A[@]}" --max-chunk 0
# Timeouts and intervals: finite numbers in range, refused before anything
# starts (a nan or negative timeout used to wait forever).
expect_fail "connect timeout nan" "'nan' is not a number from 0.1 to" \
	"$odl" files ls peer:x "${B[@]}" --connect-timeout nan
expect_fail "retry-for below 0" "'-1' is not a number from 0 to" "$odl" cp local/x peer:x "${B[@]}" --retry-for=-1
expect_fail "sync interval 0" "'0' is not a number from 0.1" "$odl" sync local peer:x "${B[@]}" --interval 0
expect_fail "pair timeout nan" "'nan' is not a number from 0.1" timeout 20 "$odl" pair "${A[@]}" --timeout nan
# The PAIR message holds 63 bytes of the name: a longer one was cut on the peer.
expect_fail "pair name of 64 bytes" "a name of 1 to 63 bytes, not 64" timeout 20 "$odl" pair "${A[@]}" \
	--name "$(printf 'n%.0s' $(seq 64))"

step "pairing"
"$odl" pair "${A[@]}" --name host-a </dev/null >pair-unconfirmed.log 2>&1 &
p=$!
pids+=("$p")
expect_fail "unconfirmed pairing" "not saved" "$odl" pair "${B[@]}" --name host-b </dev/null
wait "$p" || true
[ ! -e ka ] && [ ! -e kb ] || fail "a key was saved without confirmation"
pair_hosts
code_a=$(sed -n 's/.*pairing code \([0-9]\{3\} [0-9]\{3\}\).*/\1/p' pair-a.log)
code_b=$(sed -n 's/.*pairing code \([0-9]\{3\} [0-9]\{3\}\).*/\1/p' pair-b.log)
[ -n "$code_a" ] && [ "$code_a" = "$code_b" ] || fail "pairing codes differ: '$code_a' '$code_b'"
grep -q "peer host-b" pair-a.log && grep -q "peer host-a" pair-b.log || fail "peer names"
for f in ka/*.json kb/*.json; do
	[ "$(stat -c %a "$f")" = 600 ] || fail "$f is not 0600"
done
[ "$(stat -c %a ka)" = 700 ] || fail "ka is not 0700"

step "push and pull"
head -c $((48 << 20)) /dev/urandom >local/big.bin
mkdir -p local/tree/sub
echo alpha >local/tree/a.txt
head -c 100000 /dev/urandom >local/tree/sub/b.bin
start_server
"$odl" cp local/big.bin peer:in/ "${B[@]}" --json >push.json 2>push.log || fail "push"
[ "$(json_field push.json files)" = 1 ] || fail "push report"
cmp local/big.bin share/in/big.bin || fail "pushed file differs"
"$odl" cp -r local/tree peer:in/ "${B[@]}" -q || fail "push tree"
"$odl" cp -r peer:in/tree local/back "${B[@]}" -q || fail "pull tree"
diff -r local/tree local/back || fail "pulled tree differs"
"$odl" cp peer:in/big.bin local/big.back "${B[@]}" -q || fail "pull"
cmp local/big.bin local/big.back || fail "pulled file differs"
expect_fail "missing file" "No such file" "$odl" cp peer:in/nothing local/ "${B[@]}"
expect_fail "directory without -r" "is a directory" "$odl" cp peer:in/tree local/t2 "${B[@]}"

step "ls: what the peer serves"
"$odl" files ls peer:in "${B[@]}" --json >ls.json 2>ls.log || fail "files ls"
python3 - ls.json <<'PY' || fail "files ls --json: $(cat ls.json)"
import json, sys
j = json.load(open(sys.argv[1]))
got = {e["path"]: (e["dir"], e["size"]) for e in j["entries"]}
want = {"big.bin": (False, 48 << 20), "tree": (True, 0), "tree/a.txt": (False, 6), "tree/sub": (True, 0),
        "tree/sub/b.bin": (False, 100000)}
for k, v in want.items():
    assert k in got and (got[k][0], got[k][1] if not v[0] else 0) == v, (k, got.get(k))
assert j["peer"] == "host-a" and j["path"] == "in", j
PY
"$odl" files ls peer:in/tree "${B[@]}" >ls.txt 2>>ls.log || fail "files ls (text)"
grep -Eq '^0[0-7]{3} +6 [0-9T:Z-]+  a\.txt$' ls.txt || fail "files ls text: $(cat ls.txt)"
grep -Eq ' sub/$' ls.txt || fail "files ls: no folder sub/: $(cat ls.txt)"
expect_fail "ls of a local path" "want peer:PATH" "$odl" files ls in "${B[@]}"
expect_fail "ls outside the folder" "'..' in path" "$odl" files ls peer:../etc "${B[@]}"
# Nobody serves loopback device 4: ls gives up after its connect timeout,
# once more after --retry-for, not after the default 10 s.
t0=$(date +%s%N)
expect_fail "ls with no server" "no peer within 0.5 s" \
	"$odl" files ls peer: --backend loopback --device 4 --keys "$tmp/kb" --connect-timeout 0.5 --retry-for 0.5
waited_ms=$((($(date +%s%N) - t0) / 1000000))
[ "$waited_ms" -lt 5000 ] || fail "ls with no server took $waited_ms ms (connect timeout 0.5 s, retry for 0.5 s)"
echo "ls with no server: gave up after $waited_ms ms"
# A device that cannot exist is said at once, not retried for --retry-for
# (30 s) in silence; a SIGTERM while waiting for a peer ends ls at once.
for bad in "--backend bogus:unknown backend" "--backend loopback --device 99:no loopback device 99"; do
	t0=$(date +%s%N)
	# shellcheck disable=SC2086 # the options are words on purpose
	expect_fail "ls on ${bad%%:*}" "${bad#*:}" "$odl" files ls peer: ${bad%%:*} --keys "$tmp/kb" --retry-for 30
	waited_ms=$((($(date +%s%N) - t0) / 1000000))
	[ "$waited_ms" -lt 3000 ] || fail "ls on ${bad%%:*} took $waited_ms ms: retried a device that cannot exist"
done
"$odl" files ls peer: --backend loopback --device 4 --keys "$tmp/kb" --connect-timeout 0.3 --retry-for 60 \
	>/dev/null 2>ls-term.log &
p=$!
pids+=("$p")
sleep 1.5
kill -TERM "$p"
wait_gone_ms() { local i; for i in $(seq 60); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done; return 1; }
wait_gone_ms "$p" || fail "files ls waiting for a peer did not end within 3 s of SIGTERM"
rc=0
wait "$p" || rc=$?
[ "$rc" = 130 ] || fail "files ls stopped by SIGTERM: exit $rc, expected 130: $(cat ls-term.log)"
grep -q "trying again for up to 60 s" ls-term.log || fail "files ls did not say it was waiting: $(cat ls-term.log)"

step "server killed mid-transfer, restarted: the client resumes"
head -c $((320 << 20)) /dev/urandom >local/huge.bin
"$odl" cp local/huge.bin peer:huge.bin "${B[@]}" --chunk 64K --retry-for 30 --json >resume.json 2>resume.log &
client=$!
pids+=("$client")
wait_for 60 partial_over share $((150 << 20)) || fail "no partial file grew"
kill -9 "$server"
wait "$server" 2>/dev/null || true
[ ! -e share/huge.bin ] || fail "the final name appeared before the hash matched"
sleep 1
start_server
wait "$client" || fail "resumed push"
cmp local/huge.bin share/huge.bin || fail "resumed file differs"
resumed=$(json_field resume.json resumed_bytes)
[ "$resumed" -ge $((64 << 20)) ] || fail "resumed only $resumed bytes"
[ "$(json_field resume.json reconnects)" -ge 1 ] || fail "no reconnect counted"
ls share/.odl-part.* 2>/dev/null && fail "partial files left"
echo "resumed at $resumed bytes"

step "client killed mid-pull, rerun: resumes"
"$odl" cp peer:huge.bin local/pulled.bin "${B[@]}" --chunk 64K -q &
client=$!
pids+=("$client")
wait_for 60 partial_over local $((150 << 20)) || fail "no local partial file grew"
kill -9 "$client"
wait "$client" 2>/dev/null || true
[ ! -e local/pulled.bin ] || fail "the final name appeared before the hash matched"
"$odl" cp peer:huge.bin local/pulled.bin "${B[@]}" --json >pull.json 2>pull.log || fail "rerun pull"
cmp local/huge.bin local/pulled.bin || fail "pulled file differs"
[ "$(json_field pull.json resumed_bytes)" -ge $((64 << 20)) ] || fail "pull did not resume"

step "disk full at the receiver"
kill "$server"
wait "$server" 2>/dev/null || true
# A file size limit stands in for a full disk: writes past it fail (EFBIG)
# once SIGXFSZ is ignored, which exec keeps.
start_server bash -c 'trap "" XFSZ; exec prlimit --fsize=$((16 << 20)) "$@"' limit
expect_fail "push to a full disk" "File too large" "$odl" cp local/big.bin peer:full.bin "${B[@]}"
[ ! -e share/full.bin ] || fail "a file that did not fit appeared"
"$odl" cp local/x peer:small "${B[@]}" -q || fail "the server did not live on after a full disk"
[ "$(cat share/small)" = x ] || fail "small file"
kill "$server"
wait "$server" 2>/dev/null || true
grep -qi "warn\|assert" serve.log && fail "server warned"
step "PASS"
