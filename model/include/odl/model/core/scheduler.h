// SPDX-License-Identifier: MIT
// Time-ordered action queue on top of the SystemC kernel: one SC_METHOD runs
// every action due now, so frame-level events cost no thread switches.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <systemc>

namespace odl::model {

/// Runs callbacks at absolute simulated times. Equal times run in the order
/// they were scheduled (a sequence number breaks ties), which keeps runs
/// deterministic.
class scheduler : public sc_core::sc_module {
public:
    using action = std::function<void()>;

    explicit scheduler(sc_core::sc_module_name name);
    scheduler(const scheduler&) = delete;
    scheduler& operator=(const scheduler&) = delete;

    /// Runs @fn at absolute time @t (clamped to now).
    void at(const sc_core::sc_time& t, action fn);
    /// Runs @fn @d after now.
    void after(const sc_core::sc_time& d, action fn) { at(now() + d, std::move(fn)); }
    static sc_core::sc_time now() { return sc_core::sc_time_stamp(); }

    /// Number of actions run so far (the benchmark's events).
    std::uint64_t events_run() const { return m_run; }
    bool idle() const { return m_heap.empty(); }

private:
    struct item {
        sc_core::sc_time t;
        std::uint64_t seq;
        action fn;
    };
    struct later {
        bool operator()(const item& a, const item& b) const {
            return a.t != b.t ? a.t > b.t : a.seq > b.seq;
        }
    };
    void run();

    std::vector<item> m_heap;
    sc_core::sc_event m_wake;
    std::uint64_t m_seq = 0;
    std::uint64_t m_run = 0;
};

}  // namespace odl::model
