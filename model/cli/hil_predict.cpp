// SPDX-License-Identifier: MIT
// Each measured workload alone on the model (see hil_predict.h).
#include "hil_predict.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>

#include "odl/model/scenario/runner.h"

namespace odl::cli::hil_model {

m::link_config cable_of(const std::string& expect, double length_m) {
    static const std::regex re("(gen[234])x([12])");
    std::smatch mt;
    if (!std::regex_match(expect, mt, re))
        throw std::runtime_error(fmt::format("link rating '{}': expected gen2x1 .. gen4x2", expect));
    m::link_config c;
    c.gen = *m::parse_generation(mt[1].str());
    c.lanes = static_cast<unsigned>(std::stoul(mt[2].str()));
    c.length_m = length_m;
    return c;
}

std::vector<double> cdf_of(std::vector<double> v) {
    std::vector<double> out;
    if (v.empty()) return out;
    std::sort(v.begin(), v.end());
    // Nearest rank, as odl perf computes its percentiles.
    const auto at = [&](double q) {
        const double rank = std::ceil(q * static_cast<double>(v.size()));
        return v[std::min(v.size() - 1, static_cast<std::size_t>(std::max(rank, 1.0)) - 1)];
    };
    out.push_back(v.front());
    for (int q = 1; q <= 100; ++q) out.push_back(at(q / 100.0));
    return out;
}

std::vector<predicted_workload> predict(const m::scenario& s, const m::calibration& cal,
                                        const std::string& profile, const m::link_config& cable,
                                        const measured_run& measured) {
    cal.get(profile);  // names the profiles there are when it is missing
    std::vector<predicted_workload> out;
    for (const auto& mw : measured.workloads) {
        const auto it = std::find_if(s.workloads.begin(), s.workloads.end(),
                                     [&](const m::scenario_workload& w) { return w.name == mw.name; });
        if (it == s.workloads.end() || it->kind != mw.kind)
            throw std::runtime_error(fmt::format("{}: workload '{}' ({}) is not in scenario {} ({}): results of "
                                                 "another scenario?",
                                                 measured.dir, mw.name, m::to_string(mw.kind), s.name, s.file));
        predicted_workload p;
        p.name = mw.name;
        p.kind = mw.kind;
        m::scenario one;
        one.file = s.file;
        one.name = s.name + "/" + mw.name;
        one.seed = s.seed;
        one.hosts = s.hosts;
        for (auto& h : one.hosts) {  // the hardware is what it is: the profile decides
            h.interrupts.reset();
            h.throttle.reset();
        }
        m::scenario_cable c = s.cables.at(0);
        c.cfg = cable;
        c.plugged = true;
        one.cables = {c};
        m::scenario_workload w = *it;
        w.start = sc_core::SC_ZERO_TIME;
        // What the hosts moved (odl perf sends at least 16 messages).
        if (mw.kind != m::workload_kind::pingpong && !m::is_collective(mw.kind) && mw.messages > 0)
            w.count = static_cast<unsigned>(std::min<std::uint64_t>(mw.messages, 1u << 30));
        one.workloads = {w};
        // Long enough for profiles fitted to slow hosts; the run ends when
        // nothing is left to do.
        one.duration = sc_core::sc_time(3600, sc_core::SC_SEC);
        m::run_options ro;
        ro.trace_frames = false;
        ro.platform_override = profile;
        ro.pingpong_timeout = sc_core::sc_time(10, sc_core::SC_SEC);
        const m::run_result r = m::run_scenario(one, cal, ro);
        const m::workload_result& wr = r.workloads.at(0);
        p.completed = wr.completed;
        if (mw.kind == m::workload_kind::pingpong) {
            if (!wr.latency_us.empty()) {
                p.p50 = wr.p50_us;
                p.p99 = wr.p99_us;
                p.mean = wr.mean_us;
                p.cdf = cdf_of(wr.latency_us);
            }
        } else if (m::is_collective(mw.kind)) {
            if (wr.completed) {
                p.time_us = wr.time_us;
                p.gbps = wr.busbw_gbps;
            }
        } else if (wr.messages_received > 0) {
            p.gbps = wr.gbps;
        }
        out.push_back(std::move(p));
    }
    return out;
}

}  // namespace odl::cli::hil_model
