// SPDX-License-Identifier: MIT
// Time-ordered action queue driven by one SystemC method process.
#include "odl/model/core/scheduler.h"

#include <algorithm>
#include <functional>
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
    s_direct = sc_core::SC_ZERO_TIME;  // a new simulation starts at 0
}

scheduler::~scheduler() {
    for (std::size_t i = m_head; i < m_q.size(); ++i) {
        task& tk = slot_of(m_q[i]);
        tk.destroy(tk.buf);
    }
    for (const key k : m_far) {
        task& tk = slot_of(k);
        tk.destroy(tk.buf);
    }
    for (const auto& ln : m_lanes) {  // the first ones went with the queue
        for (std::size_t i = ln.head + 1; i < ln.keys.size(); ++i) {
            task& tk = slot_of(ln.keys[i]);
            tk.destroy(tk.buf);
        }
    }
}

void scheduler::lane_next(lane_id l) {
    lane& ln = m_lanes[l];
    if (++ln.head == ln.keys.size()) {
        ln.keys.clear();
        ln.head = 0;
        return;
    }
    if (ln.head >= 4096 && ln.head * 2 >= ln.keys.size()) {  // a lane that never empties
        ln.keys.erase(ln.keys.begin(), ln.keys.begin() + static_cast<std::ptrdiff_t>(ln.head));
        ln.head = 0;
    }
    const key k = ln.keys[ln.head];
    const std::uint32_t slot = slot_index(k);
    task& tk = *m_slot_ptr[slot];
    push(tk.when, seq_of(k), slot, tk);  // the time at_lane() kept
}

void scheduler::grow_slots() {
    if (m_slot_ptr.size() + k_block > (std::size_t{1} << k_slot_bits))
        SC_REPORT_FATAL("odl/model/scheduler", "more than 16M pending actions");
    const auto first = static_cast<std::uint32_t>(m_slot_ptr.size());
    m_blocks.emplace_back(new task[k_block]);
    task* b = m_blocks.back().get();
    for (std::uint32_t i = 0; i < k_block; ++i) {
        m_slot_ptr.push_back(b + i);
        m_free.push_back(first + k_block - 1 - i);
    }
}

void scheduler::long_run_insert(std::size_t at) {
    const std::size_t pending = m_q.size() - m_head;
    m_shifted += m_q.size() - 1 - at;  // the keys after it moved up by one
    if (++m_inserts == k_shift_window) {
        m_costly = m_shifted > k_shift_window * k_shift_costly;
        m_inserts = 0;
        m_shifted = 0;
    }
    if (m_costly || pending > k_heap_cap) to_heap();
}

void scheduler::to_heap() {
    m_q.erase(m_q.begin(), m_q.begin() + static_cast<std::ptrdiff_t>(m_head));
    m_head = 0;
    std::make_heap(m_q.begin(), m_q.end(), std::greater<key>{});
    m_heap_mode = true;
}

void scheduler::push_slow(const sc_time& t, std::uint64_t seq, std::uint32_t slot, task& tk) {
    const sc_time cur = now();
    const sc_time when = t < cur ? cur : t;
    tk.when = when;
    if (seq >> (64 - k_slot_bits))
        SC_REPORT_FATAL("odl/model/scheduler", "more than 2^40 actions in one run");
    const key k = make_key(when.value(), seq, slot);
    // Outside run(): is it the earliest action (then the kernel is told)?
    const bool first = !m_running && (empty() || k < min_key());
    if (when.value() - cur.value() > k_far_ps) {
        // Far ahead (timeouts): kept apart so near inserts stay short.
        m_far.push_back(k);
        std::push_heap(m_far.begin(), m_far.end(), std::greater<key>{});
        m_far_min = m_far.front();
    } else if (m_heap_mode) {
        m_q.push_back(k);
        std::push_heap(m_q.begin(), m_q.end(), std::greater<key>{});
    } else if (m_head > 0 && k < m_q[m_head]) {
        m_q[--m_head] = k;
    } else {
        std::size_t i = m_q.size();
        m_q.push_back(k);
        while (i > m_head && m_q[i - 1] > k) {
            m_q[i] = m_q[i - 1];
            --i;
        }
        m_q[i] = k;
        if (m_q.size() - m_head > k_heap_above) long_run_insert(i);
    }
    // While run() is active it notifies once when it returns. Otherwise an
    // earlier notification replaces a later pending one (sc_event rules).
    if (first) m_wake.notify(when - sc_core::sc_time_stamp());
}

