// SPDX-License-Identifier: MIT
// The SystemC model behind odl-linkd: per host an NHI and a host router,
// cables between pairs of hosts (by default one, between hosts 0 and 1).
// Each cable takes the next USB4 port of both its hosts, in cable order.
// DMA goes to the host's QEMU through host_bus; a host whose QEMU is gone
// is unplugged.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "odl/model/cable/cable.h"
#include "odl/model/core/scheduler.h"
#include "odl/model/core/trace.h"
#include "odl/model/linkd/backend.h"
#include "odl/model/nhi/host_memory.h"
#include "odl/model/nhi/nhi.h"
#include "odl/model/router/router.h"

namespace odl::model::linkd {

struct sc_backend_config {
    link_config link;            ///< every cable's generation / lanes
    unsigned hosts = 2;          ///< 2..4
    /// Host pairs joined by a cable; empty: one cable between 0 and 1.
    std::vector<std::pair<unsigned, unsigned>> cables;
    std::uint64_t seed = 1;      ///< bit-error randomness
    bool trace = false;          ///< keep the model's event trace
    /// The NHIs' interrupt units; trace_fst gets -a / -b ... before .fst.
    irq_unit_options irq;
};

/// One per process (the SystemC kernel is global).
class sc_backend final : public model_backend {
public:
    explicit sc_backend(const sc_backend_config& cfg);
    ~sc_backend() override;
    sc_backend(const sc_backend&) = delete;
    sc_backend& operator=(const sc_backend&) = delete;

    unsigned host_count() const override { return static_cast<unsigned>(m_hosts.size()); }
    device_info info(unsigned host) const override;
    nhi_port& nhi(unsigned host) override;
    void attach(unsigned host, host_bus* bus) override;
    void advance_to(std::uint64_t now_ps) override;
    std::uint64_t next_event_ps() const override;

    /// Scenario events: a cable itself (independent of host presence).
    unsigned cable_count() const override { return static_cast<unsigned>(m_cables.size()); }
    bool set_cable(unsigned cable, bool plugged) override;
    std::string describe() const override;
    std::string cable_event(unsigned cable, const std::string& spec) override;
    std::string cable_stats(unsigned cable) const override;
    int link_peer(unsigned h) const override;
    const trace_log& log() const { return m_log; }
    /// Fault injection on cable 0 (odl-linkd --fault): see fault.h.
    void set_tap(frame_tap tap) { m_cables.at(0).c->set_tap(std::move(tap)); }
    /// Why @c cannot be built (hosts out of range, a self-loop, two cables
    /// between one pair, a host with more than 7); nullopt when it can.
    static std::optional<std::string> check(const sc_backend_config& c);

private:
    struct host;
    struct cable_slot {
        std::unique_ptr<cable> c;
        unsigned a = 0, b = 0;            ///< the hosts at ends 0 and 1
        unsigned adp_a = 0, adp_b = 0;    ///< their lane adapters
        bool plugged = true;
        /// Each pull (set_cable false), retrain or degrade: its model time and
        /// when a host first acknowledged the unplug event (0 while none has).
        struct down {
            std::uint64_t at_ps = 0, noticed_ps = 0;
        };
        std::vector<down> downs;
    };
    /// Host @h's CM acknowledged a hot-plug event on @adapter.
    void plug_acked(unsigned h, unsigned adapter, bool unplug);
    void update_cable(cable_slot& s);

    sc_backend_config m_cfg;
    trace_log m_log;
    scheduler m_sched;
    std::vector<cable_slot> m_cables;  // before the hosts: they go after them
    std::vector<std::unique_ptr<host>> m_hosts;
};

}  // namespace odl::model::linkd
