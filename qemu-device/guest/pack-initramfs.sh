#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Packs DIR as a gzip'd newc initramfs on stdout, the same bytes from the
# same files on any machine: no times (all set to 0 in DIR), inode numbers,
# order of the directory walk or gzip header. A deterministic run names its
# initramfs by hash, and a replay elsewhere must find its own build to be
# that one (build-guest.sh's base image, testbed.sh's command file).
# Usage: pack-initramfs.sh DIR >OUT.gz
set -euo pipefail
dir=${1:?usage: pack-initramfs.sh DIR}
[ -d "$dir" ] || { echo "pack-initramfs.sh: $dir is not a directory" >&2; exit 2; }
find "$dir" -exec touch -h -d @0 {} +
cd "$dir"
find . | LC_ALL=C sort | cpio -o -H newc --quiet --reproducible | gzip -n -6
