// SPDX-License-Identifier: MIT
// The NCCL plugin's per-process statistics files (odl/wire/nccl_stats.h:
// nccl-net-<pid>.stats in a runtime directory, shared mappings the plugin
// updates), read for `odl stats` and odl-daemon alike.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace odl::host {

/// One JSON object per plugin process whose file in @dir is a stats file:
/// {pid, alive, process, links: [{name, peer, link_state, counters...}]}.
/// @clean removes the files of processes that have exited (and leaves them out).
/// @skipped, when given, gets {file, why} for each nccl-net-*.stats file that
/// is not a statistics file of this version (short, damaged, another release).
nlohmann::json plugin_stats(const std::string& dir, bool clean = false, nlohmann::json* skipped = nullptr);

/// What odl-daemon reads: every user's runtime folder under @root
/// (<root>/run/user/UID/odl, UIDs in order), then @extra_dirs.
/// {"dirs": [...], "processes": [plugin_stats() of each dir, in order]};
/// @running_only leaves out the processes that have exited.
nlohmann::json plugin_stats_of_host(const std::string& root, const std::vector<std::string>& extra_dirs,
                                    bool running_only = false);

}  // namespace odl::host
