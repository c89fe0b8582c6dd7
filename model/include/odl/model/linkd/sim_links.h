// SPDX-License-Identifier: MIT
// odl-linkd --sim --links N: N modelled links behind one socket. SystemC has
// one simulation context per process, so each link is a process of its own
// (a sim_server, on a core of its own); this process routes each program's
// connection to the link its HELLO asks for and each control command to
// the link it names (docs/sim.md, "Several links").
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

#include "odl/model/linkd/sim_server.h"

namespace odl::model::linkd {

struct sim_links_config {
    std::string socket_path;   ///< where programs connect
    std::string control_path;  ///< optional: "cable plug|unplug LINK", "status [LINK]"
    bool verbose = false;
    /// One per link, in device order; their socket and control paths are
    /// unused (the router owns both).
    std::vector<sim_server_config> links;
};

/// Starts one process per link, serves until @stop (or until a link's
/// process ends: then it stops the others) and returns the exit status.
/// @in_child runs in each link process with its server before it serves
/// (e.g. to let a signal handler stop it).
int run_sim_links(sim_links_config cfg, const std::atomic<bool>& stop,
                  const std::function<void(sim_server*)>& in_child);

}  // namespace odl::model::linkd
