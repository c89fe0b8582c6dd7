// SPDX-License-Identifier: MIT
// Time-ordered action queue on top of the SystemC kernel: one SC_METHOD runs
// every action due now, so frame-level events cost no thread switches.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include <systemc>

namespace odl::model {

/// Runs callbacks at absolute simulated times. Equal times run in the order
/// they were scheduled (a sequence number breaks ties), which keeps runs
/// deterministic.
///
/// Cost per action: no heap allocation for callables up to
/// `inline_bytes` (pooled slots), a 16-byte key in a sorted run, and no
/// SystemC kernel activation of its own while the scheduler may run ahead
/// (temporal decoupling, see run_until()).
class scheduler : public sc_core::sc_module {
public:
    using action = std::function<void()>;
    static constexpr std::size_t inline_bytes = 64;

    explicit scheduler(sc_core::sc_module_name name);
    ~scheduler() override;
    scheduler(const scheduler&) = delete;
    scheduler& operator=(const scheduler&) = delete;

    /// Runs @fn at absolute time @t (clamped to now).
    template <class F>
    void at(const sc_core::sc_time& t, F&& fn) {
        at_seq(t, m_seq++, std::forward<F>(fn));
    }
    /// Reserves a place in the tie-break order now, for an action scheduled
    /// later with at_seq(): a per-link FIFO of in-flight frames keeps one
    /// action in the queue yet runs exactly where one action per frame would.
    std::uint64_t reserve_seq() { return m_seq++; }
    /// Runs @fn at @t (clamped to now), ordered among equal times by @seq
    /// (from reserve_seq()).
    template <class F>
    void at_seq(const sc_core::sc_time& t, std::uint64_t seq, F&& fn) {
        const std::uint32_t s = alloc_slot();
        task& tk = *m_slot_ptr[s];
        tk.emplace(std::forward<F>(fn));
        push(t, seq, s, tk);
    }
    /// Runs @fn @d after now.
    template <class F>
    void after(const sc_core::sc_time& d, F&& fn) {
        at(now() + d, std::forward<F>(fn));
    }
    /// A lane: actions at nondecreasing times (a host CPU's timeline). Only
    /// its earliest waits in the queue; each keeps the place in the
    /// tie-break order it got when scheduled, so the run is exactly that of
    /// one at() per action, while the queue stays short (a host that posts a
    /// ring's worth of frames at once queued a doorbell each, hundreds
    /// pending, and the queue turned into a heap: half of a stream's time).
    using lane_id = std::uint32_t;
    lane_id make_lane() {
        m_lanes.emplace_back();
        return static_cast<lane_id>(m_lanes.size() - 1);
    }
    /// at() through lane @l. An action due before the lane's last one goes
    /// to the queue on its own (at()), so any time is correct.
    template <class F>
    void at_lane(lane_id l, const sc_core::sc_time& t, F&& fn) {
        const sc_core::sc_time cur = now();
        const sc_core::sc_time when = t < cur ? cur : t;  // at() clamps as it queues
        lane& ln = m_lanes[l];
        if (ln.head != ln.keys.size() && when.value() < static_cast<std::uint64_t>(ln.keys.back() >> 64)) {
            at(when, std::forward<F>(fn));
            return;
        }
        const std::uint64_t seq = m_seq++;
        const std::uint32_t s = alloc_slot();
        task& tk = *m_slot_ptr[s];
        tk.emplace([this, l, f = std::forward<F>(fn)]() mutable {
            f();
            lane_next(l);
        });
        tk.when = when;  // lane_next() queues it from here, no conversion
        ln.keys.push_back(make_key(when.value(), seq, s));
        if (ln.keys.size() - ln.head == 1) push(when, seq, s, tk);
    }
    /// The simulated time of the action running now; outside actions the
    /// SystemC time. While the scheduler runs ahead of the kernel
    /// (run_until()), this is ahead of sc_time_stamp().
    static sc_core::sc_time now() {
        if (s_active) return s_now;
        const sc_core::sc_time k = sc_core::sc_time_stamp();
        return s_direct > k ? s_direct : k;
    }

    /// sc_start() up to absolute time @t. Within it, the scheduler runs its
    /// actions back to back without a kernel time step per distinct time
    /// (TLM-2.0 style temporal decoupling) as long as no other SystemC
    /// activity is pending before them and they lie before @t; the order and
    /// times of actions are exactly those of the kernel-stepped run. Plain
    /// sc_start() calls (odl-linkd, unit tests) step the kernel per time.
    void run_until(const sc_core::sc_time& t);

