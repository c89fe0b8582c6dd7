// SPDX-License-Identifier: MIT
// A scenario: hosts, cables, timeline events, workloads and assertions,
// loaded from YAML (reference: docs/scenarios.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <systemc>

#include "odl/model/cable/link_config.h"
#include "odl/model/nhi/irq_unit.h"

namespace odl::model {

struct scenario_host {
    std::string name;
    std::string platform;
    std::optional<bool> interrupts;   ///< overrides the platform's completion mode
    std::optional<unsigned> throttle; ///< overrides the platform's throttle (256 ns units)
    irq_impl nhi = irq_impl::model;   ///< the NHI's interrupt unit: C++, RTL or both
    unsigned ports = 0;               ///< USB4 ports used (from the cables)
};

struct scenario_cable {
    unsigned host_a = 0, port_a = 1, host_b = 0, port_b = 1;
    link_config cfg;
    bool plugged = true;
};

enum class event_kind { plug, unplug, ber, degrade, retrain, host_reset };

struct scenario_event {
    sc_core::sc_time at;
    event_kind kind = event_kind::plug;
    unsigned cable = 0;
    unsigned host = 0;
    double ber = 0;
    generation gen = generation::gen4;
    unsigned lanes = 2;
    sc_core::sc_time down;  ///< host_reset: time until the driver restarts
};

enum class workload_kind { pingpong, stream, bidir, allreduce, allgather };

/// A ring collective over `hosts` (allreduce, allgather), not a pair.
inline bool is_collective(workload_kind k) {
    return k == workload_kind::allreduce || k == workload_kind::allgather;
}

struct scenario_workload {
    std::string name;
    workload_kind kind = workload_kind::pingpong;
    std::vector<unsigned> hosts;  ///< from, to (pingpong/stream/bidir) or the ring
    std::uint64_t size = 64;
    unsigned count = 1;           ///< iterations or messages
    sc_core::sc_time start;       ///< after all hosts are ready
};

struct scenario_assertion {
    std::string workload;  ///< empty: a scenario-wide metric
    std::string metric;
    std::optional<double> max, min;
    std::string where;     ///< file:line, for the report
};

struct scenario {
    std::string file;
    std::string name;
    std::string description;
    std::uint64_t seed = 1;
    std::string calibration;  ///< path; empty = the shipped default
    sc_core::sc_time duration;
    std::vector<scenario_host> hosts;
    std::vector<scenario_cable> cables;
    std::vector<scenario_event> events;
    std::vector<scenario_workload> workloads;
    std::vector<scenario_assertion> assertions;
};

/// Loads and checks a scenario. Throws std::runtime_error "file:line: expected ..."
/// on malformed YAML and names the reason for impossible configurations.
scenario load_scenario(const std::string& path);

std::string_view to_string(workload_kind k);
/// Metrics a workload of @k reports (assertions are checked against these).
std::vector<std::string> metrics_of(workload_kind k);
/// Scenario-wide metrics.
std::vector<std::string> global_metrics();

}  // namespace odl::model
