// SPDX-License-Identifier: MIT
// Builds and runs a modelled system.
#include "odl/model/scenario/system.h"

#include <fmt/format.h>

namespace odl::model {

system_model::system_model(const std::vector<host_spec>& hs, const std::vector<cable_spec>& cs,
                           const link_calibration& link, std::uint64_t seed, bool trace_frames)
    : sched("sched"), log(trace_frames), cable_specs(cs) {
    for (std::size_t i = 0; i < hs.size(); ++i) {
        const host_spec& s = hs[i];
        host h;
        h.name = s.name;
        h.mem = std::make_unique<local_memory>();
        router_config rc;
        rc.lane_ports = s.ports;
        // Unique per host (Linux detects loops on equal UIDs).
        rc.uid = 0x4f444c0000000000ull | ((i + 1) << 8) | (seed & 0xff);
        rc.hop_latency = link.router_hop;
        rc.dma_credits = link.dma_credits;
        h.rt = std::make_unique<router>(fmt::format("{}_router", s.name).c_str(), sched, log, rc);
        nhi_config nc;
        nc.timing = s.plat.nhi;
        nc.copy_limit = s.copy_limit;
        nc.irq = s.irq;
        h.dev = std::make_unique<nhi>(fmt::format("{}_nhi", s.name).c_str(), sched, log, *h.rt,
                                      *h.mem, nc);
        h.drv = std::make_unique<host_driver>(fmt::format("{}_drv", s.name).c_str(), sched, log,
                                              *h.dev, *h.mem, s.plat.host, s.ports,
                                              seed * 0x2545f4914f6cdd1dull + 0x100 + i);
        h.drv->bus.bind(h.dev->bar0);
        hosts.push_back(std::move(h));
    }
    for (std::size_t i = 0; i < cs.size(); ++i) {
        const cable_spec& c = cs[i];
        // Each cable has its own stream derived from the scenario seed.
        const std::uint64_t cseed = seed * 0x9e3779b97f4a7c15ull + i + 1;
        auto cab = std::make_unique<cable>(fmt::format("cable{}", i).c_str(), sched, log, c.cfg,
                                           link.physics, link.link_train, cseed);
        hosts.at(c.host_a).rt->connect(c.port_a, *cab, 0);
        hosts.at(c.host_b).rt->connect(c.port_b, *cab, 1);
        cables.push_back(std::move(cab));
    }
}

system_model::~system_model() {
    // Modules go in reverse order of creation, while their context is current.
    for (auto& h : hosts) {
        h.drv.reset();
        h.dev.reset();
    }
    cables.clear();
    hosts.clear();
}

void system_model::start(std::function<void()> ready) {
    for (std::size_t i = 0; i < cables.size(); ++i)
        if (cable_specs[i].plugged) cables[i]->plug();
    auto left = std::make_shared<std::size_t>(hosts.size());
    for (auto& h : hosts)
        h.drv->start([left, ready] {
            if (--*left == 0 && ready) ready();
        });
}

void system_model::run_until(const sc_core::sc_time& t) {
    sched.run_until(t);
}

}  // namespace odl::model
