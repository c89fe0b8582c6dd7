// SPDX-License-Identifier: MIT
// Link configurations: what is rejected (with the reason) and the analytic
// rates the cable uses.
#include <gtest/gtest.h>

#include "odl/model/cable/link_config.h"

namespace odl::model {
namespace {

TEST(LinkConfig, RejectsImpossibleConfigurationsWithTheReason) {
    link_config c;
    c.gen = generation::gen3;
    c.lanes = 3;
    auto why = validate(c);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("1 or 2 lanes"), std::string::npos) << *why;
    c.lanes = 2;
    c.asymmetric = true;
    why = validate(c);
    ASSERT_TRUE(why.has_value());
    EXPECT_NE(why->find("Gen4"), std::string::npos) << *why;
    c = link_config{};
    c.length_m = 0;
    EXPECT_TRUE(validate(c).has_value());
    c = link_config{};
    EXPECT_FALSE(validate(c).has_value());
    c.asymmetric = true;
    c.lanes = 3;
    EXPECT_FALSE(validate(c).has_value());
}

TEST(LinkConfig, GenerationNames) {
    EXPECT_EQ(parse_generation("tb4"), generation::gen3);
    EXPECT_EQ(parse_generation("usb4-gen4"), generation::gen4);
    EXPECT_FALSE(parse_generation("tb6").has_value());
}

TEST(LinkConfig, RatesFollowCodingAndPacketisation) {
    link_physics p;
    EXPECT_DOUBLE_EQ(lane_gbps(generation::tb3, p), 20.0);
    EXPECT_DOUBLE_EQ(lane_gbps(generation::gen2, p), 10.0);
    EXPECT_NEAR(lane_gbps(generation::gen4, p), 25.6 * 11 / 7 * p.gen4_coding_efficiency, 1e-12);
    EXPECT_EQ(wire_bytes(4096), 4096u + 16u * 4u);
    EXPECT_EQ(wire_bytes(257), 257u + 2u * 4u);
    link_config asym;
    asym.asymmetric = true;
    asym.lanes = 3;
    asym.fast_end = 1;
    EXPECT_EQ(tx_lanes(asym, 1), 3u);
    EXPECT_EQ(tx_lanes(asym, 0), 1u);
    EXPECT_NEAR(tx_gbps(asym, p, 1) / tx_gbps(asym, p, 0), 3.0, 1e-12);
    link_config tb4;
    tb4.gen = generation::gen3;
    // 4 KiB frame on 2 x 20 Gb/s: 4160 bytes in 832 ns.
    EXPECT_EQ(serialise_ps(tb4, p, 0, 4096), 832000u);
    tb4.length_m = 3;
    EXPECT_EQ(propagation_ps(tb4, p), 15000u);
}

}  // namespace
}  // namespace odl::model
