// SPDX-License-Identifier: MIT
// Ring all_reduce and all_gather driven through the plugin's net API, as
// NCCL's ring algorithm drives it (a send comm to the next rank, a receive
// comm from the previous one, pieces in flight both ways), on host memory
// with a CPU reduction. It moves the same bytes over the same calls as NCCL's
// ring would; it is not NCCL (no GPU, no proxy thread, no protocol choice).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "tools/net_api.h"

namespace odl::plugin::caller {

/// A failed plugin call, a wrong size or a passed deadline.
struct ring_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class ring {
public:
    using clock = std::chrono::steady_clock;

    /// @send_comm reaches rank (rank+1) % world, @recv_comm comes from
    /// rank (rank-1) % world. Messages are at most @piece bytes,
    /// @in_flight of them outstanding each way.
    ring(net_api& api, void* send_comm, void* recv_comm, int rank, int world, std::size_t piece = 1 << 20,
         int in_flight = 8);
    ~ring();
    ring(const ring&) = delete;
    ring& operator=(const ring&) = delete;

    /// Every wait ends with ring_error once @t has passed.
    void set_deadline(clock::time_point t) { m_deadline = t; }

    /// Sums @n elements of @data over all ranks (wrapping uint32), in place.
    void all_reduce(std::uint32_t* data, std::size_t n);
    /// @data holds world × @per elements; this rank's block (at rank × per)
    /// goes to every rank, the others' blocks arrive in place.
    void all_gather(std::uint32_t* data, std::size_t per);

    /// Bytes this rank sent and received through the plugin so far.
    std::uint64_t bytes_sent() const { return m_sent; }
    std::uint64_t bytes_received() const { return m_received; }

private:
    struct region {
        void* base = nullptr;
        std::size_t bytes = 0;
        void* send_mh = nullptr;
        void* recv_mh = nullptr;
    };
    /// Registers @base with both comms unless it is already the current data region.
    void use_data(void* base, std::size_t bytes);
    void release(region& r);
    /// Sends @slen bytes at @src to the next rank and receives @rlen bytes
    /// from the previous one into @dst, both in pieces.
    void exchange(const unsigned char* src, std::size_t slen, unsigned char* dst, std::size_t rlen, void* dst_mh);
    [[noreturn]] void fail(const std::string& what) const;
    void check_deadline(const char* waiting_for) const;

    net_api& m_api;
    void* m_send;
    void* m_recv;
    int m_rank;
    int m_world;
    std::size_t m_piece;
    int m_in_flight;
    clock::time_point m_deadline = clock::time_point::max();
    region m_data;
    region m_scratch;
    std::vector<std::uint32_t> m_scratch_buf;
    std::uint64_t m_sent = 0, m_received = 0;
};

}  // namespace odl::plugin::caller
