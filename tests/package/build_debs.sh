#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The Debian packages of a built tree, made once for the tests that use them
# (ctest fixture odl_debs: package_debs, package_install, hil_vm_6.12), with
# the command users run: `odl package --build-dir BUILD --out DIR`. DIR is
# emptied first so that no package of an earlier build is taken for this
# one's; every path odl package prints must be a package in DIR, and DIR
# must hold nothing else. With the guest kernels' headers installed (the VM
# stack installs them), odl-tb5-modules-KVER for each of them too
# (odl package --kernel): hil_vm_6.12 deploys that one.
#
# Usage: build_debs.sh ODL_BINARY BUILD_DIR OUT_DIR
set -euo pipefail

odl=${1:?usage: build_debs.sh ODL_BINARY BUILD_DIR OUT_DIR}
build=${2:?usage: build_debs.sh ODL_BINARY BUILD_DIR OUT_DIR}
out=${3:?usage: build_debs.sh ODL_BINARY BUILD_DIR OUT_DIR}
fail() { echo "FAIL: $*" >&2; exit 1; }

rm -rf "$out"
log=$(mktemp /tmp/odl-build-debs.XXXXXX)
trap 'rm -f "$log"' EXIT
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
kernels=()
for series in 6.12 6.1; do
	pkg=$("$here/../../kmod/headers.sh" "$series" 2>/dev/null) || continue
	[ -f "/usr/src/$pkg/Makefile" ] && kernels+=(--kernel "${pkg#linux-headers-}")
done
list=$("$odl" package --build-dir "$build" --out "$out" "${kernels[@]}" 2>"$log") || { cat "$log"; fail "odl package"; }
mapfile -t debs <<<"$list"
[ -n "${debs[0]:-}" ] || fail "odl package listed no package"
for d in "${debs[@]}"; do
	[ "$(dirname "$d")" -ef "$out" ] || fail "odl package listed $d, outside $out"
	dpkg-deb -f "$d" Package >/dev/null 2>&1 || fail "odl package listed $d, not a Debian package"
done
n=$(find "$out" -maxdepth 1 -name '*.deb' | wc -l)
[ "$n" = "${#debs[@]}" ] || fail "$out holds $n packages, odl package listed ${#debs[@]}"
[ "$(find "$out" -maxdepth 1 -name 'odl-tb5-modules-*.deb' | wc -l)" = $((${#kernels[@]} / 2)) ] ||
	fail "asked for $((${#kernels[@]} / 2)) module packages (${kernels[*]}), $out holds another number"
echo "ok: ${#debs[@]} packages in $out: $(cd "$out" && ls ./*.deb | tr '\n' ' ')"
