// SPDX-License-Identifier: MIT
// One libodl device as an NCCL device: its lock, stream allocation, the
// control stream that carries CONNECT messages, and completion routing.
#pragma once

#include <bitset>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm.h"
#include "stats_shm.h"

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
    /// Opens backend:index without waiting for the peer. Throws std::runtime_error.
    link(int dev, const std::string& backend, uint32_t index, const std::string& identity, stats_link* stats);
    ~link();
    link(const link&) = delete;
    link& operator=(const link&) = delete;

    /// Everything below takes this lock (libodl devices are single-threaded).
    std::mutex& mutex() { return m_mu; }

    /// Polls libodl and routes completions; caller holds mutex().
    void progress_locked();
    /// Lock + progress_locked().
    void progress();
    bool up_locked() const { return m_state == ODL_LINK_UP; }
    bool failed_locked() const { return m_state > ODL_LINK_UP; }
    const std::string& peer_locked() const { return m_peer; }

    /// New send comm on a free stream, CONNECT posted; NULL with @why if none.
    comm* open_send_locked(uint64_t listen_id, std::string& why, int& nccl_rc);
    comm* open_recv_locked(uint32_t stream, uint32_t gen);
    /// Frees @c now, or keeps it until its outstanding operations complete.
    void close_comm_locked(comm* c);

    odl_dev* dev() const { return m_dev; }
    int index() const { return m_nccl_dev; }
    const std::string& name() const { return m_name; }
    uint64_t peer_max_msg() const { return m_peer_max_msg; }
    stats_link& stats() { return *m_stats; }

private:
    void post_ctrl_recv_locked();
    void on_ctrl(const odl_completion& c);
    void route(const odl_completion& c);
    void finish_op(comm* c);
    void refresh_state_locked();

    std::mutex m_mu;
    odl_dev* m_dev = nullptr;
    int m_nccl_dev;
    std::string m_name;
    uint32_t m_state = ODL_LINK_CONNECTING;
    std::string m_peer;
    uint64_t m_peer_max_msg = 0;
    connect_msg m_ctrl_buf{};
    bool m_ctrl_posted = false;
    std::bitset<kStreams> m_tx_used;  ///< streams our send comms use
    uint32_t m_next_stream = 1;       ///< round robin: reuse a stream as late as possible
    uint32_t m_gen[kStreams] = {};
    std::vector<std::unique_ptr<comm>> m_zombies;  ///< closed, operations outstanding
    stats_link* m_stats;
    uint32_t m_polls = 0;
};

}  // namespace odl::plugin
