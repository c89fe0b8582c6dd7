// SPDX-License-Identifier: MIT
#include "metrics.h"

#include <cctype>
#include <cstdlib>
#include <optional>
#include <map>
#include <vector>

#include <fmt/format.h>

#include "device_props.h"

namespace odl::daemon {
namespace {

/// A label value with \, " and newlines escaped as the format asks.
std::string esc(const std::string& s) {
    std::string o;
    for (char c : s) {
        if (c == '\\' || c == '"')
            o += '\\', o += c;
        else if (c == '\n')
            o += "\\n";
        else
            o += c;
    }
    return o;
}

/// A metric name part from a sysfs file name: [a-z0-9_] only.
std::string name_part(const std::string& s) {
    std::string o;
    for (char c : s) o += std::isalnum(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : '_';
    return o;
}

/// One family: HELP, TYPE, then its samples in the order given.
class family {
public:
    family(std::string name, std::string type, std::string help)
        : m_name(std::move(name)), m_type(std::move(type)), m_help(std::move(help)) {}
    void add(const std::string& labels, double v) { m_samples.emplace_back(labels, v); }
    void write(std::string& out) const {
        if (m_samples.empty()) return;
        out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", m_name, m_help, m_name, m_type);
        for (const auto& [l, v] : m_samples)
            out += l.empty() ? fmt::format("{} {}\n", m_name, v) : fmt::format("{}{{{}}} {}\n", m_name, l, v);
    }

private:
    std::string m_name, m_type, m_help;
    std::vector<std::pair<std::string, double>> m_samples;
};

/// A sysfs value as a number; nothing for "" or garbage.
std::optional<double> number(const std::string& s) {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end == s.c_str() || *end) return std::nullopt;
    return v;
}

double bytes_per_second(uint32_t gbps_per_lane, uint32_t lanes) { return double(gbps_per_lane) * lanes * 1e9 / 8; }

/// The NCCL plugin's links, one series per process and link.
void render_plugin(const nlohmann::json& procs, std::string& out) {
    family count("odl_nccl_plugin_processes", "gauge", "Running processes with the ODL NCCL plugin loaded.");
    family up("odl_nccl_plugin_link_up", "gauge", "1 while a plugin link is up.");
    family comms("odl_nccl_plugin_comms", "gauge", "The plugin's NCCL communicators on a link, by kind.");
    family inflight("odl_nccl_plugin_inflight_requests", "gauge", "Requests in flight on a link.");
    struct counter {
        const char* key;
        family f;
    };
    counter counters[] = {
        {"tx_bytes", {"odl_nccl_plugin_sent_bytes_total", "counter", "Bytes the plugin sent on a link."}},
        {"rx_bytes", {"odl_nccl_plugin_received_bytes_total", "counter", "Bytes the plugin received on a link."}},
        {"tx_msgs", {"odl_nccl_plugin_sent_messages_total", "counter", "Messages the plugin sent on a link."}},
        {"rx_msgs", {"odl_nccl_plugin_received_messages_total", "counter", "Messages the plugin received on a link."}},
        {"errors", {"odl_nccl_plugin_errors_total", "counter", "Requests that failed on a link."}},
        {"odl_credit_stalls", {"odl_nccl_plugin_credit_stalls_total", "counter", "Sends that waited for the peer's credits."}},
        {"odl_link_full_stalls",
         {"odl_nccl_plugin_link_full_stalls_total", "counter", "Sends that waited for room on the link."}},
        {"odl_rx_unexpected_msgs",
         {"odl_nccl_plugin_unexpected_messages_total", "counter", "Messages that arrived before NCCL asked for them."}},
    };
    const auto num = [](const nlohmann::json& o, const char* k) {
        return o.contains(k) && o[k].is_number() ? o[k].get<double>() : 0.0;
    };
    double running = 0;
    for (const auto& p : procs) {
        if (!p.is_object()) continue;
        ++running;
        const std::string pl = fmt::format("pid=\"{}\",process=\"{}\"", p.value("pid", 0u), esc(p.value("process", "")));
        if (!p.contains("links") || !p["links"].is_array()) continue;
        for (const auto& l : p["links"]) {
            const std::string ll = fmt::format("{},link=\"{}\",peer=\"{}\"", pl, esc(l.value("name", "")),
                                               esc(l.value("peer", "")));
            up.add(ll, l.value("link_state", "") == "up" ? 1 : 0);
            comms.add(ll + ",kind=\"send\"", num(l, "send_comms"));
            comms.add(ll + ",kind=\"recv\"", num(l, "recv_comms"));
            comms.add(ll + ",kind=\"closing\"", num(l, "closing_comms"));
            inflight.add(ll, num(l, "inflight"));
            for (auto& c : counters) c.f.add(ll, num(l, c.key));
        }
    }
    count.add("", running);
    for (const family* f : {&count, &up, &comms, &inflight}) f->write(out);
    for (const auto& c : counters) c.f.write(out);
}

}  // namespace

std::string render_metrics(const host::host_view& v, const std::string& version, const nlohmann::json& plugin) {
    const auto devs = devices_of(v);
    family info("odl_daemon_info", "gauge", "The odl-daemon build (version and source hash), always 1.");
    info.add(fmt::format("version=\"{}\"", esc(version)), 1);
    family count("odl_devices", "gauge", "odl_tb5 devices present on this host.");
    count.add("", double(devs.size()));
    family dinfo("odl_device_info", "gauge", "A device and its peer, always 1.");
    family state("odl_device_state", "gauge", "1 for the device's state (login, connected, session, gone), 0 for the others.");
    family speed("odl_link_speed_bytes", "gauge", "Trained link speed per direction, bytes per second.");
    family lanes("odl_link_lanes", "gauge", "Trained lanes per direction.");
    family rated("odl_link_rated_speed_bytes", "gauge", "What the port is rated for per direction, bytes per second (root reads it).");
    family below("odl_link_below_rating", "gauge", "1 when a direction trained below the port's rating.");
    family rings("odl_device_rings", "gauge", "Ring pairs in use and offered.");
    family logins("odl_device_connects_total", "counter", "Logins with the peer since the module loaded.");
    family throttle("odl_device_irq_throttle_seconds", "gauge", "The NHI interrupt throttle of the device's rings.");
    family poll("odl_device_poll", "gauge", "1 when the device's receive side busy-polls.");
    std::map<std::string, family> counters;
    for (const auto& [name, p] : devs) {
        const std::string d = fmt::format("device=\"{}\"", esc(name));
        dinfo.add(fmt::format("{},xdomain=\"{}\",peer=\"{}\",peer_version=\"{}\"", d, esc(p.xdomain), esc(p.peer),
                              esc(p.peer_version)),
                  1);
        for (const char* s : {"login", "connected", "session", "gone"})
            state.add(fmt::format("{},state=\"{}\"", d, s), p.state == s ? 1 : 0);
        if (p.tx_lanes || p.rx_lanes) {
            speed.add(d + ",direction=\"tx\"", bytes_per_second(p.tx_gbps_per_lane, p.tx_lanes));
            speed.add(d + ",direction=\"rx\"", bytes_per_second(p.rx_gbps_per_lane, p.rx_lanes));
            lanes.add(d + ",direction=\"tx\"", p.tx_lanes);
            lanes.add(d + ",direction=\"rx\"", p.rx_lanes);
        }
        if (p.rated_lanes) {
            rated.add(d, bytes_per_second(p.rated_gbps_per_lane, p.rated_lanes));
            below.add(d, p.below_rating.empty() ? 0 : 1);
        }
        rings.add(d + ",kind=\"used\"", p.rings_used);
        rings.add(d + ",kind=\"offered\"", p.rings_offered);
        logins.add(d, p.connect_count);
        if (const auto us = number(p.irq_throttle_us)) throttle.add(d, *us * 1e-6);
        if (!p.poll.empty()) poll.add(d, p.poll == "1" ? 1 : 0);
        for (const auto& [c, n] : p.counters) {
            const std::string m = "odl_device_" + name_part(c) + "_total";
            auto it = counters.try_emplace(m, m, "counter", fmt::format("The module's {} counter (statistics/{}).", c, c)).first;
            it->second.add(d, double(n));
        }
    }
    std::string out;
    for (const family* f : {&info, &count, &dinfo, &state, &speed, &lanes, &rated, &below, &rings, &logins, &throttle, &poll})
        f->write(out);
    for (const auto& [m, f] : counters) f.write(out);
    render_plugin(plugin, out);
    return out;
}

}  // namespace odl::daemon
