// SPDX-License-Identifier: MIT
// One /dev/odl_tb5_N as odl-daemon publishes it (org.odinlink.Device1 in
// org.odinlink.Daemon1.xml): flat values taken from the host view, and
// which of them differ between two readings (the PropertiesChanged list).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "host_view.h"

namespace odl::daemon {

struct device_props {
    std::string name, state, peer, xdomain, rating, below_rating;
    std::string irq_throttle_us, poll, peer_version;
    uint32_t tx_gbps_per_lane = 0, tx_lanes = 0, rx_gbps_per_lane = 0, rx_lanes = 0;
    uint32_t rings_used = 0, rings_offered = 0, connect_count = 0;
    /// The port's rating behind @rating (0: unknown); for the metrics.
    uint32_t rated_gbps_per_lane = 0, rated_lanes = 0;
    std::map<std::string, uint64_t> counters;
    /// Who has the device open (not published: the peer service's trigger).
    bool open_here = false, open_on_peer = false;
};

/// Every device of @v with its peer's link, by device name.
std::map<std::string, device_props> devices_of(const host::host_view& v);

/// The D-Bus names of the properties whose values differ, in the XML's order.
std::vector<std::string> changed_properties(const device_props& a, const device_props& b);

}  // namespace odl::daemon
