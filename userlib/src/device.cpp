// SPDX-License-Identifier: MIT
// odl::device_impl: argument checks shared by every backend, memory regions, waits.
#include "device.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "clock.h"
#include "error.h"
#include "log.h"
#include "odl/wire/frame.h"

namespace odl {
namespace {

/// Waiting: spin first (lowest latency), then yield, then short sleeps so an
/// idle waiter does not burn a core.
constexpr uint64_t kSpinNs = 50'000;
constexpr uint64_t kYieldNs = 1'000'000;
constexpr auto kSleep = std::chrono::microseconds(50);
/// Waiting for a peer that has not come for a second (a server waiting for
/// its client): a few milliseconds more to connect cost nothing, 50 us sleeps
/// cost a tenth of a core.
constexpr uint64_t kPatientNs = 1'000'000'000;
constexpr auto kPatientSleep = std::chrono::milliseconds(5);

void backoff(uint64_t waited_ns) {
    if (waited_ns < kSpinNs) return;
    if (waited_ns < kYieldNs) std::this_thread::yield();
    else std::this_thread::sleep_for(kSleep);
}

/// ODL_OPEN_TX_THREAD and ODL_OPEN_RX_THREAD are taken on machines with a
/// core to spare for each end's threads (below that, a copy thread slows
/// both ends: measured on 2 cores); ODL_TX_THREAD / ODL_RX_THREAD=on|off
/// override either way, to compare.
constexpr long kCopyThreadMinCpus = 4;

bool copy_thread_wanted(const char* env, bool asked) {
    const char* v = std::getenv(env);
    if (v && (!std::strcmp(v, "on") || !std::strcmp(v, "1"))) return true;
    if (v && (!std::strcmp(v, "off") || !std::strcmp(v, "0"))) return false;
    if (v && *v && std::strcmp(v, "auto"))
        log::write(ODL_LOG_WARN, "{}='{}' is not on, off or auto; using auto", env, v);
    return asked && ::sysconf(_SC_NPROCESSORS_ONLN) >= kCopyThreadMinCpus;
}

}  // namespace

open_config make_config(const odl_open_params& p) {
    if (p.struct_size < sizeof(odl_open_params))
        throw error(ODL_ERR_INVAL, fmt::format("odl_open_params.struct_size is {}, expected {} (call odl_open_params_init)",
                                               p.struct_size, sizeof(odl_open_params)));
    open_config c;
    c.backend = p.backend && *p.backend ? p.backend : "loopback";
    c.index = p.index;
    c.flags = p.flags;
    c.num_streams = p.num_streams;
    c.window_frames = p.window_frames;
    c.max_msg_bytes = p.max_msg_bytes;
    c.max_posted = p.max_posted;
    c.connect_timeout_ns = p.connect_timeout_ns;
    c.peer_timeout_ns = p.peer_timeout_ns;
    if (p.node_name && *p.node_name) {
        c.node_name = p.node_name;
    } else {
        char host[HOST_NAME_MAX + 1] = {};
        gethostname(host, sizeof(host) - 1);
        c.node_name = host;
    }
    if (c.flags & ~uint32_t(ODL_OPEN_NONBLOCK | ODL_OPEN_CHECKSUM | ODL_OPEN_TX_THREAD | ODL_OPEN_RX_THREAD))
        throw error(ODL_ERR_INVAL, fmt::format("unknown open flags 0x{:x}", c.flags));
    c.tx_thread = copy_thread_wanted("ODL_TX_THREAD", c.flags & ODL_OPEN_TX_THREAD);
    c.rx_thread = copy_thread_wanted("ODL_RX_THREAD", c.flags & ODL_OPEN_RX_THREAD);
    if (c.num_streams < 1 || c.num_streams > ODL_MAX_STREAMS)
        throw error(ODL_ERR_INVAL, fmt::format("num_streams {} out of range 1-{}", c.num_streams, ODL_MAX_STREAMS));
    if (c.window_frames < 1 || c.window_frames > ODL_MAX_WINDOW_FRAMES)
        throw error(ODL_ERR_INVAL, fmt::format("window_frames {} out of range 1-{}", c.window_frames, ODL_MAX_WINDOW_FRAMES));
    if (c.max_msg_bytes > UINT32_MAX)
        throw error(ODL_ERR_INVAL, fmt::format("max_msg_bytes {} above the protocol limit {}", c.max_msg_bytes, UINT32_MAX));
    if (c.max_posted < 1 || c.max_posted > (1u << 20))
        throw error(ODL_ERR_INVAL, fmt::format("max_posted {} out of range 1-{}", c.max_posted, 1u << 20));
    return c;
}

device_impl::device_impl(std::unique_ptr<backend> b, open_config cfg) : m_backend(std::move(b)), m_cfg(std::move(cfg)) {}

device_impl::~device_impl() { m_backend->shutdown(); }

int device_impl::link_error(int status) const {
    return set_last_error(status, m_backend->failure().empty() ? odl_strerror(status) : m_backend->failure());
}

void device_impl::wait_until_up() {
    if (m_cfg.flags & ODL_OPEN_NONBLOCK) return;
    const uint64_t start = now_ns();
    for (;;) {
        // Completions cannot exist before the link is up, except failures of
        // nothing (no operation can be posted before open returns).
        odl_completion c;
        m_backend->poll(&c, 0);
        const uint32_t st = m_backend->link_state();
        if (st == ODL_LINK_UP) return;
        if (st != ODL_LINK_CONNECTING) throw error(m_backend->error_status(), m_backend->failure());
        const uint64_t waited = now_ns() - start;
        if (waited >= m_cfg.connect_timeout_ns)
            throw error(ODL_ERR_TIMEOUT, fmt::format("{} {}: no peer within {:.1f} s", m_cfg.backend, m_cfg.index,
                                                     double(m_cfg.connect_timeout_ns) / 1e9));
        if (waited < kPatientNs)
            backoff(waited);
        else
            std::this_thread::sleep_for(kPatientSleep);
    }
}

int device_impl::check_mr(const odl_mr* mr, const void* buf, size_t len) const {
    if (!mr) return ODL_OK;
    const bool known = std::any_of(m_mrs.begin(), m_mrs.end(), [mr](const auto& m) { return m.get() == mr; });
    if (!known) return set_last_error(ODL_ERR_INVAL, "memory region is not registered on this device");
    const auto* p = static_cast<const unsigned char*>(buf);
    if (p < mr->addr || len > mr->len || size_t(p - mr->addr) > mr->len - len)
        return set_last_error(ODL_ERR_INVAL, "buffer lies outside its memory region");
    return ODL_OK;
}

int device_impl::post_send(uint32_t stream, uint32_t tag, const void* buf, size_t len, odl_mr* mr, uint64_t ctx) {
    if (!buf && len) return set_last_error(ODL_ERR_INVAL, "NULL buffer with non-zero length");
    if (stream >= m_cfg.num_streams)
        return set_last_error(ODL_ERR_INVAL, fmt::format("stream {} out of range (device has {})", stream, m_cfg.num_streams));
    if (tag == ODL_TAG_ANY) return set_last_error(ODL_ERR_INVAL, "ODL_TAG_ANY is only for receives");
    if (len > UINT32_MAX) return set_last_error(ODL_ERR_TOO_BIG, fmt::format("{}-byte message above the protocol limit", len));
    if (int rc = check_mr(mr, buf, len); rc != ODL_OK) return rc;
    const int rc = m_backend->post_send(stream, tag, buf, len, ctx);
    switch (rc) {
    case ODL_OK: return ODL_OK;
    case ODL_ERR_AGAIN: return set_last_error(rc, fmt::format("stream {}: {} sends already posted", stream, m_cfg.max_posted));
    case ODL_ERR_TOO_BIG: return set_last_error(rc, fmt::format("{}-byte message larger than the peer accepts", len));
    case ODL_ERR_INVAL: return set_last_error(rc, fmt::format("stream {} not negotiated with the peer", stream));
    default: return link_error(rc);
    }
}

int device_impl::post_recv(uint32_t stream, uint32_t tag, void* buf, size_t cap, odl_mr* mr, uint64_t ctx) {
    if (!buf && cap) return set_last_error(ODL_ERR_INVAL, "NULL buffer with non-zero capacity");
    if (stream >= m_cfg.num_streams)
        return set_last_error(ODL_ERR_INVAL, fmt::format("stream {} out of range (device has {})", stream, m_cfg.num_streams));
    if (int rc = check_mr(mr, buf, cap); rc != ODL_OK) return rc;
    const int rc = m_backend->post_recv(stream, tag, buf, cap, ctx);
    switch (rc) {
    case ODL_OK: return ODL_OK;
    case ODL_ERR_AGAIN: return set_last_error(rc, fmt::format("stream {}: {} receives already posted", stream, m_cfg.max_posted));
    case ODL_ERR_INVAL: return set_last_error(rc, fmt::format("stream {} not negotiated with the peer", stream));
    default: return link_error(rc);
    }
}

int device_impl::cancel(uint32_t stream, uint64_t ctx) {
    if (stream >= m_cfg.num_streams)
        return set_last_error(ODL_ERR_INVAL, fmt::format("stream {} out of range (device has {})", stream, m_cfg.num_streams));
    const int rc = m_backend->cancel(stream, ctx);
    switch (rc) {
    case ODL_OK: return ODL_OK;
    case ODL_ERR_AGAIN: return set_last_error(rc, fmt::format("stream {}: operation {} has started", stream, ctx));
    default: return set_last_error(rc, fmt::format("stream {}: no posted operation {}", stream, ctx));
    }
}

int device_impl::discard(uint32_t stream, uint32_t tag, uint32_t mask, uint32_t flags) {
    if (stream >= m_cfg.num_streams)
        return set_last_error(ODL_ERR_INVAL, fmt::format("stream {} out of range (device has {})", stream, m_cfg.num_streams));
    if (flags & ~uint32_t(ODL_DISCARD_STOP)) return set_last_error(ODL_ERR_INVAL, fmt::format("unknown flags 0x{:x}", flags));
    const int rc = m_backend->discard(stream, tag, mask, flags);
    if (rc != ODL_OK) return set_last_error(rc, fmt::format("stream {} not negotiated with the peer", stream));
    return ODL_OK;
}

size_t device_impl::poll(odl_completion* comps, size_t max) {
    const size_t n = m_backend->poll(comps, max);
    if (n > 0 && m_backend->error_status() != ODL_OK) link_error(m_backend->error_status());
    return n;
}

int device_impl::wait(odl_completion* comps, size_t max, size_t* n, uint64_t timeout_ns) {
    const uint64_t start = now_ns();
    for (;;) {
        *n = poll(comps, max);
        if (*n > 0) return ODL_OK;
        // A failed link produces no more completions: say so instead of waiting.
        if (m_backend->error_status() != ODL_OK) return link_error(m_backend->error_status());
        const uint64_t waited = now_ns() - start;
        if (waited >= timeout_ns) return set_last_error(ODL_ERR_TIMEOUT, "no completion before the timeout");
        backoff(waited);
    }
}

void device_impl::query(odl_dev_info& info) const {
    const uint32_t size = info.struct_size;
    info = odl_dev_info{};
    info.struct_size = size;
    m_backend->query(info);
}

void device_impl::stats(odl_stats& s) const {
    m_backend->stats(s);
    s.struct_size = sizeof(odl_stats);
}

odl_mr* device_impl::reg_mr(void* addr, size_t len) {
    if (!addr || !len) throw error(ODL_ERR_INVAL, "cannot register an empty region");
    m_mrs.push_back(std::make_unique<odl_mr>(odl_mr{static_cast<unsigned char*>(addr), len}));
    return m_mrs.back().get();
}

int device_impl::dereg_mr(odl_mr* mr) {
    auto it = std::find_if(m_mrs.begin(), m_mrs.end(), [mr](const auto& m) { return m.get() == mr; });
    if (it == m_mrs.end()) return set_last_error(ODL_ERR_INVAL, "memory region is not registered on this device");
    m_mrs.erase(it);
    return ODL_OK;
}

}  // namespace odl
