// SPDX-License-Identifier: MIT
// Tests for userlib/include/odl/odl.hpp, the C++ wrapper.
#include <gtest/gtest.h>

#include <string>

#include "odl/odl.hpp"

TEST(CxxApi, PairExchangesAMessage) {
    odl::open_params p;
    auto [a, b] = odl::device::pair(p);
    std::string msg = "over the C++ API", got(64, '\0');
    ASSERT_EQ(b.post_recv(0, 3, got.data(), got.size(), 11), ODL_OK);
    ASSERT_EQ(a.post_send(0, 3, msg.data(), msg.size(), 12), ODL_OK);
    std::vector<odl_completion> done;
    for (int i = 0; i < 10000 && done.empty(); ++i) {
        a.poll();
        done = b.poll();
    }
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].ctx, 11u);
    EXPECT_EQ(got.substr(0, msg.size()), msg);
    EXPECT_EQ(a.info().link_state, uint32_t(ODL_LINK_UP));
    EXPECT_EQ(a.stats().tx_msgs, 1u);
}

TEST(CxxApi, OpenFailureThrowsWithTheReason) {
    odl::open_params p;
    p.backend = "nonexistent";
    try {
        odl::device d(p);
        FAIL() << "opened a nonexistent backend";
    } catch (const odl::error& e) {
        EXPECT_EQ(e.status(), ODL_ERR_NO_BACKEND);
        EXPECT_NE(std::string(e.what()).find("have: loopback"), std::string::npos) << e.what();
    }
}

namespace {
// Polls both ends until @b has a completion (bounded).
std::vector<odl_completion> drain(odl::device& a, odl::device& b) {
    std::vector<odl_completion> done;
    for (int i = 0; i < 10000 && done.empty(); ++i) {
        a.poll();
        done = b.poll();
    }
    return done;
}
}  // namespace

TEST(CxxApi, CancelWithdrawsAPostedReceive) {
    odl::open_params p;
    auto [a, b] = odl::device::pair(p);
    std::string buf(64, '\0');
    ASSERT_EQ(b.post_recv(0, 1, buf.data(), buf.size(), 21), ODL_OK);
    EXPECT_EQ(b.cancel(0, 99), ODL_ERR_INVAL);  // nothing posted with ctx 99
    ASSERT_EQ(b.cancel(0, 21), ODL_OK);
    const auto done = drain(a, b);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].ctx, 21u);
    EXPECT_EQ(done[0].status, ODL_ERR_CANCELED);
}

TEST(CxxApi, DiscardDropsSelectedTagsUntilStopped) {
    odl::open_params p;
    auto [a, b] = odl::device::pair(p);
    const std::string drop = "dropped", keep = "kept";
    std::string got(64, '\0');
    ASSERT_EQ(b.discard(0, 0x10, 0xf0), ODL_OK);
    EXPECT_EQ(b.discard(p.num_streams + 5, 0, 0), ODL_ERR_INVAL);
    ASSERT_EQ(a.post_send(0, 0x11, drop.data(), drop.size(), 1), ODL_OK);  // selected: dropped
    ASSERT_EQ(a.post_send(0, 0x21, keep.data(), keep.size(), 2), ODL_OK);  // not selected
    ASSERT_EQ(b.post_recv(0, ODL_TAG_ANY, got.data(), got.size(), 3), ODL_OK);
    auto done = drain(a, b);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, ODL_OK);
    EXPECT_EQ(done[0].tag, 0x21u);
    EXPECT_EQ(got.substr(0, keep.size()), keep);
    // Stopped: a tag of the old selection is delivered again.
    ASSERT_EQ(b.stop_discard(0), ODL_OK);
    ASSERT_EQ(a.post_send(0, 0x12, drop.data(), drop.size(), 4), ODL_OK);
    ASSERT_EQ(b.post_recv(0, ODL_TAG_ANY, got.data(), got.size(), 5), ODL_OK);
    done = drain(a, b);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].tag, 0x12u);
    EXPECT_EQ(got.substr(0, drop.size()), drop);
}
