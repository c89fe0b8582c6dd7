// SPDX-License-Identifier: MIT
// The model's YAML helpers: the project's typed getters (userlib/yaml/yaml_input.h)
// and durations as SystemC times.
#pragma once

#include <systemc>
#include <yaml_input.h>

namespace odl::model::yaml {

using namespace odl::yaml;

/// "10us", "1.5ms", "250ns", "2s", "100ps".
sc_core::sc_time get_time(const std::string& file, const YAML::Node& n, const char* what);

}  // namespace odl::model::yaml
