#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The packages of this build installed, removed and purged with dpkg in a
# throw-away Debian root: this machine's own root under an overlay in a
# private mount namespace (every write lands in a tmpfs that goes with the
# namespace; nothing on the machine changes). Checks, in that root: the
# maintainer scripts run (group odl; odl_tb5 added to DKMS; without headers
# for the running kernel the DKMS postinst says which package is missing);
# DKMS builds the installed module source for each Debian kernel whose
# headers are installed, and the module is the one users get (vermagic,
# service alias, license, parameters, signed); the installed udev rule
# parses; `odl --version` and `odl doctor` run from the
# installed files; remove takes the module out of DKMS for every kernel;
# purge leaves no file behind (only dpkg's own database and log, the
# indexes that triggers and depmod rewrite, DKMS's signing key, and the
# group files, which keep the group odl by design).
#
# Usage: install_test.sh BUILD_DIR [DEBS_DIR]
# DEBS_DIR: the packages already made from BUILD_DIR (build_debs.sh, ctest
# fixture odl_debs) instead of running cpack here.
# Exit 77 (ctest: skipped, with the reason) when not root or without dkms,
# which the odl-tb5-dkms package depends on (./odl test installs it).
set -euo pipefail

build=${1:?usage: install_test.sh BUILD_DIR}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
if [ "$(id -u)" -ne 0 ]; then
	echo "NOT RUN: needs root (a private mount namespace with an overlay over /)"
	exit 77
fi
if ! command -v dkms >/dev/null; then
	echo "NOT RUN: dkms is not installed (odl-tb5-dkms depends on it; ./odl test installs it)"
	exit 77
fi

