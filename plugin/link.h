// SPDX-License-Identifier: MIT
// One libodl device (a "lane" of an NCCL device) and the progress thread
// that owns it: stream allocation, the control stream that carries CONNECT
// messages, a lock-free queue of work from NCCL's threads, completion
// routing. libodl devices are single-threaded; only the progress thread
// calls into the device between construction and destruction.
#pragma once

#include <atomic>
#include <bitset>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "comm.h"
#include "odl/wire/nccl_stats.h"

namespace odl::plugin {

constexpr uint32_t kCtrlStream = 0;  ///< stream 0 carries CONNECT messages
constexpr uint32_t kStreams = 64;    ///< libodl's maximum; 1..63 carry data

/// CONNECT: tells the listener's process which stream a new connection uses.
struct connect_msg {
    uint32_t magic;      ///< kConnectMagic
    uint32_t version;    ///< 1
    uint64_t listen_id;  ///< listen_comm::id from the handle
    uint32_t stream;
    uint32_t gen;
};
static_assert(sizeof(connect_msg) == 24, "wire size");
constexpr uint32_t kConnectMagic = 0x434c444fu;  // "ODLC"

/// A CONNECT received and not yet accepted.
struct pending_connect {
    uint64_t listen_id;
    link* ln;
    uint32_t stream;
    uint32_t gen;
};

class link {
public:
    /// Opens backend:index without waiting for the peer and starts the
    /// progress thread. @dev is the NCCL device this lane belongs to.
    /// Throws std::runtime_error.
    link(int dev, const std::string& backend, uint32_t index, const std::string& identity, stats_link* stats);
    /// Stops and joins the progress thread, then closes the device.
    ~link();
    link(const link&) = delete;
    link& operator=(const link&) = delete;

    // Any thread.
    bool up() const { return m_state.load(std::memory_order_acquire) == ODL_LINK_UP; }
    bool failed() const { return m_state.load(std::memory_order_acquire) > ODL_LINK_UP; }
    /// Valid once up() was seen true.
    const std::string& peer() const { return m_peer; }
    /// The link's rate when opened, Mb/s (0: the backend does not know).
    uint32_t rate_mbps() const { return m_rate_mbps; }
    uint64_t peer_max_msg() const { return m_peer_max_msg.load(std::memory_order_acquire); }
    int send_comms() const { return m_send_comms.load(std::memory_order_relaxed); }

    /// New send comm on a free stream, CONNECT queued; NULL with @why if none.
    comm* open_send(uint64_t listen_id, std::string& why);
    comm* open_recv(uint32_t stream, uint32_t gen);
    /// Hands @c to the progress thread, which cancels its outstanding
    /// operations and frees it once none is left. NCCL must not use it again.
    void close_comm(comm* c);
    /// Queues a filled request (its pending count set).
    void submit(request* r) { push(&r->node); }
    /// Runs @fn on the progress thread and waits for it.
    void call(std::function<void()> fn);
    /// Has the progress thread drop whatever arrives on @stream for
    /// generation @gen (a connection that will never be accepted).
    void drop_stream(uint32_t stream, uint32_t gen);

    odl_dev* dev() const { return m_dev; }  ///< for calls run through call()
    int index() const { return m_nccl_dev; }
    const std::string& name() const { return m_name; }
    stats_link& stats() { return *m_stats; }

private:
    void push(op* o);
    void wake();
    void run();
    void process(op* o);
    void post_request(request* r);
    void do_close(comm* c);
    void discard_gen(uint32_t stream, uint32_t gen);
    void post_ctrl_recv();
    void on_ctrl(const odl_completion& c);
    void route(const odl_completion& c);
    void finish_op(comm* c);
    void free_comm(comm* c);
    void refresh_state();
    void report_model_timing();  ///< at close: the sim backend's late frames, if any
    void report_recovery();      ///< at close: frames resent after losses, if any
    void idle_wait(uint64_t timeout_ns);

    odl_dev* m_dev = nullptr;
    uint32_t m_rate_mbps = 0;
    int m_nccl_dev;
    std::string m_name;
    stats_link* m_stats;

    // Shared with NCCL's threads.
    std::atomic<uint32_t> m_state{ODL_LINK_CONNECTING};
    std::string m_peer;  ///< written before m_state becomes UP
    std::atomic<uint64_t> m_peer_max_msg{0};
    std::atomic<int> m_send_comms{0};
    std::atomic<op*> m_head{nullptr};      ///< lock-free LIFO; the thread reverses it
    std::atomic<uint32_t> m_doorbell{0};   ///< futex word
    std::atomic<int> m_sleeping{0};
    std::atomic<bool> m_stop{false};
    std::mutex m_alloc_mu;             ///< stream allocation (connect vs. the thread freeing)
    std::bitset<kStreams> m_tx_used;   ///< streams our send comms use
    uint32_t m_next_stream = 1;        ///< round robin: reuse a stream as late as possible
    uint32_t m_gen[kStreams] = {};

    // Progress thread only.
    connect_msg m_ctrl_buf{};
    bool m_ctrl_posted = false;
    int m_outstanding = 0;             ///< libodl data operations posted, not completed
    std::vector<comm*> m_zombies;      ///< closed, operations outstanding (stats: closing_comms)
    uint32_t m_polls = 0;
    std::thread m_thread;
};

}  // namespace odl::plugin
