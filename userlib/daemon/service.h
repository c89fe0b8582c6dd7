// SPDX-License-Identifier: MIT
// odl-daemon's objects on the bus: /org/odinlink/Daemon1 (org.odinlink.Daemon1
// and the ObjectManager) and one org.odinlink.Device1 object per device.
// refresh() re-reads the host view and turns every difference into a
// signal: InterfacesAdded / InterfacesRemoved for devices that came or
// went, PropertiesChanged for the rest.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <sdbus-c++/sdbus-c++.h>

#include "device_props.h"
#include "peer_service.h"
#include "test_runner.h"
#include "org.odinlink.Daemon1_adaptor.h"

namespace odl::daemon {

constexpr const char* kBusName = "org.odinlink.Daemon1";
constexpr const char* kRootPath = "/org/odinlink/Daemon1";

class device_object;

class service final
    : public sdbus::AdaptorInterfaces<org::odinlink::Daemon1_adaptor, sdbus::ObjectManager_adaptor,
                                      sdbus::Properties_adaptor> {
public:
    /// The status page's address for a uid, or "" when it is off.
    using status_url_fn = std::function<std::string(uid_t)>;
    /// Objects on @bus for the host under @root ("" the real one); tests
    /// run by @runner, their outcomes kept in @records too.
    service(sdbus::IConnection& bus, std::string root, std::string version, test_runner& runner,
            test_records& records, status_url_fn status_url = {});
    ~service();

    /// Re-reads every device; signals what changed. Returns the number of
    /// devices whose properties (or presence) changed.
    unsigned refresh();
    /// True when a device is in a session (its counters move).
    bool any_session() const;
    /// A finished test: passed with odl perf's report, or failed with the reason.
    using test_done_fn = std::function<void(bool passed, const std::string& report_or_error)>;
    /// Starts @test on @device (RunTest's checks, LastTest kept and
    /// signalled); @done, if set, runs when it ends. Throws sdbus::Error
    /// (NoSuchDevice, InvalidArgs, Busy, Failed) when it cannot start.
    void start_test(const std::string& device, const std::string& test, test_done_fn done = {});
    /// Lists what the peer serves under @path ("" all of it) over @device
    /// (`odl files ls`, with the pair keys in @keys_dir or the CLI's
    /// default); the listing goes to the records given to
    /// enable_file_browser(). Throws sdbus::Error as start_test() does.
    void browse(const std::string& device, const std::string& path);
    /// Turns browse() on: listings kept in @listings, as JSON per device.
    void enable_file_browser(test_records& listings, std::string keys_dir) {
        m_listings = &listings;
        m_keys_dir = std::move(keys_dir);
    }
    /// Fetches the peer's file @path (relative to the folder it serves)
    /// over @device into the folder given to enable_fetch(), under its own
    /// name (`odl cp`: SHA-256 compared, resumable); the outcome goes to
    /// the records given there. Throws sdbus::Error as browse() does, and
    /// Exists when a file of that name was fetched before.
    void fetch(const std::string& device, const std::string& path);
    /// Turns fetch() on: files land in @dir, outcomes kept in @fetches.
    void enable_fetch(test_records& fetches, std::string dir) {
        m_fetches = &fetches;
        m_fetch_dir = std::move(dir);
    }
    /// Serves the peer on every device through @peer (refresh() tells it
    /// which are present); its states go to PeerService via
    /// set_peer_service_state().
    void enable_peer_service(peer_service& peer) { m_peer = &peer; }
    void set_peer_service_state(const std::string& device, const std::string& state);
    /// Folders with plugin statistics besides each user's runtime folder.
    void add_plugin_stats_dir(std::string dir) { m_plugin_dirs.push_back(std::move(dir)); }

private:
    void Rescan() override;
    void SetIrqThrottle(const std::string& device, const uint32_t& microseconds) override;
    std::string Version() override { return m_version; }
    std::vector<sdbus::ObjectPath> Devices() override;
    std::string StatusPage() override;
    void RunTest(sdbus::Result<std::string>&& result, std::string device, std::string test) override;
    std::string PluginStats() override;
    /// The index of @device ("odl_tb5_N", published now), else NoSuchDevice.
    unsigned device_index(const std::string& device) const;
    /// Busy when the peer service holds @device.
    void refuse_if_served(const std::string& device) const;
    /// Fills @rec from @cmd's JSON output @out; false: not the answer wanted.
    using take_fn = std::function<bool(nlohmann::json& out, nlohmann::json& rec)>;
    /// Runs the CLI with @args over @device (Busy while another runs),
    /// keeping @rec in @records: running, then done (as @take fills it) or
    /// failed with the reason. Throws Failed when it cannot start.
    void run_recorded(const std::string& device, std::vector<std::string> args, unsigned limit_s,
                      test_records& records, nlohmann::json rec, const char* cmd, take_fn take);
    /// A device's new LastTest: its object (if it is still there) and the records.
    void set_last_test(const std::string& device, const std::string& json);

    sdbus::IConnection& m_bus;
    std::string m_root;
    std::string m_version;
    test_runner& m_runner;
    test_records& m_records;
    std::vector<std::string> m_plugin_dirs;
    status_url_fn m_status_url;
    test_records* m_listings = nullptr;
    test_records* m_fetches = nullptr;
    std::string m_fetch_dir;
    peer_service* m_peer = nullptr;
    std::string m_keys_dir;
    std::map<std::string, std::unique_ptr<device_object>> m_devices;
};

/// The object path of device @name ("odl_tb5_0").
std::string device_path(const std::string& name);

}  // namespace odl::daemon
