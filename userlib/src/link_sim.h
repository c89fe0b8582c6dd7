// SPDX-License-Identifier: MIT
// The sim link: one end of a modelled cable served by odl-linkd --sim. Real
// frames travel through the model server, which decides when each arrives
// (protocol: include/odl/wire/sim.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "link.h"

namespace odl {

/// How far behind the model's due time frames reached this end.
struct sim_lag {
    uint64_t frames = 0;       ///< frames received
    uint64_t late_frames = 0;  ///< received later than due by more than the threshold
    uint64_t max_ns = 0;       ///< the largest delay past due
    uint64_t threshold_ns = 0;
};

/// The model server's socket: ODL_SIM_SOCKET, else
/// ${XDG_RUNTIME_DIR:-/tmp}/odl-sim-<uid>.sock; ODL_SIM_SOCKET=inproc: the
/// in-process model's, started by the first call (sim_inproc.h).
std::string sim_socket_path();

/// Which end of a modelled link to ask for.
enum class sim_end { from_env, a, b };

/// Connects to the model server and asks for an end (@end; from_env:
/// ODL_SIM_END=a|b, else whichever is free). The link reports `connecting`
/// until both ends are held and the modelled link is up. Throws odl::error
/// when no server answers or it refuses.
std::unique_ptr<link> open_sim_link(uint32_t index, sim_end end = sim_end::from_env);

/// Lag figures of a sim link (zeros for any other link).
sim_lag sim_link_lag(const link& l);

}  // namespace odl
