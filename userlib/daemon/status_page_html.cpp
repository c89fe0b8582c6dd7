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
</style>
</head>
<body>
<h1>OdinLink status</h1>
<div id="meta">connecting to odl-daemon&hellip;</div>
<div id="down">odl-daemon does not answer: the figures below are the last it gave.</div>
<div id="peers"></div>
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
      tx += d.counters.tx_bytes || 0;
      rx += d.counters.rx_bytes || 0;
    }
    box.append(card);
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
