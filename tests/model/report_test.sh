#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# odl model report: the HTML page's numbers are the JSON's, the same command
# gives the same numbers (seeded), bad options are refused with the reason,
# sweeps write PNG plots, and headless Chromium renders the page: a
# screenshot with the charts' colours in it, not a blank or broken page.
#
# Usage: report_test.sh ODL_MODEL_BINARY
set -euo pipefail
bin=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/odl-report-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { printf 'FAIL: %s\n' "$*"; exit 1; }

args=(model report --sizes 64,4KiB,1MiB --histogram-size 4KiB --collective-sizes 1MiB
	--collective-hosts 2,4 --iterations 1000)
"$bin" "${args[@]}" --out "$tmp/a" >"$tmp/a.md" 2>"$tmp/a.err" || fail "report: $(cat "$tmp/a.err")"
for f in report.html report.json report.md latency_vs_size.svg latency_vs_size.png \
	bandwidth_vs_size.png latency_histogram_tb4.png latency_histogram_tb5.png latency_histogram_tb5-asym.png; do
	[ -s "$tmp/a/$f" ] || fail "no $f"
done
cmp -s "$tmp/a.md" "$tmp/a/report.md" || fail "stdout is not report.md"
grep -q 'collective 12/12' "$tmp/a.err" || fail "no progress for the collectives: $(cat "$tmp/a.err")"
# Into a file (not a terminal) progress comes a line at a time, not carriage
# returns on one line.
! grep -q $'\r' "$tmp/a.err" || fail "progress in a log rewrites one line: $(od -c "$tmp/a.err" | head -5)"
[ "$(grep -c '^odl: model report: collective [0-9]*/12$' "$tmp/a.err")" -ge 2 ] ||
	fail "progress in a log is not a line per step: $(cat "$tmp/a.err")"

echo "== the page's tables against report.json"
python3 - "$tmp/a/report.html" "$tmp/a/report.json" <<'PY'
import json, sys
from html.parser import HTMLParser

class Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self.cur, self.row, self.cell = {}, None, None, None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table": self.cur = self.tables.setdefault(a.get("id"), [])
        elif tag == "tr" and self.cur is not None: self.row = []
        elif tag == "td" and self.row is not None: self.cell = ""
    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None: self.row.append(self.cell); self.cell = None
        elif tag == "tr" and self.row: self.cur.append(self.row); self.row = None
        elif tag == "table": self.cur = None
    def handle_data(self, d):
        if self.cell is not None: self.cell += d

t = Tables()
t.feed(open(sys.argv[1]).read())
j = json.load(open(sys.argv[2]))
pts, col = t.tables.get("points", []), t.tables.get("collectives", [])
assert len(pts) == len(j["points"]) == 9, (len(pts), len(j["points"]))
assert len(col) == len(j["collectives"]) == 12, (len(col), len(j["collectives"]))
f = lambda v: "%.2f" % v
for row, p in zip(pts, j["points"]):
    lat = p["one_way_us"]
    want = [p["generation"], str(p["size_bytes"]), f(lat["p50"]), f(lat["p90"]), f(lat["p99"]),
            f(lat["p99.9"]), f(p["gbps"])]
    assert row == want, (row, want)
    assert lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p99.9"], lat
for row, c in zip(col, j["collectives"]):
    want = [c["generation"], c["kind"], str(c["hosts"]), str(c["size_bytes"]), f(c["time_us"]), f(c["busbw_gbps"])]
    assert row == want, (row, want)
# The platform has noise: the tail is above the median somewhere.
assert any(p["one_way_us"]["p99"] > p["one_way_us"]["p50"] * 1.2 for p in j["points"])
# All-gather moves half of what all-reduce does on the same ring.
by = {(c["generation"], c["kind"], c["hosts"]): c["time_us"] for c in j["collectives"]}
for g in ("tb4", "tb5", "tb5-asym"):
    for n in (2, 4):
        r = by[(g, "allgather", n)] / by[(g, "allreduce", n)]
        assert 0.4 < r < 0.6, (g, n, r)
print("tables match: %d points, %d collectives" % (len(pts), len(col)))
PY
# report.md has the collectives too, the same numbers as the JSON.
python3 - "$tmp/a/report.json" "$tmp/a/report.md" <<'PY' || fail "report.md's collectives"
import json, sys
j = json.load(open(sys.argv[1]))
rows = [l.strip().strip("|").split("|") for l in open(sys.argv[2]) if l.startswith("| tb")]
rows = [[c.strip() for c in r] for r in rows if len(r) == 7]
want = [[c["generation"], c["kind"], str(c["hosts"]), str(c["size_bytes"]), "%.1f" % c["time_us"]] for c in j["collectives"]]
assert [r[:5] for r in rows] == want, (rows, want)
PY