tmp=$(mktemp -d /tmp/odl-install-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if [ -n "${2:-}" ]; then
	[ -d "$2" ] || fail "$2: no such folder"
	ln -s "$(cd "$2" && pwd)" "$tmp/pkg"
else
	cpack --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 ||
		{ cat "$tmp/cpack.log"; fail "cpack"; }
fi
all=$(cd "$tmp/pkg" && ls ./*.deb | sed 's|^\./||')
[ -n "$all" ] || fail "cpack made no packages"
# odl-tb5-modules-KVER (odl package --kernel) conflicts with odl-tb5-dkms:
# installed on its own below, after the others are purged.
debs=$(grep -v '^odl-tb5-modules-' <<<"$all")
mods=$(grep '^odl-tb5-modules-' <<<"$all" || true)
names=$(for d in $debs; do dpkg-deb -f "$tmp/pkg/$d" Package; done | tr '\n' ' ')
version=$(dpkg-deb -f "$tmp/pkg/$(echo "$debs" | grep '^odl-tb5-dkms_')" Version)
mver=${version%%+*}
# Kernels whose headers are installed: DKMS builds the module for each.
kernels=$(for k in 6.12 6.1; do
	p=$("$repo/kmod/headers.sh" "$k" 2>/dev/null) || continue
	[ -f "/usr/src/linux-headers-${p#linux-headers-}/Makefile" ] && echo "${p#linux-headers-}"
done | tr '\n' ' ')

# Runs in the private mount namespace; $1 is the work dir.
cat >"$tmp/inner.sh" <<'INNER'
set -euo pipefail
w=$1 debs=$2 names=$3 mver=$4 kernels=$5 mods=$6
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
mount -t tmpfs tmpfs "$w/ovl"
mkdir -p "$w/ovl/up" "$w/ovl/work" "$w/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$w/ovl/up,workdir=$w/ovl/work" "$w/root"
r=$w/root
mount --bind /dev "$r/dev"
mount -t proc proc "$r/proc"
mount -t tmpfs tmpfs "$r/tmp"
mkdir -p "$r/tmp/debs"
for d in $debs $mods; do cp "$w/pkg/$d" "$r/tmp/debs/"; done
in_root() { chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C "$@"; }
# The daemons started inside the root below end with this script, pass or
# fail (a survivor would keep ctest waiting on its output).
stop_daemons() {
	local f
	for f in odl-daemon dbus; do
		if [ -f "$r/tmp/$f.pid" ]; then kill "$(cat "$r/tmp/$f.pid")" 2>/dev/null || true; fi
	done
}
trap stop_daemons EXIT

# --- install ---------------------------------------------------------------------
# shellcheck disable=SC2046 # one word per package file
in_root dpkg -i $(printf '/tmp/debs/%s ' $debs) >"$w/install.log" 2>&1 || { cat "$w/install.log"; fail "dpkg -i"; }
for p in $names; do
	in_root dpkg-query -W -f '${Status}\n' "$p" | grep -qx 'install ok installed' || fail "$p is not installed"
done
ok "installed: $names"
in_root getent group odl >/dev/null || fail "postinst made no group odl"
grep -q "no headers for the running kernel" "$w/install.log" ||
	fail "DKMS postinst did not say the running kernel's headers are missing: $(grep odl-tb5-dkms "$w/install.log")"
grep -q "odl_tb5/$mver" <<<"$(in_root dkms status -m odl_tb5 -v "$mver")" ||
	fail "odl_tb5 $mver is not in DKMS after install: $(in_root dkms status)"
ok "maintainer scripts: group odl, odl_tb5 $mver added to DKMS, missing headers named"
grep -q "^odl $mver" <<<"$(in_root odl --version)" || fail "installed odl --version: $(in_root odl --version)"
set +e
in_root odl doctor --no-nccl >"$w/doctor.log" 2>&1
rc=$?
set -e
# This machine has no USB4: the first layer fails, named, with code 10.
[ "$rc" = 10 ] && grep -q "FAIL  kernel" "$w/doctor.log" || { cat "$w/doctor.log"; fail "installed odl doctor: exit $rc"; }
ok "installed odl runs: $(in_root odl --version); odl doctor exit $rc (no USB4 here)"
for k in $kernels; do
	in_root dkms install -m odl_tb5 -v "$mver" -k "$k" >"$w/dkms-$k.log" 2>&1 ||
		{ tail -n 30 "$w/dkms-$k.log"; fail "dkms install for $k"; }
	ko=$(in_root sh -c "ls /lib/modules/$k/updates/dkms/odl_tb5.ko*" 2>/dev/null | head -n1)
	[ -n "$ko" ] || fail "DKMS built no odl_tb5.ko for $k"
	# The module users get: right vermagic, the service alias udev loads it
	# by, license, parameters, signed with DKMS's key, and DKMS says so.
	info=$(in_root modinfo "$ko") || fail "modinfo $ko"
	field() { printf '%s\n' "$info" | sed -n "s/^$1: *//p"; }
	case "$(field vermagic)" in "$k "*) ;; *) fail "$k: vermagic '$(field vermagic)'" ;; esac
	[ "$(field license)" = "Dual MIT/GPL" ] || fail "$k: license '$(field license)'"
	grep -qx 'tbsvc:kodinlinkp00000001v\*r\*' <<<"$(field alias)" ||
		fail "$k: no tbsvc alias for the odinlink service: $(field alias)"
	for p in ring_size rings poll irq_throttle_us announce split; do
		grep -q "^$p:" <<<"$(field parm)" || fail "$k: parameter $p missing"
	done
	[ -n "$(field sig_id)" ] || fail "$k: module not signed (sig_id empty)"
	grep -q "$k.*installed" <<<"$(in_root dkms status -m odl_tb5 -v "$mver" -k "$k")" ||
		fail "$k: dkms status does not say installed: $(in_root dkms status -m odl_tb5 -k "$k")"
	ok "DKMS built the installed source for $k: $ko (vermagic, alias, license, parameters, signed)"
done

