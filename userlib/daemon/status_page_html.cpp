// SPDX-License-Identifier: MIT
// The status page: one self-contained document (no request leaves the
// host), reading /api/state with its own token twice a second. Every value
// from the host goes in through textContent, never as markup.
#include "status_page.h"

namespace odl::daemon {

const char* const kStatusPageHtml = R"html(<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:">
<title>OdinLink status</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b1f24; background: #f6f7f9; }
h1 { font-size: 1.3em; margin: 0 0 .2em; }
#meta { color: #57606a; margin-bottom: 1em; }
#down { display: none; background: #ffebe9; border: 1px solid #cf222e; padding: .6em; margin-bottom: 1em; }
.peer { background: #fff; border: 1px solid #d0d7de; border-radius: 6px; padding: .8em 1em; margin-bottom: 1em; }
.peer h2 { font-size: 1.1em; margin: 0 0 .4em; }
.warn { background: #fff8c5; border: 1px solid #bf8700; padding: .4em .6em; margin: .4em 0; }
table { border-collapse: collapse; margin: .4em 0; }
td, th { border-bottom: 1px solid #eaeef2; padding: .2em .8em .2em 0; text-align: left; }
.counters td { font-variant-numeric: tabular-nums; }
svg { background: #fff; border: 1px solid #d0d7de; }
.none { color: #57606a; font-style: italic; }
.test h3 { font-size: 1em; margin: .8em 0 .2em; }
.run { margin: .4em 0; }
.run button { margin-right: .6em; }
.run-note { color: #57606a; margin-left: .4em; }
.fetched { color: #1a7f37; margin: .2em 0; }
.files h3 { font-size: 1em; margin: .8em 0 .2em; }
.files button.dir { border: none; background: none; color: #0969da; padding: 0; cursor: pointer; font: inherit; }
</style>
</head>
<body>
<h1>OdinLink status</h1>
<div id="meta">connecting to odl-daemon&hellip;</div>
<div id="down">odl-daemon does not answer: the figures below are the last it gave.</div>
<div id="peers"></div>
<div id="plugin"></div>
<h2 style="font-size:1.1em">Throughput, last 60 s (all devices)</h2>
<svg id="plot" width="640" height="160" viewBox="0 0 640 160" role="img" aria-label="throughput">
  <polyline id="tx" fill="none" stroke="#0969da" stroke-width="2" points=""/>
  <polyline id="rx" fill="none" stroke="#1a7f37" stroke-width="2" points=""/>
  <text id="scale" x="4" y="14" font-size="11" fill="#57606a"></text>
</svg>
<div><span style="color:#0969da">&#9644; sent</span> &nbsp; <span style="color:#1a7f37">&#9644; received</span></div>
<script>
"use strict";
const token = new URLSearchParams(location.search).get("token") || "";
const samples = [];  // {t, tx, rx}: byte counters summed over devices
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}
const SVGNS = "http://www.w3.org/2000/svg";
const COLOURS = ["#0969da", "#1a7f37", "#bf3989", "#9a6700", "#8250df", "#cf222e"];
function svg(tag, attrs) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  return e;
}
function sizeText(b) {
  return b >= 1048576 && b % 1048576 === 0 ? b / 1048576 + " MiB" : b >= 1024 && b % 1024 === 0 ? b / 1024 + " KiB" : b + " B";
}
function fileSize(b) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return (i ? b.toFixed(1) : String(b)) + " " + u[i];
}
function num(v, d) { return typeof v === "number" && isFinite(v) ? v.toFixed(d) : "?"; }
// The device's last test (RunTest over D-Bus): a table, and for latency the
// one-way distribution of each size (odl perf's 101-point CDF, log scale),
// for bandwidth a bar per size.
function testView(rec) {
  const box = el("div", undefined, "test");
  box.dataset.test = rec.state || "";
  const when = rec.finished || rec.started || "";
  box.append(el("h3", "Last test: " + rec.test + ", " + rec.state + (when ? " (" + when + ")" : "")));
  if (rec.state === "failed") { box.append(el("div", "Failed: " + (rec.error || "no reason given"), "warn")); return box; }
  if (rec.state !== "passed" || !rec.report || !Array.isArray(rec.report.results)) return box;
  const rows = rec.report.results.filter(r => r && typeof r.size === "number");
  const t = el("table");
  const head = el("tr");
  const lat = rec.test === "latency";
  for (const h of lat ? ["size", "p50 us", "p90 us", "p99 us", "max us"] : ["size", "Gb/s", "MiB/s", "messages"]) head.append(el("th", h));
  t.append(head);
  for (const r of rows) {
    const x = el("tr");
    const cells = lat ? [sizeText(r.size), num(r.p50_us, 2), num(r.p90_us, 2), num(r.p99_us, 2), num(r.max_us, 2)]
                      : [sizeText(r.size), num(r.gbps, 2), num(r.mib_s, 0), r.messages];
    for (const c of cells) x.append(el("td", c));
    t.append(x);
  }
  box.append(t);
  const W = 640, H = 180, L = 40, B = 20;
  const chart = svg("svg", {width: W, height: H, viewBox: "0 0 " + W + " " + H, role: "img",
                            "aria-label": lat ? "latency distribution" : "bandwidth per size"});
  chart.classList.add("test-chart");
  if (lat) {
    const all = rows.flatMap(r => Array.isArray(r.cdf_us) ? r.cdf_us.filter(v => v > 0) : []);
    if (!all.length) return box;
    const lo = Math.log10(Math.min(...all)), hi = Math.max(lo + 1, Math.log10(Math.max(...all)));
    const xOf = v => L + (Math.log10(v) - lo) / (hi - lo) * (W - L - 10);
    rows.forEach((r, i) => {
      if (!Array.isArray(r.cdf_us)) return;
      const pts = r.cdf_us.map((v, k) => xOf(Math.max(v, 1e-9)).toFixed(1) + "," + (H - B - k / (r.cdf_us.length - 1) * (H - B - 10)).toFixed(1));
      chart.append(svg("polyline", {points: pts.join(" "), fill: "none", stroke: COLOURS[i % COLOURS.length], "stroke-width": 2}));
      const label = svg("text", {x: W - 120, y: 16 + 14 * i, "font-size": 11, fill: COLOURS[i % COLOURS.length]});
      label.textContent = sizeText(r.size);
      chart.append(label);
    });
    for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) {
      const tick = svg("text", {x: xOf(Math.pow(10, e)) - 8, y: H - 5, "font-size": 10, fill: "#57606a"});
      tick.textContent = Math.pow(10, e) + " us";
      chart.append(tick);
    }
    const y = svg("text", {x: 2, y: 14, "font-size": 10, fill: "#57606a"});
    y.textContent = "100%";
    chart.append(y);
  } else {
    const top = Math.max(1, ...rows.map(r => r.gbps || 0));
    const bw = (W - L - 10) / Math.max(1, rows.length);
    rows.forEach((r, i) => {
      const h = (r.gbps || 0) / top * (H - B - 20);
      chart.append(svg("rect", {x: L + i * bw + 4, y: H - B - h, width: bw - 8, height: h, fill: COLOURS[0]}));
      const label = svg("text", {x: L + i * bw + 6, y: H - 5, "font-size": 10, fill: "#57606a"});
      label.textContent = sizeText(r.size) + ": " + num(r.gbps, 1) + " Gb/s";
      chart.append(label);
    });
  }
  box.append(chart);
  box.append(el("div", lat ? "One-way latency (log scale) against the share of messages at or below it."
                           : "Throughput per message size, every byte checked.", "none"));
  return box;
}
// The test runner: a button per test of the perf suite (the peer host must
// be answering: odl perf --server there), for root and the group odl; others
// are told why there is none.
let runNote = {};  // device -> what the last click got (kept across redraws)
function runButtons(name, st, rec) {
  const box = el("div", undefined, "run");
  box.dataset.run = name;
  if (!st.may_run_tests) {
    box.append(el("span", "Running a test needs root or the group " + (st.act_group || "odl") + ".", "none"));
    return box;
  }
  const busy = rec && rec.state === "running";
  for (const test of ["latency", "bandwidth"]) {
    const b = el("button", "Run " + test + " test");
    b.dataset.test = test;
    b.disabled = busy;
    b.addEventListener("click", () => runTest(name, test));
    box.append(b);
  }
  if (runNote[name]) box.append(el("span", runNote[name], "run-note"));
  return box;
}
async function runTest(name, test) {
  runNote[name] = "starting " + test + "\u2026";
  try {
    const q = "token=" + encodeURIComponent(token) + "&device=" + encodeURIComponent(name) + "&test=" + encodeURIComponent(test);
    const r = await fetch("/api/test?" + q, {method: "POST", cache: "no-store"});
    runNote[name] = r.ok ? test + " test started" : "not started: " + (await r.text()).trim();
  } catch (e) {
    runNote[name] = "not started: odl-daemon does not answer";
  }
  tick();
}
// The peer's files (odl files ls through the daemon, the peer serving with
// odl files serve): one listing of the whole served folder, walked here
// folder by folder without asking again.
let browseAt = {};  // device -> the folder shown, relative to the listing
const MAX_ROWS = 500;
// fetch: the device's last fetch and whether this user may fetch (the
// daemon's --fetch-to), shown under the listing.
function filesView(name, rec, fetch) {
  const box = el("div", undefined, "files");
  box.dataset.files = name;
  box.append(el("h3", "Peer's files"));
  const bar = el("div", undefined, "run");
  const b = el("button", rec ? "Refresh" : "Browse the peer's folder");
  b.dataset.browse = name;
  b.disabled = !!rec && rec.state === "running";
  b.addEventListener("click", () => browse(name));
  bar.append(b);
  if (runNote["files:" + name]) bar.append(el("span", runNote["files:" + name], "run-note"));
  box.append(bar);
  if (fetch.rec && typeof fetch.rec === "object") box.append(fetchLine(fetch.rec));
  if (!rec || typeof rec !== "object") return box;
  if (rec.state === "running") { box.append(el("div", "Listing\u2026", "none")); return box; }
  if (rec.state === "failed") { box.append(el("div", "Listing failed: " + (rec.error || "no reason given"), "warn")); return box; }
  const entries = Array.isArray(rec.entries) ? rec.entries : [];
  const at = browseAt[name] || "";
  const parent = p => p.includes("/") ? p.slice(0, p.lastIndexOf("/")) : "";
  const here = entries.filter(e => e && typeof e.path === "string" && parent(e.path) === at)
                      .sort((x, y) => (y.dir - x.dir) || (x.path < y.path ? -1 : 1));
  box.append(el("div", (rec.peer || "peer") + ":" + [rec.path, at].filter(Boolean).join("/") + "/ \u2014 " +
                        entries.length + " entries, listed " + (rec.finished || ""), "none"));
  const t = el("table", undefined, "file-list");
  const head = el("tr");
  for (const h of ["name", "size", "modified"].concat(fetch.may ? [""] : [])) head.append(el("th", h));
  t.append(head);
  const go = to => { browseAt[name] = to; tick(); };
  if (at) {
    const r = el("tr"), c = el("td"), up = el("button", "..", "dir");
    up.addEventListener("click", () => go(parent(at)));
    c.append(up);
    r.append(c, el("td", ""), el("td", ""));
    if (fetch.may) r.append(el("td", ""));
    t.append(r);
  }
  for (const e of here.slice(0, MAX_ROWS)) {
    const r = el("tr"), c = el("td");
    const base = e.path.slice(at ? at.length + 1 : 0);
    if (e.dir) {
      const d = el("button", base + "/", "dir");
      d.dataset.path = e.path;
      d.addEventListener("click", () => go(e.path));
      c.append(d);
    } else {
      c.textContent = base;
    }
    r.append(c, el("td", e.dir ? "" : fileSize(e.size)),
             el("td", new Date(e.mtime_ns / 1e6).toISOString().replace(".000Z", "Z")));
    if (fetch.may) {
      const f = el("td");
      if (!e.dir) {
        const g = el("button", "fetch");
        g.dataset.fetch = e.path;
        g.disabled = !!fetch.rec && fetch.rec.state === "running";
        g.addEventListener("click", () => fetchFile(name, e.path));
        f.append(g);
      }
      r.append(f);
    }
    t.append(r);
  }
  box.append(t);
  if (here.length > MAX_ROWS) box.append(el("div", (here.length - MAX_ROWS) + " more not shown", "none"));
  if (!here.length) box.append(el("div", "Empty folder.", "none"));
  return box;
}
function fetchLine(f) {
  const what = "peer:" + f.path + " \u2192 " + f.dest;
  if (f.state === "running") return el("div", "Fetching " + what + "\u2026", "none");
  if (f.state === "done")
    return el("div", "Fetched " + what + " (" + fileSize(f.bytes) + ", SHA-256 checked) " + (f.finished || ""), "fetched");
  return el("div", "Fetch of " + what + " failed: " + (f.error || "no reason given"), "warn");
}
async function fetchFile(name, path) {
  const key = "files:" + name;
  runNote[key] = "fetching " + path + "\u2026";
  try {
    const q = "token=" + encodeURIComponent(token) + "&device=" + encodeURIComponent(name) +
              "&path=" + encodeURIComponent(path);
    const r = await fetch("/api/fetch?" + q, {method: "POST", cache: "no-store"});
    runNote[key] = r.ok ? "" : "not fetched: " + (await r.text()).trim();
  } catch (e) {
    runNote[key] = "not fetched: odl-daemon does not answer";
  }
  tick();
}
async function browse(name) {
  const key = "files:" + name;
  runNote[key] = "listing\u2026";
  try {
    const q = "token=" + encodeURIComponent(token) + "&device=" + encodeURIComponent(name) + "&path=";
    const r = await fetch("/api/files?" + q, {method: "POST", cache: "no-store"});
    runNote[key] = r.ok ? "" : "not listed: " + (await r.text()).trim();
    if (r.ok) browseAt[name] = "";
  } catch (e) {
    runNote[key] = "not listed: odl-daemon does not answer";
  }
  tick();
}
function speed(s) {
  return s.generation + " x" + s.lanes + " = " + s.gbps + " Gb/s";
}
function render(st) {
  document.getElementById("meta").textContent =
    st.version + " \u2014 kernel " + (st.kernel || "?") + (st.module_loaded ? ", odl_tb5 loaded" : ", odl_tb5 NOT loaded") +
    (st.knobs ? " (" + st.knobs + ")" : "") + " \u2014 updated " + new Date(st.unix_ms).toLocaleTimeString();
  const box = document.getElementById("peers");
  box.replaceChildren();
  if (!st.peers.length) box.append(el("p", "No peer host is connected.", "none"));
  let tx = 0, rx = 0;
  for (const p of st.peers) {
    const card = el("div", undefined, "peer");
    card.dataset.peer = p.xdomain;
    card.append(el("h2", (p.peer || "?") + " (" + (p.vendor || "?") + ") \u2014 " + p.xdomain));
    const t = el("table");
    const row = (k, v) => { const r = el("tr"); r.append(el("th", k), el("td", v)); t.append(r); };
    row("sending", speed(p.tx));
    row("receiving", speed(p.rx) + (p.asymmetric ? " (asymmetric)" : ""));
    row("rated", p.rated ? p.rated.generation + " x" + p.rated.lanes + " = " + p.rated.gbps + " Gb/s (" + p.rated.source + ")"
                         : "unknown: " + p.rating_error);
    card.append(t);
    if (p.below_rating) card.append(el("div", "WARNING: " + p.below_rating_text + ": check the cable and re-plug it", "warn"));
    if (!p.odinlink) card.append(el("div", "The peer does not offer OdinLink (odl_tb5 not loaded there).", "warn"));
    for (const d of p.devices) {
      const dt = el("table");
      dt.dataset.device = d.device;
      const r = (k, v) => { const x = el("tr"); x.append(el("th", k), el("td", v)); dt.append(x); };
      r("device", d.device);
      r("state", d.state + (d.open_here ? ", open here" : "") + (d.open_on_peer ? ", open on the peer" : ""));
      r("rings", d.rings + " of " + d.rings_offered + ", peer protocol " + d.peer_protocol + ", logins " + d.logins);
      r("receive", (d.rx_mode || "?") + ", interrupt throttle " + (d.irq_throttle_us || "?") + " us");
      card.append(dt);
      const ct = el("table", undefined, "counters");
      for (const [k, v] of Object.entries(d.counters)) { const x = el("tr"); x.append(el("th", k), el("td", v)); ct.append(x); }
      card.append(ct);
      const name = String(d.device).split("/").pop();  // tests go by name: odl_tb5_0
      const rec = (st.tests || {})[name];
      card.append(runButtons(name, st, rec));
      if (rec && typeof rec === "object") card.append(testView(rec));
      if (st.may_browse)
        card.append(filesView(name, (st.files || {})[name], {may: !!st.may_fetch, rec: (st.fetches || {})[name]}));
      tx += d.counters.tx_bytes || 0;
      rx += d.counters.rx_bytes || 0;
    }
    box.append(card);
  }
  const pl = document.getElementById("plugin");
  pl.replaceChildren();
  if ((st.plugin || []).length) {
    pl.append(el("h2", "NCCL plugin"));
    const t = el("table", undefined, "plugin");
    const head = el("tr");
    for (const h of ["process", "link", "peer", "state", "sent", "received", "errors", "stalls"]) head.append(el("th", h));
    t.append(head);
    const mib = b => (b / 1048576).toFixed(1) + " MiB";
    for (const p of st.plugin) {
      for (const l of p.links || []) {
        const r = el("tr");
        r.append(el("td", p.process + " (" + p.pid + ")"), el("td", l.name), el("td", l.peer || "-"), el("td", l.link_state),
                 el("td", mib(l.tx_bytes) + " in " + l.tx_msgs), el("td", mib(l.rx_bytes) + " in " + l.rx_msgs),
                 el("td", l.errors), el("td", l.odl_credit_stalls + l.odl_link_full_stalls));
        t.append(r);
      }
    }
    pl.append(t);
  }
  samples.push({t: st.unix_ms, tx: tx, rx: rx});
  while (samples.length > 121) samples.shift();
  plot();
}
function plot() {
  const rates = [];
  for (let i = 1; i < samples.length; i++) {
    const dt = (samples[i].t - samples[i - 1].t) / 1000;
    if (dt <= 0) continue;
    rates.push({t: samples[i].t, tx: Math.max(0, samples[i].tx - samples[i - 1].tx) * 8 / dt / 1e9,
                rx: Math.max(0, samples[i].rx - samples[i - 1].rx) * 8 / dt / 1e9});
  }
  const now = Date.now(), top = Math.max(1, ...rates.map(r => Math.max(r.tx, r.rx)));
  const pts = k => rates.map(r => [640 - (now - r.t) / 60000 * 640, 156 - r[k] / top * 140])
                        .filter(p => p[0] >= 0).map(p => p[0].toFixed(1) + "," + p[1].toFixed(1)).join(" ");
  document.getElementById("tx").setAttribute("points", pts("tx"));
  document.getElementById("rx").setAttribute("points", pts("rx"));
  document.getElementById("scale").textContent = "top " + top.toFixed(2) + " Gb/s";
}
async function tick() {
  try {
    const r = await fetch("/api/state?token=" + encodeURIComponent(token), {cache: "no-store"});
    if (!r.ok) throw new Error("HTTP " + r.status);
    render(await r.json());
    document.getElementById("down").style.display = "none";
    document.body.dataset.state = "live";
  } catch (e) {
    document.getElementById("down").style.display = "block";
    document.body.dataset.state = "down";
  }
}
tick();
setInterval(tick, 500);
</script>
</body>
</html>
)html";

}  // namespace odl::daemon
