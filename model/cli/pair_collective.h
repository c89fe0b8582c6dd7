// SPDX-License-Identifier: MIT
// A scenario's collective (allreduce, allgather) on a pair: one NCCL rank
// per host, torch.distributed through the ODL plugin over the link under
// test, every result checked exactly (plugin/gpu/allreduce_check.py, shipped
// in odl-nccl-plugin). Hosts without a GPU, PyTorch or the plugin skip it
// with the reason, never a pass.
#pragma once

#include <string>

#include "pair_run.h"

namespace odl::cli::pair {

struct collective_opts {
    int port = 29500;  ///< MASTER_PORT of the rendezvous on host 0 (torch's default)
    /// Files of the rank started in the background on host 1; unique per run.
    std::string rank1_files = "/tmp/odl-run-nccl";
};

/// Runs @w (two hosts) on @tb and fills @r: run false with the reason when a
/// host cannot take part, else completed, time_us, gbps (bus bandwidth) or
/// the error. Never leaves the background rank running.
void run_collective(target& tb, const m::scenario_workload& w, wl_result& r, const collective_opts& o = {});

/// Reads rank 0's "ODL-RESULT {json}" line for @op and @size from @out into
/// @r; "" when it was there and well formed, else what is wrong.
std::string read_collective_result(const std::string& out, const std::string& op, std::uint64_t size,
                                   wl_result& r);

}  // namespace odl::cli::pair
