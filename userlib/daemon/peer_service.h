// SPDX-License-Identifier: MIT
// What odl-daemon serves to the peer host on every device: files
// (--serve-files DIR: one `odl files serve DIR --device N` child per device),
// the perf suite's server (--answer-tests: `odl perf --server`, started
// again after each client's session), or both (`odl files serve DIR
// --answer-tests`: each session's first message picks). With --on-demand a
// child runs only while the peer has its end open and this host does not
// (odl_tb5 signals the peer's open), for one session: the device is free
// for this host's programs the rest of the time. A child is started when its device
// appears, stopped when it goes, restarted after 1 s (doubling to 30 s)
// when it fails. Children die with the daemon (PR_SET_PDEATHSIG), so a
// killed daemon leaves no server holding a device; a client's `odl cp`
// reconnects and resumes once the daemon is back. Child exits are seen
// through pidfds in the daemon's poll loop (no polling).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace odl::daemon {

class peer_service {
public:
    struct config {
        std::string odl;      ///< the CLI
        std::string dir;      ///< the folder served; "" none
        bool tests = false;   ///< answer the peer's perf clients
        std::string keys;     ///< pair keys ("" the CLI's default)
        std::string backend;  ///< kernel (loopback in tests)
        bool on_demand = false;  ///< a child only while the peer waits, one session each
    };
    /// A device as the daemon last read it.
    struct device_state {
        unsigned index = 0;
        bool open_here = false, open_on_peer = false;
    };
    /// Told each device's new state: what(), "restarting in N s: why", "".
    using state_fn = std::function<void(const std::string& device, const std::string& state)>;

    peer_service(config c, state_fn on_state);
    ~peer_service();
    peer_service(const peer_service&) = delete;
    peer_service& operator=(const peer_service&) = delete;

    /// The devices present now: serves new ones (on demand: those whose
    /// peer waits), stops gone ones.
    void set_devices(const std::map<std::string, device_state>& devices);
    /// True while @device is held for the peer (on demand: while a child runs).
    bool serving(const std::string& device) const;
    /// What it is ("serving files from DIR", "answering tests", "serving
    /// files from DIR and answering tests").
    std::string what() const;

    /// The pidfds to poll (POLLIN: the child ended) and the next restart
    /// (monotonic µs, UINT64_MAX none).
    std::vector<int> fds() const;
    uint64_t deadline_us() const;
    /// Reaps ended children, starts those due.
    void handle();

private:
    struct child {
        unsigned index = 0;
        pid_t pid = -1;
        int pidfd = -1;
        uint64_t started_us = 0;
        uint64_t restart_at_us = 0;  ///< when not running and @pending: when to start again
        bool pending = false;        ///< a start is due at @restart_at_us
        unsigned backoff_s = 1;
        bool peer_waits = false;     ///< on demand: the peer's end open, this host's not
        uint64_t peer_gone_us = 0;   ///< on demand: since when the running child's peer is not open
    };
    void start(const std::string& device, child& c);
    void stop(child& c);
    std::string child_name() const;  ///< the child's command, for its exit's words
    std::string idle_words() const;  ///< on demand, no child: what PeerService says
    /// Starts the next child now, or (on demand, no peer waiting) goes idle.
    void resume(const std::string& device, child& c);
    /// Failed: start again after the backoff (on demand: if the peer still waits then).
    void back_off(const std::string& device, child& c, const std::string& why);

    config m_cfg;
    state_fn m_on_state;
    std::map<std::string, child> m_children;
};

}  // namespace odl::daemon
