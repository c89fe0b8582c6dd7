// SPDX-License-Identifier: MIT
// The backend interface: one open device's message operations. Loopback and
// sim carry frames through the frame engine; kernel hands messages to odl_tb5.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "odl/odl.h"

namespace odl {

/// Settings every backend receives, already checked and defaulted.
struct open_config {
    std::string backend;
    uint32_t index = 0;
    uint32_t flags = 0;
    uint32_t num_streams = 1;
    uint32_t window_frames = 512;
    /// Data frames, all streams together, the transport can take in before
    /// it runs out of receive buffers; advertised in HELLO so the peer keeps
    /// fewer in flight (per-stream windows may then add up to more). 0: no
    /// link-wide limit.
    uint32_t link_window_frames = 0;
    /// Single-copy rendezvous (ODL_FEAT_RNDV): messages of at least this many
    /// bytes are read by the receiver straight from the sender's memory.
    /// 0: never. Only for transports whose two ends share one kernel.
    uint64_t rndv_min_bytes = 0;
    /// The peer's pid as this process's kernel knows it (0: unknown, no
    /// rendezvous); asked once the link is up. Set with rndv_min_bytes.
    std::function<uint32_t()> rndv_peer_pid;
    uint64_t max_msg_bytes = 64ull << 20;
    uint32_t max_posted = 1024;
    uint64_t connect_timeout_ns = 10'000'000'000ull;
    uint64_t peer_timeout_ns = 1'000'000'000ull;
    std::string node_name;
    /// Timed links: a completion held for its due time that is due within
    /// this long is waited for in the poll that finds it (the modelled
    /// completion time already holds the host's own polling; seen only at
    /// the caller's next poll it would pay for that twice).
    uint64_t spin_to_due_ns = 2'000;
    /// A thread of the engine's own copies outgoing payloads into the link
    /// (ODL_OPEN_TX_THREAD, ODL_TX_THREAD), where the link can reserve ahead.
    bool tx_thread = false;
    /// One copies received payloads out of the link (ODL_OPEN_RX_THREAD,
    /// ODL_RX_THREAD), where the link can hold frames.
    bool rx_thread = false;
};

class backend {
public:
    virtual ~backend() = default;

    /// Arguments were checked by odl::device_impl; @len fits the local limits.
    virtual int post_send(uint32_t stream, uint32_t tag, const void* buf, uint64_t len, uint64_t ctx) = 0;
    virtual int post_recv(uint32_t stream, uint32_t tag, void* buf, uint64_t cap, uint64_t ctx) = 0;
    /// Withdraws a posted, unstarted operation; see odl_cancel().
    virtual int cancel(uint32_t stream, uint64_t ctx) = 0;
    /// Drops the stream's incoming messages selected by tag; see odl_discard().
    virtual int discard(uint32_t stream, uint32_t tag, uint32_t mask, uint32_t flags) = 0;
    /// Makes progress; appends up to @max completions. Never blocks.
    virtual size_t poll(odl_completion* comps, size_t max) = 0;
    virtual void query(odl_dev_info& info) const = 0;
    virtual void stats(odl_stats& stats) const = 0;
    /// Link state as enum odl_link_state.
    virtual uint32_t link_state() const = 0;
    /// Why the link failed, in words; empty while it is healthy.
    virtual std::string failure() const = 0;
    /// The status every operation gets once the link failed; ODL_OK before.
    virtual int error_status() const = 0;
    /// Says goodbye to the peer (best effort, bounded).
    virtual void shutdown() = 0;
};

/// Comma-separated backend names known to this build.
const char* backend_names();
/// Device count of @backend; throws odl::error(ODL_ERR_NO_BACKEND) if unknown.
uint32_t device_count(const std::string& backend);
/// Opens one device. Throws odl::error.
std::unique_ptr<backend> open_backend(const open_config& cfg);
/// Two connected in-process loopback endpoints. Throws odl::error.
std::pair<std::unique_ptr<backend>, std::unique_ptr<backend>> open_loopback_backend_pair(const open_config& cfg);
/// Both ends (A, B) of sim link cfg.index in this process, on the model
/// server (ODL_SIM_SOCKET=inproc: the in-process one). Throws odl::error.
std::pair<std::unique_ptr<backend>, std::unique_ptr<backend>> open_sim_backend_pair(const open_config& cfg);

}  // namespace odl