    /// Runs the actions due up to @t (inclusive) without entering the
    /// SystemC kernel: the same actions, times and order as run_until(),
    /// without the kernel's cost per call (about a microsecond, which a
    /// wall-clock paced caller pays several times per frame). Only for a
    /// model whose sole SystemC process is this scheduler's (sole_process());
    /// afterwards now() outside actions is @t, and the kernel's own clock
    /// stays where it was.
    void run_direct(const sc_core::sc_time& t);
    /// run_direct() that claims no more time than the model used: afterwards
    /// now() is the last action's time (or where it was), so an input
    /// stamped between that and @t may still be scheduled at its own time
    /// (nothing ran in between that it could have changed).
    void run_used(const sc_core::sc_time& t);
    /// run_direct() for a caller running ahead of its inputs: it also ends
    /// after the actions at the time of one that called stop_after_now(),
    /// and afterwards now() is the last action's time, not @t (the caller
    /// claims no more time than the model used).
    void run_ahead(const sc_core::sc_time& t);
    /// From inside an action: the run in progress ends once the actions due
    /// at this same time have run.
    void stop_after_now() { m_stop = true; }
    /// True when this scheduler's method is the only SystemC process.
    bool sole_process() const;
    /// The time of the earliest pending action; false when there is none.
    bool next_time(sc_core::sc_time& out) const {
        if (empty()) return false;
        out = sc_core::sc_time::from_value(static_cast<std::uint64_t>(min_key() >> 64));
        return true;
    }

    /// Number of actions run so far (the benchmark's events).
    std::uint64_t events_run() const { return m_run; }
    bool idle() const { return empty(); }

private:
    /// A type-erased callable stored in place (or on the heap if large).
    /// `run` calls and then destroys it (one indirect call per action);
    /// `destroy` only destroys (actions still pending at teardown).
    struct task {
        alignas(std::max_align_t) unsigned char buf[inline_bytes];
        void (*run)(void*) = nullptr;
        void (*destroy)(void*) = nullptr;
        sc_core::sc_time when;
        template <class F>
        void emplace(F&& fn) {
            using T = std::decay_t<F>;
            if constexpr (sizeof(T) <= inline_bytes && alignof(T) <= alignof(std::max_align_t)) {
                ::new (static_cast<void*>(buf)) T(std::forward<F>(fn));
                run = [](void* p) {
                    T& x = *static_cast<T*>(p);
                    x();
                    x.~T();
                };
                destroy = [](void* p) { static_cast<T*>(p)->~T(); };
            } else {
                T* h = new T(std::forward<F>(fn));
                std::memcpy(buf, &h, sizeof h);
                run = [](void* p) {
                    T* x;
                    std::memcpy(&x, p, sizeof x);
                    std::unique_ptr<T> owner(x);
                    (*x)();
                };
                destroy = [](void* p) {
                    T* x;
                    std::memcpy(&x, p, sizeof x);
                    delete x;
                };
            }
        }
    };
    /// Queue key: sc_time::value() in the high 64 bits, then the sequence
    /// number (40 bits, checked) and the slot (low 24 bits), so one unsigned
    /// compare orders by (time, insertion order).
    __extension__ typedef unsigned __int128 key;
    static constexpr unsigned k_slot_bits = 24;
    static constexpr std::uint32_t k_block = 256;
    static key make_key(std::uint64_t when_ps, std::uint64_t seq, std::uint32_t slot) {
        return (key{when_ps} << 64) | (key{seq} << k_slot_bits) | slot;
    }
    static std::uint32_t slot_index(key k) { return static_cast<std::uint32_t>(k) & ((1u << k_slot_bits) - 1); }
    static std::uint64_t seq_of(key k) {
        return static_cast<std::uint64_t>(k >> k_slot_bits) & ((std::uint64_t{1} << (64 - k_slot_bits)) - 1);
    }

