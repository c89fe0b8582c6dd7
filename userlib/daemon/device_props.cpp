// SPDX-License-Identifier: MIT
#include "device_props.h"

namespace odl::daemon {

std::map<std::string, device_props> devices_of(const host::host_view& v) {
    std::map<std::string, device_props> out;
    for (const auto& d : v.devices) {
        device_props p;
        p.name = d.name;
        p.state = d.state;
        p.open_here = d.local_open;
        p.open_on_peer = d.peer_open;
        p.xdomain = d.xdomain;
        p.irq_throttle_us = d.irq_throttle_us;
        p.poll = d.poll;
        p.peer_version = d.peer_version;
        p.rings_used = d.rings_used;
        p.rings_offered = d.rings_offered;
        p.connect_count = d.connect_count;
        p.counters.insert(d.counters.begin(), d.counters.end());
        for (const auto& x : v.peers) {
            if (x.name != d.xdomain) continue;
            p.peer = x.device_name;
            p.tx_gbps_per_lane = x.tx.gbps_per_lane;
            p.tx_lanes = x.tx.lanes;
            p.rx_gbps_per_lane = x.rx.gbps_per_lane;
            p.rx_lanes = x.rx.lanes;
            if (x.rating) {
                p.rating = host::rating_text(*x.rating);
                p.below_rating = host::below_rating(x, *x.rating);
                p.rated_gbps_per_lane = x.rating->max_gbps_per_lane;
                p.rated_lanes = x.rating->max_lanes;
            }
        }
        out.emplace(p.name, std::move(p));
    }
    return out;
}

std::vector<std::string> changed_properties(const device_props& a, const device_props& b) {
    std::vector<std::string> n;
    auto cmp = [&n](const auto& x, const auto& y, const char* name) {
        if (x != y) n.emplace_back(name);
    };
    cmp(a.name, b.name, "Name");
    cmp(a.state, b.state, "State");
    cmp(a.peer, b.peer, "Peer");
    cmp(a.xdomain, b.xdomain, "XDomain");
    cmp(a.tx_gbps_per_lane, b.tx_gbps_per_lane, "TxGbpsPerLane");
    cmp(a.tx_lanes, b.tx_lanes, "TxLanes");
    cmp(a.rx_gbps_per_lane, b.rx_gbps_per_lane, "RxGbpsPerLane");
    cmp(a.rx_lanes, b.rx_lanes, "RxLanes");
    cmp(a.rating, b.rating, "Rating");
    cmp(a.below_rating, b.below_rating, "BelowRating");
    cmp(a.rings_used, b.rings_used, "RingsUsed");
    cmp(a.rings_offered, b.rings_offered, "RingsOffered");
    cmp(a.connect_count, b.connect_count, "ConnectCount");
    cmp(a.irq_throttle_us, b.irq_throttle_us, "IrqThrottleUs");
    cmp(a.poll, b.poll, "Poll");
    cmp(a.peer_version, b.peer_version, "PeerVersion");
    cmp(a.counters, b.counters, "Counters");
    return n;
}

}  // namespace odl::daemon