scheduler::key scheduler::min_key() const {
    if (m_far.empty()) return m_q[m_head];
    if (m_head == m_q.size()) return m_far.front();
    return std::min(m_q[m_head], m_far.front());
}

scheduler::key scheduler::pop_min() {
    if (!m_far.empty() && (m_head == m_q.size() || m_far.front() < m_q[m_head])) {
        std::pop_heap(m_far.begin(), m_far.end(), std::greater<key>{});
        const key k = m_far.back();
        m_far.pop_back();
        m_far_min = m_far.empty() ? ~key{0} : m_far.front();
        return k;
    }
    if (!m_heap_mode) {
        const key k = m_q[m_head++];
        if (m_head == m_q.size()) {
            m_q.clear();
            m_head = 0;
        } else if (m_head >= 4096 && m_head * 2 >= m_q.size()) {
            m_q.erase(m_q.begin(), m_q.begin() + static_cast<std::ptrdiff_t>(m_head));
            m_head = 0;
        }
        return k;
    }
    std::pop_heap(m_q.begin(), m_q.end(), std::greater<key>{});
    const key k = m_q.back();
    m_q.pop_back();
    if (m_q.size() < k_sorted_below) {
        std::sort(m_q.begin(), m_q.end());
        m_heap_mode = false;
        // Judge the next long run on its own inserts.
        m_costly = false;
        m_inserts = m_shifted = 0;
    }
    return k;
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
    run_actions<false>(limit);
    if (!empty()) m_wake.notify(slot_of(min_key()).when - kernel_t);
}

template <bool Stoppable>
void scheduler::run_actions(std::uint64_t limit) {
    active_guard g(m_running, s_active);
    m_stop = false;
    for (;;) {
        // stop_after_now(): the actions due at the time of the one that
        // asked still run, none after (run_ahead() only: the other callers
        // pay nothing for it).
        if constexpr (Stoppable) {
            if (m_stop) limit = std::min<std::uint64_t>(limit, s_now.value());
        }
        key k;
        if (!m_heap_mode && m_head != m_q.size() && m_q[m_head] < m_far_min) {
            // Common case: the head of the sorted run is the earliest.
            k = m_q[m_head];
            if (static_cast<std::uint64_t>(k >> 64) > limit) break;
            if (++m_head == m_q.size()) {
                m_q.clear();
                m_head = 0;
            } else if (m_head >= 4096 && m_head * 2 >= m_q.size()) {
                m_q.erase(m_q.begin(), m_q.begin() + static_cast<std::ptrdiff_t>(m_head));
                m_head = 0;
            }
        } else {
            if (empty() || static_cast<std::uint64_t>(min_key() >> 64) > limit) break;
            k = pop_min();
        }
        const std::uint32_t slot = slot_index(k);
        task& tk = *m_slot_ptr[slot];
        s_now = tk.when;
        ++m_run;
        tk.run(tk.buf);
        m_free.push_back(slot);
    }
}

void scheduler::run_direct(const sc_time& t) {
    if (t <= now()) return;
    run_actions<false>(t.value());
    s_direct = t;
}

void scheduler::run_used(const sc_time& t) {
    if (t <= now()) return;
    const std::uint64_t before = m_run;
    run_actions<false>(t.value());
    if (m_run != before) s_direct = s_now;
}

void scheduler::run_ahead(const sc_time& t) {
    if (t <= now()) return;
    const std::uint64_t before = m_run;
    run_actions<true>(t.value());
    if (m_run != before) s_direct = s_now;
}

namespace {
std::size_t count_processes(const std::vector<sc_core::sc_object*>& objs) {
    std::size_t n = 0;
    for (const auto* o : objs) {
        const std::string kind = o->kind();
        if (kind == "sc_method_process" || kind == "sc_thread_process" || kind == "sc_cthread_process") ++n;
        n += count_processes(o->get_child_objects());
    }
    return n;
}
}  // namespace

bool scheduler::sole_process() const { return count_processes(sc_core::sc_get_top_level_objects()) == 1; }

void scheduler::run_until(const sc_time& t) {
    const sc_time cur = sc_core::sc_time_stamp();
    if (t <= cur) return;
    m_horizon = t;
    sc_core::sc_start(t - cur);
    m_horizon = sc_core::SC_ZERO_TIME;
}

}  // namespace odl::model
