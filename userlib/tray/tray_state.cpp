// SPDX-License-Identifier: MIT
#include "tray_state.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "host_view.h"

namespace odl::tray {

namespace {

bool linked(const device_view& d) { return d.state == "connected" || d.state == "session"; }

/// "Gen4 x2 (80 Gb/s)", or "Tx Gen4 x3 (120 Gb/s), Rx Gen4 x1 (40 Gb/s)" when the directions differ.
std::string link_text(const device_view& d) {
    const host::lane_speed tx{d.tx_gbps_per_lane, d.tx_lanes}, rx{d.rx_gbps_per_lane, d.rx_lanes};
    if (tx.gbps_per_lane == rx.gbps_per_lane && tx.lanes == rx.lanes) return host::speed_text(tx);
    return "Tx " + host::speed_text(tx) + ", Rx " + host::speed_text(rx);
}

std::string size_text(uint64_t b) {
    if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MiB", b >> 20);
    if (b >= 1024 && b % 1024 == 0) return fmt::format("{} KiB", b >> 10);
    return fmt::format("{} B", b);
}

}  // namespace

const char* icon_name(link_kind k) {
    switch (k) {
    case link_kind::connected: return "odl-connected";
    case link_kind::degraded: return "odl-degraded";
    case link_kind::disconnected: return "odl-disconnected";
    case link_kind::daemon_down: break;
    }
    return "odl-daemon-down";
}

const char* kind_name(link_kind k) {
    switch (k) {
    case link_kind::connected: return "connected";
    case link_kind::degraded: return "degraded";
    case link_kind::disconnected: return "disconnected";
    case link_kind::daemon_down: break;
    }
    return "daemon down";
}

std::string last_test_line(const std::string& json) {
    if (json.empty()) return "";
    const auto j = nlohmann::json::parse(json, nullptr, false);
    if (!j.is_object() || !j.contains("test") || !j.contains("state")) return "last test: unreadable";
    const std::string test = j.value("test", ""), state = j.value("state", "");
    if (state == "running") return test + " test running";
    if (state != "passed") return fmt::format("{} test {}: {}", test, state, j.value("error", "no reason given"));
    std::string parts;
    const auto& rows = j.contains("report") ? j["report"].value("results", nlohmann::json::array()) : nlohmann::json();
    for (const auto& r : rows) {
        if (!r.is_object() || !r.contains("size")) continue;
        const uint64_t size = r.value("size", uint64_t(0));
        if (!parts.empty()) parts += ", ";
        if (r.contains("p50_us"))
            parts += fmt::format("{} {:.1f} us", size_text(size), r.value("p50_us", 0.0));
        else if (r.contains("gbps"))
            parts += fmt::format("{} {:.1f} Gb/s", size_text(size), r.value("gbps", 0.0));
    }
    if (parts.empty()) return test + " test passed";
    return fmt::format("{} test passed: {}{}", test, parts, test == "latency" ? " (p50 one way)" : "");
}

tray_view summarize(bool daemon_up, const std::map<std::string, device_view>& devices) {
    tray_view v;
    if (!daemon_up) {
        v.kind = link_kind::daemon_down;
        v.title = "OdinLink: odl-daemon is not running";
        return v;
    }
    unsigned up = 0;
    bool below = false;
    for (const auto& [name, d] : devices) {
        std::string line = name + ": ";
        if (linked(d)) {
            ++up;
            if (v.test_device.empty()) v.test_device = name;
            line += (d.peer.empty() ? std::string("peer") : d.peer) + ", " + link_text(d);
            if (!d.below_rating.empty()) {
                below = true;
                line += " - below rating: " + d.below_rating;
            }
        } else {
            line += d.state.empty() ? std::string("state unknown") : d.state;
        }
        v.lines.push_back(line);
        if (const std::string t = last_test_line(d.last_test); !t.empty()) v.lines.push_back("    " + t);
    }
    if (!up) {
        v.kind = link_kind::disconnected;
        v.title = devices.empty() ? "OdinLink: no peer" : "OdinLink: no peer connected";
    } else {
        v.kind = below ? link_kind::degraded : link_kind::connected;
        v.title = fmt::format("OdinLink: {} peer{} connected{}", up, up == 1 ? "" : "s",
                              below ? ", below the port's rating" : "");
    }
    return v;
}

}  // namespace odl::tray
