// SPDX-License-Identifier: MIT
// Time-ordered action queue driven by one SystemC method process.
#include "odl/model/core/scheduler.h"

#include <algorithm>
#include <limits>

namespace odl::model {

using sc_core::sc_time;

namespace {
/// Marks the scheduler as running actions (now() reads its clock) for the
/// lifetime of one activation, also when an action throws.
struct active_guard {
    bool& running;
    bool& active;
    active_guard(bool& r, bool& a) : running(r), active(a) { running = active = true; }
    ~active_guard() { running = active = false; }
};
}  // namespace

scheduler::scheduler(sc_core::sc_module_name name) : sc_module(name) {
    using SC_CURRENT_USER_MODULE = scheduler;  // what SC_HAS_PROCESS would declare
    SC_METHOD(run);
    sensitive << m_wake;
    dont_initialize();
}

scheduler::~scheduler() {
    for (const key& k : m_heap) {
        task& tk = *m_slot_ptr[k.slot];
        tk.destroy(tk.buf);
    }
}

std::uint32_t scheduler::alloc_slot() {
    if (m_free.empty()) {
        const auto first = static_cast<std::uint32_t>(m_slot_ptr.size());
        m_blocks.emplace_back(new task[k_block]);
        task* b = m_blocks.back().get();
        for (std::uint32_t i = 0; i < k_block; ++i) {
            m_slot_ptr.push_back(b + i);
            m_free.push_back(first + k_block - 1 - i);
        }
    }
    const std::uint32_t s = m_free.back();
    m_free.pop_back();
    return s;
}

void scheduler::push(const sc_time& t, std::uint64_t seq, std::uint32_t slot) {
    const sc_time cur = now();
    const sc_time when = t < cur ? cur : t;
    m_heap.push_back(key{when, seq, slot});
    std::push_heap(m_heap.begin(), m_heap.end(), later{});
    // While run() is active it notifies once when it returns. Otherwise an
    // earlier notification replaces a later pending one (sc_event rules).
    if (!m_running && m_heap.front().slot == slot)
        m_wake.notify(when - sc_core::sc_time_stamp());
}

void scheduler::run() {
    const sc_time kernel_t = sc_core::sc_time_stamp();
    const std::uint64_t kernel = kernel_t.value();
    // Actions up to `limit` run in this activation: those due now and, when
    // run_until() allows it, later ones that nothing else in the kernel
    // could precede (no other activity before them, before the horizon).
    std::uint64_t limit = kernel;
    if (m_horizon.value() > kernel && !sc_core::sc_pending_activity_at_current_time()) {
        std::uint64_t other = std::numeric_limits<std::uint64_t>::max();
        if (sc_core::sc_pending_activity_at_future_time())
            other = kernel + sc_core::sc_time_to_pending_activity().value();
        limit = std::min<std::uint64_t>(m_horizon.value(), other) - 1;
    }
    {
        active_guard g(m_running, s_active);
        while (!m_heap.empty() && m_heap.front().t.value() <= limit) {
            std::pop_heap(m_heap.begin(), m_heap.end(), later{});
            const key k = m_heap.back();
            m_heap.pop_back();
            s_now = k.t;
            ++m_run;
            task& tk = *m_slot_ptr[k.slot];
            tk.call(tk.buf);
            tk.destroy(tk.buf);
            m_free.push_back(k.slot);
        }
    }
    if (!m_heap.empty()) m_wake.notify(m_heap.front().t - kernel_t);
}

void scheduler::run_until(const sc_time& t) {
    const sc_time cur = sc_core::sc_time_stamp();
    if (t <= cur) return;
    m_horizon = t;
    sc_core::sc_start(t - cur);
    m_horizon = sc_core::SC_ZERO_TIME;
}

}  // namespace odl::model
