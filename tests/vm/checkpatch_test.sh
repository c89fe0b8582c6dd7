#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# The kernel's checkpatch.pl --strict over kmod/ (the module's own sources;
# the shared wire and uapi headers are also compiled as userspace C/C++, where
# the kernel's BIT() and friends do not exist, so they are not checked here).
# checkpatch.pl comes from Debian's linux-source-6.1 package (downloaded once
# with apt-get, cached in ODL_CACHE_DIR, default ~/.cache/odl). Every finding fails the test except
# the version checks that keep one source building against 6.1 and 6.12:
# LINUX_VERSION_CODE, and CONSTANT_COMPARISON on a line that compares
# LINUX_VERSION_CODE.
#
# Usage: checkpatch_test.sh [FILE...]   (default: kmod/*.c kmod/*.h)
# Environment: ODL_CHECKPATCH: a checkpatch.pl to use instead of the cache.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${ODL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/odl}/checkpatch-6.1
cp=${ODL_CHECKPATCH:-$cache/scripts/checkpatch.pl}

fetch() {
	command -v apt-get >/dev/null || { echo "FAIL: no apt-get to fetch linux-source-6.1" >&2; exit 1; }
	tmp=$(mktemp -d)
	trap 'rm -rf "${tmp:-}"' EXIT
	echo "checkpatch: fetching Debian's linux-source-6.1 for scripts/checkpatch.pl (once)"
	# As root, apt's _apt sandbox user cannot write into the temporary
	# folder (its warning would be the only output).
	sandbox=()
	[ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
	(cd "$tmp" && apt-get download "${sandbox[@]}" linux-source-6.1 >/dev/null) ||
		{ echo "FAIL: apt-get download linux-source-6.1 failed" >&2; exit 1; }
	mkdir -p "$tmp/x"
	dpkg-deb --fsys-tarfile "$tmp"/linux-source-6.1_*.deb |
		tar -xO ./usr/src/linux-source-6.1.tar.xz |
		tar -xJ -C "$tmp/x" --strip-components=1 --wildcards \
			'linux-source-6.1/scripts/checkpatch.pl' \
			'linux-source-6.1/scripts/spelling.txt' \
			'linux-source-6.1/scripts/const_structs.checkpatch'
	rm -rf "$cache"
	mkdir -p "$(dirname "$cache")"
	mv "$tmp/x" "$cache"
}
[ -x "$cp" ] || [ -n "${ODL_CHECKPATCH:-}" ] || fetch
[ -x "$cp" ] || { echo "FAIL: no checkpatch.pl at $cp" >&2; exit 1; }

if [ $# -eq 0 ]; then
	set -- "$repo"/kmod/*.c "$repo"/kmod/*.h
fi
# Run outside the git tree: in one, checkpatch.pl leaves a camelcase cache
# file in the current directory.
out=$(cd / && "$cp" --strict --no-tree --terse --show-types --ignore LINUX_VERSION_CODE -f "$@" 2>&1 | grep -v '^total:' || true)
bad=0
while IFS= read -r line; do
	[ -n "$line" ] || continue
	# FILE:LINE: LEVEL:TYPE: message
	file=${line%%:*}
	rest=${line#*:}
	lno=${rest%%:*}
	if [[ $line == *:CONSTANT_COMPARISON:* ]] && [[ $lno =~ ^[0-9]+$ ]] &&
		grep -q LINUX_VERSION_CODE <<<"$(sed -n "${lno}p" "$file")"; then
		continue
	fi
	echo "$line"
	bad=$((bad + 1))
done <<<"$out"
echo "checkpatch --strict: $# files, $bad findings"
[ "$bad" -eq 0 ]
