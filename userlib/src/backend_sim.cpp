// SPDX-License-Identifier: MIT
// The sim backend: the frame engine over a link of the model server
// (odl-linkd --sim), which decides when each frame arrives.
#include <memory>
#include <utility>

#include "backend.h"
#include "engine.h"
#include "link_sim.h"

namespace odl {

namespace {
/// The two ends may be in different processes that share no memory the
/// model knows of: no single-copy rendezvous.
open_config sim_config(const open_config& cfg) {
    open_config c = cfg;
    c.rndv_min_bytes = 0;
    return c;
}
}  // namespace

std::unique_ptr<backend> open_sim_backend(const open_config& cfg) {
    return std::make_unique<engine>(open_sim_link(cfg.index), sim_config(cfg));
}

std::pair<std::unique_ptr<backend>, std::unique_ptr<backend>> open_sim_backend_pair(const open_config& cfg) {
    auto a = std::make_unique<engine>(open_sim_link(cfg.index, sim_end::a), sim_config(cfg));
    auto b = std::make_unique<engine>(open_sim_link(cfg.index, sim_end::b), sim_config(cfg));
    return {std::move(a), std::move(b)};
}

}  // namespace odl
