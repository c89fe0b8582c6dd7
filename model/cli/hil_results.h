// SPDX-License-Identifier: MIT
// A HIL run's results as `odl hil run` wrote them (report.json), read back
// for `odl hil compare` and `odl hil calibrate`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "odl/model/scenario/scenario.h"

namespace odl::cli::hil_model {

namespace m = odl::model;

struct measured_workload {
    std::string name;
    m::workload_kind kind{};
    std::uint64_t size = 0;
    std::uint64_t messages = 0;  ///< what really moved (odl perf may send more than asked)
    std::optional<double> p50, p99, mean, gbps;  ///< collectives: gbps is the bus bandwidth
    std::optional<double> time_us;  ///< collectives: the median call
    std::vector<double> cdf;     ///< one-way us at 0..100 %, when the host sent it
};

struct measured_run {
    std::string dir;       ///< the results folder
    std::string scenario;  ///< its name
    std::string pair, profile, expect, inventory;
    std::string date;      ///< report.json's time (UTC, from the folder or the file)
    std::string hosts;     ///< "a: ..., b: ..." for provenance
    unsigned runs = 1;     ///< > 1: the median of this many runs (median_of)
    std::vector<measured_workload> workloads;  ///< those that ran and completed
};

/// Reads @dir/report.json. Throws std::runtime_error naming the file and
/// what is missing (not a HIL report, a failed run, no measured workload).
measured_run load_measured(const std::string& dir);

/// Several runs of one scenario as one: per workload the median of each
/// metric, the distribution of the run whose p50 is the median; dir is
/// @dir, date the first run's. Throws when the runs hold other workloads.
measured_run median_of(const std::vector<measured_run>& runs, const std::string& dir);

}  // namespace odl::cli::hil_model
