// SPDX-License-Identifier: MIT
// The NCCL plugin's per-process statistics files (odl/wire/nccl_stats.h:
// nccl-net-<pid>.stats in a runtime directory, shared mappings the plugin
// updates), read for `odl stats` and odl-daemon alike.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace odl::host {

/// One JSON object per plugin process whose file in @dir is a stats file:
/// {pid, alive, process, links: [{name, peer, link_state, counters...}]}.
/// @clean removes the files of processes that have exited (and leaves them out).
nlohmann::json plugin_stats(const std::string& dir, bool clean = false);

}  // namespace odl::host
