// SPDX-License-Identifier: MIT
// The SystemC model behind odl-linkd: per host an NHI and a host router,
// one cable between the first two hosts' lane adapter 1. DMA goes to the
// host's QEMU through host_bus; a host whose QEMU is gone is unplugged.
#pragma once

#include <memory>
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
    link_config link;            ///< cable generation / lanes
    std::uint64_t seed = 1;      ///< bit-error randomness
    bool trace = false;          ///< keep the model's event trace
    /// Both NHIs' interrupt units; trace_fst gets -a / -b before .fst.
    irq_unit_options irq;
};

/// One per process (the SystemC kernel is global).
class sc_backend final : public model_backend {
public:
    explicit sc_backend(const sc_backend_config& cfg);
    ~sc_backend() override;
    sc_backend(const sc_backend&) = delete;
    sc_backend& operator=(const sc_backend&) = delete;

    unsigned host_count() const override { return 2; }
    device_info info(unsigned host) const override;
    nhi_port& nhi(unsigned host) override;
    void attach(unsigned host, host_bus* bus) override;
    void advance_to(std::uint64_t now_ps) override;
    std::uint64_t next_event_ps() const override;

    /// Scenario events: the cable itself (independent of host presence).
    bool set_cable(bool plugged) override;
    std::string describe() const override;
    std::string cable_event(const std::string& spec) override;
    int link_peer(unsigned h) const override {
        return m_cable.up() ? static_cast<int>(1 - h) : -1;
    }
    const trace_log& log() const { return m_log; }
    /// Fault injection on the cable (odl-linkd --fault): see fault.h.
    void set_tap(frame_tap tap) { m_cable.set_tap(std::move(tap)); }

private:
    struct host;
    void update_cable();

    sc_backend_config m_cfg;
    trace_log m_log;
    scheduler m_sched;
    cable m_cable;
    std::vector<std::unique_ptr<host>> m_hosts;
    bool m_cable_plugged = true;
};

}  // namespace odl::model::linkd
