// SPDX-License-Identifier: MIT
// Sweeps: build a scenario per point, run it, collect latency/bandwidth.
#include "odl/model/sweep/sweep.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "odl/model/scenario/runner.h"
#include "odl/model/sweep/svg_plot.h"

namespace odl::model {

using sc_core::sc_time;

void check_sweep(const sweep_spec& s, const calibration& cal) {
    if (s.generations.empty() || s.sizes.empty() || s.modes.empty() || s.hosts.empty() ||
        s.throttle_us.empty())
        throw std::runtime_error("every sweep dimension needs at least one value");
    for (const auto& g : s.generations)
        if (g != "tb5-asym" && !parse_generation(g))
            throw std::runtime_error(fmt::format("unknown generation '{}' (have: tb3, tb4, tb5, tb5-asym)", g));
    for (const auto& m : s.modes)
        if (m != "poll" && m != "interrupt")
            throw std::runtime_error(fmt::format("unknown mode '{}' (have: poll, interrupt)", m));
    for (unsigned h : s.hosts)
        if (h < 2 || h > 8) throw std::runtime_error(fmt::format("hosts must be 2..8, not {}", h));
    for (double t : s.throttle_us)
        if (!(t >= 0 && t <= 16000)) throw std::runtime_error(fmt::format("throttle {} us is outside 0..16000", t));
    for (auto z : s.sizes)
        if (z == 0 || z > (1ull << 30)) throw std::runtime_error(fmt::format("size {} is outside 1 B..1 GiB", z));
    if (s.iterations == 0 || s.iterations > k_max_iterations)
        throw std::runtime_error(fmt::format("iterations must be 1..{}, not {}", k_max_iterations, s.iterations));
    cal.get(s.platform);
}

scenario point_scenario(const std::string& gen, const std::string& platform, bool interrupts,
                        double throttle_us, unsigned hosts) {
    scenario s;
    s.name = fmt::format("sweep-{}-{}", gen, interrupts ? "interrupt" : "poll");
    s.seed = 1;
    s.duration = sc_time(10, sc_core::SC_SEC);
    for (unsigned i = 0; i < hosts; ++i) {
        scenario_host h;
        h.name = fmt::format("h{}", i);
        h.platform = platform;
        h.interrupts = interrupts;
        h.throttle = static_cast<unsigned>(throttle_us * 1000.0 / 256.0 + 0.5);
        s.hosts.push_back(h);
    }
    const unsigned cables = hosts == 2 ? 1 : hosts;
    for (unsigned i = 0; i < cables; ++i) {
        scenario_cable c;
        c.host_a = i;
        c.host_b = (i + 1) % hosts;
        c.port_a = ++s.hosts[c.host_a].ports;
        c.port_b = ++s.hosts[c.host_b].ports;
        if (gen == "tb5-asym") {
            c.cfg.gen = generation::gen4;
            c.cfg.asymmetric = true;
            c.cfg.lanes = 3;
        } else {
            c.cfg.gen = *parse_generation(gen);
            c.cfg.lanes = 2;
        }
        s.cables.push_back(c);
    }
    return s;
}

namespace {

run_options quick_options() {
    run_options o;
    o.trace_frames = false;
    o.copy_limit = 32;  // headers only: timing is unaffected, runs are faster
    return o;
}

}  // namespace

workload_result run_pingpong(const std::string& gen, const std::string& platform, bool interrupts,
                             double throttle_us, std::uint64_t size, unsigned iterations,
                             const calibration& cal) {
    scenario s = point_scenario(gen, platform, interrupts, throttle_us, 2);
    scenario_workload w;
    w.name = "pingpong";
    w.kind = workload_kind::pingpong;
    w.hosts = {0, 1};
    w.size = size;
    w.count = iterations;
    s.workloads = {w};
    return run_scenario(s, cal, quick_options()).workloads[0];
}

double run_stream(const std::string& gen, const std::string& platform, bool interrupts,
                  double throttle_us, std::uint64_t size, const calibration& cal) {
    scenario s = point_scenario(gen, platform, interrupts, throttle_us, 2);
    scenario_workload w;
    w.name = "stream";
    w.kind = workload_kind::stream;
    w.hosts = {0, 1};  // host 0 is the fast end of an asymmetric cable
    w.size = size;
    w.count = static_cast<unsigned>(std::clamp<std::uint64_t>((32ull << 20) / size, 16, 2048));
    s.workloads = {w};
    const workload_result r = run_scenario(s, cal, quick_options()).workloads[0];
    if (!r.completed)
        throw std::runtime_error(fmt::format("a {} B stream on {} did not complete in {} s of simulated time", size,
                                             gen, s.duration.to_seconds()));
    return r.gbps;
}

workload_result run_collective(const std::string& gen, const std::string& platform, bool interrupts,
                               double throttle_us, unsigned hosts, workload_kind kind, std::uint64_t size,
                               const calibration& cal) {
    scenario s = point_scenario(gen, platform, interrupts, throttle_us, hosts);
    s.duration = sc_time(60, sc_core::SC_SEC);  // 64 MiB rings on slow profiles
    scenario_workload w;
    w.name = std::string(to_string(kind));
    w.kind = kind;
    for (unsigned i = 0; i < hosts; ++i) w.hosts.push_back(i);
    w.size = std::max<std::uint64_t>(size, hosts);
    w.count = 3;
    s.workloads = {w};
    return run_scenario(s, cal, quick_options()).workloads[0];
}

svg::chart latency_size_chart(const std::string& title) {
    svg::chart c;
    c.title = title;
    c.xlabel = "message size (bytes)";
    c.ylabel = "latency (us)";
    c.logx = c.logy = true;
    return c;
}

svg::chart bandwidth_size_chart() {
    svg::chart c;
    c.title = "Bandwidth (one direction) vs message size";
    c.xlabel = "message size (bytes)";
    c.ylabel = "Gb/s";
    c.logx = true;
    return c;
}

sweep_point run_point(const std::string& gen, const std::string& platform, bool interrupts,
                      double throttle_us, unsigned hosts, std::uint64_t size, unsigned iterations,
                      const calibration& cal) {
    sweep_point p;
    p.generation = gen;
    p.mode = interrupts ? "interrupt" : "poll";
    p.platform = platform;
    p.throttle_us = throttle_us;
    p.hosts = hosts;
    p.size = size;
    {
        const workload_result r =
            run_pingpong(gen, platform, interrupts, throttle_us, size, iterations, cal);
        // A point cut short by the run's end would report fewer samples
        // than asked, as if it had run them all.
        if (!r.completed)
            throw std::runtime_error(fmt::format("{} B ping-pong x{} on {} did not complete in {} s of simulated "
                                                 "time (fewer --iterations)", size, iterations, gen,
                                                 point_scenario(gen, platform, interrupts, throttle_us, 2)
                                                     .duration.to_seconds()));
        p.p50_us = r.p50_us;
        p.p90_us = r.p90_us;
        p.p99_us = r.p99_us;
        p.p999_us = r.p999_us;
        p.mean_us = r.mean_us;
        p.samples_us = r.latency_us;
    }
    p.gbps = run_stream(gen, platform, interrupts, throttle_us, size, cal);
    if (hosts > 2) {
        const workload_result r =
            run_collective(gen, platform, interrupts, throttle_us, hosts, workload_kind::allreduce, size, cal);
        p.allreduce_us = r.time_us;
        p.busbw_gbps = r.busbw_gbps;
    }
    return p;
}

std::vector<sweep_point> run_sweep(const sweep_spec& s, const calibration& cal,
                                   const std::function<void(std::size_t, std::size_t)>& progress) {
    check_sweep(s, cal);
    std::vector<sweep_point> out;
    const std::size_t total = s.generations.size() * s.modes.size() * s.throttle_us.size() *
                              s.hosts.size() * s.sizes.size();
    for (const auto& g : s.generations)
        for (const auto& m : s.modes)
            for (double t : s.throttle_us)
                for (unsigned h : s.hosts)
                    for (auto z : s.sizes) {
                        out.push_back(run_point(g, s.platform, m == "interrupt", t, h, z,
                                                s.iterations, cal));
                        if (progress) progress(out.size(), total);
                    }
    return out;
}

std::string to_csv(const std::vector<sweep_point>& pts) {
    std::string s =
        "platform,generation,mode,throttle_us,hosts,size_bytes,p50_us,p90_us,p99_us,p999_us,mean_us,"
        "gbps,allreduce_us,busbw_gbps\n";
    for (const auto& p : pts)
        s += fmt::format("{},{},{},{:g},{},{},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.4f},{:.3f},{:.4f}\n",
                         p.platform, p.generation, p.mode, p.throttle_us, p.hosts, p.size, p.p50_us,
                         p.p90_us, p.p99_us, p.p999_us, p.mean_us, p.gbps, p.allreduce_us, p.busbw_gbps);
    return s;
}

static std::string series_key(const sweep_point& p) {
    std::string k = fmt::format("{} {}", p.generation, p.mode);
    if (p.throttle_us > 0) k += fmt::format(" thr {:g}us", p.throttle_us);
    if (p.hosts > 2) k += fmt::format(" {}h", p.hosts);
    return k;
}

std::vector<std::string> write_plots(const std::vector<sweep_point>& pts, const std::string& dir) {
    std::map<std::string, std::size_t> order;
    svg::chart lat = latency_size_chart("One-way latency (ping-pong RTT/2, p50) vs message size");
    svg::chart bw = bandwidth_size_chart(), ar;
    ar.title = "Ring all-reduce time vs size";
    ar.xlabel = "size (bytes)";
    ar.ylabel = "time (us)";
    ar.logx = ar.logy = true;
    bool any_ar = false;
    for (const auto& p : pts) {
        const std::string k = series_key(p);
        if (!order.count(k)) {
            order[k] = lat.lines.size();
            lat.lines.push_back({k, {}});
            bw.lines.push_back({k, {}});
            ar.lines.push_back({k, {}});
        }
        const std::size_t i = order[k];
        lat.lines[i].points.emplace_back(static_cast<double>(p.size), p.p50_us);
        bw.lines[i].points.emplace_back(static_cast<double>(p.size), p.gbps);
        if (p.hosts > 2) {
            ar.lines[i].points.emplace_back(static_cast<double>(p.size), p.allreduce_us);
            any_ar = true;
        }
    }
    // Histogram: the smallest size of the first series.
    const sweep_point* h = pts.empty() ? nullptr : &pts.front();
    std::vector<std::string> files;
    const auto put = [&](const std::string& name, const std::string& body) {
        const std::string path = dir + "/" + name;
        std::ofstream f(path);
        f << body;
        if (!f) throw std::runtime_error(fmt::format("cannot write {}", path));
        files.push_back(path);
    };
    put("latency_vs_size.svg", svg::line_chart(lat));
    put("bandwidth_vs_size.svg", svg::line_chart(bw));
    if (h)
        put("latency_histogram.svg",
            svg::histogram(fmt::format("One-way latency histogram: {} B, {}", h->size, series_key(*h)),
                           "one-way latency (us)", h->samples_us));
    if (any_ar) put("allreduce_vs_size.svg", svg::line_chart(ar));
    return files;
}

std::string compare_report(const std::vector<sweep_point>& pts, const std::string& title) {
    std::vector<std::string> keys;
    std::vector<std::uint64_t> sizes;
    for (const auto& p : pts) {
        if (std::find(keys.begin(), keys.end(), series_key(p)) == keys.end()) keys.push_back(series_key(p));
        if (std::find(sizes.begin(), sizes.end(), p.size) == sizes.end()) sizes.push_back(p.size);
    }
    const auto find = [&](const std::string& k, std::uint64_t z) -> const sweep_point* {
        for (const auto& p : pts)
            if (series_key(p) == k && p.size == z) return &p;
        return nullptr;
    };
    std::string s = fmt::format("# {}\n\n", title);
    if (!pts.empty())
        s += fmt::format("Platform `{}` from the calibration file; one-way latency is ping-pong "
                         "RTT/2 (p50), bandwidth is one direction of a stream of messages of "
                         "that size (asymmetric: the 3-lane direction).\n\n",
                         pts.front().platform);
    const auto table = [&](const char* what, auto get, const char* unit) {
        s += fmt::format("## {} ({})\n\n| size |", what, unit);
        for (const auto& k : keys) s += fmt::format(" {} |", k);
        s += "\n|---|";
        for (std::size_t i = 0; i < keys.size(); ++i) s += "---|";
        s += "\n";
        for (auto z : sizes) {
            s += fmt::format("| {} |", svg::tick_label(static_cast<double>(z)));
            for (const auto& k : keys) {
                const sweep_point* p = find(k, z);
                s += p ? fmt::format(" {:.2f} |", get(*p)) : std::string(" - |");
            }
            s += "\n";
        }
        s += "\n";
    };
    table("One-way latency p50", [](const sweep_point& p) { return p.p50_us; }, "us");
    table("One-way latency p99", [](const sweep_point& p) { return p.p99_us; }, "us");
    table("Bandwidth", [](const sweep_point& p) { return p.gbps; }, "Gb/s");
    bool ar = false;
    for (const auto& p : pts) ar = ar || p.hosts > 2;
    if (ar) table("Ring all-reduce time", [](const sweep_point& p) { return p.allreduce_us; }, "us");
    return s;
}

}  // namespace odl::model
