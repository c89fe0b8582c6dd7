// SPDX-License-Identifier: MIT
// Reads a HIL run's report.json back (the format pair_run.h writes).
#include "hil_results.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace odl::cli::hil_model {

namespace {

using nlohmann::json;

std::optional<double> number(const json& o, const char* key) {
    if (!o.is_object() || !o.contains(key) || !o[key].is_number()) return std::nullopt;
    return o[key].get<double>();
}

std::string text(const json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}

m::workload_kind kind_of(const std::string& file, const std::string& t) {
    for (auto k : {m::workload_kind::pingpong, m::workload_kind::stream, m::workload_kind::bidir,
                   m::workload_kind::allreduce, m::workload_kind::allgather})
        if (m::to_string(k) == t) return k;
    throw std::runtime_error(fmt::format("{}: unknown workload type '{}'", file, t));
}

}  // namespace

measured_run load_measured(const std::string& dir) {
    const std::string file = dir + "/report.json";
    std::ifstream f(file);
    if (!f) throw std::runtime_error(fmt::format("{}: cannot read (not a results folder of odl hil run?)", file));
    json j;
    try {
        j = json::parse(f);
    } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("{}: not JSON: {}", file, e.what()));
    }
    if (!j.is_object() || !j.contains("hosts") || !j["hosts"].is_object() || !j.contains("workloads"))
        throw std::runtime_error(
            fmt::format("{}: not the report of a HIL run (no 'hosts'; odl run --on vm and the model "
                        "write other reports)",
                        file));
    if (j.contains("error") && j["error"].is_string())
        throw std::runtime_error(fmt::format("{}: the run failed ({}); nothing measured to use", file,
                                             j["error"].get<std::string>()));
    const json& h = j["hosts"];
    measured_run r;
    r.dir = dir;
    r.scenario = text(j, "scenario");
    r.pair = text(h, "pair");
    r.profile = text(h, "profile");
    r.expect = text(h, "expect");
    r.inventory = text(h, "inventory");
    r.date = text(h, "measured_at");
    for (const char* role : {"a", "b"})
        if (h.contains(role))
            r.hosts += fmt::format("{}{}: {}", r.hosts.empty() ? "" : ", ", role, text(h[role], "target"));
    if (r.scenario.empty() || r.pair.empty() || r.profile.empty())
        throw std::runtime_error(fmt::format("{}: expected scenario, hosts.pair and hosts.profile", file));
    if (!j["workloads"].is_array()) throw std::runtime_error(fmt::format("{}: 'workloads' is not a list", file));
    for (const auto& w : j["workloads"]) {
        if (!w.value("run", false) || !w.value("completed", false)) continue;
        measured_workload mw;
        mw.name = text(w, "name");
        mw.kind = kind_of(file, text(w, "type"));
        mw.size = w.value("size_bytes", std::uint64_t(0));
        mw.messages = w.contains("messages_received") && w["messages_received"].is_number_unsigned()
                          ? w["messages_received"].get<std::uint64_t>()
                          : w.value("count", std::uint64_t(0));
        if (w.contains("one_way_us")) {
            const json& l = w["one_way_us"];
            mw.p50 = number(l, "p50");
            mw.p99 = number(l, "p99");
            mw.mean = number(l, "mean");
            if (l.contains("cdf") && l["cdf"].is_array())
                for (const auto& v : l["cdf"])
                    if (v.is_number()) mw.cdf.push_back(v.get<double>());
        }
        mw.gbps = number(w, m::is_collective(mw.kind) ? "busbw_gbps" : "gbps");
        mw.time_us = number(w, "time_us");
        if (mw.name.empty() || mw.size == 0) throw std::runtime_error(fmt::format("{}: a workload without name or size", file));
        r.workloads.push_back(std::move(mw));
    }
    if (r.workloads.empty())
        throw std::runtime_error(fmt::format("{}: no workload ran to completion; nothing measured to use", file));
    return r;
}

measured_run median_of(const std::vector<measured_run>& runs, const std::string& dir) {
    if (runs.empty()) throw std::runtime_error("no runs to take the median of");
    measured_run out = runs.front();
    out.dir = dir;
    out.runs = static_cast<unsigned>(runs.size());
    for (std::size_t w = 0; w < out.workloads.size(); ++w) {
        measured_workload& mw = out.workloads[w];
        std::vector<const measured_workload*> same;
        for (const auto& r : runs) {
            const auto it = std::find_if(r.workloads.begin(), r.workloads.end(),
                                         [&](const measured_workload& x) { return x.name == mw.name; });
            if (it == r.workloads.end() || it->kind != mw.kind)
                throw std::runtime_error(fmt::format("{}: workload {} did not complete there; the runs differ",
                                                     r.dir, mw.name));
            same.push_back(&*it);
        }
        const auto median = [&](std::optional<double> measured_workload::*field) -> std::optional<double> {
            std::vector<double> v;
            for (const auto* x : same)
                if (x->*field) v.push_back(*(x->*field));
            if (v.empty()) return std::nullopt;
            std::sort(v.begin(), v.end());
            const std::size_t n = v.size();
            return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
        };
        mw.p50 = median(&measured_workload::p50);
        mw.p99 = median(&measured_workload::p99);
        mw.mean = median(&measured_workload::mean);
        mw.gbps = median(&measured_workload::gbps);
        mw.time_us = median(&measured_workload::time_us);
        if (mw.p50) {  // the distribution of the run nearest the median p50
            const auto* best = same.front();
            for (const auto* x : same)
                if (x->p50 && std::fabs(*x->p50 - *mw.p50) < std::fabs(best->p50.value_or(1e300) - *mw.p50)) best = x;
            mw.cdf = best->cdf;
        }
    }
    return out;
}

}  // namespace odl::cli::hil_model
