// SPDX-License-Identifier: MIT
// The loopback backend: the frame engine over a shared-memory link.
#include <memory>

#include "backend.h"
#include "engine.h"
#include "link_loopback.h"

namespace odl {

std::unique_ptr<backend> open_loopback_backend(const open_config& cfg) {
    return std::make_unique<engine>(open_loopback_link(cfg.index), cfg);
}

std::pair<std::unique_ptr<backend>, std::unique_ptr<backend>> open_loopback_backend_pair(const open_config& cfg) {
    auto [a, b] = open_loopback_pair();
    open_config ca = cfg, cb = cfg;
    ca.index = cb.index = 0;
    return {std::make_unique<engine>(std::move(a), ca), std::make_unique<engine>(std::move(b), cb)};
}

}  // namespace odl
