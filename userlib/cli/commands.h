// SPDX-License-Identifier: MIT
// One registration function per `odl` subcommand; each lives in cmd_<name>.cpp.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace odl::cli {

/// Adds `odl test [--label L]`: builds and runs the suite through ctest.
void add_test_command(CLI::App& app);
/// Adds `odl perf <bandwidth|latency|jitter|latency-load|mimo>`.
void add_perf_command(CLI::App& app);
/// Adds `odl stats [--json] [--dir D] [--clean]`: the NCCL plugin's statistics.
void add_stats_command(CLI::App& app);
/// Adds `odl doctor [--json] [--expect genNxL] [--no-nccl]`: the first broken layer.
void add_doctor_command(CLI::App& app);
/// Adds `odl link [--json] [--expect genNxL]`: per peer, the link and device state.
void add_link_command(CLI::App& app);
/// Adds `odl vm up|down|exec A|B CMD|console A|B|cable plug|unplug|status`.
void add_vm_command(CLI::App& app);
/// Adds `odl package [--build-dir D] [--out D]`: the Debian packages (cpack).
void add_package_command(CLI::App& app);
/// Adds `odl pair`, `odl files serve DIR`, `odl cp` and `odl sync`: the file service.
void add_files_commands(CLI::App& app);
/// Adds `odl mount MOUNTPOINT [peer:PATH]`: the peer's folder through FUSE.
void add_mount_command(CLI::App& app);
/// Adds `odl hil check|deploy <inventory>`: a pair of hosts over SSH (hil/).
void add_hil_command(CLI::App& app);

/// Adds `odl run` and `odl model` to the help; they live in odl-model
/// (model/cli), which forward_to_model() execs.
void add_model_forwards(CLI::App& app);
/// When argv[1] is a modelling command, execs odl-model with the same
/// arguments (looked for next to this binary, then on PATH). Returns only
/// when argv[1] is not one: -1; or when odl-model cannot be run: the exit
/// status, after one line on stderr naming the package that provides it.
int forward_to_model(int argc, char** argv);
/// This binary's resolved path ("" if unknown).
std::string self_exe();
/// Execs odl-model with @words as its arguments (as forward_to_model does);
/// returns only when it cannot be run: the exit status, after one line.
int exec_model(const std::vector<std::string>& words);

}  // namespace odl::cli