echo "== the same command again: the same numbers"
"$bin" "${args[@]}" --out "$tmp/b" >/dev/null 2>&1 || fail "second report"
python3 - "$tmp/a/report.json" "$tmp/b/report.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
a.pop("command"); b.pop("command")
assert a == b, "two runs of one command differ"
PY

echo "== bad options"
bad() {
	local want=$1 rc=0 err
	shift
	err=$("$bin" model report --out "$tmp/bad" "$@" 2>&1 >/dev/null) || rc=$?
	[ "$rc" != 0 ] && grep -q -- "$want" <<<"$err" || fail "'$*': exit $rc, expected '$want': $err"
	echo "refused: $* -> $(echo "$err" | tail -n 1)"
}
bad "is not one of --sizes" --sizes 64,1MiB --histogram-size 3KiB
grep -q "point 1/" <<<"$err" && fail "--histogram-size was refused only after the sweep ran: $err"
bad "hosts must be 2..8" --sizes 64 --histogram-size 64 --collective-hosts 9
grep -q "point 1/" <<<"$err" && fail "--collective-hosts 9 was refused only after the sweep ran: $err"
bad "outside 1 B..4 GiB" --sizes 64 --histogram-size 64 --collective-sizes 1024G
bad "one --modes value" --modes poll,interrupt
bad "bad size" --sizes 64 --histogram-size 64 --collective-sizes 0
bad "unknown platform" --platform no-such
# A results folder that cannot be made is named before anything runs (it
# used to come after the whole sweep, or the whole scenario); a refused
# option makes no folder.
for cmd in "model report --sizes 64 --histogram-size 64" "model sweep --sizes 64" \
	"run $(cd "$(dirname "$0")/../.." && pwd)/scenarios/quickstart.yaml"; do
	rc=0
	# shellcheck disable=SC2086 # words on purpose
	err=$("$bin" $cmd --out /etc/passwd/x 2>&1 >/dev/null) || rc=$?
	[ "$rc" != 0 ] && grep -q "cannot create /etc/passwd/x" <<<"$err" || fail "$cmd into /etc/passwd/x: exit $rc: $err"
	grep -Eq "point 1/|on the model:" <<<"$err" && fail "$cmd: the folder was tried only after running: $err"
	echo "refused: $cmd --out /etc/passwd/x"
done
# Options the model would not use are refused (it ran without them), and a
# folder given as the inventory is called one.
repo=$(cd "$(dirname "$0")/../.." && pwd)
for t in "--vm-time-scale 5:--vm-time-scale: the model would not use it" \
	"--vm-kernel 6.1:--vm-kernel: the model would not use it" \
	"--on $tmp:expected model, vm or a HIL inventory file (this is a folder)"; do
	rc=0
	# shellcheck disable=SC2086 # words on purpose
	err=$("$bin" run "$repo/scenarios/quickstart.yaml" --out "$tmp/never" ${t%%:*} 2>&1 >/dev/null) || rc=$?
	[ "$rc" = 2 ] && grep -qF -- "${t#*:}" <<<"$err" || fail "run ${t%%:*}: exit $rc: $err"
	echo "refused: run ${t%%:*}"
done
# An empty --out fell back to the default folder; calibrate's file is
# checked before its 6 s of fitting, not after.
rc=0
err=$("$bin" run "$repo/scenarios/quickstart.yaml" --out '' 2>&1 >/dev/null) || rc=$?
[ "$rc" != 0 ] && grep -q -- "--out: an empty path" <<<"$err" || fail "run --out '': exit $rc: $err"
rc=0
err=$("$bin" model calibrate --out /nonexistent/x.md 2>&1 >/dev/null) || rc=$?
[ "$rc" = 2 ] && grep -q "cannot write /nonexistent/x.md" <<<"$err" && ! grep -q "points" <<<"$err" ||
	fail "calibrate --out /nonexistent/x.md: exit $rc: $err"
rc=0
"$bin" model sweep --sizes 64 --throttle-us 99999 --out "$tmp/never" >/dev/null 2>&1 || rc=$?
[ "$rc" != 0 ] && [ ! -e "$tmp/never" ] || fail "a refused sweep (exit $rc) made its folder"

echo "== odl model predict: the report's collectives, without files"
"$bin" model predict --generations tb4,tb5 --hosts 2,4 --sizes 1MiB --json >"$tmp/p.json" 2>"$tmp/p.err" ||
	fail "predict: $(cat "$tmp/p.err")"
python3 - "$tmp/a/report.json" "$tmp/p.json" <<'PY' || fail "predict differs from the report"
import json, sys
r, p = (json.load(open(f)) for f in sys.argv[1:])
key = lambda c: (c["generation"], c["kind"], c["hosts"], c["size_bytes"])
want = {key(c): c for c in r["collectives"] if c["generation"] in ("tb4", "tb5")}
got = {key(c): c for c in p["collectives"]}
assert set(got) == set(want), (sorted(got), sorted(want))
for k in want:
    assert got[k]["time_us"] == want[k]["time_us"] and got[k]["busbw_gbps"] == want[k]["busbw_gbps"], (k, got[k], want[k])
