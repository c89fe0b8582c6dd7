#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build qemu-system-x86_64 with the odl-usb4-nhi device: Debian's QEMU source
# package (apt-get source), our device copied into hw/misc/ at build time,
# our few changes to QEMU itself applied (qemu-device/patches), a minimal
# x86_64-softmmu configuration. Built once into a cache outside the
# checkout, keyed by source version + device source and patches hash.
#
# Usage: build-qemu.sh [--print-path]
#   prints the path of the built qemu-system-x86_64 on stdout (last line);
#   progress and errors go to stderr.
# Environment:
#   ODL_CACHE_DIR  cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/odl)
#   ODL_JOBS       parallel compile jobs (default: number of cores)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
cache=${ODL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/odl}
mkdir -p "$cache"
jobs=${ODL_JOBS:-$(nproc)}

say() { printf 'odl: qemu: %s\n' "$*" >&2; }
die() { printf 'odl: qemu: error: %s\n' "$*" >&2; exit 1; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Files whose content decides the device build (the cache key).
device_files=(
	"$here/odl_usb4_nhi.c" "$here/odl_linkd_client.c" "$here/odl_usb4_nhi.h"
	"$here/trace-events" "$here/build-qemu.sh"
	"$repo/include/odl/wire/wire_common.h" "$repo/include/odl/wire/linkd.h"
	"$repo/include/odl/wire/linkd_codec.h"
	"$here"/patches/*.patch
)

# The configuration: x86_64 TCG (and KVM where it works), no debug info (a
# faster compile; QEMU's own crashes are not what the testbed debugs), and
# the device set of qemu-device/testbed.sh: the q35 board, its ISA serial
# ports (console, control channel), VT-d for guests run with an IOMMU, and
# for the Debian-root guests of `testbed.sh up --root` (the HIL targets) a
# virtio disk and a virtio NIC on user networking (slirp) for their SSH
# management port. Nothing else: the testbed starts QEMU with -vga none
# -parallel none, and any other default device would be "unknown type".
# Our device is added to hw/misc/ under CONFIG_PCI, which q35 selects.
configure_args=(
	--target-list=x86_64-softmmu --without-default-features
	--without-default-devices --disable-docs --disable-tools
	--enable-kvm --enable-fdt=system --enable-slirp --disable-install-blobs
	--disable-werror --disable-debug-info
)
devices=(CONFIG_Q35=y CONFIG_SERIAL_ISA=y CONFIG_VTD=y
	CONFIG_VIRTIO_PCI=y CONFIG_VIRTIO_BLK=y CONFIG_VIRTIO_NET=y)

# deb-src entries with the same URIs, suites and keys as the machine's own
# deb entries, so no archive host name is written anywhere in the repo.
ensure_deb_src() {
	# (no grep -q: an early exit would SIGPIPE apt-cache under pipefail)
	if [ -n "$(apt-cache showsrc qemu 2>/dev/null | sed -n 's/^Version: //p')" ]; then
		return 0
	fi
	local f out=/etc/apt/sources.list.d/odl-deb-src.sources tmp
	tmp=$(mktemp)
	for f in /etc/apt/sources.list.d/*.sources; do
		[ "$f" = "$out" ] && continue
		[ -f "$f" ] || continue
		sed -e 's/^Types:.*$/Types: deb-src/' "$f" >>"$tmp"
		printf '\n' >>"$tmp"
	done
	if [ -f /etc/apt/sources.list ]; then
		sed -n 's/^deb \(.*\)$/deb-src \1/p' /etc/apt/sources.list \
			>/etc/apt/sources.list.d/odl-deb-src.list.tmp || true
	fi
	[ -s "$tmp" ] || [ -s /etc/apt/sources.list.d/odl-deb-src.list.tmp ] ||
		die "no apt sources found to derive deb-src entries from"
	say "adding deb-src entries derived from the existing apt sources"
	as_root install -m 0644 "$tmp" "$out"
	if [ -s /etc/apt/sources.list.d/odl-deb-src.list.tmp ]; then
		as_root mv /etc/apt/sources.list.d/odl-deb-src.list.tmp \
			/etc/apt/sources.list.d/odl-deb-src.list
	else
		rm -f /etc/apt/sources.list.d/odl-deb-src.list.tmp
	fi
	rm -f "$tmp"
	say "apt-get update (source lists)"
	as_root apt-get update -q >"$cache/apt-update.log" 2>&1 ||
		{ cat "$cache/apt-update.log" >&2; die "apt-get update failed"; }
	rm -f "$cache/apt-update.log"
}

ensure_deb_src
srcver=$(apt-cache showsrc qemu | sed -n 's/^Version: //p' |
	sort -V | tail -n1)
[ -n "$srcver" ] || die "apt-cache showsrc qemu: no version"
# apt needs the full version (epoch included: "1:7.2+dfsg-..."); file names
# (the .dsc, the cache key) carry it without the epoch.
filever=${srcver#*:}
hash=$(cat "${device_files[@]}" | sha256sum | cut -c1-12)
dest="$cache/qemu-$filever-$hash"
bin="$dest/qemu-system-x86_64"

if [ "${1:-}" = "--print-path" ]; then
	echo "$bin"
	exit 0
fi
if [ -x "$bin" ]; then
	say "up to date: $bin"
	echo "$bin"
	exit 0
fi

mkdir -p "$cache/dl"
dsc="$cache/dl/qemu_$filever.dsc"
if [ ! -f "$dsc" ]; then
	say "downloading the qemu $srcver source package"
	# As root, apt's _apt sandbox user cannot write into ~/.cache (its warning
	# would be the only output); the files are checked against the signed
	# index either way.
	sandbox=()
	[ "$(id -u)" -ne 0 ] || sandbox=(-o APT::Sandbox::User=root)
	if ! (cd "$cache/dl" && apt-get source "${sandbox[@]}" --download-only -q "qemu=$srcver" \
		>"$cache/dl/apt-source.log" 2>&1); then
		cat "$cache/dl/apt-source.log" >&2
		# Stale package lists name a version the archive no longer has
		# (a point release replaced it): refresh once, resolve again.
		[ -z "${ODL_QEMU_LISTS_REFRESHED:-}" ] || die "apt-get source qemu=$srcver failed"
		say "download failed; refreshing the package lists and resolving again"
		as_root apt-get update -q >"$cache/apt-update.log" 2>&1 ||
			{ cat "$cache/apt-update.log" >&2; die "apt-get update failed"; }
		ODL_QEMU_LISTS_REFRESHED=1 exec "$0" "$@"
	fi
	[ -f "$dsc" ] || die "apt-get source gave no $(basename "$dsc")"
fi

src="$cache/qemu-src-$filever"
# A tree configured with other options or devices is unpacked afresh.
if [ ! -f "$src/build/build.ninja" ] ||
	! printf '%s\n' "${configure_args[@]}" "${devices[@]}" | cmp -s - "$src/configure.args"; then
	rm -rf "$src"
	say "unpacking $filever (Debian patches applied)"
	# (dpkg-source has no keyring to check the .dsc signature against and
	# says so; apt already checked every file against the signed index.)
	dpkg-source -q -x "$dsc" "$src" >"$cache/dl/dpkg-source.log" 2>&1 ||
		{ cat "$cache/dl/dpkg-source.log" >&2; die "dpkg-source -x failed"; }
	# The dfsg tarball has no EDK2 blobs; their unpack step must not run.
	sed -i 's/^    unpack_edk2_blobs = bzip2.found()$/    unpack_edk2_blobs = false/' \
		"$src/meson.build"
	grep -q '^    unpack_edk2_blobs = false$' "$src/meson.build" ||
		die "could not disable the EDK2 blob unpack step in meson.build"
	cp "$src/hw/misc/trace-events" "$src/hw/misc/trace-events.orig"
	cp "$src/hw/misc/meson.build" "$src/hw/misc/meson.build.orig"
	# Only the devices the testbed uses (without-default-devices keeps
	# just what this list selects): a third fewer objects to compile.
	printf '%s\n' "${devices[@]}" >"$src/configs/devices/x86_64-softmmu/default.mak"
	mkdir -p "$src/build"
	say "configuring (x86_64-softmmu, q35 only, no default features or devices)"
	(cd "$src/build" && ../configure "${configure_args[@]}") >"$src/configure.log" 2>&1 ||
		{ tail -n 30 "$src/configure.log" >&2; die "configure failed; see $src/configure.log"; }
	printf '%s\n' "${configure_args[@]}" "${devices[@]}" >"$src/configure.args"
fi

# Our changes to QEMU itself (qemu-device/patches, in order), each file
# they touch first put back as Debian shipped it: idempotent.
for p in "$here"/patches/*.patch; do
	for f in $(sed -n 's|^+++ b/||p' "$p"); do
		[ -f "$src/$f.orig" ] || cp "$src/$f" "$src/$f.orig"
		cp "$src/$f.orig" "$src/$f"
	done
done
for p in "$here"/patches/*.patch; do
	patch -s -p1 -d "$src" <"$p" >"$src/patch.log" 2>&1 ||
		{ cat "$src/patch.log" >&2; die "$(basename "$p") does not apply to QEMU $srcver"; }
done
rm -f "$src/patch.log"

# Add (or refresh) the device in the tree; idempotent.
[ -f "$src/hw/misc/trace-events.orig" ] ||
	cp "$src/hw/misc/trace-events" "$src/hw/misc/trace-events.orig"
[ -f "$src/hw/misc/meson.build.orig" ] ||
	cp "$src/hw/misc/meson.build" "$src/hw/misc/meson.build.orig"
install -m 0644 "$here/odl_usb4_nhi.c" "$here/odl_linkd_client.c" \
	"$here/odl_usb4_nhi.h" "$src/hw/misc/"
mkdir -p "$src/include/odl/wire"
install -m 0644 "$repo/include/odl/wire/wire_common.h" \
	"$repo/include/odl/wire/linkd.h" "$repo/include/odl/wire/linkd_codec.h" \
	"$src/include/odl/wire/"
cat "$src/hw/misc/trace-events.orig" "$here/trace-events" >"$src/hw/misc/trace-events.new"
cmp -s "$src/hw/misc/trace-events.new" "$src/hw/misc/trace-events" ||
	mv "$src/hw/misc/trace-events.new" "$src/hw/misc/trace-events"
rm -f "$src/hw/misc/trace-events.new"
{
	cat "$src/hw/misc/meson.build.orig"
	echo "softmmu_ss.add(when: 'CONFIG_PCI', if_true: files('odl_usb4_nhi.c', 'odl_linkd_client.c'))"
} >"$src/hw/misc/meson.build.new"
cmp -s "$src/hw/misc/meson.build.new" "$src/hw/misc/meson.build" ||
	mv "$src/hw/misc/meson.build.new" "$src/hw/misc/meson.build"
rm -f "$src/hw/misc/meson.build.new"

say "building qemu-system-x86_64 with $jobs jobs (log: $src/build.log)"
start=$(date +%s)
(cd "$src/build" && ninja -j "$jobs" qemu-system-x86_64) >"$src/build.log" 2>&1 &
ninja_pid=$!
trap 'kill "$ninja_pid" 2>/dev/null || true' INT TERM
# Progress: ninja's [done/total] counter, once every 15 s.
while kill -0 "$ninja_pid" 2>/dev/null; do
	sleep 5
	step=$(grep -o '^\[[0-9]*/[0-9]*\]' "$src/build.log" 2>/dev/null | tail -n1 || true)
	now=$(date +%s)
	if [ $(((now - start) % 15)) -lt 5 ] && [ -n "$step" ]; then
		say "$step $((now - start)) s"
	fi
done
if ! wait "$ninja_pid"; then
	grep -E 'error|Error' "$src/build.log" | head -n 20 >&2 || true
	die "build failed; see $src/build.log"
fi
trap - INT TERM
say "built in $(($(date +%s) - start)) s"

mkdir -p "$dest"
cp "$src/build/qemu-system-x86_64" "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "$srcver" >"$dest/SOURCE_VERSION"
# Older device builds of this source version are dead weight now.
for old in "$cache/qemu-$filever-"*; do
	[ "$old" = "$dest" ] || rm -rf "$old"
done
echo "$bin"
