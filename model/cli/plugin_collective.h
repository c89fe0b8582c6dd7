// SPDX-License-Identifier: MIT
// A scenario's collective on hosts without a GPU: odl-plugin-collective
// (plugin/tools) as one rank per host, a ring all_reduce / all_gather driven
// through the ODL plugin's NCCL net API over the links under test, on host
// memory, every result checked by every rank. The ranks meet through a folder
// on each host; this runner carries the files each rank writes to the others.
#pragma once

#include <string>

#include "pair_run.h"

namespace odl::cli::pair {

/// Runs @w on @tb (its hosts, two or more, rank i on w.hosts[i]; the
/// scenario's parser has made sure neighbours share a cable) and fills
/// @r: completed, time_us, gbps (bus bandwidth) or the error. @folder is the
/// rendezvous folder made on every host (unique per run). Every rank is
/// stopped and every folder removed before it returns.
void run_plugin_collective(target& tb, const m::scenario_workload& w, wl_result& r, const std::string& folder);

}  // namespace odl::cli::pair
