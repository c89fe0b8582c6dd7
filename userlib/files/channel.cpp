// SPDX-License-Identifier: MIT
#include "channel.h"

#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "clock.h"

namespace odl::files {

namespace {

constexpr size_t kSendSlots = 8;
constexpr size_t kRecvSlots = 4;
constexpr size_t kSlotBytes = ODL_FILES_MAX_MSG;
constexpr uint64_t kRecvBit = 1ull << 32;
constexpr uint64_t kSliceNs = 200'000'000;  // a wait's slice: the stop flag is looked at between them
constexpr uint64_t kBusyNs = 20'000'000;      // waiting for a message this long is busy; then idle
constexpr uint64_t kIdleSleepNs = 5'000'000;  // an idle receiver looks every 5 ms

uint32_t dir_of(odl_files_side s) { return s == ODL_FILES_FROM_CLIENT ? 0 : 1; }


std::string status_text(int status) {
    const char* why = odl_last_error();
    return fmt::format("{}{}{}", odl_strerror(status), why && *why ? ": " : "", why ? why : "");
}

}  // namespace

channel::channel(odl::device& dev, odl_files_side me, const std::atomic<bool>* stop, std::string_view first)
    : m_dev(dev), m_me(me), m_stop(stop), m_send(kSendSlots), m_recv(kRecvSlots + !first.empty()) {
    if (first.size() > kSlotBytes) throw std::logic_error("a first message longer than a receive slot");
    // Buffers are not cleared: pages become resident only where messages go.
    for (auto& s : m_send) s.buf.reset(new uint8_t[kSlotBytes]);
    for (size_t i = 0; i < m_recv.size(); i++) {
        m_recv[i].buf.reset(new uint8_t[kSlotBytes]);
        if (i == 0 && !first.empty()) {
            // As if slot 0 had received it: take() hands it out first and
            // then posts the slot like any other.
            std::memcpy(m_recv[0].buf.get(), first.data(), first.size());
            m_recv[0].len = first.size();
            m_recv[0].done = true;  // not busy: libodl never had it
            m_recv_order.push_back(0);
            continue;
        }
        post_recv(i);
    }
}

channel::~channel() {
    // libodl may still hold our buffers: withdraw what is posted (the
    // device, closed after us, drops the rest).
    for (size_t i = 0; i < m_recv.size(); i++)
        if (m_recv[i].busy) m_dev.cancel(0, kRecvBit | i);
    for (size_t i = 0; i < m_send.size(); i++)
        if (m_send[i].busy) m_dev.cancel(0, i);
}

void channel::set_keys(const key32& tx, const key32& rx) {
    m_tx = std::make_unique<gmac>(tx);
    m_rx = std::make_unique<gmac>(rx);
}

void channel::post_recv(size_t i) {
    slot& s = m_recv[i];
    const int rc = m_dev.post_recv(0, ODL_TAG_ANY, s.buf.get(), kSlotBytes, kRecvBit | i);
    if (rc != ODL_OK) throw link_error("cannot post a receive: " + status_text(rc));
    s.busy = true;
    s.done = false;
    m_recv_order.push_back(i);
}

void channel::progress(uint64_t timeout_ns) {
    // A link error is kept, not thrown here: messages that completed before
    // it (the peer's last words before it closed) are still taken first.
    if (!m_link_error.empty()) return;
    odl_completion c[16];
    size_t n = 0;
    const int rc = timeout_ns ? odl_wait(m_dev.get(), c, 16, &n, timeout_ns) : odl_poll(m_dev.get(), c, 16, &n);
    if (rc != ODL_OK && rc != ODL_ERR_TIMEOUT) m_link_error = status_text(rc);
    for (size_t k = 0; k < n; k++) {
        const bool rx = c[k].ctx & kRecvBit;
        const size_t i = size_t(c[k].ctx & 0xffffffffu);
        auto& pool = rx ? m_recv : m_send;
        if (i >= pool.size()) continue;
        slot& s = pool[i];
        if (c[k].status == ODL_ERR_CANCELED) {
            s.busy = false;
            continue;
        }
        if (c[k].status == ODL_ERR_TRUNCATED)
            throw protocol_error(fmt::format("peer sent a message of {} bytes (at most {})", c[k].len, kSlotBytes));
        if (c[k].status != ODL_OK) {
            if (m_link_error.empty()) m_link_error = fmt::format("link: {}", odl_strerror(c[k].status));
            if (!rx) s.busy = false;
            continue;
        }
        s.len = size_t(c[k].len);
        s.done = true;
        if (!rx) s.busy = false;
    }
}

void channel::check_link() const {
    if (!m_link_error.empty()) throw link_error(m_link_error);
}

size_t channel::free_send_slot() {
    const uint64_t start = now_ns();
    for (;;) {
        for (size_t i = 0; i < m_send.size(); i++)
            if (!m_send[i].busy && i != m_data_slot) return i;
        if (m_stop && m_stop->load()) throw stopped();
        check_link();
        progress(kSliceNs);
        if (now_ns() - start > 60'000'000'000ull) throw link_error("no send finished in 60 s");
    }
}

void channel::fill_header(uint8_t* p, uint16_t type, size_t payload_len, uint32_t flags, uint64_t seq) const {
    odl_files_hdr h{};
    h.magic = odl_cpu_le32(ODL_FILES_MAGIC);
    h.version = odl_cpu_le16(ODL_FILES_VERSION);
    h.type = odl_cpu_le16(type);
    h.len = odl_cpu_le32(uint32_t(payload_len));
    h.flags = odl_cpu_le32(flags);
    h.seq = odl_cpu_le64(seq);
    std::memcpy(p, &h, sizeof(h));
}

void channel::post_send_slot(size_t i, size_t len) {
    check_link();
    slot& s = m_send[i];
    const int rc = m_dev.post_send(0, 0, s.buf.get(), len, i);
    if (rc != ODL_OK) throw link_error("cannot send: " + status_text(rc));
    s.busy = true;
    s.done = false;
}

void channel::send(uint16_t type, const void* a, size_t na, const void* b, size_t nb, uint32_t flags) {
    const size_t plen = na + nb;
    if (plen > ODL_FILES_MAX_PAYLOAD) throw std::logic_error("file-service message over the limit");
    const size_t i = free_send_slot();
    uint8_t* p = m_send[i].buf.get();
    const uint64_t seq = type == ODL_FILES_PAIR ? 0 : ++m_tx_seq;
    fill_header(p, type, plen, flags, seq);
    if (na) std::memcpy(p + ODL_FILES_HDR_BYTES, a, na);
    if (nb) std::memcpy(p + ODL_FILES_HDR_BYTES + na, b, nb);
    tag16 t{};
    if (type != ODL_FILES_PAIR) {
        if (!m_tx) throw std::logic_error("file-service message before the session keys");
        t = m_tx->tag(seq, dir_of(m_me), p, ODL_FILES_HDR_BYTES + plen, nullptr, 0);
    }
    std::memcpy(p + ODL_FILES_HDR_BYTES + plen, t.data(), t.size());
    post_send_slot(i, ODL_FILES_HDR_BYTES + plen + ODL_FILES_TAG_BYTES);
}

void channel::send_hello(const odl_files_hello& h, const key32& pair_key) {
    const size_t i = free_send_slot();
    uint8_t* p = m_send[i].buf.get();
    const uint64_t seq = ++m_tx_seq;
    fill_header(p, ODL_FILES_HELLO, sizeof(h), 0, seq);
    std::memcpy(p + ODL_FILES_HDR_BYTES, &h, sizeof(h));
    // The pair key tags a HELLO in every session: its nonce is the
    // HELLO's random one, never the sequence number.
    gmac g(pair_key);
    const tag16 t = g.tag(h.nonce, p, ODL_FILES_HDR_BYTES + sizeof(h), nullptr, 0);
    std::memcpy(p + ODL_FILES_HDR_BYTES + sizeof(h), t.data(), t.size());
    post_send_slot(i, ODL_FILES_HDR_BYTES + sizeof(h) + ODL_FILES_TAG_BYTES);
}

void channel::send_refusal(odl_files_err code, const std::string& text) {
    const std::string t = text.substr(0, ODL_FILES_TEXT_MAX);
    const odl_files_error e{odl_cpu_le32(uint32_t(code)), odl_cpu_le32(uint32_t(t.size()))};
    const size_t i = free_send_slot();
    uint8_t* p = m_send[i].buf.get();
    const size_t plen = sizeof(e) + t.size();
    fill_header(p, ODL_FILES_ERROR, plen, 0, ++m_tx_seq);
    std::memcpy(p + ODL_FILES_HDR_BYTES, &e, sizeof(e));
    std::memcpy(p + ODL_FILES_HDR_BYTES + sizeof(e), t.data(), t.size());
    std::memset(p + ODL_FILES_HDR_BYTES + plen, 0, ODL_FILES_TAG_BYTES);
    post_send_slot(i, ODL_FILES_HDR_BYTES + plen + ODL_FILES_TAG_BYTES);
}

uint8_t* channel::data_area() {
    if (m_data_slot == SIZE_MAX) m_data_slot = free_send_slot();
    return m_send[m_data_slot].buf.get() + ODL_FILES_HDR_BYTES + sizeof(odl_files_data);
}

void channel::send_data(uint64_t offset, size_t n) {
    if (m_data_slot == SIZE_MAX || n == 0 || n > m_chunk) throw std::logic_error("send_data without data_area");
    const size_t i = m_data_slot;
    m_data_slot = SIZE_MAX;
    uint8_t* p = m_send[i].buf.get();
    const size_t plen = sizeof(odl_files_data) + n;
    const uint64_t seq = ++m_tx_seq;
    fill_header(p, ODL_FILES_DATA, plen, 0, seq);
    const odl_files_data d{odl_cpu_le64(offset)};
    std::memcpy(p + ODL_FILES_HDR_BYTES, &d, sizeof(d));
    const tag16 t = m_tx->tag(seq, dir_of(m_me), p, ODL_FILES_HDR_BYTES + plen, nullptr, 0);
    std::memcpy(p + ODL_FILES_HDR_BYTES + plen, t.data(), t.size());
    post_send_slot(i, ODL_FILES_HDR_BYTES + plen + ODL_FILES_TAG_BYTES);
}

void channel::flush(uint64_t timeout_ns) {
    const uint64_t start = now_ns();
    for (;;) {
        bool busy = false;
        for (const auto& s : m_send) busy |= s.busy;
        if (!busy) return;
        if (m_stop && m_stop->load()) throw stopped();
        check_link();
        if (timeout_ns && now_ns() - start > timeout_ns) throw link_error("sends did not finish in time");
        progress(kSliceNs);
    }
}

std::optional<message> channel::take() {
    if (m_held) {
        if (m_link_error.empty()) post_recv(*m_held);
        m_held.reset();
    }
    if (m_recv_order.empty() || !m_recv[m_recv_order.front()].done) return std::nullopt;
    const size_t i = m_recv_order.front();
    m_recv_order.pop_front();
    slot& s = m_recv[i];
    s.busy = false;
    m_held = i;

    const odl_files_side from = m_me == ODL_FILES_FROM_CLIENT ? ODL_FILES_FROM_SERVER : ODL_FILES_FROM_CLIENT;
    odl_files_hdr h{};
    const char* why = odl_files_check(s.buf.get(), s.len, from, m_rx_seq + 1, m_chunk, &h);
    if (why) throw protocol_error(fmt::format("peer sent a bad message: {}", why));
    message m;
    m.type = odl_le16(h.type);
    m.flags = odl_le32(h.flags);
    m.payload = s.buf.get() + ODL_FILES_HDR_BYTES;
    m.len = odl_le32(h.len);
    if (m.type == ODL_FILES_PAIR) return m;
    m_rx_seq++;
    if (!m_rx) {
        if (m.type != ODL_FILES_HELLO && m.type != ODL_FILES_HELLO_ACK && m.type != ODL_FILES_ERROR)
            throw protocol_error(fmt::format("peer sent message type {} before the session began", m.type));
        return m;  // the caller checks the tag (it derives the key)
    }
    const uint8_t* tag = m.payload + m.len;
    const tag16 t = m_rx->tag(m_rx_seq, dir_of(from), s.buf.get(), ODL_FILES_HDR_BYTES + m.len, nullptr, 0);
    if (!same_bytes(t.data(), tag, t.size()))
        throw protocol_error("a message's tag does not verify (corrupted or forged)");
    m.verified = true;
    return m;
}

message channel::recv(uint64_t timeout_ns) {
    const uint64_t start = now_ns();
    for (;;) {
        if (auto m = take()) return *m;
        if (m_stop && m_stop->load()) throw stopped();
        check_link();
        const uint64_t waited = now_ns() - start;
        if (timeout_ns && waited > timeout_ns)
            throw link_error(fmt::format("peer silent for {} s", timeout_ns / 1'000'000'000));
        if (waited < kBusyNs) {
            progress(kBusyNs);
        } else {
            // Idle (a server between requests): libodl's wait would wake
            // every 50 us; a request may wait this long, a core is spared.
            progress(0);
            std::this_thread::sleep_for(std::chrono::nanoseconds(kIdleSleepNs));
        }
    }
}

std::optional<message> channel::try_recv() {
    progress(0);
    if (auto m = take()) return m;
    check_link();
    return std::nullopt;
}

bool channel::verify_hello(const message& m, const key32& pair_key) const {
    const auto h = m.head<odl_files_hello>();
    gmac g(pair_key);
    const uint8_t* base = m.payload - ODL_FILES_HDR_BYTES;
    const tag16 t = g.tag(h.nonce, base, ODL_FILES_HDR_BYTES + m.len, nullptr, 0);
    return same_bytes(t.data(), m.payload + m.len, t.size());
}

bool channel::verify_with(const message& m, const key32& rx) const {
    gmac g(rx);
    const uint8_t* base = m.payload - ODL_FILES_HDR_BYTES;
    const uint32_t dir = m_me == ODL_FILES_FROM_CLIENT ? 1 : 0;
    const tag16 t = g.tag(m_rx_seq, dir, base, ODL_FILES_HDR_BYTES + m.len, nullptr, 0);
    return same_bytes(t.data(), m.payload + m.len, t.size());
}

}  // namespace odl::files
