// SPDX-License-Identifier: MIT
// Scheduler order: actions run by (time, scheduling order) whichever queue
// path holds them (inline sorted-run insert from either end, far-timeout
// heap, heap mode above 512 pending, times in the past clamped to now),
// with the kernel stepped per time (sc_start) or run ahead (run_until); and
// through lanes (at_lane(): a lane's actions wait outside the queue behind
// its earliest), whose order must be the same as if each had been at().
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <memory>
#include <random>
#include <vector>

#include "odl/model/core/scheduler.h"
#include "odl/model/core/session.h"

namespace odl::model {
namespace {

using sc_core::sc_time;
using sc_core::SC_PS;

/// Every scheduled action, in scheduling order, with the time it was due.
struct expected_run {
    std::uint64_t due_ps;
    std::uint64_t id;
};

/// A randomised workload: each action, when it runs, records itself and
/// schedules about one more at delays spanning ties, the past (clamped),
/// near times and far timeouts; bursts push the queue over 512 pending.
class workload {
public:
    workload(scheduler& s, std::uint64_t seed, std::uint64_t budget, bool lanes = false)
        : m_s(s), m_use_lanes(lanes), m_rng(seed), m_budget(budget) {
        if (lanes)
            for (auto& l : m_lanes) l = s.make_lane();
    }

    void seed_actions(unsigned n) {
        for (unsigned i = 0; i < n; ++i) schedule(pick_delay());
    }
    const std::vector<expected_run>& scheduled() const { return m_sched; }
    const std::vector<std::uint64_t>& ran() const { return m_ran; }
    const std::vector<std::uint64_t>& ran_at() const { return m_ran_at; }

private:
    std::uint64_t pick_delay() {
        switch (m_rng() % 8) {
        case 0: return 0;                                  // tie with now
        case 1: return m_rng() % 1000;                     // sub-ns
        case 2: return 1000000000ull + m_rng() % 5000000;  // beyond 1 ms: far heap
        case 3: return m_rng() % 20000000;                 // up to 20 us
        default: return (m_rng() % 64) * 100000;           // 100 ns grid: many ties
        }
    }
    void schedule(std::uint64_t delay_ps) {
        if (m_next_id >= m_budget) return;
        const std::uint64_t id = m_next_id++;
        const std::uint64_t now = scheduler::now().value();
        // Now and then ask for a time in the past: it must run at now.
        const bool past = delay_ps == 0 && now > 0 && (m_rng() % 4 == 0);
        const std::uint64_t at = past ? now - 1 : now + delay_ps;
        if (m_use_lanes && m_rng() % 2 == 0) {
            lane_schedule(id, now, past);
            return;
        }
        m_sched.push_back({past ? now : at, id});
        m_s.at(sc_time(static_cast<double>(at), SC_PS), [this, id] { run(id); });
    }
    /// As a host CPU's timeline: mostly at or after the lane's last time
    /// (ties included), now and then earlier (at() on its own), in the past
    /// or a far timeout.
    void lane_schedule(std::uint64_t id, std::uint64_t now, bool past) {
        const unsigned l = static_cast<unsigned>(m_rng() % std::size(m_lanes));
        std::uint64_t at = std::max(now, m_lane_last[l]) + (m_rng() % 4 == 0 ? 0 : m_rng() % 200000);
        if (m_rng() % 50 == 0) at = now + pick_delay();  // out of the lane's order, or far
        if (past) at = now - 1;
        const std::uint64_t due = std::max(at, now);
        m_lane_last[l] = std::max(m_lane_last[l], due);
        m_sched.push_back({due, id});
        m_s.at_lane(m_lanes[l], sc_time(static_cast<double>(at), SC_PS), [this, id] { run(id); });
    }
    void run(std::uint64_t id) {
        m_ran.push_back(id);
        m_ran_at.push_back(scheduler::now().value());
        // About one child each, so activity lasts long enough (hundreds of
        // ms) for far timeouts to come due among near actions.
        const unsigned r = static_cast<unsigned>(m_rng() % 20);
        const unsigned children = r == 0 ? 0 : r == 1 ? 2 : 1;
        for (unsigned i = 0; i < children; ++i) schedule(pick_delay());
        if (m_rng() % 2000 == 0) {
            for (unsigned i = 0; i < 700; ++i) schedule(pick_delay());  // heap mode
        }
    }

