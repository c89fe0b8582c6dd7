#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl cp against rsync on the identical emulated link, in the two-VM
# testbed: the same tree of files pushed from A to B with `odl cp -r` over
# odl_tb5 (every file's SHA-256 compared on arrival) and with rsync over
# thunderbolt_net (an rsync daemon on B: no SSH, so neither side encrypts;
# rsync checks its own whole-file checksum), alternately for ROUNDS rounds so
# both see the same machine load. Both are timed from this host around the
# same guest exec; each copy is compared with the source by SHA-256 after
# the round; then odl perf bandwidth (1 MiB, every byte checked, the same
# amount) for what the link gives a program. Prints each sample, the medians
# and their ratio. Not a ctest test (timings); docs/benchmarks.md "File
# service".
#
# Usage: files_vs_rsync.sh [--kernel 6.12|6.1] [--rounds N] [--mib M] [--files N]
#   --mib: the tree's size (default 64), --files: how many files (default 64)
# Environment: as tests/vm/kmod_test.sh (ODL_LINKD, ODL_VM_DIR, ODL_BUILD_DIR, ...)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12 rounds=3 mib=64 files=64
while [ $# -gt 0 ]; do
	case "$1" in
	--kernel) kernel=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--mib) mib=$2; shift 2 ;;
	--files) files=$2; shift 2 ;;
	*) echo "usage: $0 [--kernel 6.12|6.1] [--rounds N] [--mib M] [--files N]" >&2; exit 2 ;;
	esac
done
for n in "$rounds" "$mib" "$files"; do
	case "$n" in '' | *[!0-9]* | 0) echo "--rounds, --mib and --files take a positive number" >&2; exit 2 ;; esac
done
[ $((mib * 1024 % files)) = 0 ] || { echo "--mib x 1024 must divide by --files (KiB per file)" >&2; exit 2; }
rsync_bin=$(command -v rsync) || { echo "rsync is not installed (./odl installs it)" >&2; exit 2; }
tb="$repo/qemu-device/testbed.sh"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-vm-bench-$kernel}
extra="$ODL_VM_DIR.extra"

say() { printf '== %s\n' "$*" >&2; }
. "$repo/tests/vm/vm_lib.sh"

results=$(mktemp)
# The testbed goes down with the script, pass or fail.
trap '"$tb" down quiet >/dev/null 2>&1 || true; rm -f "$results"' EXIT
say "build odl_tb5.ko ($kernel) and guest extras (with rsync)"
"$repo/kmod/guest-extra.sh" "$kernel" "$extra" "" "$rsync_bin:/usr/bin/rsync" >/dev/null || fail "guest extras"
ODL_GUEST_EXTRA="$extra" "$tb" up --kernel "$kernel" >&2 || fail "testbed up"
load_cable_out >&2
wait_login 60 "first load"
for v in A B; do
	wait_in "$v" 60 'ip link show thunderbolt0' || fail "$v: no thunderbolt0"
done
tbnet_up >&2

say "pairing; odl files serve and an rsync daemon on B"
vexec B "(odl pair --backend kernel -d 0 --keys /tmp/kb --name vm-b --yes --timeout 60 >/tmp/pair.log 2>&1; echo rc=\$? >>/tmp/pair.log) &" >/dev/null
ODL_VM_EXEC_TIMEOUT=90 vexec A 'odl pair --backend kernel -d 0 --keys /tmp/ka --name vm-a --yes --timeout 60' >/dev/null ||
	fail "odl pair on A"
wait_in B 30 'grep -q "^rc=0" /tmp/pair.log' || fail "odl pair on B: $(vexec B 'cat /tmp/pair.log')"
vexec B "mkdir -p /tmp/share /tmp/rsync && (odl files serve /tmp/share --backend kernel -d 0 --keys /tmp/kb >/tmp/serve.log 2>&1 &)" >/dev/null
vexec B 'printf "[share]\n path = /tmp/rsync\n read only = false\n use chroot = false\n uid = 0\n gid = 0\n" >/tmp/rsyncd.conf && rsync --daemon --config=/tmp/rsyncd.conf --address=10.99.0.2' ||
	fail "rsync daemon on B"
kib=$((mib * 1024 / files))
say "the tree on A: $files files of $kib KiB"
vexec A "mkdir -p /tmp/tree && i=0 && while [ \$i -lt $files ]; do dd if=/dev/urandom of=/tmp/tree/f\$i bs=1K count=$kib 2>/dev/null; i=\$((i + 1)); done" ||
	fail "tree on A"
want=$(vexec A 'cd /tmp/tree && sha256sum f* | sha256sum')

now() { date +%s.%N; }
for r in $(seq "$rounds"); do
	vexec B 'rm -rf /tmp/share/tree /tmp/rsync/tree' >/dev/null
	t0=$(now)
	ODL_VM_EXEC_TIMEOUT=600 vexec A 'odl cp -r /tmp/tree peer: --backend kernel -d 0 --keys /tmp/ka --quiet' >/dev/null ||
		fail "odl cp -r: $(vexec B 'cat /tmp/serve.log')"
	t1=$(now)
	ODL_VM_EXEC_TIMEOUT=600 vexec A 'rsync -a /tmp/tree rsync://10.99.0.2/share/' >/dev/null || fail "rsync"
	t2=$(now)
	# What the link gives a program with every byte checked: odl perf, the same bytes.
	vexec B 'kill -TERM $(pidof odl)' >/dev/null
	vexec B "(odl perf bandwidth --backend kernel --server -d 0 --connect-timeout 60 >/tmp/srv.log 2>&1; echo rc=\$? >>/tmp/srv.log) &" >/dev/null
	p=$(ODL_VM_EXEC_TIMEOUT=300 vexec A "odl perf bandwidth --backend kernel --client 0 --connect-timeout 60 -q --json -s 1M --bytes ${mib}M" |
		python3 -c "import json,sys; print('%.3f' % json.load(sys.stdin)['results'][0]['gbps'])") || fail "odl perf bandwidth"
	wait_in B 30 'grep -q "^rc=0" /tmp/srv.log' || fail "odl perf server: $(vexec B 'cat /tmp/srv.log')"
	vexec B "(odl files serve /tmp/share --backend kernel -d 0 --keys /tmp/kb >/tmp/serve.log 2>&1 &)" >/dev/null
	for d in /tmp/share/tree /tmp/rsync/tree; do
		[ "$(vexec B "cd $d && sha256sum f* | sha256sum")" = "$want" ] || fail "round $r: $d on B differs from A's tree"
	done
	o=$(python3 -c "print(f'{$t1 - $t0:.2f}')") s=$(python3 -c "print(f'{$t2 - $t1:.2f}')")
	printf 'round %s: odl cp -r %s s, rsync %s s (%s MiB in %s files); odl perf bandwidth 1 MiB %s Gb/s\n' \
		"$r" "$o" "$s" "$mib" "$files" "$p"
	echo "$o $s $p" >>"$results"
done
python3 - "$results" "$mib" <<'PY'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
o, s, p = (statistics.median(c) for c in zip(*rows))
mib = float(sys.argv[2])
print(f"medians of {len(rows)} rounds: odl cp -r {o:.2f} s ({mib * 8 * 1.048576 / o / 1000:.3f} Gb/s), "
      f"rsync over thunderbolt_net {s:.2f} s ({mib * 8 * 1.048576 / s / 1000:.3f} Gb/s); odl cp is {s / o:.2f}x rsync; "
      f"odl perf bandwidth 1 MiB, verified: {p:.3f} Gb/s")
PY
