// SPDX-License-Identifier: MIT
// What odl-tray shows, from what odl-daemon publishes: one of four icons
// (connected, degraded, disconnected, daemon down), a title, and a line per
// device with its peer, its link and its last test. No GTK here: the
// summary is tested on its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace odl::tray {

/// One org.odinlink.Device1 object, the properties the tray uses.
struct device_view {
    std::string name, state, peer, below_rating, last_test;
    uint32_t tx_gbps_per_lane = 0, tx_lanes = 0, rx_gbps_per_lane = 0, rx_lanes = 0;
};

enum class link_kind { connected, degraded, disconnected, daemon_down };

struct tray_view {
    link_kind kind = link_kind::daemon_down;
    std::string title;               ///< tooltip and first menu line
    std::vector<std::string> lines;  ///< one per device, then its last test
    /// The device a test runs on: the first one in a session or connected, "" none.
    std::string test_device;
};

/// The icon's file name without extension ("odl-connected").
const char* icon_name(link_kind k);
/// "connected", "degraded", "disconnected", "daemon down".
const char* kind_name(link_kind k);

/// @devices by name; @daemon_up false when org.odinlink.Daemon1 has no owner.
tray_view summarize(bool daemon_up, const std::map<std::string, device_view>& devices);

/// One line for a device's LastTest JSON ("" for none): "latency passed:
/// 64 B 5.2 us, 4 KiB 9.1 us (p50 one way)", "bandwidth failed: <why>".
std::string last_test_line(const std::string& json);

}  // namespace odl::tray
