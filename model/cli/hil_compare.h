// SPDX-License-Identifier: MIT
// `odl hil compare`: measured vs predicted per workload and metric, the
// error against a stated tolerance, and the latency distributions plotted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hil_predict.h"
#include "hil_results.h"

namespace odl::cli::hil_model {

/// Tolerances in percent of the measured value.
struct tolerances {
    double latency = 10;    ///< p50 one-way latency
    /// p99 one-way latency; judged only when given: the model has no OS
    /// noise, so its p99 sits near its p50 and a host's tail is the host's.
    std::optional<double> tail;
    double bandwidth = 5;   ///< stream / bidir Gb/s
};

struct compare_row {
    std::string workload, metric;
    double measured = 0, predicted = 0;
    double error_pct = 0;   ///< (predicted - measured) / measured
    double tolerance_pct = 0;
    bool judged = true;     ///< false: shown, not part of the verdict
    bool passed = false;
    std::string note;       ///< why there is no prediction, when there is none
};

struct comparison {
    std::string scenario, pair, profile, calibration, cable, results_dir;
    unsigned runs = 1;  ///< measured values are the median of this many runs
    tolerances tol;
    std::vector<compare_row> rows;
    std::vector<std::string> plots;  ///< files written (SVG, PNG)
    std::vector<std::string> notes;  ///< plots not drawn and why

    bool passed() const;
    nlohmann::json to_json() const;
    std::string to_text() const;
};

/// The table of @measured against @predicted (same order, predict()'s output).
comparison compare(const measured_run& measured, const std::vector<predicted_workload>& predicted,
                   const tolerances& tol);

/// Per pingpong with both distributions: latency-<workload>.svg and, with
/// rsvg-convert (Debian librsvg2-bin), .png in @dir; records them in @c.
void plot_latency(comparison& c, const measured_run& measured, const std::vector<predicted_workload>& predicted,
                  const std::string& dir);

}  // namespace odl::cli::hil_model