    scheduler& m_s;
    bool m_use_lanes = false;
    scheduler::lane_id m_lanes[3] = {};
    std::uint64_t m_lane_last[3] = {};
    std::mt19937_64 m_rng;
    std::uint64_t m_budget;
    std::uint64_t m_next_id = 0;
    std::vector<expected_run> m_sched;
    std::vector<std::uint64_t> m_ran;
    std::vector<std::uint64_t> m_ran_at;
};

/// The order a reference queue gives: time, then scheduling order (id).
std::vector<std::uint64_t> reference_order(std::vector<expected_run> v) {
    std::stable_sort(v.begin(), v.end(), [](const expected_run& a, const expected_run& b) {
        return a.due_ps < b.due_ps;
    });
    std::vector<std::uint64_t> ids;
    for (const auto& e : v) ids.push_back(e.id);
    return ids;
}

enum class drive { run_ahead, kernel_stepped, direct };

void check(drive how, std::uint64_t seed, bool lanes = false) {
    sim_session session;
    auto s = std::make_unique<scheduler>("sched");
    workload w(*s, seed, 60000, lanes);
    w.seed_actions(40);
    if (how == drive::run_ahead) {
        s->run_until(sc_time(10, sc_core::SC_SEC));
    } else if (how == drive::kernel_stepped) {
        sc_core::sc_start(sc_time(10, sc_core::SC_SEC));
    } else {
        // As odl-linkd --sim drives it: many short steps, no kernel.
        ASSERT_TRUE(s->sole_process());
        sc_time t = sc_core::SC_ZERO_TIME, next;
        for (std::uint64_t step = 1; t < sc_time(10, sc_core::SC_SEC); step = step * 7 % 1000 + 1) {
            t += sc_time(double(step), sc_core::SC_US);
            s->run_direct(t);
            ASSERT_EQ(scheduler::now(), t) << "now() outside actions is where run_direct() stopped";
            if (s->next_time(next)) {
                ASSERT_GT(next, t) << "an action due by then was left";
            }
        }
        EXPECT_EQ(sc_core::sc_time_stamp(), sc_core::SC_ZERO_TIME) << "the kernel was entered";
    }
    ASSERT_EQ(w.ran().size(), w.scheduled().size()) << "every action runs exactly once";
    ASSERT_GT(w.scheduled().size(), 10000u);
    // Ids are handed out in scheduling order, so sorting by (time, id)
    // gives the only correct run order.
    EXPECT_EQ(w.ran(), reference_order(w.scheduled()));
    std::vector<std::uint64_t> due(w.scheduled().size());
    for (const auto& e : w.scheduled()) due[e.id] = e.due_ps;
    for (std::size_t i = 0; i < w.ran().size(); ++i)
        ASSERT_EQ(w.ran_at()[i], due[w.ran()[i]]) << "action " << w.ran()[i] << " ran at the wrong time";
    EXPECT_EQ(s->events_run(), w.scheduled().size());
    EXPECT_TRUE(s->idle());
}

TEST(Scheduler, RunAheadOrderMatchesReference) {
    for (std::uint64_t seed : {1u, 2u, 3u}) check(drive::run_ahead, seed);
}

TEST(Scheduler, KernelSteppedOrderMatchesReference) {
    for (std::uint64_t seed : {4u, 5u}) check(drive::kernel_stepped, seed);
}

TEST(Scheduler, DirectOrderMatchesReference) {
    for (std::uint64_t seed : {1u, 4u}) check(drive::direct, seed);  // seeds whose activity lasts
}

TEST(Scheduler, LaneOrderMatchesReference) {
    for (std::uint64_t seed : {1u, 2u}) check(drive::run_ahead, seed, true);
    check(drive::kernel_stepped, 4, true);
    check(drive::direct, 1, true);
}

TEST(Scheduler, LaneActionsNotRunAreDestroyedWithTheScheduler) {
    sim_session session;
    auto owned = std::make_shared<int>(0);
    {
        scheduler s("sched");
        const scheduler::lane_id l = s.make_lane();
        for (int i = 0; i < 5; ++i) s.at_lane(l, sc_time(10.0 + i, sc_core::SC_US), [owned] { ++*owned; });
        s.at_lane(l, sc_time(1, sc_core::SC_US), [owned] { ++*owned; });  // before the lane's last: on its own
        s.run_until(sc_time(12500, sc_core::SC_NS));  // the early one and the lane's first three
        EXPECT_EQ(*owned, 4);
        EXPECT_EQ(owned.use_count(), 3) << "the two not run still held (one queued, one behind it)";
    }
    EXPECT_EQ(owned.use_count(), 1) << "the scheduler's end destroyed the lane's waiting actions";
}

// odl-linkd --sim running ahead to the next delivery: the run ends after
// the time step of the action that asks, and now() is that step's time.
TEST(Scheduler, RunAheadStopsAfterTheAskingTimeStep) {
    sim_session session;
    auto s = std::make_unique<scheduler>("sched");
    ASSERT_TRUE(s->sole_process());
    const auto at = [](std::uint64_t ns) { return sc_time(double(ns), sc_core::SC_NS); };
    std::vector<int> ran;
    s->at(at(10), [&] { ran.push_back(1); });
    s->at(at(20), [&] {
        ran.push_back(2);
        s->stop_after_now();
    });
    s->at(at(20), [&] { ran.push_back(3); });  // same time: still runs
    s->at(at(30), [&] { ran.push_back(4); });
    s->run_ahead(at(100));
    EXPECT_EQ(ran, (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(scheduler::now(), at(20));
    // Nothing asks: every action up to the limit, and now() is the last
    // action's time, not the limit.
    s->run_ahead(at(100));
    EXPECT_EQ(ran, (std::vector<int>{1, 2, 3, 4}));
    EXPECT_EQ(scheduler::now(), at(30));
    // A stop asked in one run does not end the next one early.
    s->at(at(40), [&] {
        ran.push_back(5);
        s->stop_after_now();
    });
    s->at(at(50), [&] { ran.push_back(6); });
    s->run_direct(at(45));
    s->run_direct(at(60));
    EXPECT_EQ(ran, (std::vector<int>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(scheduler::now(), at(60));
}

// run_used() runs what is due up to the limit but claims only the time the
// model used: an input stamped between its last action and the limit is
// still scheduled at its own time (the sim server posts a frame at the time
// the program asked, which may lie before its turn).
TEST(Scheduler, RunUsedClaimsOnlyTheLastActionsTime) {
    sim_session session;
    auto s = std::make_unique<scheduler>("sched");
    ASSERT_TRUE(s->sole_process());
    const auto at = [](std::uint64_t ns) { return sc_time(double(ns), sc_core::SC_NS); };
    std::vector<std::uint64_t> ran;
    const auto record = [&] { ran.push_back(std::uint64_t(scheduler::now().to_seconds() * 1e9 + 0.5)); };
    s->at(at(10), record);
    s->run_used(at(100));
    EXPECT_EQ(scheduler::now(), at(10)) << "now() is the last action's time, not the limit";
    s->at(at(40), record);  // between the last action and the limit
    s->run_used(at(200));
    EXPECT_EQ(ran, (std::vector<std::uint64_t>{10, 40})) << "the late input ran at its own time";
    // Nothing ran: now() stays; run_direct() claims the limit.
    s->run_used(at(300));
    EXPECT_EQ(scheduler::now(), at(40));
    s->run_direct(at(300));
    EXPECT_EQ(scheduler::now(), at(300));
    s->at(at(250), record);  // before now(): clamped to it
    s->run_used(at(400));
    EXPECT_EQ(ran, (std::vector<std::uint64_t>{10, 40, 300}));
}

}  // namespace
}  // namespace odl::model