    std::uint32_t alloc_slot() {
        if (m_free.empty()) grow_slots();
        const std::uint32_t s = m_free.back();
        m_free.pop_back();
        return s;
    }
    void grow_slots();
    /// Queues @slot (holding @tk). The common case, scheduling from inside
    /// run() into the sorted run, is inline; the rest is push_slow(). Both
    /// give the same key, so the order does not depend on the path taken.
    /// Always inlined: left to itself the compiler stopped inlining it into
    /// the driver and the router once the scheduler grew elsewhere (a call
    /// per action, 3 % of BM_Tb5Stream4KiB).
    __attribute__((always_inline)) void push(const sc_core::sc_time& t, std::uint64_t seq, std::uint32_t slot,
                                             task& tk) {
        const std::uint64_t cur = s_now.value();
        std::uint64_t w = t.value();
        if (!m_running || m_heap_mode || (seq >> (64 - k_slot_bits)) || w > cur + k_far_ps) {
            push_slow(t, seq, slot, tk);
            return;
        }
        if (w < cur) {
            w = cur;
            tk.when = s_now;
        } else {
            tk.when = t;
        }
        const key k = make_key(w, seq, slot);
        const std::size_t size = m_q.size();
        // One step of insertion sort from whichever end of the run is
        // nearer; slots before the head are free, so the front half can
        // move down by one.
        if (m_head > 0 && (m_head == size || k < m_q[m_head + (size - m_head) / 2])) {
            key* q = m_q.data();
            std::size_t i = --m_head;
            for (; i + 1 < size && q[i + 1] < k; ++i) q[i] = q[i + 1];
            q[i] = k;
            return;  // shifted fewer than half the keys: nothing to judge
        }
        m_q.push_back(k);
        key* q = m_q.data();
        std::size_t i = size;
        for (; i > m_head && q[i - 1] > k; --i) q[i] = q[i - 1];
        q[i] = k;
        if (size + 1 - m_head > k_heap_above) long_run_insert(i);
    }
    /// After an insert at @at into a sorted run of more than k_heap_above
    /// pending actions (the keys after it moved): heap mode once such inserts land
    /// mid-run on average (each then shifts hundreds of keys), or above
    /// k_heap_cap whatever they cost. Many pending actions whose new ones
    /// land near the front (a host's doorbells queued for a burst of frames
    /// posted at once) stay sorted: there a heap cost twice as much per
    /// frame (model_bench BM_SimPacedStream4KiB/100000/256/0). Out of line:
    /// push() stays small enough to be inlined into its callers.
    void long_run_insert(std::size_t at);
    void push_slow(const sc_core::sc_time& t, std::uint64_t seq, std::uint32_t slot, task& tk);
    /// The front of lane @l ran: queue the next.
    void lane_next(lane_id l);
    /// Turns the sorted run into a binary heap (many pending actions).
    void to_heap();
    key pop_min();
    task& slot_of(key k) { return *m_slot_ptr[slot_index(k)]; }
    void run();
    /// Runs every pending action due at or before @limit (sc_time value).
    template <bool Stoppable>
    void run_actions(std::uint64_t limit);

    bool empty() const { return m_head == m_q.size() && m_far.empty(); }
    key min_key() const;

    /// Pending actions. Usually few (about ten), so they are kept as a
    /// sorted run m_q[m_head..] (pop: O(1), insert: a shift of about two
    /// keys from the nearer end); above k_heap_above pending actions whose
    /// inserts shift more than k_shift_costly keys on average (over the
    /// last k_shift_window inserts made with that many pending), or above
    /// k_heap_cap in any case, m_q
    /// becomes a binary min-heap until it shrinks below k_sorted_below
    /// (not far below: one kept down to 64 stayed a heap for all of a
    /// stream that always had a few hundred actions queued).
    static constexpr std::size_t k_heap_above = 512;
    static constexpr std::size_t k_heap_cap = 16384;
    static constexpr std::size_t k_shift_window = 256;
    static constexpr std::size_t k_shift_costly = 32;
    static constexpr std::size_t k_sorted_below = 384;
    /// Actions more than k_far_ps ahead (timeouts) wait in a separate heap.
    static constexpr std::uint64_t k_far_ps = 1000000000;  // 1 ms
    std::vector<key> m_q;
    std::size_t m_head = 0;
    bool m_heap_mode = false;
    std::vector<key> m_far;
    /// A lane's actions in order, keys[head..]; the first is also in the queue.
    struct lane {
        std::vector<key> keys;
        std::size_t head = 0;
    };
    std::vector<lane> m_lanes;
    key m_far_min = ~key{0};  ///< m_far's least key (all ones when empty)
    std::vector<std::unique_ptr<task[]>> m_blocks;  ///< slots never move
    std::vector<task*> m_slot_ptr;
    std::vector<std::uint32_t> m_free;
    sc_core::sc_event m_wake;
    std::uint64_t m_seq = 0;
    std::uint64_t m_run = 0;
    sc_core::sc_time m_horizon;  ///< run ahead below this (0: never)
    bool m_running = false;
    bool m_stop = false;  ///< stop_after_now() was called in this run
    std::size_t m_inserts = 0;  ///< into a long sorted run, this window
    std::size_t m_shifted = 0;  ///< keys those inserts moved
    bool m_costly = false;      ///< the last window's inserts moved many keys

    static inline bool s_active = false;
    static inline sc_core::sc_time s_now;
    static inline sc_core::sc_time s_direct;  ///< how far run_direct() went
};

}  // namespace odl::model