# The DKMS postinst's Secure Boot branch. There is no EFI firmware here:
# stand-ins for mokutil (the firmware's answers), modprobe (the kernel's)
# and uname -r (a kernel whose headers are here, so the postinst gets as far
# as loading) come first on PATH, with ischroot saying "not a chroot".
sb_case() { # NAME MOKUTIL(enabled|disabled|none) ENROLLED(yes|no) MODPROBE(ok|rejected|nokey) WANT(help|load)
	local name=$1 out
	rm -f "$r/tmp/sb/modprobe-called"
	out=$(chroot "$r" env -i PATH=/tmp/sb/bin:/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C SB_KVER="$sb_kver" \
		SB_STATE="$2" SB_ENROLLED="$3" SB_MODPROBE="$4" sh /var/lib/dpkg/info/odl-tb5-dkms.postinst configure 2>&1) ||
		fail "Secure Boot case $name: postinst failed: $out"
	case $5 in
	help)
		grep -q 'mokutil --import /var/lib/dkms/mok.pub' <<<"$out" ||
			fail "Secure Boot case $name: no enrolment help: $out"
		grep -qF "($6)" <<<"$out" || fail "Secure Boot case $name: help does not say '$6': $out" ;;
	load)
		! grep -q 'mokutil --import' <<<"$out" || fail "Secure Boot case $name: enrolment help without cause: $out"
		[ -e "$r/tmp/sb/modprobe-called" ] || fail "Secure Boot case $name: postinst did not load the module: $out" ;;
	esac
	if [ "$name" = blocked ] && [ -e "$r/tmp/sb/modprobe-called" ]; then
		fail "Secure Boot case $name: postinst tried modprobe with an unenrolled key under Secure Boot"
	fi
}
sb_kver=${kernels%% *}
if [ -n "$sb_kver" ]; then
	mkdir -p "$r/tmp/sb/bin"
	printf '#!/bin/sh\nexit 1\n' >"$r/tmp/sb/bin/ischroot"
	printf '#!/bin/sh\n[ "$1" = -r ] && { echo "$SB_KVER"; exit 0; }\nexec /bin/uname "$@"\n' >"$r/tmp/sb/bin/uname"
	cat >"$r/tmp/sb/bin/mokutil" <<'SB'
#!/bin/sh
case "$SB_STATE:$1" in
none:*) echo "mokutil: command not found" >&2; exit 127 ;;
*:--sb-state) echo "SecureBoot $SB_STATE" ;;
*:--test-key) [ "$SB_ENROLLED" = yes ] && echo "$2 is already enrolled" || echo "$2 is not enrolled" ;;
*) exit 2 ;;
esac
SB
	cat >"$r/tmp/sb/bin/modprobe" <<'SB'
