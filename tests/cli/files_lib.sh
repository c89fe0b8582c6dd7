# SPDX-License-Identifier: MIT
# Shared by the file-service tests (files_*_test.sh), sourced after
# `set -euo pipefail` with $odl set: a private folder and loopback namespace,
# every process the test starts stopped at exit, fail/step, bounded waits,
# pairing two key folders (ka: the serving host, kb: the other) and
# starting the server on the folder share/.

# files_setup NAME DEVICE: makes $tmp (the working folder), $L (the link
# options: a loopback device of this test's own namespace), cds there.
files_setup() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-$1.XXXXXX")
	pids=()
	trap files_cleanup EXIT
	export ODL_LOOPBACK_NAMESPACE=$1-$$
	L=(--backend loopback --device "$2")
	cd "$tmp"
}
files_cleanup() {
	local p
	if [ "$(type -t files_extra_cleanup)" = function ]; then files_extra_cleanup; fi
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	cd /
	rm -rf "$tmp"
}
fail() {
	echo "FAIL: $*"
	for f in "$tmp"/*.log; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done
	exit 1
}
step() { printf '== [%ds] %s\n' "$SECONDS" "$*"; }
# wait_for SECONDS CMD...: until CMD succeeds, 20 tries a second (bounded).
wait_for() {
	local n=$(($1 * 20))
	shift
	while ! "$@" 2>/dev/null; do
		n=$((n - 1))
		[ "$n" -gt 0 ] || return 1
		sleep 0.05
	done
}
# pair_hosts: key folders ka (host-a) and kb (host-b) from odl pair over $L;
# their output in pair-a.log and pair-b.log.
pair_hosts() {
	local a
	"$odl" pair "${L[@]}" --keys ka --name host-a --yes >pair-a.log 2>&1 &
	a=$!
	pids+=("$a")
	"$odl" pair "${L[@]}" --keys kb --name host-b --yes >pair-b.log 2>&1 || fail "pair (b)"
	wait "$a" || fail "pair (a)"
}
# start_server [WRAPPER...]: odl files serve share as host a, logging to
# serve.log; $server is its pid.
start_server() {
	"$@" "$odl" files serve share "${L[@]}" --keys ka -v >>serve.log 2>&1 &
	server=$!
	pids+=("$server")
}
