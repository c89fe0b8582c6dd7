#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl-daemon's idle cost: CPU time and resident memory of a daemon that
# watches this host (udev events, its real sysfs) on a private bus for
# SECONDS (default 60). Not a ctest test; docs/benchmarks.md "odl-daemon".
# Usage: daemon_idle.sh [BUILD_DIR] [SECONDS]
set -euo pipefail

build=${1:-build}
secs=${2:-60}
case "$secs" in '' | *[!0-9]* | 0) echo "SECONDS: a positive number" >&2; exit 2 ;; esac
daemon="$build/bin/odl-daemon"
[ -x "$daemon" ] || { echo "no $daemon (build first)" >&2; exit 2; }
tmp=$(mktemp -d /tmp/odl-daemon-idle.XXXXXX)
bus=""
dpid=""
cleanup() {
	[ -n "$dpid" ] && kill "$dpid" 2>/dev/null || true
	[ -n "$bus" ] && kill "$bus" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
dbus-daemon --session --nofork --nopidfile --address="unix:path=$tmp/bus" 2>/dev/null &
bus=$!
for _ in $(seq 100); do [ -S "$tmp/bus" ] && break; sleep 0.05; done
"$daemon" --bus "unix:path=$tmp/bus" &
dpid=$!
sleep 2
ticks() { awk '{print $14 + $15}' "/proc/$dpid/stat"; }
t0=$(ticks)
sleep "$secs"
t1=$(ticks)
hz=$(getconf CLK_TCK)
rss=$(sed -n 's/^VmRSS:[[:space:]]*//p' "/proc/$dpid/status")
awk -v d="$((t1 - t0))" -v hz="$hz" -v s="$secs" -v rss="$rss" \
	'BEGIN { printf "odl-daemon idle for %d s: CPU %.3f s (%.3f %% of one core), RSS %s\n", s, d / hz, 100 * d / hz / s, rss }'