#!/bin/sh
touch /tmp/sb/modprobe-called
case "$SB_MODPROBE" in
ok) exit 0 ;;
rejected) echo "modprobe: ERROR: could not insert 'odl_tb5': Key was rejected by service" >&2; exit 1 ;;
nokey) echo "modprobe: ERROR: could not insert 'odl_tb5': Required key not available" >&2; exit 1 ;;
esac
SB
	chmod +x "$r"/tmp/sb/bin/*
	sb_case blocked enabled no ok help "Secure Boot is on"
	sb_case enrolled-but-rejected enabled yes rejected help "modprobe: Key was rejected by service"
	sb_case sig-enforce none no nokey help "modprobe: Required key not available"
	sb_case off disabled no ok load
	sb_case enrolled enabled yes ok load
	rm -rf "$r/tmp/sb"
	ok "DKMS postinst under Secure Boot (stand-in mokutil/modprobe, $sb_kver): help when the key is not enrolled or the kernel refuses it; loads otherwise"
else
	echo "NOT RUN: the Secure Boot cases need headers of a Debian kernel (none installed)"
fi

# odl-daemon as installed, on a bus run with Debian's own system bus
# configuration (its default policy denies method calls; the package's
# system.d file opens what it should): any user reads, only root and the
# group odl call methods; SIGTERM ends it quietly. The unit is checked by
# systemd-analyze.
bus=unix:path=/tmp/odl-system-bus
in_root sh -c "dbus-daemon --config-file=/usr/share/dbus-1/system.conf --address=$bus --nofork --nopidfile >/tmp/dbus.log 2>&1 & echo \$! >/tmp/dbus.pid"
in_root sh -c "i=0; until [ -S /tmp/odl-system-bus ]; do i=\$((i + 1)); [ \$i -lt 100 ] || exit 1; sleep 0.05; done" ||
	fail "the system bus did not start: $(cat "$r/tmp/dbus.log")"
in_root sh -c "odl-daemon --bus $bus --no-udev 2>/tmp/odl-daemon.err & echo \$! >/tmp/odl-daemon.pid"
send() { # USER-OPTIONS... -- dbus-send arguments; prints the reply, fails like dbus-send
	local who=() a
	while [ "$1" != -- ]; do who+=("$1"); shift; done
	shift
	in_root setpriv "${who[@]}" dbus-send --bus=$bus --print-reply --dest=org.odinlink.Daemon1 "$@" 2>&1
}
as_root=(--reuid=0)
nobody=(--reuid=65534 --regid=65534 --clear-groups)
odl_gid=$(in_root getent group odl | cut -d: -f3)
member=(--reuid=65534 --regid=65534 "--groups=$odl_gid")
for i in $(seq 100); do
	send "${nobody[@]}" -- /org/odinlink/Daemon1 org.freedesktop.DBus.Properties.Get \
		string:org.odinlink.Daemon1 string:Version >/dev/null && break
	[ "$i" -lt 100 ] || fail "odl-daemon did not come up on the bus: $(cat "$r/tmp/odl-daemon.err")"
	sleep 0.05
done
out=$(send "${nobody[@]}" -- /org/odinlink/Daemon1 org.freedesktop.DBus.ObjectManager.GetManagedObjects) ||
	fail "a user cannot list the devices: $out"
out=$(send "${nobody[@]}" -- /org/odinlink/Daemon1 org.odinlink.Daemon1.Rescan) &&
	fail "a user outside the group odl called Rescan: $out"
grep -q 'AccessDenied' <<<"$out" || fail "Rescan by a user outside odl: not AccessDenied: $out"
out=$(send "${member[@]}" -- /org/odinlink/Daemon1 org.odinlink.Daemon1.Rescan) ||
	fail "a member of the group odl cannot call Rescan: $out"
out=$(send "${as_root[@]}" -- /org/odinlink/Daemon1 org.odinlink.Daemon1.SetIrqThrottle string:odl_tb5_0 uint32:8) &&
	fail "SetIrqThrottle on a device this root does not have succeeded: $out"
grep -q 'org.odinlink.Error.NoSuchDevice' <<<"$out" || fail "SetIrqThrottle without the device: $out"
in_root sh -c 'kill -TERM $(cat /tmp/odl-daemon.pid); i=0; while kill -0 $(cat /tmp/odl-daemon.pid) 2>/dev/null; do i=$((i + 1)); [ $i -lt 100 ] || exit 1; sleep 0.05; done' ||
	fail "odl-daemon did not end on SIGTERM"
[ ! -s "$r/tmp/odl-daemon.err" ] || fail "odl-daemon logged on a healthy run: $(cat "$r/tmp/odl-daemon.err")"
in_root sh -c 'kill -TERM $(cat /tmp/dbus.pid)' || fail "the test's system bus was gone before its end"
in_root sh -c 'command -v systemd-analyze' >/dev/null ||
	fail "systemd-analyze is missing (./odl installs the systemd package for this check)"
out=$(in_root systemd-analyze verify /lib/systemd/system/odl-daemon.service 2>&1) ||
	fail "systemd-analyze verify odl-daemon.service: $out"
rm -f "$r/run/systemd/systemd-units-load" # systemd-analyze's own, not the package's
ok "odl-daemon's bus policy: users read, only root and group odl call methods (AccessDenied otherwise); quiet SIGTERM; unit: systemd-analyze verify clean"

# The installed udev rule: comments, blank lines, or KEY{attr}OP"value"
# pairs separated by ", " (udev(7)); a typo there silently does nothing.
rules=$(in_root sh -c 'ls /usr/lib/udev/rules.d/*odl*.rules /lib/udev/rules.d/*odl*.rules 2>/dev/null' | head -n1)
[ -n "$rules" ] || fail "no OdinLink udev rule installed"
pair='[A-Z_]+(\{[A-Za-z0-9_]+\})?(==|!=|=|\+=|-=|:=)"[^"]*"'
bad=$(grep -nEv "^[[:space:]]*(#.*)?$|^$pair(, $pair)*$" "$r$rules" || true)
[ -z "$bad" ] || fail "$rules: malformed line(s): $bad"
grep -q 'KERNEL=="odl_tb5_\[0-9\]\*"' "$r$rules" || fail "$rules: no rule for /dev/odl_tb5_N"
ok "udev rule $rules"

# --- remove, purge -----------------------------------------------------------------
in_root dpkg -r $names >"$w/remove.log" 2>&1 || { cat "$w/remove.log"; fail "dpkg -r"; }
[ -z "$(in_root dkms status -m odl_tb5 2>/dev/null)" ] || fail "odl_tb5 still in DKMS after remove: $(in_root dkms status -m odl_tb5)"
for k in $kernels; do
	in_root sh -c "! ls /lib/modules/$k/updates/dkms/odl_tb5.ko* 2>/dev/null" || fail "odl_tb5.ko for $k left after remove"
done
in_root dpkg -P $names >"$w/purge.log" 2>&1 || { cat "$w/purge.log"; fail "dpkg -P"; }
for p in $names; do
	! grep -q installed <<<"$(in_root dpkg-query -W -f '${Status}\n' "$p" 2>/dev/null)" || fail "$p still installed after purge"
done
# The module built for one kernel (odl-tb5-modules-KVER): depmod indexes it
# where modprobe finds it; DKMS's package cannot go beside it; purge takes it
# out of the index again.
for m in $mods; do
	p=$(dpkg-deb -f "$r/tmp/debs/$m" Package)
	k=${p#odl-tb5-modules-}
	in_root dpkg -i "/tmp/debs/$m" >"$w/mods.log" 2>&1 || { cat "$w/mods.log"; fail "dpkg -i $m"; }
	got=$(in_root /sbin/modinfo -k "$k" -n odl_tb5 2>&1) || fail "$p installed, modinfo -k $k finds no odl_tb5: $got"
	case "$got" in */lib/modules/$k/updates/odl/odl_tb5.ko) ;; *) fail "$p installed, modprobe would load $got" ;; esac
	dkms_deb=$(cd "$r/tmp/debs" && ls odl-tb5-dkms_*.deb)
	out=$(in_root dpkg -i "/tmp/debs/$dkms_deb" 2>&1) && fail "odl-tb5-dkms installed beside $p"
	grep -q "conflicting packages" <<<"$out" || fail "odl-tb5-dkms beside $p: $out"
	in_root dpkg -P "$p" >"$w/mods.log" 2>&1 || { cat "$w/mods.log"; fail "dpkg -P $p"; }
	out=$(in_root /sbin/modinfo -k "$k" -n odl_tb5 2>&1) && fail "odl_tb5 still found for $k after purging $p: $out"
	ok "$p: modprobe finds its module, DKMS's package cannot go beside it, purge takes it out"
