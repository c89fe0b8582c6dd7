// SPDX-License-Identifier: MIT
// Fitting a profile to a HIL run (see hil_calibrate.h).
#include "hil_calibrate.h"

#include <cmath>
#include <functional>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace odl::cli::hil_model {

namespace {

using sc_core::sc_time;

/// Mean of log(predicted / measured) over @measured's workloads of one kind
/// of metric; nullopt when the model gave no value for one of them.
std::optional<double> log_error(const std::vector<predicted_workload>& pred, const measured_run& measured,
                                bool latency) {
    double sum = 0;
    for (std::size_t i = 0; i < measured.workloads.size(); ++i) {
        const auto& mw = measured.workloads[i];
        const auto& p = latency ? pred[i].p50 : pred[i].gbps;
        const auto& v = latency ? mw.p50 : mw.gbps;
        if (!pred[i].completed || !p || *p <= 0) return std::nullopt;
        sum += std::log(*p / *v);
    }
    return sum / static_cast<double>(measured.workloads.size());
}

/// The workloads of @all that carry the metric: p50 (ping-pongs) or Gb/s.
measured_run only(const measured_run& all, bool latency) {
    measured_run r = all;
    r.workloads.clear();
    for (const auto& w : all.workloads) {
        const bool ping = w.kind == m::workload_kind::pingpong;
        if (latency && ping && w.p50 && *w.p50 > 0) r.workloads.push_back(w);
        if (!latency && !ping && !m::is_collective(w.kind) && w.gbps && *w.gbps > 0)
            r.workloads.push_back(w);
    }
    return r;
}

/// Bisection in log space for f(x) = 0 on [lo, hi], f increasing in x when
/// @increasing. The model's times are quantised (busy-poll period, whole
/// frames), so f is a staircase and a whole interval may give error zero:
/// both of its ends are found and the middle (geometric) returned. When
/// there is no root, sets *clamped ("low"/"high") and returns that end.
double solve(const std::function<std::optional<double>(double)>& f, double lo, double hi, bool increasing,
             std::string* clamped) {
    const auto err = [&](double x) {
        const auto v = f(x);
        // No value (did not complete) counts as far too slow.
        const double e = v ? *v : (increasing ? 1e9 : -1e9);
        return increasing ? e : -e;
    };
    if (err(lo) > 0) {
        *clamped = "low";
        return lo;
    }
    if (err(hi) < 0) {
        *clamped = "high";
        return hi;
    }
    // First x with err >= 0 (strict = false) or err > 0 (strict = true).
    const auto edge = [&](bool strict) {
        double a = std::log(lo), b = std::log(hi);
        for (int i = 0; i < 40 && b - a > 1e-4; ++i) {
            const double mid = 0.5 * (a + b);
            const double e = err(std::exp(mid));
            ((strict ? e <= 0 : e < 0) ? a : b) = mid;
        }
        return 0.5 * (a + b);
    };
    return std::exp(0.5 * (edge(false) + edge(true)));
}

/// "215ns", "750.125ns": picoseconds are the model's resolution.
std::string ns(const sc_time& t) {
    std::string v = fmt::format("{:.3f}", t.to_seconds() * 1e9);
    while (v.back() == '0') v.pop_back();
    if (v.back() == '.') v.pop_back();
    return v + "ns";
}

void param(YAML::Emitter& y, const char* key, const std::string& value, const std::map<std::string, std::string>& prov) {
    const auto it = prov.find(key);
    y << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap << YAML::Key << "value" << YAML::Value
      << value << YAML::Key << "source" << YAML::Value << YAML::DoubleQuoted
      << (it == prov.end() ? std::string("A: unknown") : it->second) << YAML::EndMap;
}

void emit_platform(YAML::Emitter& y, const m::platform& p) {
    y << YAML::Key << p.name << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "description" << YAML::Value << YAML::DoubleQuoted << p.description;
    const auto& pr = p.provenance;
    param(y, "pcie_rtt", ns(p.nhi.pcie_rtt), pr);
    param(y, "pcie_write", ns(p.nhi.pcie_write), pr);
    param(y, "pcie_gbps", fmt::format("{}", p.nhi.pcie_gbps), pr);
    param(y, "frame_overhead", ns(p.nhi.frame_overhead), pr);
    param(y, "post", ns(p.host.post), pr);
    param(y, "post_frame", ns(p.host.post_frame), pr);
    param(y, "mmio", ns(p.host.mmio), pr);
    param(y, "completion", ns(p.host.completion), pr);
    param(y, "completion_frame", ns(p.host.completion_frame), pr);
    param(y, "irq_latency", ns(p.host.irq_latency), pr);
    param(y, "poll_period", ns(p.host.poll_period), pr);
    param(y, "copy_gbps", fmt::format("{}", p.host.copy_gbps), pr);
    param(y, "throttle", fmt::format("{}", p.host.throttle), pr);
    param(y, "completion_mode", p.host.interrupts ? "interrupt" : "poll", pr);
    y << YAML::EndMap;
}

}  // namespace

