// SPDX-License-Identifier: MIT
// odl-linkd: serves several hosts' QEMU devices over one unix socket
// (protocol: include/odl/wire/linkd.h) and drives the model for them.
#pragma once

#include <atomic>
#include <ostream>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "odl/model/linkd/backend.h"
#include "odl/model/linkd/det_control.h"
#include "odl/wire/linkd.h"
#include "odl/model/linkd/unix_listen.h"

namespace odl::model::linkd {

struct server_config {
    std::string socket_path;              ///< AF_UNIX SOCK_SEQPACKET path
    std::string control_path;             ///< optional: scenario commands
    unsigned max_bad_msgs = 1000;         ///< then the host is dropped
    int handshake_timeout_ms = 2000;      ///< HELLO must arrive by then
    int dma_timeout_ms = 5000;            ///< per DMA completion
    int max_poll_ms = 10;                 ///< longest sleep between model steps
    bool shared_ram = true;               ///< accept guest RAM (MEM_MAP) for direct DMA
    bool verbose = false;
    /// Deterministic mode (QEMU -icount): the hosts run one after the other
    /// in windows of simulated time the server grants (SYNC), the model
    /// advances between windows; no wall clock anywhere.
    bool deterministic = false;
    std::uint64_t quantum_ps = 1'000'000;          ///< window while anything moves
    std::uint64_t quantum_max_ps = 1'000'000'000;  ///< longest window, all idle
    int sync_timeout_ms = 60000;                   ///< a granted host must SYNC by then
    /// Deterministic mode: cable commands ("cable [N] EVENT", as on
    /// --control) applied at model time ps, in order.
    std::vector<std::pair<std::uint64_t, std::string>> timed_events;
    /// Deterministic mode: one line per turn (the windows granted, where
    /// each host stopped, what moved), to find where two runs part.
    std::ostream* windows = nullptr;
    /// Control commands starting with "fault " go here (odl-linkd's fault
    /// injector); the reply starts with "ok" or "error". Unset: refused.
    std::function<std::string(const std::string&)> fault_command;
};

/// Per-connection counters (also the unit tests' window into the server).
struct conn_stats {
    std::uint64_t rx_msgs = 0;
    std::uint64_t tx_msgs = 0;
    std::uint64_t bad_msgs = 0;
    std::uint64_t seq_gaps = 0;
    std::uint64_t mmio_reads = 0;
    std::uint64_t mmio_writes = 0;
    std::uint64_t dma_reads = 0;
    std::uint64_t dma_writes = 0;
    std::uint64_t dma_direct = 0;  ///< DMAs served from shared guest RAM
    std::uint64_t mem_maps = 0;    ///< guest RAM ranges mapped
    std::uint64_t irqs = 0;
    std::uint64_t send_waits = 0;  ///< datagrams taken in while our send waited for room
};

class connection;

class server {
public:
    server(server_config cfg, model_backend& model);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    /// Binds and listens; false (with @err) on failure.
    bool listen(std::string& err);
    /// Serves until stop() is called (from any thread or a signal handler).
    void run();
    void stop() { m_stop.store(true); }

    /// Simulated time now, ps (wall-clock paced).
    std::uint64_t now_ps() const;
    /// Number of hosts attached right now.
    unsigned attached_hosts() const;
    std::uint64_t total_bad_msgs() const { return m_total_bad; }
    /// Counters summed over the connections alive now (tests, logs).
    conn_stats live_stats() const;

private:
    friend class connection;
    void accept_one();
    void serve(connection& c);
    void handle(connection& c, const struct odl_linkd_msg& m,
                const std::uint8_t* payload);
    void handshake(connection& c, const struct odl_linkd_msg& m);
    // @why: what went wrong, said on stderr; nullptr when the host left in order.
    void drop(connection& c, const char* why);
    void reap();
    void note_bad(connection& c, const char* why);
    void control_one();
    void note_control(const std::string& cmd);
    std::string control_reply(const std::string& cmd);
    bool det_request(const std::string& cmd, int fd);
    void det_answer();
    void det_hold(const std::vector<connection*>& order);
    void mailbox(connection& c, const struct odl_linkd_msg& m);
    void notify_links();
    void run_deterministic();
    bool det_window(connection& c, std::uint64_t horizon_ps);
    void det_turn(const std::vector<connection*>& order, std::uint64_t& quantum, std::size_t& next_event);
    std::string cable_command(const std::string& cmd);

    server_config m_cfg;
    model_backend& m_model;
    unix_listener m_listen, m_ctl;
    std::atomic<bool> m_stop{false};
    std::vector<std::unique_ptr<connection>> m_conns;
    std::int64_t m_start_ns = 0;
    std::uint64_t m_det_now = 0;    ///< deterministic mode: model time reached
    bool m_det_started = false;     ///< deterministic mode: the first window was granted
    std::uint64_t m_det_late = 0;   ///< deterministic mode: SYNCs stamped past their horizon
    std::vector<std::uint64_t> m_det_wait_ns;  ///< deterministic mode: wall ns each host ran its windows
    std::uint64_t m_det_model_ns = 0;          ///< deterministic mode: wall ns in the model
    det_control m_det_ctl;                     ///< deterministic mode: the guests' mailboxes, the controller
    int m_det_reply_fd = -1;                   ///< deterministic mode: the control connection awaiting its answer
    std::uint64_t m_det_mbox_msgs = 0;         ///< deterministic mode: mailbox messages (they move no model)
    std::int64_t m_det_hold_ns = 0;            ///< deterministic mode: when the waiting hosts were last told of a hold
    std::uint64_t m_total_bad = 0;
};

}  // namespace odl::model::linkd
