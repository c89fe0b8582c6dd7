// SPDX-License-Identifier: MIT
#include "service.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "files/clock.h"
#include "plugin_stats.h"

#include "uapi/odl_tb5.h"

namespace odl::daemon {


class device_object final
    : public sdbus::AdaptorInterfaces<org::odinlink::Device1_adaptor, sdbus::ManagedObject_adaptor,
                                      sdbus::Properties_adaptor> {
public:
    device_object(sdbus::IConnection& bus, device_props p)
        : AdaptorInterfaces(bus, device_path(p.name)), m_p(std::move(p)) {
        registerAdaptor();
        emitInterfacesAddedSignal({org::odinlink::Device1_adaptor::INTERFACE_NAME});
    }
    ~device_object() {
        emitInterfacesRemovedSignal({org::odinlink::Device1_adaptor::INTERFACE_NAME});
        unregisterAdaptor();
    }
    /// Takes the new reading; true if anything changed (and was signalled).
    bool update(device_props p) {
        const auto names = changed_properties(m_p, p);
        m_p = std::move(p);
        if (names.empty()) return false;
        emitPropertiesChangedSignal(org::odinlink::Device1_adaptor::INTERFACE_NAME, names);
        return true;
    }
    const device_props& props() const { return m_p; }
    /// A new LastTest (signalled).
    void set_last_test(std::string json) {
        m_last_test = std::move(json);
        emitPropertiesChangedSignal(org::odinlink::Device1_adaptor::INTERFACE_NAME, {"LastTest"});
    }
    /// What the daemon serves the peer on it, anew (signalled when it differs).
    void set_peer_service(std::string state) {
        if (state == m_peer_service) return;
        m_peer_service = std::move(state);
        emitPropertiesChangedSignal(org::odinlink::Device1_adaptor::INTERFACE_NAME, {"PeerService"});
    }

private:
    std::string Name() override { return m_p.name; }
    std::string State() override { return m_p.state; }
    std::string Peer() override { return m_p.peer; }
    std::string XDomain() override { return m_p.xdomain; }
    uint32_t TxGbpsPerLane() override { return m_p.tx_gbps_per_lane; }
    uint32_t TxLanes() override { return m_p.tx_lanes; }
    uint32_t RxGbpsPerLane() override { return m_p.rx_gbps_per_lane; }
    uint32_t RxLanes() override { return m_p.rx_lanes; }
    std::string Rating() override { return m_p.rating; }
    std::string BelowRating() override { return m_p.below_rating; }
    uint32_t RingsUsed() override { return m_p.rings_used; }
    uint32_t RingsOffered() override { return m_p.rings_offered; }
    uint32_t ConnectCount() override { return m_p.connect_count; }
    std::string IrqThrottleUs() override { return m_p.irq_throttle_us; }
    std::string Poll() override { return m_p.poll; }
    std::string PeerVersion() override { return m_p.peer_version; }
    std::map<std::string, uint64_t> Counters() override { return m_p.counters; }
    std::string LastTest() override { return m_last_test; }
    std::string PeerService() override { return m_peer_service; }

    device_props m_p;
    std::string m_last_test;  // kept while the device is present
    std::string m_peer_service;
};

std::string device_path(const std::string& name) { return std::string(kRootPath) + "/devices/" + name; }

service::service(sdbus::IConnection& bus, std::string root, std::string version, test_runner& runner,
                 test_records& records, status_url_fn status_url)
    : AdaptorInterfaces(bus, kRootPath),
      m_bus(bus),
      m_root(std::move(root)),
      m_version(std::move(version)),
      m_runner(runner),
      m_records(records),
      m_status_url(std::move(status_url)) {
    registerAdaptor();
}

service::~service() {
    m_devices.clear();
    unregisterAdaptor();
}

unsigned service::refresh() {
    auto now = devices_of(host::read_host_view(m_root));
    // Who has each open (the peer service's trigger), before the props move into their objects.
    std::map<std::string, std::pair<bool, bool>> opens;
    for (const auto& [name, p] : now) opens[name] = {p.open_here, p.open_on_peer};
    unsigned changed = 0;
    bool set_changed = false;
    for (auto it = m_devices.begin(); it != m_devices.end();) {
        if (now.count(it->first)) {
            ++it;
            continue;
        }
        it = m_devices.erase(it);  // InterfacesRemoved
        ++changed;
        set_changed = true;
    }
    for (auto& [name, p] : now) {
        auto it = m_devices.find(name);
        if (it == m_devices.end()) {
            m_devices.emplace(name, std::make_unique<device_object>(m_bus, std::move(p)));  // InterfacesAdded
            ++changed;
            set_changed = true;
        } else if (it->second->update(std::move(p))) {
            ++changed;
        }
    }
    if (set_changed) emitPropertiesChangedSignal(org::odinlink::Daemon1_adaptor::INTERFACE_NAME, {"Devices"});
    if (m_peer) {
        std::map<std::string, peer_service::device_state> present;
        for (const auto& [name, d] : m_devices) {
            try {
                present[name] = {device_index(name), opens[name].first, opens[name].second};
            } catch (const sdbus::Error&) {
                // not an odl_tb5_N name: nothing to serve on
            }
        }
        m_peer->set_devices(present);
    }
    return changed;
}

void service::set_peer_service_state(const std::string& device, const std::string& state) {
    if (auto it = m_devices.find(device); it != m_devices.end()) it->second->set_peer_service(state);
}

bool service::any_session() const {
    for (const auto& [name, d] : m_devices)
        if (d->props().state == "session") return true;
    return false;
}

std::vector<sdbus::ObjectPath> service::Devices() {
    std::vector<sdbus::ObjectPath> v;
    for (const auto& [name, d] : m_devices) v.emplace_back(device_path(name));
    return v;
}

void service::Rescan() { refresh(); }

void service::SetIrqThrottle(const std::string& device, const uint32_t& microseconds) {
    // Only a device we publish: the name never reaches a path otherwise.
    if (!m_devices.count(device))
        throw sdbus::Error("org.odinlink.Error.NoSuchDevice", fmt::format("no device '{}'", device));
    if (microseconds > ODL_TB5_IRQ_THROTTLE_MAX_US)
        throw sdbus::Error("org.odinlink.Error.InvalidArgs",
                           fmt::format("{} us: the throttle is 0..{} us", microseconds, ODL_TB5_IRQ_THROTTLE_MAX_US));
    const std::string path = m_root + "/sys/class/odl_tb5/" + device + "/irq_throttle_us";
    std::ofstream f(path);
    if (f) f << microseconds << '\n';
    f.close();
    if (!f)
        throw sdbus::Error("org.odinlink.Error.Failed",
                           fmt::format("cannot write {} (the module refused it or the device went)", path));
    refresh();
}

// The caller's uid comes from the bus (its credentials), never from the call.
std::string service::StatusPage() {
    const std::string url = m_status_url ? m_status_url(getObject().getCurrentlyProcessedMessage()->getCredsUid()) : "";
    if (url.empty())
        throw sdbus::Error("org.odinlink.Error.NotEnabled",
                           "the status page is off: odl-daemon runs without --status-page (docs/daemon.md)");
    return url;
}

unsigned service::device_index(const std::string& device) const {
    // Checked before anything runs; the name never reaches a command line unchecked.
    const std::string prefix = "odl_tb5_";
    if (m_devices.count(device) == 0 || device.compare(0, prefix.size(), prefix) != 0 ||
        device.size() == prefix.size() || device.size() > prefix.size() + 6 ||
        device.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
        throw sdbus::Error("org.odinlink.Error.NoSuchDevice", fmt::format("no device '{}'", device));
    return unsigned(std::stoul(device.substr(prefix.size())));
}

void service::browse(const std::string& device, const std::string& path) {
    if (!m_listings) throw sdbus::Error("org.odinlink.Error.NotEnabled", "this daemon browses no files");
    const unsigned index = device_index(device);
    refuse_if_served(device);
    if (path.size() > 4096 || path.find('\0') != std::string::npos)
        throw sdbus::Error("org.odinlink.Error.InvalidArgs", "a path of the peer's folder, at most 4096 bytes");
    // A page waits for it: give up on a peer that does not answer after a few seconds (3 s for
    // its server, again after 3 s), not after odl files ls's 10 s twice.
    run_recorded(device, {"files", "ls", "peer:" + path, "--device", std::to_string(index), "--json",
                          "--connect-timeout", "3", "--retry-for", "3"},
                 60, *m_listings, {{"path", path}}, "odl files ls", [](nlohmann::json& out, nlohmann::json& rec) {
                     if (!out.contains("entries")) return false;
                     rec["peer"] = out.value("peer", "");
                     rec["entries"] = std::move(out["entries"]);
                     return true;
                 });
}

void service::fetch(const std::string& device, const std::string& path) {
    if (!m_fetches) throw sdbus::Error("org.odinlink.Error.NotEnabled", "this daemon fetches no files (--fetch-to)");
    const unsigned index = device_index(device);
    refuse_if_served(device);
    const std::string name = path.substr(path.rfind('/') + 1);
    if (path.size() > 4096 || path.find('\0') != std::string::npos || name.empty() || name == "." || name == "..")
        throw sdbus::Error("org.odinlink.Error.InvalidArgs", "a file of the peer's folder, at most 4096 bytes");
    const std::string dest = m_fetch_dir + "/" + name;
    // Never over a file fetched before (or put there by anyone else): odl cp would overwrite it.
    struct stat st {};
    if (lstat(dest.c_str(), &st) == 0)
        throw sdbus::Error("org.odinlink.Error.Exists", fmt::format("{} exists: remove it first", dest));
    // A big file over a slow link may take long: an hour at most.
    run_recorded(device, {"cp", "peer:" + path, dest, "--device", std::to_string(index), "--json", "--retry-for", "5"},
                 3600, *m_fetches, {{"path", path}, {"dest", dest}}, "odl cp",
                 [](nlohmann::json& out, nlohmann::json& rec) {
                     if (!out.value("ok", false)) return false;
                     rec["bytes"] = out.value("bytes", uint64_t(0));
                     rec["seconds"] = out.value("seconds", 0.0);
                     return true;
                 });
}

void service::run_recorded(const std::string& device, std::vector<std::string> args, unsigned limit_s,
                           test_records& records, nlohmann::json rec, const char* cmd, take_fn take) {
    if (m_runner.running(device))
        throw sdbus::Error("org.odinlink.Error.Busy",
                           fmt::format("a test, listing or fetch is already running on {}", device));
    if (!m_keys_dir.empty()) args.insert(args.end(), {"--keys", m_keys_dir});
    rec["state"] = "running";
    rec["started"] = files::utc_iso();
    records.set(device, rec.dump());
    try {
        m_runner.run_odl(device, std::move(args), limit_s,
                         [device, rec, cmd, take, &records](const test_outcome& o) mutable {
                             rec["finished"] = files::utc_iso();
                             nlohmann::json out = o.ok ? nlohmann::json::parse(o.report, nullptr, false) : nlohmann::json();
                             if (o.ok && out.is_object() && take(out, rec)) {
                                 rec["state"] = "done";
                             } else {
                                 rec["state"] = "failed";
                                 rec["error"] = o.ok ? fmt::format("{}'s answer is not its JSON", cmd) : o.error;
                             }
                             records.set(device, rec.dump());
                         });
    } catch (const std::exception& e) {
        rec["state"] = "failed";
        rec["error"] = e.what();
        records.set(device, rec.dump());
        throw sdbus::Error("org.odinlink.Error.Failed", e.what());
    }
}

void service::refuse_if_served(const std::string& device) const {
    if (m_peer && m_peer->serving(device))
        throw sdbus::Error("org.odinlink.Error.Busy",
                           fmt::format("{} is held by this host's daemon, {} for the peer", device, m_peer->what()));
}

void service::start_test(const std::string& device, const std::string& test, test_done_fn done) {
    const unsigned index = device_index(device);
    refuse_if_served(device);
    const auto& known = test_runner::tests();
    if (std::find(known.begin(), known.end(), test) == known.end())
        throw sdbus::Error("org.odinlink.Error.InvalidArgs", fmt::format("no test '{}' (latency, bandwidth)", test));
    if (m_runner.running(device))
        throw sdbus::Error("org.odinlink.Error.Busy", fmt::format("a test or a file listing is already running on {}", device));
    nlohmann::json rec{{"test", test}, {"state", "running"}, {"started", files::utc_iso()}};
    try {
        m_runner.start(device, index, test, [this, device, rec, done](const test_outcome& o) mutable {
            rec["finished"] = files::utc_iso();
            rec["state"] = o.ok ? "passed" : "failed";
            if (o.ok) {
                nlohmann::json report = nlohmann::json::parse(o.report, nullptr, false);
                if (report.is_discarded()) {
                    rec["state"] = "failed";
                    rec["error"] = "odl perf's report is not JSON";
                } else {
                    rec["report"] = std::move(report);
                }
            } else {
                rec["error"] = o.error;
            }
            // The device may have gone meanwhile: the caller still gets the outcome.
            set_last_test(device, rec.dump());
            const bool passed = rec["state"] == "passed";
            if (done) done(passed, passed ? o.report : rec["error"].get<std::string>());
        });
    } catch (const std::exception& e) {
        throw sdbus::Error("org.odinlink.Error.Failed", e.what());
    }
    set_last_test(device, rec.dump());
}

void service::RunTest(sdbus::Result<std::string>&& result, std::string device, std::string test) {
    // std::function wants a copyable callable; the reply is move-only.
    auto reply = std::make_shared<sdbus::Result<std::string>>(std::move(result));
    start_test(device, test, [reply](bool passed, const std::string& what) {
        if (passed)
            reply->returnResults(what);
        else
            reply->returnError(sdbus::Error("org.odinlink.Error.Failed", what));
    });
}

std::string service::PluginStats() { return host::plugin_stats_of_host(m_root, m_plugin_dirs).dump(); }

void service::set_last_test(const std::string& device, const std::string& json) {
    if (auto d = m_devices.find(device); d != m_devices.end()) d->second->set_last_test(json);
    m_records.set(device, json);
}

}  // namespace odl::daemon
