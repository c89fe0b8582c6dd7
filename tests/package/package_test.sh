#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The install and the Debian packages of a built tree (cmake/OdlPackaging.cmake):
#  1. a staged install (cmake --install --prefix TMP) holds every part;
#  2. a program outside the tree builds and runs against it through
#     find_package(odl) and through pkg-config (C and C++);
#  3. cpack makes the packages; their contents, versions and dependencies are
#     checked: the runtime package needs no SystemC (Depends, and the odl
#     binary's DT_NEEDED), every package carries the build's version + source id;
#  4. lintian shows no error (warnings are listed, they do not fail).
#
# Usage: package_test.sh BUILD_DIR [--model 0|1] [--debs DIR]
# --debs: the packages already made from BUILD_DIR (build_debs.sh, ctest
# fixture odl_debs) instead of running cpack here.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
usage="usage: package_test.sh BUILD_DIR [--model 0|1] [--debs DIR]"
build=$(cd "${1:?$usage}" && pwd)
shift
model=1 debs_dir=
while [ $# -gt 0 ]; do
	case "$1" in
	--model) model=${2:?$usage}; shift 2 ;;
	--debs) debs_dir=${2:?$usage}; shift 2 ;;
	*) echo "$usage" >&2; exit 2 ;;
	esac
done
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
for tool in cpack dpkg-deb dpkg-shlibdeps lintian pkg-config readelf cc c++; do
	command -v "$tool" >/dev/null || fail "$tool is not installed (./odl installs the package list)"
done

tmp=$(mktemp -d /tmp/odl-package-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

cache() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
version=$(cache CMAKE_PROJECT_VERSION)
libdir=$(cache CMAKE_INSTALL_LIBDIR)
source_id=$(head -n1 "$build/build-info/odl-source-id.txt")
full="$version+$source_id"
[ -n "$version" ] && [ -n "$libdir" ] && [ -n "$source_id" ] || fail "cannot read version/libdir/source id of $build"

# --- 1. staged install --------------------------------------------------------
stage=$tmp/stage
cmake --install "$build" --prefix "$stage" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; fail "cmake --install"; }
for f in bin/odl "$libdir/libodl.so.0" "$libdir/libodl.so" include/odl/odl.h include/odl/odl.hpp \
	include/odl/wire/frame.h include/odl/uapi/odl_tb5.h "$libdir/cmake/odl/odlConfig.cmake" \
	"$libdir/cmake/odl/odlConfigVersion.cmake" "$libdir/pkgconfig/odl.pc" \
	"$libdir/odl/libnccl-net-odl.so" "$libdir/odl/librccl-net-odl.so" share/odl/nccl/allreduce_check.py \
	"$libdir/odl/odl-plugin-collective" \
	"src/odl_tb5-$version/dkms.conf" "src/odl_tb5-$version/Kbuild" "src/odl_tb5-$version/main.c" \
	"src/odl_tb5-$version/include/odl/wire/frame.h" "src/odl_tb5-$version/include/uapi/odl_tb5.h" \
	lib/udev/rules.d/71-odl-tb5.rules lib/modules-load.d/odl_tb5.conf share/doc/odl/copyright; do
	[ -e "$stage/$f" ] || fail "staged install lacks $f"
done
if [ "$model" = 1 ]; then
	for f in bin/odl-model bin/odl-linkd "$libdir/odl/odl-sim-inproc.so"; do
		[ -e "$stage/$f" ] || fail "staged install lacks $f"
	done
fi
grep -qx "PACKAGE_VERSION=\"$version\"" "$stage/src/odl_tb5-$version/dkms.conf" ||
	fail "dkms.conf: PACKAGE_VERSION is not $version"
ok "staged install ($(find "$stage" -type f | wc -l) files)"

