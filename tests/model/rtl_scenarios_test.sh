#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The NHI interrupt unit's RTL block in whole scenarios: a scenario with
# interrupts on both hosts gives byte-identical traces and reports with the
# C++ twin, the RTL block and both in lock step; every shipped scenario runs
# in lock step with the twin's result; bad choices are refused.
# odl-linkd refuses wave options that cannot apply.
# Usage: rtl_scenarios_test.sh ODL_MODEL_BINARY ODL_LINKD_BINARY
set -euo pipefail
odl_model=$1
linkd=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }

run() {  # run NAME SCENARIO IMPL: the run's exit status
	local rc=0
	"$odl_model" run "$2" --nhi-impl "$3" --out "$tmp/$1-$3" >"$tmp/$1-$3.out" 2>&1 || rc=$?
	echo "$rc"
}

echo "== interrupts on both hosts: model, rtl and lockstep agree byte for byte"
for impl in model rtl lockstep; do
	rc=$(run mix "$here/scenarios/irq-mix.yaml" "$impl")
	[ "$rc" = 0 ] || fail "irq-mix with --nhi-impl $impl: exit $rc: $(tail -n 20 "$tmp/mix-$impl.out")"
done
msix=$(grep -c 'msix vector=' "$tmp/mix-model/trace.txt" || true)
echo "irq-mix: $msix MSI-X messages in the trace"
[ "$msix" -gt 1000 ] || fail "irq-mix raised only $msix interrupts: the unit was hardly used"
for impl in rtl lockstep; do
	for f in trace.txt report.json; do
		cmp -s "$tmp/mix-model/$f" "$tmp/mix-$impl/$f" ||
			fail "irq-mix: $f differs between model and $impl: $(diff "$tmp/mix-model/$f" "$tmp/mix-$impl/$f" | head -n 10)"
	done
done

echo "== each shipped scenario in lock step"
for f in "$repo"/scenarios/*.yaml; do
	n=$(basename "$f" .yaml)
	want=$(run "$n" "$f" model)
	got=$(run "$n" "$f" lockstep)
	[ "$got" = "$want" ] || fail "$n: exit $got in lock step, $want with the twin: $(tail -n 20 "$tmp/$n-lockstep.out")"
	cmp -s "$tmp/$n-model/report.json" "$tmp/$n-lockstep/report.json" || fail "$n: the reports differ"
	echo "$n: exit $got, same report"
done

echo "== a host's 'nhi:' key; bad choices refused"
sed 's/completion: interrupt/completion: interrupt, nhi: rtl/' "$here/scenarios/irq-mix.yaml" >"$tmp/keyed.yaml"
[ "$(grep -c 'nhi: rtl' "$tmp/keyed.yaml")" = 2 ] || fail "could not write the keyed scenario"
"$odl_model" run "$tmp/keyed.yaml" --out "$tmp/keyed" >/dev/null 2>&1 || fail "a scenario with nhi: rtl did not run"
cmp -s "$tmp/mix-model/trace.txt" "$tmp/keyed/trace.txt" || fail "nhi: rtl gave another trace"
sed 's/completion: interrupt/completion: interrupt, nhi: verilog/' "$here/scenarios/irq-mix.yaml" >"$tmp/bad.yaml"
set +e
msg=$("$odl_model" run "$tmp/bad.yaml" --out "$tmp/bad" 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] && grep -q 'bad.yaml:10: .*expected nhi: model, rtl or lockstep' <<<"$msg" ||
	fail "nhi: verilog: exit $rc: $msg"
set +e
msg=$("$odl_model" run "$here/scenarios/irq-mix.yaml" --nhi-impl verilog 2>&1)
rc=$?
set -e
[ "$rc" != 0 ] && grep -q 'nhi-impl' <<<"$msg" || fail "--nhi-impl verilog: exit $rc: $msg"

echo "== odl-linkd: wave options that cannot apply are refused before it serves"
refused() {  # refused WANT ARGS...: odl-linkd exits 1 saying WANT
	local want=$1 msg rc=0
	shift
	msg=$(timeout 20 "$linkd" -s "$tmp/l.sock" "$@" 2>&1) || rc=$?
	[ "$rc" = 1 ] && grep -q -- "$want" <<<"$msg" || fail "odl-linkd $*: exit $rc: $msg"
	[ ! -e "$tmp/l.sock" ] || fail "odl-linkd $*: left a socket behind"
}
refused "needs --nhi-impl rtl or lockstep" --rtl-trace "$tmp/w.fst"
refused "needs --rtl-trace" --nhi-impl rtl --rtl-trace-window 0:10
refused "expected FROM:TO" --nhi-impl rtl --rtl-trace "$tmp/w.fst" --rtl-trace-window 10:5
refused "expected FROM:TO" --nhi-impl rtl --rtl-trace "$tmp/w.fst" --rtl-trace-window abc
refused "cannot write RTL waves" --nhi-impl rtl --rtl-trace /nonexistent-dir/w.fst
refused "need the model backend" --backend stub --nhi-impl rtl
refused "not --sim" --sim --nhi-impl rtl
echo PASS
