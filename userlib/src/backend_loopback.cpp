// SPDX-License-Identifier: MIT
// The loopback backend: the frame engine over a shared-memory link.
#include <memory>

#include "backend.h"
#include "engine.h"
#include "link_loopback.h"

namespace odl {

namespace {

/// Both ends share this kernel: offer single-copy rendezvous (the engine
/// uses it only if the peer offers it too).
open_config with_rndv(open_config c, const link& l) {
    c.rndv_min_bytes = loopback_rndv_min_bytes();
    if (c.rndv_min_bytes) c.rndv_peer_pid = [&l] { return loopback_peer_pid(l); };
    return c;
}

}  // namespace

std::unique_ptr<backend> open_loopback_backend(const open_config& cfg) {
    auto l = open_loopback_link(cfg.index);
    const open_config c = with_rndv(cfg, *l);  // the engine owns the link as long as its config
    return std::make_unique<engine>(std::move(l), c);
}

std::pair<std::unique_ptr<backend>, std::unique_ptr<backend>> open_loopback_backend_pair(const open_config& cfg) {
    auto [a, b] = open_loopback_pair();
    open_config ca = cfg, cb = cfg;
    ca.index = cb.index = 0;
    ca = with_rndv(ca, *a);
    cb = with_rndv(cb, *b);
    return {std::make_unique<engine>(std::move(a), ca), std::make_unique<engine>(std::move(b), cb)};
}

}  // namespace odl