if [ "$model" = 1 ]; then
	# The installed odl-model reads its packaged calibration and writes its
	# results under the current folder: the build machine's source and
	# build trees are not a user's.
	cal=$stage/share/odl/model/default.yaml
	[ -f "$cal" ] && [ -f "$stage/share/odl/model/points.yaml" ] || fail "staged install lacks the calibration files"
	mkdir -p "$tmp/wd"
	out=$(cd "$tmp/wd" && env -u ODL_BUILD_DIR "$stage/bin/odl-model" model predict --generations tb5 --sizes 1MiB \
		--hosts 2 2>&1) || fail "installed odl-model model predict: $out"
	grep -q "^| tb5 | allreduce | 2 | 1048576 |" <<<"$out" || fail "installed odl-model model predict printed: $out"
	cp "$cal" "$tmp/cal.yaml"
	echo "link: [" >"$cal"
	out=$(cd "$tmp/wd" && env -u ODL_BUILD_DIR "$stage/bin/odl-model" model predict --sizes 1MiB 2>&1) &&
		fail "installed odl-model read no calibration of its own: $out"
	grep -qF "$cal:" <<<"$out" || fail "installed odl-model did not read $cal: $out"
	cp "$tmp/cal.yaml" "$cal"
	(cd "$tmp/wd" && env -u ODL_BUILD_DIR "$stage/bin/odl-model" run "$here/../../scenarios/quickstart.yaml" \
		>"$tmp/run.log" 2>&1) || fail "installed odl-model run: $(cat "$tmp/run.log")"
	[ -f "$tmp/wd/odl-results/runs/quickstart/report.json" ] ||
		fail "installed odl-model run wrote no ./odl-results/runs/quickstart/report.json: $(find "$tmp/wd")"
	ok "installed odl-model: its own calibration ($cal), results under the current folder"
fi

# The installed odl names the build; run with the staged libodl.
export LD_LIBRARY_PATH=$stage/$libdir
v=$("$stage/bin/odl" --version)
[ "$v" = "odl $full (libodl $version)" ] || fail "odl --version: '$v', want 'odl $full (libodl $version)'"
ok "odl --version: $v"
if [ "$model" = 1 ]; then
	# The installed libodl finds the installed in-process model beside it
	# ($libdir/odl/) and the model its packaged calibration.
	out=$(cd "$tmp/wd" && env -u ODL_BUILD_DIR -u ODL_SIM_MODULE ODL_SIM_SOCKET=inproc XDG_RUNTIME_DIR="$tmp" \
		"$stage/bin/odl" perf latency --backend sim -s 64 -n 20 --json --quiet 2>&1) ||
		fail "installed odl perf on the in-process model: $out"
	grep -q '"frames"' <<<"$out" || fail "installed odl perf on the in-process model printed: $out"
	ok "installed odl perf on the installed in-process model ($libdir/odl/odl-sim-inproc.so)"
fi

# --- 2. consumers ---------------------------------------------------------------
want="odl_version=$version api="
cmake -S "$here/consumer" -B "$tmp/consumer" -G Ninja -DCMAKE_PREFIX_PATH="$stage" \
	>"$tmp/consumer.log" 2>&1 && cmake --build "$tmp/consumer" >>"$tmp/consumer.log" 2>&1 ||
	{ cat "$tmp/consumer.log"; fail "find_package(odl) consumer does not build"; }
out=$("$tmp/consumer/consumer_c") || fail "find_package consumer (C) exits $?"
case "$out" in "$want"*" strerror="?*) ;; *) fail "find_package consumer (C) printed '$out'" ;; esac
out=$("$tmp/consumer/consumer_cxx") || fail "find_package consumer (C++) exits $?"
[ "$out" = "odl_version=$version" ] || fail "find_package consumer (C++) printed '$out'"
ok "find_package(odl) consumer: $("$tmp/consumer/consumer_c")"

export PKG_CONFIG_PATH=$stage/$libdir/pkgconfig
[ "$(pkg-config --modversion odl)" = "$version" ] || fail "pkg-config --modversion odl: $(pkg-config --modversion odl)"
# shellcheck disable=SC2046
cc -o "$tmp/pc_c" "$here/consumer/consumer.c" $(pkg-config --cflags --libs odl) ||
	fail "pkg-config consumer (C) does not build"
