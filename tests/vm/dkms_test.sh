#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl_tb5 packaging: kmod/dkms.conf builds through the real dkms for both
# Debian kernel series, in a private DKMS tree (nothing under /var/lib/dkms
# or /lib/modules changes; the signing key is a throw-away one), and the
# module it produces is the one users get: right vermagic, the OdinLink
# service alias udev loads it by, the license and parameters, signed.
# Also checks the udev rule file's syntax as far as udev itself can without
# a device: every line is a comment or key/operator/value pairs.
# docs/kmod.md "Install with DKMS". Needs dkms and the headers (./odl test).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v dkms >/dev/null || fail "dkms is not installed (./odl installs it for the vm label)"

tmp=$(mktemp -d /tmp/odl-dkms.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

conf="$repo/kmod/dkms.conf"
name=$(sed -n 's/^PACKAGE_NAME="\(.*\)"$/\1/p' "$conf")
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"$/\1/p' "$conf")
[ "$name" = odl_tb5 ] && [ -n "$ver" ] || fail "dkms.conf: PACKAGE_NAME/PACKAGE_VERSION not found"

# The DKMS source tree, laid out as docs/kmod.md tells users to: kmod/ plus
# include/ beside it.
src="$tmp/src/$name-$ver"
mkdir -p "$src"
cp -r "$repo/kmod/." "$src/"
cp -r "$repo/include" "$src/include"

mkdir -p "$tmp/tree"
dk=(--dkmstree "$tmp/tree" --sourcetree "$tmp/src")
export mok_signing_key="$tmp/mok.key" mok_certificate="$tmp/mok.pub"

for series in 6.12 6.1; do
	pkg=$("$repo/kmod/headers.sh" "$series")
	kver=${pkg#linux-headers-}
	[ -e "/lib/modules/$kver/build" ] || fail "$pkg is not installed (./odl installs it for the vm label)"
	echo "== dkms build $name/$ver for $kver"
	dkms build "$name/$ver" -k "$kver" "${dk[@]}" >"$tmp/build-$series.log" 2>&1 ||
		{ cat "$tmp/build-$series.log" >&2; fail "dkms build for $kver"; }
	ko=$(find "$tmp/tree/$name/$ver/$kver" -name "$name.ko*" | head -n1)
	[ -n "$ko" ] || fail "$kver: dkms produced no $name.ko"
	info=$(modinfo "$ko") || fail "$kver: modinfo $ko"
	field() { printf '%s\n' "$info" | sed -n "s/^$1: *//p"; }
	case "$(field vermagic)" in "$kver "*) ;; *) fail "$kver: vermagic '$(field vermagic)'" ;; esac
	[ "$(field license)" = "Dual MIT/GPL" ] || fail "$kver: license '$(field license)'"
	field alias | grep -qx 'tbsvc:kodinlinkp00000001v\*r\*' ||
		fail "$kver: no tbsvc alias for the odinlink service: $(field alias)"
	for p in ring_size rings poll irq_throttle_us announce split; do
		field parm | grep -q "^$p:" || fail "$kver: parameter $p missing"
	done
	[ -n "$(field sig_id)" ] || fail "$kver: module not signed (sig_id empty)"
	# The status line users see.
	dkms status "$name/$ver" -k "$kver" "${dk[@]}" 2>/dev/null | grep -q "$kver.*built" ||
		fail "$kver: dkms status does not say built"
	echo "ok: $kver: $(basename "$ko"), vermagic $(field vermagic | cut -d' ' -f1), signed"
done

# The udev rule: comments, blank lines, or KEY{attr}OP"value" pairs
# separated by ", " (udev(7)); a typo here silently does nothing.
rules="$repo/kmod/71-odl-tb5.rules"
pair='[A-Z_]+(\{[A-Za-z0-9_]+\})?(==|!=|=|\+=|-=|:=)"[^"]*"'
bad=$(grep -nEv "^[[:space:]]*(#.*)?$|^$pair(, $pair)*$" "$rules" || true)
[ -z "$bad" ] || fail "71-odl-tb5.rules: malformed line(s): $bad"
grep -q 'KERNEL=="odl_tb5_\[0-9\]\*"' "$rules" || fail "71-odl-tb5.rules: no rule for /dev/odl_tb5_N"
echo "ok: 71-odl-tb5.rules"
echo "PASS: dkms build for 6.12 and 6.1, udev rule syntax"
