// SPDX-License-Identifier: MIT
// Measured vs predicted (see hil_compare.h).
#include "hil_compare.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include <fmt/format.h>

#include "png.h"
#include "odl/model/sweep/svg_plot.h"

namespace odl::cli::hil_model {

namespace {

void add_row(comparison& c, const std::string& wl, const char* metric, const std::optional<double>& meas,
             const std::optional<double>& pred, std::optional<double> tol, bool completed) {
    if (!meas) return;  // not measured: nothing to judge
    compare_row r;
    r.workload = wl;
    r.metric = metric;
    r.measured = *meas;
    r.judged = tol.has_value();
    r.tolerance_pct = tol.value_or(0);
    if (!completed || !pred) {
        r.note = completed ? "the model reports no value" : "did not complete on the model";
    } else if (*meas <= 0) {
        r.predicted = *pred;
        r.note = "measured value is zero";
    } else {
        r.predicted = *pred;
        r.error_pct = (*pred - *meas) / *meas * 100.0;
        r.passed = std::fabs(r.error_pct) <= r.tolerance_pct;
    }
    c.rows.push_back(std::move(r));
}

}  // namespace

bool comparison::passed() const {
    return std::any_of(rows.begin(), rows.end(), [](const compare_row& r) { return r.judged; }) &&
           std::all_of(rows.begin(), rows.end(), [](const compare_row& r) { return !r.judged || r.passed; });
}

comparison compare(const measured_run& measured, const std::vector<predicted_workload>& predicted,
                   const tolerances& tol) {
    comparison c;
    c.scenario = measured.scenario;
    c.pair = measured.pair;
    c.results_dir = measured.dir;
    c.runs = measured.runs;
    c.tol = tol;
    for (std::size_t i = 0; i < measured.workloads.size() && i < predicted.size(); ++i) {
        const auto& mw = measured.workloads[i];
        const auto& pw = predicted[i];
        if (mw.kind == m::workload_kind::pingpong) {
            add_row(c, mw.name, "p50_us", mw.p50, pw.p50, tol.latency, pw.completed);
            add_row(c, mw.name, "p99_us", mw.p99, pw.p99, tol.tail, pw.completed);
        } else if (m::is_collective(mw.kind)) {
            // The model has the link and the hosts' drivers, not NCCL's or the
            // GPU's time per call: the bus bandwidth is judged, the time shown.
            add_row(c, mw.name, "busbw_gbps", mw.gbps, pw.gbps, tol.bandwidth, pw.completed);
            add_row(c, mw.name, "time_us", mw.time_us, pw.time_us, std::nullopt, pw.completed);
        } else {
            add_row(c, mw.name, "gbps", mw.gbps, pw.gbps, tol.bandwidth, pw.completed);
        }
    }
    return c;
}

nlohmann::json comparison::to_json() const {
    nlohmann::json j{{"scenario", scenario},
                     {"pair", pair},
                     {"profile", profile},
                     {"calibration", calibration},
                     {"model_cable", cable},
                     {"measured", results_dir},
                     {"measured_runs", runs},
                     {"tolerance_pct",
                      {{"p50_us", tol.latency},
                       {"p99_us", tol.tail ? nlohmann::json(*tol.tail) : nlohmann::json(nullptr)},
                       {"gbps", tol.bandwidth},
                       {"busbw_gbps", tol.bandwidth}}},
                     {"passed", passed()},
                     {"plots", plots}};
    j["rows"] = nlohmann::json::array();
    for (const auto& r : rows) {
        nlohmann::json o{{"workload", r.workload}, {"metric", r.metric}, {"measured", r.measured},
                         {"judged", r.judged}};
        if (r.judged) {
            o["tolerance_pct"] = r.tolerance_pct;
            o["passed"] = r.passed;
        }
        if (r.note.empty()) {
            o["predicted"] = r.predicted;
            o["error_pct"] = r.error_pct;
        } else {
            o["note"] = r.note;
        }
        j["rows"].push_back(o);
    }
    if (!notes.empty()) j["notes"] = notes;
    return j;
}

std::string comparison::to_text() const {
    std::string t = fmt::format("{} on pair {}: measured ({}{}) vs the model (profile {} of {}; cable {})\n", scenario,
                                pair, results_dir, runs > 1 ? fmt::format(", median of {} runs", runs) : "", profile,
                                calibration, cable);
    t += fmt::format("  {:<16} {:<8} {:>12} {:>12} {:>9} {:>10}  {}\n", "workload", "metric", "measured",
                     "model", "error", "tolerance", "result");
    for (const auto& r : rows) {
        const std::string bound = r.judged ? fmt::format("±{:g}%", r.tolerance_pct) : "-";
        const std::string verdict = !r.judged ? "(not judged)" : r.passed ? "PASS" : "FAIL";
        if (!r.note.empty()) {
            t += fmt::format("  {:<16} {:<8} {:>12.4g} {:>12} {:>9} {:>10}  {} ({})\n", r.workload, r.metric,
                             r.measured, "-", "-", bound, verdict, r.note);
            continue;
        }
        t += fmt::format("  {:<16} {:<8} {:>12.4g} {:>12.4g} {:>+8.1f}% {:>10}  {}\n", r.workload, r.metric,
                         r.measured, r.predicted, r.error_pct, bound, verdict);
    }
    for (const auto& p : plots) t += "  plot: " + p + "\n";
    for (const auto& n : notes) t += "  note: " + n + "\n";
    const auto judged = std::count_if(rows.begin(), rows.end(), [](const compare_row& r) { return r.judged; });
    const auto within = std::count_if(rows.begin(), rows.end(), [](const compare_row& r) { return r.judged && r.passed; });
    t += fmt::format("compare: {} of {} judged metrics within tolerance: {}\n", within, judged,
                     passed() ? "PASS" : "FAIL");
    return t;
}

void plot_latency(comparison& c, const measured_run& measured, const std::vector<predicted_workload>& predicted,
                  const std::string& dir) {
    bool converter_missing = false;
    for (std::size_t i = 0; i < measured.workloads.size() && i < predicted.size(); ++i) {
        const auto& mw = measured.workloads[i];
        const auto& pw = predicted[i];
        if (mw.kind != m::workload_kind::pingpong) continue;
        if (mw.cdf.size() != 101 || pw.cdf.size() != 101) {
            c.notes.push_back(fmt::format("{}: no latency plot ({} has no distribution)", mw.name,
                                          mw.cdf.size() != 101 ? "the measurement" : "the model"));
            continue;
        }
        // Cumulative distributions: percent of round trips at or below x.
        namespace svg = odl::model::svg;
        svg::chart ch;
        ch.title = fmt::format("{} / {}: one-way latency, measured on {} vs model ({})", c.scenario, mw.name, c.pair,
                               c.profile);
        ch.xlabel = "one-way latency, us";
        ch.ylabel = "percent of messages at or below";
        ch.logx = true;
        svg::series meas{"measured (" + c.pair + ")", {}}, model{"model (" + c.profile + ")", {}};
        for (int q = 0; q <= 100; ++q) {
            meas.points.emplace_back(std::max(mw.cdf[q], 1e-3), q);
            model.points.emplace_back(std::max(pw.cdf[q], 1e-3), q);
        }
        ch.lines = {meas, model};
        const std::string base = fmt::format("{}/latency-{}", dir, mw.name);
        {
            std::ofstream f(base + ".svg", std::ios::binary);
            f << svg::line_chart(ch);
            if (!f) throw std::runtime_error(fmt::format("cannot write {}.svg", base));
        }
        c.plots.push_back(base + ".svg");
        if (converter_missing) continue;
        const std::string why = svg_to_png(base + ".svg");
        if (why.empty()) {
            c.plots.push_back(base + ".png");
        } else {
            converter_missing = why.find("need rsvg-convert") != std::string::npos;
            c.notes.push_back(why);
        }
    }
}

}  // namespace odl::cli::hil_model
