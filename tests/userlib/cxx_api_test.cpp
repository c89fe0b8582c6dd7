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
