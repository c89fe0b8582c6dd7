// SPDX-License-Identifier: MIT
// The engine's copy threads: one fills outgoing frame slots the engine has
// reserved, one copies received payloads out of frames the engine holds,
// so that a program sending and receiving at once has its copies per frame
// on cores of their own. The engine keeps every protocol decision on its
// own thread; a copy thread only copies, in order, and says how far it got.
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

/// One copy. Send side (@rx false): a data frame to fill, its payload
/// copied from @src into the slot @dst after the header, the checksum taken
/// if @csum, then the header written. Receive side (@rx true): @n bytes of
/// a frame's payload copied from @src to @dst, after its fi.len bytes were
/// checked against fi.csum if @csum.
struct copy_job {
    unsigned char* dst = nullptr;
    const unsigned char* src = nullptr;
    odl_frame_info fi{};
    uint32_t n = 0;
    bool csum = false;
    bool rx = false;
};

/// Fills a send job's slot: the one way a data frame's slot is filled, on
/// the engine's thread or the send thread.
void fill_tx_frame(const copy_job& j);
/// Does a receive job; false when the payload's checksum does not match.
bool copy_rx_payload(const copy_job& j);

class copy_thread {
public:
    /// Jobs queued at most (a power of two); the engine holds no more.
    static constexpr unsigned kCapacity = 64;

    /// Starts the thread, named @name (at most 15 characters are kept).
    explicit copy_thread(const std::string& name);
    /// Stops the thread; jobs not yet done are dropped.
    ~copy_thread();
    copy_thread(const copy_thread&) = delete;
    copy_thread& operator=(const copy_thread&) = delete;

    /// Queues @j (engine thread only); its ticket, which done() reaches
    /// once the copy is made. 0 when the queue is full. The thread sees
    /// jobs in groups (publish()), so that the index lines do not move
    /// between the cores on every frame.
    uint64_t push(const copy_job& j);
    /// Lets the thread see every job pushed (end of a burst).
    void publish();
    /// Tickets handed out so far (engine thread only).
    uint64_t pushed() const { return m_next; }
    /// Every job with a ticket up to this is done, its bytes visible.
    uint64_t done() const { return m_done.load(std::memory_order_acquire); }
    /// A receive job's checksum failed. Valid once done() reached @ticket,
    /// until kCapacity more jobs are pushed: the engine reads it first.
    bool failed(uint64_t ticket) const { return m_failed[(ticket - 1) & (kCapacity - 1)] != 0; }
    /// Publishes, then waits until done() >= @ticket. Bounded: the thread
    /// only copies, it never waits on the link or the peer.
    void wait_done(uint64_t ticket);
    /// Tests: the thread sleeps this long before each job, so that work
    /// queued to it is still queued when the test looks (0: never).
    void set_test_delay_us(uint32_t us) { m_test_delay_us.store(us, std::memory_order_relaxed); }

private:
    void run();

    std::vector<copy_job> m_jobs;
    /// Per job slot, written by the thread before done() passes the job.
    std::vector<uint8_t> m_failed;
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
