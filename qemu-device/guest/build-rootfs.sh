#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A Debian 12 root filesystem for the testbed's "real host" guests (the HIL
# targets of `testbed.sh up --root`, docs/hil.md): built from Debian
# packages with mmdebstrap, the same kernel as the busybox guests, systemd,
# udev, OpenSSH server, DKMS with the kernel's headers and a compiler, and
# the shared libraries the OdinLink packages depend on. Nothing of OdinLink
# is in it: `odl hil deploy` installs the packages as on a lab host.
# Output (cached outside the checkout, per kernel and content of this
# script and prune-modules.sh, which drops driver trees no guest uses):
# root.ext4 (the disk; guests boot it with snapshot=on, so every boot
# starts from the same image), vmlinuz, initrd.img, KERNEL_VERSION,
# id_ed25519 (+ .pub: the client key root accepts) and known_hosts (the
# image's host key). These keys are test fixtures of a throw-away image:
# they never leave the cache and nothing else trusts them.
#
# Usage: build-rootfs.sh [6.12|6.1] [--print-dir]
#   prints the image directory on stdout, last line; progress on stderr.
# Environment: ODL_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/odl)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${ODL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/odl}
series=${1:-6.12}
say() { printf 'odl: rootfs: %s\n' "$*" >&2; }
die() { printf 'odl: rootfs: error: %s\n' "$*" >&2; exit 1; }

