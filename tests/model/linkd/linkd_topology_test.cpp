// SPDX-License-Identifier: MIT
// odl-linkd's model with 3 or 4 hosts (odl-linkd --hosts N --topology T):
// every cable trains once both its hosts are attached, each host's peer
// follows its own cables, a cable event or a gone host touches only the
// cables it should, and impossible topologies are refused with the reason.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <stdexcept>
#include <systemc>

#include "odl/model/linkd/model_backend_sc.h"
#include "mem_bus.h"

namespace odl::model::linkd {
namespace {

using testing::mem_bus;

/// "up" / "training" / "down" of cable @i from the nhi view.
std::string link_of(const sc_backend& m, unsigned i) {
    const std::string d = m.describe();
    std::string line;
    if (i == 0) {
        line = d.substr(0, d.find('\n'));
    } else {
        const auto at = d.find(fmt::format("cable {} (", i));
        if (at == std::string::npos) return "missing";
        line = d.substr(at, d.find('\n', at) - at);
    }
    for (const char* s : {"link up", "link training", "link down"})
        if (line.find(s) != std::string::npos) return s + 5;
    return "unknown: " + line;
}

TEST(LinkdTopology, RingOfThreeTrainsEachCableAndFollowsEvents) {
    sc_backend_config cfg;
    cfg.hosts = 3;
    cfg.cables = {{0, 1}, {1, 2}, {2, 0}};
    sc_backend m(cfg);
    ASSERT_EQ(m.host_count(), 3u);
    ASSERT_EQ(m.cable_count(), 3u);
    std::uint64_t now = 0;
    const auto step = [&] { m.advance_to(now += 1'000'000'000); };  // 1 ms

    mem_bus a, b, c;
    m.attach(0, &a);
    m.attach(1, &b);
    step();
    EXPECT_EQ(link_of(m, 0), "up") << m.describe();
    EXPECT_EQ(link_of(m, 1), "down") << "host 2 is not there yet\n" << m.describe();
    EXPECT_EQ(link_of(m, 2), "down") << m.describe();
    EXPECT_EQ(m.link_peer(2), -1);
    m.attach(2, &c);
    step();
    for (unsigned i = 0; i < 3; ++i) EXPECT_EQ(link_of(m, i), "up") << i << "\n" << m.describe();
    EXPECT_EQ(m.link_peer(0), 1);
    EXPECT_EQ(m.link_peer(1), 0);
    EXPECT_EQ(m.link_peer(2), 1);

    // Pulling cable 1 (hosts 1-2) leaves the other two up.
    ASSERT_TRUE(m.set_cable(1, false));
    step();
    EXPECT_EQ(link_of(m, 0), "up");
    EXPECT_EQ(link_of(m, 1), "down");
    EXPECT_EQ(link_of(m, 2), "up");
    EXPECT_EQ(m.link_peer(2), 0) << "host 2 still reaches host 0";
    EXPECT_NE(m.describe().find("cable 1 (hosts 1-2): cable pulled"), std::string::npos) << m.describe();
    EXPECT_EQ(m.cable_event(1, "retrain"), "the cable is unplugged");
    ASSERT_TRUE(m.set_cable(1, true));
    step();
    EXPECT_EQ(link_of(m, 1), "up");

    // An event on one cable: only that one retrains.
    EXPECT_EQ(m.cable_event(2, "degrade gen2 1"), "");
    EXPECT_EQ(link_of(m, 2), "training");
    EXPECT_EQ(link_of(m, 0), "up");
    step();
    EXPECT_NE(m.describe().find("cable 2 (hosts 2-0): cable plugged, link up usb4-gen2 x1"), std::string::npos)
        << m.describe();
    EXPECT_NE(m.cable_event(3, "retrain").find("no cable 3"), std::string::npos);
    EXPECT_FALSE(m.set_cable(3, true));

    // A host that goes away takes both of its cables down, not the third.
    m.attach(1, nullptr);
    step();
    EXPECT_EQ(link_of(m, 0), "down");
    EXPECT_EQ(link_of(m, 1), "down");
    EXPECT_EQ(link_of(m, 2), "up");
    EXPECT_EQ(m.link_peer(0), 2);
    EXPECT_EQ(m.link_peer(1), -1);
    m.attach(0, nullptr);
    m.attach(2, nullptr);
}

TEST(LinkdTopology, ImpossibleTopologiesAreRefusedWithTheReason) {
    const auto why = [](unsigned hosts, std::vector<std::pair<unsigned, unsigned>> cables) {
        sc_backend_config c;
        c.hosts = hosts;
        c.cables = std::move(cables);
        const auto w = sc_backend::check(c);
        return w ? *w : std::string("accepted");
    };
    EXPECT_EQ(why(3, {{0, 1}, {1, 2}}), "accepted");
    EXPECT_EQ(why(4, {{0, 1}, {0, 2}, {0, 3}}), "accepted");
    EXPECT_NE(why(5, {{0, 1}}).find("2 to 4"), std::string::npos);
    EXPECT_NE(why(1, {}).find("2 to 4"), std::string::npos);
    EXPECT_NE(why(3, {{0, 3}}).find("hosts are 0 to 2"), std::string::npos);
    EXPECT_NE(why(3, {{1, 1}}).find("to itself"), std::string::npos);
    EXPECT_NE(why(3, {{0, 1}, {1, 0}}).find("both join hosts"), std::string::npos);
    sc_backend_config bad;
    bad.hosts = 3;
    bad.cables = {{0, 0}};
    EXPECT_THROW(sc_backend{bad}, std::invalid_argument);
}

}  // namespace
}  // namespace odl::model::linkd

// libsystemc may own main() and call sc_main(); run the tests either way.
extern "C" int sc_main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
