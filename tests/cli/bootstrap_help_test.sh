#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ./odl --help on a checkout not built yet: answered at once, from the
# bootstrap script, with nothing installed or built (the build dir stays
# absent); the environment it lists is the script header's.
# Usage: bootstrap_help_test.sh REPO
set -euo pipefail
repo=${1:?usage: bootstrap_help_test.sh REPO}
tmp=$(mktemp -d /tmp/odl-bootstrap-help.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A bootstrap that went on to configure would run this cmake, which only
# says so: the test then fails at once instead of building for minutes.
mkdir -p "$tmp/bin"
printf '#!/bin/sh\necho "cmake was run: $*" >&2\nexit 1\n' >"$tmp/bin/cmake"
chmod +x "$tmp/bin/cmake"
export PATH="$tmp/bin:$PATH"

for args in "--help" "-h" "perf latency --help" "test --help-all"; do
	# shellcheck disable=SC2086 # the words of $args are the arguments
	out=$(ODL_BUILD_DIR="$tmp/build" ODL_NO_INSTALL=1 "$repo/odl" $args 2>&1) ||
		fail "./odl $args: exit $?: $out"
	grep -q "not built yet" <<<"$out" || fail "./odl $args: no word of the missing build: $out"
	! grep -q "cmake was run" <<<"$out" || fail "./odl $args configured: $out"
	[ ! -e "$tmp/build" ] || fail "./odl $args made $tmp/build (it should build nothing)"
	for v in ODL_BUILD_DIR ODL_BUILD_TYPE ODL_JOBS ODL_NO_INSTALL; do
		grep -q "^  $v " <<<"$out" || fail "./odl $args: $v not listed: $out"
	done
done
echo "PASS: help before the first build"
