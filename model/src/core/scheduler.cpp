// SPDX-License-Identifier: MIT
// Time-ordered action queue driven by one SystemC method process.
#include "odl/model/core/scheduler.h"

#include <algorithm>

namespace odl::model {

using sc_core::sc_time;

scheduler::scheduler(sc_core::sc_module_name name) : sc_module(name) {
    using SC_CURRENT_USER_MODULE = scheduler;  // what SC_HAS_PROCESS would declare
    SC_METHOD(run);
    sensitive << m_wake;
    dont_initialize();
}

void scheduler::at(const sc_time& t, action fn) {
    const sc_time when = std::max(t, now());
    m_heap.push_back(item{when, m_seq++, std::move(fn)});
    std::push_heap(m_heap.begin(), m_heap.end(), later{});
    // An earlier notification replaces a later pending one (sc_event rules).
    if (m_heap.front().seq == m_seq - 1) m_wake.notify(when - now());
}

void scheduler::run() {
    while (!m_heap.empty() && m_heap.front().t <= now()) {
        std::pop_heap(m_heap.begin(), m_heap.end(), later{});
        item it = std::move(m_heap.back());
        m_heap.pop_back();
        ++m_run;
        it.fn();
    }
    if (!m_heap.empty()) m_wake.notify(m_heap.front().t - now());
}

}  // namespace odl::model

