#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ./odl bootstrap script itself, with cmake, dpkg-query and the built
# odl replaced by scripts (nothing is installed or built):
# - --help before the first build is answered at once, builds nothing, and
#   lists the environment of the script's header;
# - a build with nothing to do but the steps that run every time (the glob
#   check, the source id) is silent, and the built odl gets the arguments;
# - a build that fails says so, shows the compiler's words, exits non-zero;
# - missing packages are found with one dpkg-query call and named
#   (ODL_NO_INSTALL=1 refuses to install them).
# Usage: bootstrap_test.sh REPO
set -euo pipefail
repo=${1:?usage: bootstrap_test.sh REPO}
tmp=$(mktemp -d /tmp/odl-bootstrap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

mkdir -p "$tmp/bin"
# cmake: FAKE_CMAKE says what a build does (quiet: only the every-time
# steps; fail: a compile error); configuring is refused.
cat >"$tmp/bin/cmake" <<'SH'
#!/usr/bin/env bash
echo "cmake $*" >>"$FAKE_LOG"
[ "${1:-}" = --build ] || { echo "cmake was run to configure: $*" >&2; exit 1; }
echo "[0/2] Re-checking globbed directories..."
echo "[1/3] cd $2 && /usr/bin/cmake -DODL_SRC=x -P x/cmake/OdlBuildInfo.cmake"
case "${FAKE_CMAKE:-quiet}" in
fail) echo "[2/3] Building CXX object foo.o"; echo "foo.cpp:1: error: fake compile error"; exit 1 ;;
esac
exit 0
SH
# dpkg-query: every package installed but those in FAKE_MISSING; counts calls.
cat >"$tmp/bin/dpkg-query" <<'SH'
#!/usr/bin/env bash
echo "dpkg-query" >>"$FAKE_LOG.dpkg"
for a in "$@"; do
	case "$a" in -*) continue ;; esac
	case " ${FAKE_MISSING:-} " in
	*" $a "*) echo "dpkg-query: no packages found matching $a" >&2 ;;
	*) echo "$a install ok installed" ;;
	esac
done
SH
chmod +x "$tmp/bin/cmake" "$tmp/bin/dpkg-query"
export PATH="$tmp/bin:$PATH" FAKE_LOG="$tmp/log" ODL_NO_INSTALL=1
b=$tmp/build

for args in "--help" "-h" "perf latency --help" "test --help-all"; do
	# shellcheck disable=SC2086 # the words of $args are the arguments
	out=$(ODL_BUILD_DIR="$b" "$repo/odl" $args 2>&1) || fail "./odl $args: exit $?: $out"
	grep -q "not built yet" <<<"$out" || fail "./odl $args: no word of the missing build: $out"
	! grep -q "cmake was run" <<<"$out" || fail "./odl $args configured: $out"
	[ ! -e "$b" ] || fail "./odl $args made $b (it should build nothing)"
	for v in ODL_BUILD_DIR ODL_BUILD_TYPE ODL_JOBS ODL_NO_INSTALL; do
		grep -q "^  $v " <<<"$out" || fail "./odl $args: $v not listed: $out"
	done
done

# A build tree as configure leaves it, and a built odl that echoes.
mkdir -p "$b/bin"
: >"$b/CMakeCache.txt"
printf '#!/bin/sh\necho "built odl: $*"\n' >"$b/bin/odl"
chmod +x "$b/bin/odl"
: >"$tmp/log.dpkg"
out=$(ODL_BUILD_DIR="$b" "$repo/odl" perf latency 2>"$tmp/err") || fail "up to date: exit $?: $(cat "$tmp/err")"
[ "$out" = "built odl: perf latency" ] || fail "up to date: the built odl did not get the arguments: $out"
[ ! -s "$tmp/err" ] || fail "up to date: not silent: $(cat "$tmp/err")"
grep -q -- "--build $b" "$tmp/log" || fail "up to date: no build was run: $(cat "$tmp/log")"
[ "$(wc -l <"$tmp/log.dpkg")" = 1 ] || fail "package check: $(wc -l <"$tmp/log.dpkg") dpkg-query calls, want 1"

out=$(FAKE_CMAKE=fail ODL_BUILD_DIR="$b" "$repo/odl" perf latency 2>&1) && fail "a failed build ran odl: $out"
grep -q "building $b" <<<"$out" || fail "failed build: no 'building' line: $out"
grep -q "fake compile error" <<<"$out" || fail "failed build: the compiler's words are not shown: $out"
grep -q "error: build failed in $b" <<<"$out" || fail "failed build: unclear error: $out"
! grep -q "built odl" <<<"$out" || fail "failed build: odl ran anyway: $out"

out=$(FAKE_MISSING="cmake libfmt-dev" ODL_BUILD_DIR="$b" "$repo/odl" perf latency 2>&1) &&
	fail "missing packages accepted: $out"
grep -q "missing packages: cmake libfmt-dev (ODL_NO_INSTALL=1)" <<<"$out" ||
	fail "missing packages: not named: $out"
echo "PASS: the bootstrap script"
