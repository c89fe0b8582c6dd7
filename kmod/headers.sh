#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR MIT
# Print the newest Debian headers package of a kernel series (6.12 or 6.1),
# matching the guest kernels of qemu-device/guest/build-guest.sh.
set -euo pipefail
case "${1:-}" in
6.12) pattern='^linux-headers-6\.12\.[0-9]+\+deb12-amd64$' ;;
6.1) pattern='^linux-headers-6\.1\.0-[0-9]+-amd64$' ;;
*) echo "odl: kmod: unknown kernel series '${1:-}' (have: 6.12, 6.1)" >&2; exit 2 ;;
esac
pkg=$(apt-cache search --names-only "$pattern" | cut -d' ' -f1 | sort -V | tail -n1)
[ -n "$pkg" ] || { echo "odl: kmod: no package matches $pattern" >&2; exit 2; }
echo "$pkg"
