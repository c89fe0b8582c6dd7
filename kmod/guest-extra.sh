#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# Prepare the extra guest files for the two-VM testbed: odl_tb5.ko built
# for a kernel series, the odl CLI with libodl and their libraries, and the
# kmod test helper. The result is a directory for ODL_GUEST_EXTRA
# (qemu-device/guest/build-guest.sh copies it into the initramfs root).
#
# Usage: guest-extra.sh 6.12|6.1 OUTDIR [BUILD_DIR [FILE:GUEST_PATH ...]]
#   BUILD_DIR: the CMake build with bin/odl and lib/libodl.so (default build/)
#   FILE:GUEST_PATH: more programs or libraries to install at GUEST_PATH,
#   with the host libraries they need (e.g. the NCCL plugin for its vm test)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
series=${1:?usage: guest-extra.sh 6.12|6.1 OUTDIR [BUILD_DIR]}
out=${2:?usage: guest-extra.sh 6.12|6.1 OUTDIR [BUILD_DIR]}
build=${3:-${ODL_BUILD_DIR:-$repo/build}}

# odl_tb5.ko and the two static checkers depend only on sources and the
# headers package: built once per content in the build tree, so the vm
# tests, which each prepare their own extras, do not rebuild them.
pkg=$("$here/headers.sh" "$series")
key=$({
	echo "$series $pkg"
	cat "$here"/Kbuild "$here"/*.c "$here"/*.h "$here/build.sh" "$0" \
		"$repo"/include/odl/wire/*.h "$repo"/include/uapi/*.h \
		"$repo/tests/vm/odl_tb5_ioctl.c" "$repo/tests/vm/odl_tb5_dmabuf.c" \
		"$repo/tests/vm/odl_tb5_check.h"
} | sha256sum | cut -c1-16)
cached="$build/guest-extra-cache/$series-$key"
# Two vm tests at once (ctest's two testbed slots) must not build, or
# remove, the same entry together: the second waits for the first's.
mkdir -p "$build/guest-extra-cache"
exec 9>"$build/guest-extra-cache/.lock"
flock 9
if [ ! -f "$cached/done" ]; then
	rm -rf "$build/guest-extra-cache/$series-"*
	mkdir -p "$cached"
	ko=$("$here/build.sh" "$series" "$out.kbuild" | tail -n1)
	install -m 0644 "$ko" "$cached/odl_tb5.ko"
	# The guest-side ABI checker (tests/vm/odl_tb5_ioctl.c), static.
	gcc -O2 -Wall -Wextra -Werror -static -I"$repo/include" \
		"$repo/tests/vm/odl_tb5_ioctl.c" -o "$cached/odl_tb5_ioctl"
	# The dma-buf send path checker (tests/vm/odl_tb5_dmabuf.c), static.
	gcc -O2 -Wall -Wextra -Werror -static -I"$repo/include" \
		"$repo/tests/vm/odl_tb5_dmabuf.c" -o "$cached/odl_tb5_dmabuf"
	touch "$cached/done"
fi
flock -u 9
ko="$cached/odl_tb5.ko"
rm -rf "$out"
mkdir -p "$out/lib/modules" "$out/usr/bin" "$out/usr/lib"
install -m 0644 "$ko" "$out/lib/modules/odl_tb5.ko"
install -m 0755 "$build/bin/odl" "$out/usr/bin/odl"
cp -L "$build/lib/libodl.so.0" "$out/usr/lib/libodl.so.0"
# copy_libs FILE: the host libraries FILE needs, at their host paths.
copy_libs() {
	ldd "$1" | awk '/=>/ { print $3 } /^\t\/lib64/ { print $1 }' |
		while read -r lib; do
			case "$lib" in "$build"/*) continue ;; esac
			[ -f "$lib" ] || continue
			mkdir -p "$out$(dirname "$lib")"
			cp -L "$lib" "$out$lib"
		done
}
for bin in "$build/bin/odl" "$build/bin/odl_tb5_probe"; do
	[ -x "$bin" ] || continue
	install -m 0755 "$bin" "$out/usr/bin/$(basename "$bin")"
	copy_libs "$bin"
done
shift $(($# < 3 ? $# : 3))
for spec in "$@"; do
	src=${spec%%:*} dst=${spec#*:}
	[ -f "$src" ] && [ "$dst" != "$spec" ] || { echo "guest-extra.sh: bad FILE:GUEST_PATH '$spec'" >&2; exit 2; }
	mkdir -p "$out$(dirname "$dst")"
	install -m 0755 "$src" "$out$dst"
	copy_libs "$src"
done
install -m 0755 "$cached/odl_tb5_ioctl" "$cached/odl_tb5_dmabuf" "$out/usr/bin/"
echo "$out"
