// SPDX-License-Identifier: MIT
// Replays a scenario on the model and collects results, assertions and the
// event trace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "odl/model/host/platform.h"
#include "odl/model/scenario/scenario.h"

namespace odl::model {

struct run_options {
    bool trace_frames = true;  ///< per-frame lines in the trace (off for sweeps)
    std::uint32_t copy_limit = 4096;  ///< payload bytes moved per frame (>= 32)
    /// Overrides every host's platform when not empty (sweeps).
    std::string platform_override;
    /// A ping without its pong after this (plus 8 ns per byte) counts as lost;
    /// HIL predictions raise it for profiles fitted to slow hosts.
    sc_core::sc_time pingpong_timeout = sc_core::sc_time(1, sc_core::SC_MS);
    /// Every host's interrupt unit when set (else each host's `nhi:`).
    std::optional<irq_impl> nhi_override;
};

struct workload_result {
    std::string name;
    workload_kind kind = workload_kind::pingpong;
    std::uint64_t size = 0;
    unsigned count = 0;
    std::vector<double> latency_us;  ///< pingpong: one-way samples (RTT/2)
    double p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0, mean_us = 0, max_us = 0;
    double gbps = 0;                 ///< stream / bidir: payload received
    double time_us = 0;              ///< allreduce: per iteration
    double busbw_gbps = 0;
    std::uint64_t messages_sent = 0, messages_received = 0, messages_lost = 0;
    bool completed = false;
};

struct assertion_result {
    std::string text;
    double value = 0;
    bool passed = false;
};

struct run_result {
    std::string name;
    std::uint64_t seed = 0;
    double simulated_us = 0;
    std::vector<workload_result> workloads;
    std::vector<double> link_down_noticed_us;  ///< one per link-down event
    std::vector<assertion_result> assertions;
    nlohmann::json counters;
    std::vector<std::string> warnings;
    std::string trace;
    std::uint64_t events = 0;  ///< scheduler actions run

    bool passed() const;
    double metric(const std::string& workload, const std::string& metric) const;
    /// False when @metric of @workload has no sample to judge (nothing arrived).
    bool measured(const std::string& workload, const std::string& metric) const;
    nlohmann::json to_json() const;
    std::string to_text() const;
};

/// The scenario metric link_down_noticed_us from one value per link-down
/// event (µs, negative: never noticed): the worst, and 1e30 when one was
/// never noticed (so any bound fails); 0 when the link never went down.
double worst_link_down_notice(const std::vector<double>& noticed_us);

/// Runs @s on the model with its seed and calibration.
run_result run_scenario(const scenario& s, const calibration& cal, const run_options& opt = {});
/// Loads the scenario's calibration (or the default) and runs it.
run_result run_scenario(const scenario& s, const run_options& opt = {});

/// Percentile (0..100) of @v by nearest rank; 0 when empty.
double percentile(std::vector<double> v, double p);

}  // namespace odl::model
