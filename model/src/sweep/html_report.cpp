// SPDX-License-Identifier: MIT
// The HTML report of `odl model report`.
#include "odl/model/sweep/html_report.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "odl/model/cable/link_config.h"
#include "odl/model/scenario/runner.h"
#include "odl/model/sweep/svg_plot.h"

namespace odl::model {

namespace {

std::vector<std::string> generations_of(const std::vector<sweep_point>& pts) {
    std::vector<std::string> g;
    for (const auto& p : pts)
        if (std::find(g.begin(), g.end(), p.generation) == g.end()) g.push_back(p.generation);
    return g;
}

std::string cell(double v) { return fmt::format("{:.2f}", v); }

}  // namespace

void check_collectives(const std::vector<std::string>& generations, const std::vector<unsigned>& hosts,
                       const std::vector<std::uint64_t>& sizes) {
    for (const auto& g : generations)
        if (g != "tb5-asym" && !parse_generation(g))
            throw std::runtime_error(fmt::format("unknown generation '{}' (have: tb3, tb4, tb5, tb5-asym)", g));
    for (unsigned n : hosts)
        if (n < 2 || n > 8) throw std::runtime_error(fmt::format("hosts must be 2..8, not {}", n));
    // 1024G grew to 12 GB before the first row; a ring of 4 GiB on the
    // slowest profile still ends well inside a run's 60 simulated seconds.
    for (auto z : sizes)
        if (z == 0 || z > k_max_collective_bytes)
            throw std::runtime_error(fmt::format("collective size {} B is outside 1 B..4 GiB", z));
    if (generations.empty() || hosts.empty() || sizes.empty())
        throw std::runtime_error("no generation, host count or size to run");
}

std::vector<collective_row> run_collectives(const std::vector<std::string>& generations,
                                            const std::string& platform, bool interrupts,
                                            const std::vector<unsigned>& hosts,
                                            const std::vector<std::uint64_t>& sizes,
                                            const calibration& cal,
                                            const std::function<void(std::size_t, std::size_t)>& progress) {
    check_collectives(generations, hosts, sizes);  // bad input fails before the first run
    std::vector<collective_row> out;
    const std::size_t total = generations.size() * 2 * hosts.size() * sizes.size();
    const double throttle_us = cal.get(platform).host.throttle * 256.0 / 1000.0;
    for (const auto& g : generations)
        for (const auto kind : {workload_kind::allreduce, workload_kind::allgather})
            for (unsigned n : hosts)
                for (auto z : sizes) {
                    const workload_result r =
                        run_collective(g, platform, interrupts, throttle_us, n, kind, z, cal);
                    if (!r.completed)
                        throw std::runtime_error(fmt::format("{} of {} B over {} {} hosts did not complete",
                                                             r.name, z, n, g));
                    out.push_back({g, r.name, n, z, r.time_us, r.busbw_gbps});
                    if (progress) progress(out.size(), total);
                }
    return out;
}

std::vector<std::pair<std::string, double>> latency_percentiles(const sweep_point& p) {
    return {{"p50", percentile(p.samples_us, 50)},
            {"p90", percentile(p.samples_us, 90)},
            {"p99", percentile(p.samples_us, 99)},
            {"p99.9", percentile(p.samples_us, 99.9)}};
}

std::string collectives_markdown(const std::vector<collective_row>& rows) {
    if (rows.empty()) return {};
    std::string s =
        "## Collectives (us per collective; bus bandwidth as nccl-tests counts it)\n\n"
        "| generation | collective | hosts | size (B) | time (us) | busbw (Gb/s) | busbw (GB/s) |\n"
        "|---|---|---|---|---|---|---|\n";
    for (const auto& c : rows)
        s += fmt::format("| {} | {} | {} | {} | {:.1f} | {:.2f} | {:.3f} |\n", c.generation, c.kind, c.hosts, c.size,
                         c.time_us, c.busbw_gbps, c.busbw_gbps / 8);
    return s + "\n";
}

nlohmann::json report_json(const report_data& d) {
    nlohmann::json j{{"platform", d.platform},         {"mode", d.mode},
                     {"calibration", d.calibration_path}, {"iterations", d.iterations},
                     {"command", d.command},           {"points", nlohmann::json::array()},
                     {"collectives", nlohmann::json::array()}};
    for (const auto& p : d.points) {
        nlohmann::json lat;
        for (const auto& [k, v] : latency_percentiles(p)) lat[k] = v;
        lat["mean"] = p.mean_us;
        j["points"].push_back({{"generation", p.generation},
                               {"size_bytes", p.size},
                               {"one_way_us", lat},
                               {"gbps", p.gbps}});
    }
    for (const auto& c : d.collectives)
        j["collectives"].push_back({{"generation", c.generation},
                                    {"kind", c.kind},
                                    {"hosts", c.hosts},
                                    {"size_bytes", c.size},
                                    {"time_us", c.time_us},
                                    {"busbw_gbps", c.busbw_gbps}});
    return j;
}

std::vector<std::pair<std::string, std::string>> report_charts(const report_data& d) {
    std::vector<std::pair<std::string, std::string>> out;
    svg::chart lat = latency_size_chart("One-way latency vs message size: p50 and p99 (ping-pong RTT/2)");
    svg::chart bw = bandwidth_size_chart();
    for (const auto& g : generations_of(d.points)) {
        svg::series p50{g + " p50", {}}, p99{g + " p99", {}}, b{g, {}};
        for (const auto& p : d.points) {
            if (p.generation != g) continue;
            const double x = static_cast<double>(p.size);
            p50.points.emplace_back(x, percentile(p.samples_us, 50));
            p99.points.emplace_back(x, percentile(p.samples_us, 99));
            b.points.emplace_back(x, p.gbps);
        }
        lat.lines.push_back(p50);
        lat.lines.push_back(p99);
        bw.lines.push_back(b);
    }
    out.emplace_back("latency_vs_size", svg::line_chart(lat));
    out.emplace_back("bandwidth_vs_size", svg::line_chart(bw));
    for (const auto& p : d.points) {
        if (p.size != d.histogram_size) continue;
        // A few late samples would squeeze the body into one bin: the
        // histogram spans up to p99.9, later samples count in the last bin.
        const double top = percentile(p.samples_us, 99.9);
        std::vector<double> v;
        std::size_t above = 0;
        for (double x : p.samples_us) {
            above += x > top;
            v.push_back(std::min(x, top));
        }
        out.emplace_back("latency_histogram_" + p.generation,
                         svg::histogram(fmt::format("{}: one-way latency of {} B messages ({} round trips, "
                                                    "{} above {:.2f} us in the last bin)",
                                                    p.generation, p.size, p.samples_us.size(), above, top),
                                        "one-way latency (us)", v, 60));
    }
    return out;
}

std::string report_html(const report_data& d,
                        const std::vector<std::pair<std::string, std::string>>& charts) {
    const auto esc = [](const std::string& s) { return svg::escape(s); };
    std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    h += fmt::format("<title>OdinLink model report: {}</title>\n", esc(d.platform));
    h += "<style>\n"
         "body{font-family:sans-serif;margin:2em;max-width:1200px;color:#222}\n"
         "table{border-collapse:collapse;margin:1em 0}\n"
         "th,td{border:1px solid #bbb;padding:3px 8px;text-align:right}\n"
         "th{background:#eee}td.k{text-align:left}\n"
         ".charts{display:flex;flex-wrap:wrap;gap:1em}.charts>div{flex:1 1 560px}\n"
         "svg{max-width:100%;height:auto}\n"
         "</style>\n</head>\n<body>\n";
    h += fmt::format("<h1>TB4 vs TB5 vs TB5 asymmetric on <code>{}</code></h1>\n", esc(d.platform));
    h += fmt::format("<p>SystemC model of the link, NHI and host driver with the platform profile "
                     "<code>{}</code> of <code>{}</code> ({} completion, {} round trips per point; "
                     "seeded, so the same command gives the same page). One-way latency is half a "
                     "ping-pong round trip; bandwidth is one direction of a stream of messages of that "
                     "size (asymmetric: the 3-lane direction). Made by <code>{}</code>.</p>\n",
                     esc(d.platform), esc(d.calibration_path), esc(d.mode), d.iterations, esc(d.command));
    h += "<h2>Latency and bandwidth</h2>\n<table id=\"points\">\n<tr><th>generation</th><th>size (B)</th>"
         "<th>p50 (us)</th><th>p90 (us)</th><th>p99 (us)</th><th>p99.9 (us)</th><th>Gb/s</th></tr>\n";
    for (const auto& p : d.points) {
        h += fmt::format("<tr><td class=\"k\">{}</td><td>{}</td>", esc(p.generation), p.size);
        for (const auto& [k, v] : latency_percentiles(p)) h += "<td>" + cell(v) + "</td>";
        h += "<td>" + cell(p.gbps) + "</td></tr>\n";
    }
    h += "</table>\n<div class=\"charts\">\n";
    for (const auto& [name, body] : charts)
        h += fmt::format("<div id=\"{}\">\n{}</div>\n", esc(name), body);
    h += "</div>\n";
    if (!d.collectives.empty()) {
        h += "<h2>Collectives (ring over hosts cabled in a ring)</h2>\n"
             "<p>Time per operation (median of 3) and bus bandwidth as nccl-tests reports it: "
             "all-reduce busbw = size/time &times; 2(N&minus;1)/N, all-gather = size/time &times; "
             "(N&minus;1)/N. Host compute (the reduction itself) is not modelled.</p>\n"
             "<table id=\"collectives\">\n<tr><th>generation</th><th>collective</th><th>hosts</th>"
             "<th>size (B)</th><th>time (us)</th><th>busbw (Gb/s)</th></tr>\n";
        for (const auto& c : d.collectives)
            h += fmt::format("<tr><td class=\"k\">{}</td><td class=\"k\">{}</td><td>{}</td><td>{}</td>"
                             "<td>{}</td><td>{}</td></tr>\n",
                             esc(c.generation), esc(c.kind), c.hosts, c.size, cell(c.time_us),
                             cell(c.busbw_gbps));
        h += "</table>\n";
    }
    h += "</body>\n</html>\n";
    return h;
}

}  // namespace odl::model
