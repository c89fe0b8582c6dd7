#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# Build odl_tb5.ko against the Debian headers of a kernel series, resolved
# with apt-cache like the guest kernels (never a hard-coded version), in a
# directory outside the source tree.
#
# Usage: build.sh 6.12|6.1 OUTDIR [extra make args, e.g. W=1]
#   prints OUTDIR/odl_tb5.ko on success (last line of stdout).
# Exit 0 built; 1 build failed; 3 headers not installed (bootstrap installs
# them: ./odl with a kmod or vm command).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
series=${1:?usage: build.sh 6.12|6.1 OUTDIR}
out=${2:?usage: build.sh 6.12|6.1 OUTDIR}
shift 2
say() { printf 'odl: kmod: %s\n' "$*" >&2; }

pkg=$("$here/headers.sh" "$series")
kdir=/usr/src/linux-headers-${pkg#linux-headers-}
if [ ! -f "$kdir/Makefile" ]; then
	say "headers $pkg not installed ($kdir missing)"
	exit 3
fi
mkdir -p "$out"
# Kbuild writes next to the sources: build a copy.
cp "$here"/Kbuild "$here"/*.c "$here"/*.h "$out"/
rm -f "$out/Makefile"
say "building against $pkg $*"
make -C "$kdir" M="$out" ODL_INCLUDE="$(cd "$here/../include" && pwd)" "$@" modules >&2
echo "$out/odl_tb5.ko"
