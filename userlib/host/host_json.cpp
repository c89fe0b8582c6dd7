// SPDX-License-Identifier: MIT
#include "host_json.h"

namespace odl::host {

namespace {

nlohmann::json speed_json(const lane_speed& s) {
    return {{"generation", generation_name(s.gbps_per_lane)}, {"gbps_per_lane", s.gbps_per_lane},
            {"lanes", s.lanes}, {"gbps", s.total_gbps()}};
}

}  // namespace

std::string link_knobs(const host_view& v) {
    std::string knobs;
    for (const auto& p : v.module_params)
        if (p.rfind("poll=", 0) == 0 || p.rfind("irq_throttle_us=", 0) == 0 || p.rfind("rings=", 0) == 0)
            knobs += (knobs.empty() ? "" : " ") + p;
    return knobs;
}

nlohmann::json link_json(const host_view& v, const std::optional<port_rating>& expect) {
    nlohmann::json peers = nlohmann::json::array();
    for (const auto& x : v.peers) {
        const std::optional<port_rating> r = expect ? expect : x.rating;
        const std::string below = r ? below_rating(x, *r) : "";
        nlohmann::json devs = nlohmann::json::array();
        for (const auto& d : v.devices) {
            if (d.xdomain != x.name) continue;
            nlohmann::json counters = nlohmann::json::object();
            for (const auto& [k, val] : d.counters) counters[k] = val;
            devs.push_back({{"device", d.dev_path},
                            {"state", d.state},
                            {"open_here", d.local_open},
                            {"open_on_peer", d.peer_open},
                            {"peer_protocol", d.peer_version},
                            {"rings", d.rings_used},
                            {"rings_offered", d.rings_offered},
                            {"logins", d.connect_count},
                            {"irq_throttle_us", d.irq_throttle_us},
                            {"rx_mode", d.poll == "1" ? "polling" : d.poll == "0" ? "interrupt" : ""},
                            {"counters", counters}});
        }
        peers.push_back({{"xdomain", x.name},
                         {"peer", x.device_name},
                         {"vendor", x.vendor_name},
                         {"router", x.parent_router},
                         {"port", x.port},
                         {"tx", speed_json(x.tx)},
                         {"rx", speed_json(x.rx)},
                         {"asymmetric", x.tx.lanes != x.rx.lanes},
                         {"rated", r ? nlohmann::json{{"generation", generation_name(r->max_gbps_per_lane)},
                                                      {"lanes", r->max_lanes},
                                                      {"gbps", r->max_gbps_per_lane * r->max_lanes},
                                                      {"source", expect ? "--expect" : r->source}}
                                     : nlohmann::json()},
                         {"rating_error", r ? "" : x.rating_error},
                         {"below_rating", !below.empty()},
                         {"below_rating_text", below},
                         {"odinlink", x.odinlink_offered},
                         {"devices", devs}});
    }
    return {{"kernel", v.kernel_release}, {"module_loaded", v.module_loaded}, {"knobs", link_knobs(v)},
            {"peers", peers}};
}

}  // namespace odl::host
