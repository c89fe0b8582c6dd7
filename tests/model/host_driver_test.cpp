// SPDX-License-Identifier: MIT
// The host driver's frame-by-frame path (the sim backend's): a message sent
// a frame at a time costs what the same message sent whole costs, and its
// first and last marks are what decide that.
#include <gtest/gtest.h>

#include <vector>

#include "model_fixture.h"
#include "odl/wire/frame.h"

namespace odl::model {
namespace {

using namespace odl::model::testing;
using sc_core::sc_time;
using sc_core::SC_MS;
using sc_core::SC_US;

constexpr unsigned k_frames = 16;

/// Per-message costs far above the per-frame ones and the link's time per
/// frame, so that charging them per frame would show.
platform costly_messages() {
    platform p = plain_platform();
    p.host.post = sc_time(5, SC_US);
    p.host.completion = sc_time(3, SC_US);
    return p;
}

/// When the whole message (send()) is complete at the receiver.
sc_time whole_message() {
    const platform p = costly_messages();
    auto sys = two_hosts(p, p, link_config{}, 1, false);
    sc_time got;
    unsigned n = 0;
    sys->hosts[1].drv->on_message([&](unsigned, std::uint32_t tag, std::uint64_t bytes) {
        EXPECT_EQ(tag, 7u);
        EXPECT_EQ(bytes, std::uint64_t{k_frames} * ODL_FRAME_MAX_PAYLOAD);
        got = scheduler::now();
        ++n;
    });
    sys->start([&] {
        sys->sched.after(sc_time(10, SC_US),
                         [&] { sys->hosts[0].drv->send(1, std::uint64_t{k_frames} * ODL_FRAME_MAX_PAYLOAD, 7); });
    });
    sys->run_until(sc_time(1, SC_MS));
    EXPECT_EQ(n, 1u);
    return got;
}

struct frame_seen {
    std::uint32_t tag;
    sc_time due;
    sc_time reaped;
};

/// The same bytes a frame at a time; @marks: first and last marks as a
/// message's, else every frame a message of its own.
std::vector<frame_seen> frame_by_frame(bool marks, driver_stats* tx, driver_stats* rx) {
    const platform p = costly_messages();
    auto sys = two_hosts(p, p, link_config{}, 1, false);
    std::vector<frame_seen> seen;
    sys->hosts[1].drv->on_message([&](unsigned, std::uint32_t, std::uint64_t) {
        ADD_FAILURE() << "on_message() while on_frame() is set";
    });
    sys->hosts[1].drv->on_frame([&](unsigned port, std::uint32_t tag, const sc_time& due) {
        EXPECT_EQ(port, 1u);
        seen.push_back({tag, due, scheduler::now()});
    });
    sys->start([&] {
        sys->sched.after(sc_time(10, SC_US), [&] {
            for (unsigned i = 0; i < k_frames; ++i)
                sys->hosts[0].drv->send_frame(1, ODL_FRAME_MAX_PAYLOAD, 100 + i, !marks || i == 0,
                                              !marks || i + 1 == k_frames);
        });
    });
    sys->run_until(sc_time(1, SC_MS));
    *tx = sys->hosts[0].drv->stats();
    *rx = sys->hosts[1].drv->stats();
    return seen;
}

TEST(HostDriverFrames, MarkedMessageCostsWhatTheWholeMessageCosts) {
    const sc_time whole = whole_message();
    ASSERT_GT(whole, sc_time(10, SC_US));
    driver_stats tx, rx;
    const auto seen = frame_by_frame(true, &tx, &rx);
    ASSERT_EQ(seen.size(), k_frames);
    for (unsigned i = 0; i < k_frames; ++i) {
        EXPECT_EQ(seen[i].tag, 100 + i);
        // Reported as reaped, due once its completion handling is done.
        EXPECT_GT(seen[i].due, seen[i].reaped);
        if (i) {
            EXPECT_GT(seen[i].due, seen[i - 1].due);
        }
    }
    // The last frame is due exactly when the whole message would have been
    // reported: the same costs, charged at the same times.
    EXPECT_EQ(seen.back().due, whole);
    // Frames after the first follow at the link's pace, not the post's.
    EXPECT_LT(seen.back().due - seen[1].due, sc_time(1.0 * (k_frames - 2), SC_US));
    EXPECT_EQ(tx.messages_sent, 1u);
    EXPECT_EQ(tx.frames_sent, k_frames);
    EXPECT_EQ(rx.messages_received, 1u);
    EXPECT_EQ(rx.frames_received, k_frames);
}

TEST(HostDriverFrames, UnmarkedFramesAreMessagesOfTheirOwn) {
    driver_stats tx, rx;
    const auto seen = frame_by_frame(false, &tx, &rx);
    ASSERT_EQ(seen.size(), k_frames);
    // Each frame pays the 5 us post: the sender's CPU sets the pace.
    EXPECT_GE(seen.back().due - seen[1].due, sc_time(5.0 * (k_frames - 2), SC_US));
    EXPECT_EQ(tx.messages_sent, k_frames);
    EXPECT_EQ(rx.messages_received, k_frames);
}

}  // namespace
}  // namespace odl::model
