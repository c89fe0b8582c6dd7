// SPDX-License-Identifier: MIT
// What odl-tray shows for each state of the daemon and its devices.
#include <gtest/gtest.h>

#include "tray_state.h"

namespace {

using odl::tray::device_view;
using odl::tray::link_kind;
using odl::tray::summarize;

device_view linked(const std::string& name, const std::string& state = "connected") {
    device_view d;
    d.name = name;
    d.state = state;
    d.peer = "host-b";
    d.tx_gbps_per_lane = d.rx_gbps_per_lane = 40;
    d.tx_lanes = d.rx_lanes = 2;
    return d;
}

TEST(TrayState, DaemonDownWhateverTheDevices) {
    const auto v = summarize(false, {{"odl_tb5_0", linked("odl_tb5_0")}});
    EXPECT_EQ(v.kind, link_kind::daemon_down);
    EXPECT_STREQ(odl::tray::icon_name(v.kind), "odl-daemon-down");
    EXPECT_TRUE(v.lines.empty());
    EXPECT_EQ(v.test_device, "");
}

TEST(TrayState, ConnectedWithThePeerAndItsLink) {
    const auto v = summarize(true, {{"odl_tb5_0", linked("odl_tb5_0", "session")}});
    EXPECT_EQ(v.kind, link_kind::connected);
    EXPECT_EQ(v.title, "OdinLink: 1 peer connected");
    ASSERT_EQ(v.lines.size(), 1u);
    EXPECT_EQ(v.lines[0], "odl_tb5_0: host-b, Gen4 x2 (80 Gb/s)");
    EXPECT_EQ(v.test_device, "odl_tb5_0");
}

TEST(TrayState, DegradedWhenADirectionIsBelowRatingAndAsymmetricLinksShowBothWays) {
    auto d = linked("odl_tb5_1");
    d.tx_lanes = 3;
    d.rx_lanes = 1;
    d.below_rating = "rx: Gen4 x1 (40 Gb/s) of Gen4 x2 (80 Gb/s)";
    const auto v = summarize(true, {{"odl_tb5_0", linked("odl_tb5_0")}, {"odl_tb5_1", d}});
    EXPECT_EQ(v.kind, link_kind::degraded);
    EXPECT_EQ(v.title, "OdinLink: 2 peers connected, below the port's rating");
    ASSERT_EQ(v.lines.size(), 2u);
    EXPECT_EQ(v.lines[1], "odl_tb5_1: host-b, Tx Gen4 x3 (120 Gb/s), Rx Gen4 x1 (40 Gb/s) - below rating: " +
                              d.below_rating);
}

TEST(TrayState, DisconnectedWithoutALinkedDevice) {
    EXPECT_EQ(summarize(true, {}).kind, link_kind::disconnected);
    EXPECT_EQ(summarize(true, {}).title, "OdinLink: no peer");
    auto d = linked("odl_tb5_0", "login");
    const auto v = summarize(true, {{"odl_tb5_0", d}});
    EXPECT_EQ(v.kind, link_kind::disconnected);
    EXPECT_EQ(v.lines.at(0), "odl_tb5_0: login");
    EXPECT_EQ(v.test_device, "") << "no test on a device without a peer";
}

TEST(TrayState, LastTestLines) {
    EXPECT_EQ(odl::tray::last_test_line(""), "");
    EXPECT_EQ(odl::tray::last_test_line(R"({"test":"latency","state":"running"})"), "latency test running");
    EXPECT_EQ(odl::tray::last_test_line(R"({"test":"latency","state":"failed","error":"no peer within 10.0 s"})"),
              "latency test failed: no peer within 10.0 s");
    EXPECT_EQ(odl::tray::last_test_line(
                  R"({"test":"latency","state":"passed","report":{"results":[{"size":64,"p50_us":5.21},{"size":4096,"p50_us":9.08}]}})"),
              "latency test passed: 64 B 5.2 us, 4 KiB 9.1 us (p50 one way)");
    EXPECT_EQ(odl::tray::last_test_line(
                  R"({"test":"bandwidth","state":"passed","report":{"results":[{"size":1048576,"gbps":41.53}]}})"),
              "bandwidth test passed: 1 MiB 41.5 Gb/s");
    EXPECT_EQ(odl::tray::last_test_line("{not json"), "last test: unreadable");
    EXPECT_EQ(odl::tray::last_test_line(R"({"test":"latency","state":"passed","report":{"results":"x"}})"),
              "latency test passed") << "a report of the wrong shape is not a crash";
    auto d = linked("odl_tb5_0");
    d.last_test = R"({"test":"latency","state":"running"})";
    const auto v = summarize(true, {{"odl_tb5_0", d}});
    ASSERT_EQ(v.lines.size(), 2u);
    EXPECT_EQ(v.lines[1], "    latency test running");
}

}  // namespace