out=$("$tmp/pc_c") || fail "pkg-config consumer exits $?"
case "$out" in "$want"*) ;; *) fail "pkg-config consumer printed '$out'" ;; esac
ok "pkg-config consumer: $(pkg-config --cflags --libs odl)"
unset LD_LIBRARY_PATH PKG_CONFIG_PATH

# --- 3. packages ----------------------------------------------------------------
if [ -n "$debs_dir" ]; then
	[ -d "$debs_dir" ] || fail "--debs $debs_dir: no such folder"
	ln -s "$(cd "$debs_dir" && pwd)" "$tmp/pkg"
else
	cpack --config "$build/CPackConfig.cmake" -B "$tmp/pkg" >"$tmp/cpack.log" 2>&1 ||
		{ cat "$tmp/cpack.log"; fail "cpack"; }
fi
# (A glob, not ls | head: ls failing on no match would end this script under
# pipefail before the message below.)
deb() {
	local f
	for f in "$tmp/pkg/$1_"*.deb; do [ -e "$f" ] && { echo "$f"; return 0; }; done
	return 0
}
pkgs=(odl libodl-dev odl-nccl-plugin odl-tb5-dkms odl-tray)
[ "$model" = 1 ] && pkgs+=(odl-model)
for p in "${pkgs[@]}"; do
	d=$(deb "$p")
	[ -n "$d" ] || fail "no $p package in ${debs_dir:-the cpack output}: $(ls "$tmp/pkg")"
	[ "$(dpkg-deb -f "$d" Version)" = "$full" ] || fail "$p: Version $(dpkg-deb -f "$d" Version), want $full"
	dpkg-deb -c "$d" | awk '{print $6}' >"$tmp/$p.list"
done
has() { grep -qx "./$2" "$tmp/$1.list" || fail "$1 lacks /$2"; }
lacks() { ! grep -q "$2" "$tmp/$1.list" || fail "$1 has $(grep "$2" "$tmp/$1.list" | head -n1)"; }

has odl usr/bin/odl
has odl "usr/$libdir/libodl.so.0"
has odl usr/lib/udev/rules.d/71-odl-tb5.rules
has odl usr/lib/modules-load.d/odl_tb5.conf
has odl usr/share/man/man1/odl.1.gz
lacks odl 'odl-model\|odl-linkd\|/include/\|libodl\.so$\|nccl\|odl-tray'
dep=$(dpkg-deb -f "$(deb odl)" Depends)
# The simulator stays out of the host tool (a lab host needs none);
# yaml-cpp is the host tool's own since `odl hil` reads inventories.
case "$dep" in *systemc* | *odl-model*) fail "odl depends on the model: $dep" ;; esac
case "$dep" in *gtk* | *appindicator*) fail "odl depends on the desktop (the tray's own): $dep" ;; esac
dpkg-deb -x "$(deb odl)" "$tmp/odl-root"
needed=$(readelf -d "$tmp/odl-root/usr/bin/odl" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
case "$needed" in *systemc*) fail "usr/bin/odl needs the model: $needed" ;; esac
case "$needed" in *libyaml-cpp*) ;; *) fail "usr/bin/odl does not link yaml-cpp (odl hil reads inventories): $needed" ;; esac
case "$needed" in *libodl.so.0*) ;; *) fail "usr/bin/odl does not use libodl.so.0: $needed" ;; esac
ok "odl: Depends: $dep; odl NEEDED: $needed"

has libodl-dev usr/include/odl/odl.h
has libodl-dev usr/include/odl/uapi/odl_tb5.h
has libodl-dev "usr/$libdir/libodl.so"
has libodl-dev "usr/$libdir/pkgconfig/odl.pc"
has libodl-dev "usr/$libdir/cmake/odl/odlTargets.cmake"
grep -q "odl (= $full)" <<<"$(dpkg-deb -f "$(deb libodl-dev)" Depends)" ||
	fail "libodl-dev does not depend on odl (= $full): $(dpkg-deb -f "$(deb libodl-dev)" Depends)"

