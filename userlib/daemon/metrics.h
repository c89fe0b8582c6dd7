// SPDX-License-Identifier: MIT
// The daemon's state and counters in the Prometheus text format (0.0.4):
// the same values the D-Bus API publishes, named and unitised the
// Prometheus way (base units: bytes, seconds; counters end in _total).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "host_view.h"

namespace odl::daemon {

/// The exposition of @v, with @version in odl_daemon_info, and of the
/// running NCCL plugin processes in @plugin (host::plugin_stats_of_host()'s
/// "processes" with running_only).
std::string render_metrics(const host::host_view& v, const std::string& version,
                           const nlohmann::json& plugin = nlohmann::json::array());

}  // namespace odl::daemon
