// SPDX-License-Identifier: MIT
// `odl run <scenario> --on vm`: replays a scenario in the two-VM testbed
// (qemu-device/testbed.sh). What the testbed cannot emulate is refused or
// reported as "not applied on vm"; assertions it cannot measure are reported
// as "not evaluated", never as passed.
#pragma once

#include <string>

namespace odl::cli {

struct vm_run_opts {
    std::string file;          ///< scenario YAML
    std::string out;           ///< report folder (empty: <build>/runs/<name>-vm)
    std::string kernel = "6.12";
    std::string driver = "odl_tb5";  ///< odl_tb5 (odl perf, kernel backend) or tbnet (ping/iperf3)
    double time_scale = 1000;  ///< wall seconds per simulated second
    unsigned ping_cap = 20;    ///< tbnet: at most this many pings per pingpong workload
    unsigned stream_cap_mib = 8;  ///< at most this many MiB per stream workload
    bool json = false;
    std::string nhi_impl;      ///< the interrupt unit odl-linkd runs (empty: each host's `nhi:`)
    /// How a scenario's collectives run: "nccl" (a NCCL job per host, GPUs
    /// needed) or "plugin" (odl-plugin-collective); empty: the target's
    /// default (real hosts nccl, the VMs plugin: their guests have no GPU).
    std::string collectives;
    /// Deterministic mode (testbed.sh up --deterministic): the run's clock
    /// is the guests' simulated time, commands enter through the guests'
    /// mailboxes while the run stands still, ber events are scheduled ahead.
    bool deterministic = false;
    long long seed = -1;  ///< deterministic: QEMU's and the cable's seed (-1: the scenario's)
};

/// Runs the scenario on the VMs; returns the exit status (0 pass, 1 an
/// assertion failed or a workload did not complete, 2 bad input or not
/// emulable, 3 testbed failure, 130 interrupted). Always tears the testbed down.
int run_on_vm(const vm_run_opts& o);

}  // namespace odl::cli
