// SPDX-License-Identifier: MIT
// Shared helpers for model tests: a plain platform and a two-host system.
#pragma once

#include <memory>
#include <vector>

#include "odl/model/scenario/system.h"

namespace odl::model::testing {

/// A platform with simple round numbers, so expected times are easy to derive.
inline platform plain_platform(bool interrupts = false) {
    platform p;
    p.name = "test";
    p.nhi.pcie_rtt = sc_core::sc_time(800, sc_core::SC_NS);
    p.nhi.pcie_write = sc_core::sc_time(300, sc_core::SC_NS);
    p.nhi.pcie_gbps = 50.0;
    p.nhi.frame_overhead = sc_core::sc_time(20, sc_core::SC_NS);
    p.host.post = sc_core::sc_time(200, sc_core::SC_NS);
    p.host.post_frame = sc_core::sc_time(40, sc_core::SC_NS);
    p.host.completion_frame = sc_core::sc_time(60, sc_core::SC_NS);
    p.host.mmio = sc_core::sc_time(150, sc_core::SC_NS);
    p.host.completion = sc_core::sc_time(100, sc_core::SC_NS);
    p.host.irq_latency = sc_core::sc_time(5, sc_core::SC_US);
    p.host.poll_period = sc_core::sc_time(100, sc_core::SC_NS);
    p.host.interrupts = interrupts;
    return p;
}

inline link_calibration plain_link() {
    link_calibration l;
    l.router_hop = sc_core::sc_time(150, sc_core::SC_NS);
    l.link_train = sc_core::sc_time(20, sc_core::SC_US);
    return l;
}

/// Two hosts "a" and "b", one cable between their port 1.
inline std::unique_ptr<system_model> two_hosts(const platform& pa, const platform& pb,
                                               const link_config& cfg,
                                               std::uint64_t seed = 1,
                                               bool trace = true) {
    std::vector<host_spec> hs(2);
    hs[0].name = "a";
    hs[0].plat = pa;
    hs[1].name = "b";
    hs[1].plat = pb;
    cable_spec c;
    c.cfg = cfg;
    return std::make_unique<system_model>(hs, std::vector<cable_spec>{c}, plain_link(), seed,
                                          trace);
}

inline sc_core::sc_time ps(double v) { return sc_core::sc_time(v, sc_core::SC_PS); }

}  // namespace odl::model::testing
