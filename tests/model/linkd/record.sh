#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Re-record the Linux access sequences that linkd_replay_*_test replays:
# two VMs (gen3 x2 cable) through probe, XDomain discovery, thunderbolt_net
# login and a ping, with odl-linkd writing its model seam to a file. Run it
# when a deliberate model change makes the replay tests disagree.
#
# Usage: record.sh 6.12|6.1   (needs ODL_LINKD or a build in ./build)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tb="$here/../../../qemu-device/testbed.sh"
export ODL_TESTBED_OWNER=$$  # a ctest timeout kills this shell alone: the testbed goes with it (testbed.sh)
kernel=${1:?usage: record.sh 6.12|6.1}
out="$here/data/linux-$kernel-gen3x2.trace"
export ODL_VM_DIR=${ODL_VM_DIR:-/tmp/odl-record-$$}
export ODL_LINKD_ARGS="--record $out.tmp"
trap '"$tb" down >/dev/null 2>&1 || true' EXIT
"$tb" up --kernel "$kernel" --gen gen3 --lanes 2
ok=0
for _ in $(seq 60); do
	if "$tb" exec A 'test -e /sys/bus/thunderbolt/devices/0-1' >/dev/null 2>&1 &&
		"$tb" exec B 'ip link show thunderbolt0' >/dev/null 2>&1; then
		ok=1
		break
	fi
	sleep 1
done
[ "$ok" = 1 ] || { echo "no XDomain/thunderbolt0 within 60 s" >&2; exit 1; }
"$tb" exec A 'ip addr add 10.99.0.1/24 dev thunderbolt0 && ip link set thunderbolt0 up'
"$tb" exec B 'ip addr add 10.99.0.2/24 dev thunderbolt0 && ip link set thunderbolt0 up'
for _ in $(seq 30); do
	"$tb" exec A 'ping -c 1 -W 2 10.99.0.2' >/dev/null 2>&1 && break
done
"$tb" exec A 'ping -c 2 -W 2 10.99.0.2'
"$tb" down
mv "$out.tmp" "$out"
echo "recorded $(wc -l <"$out") events to $out"
