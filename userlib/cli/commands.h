// SPDX-License-Identifier: MIT
// One registration function per `odl` subcommand; each lives in cmd_<name>.cpp.
#pragma once

#include <CLI/CLI.hpp>

namespace odl::cli {

/// Adds `odl test [--label L]`: builds and runs the suite through ctest.
void add_test_command(CLI::App& app);
/// Adds `odl perf <bandwidth|latency|jitter|latency-load|mimo>`.
void add_perf_command(CLI::App& app);
/// Adds `odl stats [--json] [--dir D] [--clean]`: the NCCL plugin's statistics.
void add_stats_command(CLI::App& app);
/// Adds `odl vm up|down|exec A|B CMD|console A|B|cable plug|unplug|status`.
void add_vm_command(CLI::App& app);

/// Adds `odl run <scenario.yaml> [--on model]`: scenario replay.
void add_run_command(CLI::App& app);
/// Adds `odl model sweep|report|calibrate`: latency modelling.
void add_model_command(CLI::App& app);

}  // namespace odl::cli
