#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# Prepare the extra guest files for the two-VM testbed: odl_tb5.ko built
# for a kernel series, the odl CLI with libodl and their libraries, and the
# kmod test helper. The result is a directory for ODL_GUEST_EXTRA
# (qemu-device/guest/build-guest.sh copies it into the initramfs root).
#
# Usage: guest-extra.sh 6.12|6.1 OUTDIR [BUILD_DIR]
#   BUILD_DIR: the CMake build with bin/odl and lib/libodl.so (default build/)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
series=${1:?usage: guest-extra.sh 6.12|6.1 OUTDIR [BUILD_DIR]}
out=${2:?usage: guest-extra.sh 6.12|6.1 OUTDIR [BUILD_DIR]}
build=${3:-${ODL_BUILD_DIR:-$repo/build}}

ko=$("$here/build.sh" "$series" "$out.kbuild" | tail -n1)
rm -rf "$out"
mkdir -p "$out/lib/modules" "$out/usr/bin" "$out/usr/lib"
install -m 0644 "$ko" "$out/lib/modules/odl_tb5.ko"
install -m 0755 "$build/bin/odl" "$out/usr/bin/odl"
cp -L "$build/lib/libodl.so.0" "$out/usr/lib/libodl.so.0"
for bin in "$build/bin/odl" "$build/bin/odl_tb5_probe"; do
	[ -x "$bin" ] || continue
	install -m 0755 "$bin" "$out/usr/bin/$(basename "$bin")"
	ldd "$bin" | awk '/=>/ { print $3 } /^\t\/lib64/ { print $1 }' |
		while read -r lib; do
			case "$lib" in "$build"/*) continue ;; esac
			[ -f "$lib" ] || continue
			mkdir -p "$out$(dirname "$lib")"
			cp -L "$lib" "$out$lib"
		done
done
# The guest-side ABI checker (tests/vm/odl_tb5_ioctl.c), static.
gcc -O2 -Wall -Wextra -Werror -static -I"$repo/include" \
	"$repo/tests/vm/odl_tb5_ioctl.c" -o "$out/usr/bin/odl_tb5_ioctl"
echo "$out"
