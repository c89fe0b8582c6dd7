#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Drops from a root filesystem's kernel the module trees of hardware no
# testbed guest has (sound, cameras, radios, wired NICs other than virtio,
# industrial I/O, ...), then runs depmod again. Why: `odl hil deploy`
# installs odl-tb5-dkms, whose DKMS build ends in `depmod -a`, which reads
# every module: under TCG about 39 s for Debian's 4230 modules, 20 s for the
# 2294 left here (measured in a guest, docs/ci.md). Everything the guests
# load (thunderbolt, thunderbolt_net, virtio, ext4, ...) is outside these
# trees, and a module anything kept depends on stays wherever it is.
# Usage: prune-modules.sh ROOT KERNEL_VERSION   (build-rootfs.sh's hook)
set -euo pipefail

root=${1:?usage: prune-modules.sh ROOT KERNEL_VERSION}
kver=${2:?usage: prune-modules.sh ROOT KERNEL_VERSION}
mods="$root/lib/modules/$kver"
[ -f "$mods/modules.dep" ] || { echo "prune-modules: no $mods/modules.dep" >&2; exit 1; }

trees=(
	drivers/media sound drivers/iio drivers/net/wireless drivers/net/ethernet
	drivers/net/usb drivers/net/can drivers/net/wwan drivers/comedi drivers/staging
	drivers/infiniband drivers/mtd drivers/bluetooth drivers/hwmon drivers/isdn
	drivers/atm drivers/nfc net/bluetooth net/atm net/can net/nfc
)
cand=$(cd "$mods" && for t in "${trees[@]}"; do
	if [ -d "kernel/$t" ]; then find "kernel/$t" -name '*.ko*'; fi
done | sort -u)
# modules.dep lists each module's whole dependency closure: the kept
# modules' dependencies are every module that must stay.
needed=$(awk -F': *' 'NR == FNR { c[$1] = 1; next }
	!($1 in c) { n = split($2, d, " "); for (i = 1; i <= n; i++) print d[i] }' \
	<(printf '%s\n' "$cand") "$mods/modules.dep" | sort -u)
gone=$(comm -23 <(printf '%s\n' "$cand") <(printf '%s\n' "$needed"))
[ -n "$gone" ] || { echo "prune-modules: nothing to drop under $mods" >&2; exit 1; }
(cd "$mods" && xargs rm -f <<<"$gone")
find "$mods/kernel" -depth -type d -empty -delete
chroot "$root" depmod "$kver"
echo "prune-modules: dropped $(wc -l <<<"$gone") of $(($(wc -l <"$mods/modules.dep") + $(wc -l <<<"$gone"))) modules, $(wc -l <"$mods/modules.dep") left" >&2
