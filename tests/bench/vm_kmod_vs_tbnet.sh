#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl_tb5 (odl perf over the kernel backend) against thunderbolt_net
# (ping and iperf3 over thunderbolt0) on the identical emulated link: one
# testbed session, both drivers loaded, measured alternately for ROUNDS
# rounds so both see the same machine load. Prints each sample and the
# medians. Not a ctest test (timings); docs/benchmarks.md "Kernel module".
#
# Usage: vm_kmod_vs_tbnet.sh [--kernel 6.12|6.1] [--rounds N] [--module-args "poll=1 ..."]
#                            [--io mmap|rw|both]
#   --io: the kernel backend's data path (ODL_KERNEL_IO, docs/kmod.md); both
#   measures the two side by side in every round (default mmap)
# Environment: as tests/vm/kmod_test.sh (ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR,
#   ODL_VM_SHARED_RAM, ...); with ODL_GUEST_IMAGE (and ODL_QEMU, ODL_LINKD)
#   the prebuilt ones of a bench bundle are used and nothing is built
#   (tests/bench/vm_bundle.sh: the bench on a host without Debian's packages)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12 rounds=3 margs="" io=mmap
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--module-args) margs=$2; shift 2 ;;
	--io) io=$2; shift 2 ;;
	*) echo "usage: $0 [--kernel 6.12|6.1] [--rounds N] [--module-args ARGS] [--io mmap|rw|both]" >&2; exit 2 ;;
	esac
done
case "$rounds" in '' | *[!0-9]* | 0) echo "--rounds: a positive number" >&2; exit 2 ;; esac
case "$io" in mmap | rw) ios=$io ;; both) ios="mmap rw" ;; *) echo "--io: mmap, rw or both" >&2; exit 2 ;; esac
tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-bench-$kernel}
extra="$ODL_VM_DIR.extra"

say() { printf '== %s\n' "$*" >&2; }
. "$repo/tests/vm/vm_lib.sh"

# A prebuilt guest image (bench bundle) already holds the module and odl.
if [ -z "${ODL_GUEST_IMAGE:-}" ]; then
	say "build odl_tb5.ko ($kernel) and guest extras"
	"$repo/kmod/guest-extra.sh" "$kernel" "$extra" >/dev/null || fail "guest extras"
fi
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" >&2 || fail "testbed up"
case "$margs" in *[!a-z0-9_=\ ]*) fail "--module-args: only name=value words" ;; esac
load_cable_out $margs >&2
wait_login 60 "first load"
for v in A B; do
	wait_in "$v" 60 'ip link show thunderbolt0' || fail "$v: no thunderbolt0"
done
tbnet_up >&2

# odl perf TEST on the kernel backend over data path IO, server on SRV,
# client on CLI (device 0 on both: one peer each); prints JSON.
odl_perf() {
	local io=$1 srv=$2 cli=$3 t=$4
	shift 4
	vexec "$srv" "(ODL_KERNEL_IO=$io odl perf $t --backend kernel --server -d 0 --connect-timeout 60 $* >/tmp/srv.log 2>&1; echo rc=\$? >>/tmp/srv.log) &" >/dev/null
	ODL_VM_EXEC_TIMEOUT=300 vexec "$cli" "ODL_KERNEL_IO=$io odl perf $t --backend kernel --client 0 --connect-timeout 60 -q --json $*"
	wait_in "$srv" 30 'grep -q "^rc=0" /tmp/srv.log' || fail "odl perf server: $(vexec "$srv" 'cat /tmp/srv.log')"
}
json() { python3 -c "import json,sys; print(json.load(sys.stdin)['results'][0]['$1'])"; }
# iperf3 receiver Mbit/s, SRV serving, CLI sending.
iperf() {
	local srv=$1 cli=$2 addr
	addr=10.99.0.$([ "$srv" = A ] && echo 1 || echo 2)
	vexec "$srv" 'iperf3 -s -D -1 >/dev/null 2>&1' || fail "iperf3 -s on $srv"
	sleep 1
	ODL_VM_EXEC_TIMEOUT=60 vexec "$cli" "iperf3 -c $addr -t 5 -f m" |
		sed -n 's/.* \([0-9.]*\) Mbits\/sec.*receiver.*/\1/p'
}

# One row per round: ping min avg, iperf3 A->B B->A, then per data path:
# odl p50 (us), A->B and B->A (Gb/s) with --no-verify (iperf3 checks no
# payload either), and A->B with every payload byte verified.
results=$(mktemp)
for r in $(seq "$rounds"); do
	say "round $r/$rounds${margs:+ (odl_tb5 $margs)}"
	odl=
	for p in $ios; do
		p50=$(odl_perf "$p" B A latency -s 64 -n 200 --warmup 20 | json p50_us) || fail "odl perf latency ($p)"
		ab=$(odl_perf "$p" B A bandwidth -s 1M --bytes 128M --no-verify | json gbps) || fail "odl perf bandwidth A->B ($p)"
		ba=$(odl_perf "$p" A B bandwidth -s 1M --bytes 128M --no-verify | json gbps) || fail "odl perf bandwidth B->A ($p)"
		abv=$(odl_perf "$p" B A bandwidth -s 1M --bytes 128M | json gbps) || fail "odl perf bandwidth A->B verified ($p)"
		printf 'round %s: odl (%s) p50 %s us, 1M A->B %s Gb/s, B->A %s Gb/s, A->B verified %s Gb/s\n' "$r" "$p" "$p50" "$ab" "$ba" "$abv"
		odl="$odl $p50 $ab $ba $abv"
	done
	ping=$(vexec A 'ping -c 20 -i 0.2 -W 3 10.99.0.2' | sed -n 's/.*= \([0-9.]*\)\/\([0-9.]*\)\/.*/\1 \2/p')
	ipab=$(iperf B A)
	ipba=$(iperf A B)
	[ -n "$ping" ] && [ -n "$ipab" ] && [ -n "$ipba" ] || fail "ping/iperf3 gave no figure"
	printf 'round %s: ping rtt min/avg %s ms, iperf3 A->B %s B->A %s Mbit/s\n' "$r" "$ping" "$ipab" "$ipba"
	printf '%s %s %s %s\n' "$ping" "$ipab" "$ipba" "$odl" >>"$results"
done
python3 - "$results" $ios <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
cols = [statistics.median(c) for c in zip(*rows)]
pmin, pavg, ipab, ipba = cols[:4]
print(f"medians of {len(rows)} rounds:")
for k, io in enumerate(sys.argv[2:]):
    p50, ab, ba, abv = cols[4 + 4 * k: 8 + 4 * k]
    print(f"  [{io}] 64 B one-way latency: odl_tb5 p50 {p50/1000:.2f} ms; thunderbolt_net ping RTT/2 avg {pavg/2:.2f} ms (min {pmin/2:.2f}); ratio {p50/1000/(pavg/2):.2f}")
    for name, o, i in (("A -> B", ab, ipab), ("B -> A", ba, ipba)):
        print(f"  [{io}] bandwidth {name}: odl_tb5 {o*1000:.1f} Mbit/s; thunderbolt_net iperf3 {i:.1f} Mbit/s; ratio {o*1000/i:.2f}")
    print(f"  [{io}] A -> B with every payload byte verified: odl_tb5 {abv*1000:.1f} Mbit/s; ratio {abv*1000/ipab:.2f}")
PY
rm -f "$results"