done
# Every file the root gained or changed, but dpkg's own state and log, the
# loader, man and depmod indexes (rewritten by triggers and DKMS), DKMS's
# signing key and the group files (the group odl stays, by design).
left=$(cd "$w/ovl/up" && find . \( -type f -o -type l \) | sed 's|^\./|/|' |
	grep -Ev '^/var/lib/dpkg/|^/var/log/|^/var/cache/(debconf|ldconfig|man)/|^/etc/ld\.so\.cache$|^/etc/(group|gshadow)-?$|^/etc/\.pwd\.lock$|^/var/lib/dkms/mok\.(key|pub)$|^/root/\.|^/usr/lib/modules/[^/]+/modules\.[a-z.]+$' || true)
[ -z "$left" ] || fail "files left after purge: $left"
ok "remove took odl_tb5 out of DKMS; purge left no file behind"
INNER

[ -n "$kernels" ] || echo "NOT RUN: the DKMS build (no Debian 6.12 or 6.1 headers installed); the test is reported skipped"
mkdir -p "$tmp/ovl"
unshare -m --propagation private bash ${ODL_TEST_TRACE:+-x} "$tmp/inner.sh" "$tmp" "$debs" "$names" "$mver" "$kernels" "$mods" ||
	fail "see above"
[ -n "$kernels" ] || exit 77
echo "PASS: install, DKMS build for $kernels, remove, purge in a throw-away root"
