// SPDX-License-Identifier: MIT
// Ring all_reduce / all_gather over the plugin's net API (ring.h).
#include "tools/ring.h"

#include <algorithm>
#include <cstring>

namespace odl::plugin::caller {

namespace {
/// Element range of chunk @c when @n elements are cut into @world chunks.
std::size_t chunk_begin(std::size_t n, int world, int c) { return n * std::size_t(c) / std::size_t(world); }
int wrap(int x, int world) { return ((x % world) + world) % world; }
}  // namespace

ring::ring(net_api& api, void* send_comm, void* recv_comm, int rank, int world, std::size_t piece, int in_flight)
    : m_api(api), m_send(send_comm), m_recv(recv_comm), m_rank(rank), m_world(world),
      m_piece(std::max<std::size_t>(piece, 1)), m_in_flight(std::max(in_flight, 1)) {}

ring::~ring() {
    release(m_data);
    release(m_scratch);
}

void ring::fail(const std::string& what) const {
    throw ring_error("rank " + std::to_string(m_rank) + ": " + what);
}

void ring::check_deadline(const char* waiting_for) const {
    if (clock::now() > m_deadline) fail(std::string("timed out waiting for ") + waiting_for);
}

void ring::release(region& r) {
    if (r.send_mh) m_api.dereg_mr(m_send, r.send_mh);
    if (r.recv_mh) m_api.dereg_mr(m_recv, r.recv_mh);
    r = region{};
}

void ring::use_data(void* base, std::size_t bytes) {
    if (m_data.base == base && m_data.bytes == bytes) return;
    release(m_data);
    if (bytes == 0) return;
    if (m_api.reg_mr(m_send, base, bytes, NCCL_PTR_HOST, &m_data.send_mh) != ncclSuccess ||
        m_api.reg_mr(m_recv, base, bytes, NCCL_PTR_HOST, &m_data.recv_mh) != ncclSuccess)
        fail("regMr of the data buffer failed");
    m_data.base = base;
    m_data.bytes = bytes;
}

void ring::exchange(const unsigned char* src, std::size_t slen, unsigned char* dst, std::size_t rlen,
                    void* dst_mh) {
    // A zero-length chunk still travels as one empty message, so both ends
    // of every step count the same messages.
    const std::size_t ns = slen ? (slen + m_piece - 1) / m_piece : 1;
    const std::size_t nr = rlen ? (rlen + m_piece - 1) / m_piece : 1;
    const auto len_of = [this](std::size_t total, std::size_t i) {
        return total ? std::min(m_piece, total - i * m_piece) : 0;
    };
    std::vector<void*> sreq(ns, nullptr), rreq(nr, nullptr);
    std::size_t s_posted = 0, r_posted = 0, s_first = 0, r_first = 0, s_left = ns, r_left = nr;
    int s_out = 0, r_out = 0;
    while (s_left || r_left) {
        check_deadline(r_left ? "data from the previous rank" : "sends to the next rank to complete");
        while (r_posted < nr && r_out < m_in_flight) {
            void* d = dst + r_posted * m_piece;
            std::size_t size = len_of(rlen, r_posted);
            int tag = int(r_posted & 0x7fff);
            void* mh = dst_mh;
            void* req = nullptr;
            if (m_api.irecv(m_recv, 1, &d, &size, &tag, &mh, &req) != ncclSuccess) fail("irecv failed");
            if (!req) break;  // refused for now: test and try again
            rreq[r_posted++] = req;
            ++r_out;
        }
        while (s_posted < ns && s_out < m_in_flight) {
            void* req = nullptr;
            const std::size_t len = len_of(slen, s_posted);
            if (m_api.isend(m_send, const_cast<unsigned char*>(src) + s_posted * m_piece, len,
                            int(s_posted & 0x7fff), m_data.send_mh, &req) != ncclSuccess)
                fail("isend failed");
            if (!req) break;
            sreq[s_posted++] = req;
            ++s_out;
        }
        for (std::size_t i = r_first; i < r_posted; ++i) {
            if (!rreq[i]) continue;
            int done = 0, size = -1;
            if (m_api.test(rreq[i], &done, &size) != ncclSuccess) fail("test of a receive failed");
            if (!done) continue;
            const std::size_t want = len_of(rlen, i);
            if (size < 0 || std::size_t(size) != want)
                fail("received " + std::to_string(size) + " B where " + std::to_string(want) + " B were sent");
            m_received += want;
            rreq[i] = nullptr;
            --r_out;
            --r_left;
        }
        while (r_first < r_posted && !rreq[r_first]) ++r_first;
        for (std::size_t i = s_first; i < s_posted; ++i) {
            if (!sreq[i]) continue;
            int done = 0, size = -1;
            if (m_api.test(sreq[i], &done, &size) != ncclSuccess) fail("test of a send failed");
            if (!done) continue;
            m_sent += len_of(slen, i);
            sreq[i] = nullptr;
            --s_out;
            --s_left;
        }
        while (s_first < s_posted && !sreq[s_first]) ++s_first;
    }
}

void ring::all_reduce(std::uint32_t* data, std::size_t n) {
    use_data(data, n * sizeof(std::uint32_t));
    std::size_t most = 0;
    for (int c = 0; c < m_world; ++c)
        most = std::max(most, chunk_begin(n, m_world, c + 1) - chunk_begin(n, m_world, c));
    if (m_scratch_buf.size() < std::max<std::size_t>(most, 1)) {
        release(m_scratch);
        m_scratch_buf.assign(std::max<std::size_t>(most, 1), 0);
    }
    if (!m_scratch.recv_mh) {
        m_scratch.base = m_scratch_buf.data();
        m_scratch.bytes = m_scratch_buf.size() * sizeof(std::uint32_t);
        if (m_api.reg_mr(m_recv, m_scratch.base, m_scratch.bytes, NCCL_PTR_HOST, &m_scratch.recv_mh) != ncclSuccess)
            fail("regMr of the receive buffer failed");
    }
    const auto at = [&](int c) { return data + chunk_begin(n, m_world, c); };
    const auto len = [&](int c) { return chunk_begin(n, m_world, c + 1) - chunk_begin(n, m_world, c); };
    // Reduce-scatter: after world-1 steps this rank holds chunk rank+1 summed.
    for (int s = 0; s < m_world - 1; ++s) {
        const int sc = wrap(m_rank - s, m_world), rc = wrap(m_rank - s - 1, m_world);
        exchange(reinterpret_cast<const unsigned char*>(at(sc)), len(sc) * 4,
                 reinterpret_cast<unsigned char*>(m_scratch_buf.data()), len(rc) * 4, m_scratch.recv_mh);
        std::uint32_t* d = at(rc);
        for (std::size_t i = 0; i < len(rc); ++i) d[i] += m_scratch_buf[i];
    }
    // All-gather of the summed chunks.
    for (int s = 0; s < m_world - 1; ++s) {
        const int sc = wrap(m_rank + 1 - s, m_world), rc = wrap(m_rank - s, m_world);
        exchange(reinterpret_cast<const unsigned char*>(at(sc)), len(sc) * 4,
                 reinterpret_cast<unsigned char*>(at(rc)), len(rc) * 4, m_data.recv_mh);
    }
}

void ring::all_gather(std::uint32_t* data, std::size_t per) {
    use_data(data, per * std::size_t(m_world) * sizeof(std::uint32_t));
    for (int s = 0; s < m_world - 1; ++s) {
        const int sc = wrap(m_rank - s, m_world), rc = wrap(m_rank - s - 1, m_world);
        exchange(reinterpret_cast<const unsigned char*>(data + per * std::size_t(sc)), per * 4,
                 reinterpret_cast<unsigned char*>(data + per * std::size_t(rc)), per * 4, m_data.recv_mh);
    }
}

}  // namespace odl::plugin::caller
