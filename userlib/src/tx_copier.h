// SPDX-License-Identifier: MIT
// The engine's send thread: copies outgoing payloads into frame slots the
// engine has reserved, so that a program sending and receiving at once has
// its two copies per frame on two cores. The engine keeps every protocol
// decision on its own thread; this one only fills slots, in order, and
// says how far it got.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "odl/wire/frame_codec.h"

namespace odl {

/// One data frame to fill: its payload copied from @src into @slot after
/// the header, the checksum taken if asked, then the header written.
struct tx_job {
    unsigned char* slot = nullptr;
    const unsigned char* src = nullptr;
    odl_frame_info fi{};  ///< fi.len payload bytes; fi.csum is filled in when @csum
    bool csum = false;
};

/// Fills @j's slot: the payload copied, its checksum taken if asked, the
/// header written last. The one way a data frame's slot is filled, on the
/// engine's thread or the send thread.
void fill_tx_frame(const tx_job& j);

class tx_copier {
public:
    /// Jobs queued at most (a power of two); the engine reserves no more.
    static constexpr unsigned kCapacity = 64;

    /// Starts the thread, named @name (at most 15 characters are kept).
    explicit tx_copier(const std::string& name);
    /// Stops the thread; jobs not yet done are dropped.
    ~tx_copier();
    tx_copier(const tx_copier&) = delete;
    tx_copier& operator=(const tx_copier&) = delete;

    /// Queues @j (engine thread only); its ticket, which done() reaches
    /// once the slot is filled. 0 when the queue is full. The thread sees
    /// jobs in groups (publish()), so that the index lines do not move
    /// between the cores on every frame.
    uint64_t push(const tx_job& j);
    /// Lets the thread see every job pushed (end of a burst).
    void publish();
    /// Tickets handed out so far (engine thread only).
    uint64_t pushed() const { return m_next; }
    /// Every job with a ticket up to this is done, its bytes visible.
    uint64_t done() const { return m_done.load(std::memory_order_acquire); }
    /// Publishes, then waits until done() >= @ticket. Bounded: the thread
    /// only copies, it never waits on the link or the peer.
    void wait_done(uint64_t ticket);
    /// Tests: the thread sleeps this long before each job, so that work
    /// queued to it is still queued when the test looks (0: never).
    void set_test_delay_us(uint32_t us) { m_test_delay_us.store(us, std::memory_order_relaxed); }

private:
    void run();

    std::vector<tx_job> m_jobs;
    // Engine thread's own view: next ticket, last published, done as last read.
    uint64_t m_next = 0;
    uint64_t m_published = 0;
    uint64_t m_done_seen = 0;
    alignas(64) std::atomic<uint64_t> m_pushed{0};
    alignas(64) std::atomic<uint64_t> m_done{0};
    alignas(64) std::atomic<bool> m_sleeping{false};
    std::atomic<bool> m_stop{false};
    std::atomic<uint32_t> m_test_delay_us{0};
    std::mutex m_mu;
    std::condition_variable m_cv;
    std::thread m_thread;
};

}  // namespace odl
