#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Prints the path of promtool (Prometheus's checker of the text format),
# taken from Debian's prometheus package without installing it: installing
# would start a Prometheus server on the machine. The .deb is fetched with
# apt-get download (the machine's own apt sources) and only usr/bin/promtool
# is kept, cached outside the checkout per package version.
# Exit 0 and the path on stdout; 1 with the reason on stderr.
# Environment: ODL_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/odl)
set -euo pipefail

cache=${ODL_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/odl}
say() { printf 'odl: promtool: %s\n' "$*" >&2; }
ver=$(apt-cache policy prometheus 2>/dev/null | sed -n 's/^  Candidate: //p')
if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
	say "apt knows no prometheus package (apt-get update?)"
	exit 1
fi
dir="$cache/promtool-${ver//[:~]/_}"
if [ ! -x "$dir/promtool" ]; then
	say "fetching promtool from prometheus $ver"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	(cd "$tmp" && apt-get download -q "prometheus=$ver" >"$tmp/download.log" 2>&1) ||
		{ cat "$tmp/download.log" >&2; say "apt-get download prometheus=$ver failed"; exit 1; }
	dpkg-deb --fsys-tarfile "$tmp"/prometheus_*.deb | tar -x -C "$tmp" ./usr/bin/promtool ||
		{ say "no usr/bin/promtool in prometheus $ver"; exit 1; }
	mkdir -p "$dir"
	mv "$tmp/usr/bin/promtool" "$dir/promtool.part"
	mv "$dir/promtool.part" "$dir/promtool"
fi
echo "$dir/promtool"
