// SPDX-License-Identifier: MIT
// In-memory frame link for engine tests.
#include "mem_link.h"

#include "odl/wire/frame.h"

namespace odl::test {

unsigned char* mem_link::tx_reserve() {
    const std::lock_guard<std::mutex> hold(m_st->lock);
    mem_queue& q = m_st->q[m_side];
    if (m_st->cut || q.frames.size() >= q.capacity) return nullptr;
    m_tx_buf.assign(ODL_FRAME_MAX_BYTES, 0);
    return m_tx_buf.data();
}

void mem_link::tx_commit(size_t bytes) {
    const std::lock_guard<std::mutex> hold(m_st->lock);
    m_tx_buf.resize(bytes);
    if (m_st->drop && m_st->drop(m_side, m_tx_buf)) {
        ++m_st->dropped;
        m_tx_buf = {};
        return;
    }
    m_st->q[m_side].frames.push_back(std::move(m_tx_buf));
    m_tx_buf = {};
}

rx_frame mem_link::rx_peek() {
    const std::lock_guard<std::mutex> hold(m_st->lock);
    auto& frames = m_st->q[1 - m_side].frames;
    if (frames.empty()) return {};
    return rx_frame{frames.front().data(), frames.front().size(), m_st->due_ns ? m_st->due_ns(m_side) : 0};
}

void mem_link::rx_release() {
    const std::lock_guard<std::mutex> hold(m_st->lock);
    m_st->q[1 - m_side].frames.pop_front();
}

}  // namespace odl::test
