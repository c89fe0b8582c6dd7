// SPDX-License-Identifier: MIT
// Single-producer single-consumer ring of frame slots in shared memory: the
// loopback stand-in for an NHI Tx/Rx ring pair.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "odl/wire/frame.h"

namespace odl {

/// Index words on their own cache lines so producer and consumer do not
/// false-share. Lives in shared memory; both sides see the same object.
struct spsc_ring_ctrl {
    alignas(64) std::atomic<uint64_t> head{0};  ///< frames published by the producer
    alignas(64) std::atomic<uint64_t> tail{0};  ///< frames freed by the consumer
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory atomics");

/// One frame slot: length word, padding to a cache line, then the frame.
struct spsc_slot {
    uint32_t len;  ///< frame bytes, written by the producer before publishing
    uint32_t reserved[15];
    alignas(64) unsigned char data[ODL_FRAME_MAX_BYTES];
};
static_assert(sizeof(spsc_slot) == 64 + ODL_FRAME_MAX_BYTES, "slot layout");

/// Producer or consumer view of one ring; each side caches the other's index
/// and reloads it only when the ring looks full (or empty).
class spsc_ring {
public:
    spsc_ring() = default;
    spsc_ring(spsc_ring_ctrl* ctrl, spsc_slot* slots, uint32_t count)
        : m_ctrl(ctrl), m_slots(slots), m_mask(count - 1), m_count(count) {}

    unsigned char* reserve() {
        const uint64_t head = m_ctrl->head.load(std::memory_order_relaxed);
        if (head - m_cached_tail >= m_count) {
            m_cached_tail = m_ctrl->tail.load(std::memory_order_acquire);
            if (head - m_cached_tail >= m_count) return nullptr;
        }
        return m_slots[head & m_mask].data;
    }

    void commit(size_t bytes) {
        const uint64_t head = m_ctrl->head.load(std::memory_order_relaxed);
        m_slots[head & m_mask].len = static_cast<uint32_t>(bytes);
        m_ctrl->head.store(head + 1, std::memory_order_release);
    }

    /// Returns the next slot or nullptr; @len is 0 if the stored length is
    /// impossible (the peer wrote garbage), so the decoder refuses the frame.
    const unsigned char* peek(size_t& len) {
        const uint64_t tail = m_ctrl->tail.load(std::memory_order_relaxed);
        if (tail == m_cached_head) {
            m_cached_head = m_ctrl->head.load(std::memory_order_acquire);
            if (tail == m_cached_head) return nullptr;
        }
        const spsc_slot& s = m_slots[tail & m_mask];
        len = s.len <= ODL_FRAME_MAX_BYTES ? s.len : 0;
        return s.data;
    }

    void release() {
        const uint64_t tail = m_ctrl->tail.load(std::memory_order_relaxed);
        m_ctrl->tail.store(tail + 1, std::memory_order_release);
    }

private:
    spsc_ring_ctrl* m_ctrl = nullptr;
    spsc_slot* m_slots = nullptr;
    uint64_t m_mask = 0;
    uint64_t m_count = 0;
    uint64_t m_cached_tail = 0;
    uint64_t m_cached_head = 0;
};

}  // namespace odl
