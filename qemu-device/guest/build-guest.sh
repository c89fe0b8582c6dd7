#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build a guest image for the two-VM testbed: the newest Debian kernel of a
# series (resolved with apt-cache now, never hard-coded), and a busybox
# initramfs with thunderbolt.ko, thunderbolt_net.ko, iperf3 and its
# libraries, and our init. Cached outside the checkout.
#
# Usage: build-guest.sh [6.12|6.1] [--print-dir]
#   prints the image directory (vmlinuz, initrd.gz, KERNEL_VERSION) on
#   stdout, last line; progress on stderr.
# Environment: ODL_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/odl)
#   ODL_GUEST_EXTRA  optional directory copied into the initramfs root
#                    (kmod/guest-extra.sh makes one: odl_tb5.ko, odl, libodl)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${ODL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/odl}
series=${1:-6.12}
say() { printf 'odl: guest: %s\n' "$*" >&2; }
die() { printf 'odl: guest: error: %s\n' "$*" >&2; exit 1; }

resolved=$("$here/kernel-package.sh" "$series") || exit 1
pkg=${resolved% *} ver=${resolved#* }
extra=${ODL_GUEST_EXTRA:-}
[ -z "$extra" ] || [ -d "$extra" ] || die "ODL_GUEST_EXTRA=$extra is not a directory"
hash=$({
	cat "$here/init" "$here/build-guest.sh" "$here/pack-initramfs.sh" "$here/odl_mbox.c" "$repo/include/odl/wire/linkd.h" \
		"$repo/include/odl/wire/wire_common.h"
	if [ -n "$extra" ]; then (cd "$extra" && find . -type f | LC_ALL=C sort | xargs -r sha256sum); fi
} | sha256sum | cut -c1-12)
dest="$cache/guest-$pkg-$ver-$hash"

if [ "${2:-}" = "--print-dir" ]; then
	echo "$dest"
	exit 0
fi
if [ -f "$dest/initrd.gz" ] && [ -f "$dest/vmlinuz" ]; then
	say "up to date: $dest"
	echo "$dest"
	exit 0
fi
for tool in busybox iperf3 xz cpio; do
	command -v "$tool" >/dev/null || die "$tool missing (./odl installs it)"
done

mkdir -p "$cache/dl"
deb=$(ls "$cache/dl/${pkg}_"*.deb 2>/dev/null | head -n1 || true)
if [ -z "$deb" ]; then
	say "downloading $pkg $ver"
	# As root, apt's _apt sandbox user cannot write into ~/.cache; say so
	# instead of letting apt warn (the file is checked against the index).
	sandbox=()
	[ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
	if ! (cd "$cache/dl" && apt-get download "${sandbox[@]}" -q "$pkg=$ver" \
		>"$cache/dl/apt-download.log" 2>&1); then
		cat "$cache/dl/apt-download.log" >&2
		# Stale package lists: the archive dropped this kernel at a point
		# release. Refresh once and resolve the newest again.
		[ -z "${ODL_GUEST_LISTS_REFRESHED:-}" ] || die "apt-get download $pkg=$ver failed"
		say "download failed; refreshing the package lists and resolving again"
		if [ "$(id -u)" -eq 0 ]; then apt-get update -q; else sudo apt-get update -q; fi \
			>"$cache/dl/apt-update.log" 2>&1 ||
			{ cat "$cache/dl/apt-update.log" >&2; die "apt-get update failed"; }
		ODL_GUEST_LISTS_REFRESHED=1 exec "$0" "$@"
	fi
	deb=$(ls "$cache/dl/${pkg}_"*.deb | head -n1)
fi

work=$(mktemp -d "$cache/guest-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "extracting $(basename "$deb")"
dpkg -x "$deb" "$work/pkg"
kver=$(ls "$work/pkg/lib/modules" | head -n1)
root="$work/root"
mkdir -p "$root"/{bin,sbin,etc,proc,sys,dev,tmp,odl,lib/modules,lib64,usr/bin}
install -m 0755 /bin/busybox "$root/bin/busybox"
install -m 0755 "$here/init" "$root/init"
# The mailbox agent of deterministic runs (odl_mbox.c), static: the image
# has no C library.
gcc -O2 -Wall -Wextra -Werror -static -I"$repo/include" "$here/odl_mbox.c" -o "$root/usr/bin/odl-mbox" ||
	die "building odl-mbox failed"
# Module file names moved between series (6.1: drivers/net/thunderbolt-net.ko,
# 6.12: drivers/net/thunderbolt/thunderbolt_net.ko); find them by name.
for name in thunderbolt thunderbolt_net; do
	pat=$name
	[ "$name" = thunderbolt_net ] && pat='thunderbolt[-_]net'
	src=$(find "$work/pkg/lib/modules/$kver/kernel/drivers" -regextype posix-extended \
		-regex ".*/$pat\.ko(\.xz)?" | head -n1)
	[ -n "$src" ] || die "$name.ko not in $pkg"
	case "$src" in
	*.xz) xz -dc "$src" >"$root/lib/modules/$name.ko" ;;
	*) cp "$src" "$root/lib/modules/$name.ko" ;;
	esac
done
# iperf3 and exactly the libraries the loader resolves for it here.
install -m 0755 "$(command -v iperf3)" "$root/usr/bin/iperf3"
ldd "$(command -v iperf3)" | awk '/=>/ { print $3 } /^\t\/lib64/ { print $1 }' |
	while read -r lib; do
		[ -f "$lib" ] || continue
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
echo "root:x:0:0:root:/:/bin/sh" >"$root/etc/passwd"
if [ -n "$extra" ]; then
	say "adding extra files from $extra"
	cp -a "$extra/." "$root/"
fi

say "packing initramfs ($kver)"
"$here/pack-initramfs.sh" "$root" >"$work/initrd.gz"
mkdir -p "$dest"
cp "$work/pkg/boot/vmlinuz-$kver" "$dest/vmlinuz"
mv "$work/initrd.gz" "$dest/initrd.gz"
echo "$kver" >"$dest/KERNEL_VERSION"
say "image: $dest ($(du -h "$dest/initrd.gz" | cut -f1) initramfs)"
echo "$dest"
