// SPDX-License-Identifier: MIT
// A whole modelled system: hosts (memory, router, NHI, driver) joined by
// cables, in one fresh SystemC context.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "odl/model/cable/cable.h"
#include "odl/model/core/scheduler.h"
#include "odl/model/core/session.h"
#include "odl/model/core/trace.h"
#include "odl/model/host/driver.h"
#include "odl/model/host/platform.h"
#include "odl/model/nhi/host_memory.h"
#include "odl/model/nhi/nhi.h"
#include "odl/model/router/router.h"

namespace odl::model {

struct host_spec {
    std::string name;
    platform plat;
    unsigned ports = 1;  ///< USB4 ports (lane adapters)
    std::uint32_t copy_limit = ODL_NHI_FRAME_MAX_BYTES;
    irq_unit_options irq;  ///< the NHI's interrupt unit
};

struct cable_spec {
    unsigned host_a = 0, port_a = 1, host_b = 1, port_b = 1;
    link_config cfg;
    bool plugged = true;  ///< plugged at time 0
};

class system_model {
public:
    system_model(const std::vector<host_spec>& hosts, const std::vector<cable_spec>& cables,
                 const link_calibration& link, std::uint64_t seed, bool trace_frames);
    system_model(const system_model&) = delete;
    system_model& operator=(const system_model&) = delete;
    ~system_model();

    struct host {
        std::string name;
        std::unique_ptr<local_memory> mem;
        std::unique_ptr<router> rt;
        std::unique_ptr<nhi> dev;
        std::unique_ptr<host_driver> drv;
    };

    /// Starts every driver; @ready runs once all are ready.
    void start(std::function<void()> ready);
    /// Runs the simulation up to absolute time @t.
    void run_until(const sc_core::sc_time& t);

    sim_session session;  // first member: constructed before any module
    scheduler sched;
    trace_log log;
    std::vector<host> hosts;
    std::vector<std::unique_ptr<cable>> cables;
    std::vector<cable_spec> cable_specs;
};

}  // namespace odl::model
