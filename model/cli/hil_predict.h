// SPDX-License-Identifier: MIT
// What the model predicts for a HIL run: each measured workload replayed
// alone on the model (the hosts run them one after another too), both hosts
// on one platform profile, the cable the pair is rated for.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hil_results.h"
#include "odl/model/host/platform.h"
#include "odl/model/scenario/scenario.h"

namespace odl::cli::hil_model {

struct predicted_workload {
    std::string name;
    m::workload_kind kind{};
    bool completed = false;
    std::optional<double> p50, p99, mean, gbps;  ///< collectives: gbps is the bus bandwidth
    std::optional<double> time_us;  ///< collectives: the median call
    std::vector<double> cdf;  ///< one-way us at 0..100 %
};

/// The cable of a pair rated @expect ("gen4x2"), @length_m long.
m::link_config cable_of(const std::string& expect, double length_m);

/// Replays each of @measured's workloads (found in @s by name) alone on the
/// model with @profile of @cal over @cable. Throws std::runtime_error when a
/// measured workload is not in the scenario (results of another scenario).
std::vector<predicted_workload> predict(const m::scenario& s, const m::calibration& cal,
                                        const std::string& profile, const m::link_config& cable,
                                        const measured_run& measured);

/// The 101-point distribution (0, 1, ..., 100 %) of @samples, as odl perf writes it.
std::vector<double> cdf_of(std::vector<double> samples);

}  // namespace odl::cli::hil_model
