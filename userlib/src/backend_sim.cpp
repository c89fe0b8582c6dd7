// SPDX-License-Identifier: MIT
// The sim backend: the frame engine over a link of the model server
// (odl-linkd --sim), which decides when each frame arrives.
#include <memory>

#include "backend.h"
#include "engine.h"
#include "link_sim.h"

namespace odl {

std::unique_ptr<backend> open_sim_backend(const open_config& cfg) {
    // The two ends may be in different processes that share no memory the
    // model knows of: no single-copy rendezvous.
    open_config c = cfg;
    c.rndv_min_bytes = 0;
    return std::make_unique<engine>(open_sim_link(cfg.index), c);
}

}  // namespace odl