print("predict: %d collectives, the report's numbers" % len(got))
PY
"$bin" model predict --generations tb5 --sizes 1MiB >"$tmp/p.md" 2>/dev/null || fail "predict (markdown)"
grep -q "^| tb5 | allreduce | 2 | 1048576 |" "$tmp/p.md" || fail "predict's table: $(cat "$tmp/p.md")"
pbad() {
	local want=$1 rc=0 err
	shift
	err=$("$bin" model predict "$@" 2>&1 >/dev/null) || rc=$?
	[ "$rc" != 0 ] && grep -q -- "$want" <<<"$err" || fail "predict '$*': exit $rc, expected '$want': $err"
	grep -q "collective 1/" <<<"$err" && fail "predict '$*' was refused only after running: $err"
	echo "refused: predict $* -> $(echo "$err" | tail -n 1)"
}
pbad "unknown generation 'tb9'" --generations tb5,tb9
pbad "hosts must be 2..8" --hosts 2,9
pbad "bad size" --sizes 1MiB,0
# "inf" passed as a size (an undefined conversion); "-1" wrapped.
pbad "bad size 'inf'" --sizes inf
pbad "bad size '-1'" --sizes 1MiB,-1
pbad "unknown platform" --platform no-such
pbad "one --modes value" --modes poll,interrupt
# "bogus" ran as poll and said "mode": "bogus"; 1024G grew to 12 GB before the first row.
pbad "one --modes value" --modes bogus
pbad "collective size 1099511627776 B is outside 1 B..4 GiB" --sizes 1024G
sbad() {
	local want=$1 rc=0 err
	shift
	err=$("$bin" model sweep --out "$tmp/sbad" "$@" 2>&1 >/dev/null) || rc=$?
	[ "$rc" = 2 ] && grep -q -- "$want" <<<"$err" || fail "sweep '$*': exit $rc, expected '$want': $err"
	echo "refused: sweep $* -> $(echo "$err" | tail -n 1)"
}
sbad "throttle nan us is outside 0..16000" --throttle-us nan
sbad "iterations must be 1..1000000" --iterations 10000000
# A point cut short by its 10 simulated seconds (a ping-pong every ~0.1 ms
# on linux-tbnet) wrote fewer samples than asked as if it had them all.
sbad "did not complete in 10 s of simulated time" --iterations 1000000 --sizes 64 --generations tb4 \
	--modes interrupt --platform linux-tbnet

echo "== a sweep writes PNG beside each SVG"
"$bin" model sweep --generations tb5 --sizes 64,4KiB --modes poll --iterations 50 --out "$tmp/s" \
	>/dev/null 2>"$tmp/s.err" || fail "sweep: $(cat "$tmp/s.err")"
for f in latency_vs_size bandwidth_vs_size latency_histogram; do
	[ -s "$tmp/s/$f.svg" ] && [ -s "$tmp/s/$f.png" ] || fail "sweep: no $f.svg and .png: $(ls "$tmp/s")"
done

echo "== headless Chromium renders the page"
command -v chromium >/dev/null || fail "chromium is not installed (./odl installs it)"
# Its profile and caches stay in our folder.
HOME=$tmp timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
	--user-data-dir="$tmp/chromium" --window-size=1280,2400 \
	--screenshot="$tmp/shot.png" "file://$tmp/a/report.html" >"$tmp/chromium.log" 2>&1 ||
	fail "chromium: $(tail -n 5 "$tmp/chromium.log")"
[ -s "$tmp/shot.png" ] || fail "no screenshot: $(tail -n 5 "$tmp/chromium.log")"
python3 - "$tmp/shot.png" <<'PY'
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours, nonwhite = {}, 0
for y in range(h):
    f = raw[y * (stride + 1)]
    line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):  # undo the PNG row filter
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    prev = line
    for x in range(0, stride, bpp * 2):  # every other pixel is plenty
        px = bytes(line[x:x + 3])
        colours[px] = colours.get(px, 0) + 1
        nonwhite += px != b"\xff\xff\xff"
total = sum(colours.values())
# The charts' first two series colours (svg_plot.cpp: #1f77b4, #d62728),
# near enough: thin lines are anti-aliased.
near = lambda want: sum(n for px, n in colours.items() if sum(abs(a - b) for a, b in zip(px, want)) < 60)
blue, red, green = near((0x1f, 0x77, 0xb4)), near((0xd6, 0x27, 0x28)), near((0x2c, 0xa0, 0x2c))
print("screenshot %dx%d: %.1f %% not white, %d colours, %d blue, %d red, %d green samples"
      % (w, h, 100.0 * nonwhite / total, len(colours), blue, red, green))
assert nonwhite > 0.03 * total, "the page is (almost) blank"
assert blue > 200 and red > 30 and green > 30, "the charts' lines are not on the page"
PY
echo "PASS"
