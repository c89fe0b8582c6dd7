#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The newest Debian kernel image package of a series and its candidate
# version, resolved with apt-cache now (never hard-coded): one line
# "PACKAGE VERSION". Shared by the busybox images (build-guest.sh) and the
# HIL guests' root filesystem (build-rootfs.sh), so both boot one kernel.
# Usage: kernel-package.sh 6.12|6.1
set -euo pipefail
case "${1:-}" in
6.12) pattern='^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' ;;
6.1) pattern='^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' ;;
*) echo "odl: guest: error: unknown kernel series '${1:-}' (have: 6.12, 6.1)" >&2; exit 2 ;;
esac
pkg=$(apt-cache search --names-only "$pattern" | cut -d' ' -f1 | sort -V | tail -n1)
[ -n "$pkg" ] || { echo "odl: guest: error: no package matches $pattern (apt-get update?)" >&2; exit 1; }
echo "$pkg $(apt-cache policy "$pkg" | sed -n 's/^  Candidate: //p')"
