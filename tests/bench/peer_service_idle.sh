#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The idle cost of what odl-daemon runs per device with --serve-files,
# --answer-tests or both: `odl files serve`, `odl perf --server` and
# `odl files serve --answer-tests` waiting for a client on a loopback
# device for SECONDS (default 30): CPU time and resident memory of each. Not a ctest test; docs/benchmarks.md "odl-daemon".
# Usage: peer_service_idle.sh [BUILD_DIR] [SECONDS]
set -euo pipefail

build=$(realpath "${1:-build}")
secs=${2:-30}
case "$secs" in '' | *[!0-9]* | 0) echo "SECONDS: a positive number" >&2; exit 2 ;; esac
odl="$build/bin/odl"
[ -x "$odl" ] || { echo "no $odl (build first)" >&2; exit 2; }
# The file tests' setup: a private folder and namespace, pairing, the server, cleanup.
. "$(dirname "$0")/../cli/files_lib.sh"
files_setup peer-idle 0
mkdir -p share
pair_hosts
start_server
"$odl" perf latency --server -q --backend loopback -d 1 --connect-timeout 31536000 &
perf=$!
pids+=("$perf")
"$odl" files serve share --answer-tests --keys ka --backend loopback -d 2 &
both=$!
pids+=("$both")
sleep 2
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
f0=$(ticks "$server")
p0=$(ticks "$perf")
b0=$(ticks "$both")
sleep "$secs"
f1=$(ticks "$server")
p1=$(ticks "$perf")
b1=$(ticks "$both")
hz=$(getconf CLK_TCK)
for w in "odl files serve:$f0:$f1:$server" "odl perf --server:$p0:$p1:$perf" \
	"odl files serve --answer-tests:$b0:$b1:$both"; do
	IFS=: read -r name t0 t1 pid <<<"$w"
	rss=$(sed -n 's/^VmRSS:[[:space:]]*//p' "/proc/$pid/status")
	awk -v n="$name" -v d="$((t1 - t0))" -v hz="$hz" -v s="$secs" -v rss="$rss" \
		'BEGIN { printf "%s idle for %d s: CPU %.2f s (%.2f %% of one core), RSS %s\n", n, s, d / hz, 100 * d / hz / s, rss }'
done
