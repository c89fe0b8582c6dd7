#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `odl test` itself, with cmake and ctest replaced by scripts that log each
# call (time, arguments, scheduling policy): the sanitizer tree builds
# beside the main ctest at SCHED_IDLE and runs its fuzz targets there too
# (how many inputs each ran is printed; a failing one fails the run, the
# rest still runs), its unit tests run only after everything else ended,
# one per core; a failed sanitizer build fails the run, says why and runs
# none of its tests; --no-sanitize builds nothing.
# Usage: odl_test_cli_test.sh ODL_BINARY
set -euo pipefail
odl=${1:?usage: odl_test_cli_test.sh ODL_BINARY}
tmp=$(mktemp -d /tmp/odl-test-cli.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	echo "--- calls:" >&2
	cat "$tmp/calls" >&2 2>/dev/null || true
	exit 1
}
command -v chrt >/dev/null || fail "chrt (util-linux) missing"

mkdir -p "$tmp/bin" "$tmp/build"
# Each fake logs "<start> <end> <policy> <tool> <args>" when it ends.
cat >"$tmp/bin/cmake" <<'EOF'
#!/usr/bin/env bash
start=$(date +%s.%N)
policy=$(chrt -p $$ | sed -n 's/.*policy: //p')
rc=0
if [ "${1:-}" = --build ]; then
	: >"$FAKE_CALLS.build-started"
	sleep 1
	if [ -n "${FAKE_BUILD_FAIL:-}" ]; then
		echo "fake compile error in $2" >&2
		rc=1
	fi
fi
echo "$start $(date +%s.%N) $policy cmake $*" >>"$FAKE_CALLS"
exit "$rc"
EOF
cat >"$tmp/bin/ctest" <<'EOF'
#!/usr/bin/env bash
start=$(date +%s.%N)
policy=$(chrt -p $$ | sed -n 's/.*policy: //p')
# The main ctest: with FAKE_WAIT_FOR_BUILD it lasts until the sanitizer
# tree's fuzz targets have started (a child at SCHED_IDLE can wait seconds
# for a busy CPU), 60 s at most: a pass that only starts after ctest is seen
# as such. The fuzz targets' ctest writes a log with one target's count and
# fails with FAKE_FUZZ_FAIL.
rc=0
case "$*" in
*-asan*-L\ ^fuzz\$*)
	: >"$FAKE_CALLS.fuzz-started"
	mkdir -p "$2/Testing/Temporary"
	printf '1/1 Testing: fuzz_fake\n1/1 Test: fuzz_fake\nOutput:\nstat::number_of_executed_units: 4321\n' \
		>"$2/Testing/Temporary/LastTest.log"
	[ -z "${FAKE_FUZZ_FAIL:-}" ] || rc=8
	;;
*-asan*) ;;
*)
	sleep 1
	if [ -n "${FAKE_WAIT_FOR_BUILD:-}" ]; then
		for _ in $(seq 600); do [ -e "$FAKE_CALLS.fuzz-started" ] && break; sleep 0.1; done
	fi
	;;
esac
echo "$start $(date +%s.%N) $policy ctest $*" >>"$FAKE_CALLS"
exit "$rc"
EOF
chmod +x "$tmp/bin/cmake" "$tmp/bin/ctest"
export FAKE_CALLS="$tmp/calls"

run() { # expected-exit odl-test-args...
	local want=$1
	shift
	: >"$FAKE_CALLS"
	rm -f "$FAKE_CALLS.build-started" "$FAKE_CALLS.fuzz-started"
	set +e
	PATH="$tmp/bin:$PATH" ODL_SOURCE_DIR=/nonexistent-src ODL_BUILD_DIR="$tmp/build" \
		timeout 100 "$odl" test --jobs 2 "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	set -e
	[ "$rc" = "$want" ] || fail "odl test $*: exit $rc, want $want: $(cat "$tmp/err")"
}
# The field of the first call matching a pattern: start, end or policy.
field() { # pattern column
	awk -v p="$1" -v c="$2" '$0 ~ p { print $c; exit }' "$FAKE_CALLS"
}

# 1. The whole pass: the asan tree's configure and build at SCHED_IDLE,
# started while the main ctest still ran, then its fuzz targets, still
# beside it; its unit tests after all of them.
FAKE_WAIT_FOR_BUILD=1 run 0
main_start=$(field 'ctest --test-dir [^ ]*/build --' 1)
main_end=$(field 'ctest --test-dir [^ ]*/build --' 2)
build_start=$(field 'cmake --build [^ ]*-asan' 1)
build_end=$(field 'cmake --build [^ ]*-asan' 2)
fuzz_start=$(field 'ctest --test-dir [^ ]*-asan .*-L \^fuzz' 1)
fuzz_end=$(field 'ctest --test-dir [^ ]*-asan .*-L \^fuzz' 2)
san_start=$(field 'ctest --test-dir [^ ]*-asan .*-L \^unit' 1)
[ -n "$main_start" ] && [ -n "$build_start" ] && [ -n "$fuzz_start" ] && [ -n "$san_start" ] ||
	fail "missing calls: main ctest '$main_start', asan build '$build_start', fuzz '$fuzz_start', asan ctest '$san_start'"
