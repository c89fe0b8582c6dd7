// SPDX-License-Identifier: MIT
#include "daemon_watch.h"

#include <chrono>
#include <vector>

namespace odl::tray {

namespace {

constexpr const char* kName = "org.odinlink.Daemon1";
constexpr const char* kRoot = "/org/odinlink/Daemon1";
constexpr const char* kDeviceIface = "org.odinlink.Device1";

std::unique_ptr<sdbus::IConnection> connect(const std::string& bus) {
    if (bus == "system") return sdbus::createSystemBusConnection();
    if (bus == "session") return sdbus::createSessionBusConnection();
    return sdbus::createSessionBusConnectionWithAddress(bus);
}

template <typename T>
T value_of(const std::map<std::string, sdbus::Variant>& p, const char* key) {
    const auto it = p.find(key);
    if (it == p.end()) return T{};
    try {
        return it->second.get<T>();
    } catch (const sdbus::Error&) {
        return T{};  // a type the XML does not give it: treated as unknown
    }
}

}  // namespace

daemon_watch::daemon_watch(const std::string& bus, change_fn on_change)
    : m_conn(connect(bus)), m_on_change(std::move(on_change)) {
    m_daemon = sdbus::createProxy(*m_conn, kName, kRoot);
    m_matches.push_back(m_conn->addMatch(
        std::string("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                    "member='NameOwnerChanged',arg0='") + kName + "'",
        [this](sdbus::Message& msg) {
            std::string name, old_owner, new_owner;
            msg >> name >> old_owner >> new_owner;
            if (!new_owner.empty()) return reload();
            std::lock_guard<std::mutex> g(m_mu);
            m_up = false;
            m_devices.clear();
            publish();
        }));
    m_matches.push_back(m_conn->addMatch(
        std::string("type='signal',sender='") + kName + "',interface='org.freedesktop.DBus.ObjectManager',path='" +
            kRoot + "'",
        [this](sdbus::Message& msg) {
            sdbus::ObjectPath path;
            msg >> path;
            std::lock_guard<std::mutex> g(m_mu);
            if (msg.getMemberName() == std::string("InterfacesAdded")) {
                std::map<std::string, props_t> ifaces;
                msg >> ifaces;
                if (const auto it = ifaces.find(kDeviceIface); it != ifaces.end()) m_devices[path] = it->second;
            } else if (msg.getMemberName() == std::string("InterfacesRemoved")) {
                m_devices.erase(path);
            }
            publish();
        }));
    m_matches.push_back(m_conn->addMatch(
        std::string("type='signal',sender='") + kName +
            "',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',path_namespace='" + kRoot +
            "/devices'",
        [this](sdbus::Message& msg) {
            std::string iface;
            props_t changed;
            msg >> iface >> changed;
            if (iface != kDeviceIface) return;
            std::lock_guard<std::mutex> g(m_mu);
            const auto it = m_devices.find(msg.getPath());
            if (it == m_devices.end()) return;  // InterfacesAdded brings it whole
            for (auto& [k, v] : changed) it->second[k] = std::move(v);
            publish();
        }));
    bool up = false;
    auto dbus = sdbus::createProxy(*m_conn, "org.freedesktop.DBus", "/org/freedesktop/DBus");
    dbus->callMethod("NameHasOwner").onInterface("org.freedesktop.DBus").withArguments(std::string(kName)).storeResultsTo(up);
    if (up) {
        reload();
    } else {
        std::lock_guard<std::mutex> g(m_mu);
        publish();
    }
    m_conn->enterEventLoopAsync();
}

daemon_watch::~daemon_watch() {
    m_conn->leaveEventLoop();
    m_matches.clear();
    m_daemon.reset();
}

void daemon_watch::reload() {
    m_daemon->callMethodAsync("GetManagedObjects")
        .onInterface("org.freedesktop.DBus.ObjectManager")
        .uponReplyInvoke([this](const sdbus::Error* e,
                                const std::map<sdbus::ObjectPath, std::map<std::string, props_t>>& objects) {
            std::lock_guard<std::mutex> g(m_mu);
            m_devices.clear();
            m_up = e == nullptr;  // the daemon left again before answering: down
            if (m_up)
                for (const auto& [path, ifaces] : objects)
                    if (const auto it = ifaces.find(kDeviceIface); it != ifaces.end()) m_devices[path] = it->second;
            publish();
        });
}

void daemon_watch::publish() {
    std::map<std::string, device_view> out;
    for (const auto& [path, p] : m_devices) {
        device_view d;
        d.name = value_of<std::string>(p, "Name");
        d.state = value_of<std::string>(p, "State");
        d.peer = value_of<std::string>(p, "Peer");
        d.below_rating = value_of<std::string>(p, "BelowRating");
        d.last_test = value_of<std::string>(p, "LastTest");
        d.tx_gbps_per_lane = value_of<uint32_t>(p, "TxGbpsPerLane");
        d.tx_lanes = value_of<uint32_t>(p, "TxLanes");
        d.rx_gbps_per_lane = value_of<uint32_t>(p, "RxGbpsPerLane");
        d.rx_lanes = value_of<uint32_t>(p, "RxLanes");
        if (d.name.empty()) d.name = path.substr(path.rfind('/') + 1);
        out.emplace(d.name, std::move(d));
    }
    if (m_on_change) m_on_change(m_up, std::move(out));
}

std::string daemon_watch::status_page_url() {
    std::string url;
    m_daemon->callMethod("StatusPage").onInterface(kName).storeResultsTo(url);
    return url;
}

void daemon_watch::run_test(const std::string& device, const std::string& test, reply_fn done) {
    // The daemon stops a test after its own limit (120 s by default); wait a little longer.
    m_daemon->callMethodAsync("RunTest")
        .onInterface(kName)
        .withArguments(device, test)
        .withTimeout(std::chrono::seconds(150))
        .uponReplyInvoke([done = std::move(done)](const sdbus::Error* e, const std::string&) {
            done(e ? e->getMessage().empty() ? e->getName() : e->getMessage() : std::string());
        });
}

}  // namespace odl::tray
