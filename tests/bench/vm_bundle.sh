#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Pack the two-VM kernel-module bench (vm_kmod_vs_tbnet.sh) into one
# self-contained directory, to run it on another x86-64 Linux host that has
# neither Debian's packages nor kernel headers (e.g. a many-core machine, to
# see the drivers without this machine's CPU limits): the QEMU with
# odl-usb4-nhi, odl-linkd, the libraries both need (not glibc), firmware,
# a guest image with odl_tb5.ko and odl built in, and the scripts.
# The target host needs bash, python3 and glibc >= the build host's.
#
# Usage: vm_bundle.sh [--kernel 6.12|6.1] OUTDIR
#   then on the target: OUTDIR/run.sh [vm_kmod_vs_tbnet.sh options]
# Environment: ODL_BUILD_DIR (odl, libodl, odl-linkd; default build/),
#   ODL_LINKD (default $ODL_BUILD_DIR/model/src/linkd/odl-linkd)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
kernel=6.12
usage() { echo "usage: $0 [--kernel 6.12|6.1] OUTDIR" >&2; exit 2; }
[ "${1:-}" = --kernel ] && { kernel=${2:-}; shift 2 || usage; }
[ $# -eq 1 ] || usage
out=$1
case "$kernel" in 6.12 | 6.1) ;; *) usage ;; esac
say() { printf 'odl: bundle: %s\n' "$*" >&2; }
die() { printf 'odl: bundle: error: %s\n' "$*" >&2; exit 1; }

build=${ODL_BUILD_DIR:-$repo/build}
linkd=${ODL_LINKD:-$build/model/src/linkd/odl-linkd}
[ -x "$linkd" ] || die "odl-linkd not found at $linkd (build the model, or set ODL_LINKD)"
[ -x "$build/bin/odl" ] || die "odl not found in $build/bin (set ODL_BUILD_DIR)"
[ ! -e "$out" ] || [ -z "$(ls -A "$out")" ] || die "$out exists and is not empty"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp" "$tmp.kbuild"' EXIT
say "building odl_tb5.ko ($kernel) and the guest extras"
"$repo/kmod/guest-extra.sh" "$kernel" "$tmp" "$build" >/dev/null || die "guest extras failed"
say "building (or finding) QEMU and the guest image"
qemu=$("$repo/qemu-device/build-qemu.sh" | tail -n1) || die "QEMU build failed"
image=$(ODL_GUEST_EXTRA=$tmp "$repo/qemu-device/guest/build-guest.sh" "$kernel" | tail -n1) ||
	die "guest image build failed"

mkdir -p "$out"/{bin,lib,bios,guest,repo/qemu-device,repo/tests/vm,repo/tests/bench}
strip -o "$out/bin/qemu-system-x86_64" "$qemu"
cp "$linkd" "$out/bin/odl-linkd"
# Every library both need except glibc's own (the target's must be used).
ldd "$qemu" "$linkd" | awk '/=>/ { print $3 }' | sort -u | while read -r lib; do
	case "$(basename "$lib")" in libc.so.* | libm.so.* | ld-linux* | libpthread.so.* | libdl.so.* | librt.so.*) continue ;; esac
	cp -L "$lib" "$out/lib/"
done
# Firmware of a q35 TCG guest booted with -kernel.
cp /usr/share/seabios/*.bin "$out/bios/"
for f in kvmvapic.bin linuxboot.bin linuxboot_dma.bin multiboot.bin multiboot_dma.bin pvh.bin; do
	[ -f "/usr/share/qemu/$f" ] && cp "/usr/share/qemu/$f" "$out/bios/"
done
cp "$image"/vmlinuz "$image"/initrd.gz "$image"/KERNEL_VERSION "$out/guest/"
cp "$repo/qemu-device/testbed.sh" "$repo/qemu-device/pid_lib.sh" "$out/repo/qemu-device/"
cp "$repo/tests/vm/vm_lib.sh" "$out/repo/tests/vm/"
cp "$repo/tests/bench/vm_kmod_vs_tbnet.sh" "$out/repo/tests/bench/"
cat >"$out/run.sh" <<EOF
#!/usr/bin/env bash
# Made by tests/bench/vm_bundle.sh from $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "an unknown commit") (guest kernel $(cat "$image/KERNEL_VERSION")).
# Usage: run.sh [vm_kmod_vs_tbnet.sh options]
set -euo pipefail
b=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
command -v python3 >/dev/null || { echo "run.sh: python3 is needed" >&2; exit 1; }
export LD_LIBRARY_PATH=\$b/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export ODL_QEMU=\$b/bin/qemu-system-x86_64 ODL_LINKD=\$b/bin/odl-linkd
export ODL_GUEST_IMAGE=\$b/guest ODL_VM_BIOS_DIR=\$b/bios
"\$ODL_QEMU" --version >/dev/null || { echo "run.sh: the bundled QEMU does not run here (glibc too old?)" >&2; exit 1; }
exec "\$b/repo/tests/bench/vm_kmod_vs_tbnet.sh" --kernel $kernel "\$@"
EOF
chmod +x "$out/run.sh"
say "done: $out ($(du -sh "$out" | cut -f1)); run $out/run.sh [--rounds N] on the target"