[ "$(field 'cmake --build [^ ]*-asan' 3)" = SCHED_IDLE ] || fail "the asan build did not run at SCHED_IDLE"
[ "$(field 'cmake -S' 3)" = SCHED_IDLE ] || fail "the asan configure did not run at SCHED_IDLE"
[ "$(field 'ctest --test-dir [^ ]*-asan .*-L \^fuzz' 3)" = SCHED_IDLE ] || fail "the fuzz targets did not run at SCHED_IDLE"
[ "$(field 'ctest --test-dir [^ ]*/build --' 3)" = SCHED_OTHER ] || fail "the main ctest did not run at normal priority"
[ "$(field 'ctest --test-dir [^ ]*-asan .*-L \^unit' 3)" = SCHED_OTHER ] || fail "the sanitizer tests did not run at normal priority"
awk -v b="$build_start" -v e="$main_end" 'BEGIN { exit !(b < e) }' ||
	fail "the asan build ($build_start) did not start before the main ctest ended ($main_end)"
awk -v f="$fuzz_start" -v e="$main_end" -v b="$build_end" 'BEGIN { exit !(f < e && f >= b) }' ||
	fail "the fuzz targets ($fuzz_start) did not start after the build ($build_end) and before the main ctest ended ($main_end)"
awk -v s="$san_start" -v e="$main_end" -v f="$fuzz_end" 'BEGIN { exit !(s >= e && s >= f) }' ||
	fail "the sanitizer tests ($san_start) started before the main ctest ($main_end) or the fuzz targets ($fuzz_end) ended"
grep -q 'ctest --test-dir [^ ]*-asan --output-on-failure -j 2 -L ^unit\$' "$FAKE_CALLS" ||
	fail "the sanitizer unit tests did not run 2 at once on --jobs 2"
grep -q 'ctest --test-dir [^ ]*-asan --output-on-failure -j 2 -L ^fuzz\$' "$FAKE_CALLS" ||
	fail "the fuzz targets did not run 2 at once on --jobs 2"
grep -q 'ODL_FUZZ=ON' "$FAKE_CALLS" || fail "the asan tree was not configured with the fuzz targets"
grep -q 'ODL_FUZZ_SECONDS=25' "$FAKE_CALLS" || fail "the asan tree's fuzz targets do not run 25 s each"
grep -q 'ODL_FUZZ_TIMEOUT=1200 ' "$FAKE_CALLS" && grep -q 'ODL_FUZZ_INPUT_TIMEOUT=60\b' "$FAKE_CALLS" ||
	fail "the fuzz targets beside ctest keep the wall-clock limits of a target run alone"
grep -q '^odl: test: asan build took [0-9]* s (beside ctest at idle priority)$' "$tmp/err" ||
	fail "no build time line: $(cat "$tmp/err")"
grep -q '^odl: test: asan fuzz targets took [0-9]* s (beside ctest at idle priority)$' "$tmp/err" ||
	fail "no fuzz time line: $(cat "$tmp/err")"
grep -q '^odl: test: fuzz_fake: 4321 inputs run$' "$tmp/err" || fail "no inputs-run line: $(cat "$tmp/err")"
[ -f "$tmp/build-asan/Testing/Temporary/LastTest-fuzz.log" ] || fail "the fuzz targets' log was not kept apart"
[ -f "$tmp/build-sanitizers.log" ] || fail "no build-sanitizers.log"
echo "ok: asan tree built and fuzzed at SCHED_IDLE beside the main ctest, its unit tests after (2 at once)"

# 1b. A failing fuzz target fails the run; the unit tests still run.
FAKE_FUZZ_FAIL=1 run 8
grep -q 'asan fuzz targets failed (exit 8)' "$tmp/build-sanitizers.log" || fail "the fuzz failure is not in the log"
grep -q 'ctest --test-dir [^ ]*-asan .*-L \^unit' "$FAKE_CALLS" || fail "a fuzz failure skipped the unit tests"
echo "ok: a failing fuzz target fails the run, the unit tests still run"

# 2. Unit label: no fuzz targets.
run 0 -L unit
grep -q 'ctest --test-dir [^ ]*-asan --output-on-failure -j 2 -L ^unit\$' "$FAKE_CALLS" ||
	fail "-L unit: the sanitizer tests did not run 2 at once with label ^unit$"
grep -q 'ODL_FUZZ=OFF' "$FAKE_CALLS" || fail "-L unit: fuzz targets configured"
echo "ok: -L unit runs the sanitizer tests without fuzz targets"

# 3. A failed sanitizer build: non-zero, the log's end shown, no tests.
FAKE_BUILD_FAIL=1 run 1
grep -q 'the sanitizer builds failed' "$tmp/err" || fail "no failure message: $(cat "$tmp/err")"
grep -q '  | fake compile error in ' "$tmp/err" || fail "the build log's end was not shown: $(cat "$tmp/err")"
grep -q 'the asan tree failed to build: its tests are not run' "$tmp/err" || fail "not said: $(cat "$tmp/err")"
! grep -q 'ctest --test-dir [^ ]*-asan' "$FAKE_CALLS" || fail "tests ran in a tree that did not build"
grep -q 'ctest --test-dir [^ ]*/build --' "$FAKE_CALLS" || fail "the main ctest did not run"
echo "ok: a failed sanitizer build fails the run with its log's end and runs none of its tests"

# 4. --no-sanitize: no sanitizer tree at all.
run 0 --no-sanitize
! grep -q '^[^ ]* [^ ]* [^ ]* cmake' "$FAKE_CALLS" || fail "--no-sanitize still configured or built"
[ "$(grep -c ' ctest ' "$FAKE_CALLS")" = 1 ] || fail "--no-sanitize: not exactly one ctest"
echo "ok: --no-sanitize builds nothing"
echo "PASS: odl test's sanitizer pass beside ctest"