fit_result fit_profile(const m::scenario& s, const m::calibration& cal, const std::string& base,
                       const std::string& name, const m::link_config& cable, const measured_run& measured) {
    fit_result fr;
    fr.base = base;
    const m::platform start = cal.get(base);
    m::calibration work = cal;
    m::platform p = start;
    p.name = name;

    const measured_run lat = only(measured, true), bw = only(measured, false);
    const auto run = [&](const measured_run& which) {
        work.platforms[name] = p;
        return predict(s, work, name, cable, which);
    };
    double k = 1;
    double f = start.nhi.frame_overhead.to_seconds() * 1e9;
    const auto apply = [&] {
        p.host.post = start.host.post * k;
        p.host.completion = start.host.completion * k;
        p.nhi.frame_overhead = sc_time(f, sc_core::SC_NS);
    };
    std::string clamp_k, clamp_f;
    for (int round = 0; round < 8; ++round) {
        const double k0 = k, f0 = f;
        if (!lat.workloads.empty()) {
            clamp_k.clear();
            k = solve([&](double x) {
                    k = x;
                    apply();
                    return log_error(run(lat), lat, true);
                }, 1e-3, 1e6, true, &clamp_k);
            apply();
        }
        if (!bw.workloads.empty()) {
            clamp_f.clear();
            // More per-frame cost, fewer Gb/s.
            f = solve([&](double x) {
                    f = x;
                    apply();
                    return log_error(run(bw), bw, false);
                }, 1e-3, 1e7, false, &clamp_f);
            apply();
        }
        if (std::fabs(k - k0) <= 0.002 * k0 && std::fabs(f - f0) <= 0.002 * std::max(f0, 1e-3)) break;
    }
    fr.message_scale = k;
    const std::string where = fmt::format("pair {} ({}) running scenario {} at {}", measured.pair, measured.hosts,
                                          measured.scenario, measured.date.empty() ? "an unknown time" : measured.date);
    std::string lat_values, bw_values;
    for (const auto& w : lat.workloads) lat_values += fmt::format(", {} p50 {:.4g} us", w.name, *w.p50);
    for (const auto& w : bw.workloads) bw_values += fmt::format(", {} {:.4g} Gb/s", w.name, *w.gbps);
    if (lat.workloads.empty()) {
        fr.notes.push_back("no ping-pong measured: post and completion stay the base's");
    } else if (!clamp_k.empty()) {
        fr.notes.push_back(fmt::format("latency: the measured p50 is {} than the model can reach by scaling post "
                                       "and completion (other costs dominate); not fitted",
                                       clamp_k == "low" ? "lower" : "higher"));
        p.host.post = start.host.post;
        p.host.completion = start.host.completion;
        fr.message_scale = 1;
    } else {
        fr.latency_fitted = true;
        for (const char* key : {"post", "completion"})
            p.provenance[key] = fmt::format("F: {} x {:.4g}, fitted by odl hil calibrate to {}{}", base, k, where,
                                            lat_values);
    }
    if (bw.workloads.empty()) {
        fr.notes.push_back("no stream measured: frame_overhead stays the base's");
    } else if (!clamp_f.empty()) {
        fr.notes.push_back(fmt::format("bandwidth: the measured rate is {} than the model reaches with any "
                                       "per-frame cost (link or PCIe cap); frame_overhead not fitted",
                                       clamp_f == "low" ? "higher" : "lower"));
        p.nhi.frame_overhead = start.nhi.frame_overhead;
    } else {
        fr.bandwidth_fitted = true;
        p.provenance["frame_overhead"] =
            fmt::format("F: fitted by odl hil calibrate to {}{}", where, bw_values);
    }
    p.description = fmt::format("{}, fitted to pair {} on {} (from {})", name, measured.pair,
                                measured.date.empty() ? "an unknown date" : measured.date.substr(0, 10), base);
    fr.profile = p;
    return fr;
}

std::string calibration_yaml(const m::calibration& cal, const m::platform& fitted, const std::string& header) {
    YAML::Emitter y;
    y << YAML::BeginMap << YAML::Key << "link" << YAML::Value << YAML::BeginMap;
    const auto& l = cal.link;
    param(y, "gen4_coding_efficiency", fmt::format("{}", l.physics.gen4_coding_efficiency), l.provenance);
    param(y, "cable_ns_per_m", fmt::format("{}", l.physics.cable_ns_per_m), l.provenance);
    param(y, "router_hop", ns(l.router_hop), l.provenance);
    param(y, "link_train", ns(l.link_train), l.provenance);
    param(y, "dma_credits", fmt::format("{}", l.dma_credits), l.provenance);
    y << YAML::EndMap << YAML::Key << "platforms" << YAML::Value << YAML::BeginMap;
    emit_platform(y, fitted);
    for (const auto& kv : cal.platforms)
        if (kv.first != fitted.name) emit_platform(y, kv.second);
    y << YAML::EndMap << YAML::EndMap;
    std::string out;
    for (std::size_t pos = 0; pos < header.size();) {
        const auto nl = header.find('\n', pos);
        out += "# " + header.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos) + "\n";
        if (nl == std::string::npos) break;
        pos = nl + 1;
    }
    return out + y.c_str() + "\n";
}

}  // namespace odl::cli::hil_model