resolved=$("$here/kernel-package.sh" "$series") || exit 1
image_pkg=${resolved% *} kpkg_ver=${resolved#* }
kver=${image_pkg#linux-image-}
kver=${kver%-unsigned}

# What the guests need to be a lab host: boot (systemd, udev, the kernel
# and its initramfs), the management network (networkd, OpenSSH), DKMS for
# odl-tb5-dkms (headers, compiler) and the runtime libraries of the odl
# package (libfmt9, libyaml-cpp0.7, libssl3 and libfuse3-3 for the file
# service, libsdbus-c++1 for odl-daemon; libudev1 comes with udev, the rest
# is in minbase).
packages=(
	systemd-sysv udev dbus openssh-server openssh-sftp-server iproute2 kmod procps
	initramfs-tools "$image_pkg" "linux-headers-$kver"
	dkms gcc make
	libfmt9 libyaml-cpp0.7 libssl3 libfuse3-3 libsdbus-c++1
)
hash=$({
	cat "$here/build-rootfs.sh" "$here/prune-modules.sh"
	printf '%s\n' "${packages[@]}" "$kpkg_ver"
} | sha256sum | cut -c1-12)
dest="$cache/rootfs-$kver-$hash"

if [ "${2:-}" = "--print-dir" ]; then
	echo "$dest"
	exit 0
fi
if [ -f "$dest/root.ext4" ] && [ -f "$dest/known_hosts" ]; then
	say "up to date: $dest"
	echo "$dest"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "building the root filesystem needs root (mmdebstrap --mode=root)"
for tool in mmdebstrap mke2fs ssh-keygen; do
	command -v "$tool" >/dev/null || die "$tool missing (./odl installs it)"
done
# The machine's own apt sources, as they are: no archive is named here.
sources=""
for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list; do
	[ -f "$f" ] && grep -Eq '^(Types:.*\bdeb\b|deb )' "$f" && { sources=$f; break; }
done
[ -n "$sources" ] || die "no apt sources on this machine to build the root filesystem from"

tmp="$dest.tmp"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
ssh-keygen -q -t ed25519 -N '' -C odl-hil-test-client -f "$tmp/id_ed25519"

# Before the packages: a small initramfs (the modules a virtio disk with
# ext4 needs, not every driver: "most" took minutes in the chroot).
essential_hook='mkdir -p "$1/etc/initramfs-tools/conf.d" &&
	echo MODULES=list >"$1/etc/initramfs-tools/conf.d/odl.conf" &&
	printf "%s\n" virtio_pci virtio_blk ext4 >"$1/etc/initramfs-tools/modules"'
# After them: the guest's identity, disk, network, SSH access and the
# console line the testbed waits for.
customize_hook='set -e; r=$1
	echo odl-hil >"$r/etc/hostname"
	printf "127.0.0.1 localhost\n127.0.1.1 odl-hil\n" >"$r/etc/hosts"
	echo "/dev/vda / ext4 defaults,noatime 0 1" >"$r/etc/fstab"
	# The address QEMU user networking gives its one guest (10.0.2.15, where
	# hostfwd sends SSH), set statically: over DHCP in TCG a guest now and
	# then still had no address after 120 s and the testbed could not reach it.
	printf "[Match]\nName=en* eth*\n\n[Network]\nAddress=10.0.2.15/24\nGateway=10.0.2.2\nDNS=10.0.2.3\n" \
		>"$r/etc/systemd/network/10-mgmt.network"
	chroot "$r" systemctl enable systemd-networkd.service >/dev/null 2>&1
	chroot "$r" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer \
		systemd-networkd-wait-online.service >/dev/null 2>&1
	install -d -m 700 "$r/root/.ssh"
	install -m 600 "'"$tmp"'/id_ed25519.pub" "$r/root/.ssh/authorized_keys"
	# Ready = SSH started and the management interface has its address (the
	# driver of the NIC may load after ssh.service: SSH unreachable till then).
	# $$ is a literal $ for systemd.
	printf "%s\n" "[Unit]" "Description=tell the testbed this host is ready" \
		"After=ssh.service systemd-networkd.service" "Wants=ssh.service" "" \
		"[Service]" "Type=oneshot" \
		"ExecStart=/bin/sh -c \"i=0; until ip -4 addr show scope global | grep -q inet || [ \$\$i -ge 240 ]; do i=\$\$((i + 1)); sleep 0.5; done; echo ODL-GUEST: ready >/dev/ttyS0\"" "" \
		"[Install]" "WantedBy=multi-user.target" >"$r/etc/systemd/system/odl-testbed-ready.service"
	chroot "$r" systemctl enable odl-testbed-ready.service >/dev/null 2>&1
	: >"$r/etc/machine-id"
	"'"$here"'/prune-modules.sh" "$r" "'"$kver"'"
	cp "$r/boot/vmlinuz-'"$kver"'" "'"$tmp"'/vmlinuz"
	cp "$r/boot/initrd.img-'"$kver"'" "'"$tmp"'/initrd.img"
	cp "$r/etc/ssh/ssh_host_ed25519_key.pub" "'"$tmp"'/host_key.pub"'

say "building a Debian 12 root filesystem with $image_pkg $kpkg_ver (mmdebstrap; a few minutes)"
t=$SECONDS
list=$(IFS=,; echo "${packages[*]}")
if ! mmdebstrap --variant=minbase --mode=root --format=directory \
	--include="$list" \
	--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
	--essential-hook="$essential_hook" --customize-hook="$customize_hook" \
	bookworm "$tmp/root" "$sources" >"$tmp/mmdebstrap.log" 2>&1; then
	tail -n 25 "$tmp/mmdebstrap.log" >&2
	die "mmdebstrap failed (log above)"
fi
sed -n 's/^prune-modules: /odl: rootfs: /p' "$tmp/mmdebstrap.log" >&2
say "root filesystem installed in $((SECONDS - t)) s ($(du -sm --exclude=proc "$tmp/root" | cut -f1) MiB)"

# The disk: the tree plus room for the packages and DKMS builds.
used=$(du -sm --exclude=proc --exclude=sys "$tmp/root" | cut -f1)
size=$((used + 1024))
rm -rf "$tmp/root/proc/"* "$tmp/root/sys/"* 2>/dev/null || true
mke2fs -q -t ext4 -L odl-root -d "$tmp/root" "$tmp/root.ext4" "${size}M" ||
	die "mke2fs could not make the disk image"
rm -rf "$tmp/root"
echo "$kver" >"$tmp/KERNEL_VERSION"
# Host keys are checked: the testbed's forwarded ports get this key.
echo "[127.0.0.1]:* $(cut -d' ' -f1,2 "$tmp/host_key.pub")" >"$tmp/known_hosts"
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
say "image: $dest ($size MiB disk, $((SECONDS - t)) s)"
echo "$dest"
