#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# vm_prepare: the fixture every vm test needs. Names the bootstrap's VM-stack
# preparation error when there was one (./odl test goes on to the unit and
# model tests then); otherwise checks QEMU and both guest images are built
# (the bootstrap built them; under a bare ctest this builds them).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
qemu=$here/../../qemu-device
err=${ODL_BUILD_DIR:?}/vm-stack.error
if [ -f "$err" ]; then
	cat "$err" >&2
	echo "vm_prepare: FAIL: the VM stack could not be prepared (above); every vm test depends on it" >&2
	exit 1
fi
"$qemu/build-qemu.sh" >/dev/null
"$qemu/guest/build-guest.sh" 6.12 >/dev/null
"$qemu/guest/build-guest.sh" 6.1 >/dev/null
for s in 6.12 6.1; do
	pkg=$("$here/../../kmod/headers.sh" "$s")
	[ -f "/usr/src/${pkg}/Makefile" ] || {
		echo "vm_prepare: FAIL: $pkg is not installed (./odl test installs it)" >&2
		exit 1
	}
done
echo "vm_prepare: QEMU, the 6.12 and 6.1 guest images and their kernel headers are ready"