has odl-tray usr/bin/odl-tray
has odl-tray usr/share/man/man1/odl-tray.1.gz
has odl-tray usr/share/applications/odl-tray.desktop
for i in connected degraded disconnected daemon-down; do has odl-tray "usr/share/odl/icons/odl-$i.png"; done
d=$(dpkg-deb -f "$(deb odl-tray)" Depends)
for want in "odl (= $full)" libgtk-3 libayatana-appindicator3; do
	case "$d" in *"$want"*) ;; *) fail "odl-tray does not depend on $want: $d" ;; esac
done

has odl-nccl-plugin "usr/$libdir/odl/libnccl-net-odl.so"
has odl-nccl-plugin "usr/$libdir/odl/librccl-net-odl.so"
has odl-nccl-plugin "usr/share/odl/nccl/allreduce_check.py"
has odl-nccl-plugin "usr/$libdir/odl/odl-plugin-collective"

d=$(deb odl-tb5-dkms)
[ "$(dpkg-deb -f "$d" Architecture)" = all ] || fail "odl-tb5-dkms is not Architecture: all"
grep -q dkms <<<"$(dpkg-deb -f "$d" Depends)" || fail "odl-tb5-dkms does not depend on dkms"
has odl-tb5-dkms "usr/src/odl_tb5-$version/dkms.conf"
has odl-tb5-dkms "usr/src/odl_tb5-$version/include/odl/wire/frame.h"
dpkg-deb -e "$d" "$tmp/dkms-ctl"
grep -q "dkms add -m \"\$name\" -v \"\$version\"" "$tmp/dkms-ctl/postinst" || fail "dkms postinst adds nothing"
grep -q "mokutil --import" "$tmp/dkms-ctl/postinst" || fail "dkms postinst does not say how to enrol a key"
grep -q "dkms remove -m odl_tb5 -v $version --all" "$tmp/dkms-ctl/prerm" || fail "dkms prerm removes nothing"
for s in "$tmp/dkms-ctl/postinst" "$tmp/dkms-ctl/prerm"; do sh -n "$s" || fail "$s: syntax"; done
# One odl_tb5 per host: DKMS's package and a prebuilt one exclude each other.
grep -q odl-tb5-modules <<<"$(dpkg-deb -f "$d" Conflicts)" || fail "odl-tb5-dkms does not conflict with odl-tb5-modules"
grep -q "odl-tb5-dkms | odl-tb5-modules" <<<"$(dpkg-deb -f "$(deb odl)" Recommends)" ||
	fail "odl does not recommend either module package: $(dpkg-deb -f "$(deb odl)" Recommends)"

