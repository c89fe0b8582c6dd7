// SPDX-License-Identifier: MIT
// The engine's copy threads (copy_thread.h).
#include "copy_thread.h"

#include <pthread.h>

#include <chrono>
#include <cstring>

#include "clock.h"
#include "crc32c.h"
#include "odl/wire/spin.h"

namespace odl {
namespace {

/// With the queue empty the thread spins this long for the next job (a
/// message's frames come microseconds apart), then sleeps until woken.
constexpr uint64_t kCopierSpinNs = 20'000;
/// A sleeping thread looks again after this long even if never woken: a
/// safety net only (publish() wakes it), long enough that an idle device's
/// thread costs nothing to speak of.
constexpr auto kCopierNap = std::chrono::milliseconds(20);
/// Jobs pushed before the thread is shown them even mid-burst, so that it
/// starts copying while the engine prepares the rest.
constexpr uint64_t kPublishEvery = 4;

}  // namespace

copy_thread::copy_thread(const std::string& name) : m_jobs(kCapacity), m_failed(kCapacity) {
    m_thread = std::thread([this] { run(); });
    // Best effort: the name only helps whoever reads top or a profile.
    pthread_setname_np(m_thread.native_handle(), name.substr(0, 15).c_str());
}

copy_thread::~copy_thread() {
    m_stop.store(true, std::memory_order_seq_cst);
    {
        std::lock_guard<std::mutex> lk(m_mu);
        m_cv.notify_one();
    }
    m_thread.join();
}

uint64_t copy_thread::push(const copy_job& j) {
    const uint64_t n = m_next;
    if (n - m_done_seen >= kCapacity) {
        m_done_seen = m_done.load(std::memory_order_acquire);
        if (n - m_done_seen >= kCapacity) {
            publish();
            return 0;
        }
    }
    m_jobs[n & (kCapacity - 1)] = j;
    m_next = n + 1;
    if (m_next - m_published >= kPublishEvery) publish();
    return n + 1;
}

void copy_thread::publish() {
    if (m_published == m_next) return;
    m_published = m_next;
    m_pushed.store(m_next, std::memory_order_release);
    // Pairs with the thread's fence between its m_sleeping store and its
    // last look at m_pushed: one of the two sees the other.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (m_sleeping.load(std::memory_order_relaxed)) {
        std::lock_guard<std::mutex> lk(m_mu);
        m_cv.notify_one();
    }
}

void copy_thread::wait_done(uint64_t ticket) {
    publish();
    for (unsigned i = 0; done() < ticket; ++i) {
        if (i < 4096) odl_cpu_relax();
        else std::this_thread::yield();
    }
}

void fill_tx_frame(const copy_job& j) {
    odl_frame_info fi = j.fi;
    if (fi.len) std::memcpy(j.dst + ODL_FRAME_HDR_BYTES, j.src, fi.len);
    if (j.csum) fi.csum = crc32c(j.dst + ODL_FRAME_HDR_BYTES, fi.len);
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(j.dst), &fi);
}

bool copy_rx_payload(const copy_job& j) {
    // Checked in the frame, then copied: as the engine does it itself.
    const bool ok = !j.csum || crc32c(j.src, j.fi.len) == j.fi.csum;
    if (j.n) std::memcpy(j.dst, j.src, j.n);
    return ok;
}

void copy_thread::run() {
    uint64_t done = 0;
    uint64_t idle_since = 0;
    unsigned turns = 0;
    while (!m_stop.load(std::memory_order_relaxed)) {
        if (done != m_pushed.load(std::memory_order_acquire)) {
            if (const uint32_t us = m_test_delay_us.load(std::memory_order_relaxed))
                std::this_thread::sleep_for(std::chrono::microseconds(us));
            const copy_job& j = m_jobs[done & (kCapacity - 1)];
            if (j.rx) m_failed[done & (kCapacity - 1)] = !copy_rx_payload(j);
            else fill_tx_frame(j);
            m_done.store(++done, std::memory_order_release);
            idle_since = 0;
            continue;
        }
        // The clock only every 64 turns: a read costs more than a turn.
        if ((++turns & 63) != 0) {
            odl_cpu_relax();
            continue;
        }
        const uint64_t now = now_ns();
        if (!idle_since) idle_since = now;
        if (now - idle_since < kCopierSpinNs) continue;
        m_sleeping.store(true, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_seq_cst);
        if (done == m_pushed.load(std::memory_order_relaxed)) {
            std::unique_lock<std::mutex> lk(m_mu);
            m_cv.wait_for(lk, kCopierNap, [&] {
                return m_stop.load(std::memory_order_relaxed) || done != m_pushed.load(std::memory_order_relaxed);
            });
        }
        m_sleeping.store(false, std::memory_order_relaxed);
        idle_since = 0;
    }
}

}  // namespace odl
