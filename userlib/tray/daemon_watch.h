// SPDX-License-Identifier: MIT
// odl-tray's view of odl-daemon over D-Bus: whether its name has an owner,
// and its devices with their properties, kept current from its signals
// (NameOwnerChanged, InterfacesAdded / Removed, PropertiesChanged), never
// by polling. The bus's event loop runs in a thread of its own; each
// change is handed to a callback with a copy of the whole view.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <sdbus-c++/sdbus-c++.h>

#include "tray_state.h"

namespace odl::tray {

class daemon_watch {
public:
    using change_fn = std::function<void(bool daemon_up, std::map<std::string, device_view> devices)>;
    using reply_fn = std::function<void(const std::string& error)>;  ///< "" on success

    /// Watches the daemon on @bus ("system", "session" or an address);
    /// @on_change runs in the bus thread. Throws sdbus::Error when the bus
    /// itself cannot be reached.
    daemon_watch(const std::string& bus, change_fn on_change);
    ~daemon_watch();
    daemon_watch(const daemon_watch&) = delete;
    daemon_watch& operator=(const daemon_watch&) = delete;

    /// StatusPage(): the calling user's address of the page. Throws sdbus::Error.
    std::string status_page_url();
    /// RunTest(@device, @test) without waiting; @done runs in the bus thread.
    void run_test(const std::string& device, const std::string& test, reply_fn done);

private:
    using props_t = std::map<std::string, sdbus::Variant>;
    void reload();
    void publish();  // m_mu held

    std::unique_ptr<sdbus::IConnection> m_conn;
    std::unique_ptr<sdbus::IProxy> m_daemon;
    change_fn m_on_change;
    std::mutex m_mu;
    bool m_up = false;
    std::map<std::string, props_t> m_devices;  // by object path
    std::vector<sdbus::Slot> m_matches;
};

}  // namespace odl::tray
