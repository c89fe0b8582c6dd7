// SPDX-License-Identifier: MIT
// The modelling commands of odl-model; `odl run|model ...` hands over to it.
#pragma once

#include <CLI/CLI.hpp>

namespace odl::cli {

/// Adds `run <scenario.yaml> [--on model|vm]`: scenario replay.
void add_run_command(CLI::App& app);
/// Adds `model sweep|report|calibrate`: latency modelling.
void add_model_command(CLI::App& app);
/// Adds `hil compare|calibrate`: a HIL pair's runs against the model.
void add_hil_model_command(CLI::App& app);

}  // namespace odl::cli