# odl-tb5-modules-KVER (odl package --kernel; build_debs.sh makes one per
# guest kernel whose headers are installed): the module of this build for
# that kernel alone, where depmod finds it.
nmods=0
for d in "$tmp"/pkg/odl-tb5-modules-*.deb; do
	[ -e "$d" ] || continue
	p=$(dpkg-deb -f "$d" Package)
	k=${p#odl-tb5-modules-}
	[ "$(dpkg-deb -f "$d" Version)" = "$full" ] || fail "$p: Version $(dpkg-deb -f "$d" Version), want $full"
	[ "$(dpkg-deb -f "$d" Provides)" = odl-tb5-modules ] || fail "$p does not provide odl-tb5-modules"
	[ "$(dpkg-deb -f "$d" Conflicts)" = odl-tb5-dkms ] || fail "$p does not conflict with odl-tb5-dkms"
	rm -rf "$tmp/mods"
	dpkg-deb -R "$d" "$tmp/mods"
	ko=$tmp/mods/lib/modules/$k/updates/odl/odl_tb5.ko
	[ -f "$ko" ] || fail "$p lacks /lib/modules/$k/updates/odl/odl_tb5.ko: $(dpkg-deb -c "$d" | awk '{print $6}' | tr '\n' ' ')"
	[ "$(modinfo -F vermagic "$ko" | cut -d' ' -f1)" = "$k" ] || fail "$p: vermagic $(modinfo -F vermagic "$ko")"
	[ "$(modinfo -F version "$ko")" = "$(cat "$build/build-info/odl-build-version.txt")" ] ||
		fail "$p: module version $(modinfo -F version "$ko"), not this build's $(cat "$build/build-info/odl-build-version.txt")"
	grep -q "depmod -a $k" "$tmp/mods/DEBIAN/postinst" && grep -q "depmod -a $k" "$tmp/mods/DEBIAN/postrm" ||
		fail "$p: its maintainer scripts do not index the module"
	for s in "$tmp/mods/DEBIAN/postinst" "$tmp/mods/DEBIAN/postrm"; do sh -n "$s" || fail "$p: $s: syntax"; done
	(cd "$tmp/mods" && md5sum --quiet -c DEBIAN/md5sums) || fail "$p: md5sums do not match its files"
	nmods=$((nmods + 1))
done
ok "odl-tb5-modules packages: $nmods (module of this build, vermagic of its kernel)"
# Signed with a key and certificate made here (odl package --sign-key/--sign-cert
# hands them to this script): the module names the certificate's subject, and
# stays signed (signing comes after the strip).
if [ "$nmods" -gt 0 ]; then
	openssl req -new -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=odl package test/" \
		-keyout "$tmp/sign.key" -out "$tmp/sign.crt" 2>/dev/null || fail "openssl: a test key"
	"$build/packaging/odl-modules-deb" "$k" "$tmp/signed" "$tmp/sign.key" "$tmp/sign.crt" >"$tmp/signed.list" \
		2>"$tmp/signed.log" || { cat "$tmp/signed.log"; fail "odl-modules-deb $k with a key"; }
	d=$(cat "$tmp/signed.list")
	dpkg-deb -x "$d" "$tmp/signed-root"
	signer=$(modinfo -F signer "$tmp/signed-root/lib/modules/$k/updates/odl/odl_tb5.ko")
	[ "$signer" = "odl package test" ] || fail "signed module package: signer '$signer'"
	grep -q "signed by 'odl package test'" <<<"$(dpkg-deb -f "$d" Description)" ||
		fail "signed module package: its description does not say so"
	grep -q "It is not signed" <<<"$(dpkg-deb -f "$(ls "$tmp"/pkg/odl-tb5-modules-*.deb | head -n1)" Description)" ||
		fail "unsigned module package: its description does not say so"
	[ -z "$(modinfo -F signer "$ko")" ] || fail "the unsigned package's module names a signer"
	ok "odl-tb5-modules signed with a key: signer '$signer'"
fi

if [ "$model" = 1 ]; then
	has odl-model usr/bin/odl-model
	has odl-model usr/bin/odl-linkd
	has odl-model usr/share/man/man1/odl-model.1.gz
	has odl-model usr/share/man/man1/odl-linkd.1.gz
	has odl-model usr/share/odl/model/default.yaml
	has odl-model usr/share/odl/model/points.yaml
	grep -q systemc <<<"$(dpkg-deb -f "$(deb odl-model)" Depends)" ||
		fail "odl-model does not depend on SystemC: $(dpkg-deb -f "$(deb odl-model)" Depends)"
fi
ok "packages (version $full): $(cd "$tmp/pkg" && ls ./*.deb | tr '\n' ' ')"

# --- 4. lintian -----------------------------------------------------------------
# lintian leaves mldbm-elf-* files in TMPDIR: keep them in ours.
mkdir -p "$tmp/lintian-tmp"
TMPDIR="$tmp/lintian-tmp" lintian --no-tag-display-limit "$tmp"/pkg/*.deb >"$tmp/lintian.log" 2>&1 || true
errors=$(grep -c '^E: ' "$tmp/lintian.log" || true)
warnings=$(grep -c '^W: ' "$tmp/lintian.log" || true)
grep '^[EW]: ' "$tmp/lintian.log" || true
[ "$errors" = 0 ] || fail "lintian: $errors error(s)"
ok "lintian: no errors, $warnings warning(s)"
echo "PASS: install, consumers, packages, lintian"
