// SPDX-License-Identifier: MIT
// Frame engine: segmentation, reassembly, tag matching and credit flow
// control over a frame link. Everything read from the link is validated by
// the shared codec before use; any violation ends the link with ODL_ERR_PROTO.
#include "engine.h"
#include "link_sim.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <fmt/format.h>

#include "clock.h"
#include "crc32c.h"
#include "log.h"

namespace odl {
namespace {

/// Frames handled per poll() in each direction before the other gets a turn.
constexpr unsigned kRxBudget = 64;
constexpr unsigned kTxBudget = 64;
/// close(): how long to try to hand GOODBYE to a full link.
constexpr int kGoodbyeTries = 100;
constexpr auto kGoodbyeRetry = std::chrono::milliseconds(1);

/// Default part of a split rendezvous the receiver copies itself: read and
/// write run at the same speed, so halves finish together (loopback_bench
/// BM_CmaSplitBandwidth: 50 % beats 60 %).
constexpr uint32_t kRndvSplitPct = 50;
/// close(): how long to wait for the peer to acknowledge the sends that
/// completed at once (small, copied). Against a link's microseconds and the
/// PROBE's milliseconds; a peer that does not poll costs this much at most.
constexpr uint64_t kCloseConfirmNs = 500'000'000;
/// close(): how long to wait for the peer's RNDV_WROTE of a split receive.
constexpr int kSplitCloseTries = 2000;
constexpr auto kSplitCloseRetry = std::chrono::milliseconds(1);

/// Retransmission: a sender with frames unacknowledged (or sends held back)
/// for this long asks with PROBE; each unanswered PROBE doubles the wait, up
/// to 2^kProbeMaxShift times. Long against a TB link's microseconds, so a
/// healthy link never probes; short enough that a lost last frame costs
/// milliseconds, not a stalled job.
constexpr uint64_t kProbeBaseNs = 2'000'000;
constexpr unsigned kProbeMaxShift = 6;
/// probe_due of a stream armed since the clock was last read.
constexpr uint64_t kProbeArmed = 1;
/// Retransmission: a message up to this size is copied once sent and its
/// send completes at once, as without retransmission (the copy serves any
/// resend); larger ones complete when acknowledged. A responder that waits
/// for its small answer's completion then needs no ACK frame from the peer.
constexpr uint64_t kEagerCopyMax = 8192;
/// uint32 sequence arithmetic: a difference with this bit set is "behind".
constexpr uint32_t kBehind = 0x80000000u;
/// Copy threads: frames with less payload are copied here, at once (the
/// hand-over would cost a small frame more than its copy).
constexpr uint32_t kCopierMinPayload = 1024;
/// Copy threads: used only in a burst, a poll that took at least this many
/// frames in (the receive thread: this one, the one before, or this many
/// frames into this one). Otherwise the copy here is quicker than the
/// hand-over (GPU host, odl perf latency: 64 KiB 9 us copied here, 22 us
/// through the send thread).
constexpr unsigned kCopierMinRx = 16;

uint32_t rndv_split_pct() {
    const char* v = std::getenv("ODL_LOOPBACK_RNDV_SPLIT");
    if (!v || !*v) return kRndvSplitPct;
    char* end = nullptr;
    const unsigned long p = std::strtoul(v, &end, 10);
    if (end && *end == '\0' && p >= 1 && p <= 100) return uint32_t(p);
    log::write(ODL_LOG_WARN, "ODL_LOOPBACK_RNDV_SPLIT='{}' is not a percentage 1..100; using {}", v, kRndvSplitPct);
    return kRndvSplitPct;
}

/// ODL_RETX=off: offer no retransmission even where the link may lose
/// frames (protocol 1.1 behaviour: a lost frame ends the link), for
/// comparisons and debugging.
bool retx_allowed() {
    const char* v = std::getenv("ODL_RETX");
    if (!v || !*v || !std::strcmp(v, "on") || !std::strcmp(v, "1")) return true;
    if (!std::strcmp(v, "off") || !std::strcmp(v, "0")) return false;
    log::write(ODL_LOG_WARN, "ODL_RETX='{}' is neither on nor off; using on", v);
    return true;
}

uint64_t host_id() {
    // Stable per boot and host; only shown to the peer, never trusted.
    return gethostid() & 0xffffffffull;
}

}  // namespace

engine::engine(std::unique_ptr<link> l, open_config cfg)
    : m_link(std::move(l)),
      m_cfg(std::move(cfg)),
      m_streams(m_cfg.num_streams),
      // Return link credit in quarters of the window: the sender keeps at
      // least three quarters usable, and as batch <= window the return can
      // never wait forever (a sender stopped at the limit has a full window
      // unreported here once its frames arrive, and every frame is taken
      // off the transport whether or not a receive is posted).
      m_link_batch(std::max<uint32_t>(1, m_cfg.link_window_frames / 4)),
      // Cookies only need to differ from what stale or foreign memory holds.
      m_rndv_next_cookie((now_ns() << 16) ^ (uint64_t(getpid()) << 40) ^ reinterpret_cast<uintptr_t>(this)),
      m_rndv_split_pct(m_cfg.rndv_min_bytes ? rndv_split_pct() : 100),
      m_offer_retx(m_link->lossy() && retx_allowed()),
      m_ack_batch(std::max<uint32_t>(1, m_cfg.window_frames / 4)),
      m_s(m_cfg.num_streams),
      m_credit_batch(std::max<uint32_t>(1, m_cfg.window_frames / 4)),
      m_timed(m_link->timed()) {
    m_stats.struct_size = sizeof(m_stats);
    if (m_cfg.tx_thread && m_link->tx_depth() > 1) {
        m_tx_depth = std::min<unsigned>(m_link->tx_depth(), copy_thread::kCapacity);
        m_copier = std::make_unique<copy_thread>("odl-tx-" + m_link->name());
    }
    if (m_cfg.rx_thread && m_link->rx_depth() > 1) {
        m_rx_depth = std::min<unsigned>(m_link->rx_depth(), copy_thread::kCapacity);
        m_rx_copier = std::make_unique<copy_thread>("odl-rx-" + m_link->name());
    }
}

uint32_t engine::rndv_pid() {
    // Asked once the link is up (the loopback link learns it on connect).
    if (!m_rndv_pid_known) {
        m_rndv_pid_known = true;
        m_rndv_pid = m_cfg.rndv_min_bytes && m_cfg.rndv_peer_pid ? m_cfg.rndv_peer_pid() : 0;
    }
    return m_rndv_pid;
}

engine::~engine() = default;

odl_completion engine::completion(uint64_t ctx, int status, uint32_t op, uint32_t stream, uint32_t tag, uint64_t len) {
    odl_completion c{};
    c.ctx = ctx;
    c.status = status;
    c.op = op;
    c.stream = stream;
    c.tag = tag;
    c.len = len;
    return c;
}

void engine::complete(uint64_t ctx, int status, uint32_t op, uint32_t stream, uint32_t tag, uint64_t len) {
    m_done.push_back(done_item{completion(ctx, status, op, stream, tag, len), m_rx_due});
}

int engine::post_send(uint32_t stream, uint32_t tag, const void* buf, uint64_t len, uint64_t ctx) {
    if (m_fail_status != ODL_OK) return m_fail_status;
    if (stream >= m_streams) return ODL_ERR_INVAL;
    if (m_hello_received && len > m_peer_max_msg) return ODL_ERR_TOO_BIG;
    stream_state& s = m_s[stream];
    // Sends already completed (copied, awaiting acknowledgement) are not the caller's.
    if (s.sends.size() - s.eager_held >= m_cfg.max_posted) return ODL_ERR_AGAIN;
    s.sends.push_back(send_op{static_cast<const unsigned char*>(buf), len, 0, tag, ctx});
    s.sends.back().nframes = uint32_t(odl_msg_frames(len));
    if (m_timed) s.sends.back().asked_ns = now_ns();
    return ODL_OK;
}

int engine::post_recv(uint32_t stream, uint32_t tag, void* buf, uint64_t cap, uint64_t ctx) {
    if (m_fail_status != ODL_OK) return m_fail_status;
    if (stream >= m_streams) return ODL_ERR_INVAL;
    stream_state& s = m_s[stream];
    if (s.recvs.size() >= m_cfg.max_posted) return ODL_ERR_AGAIN;
    recv_op op{static_cast<unsigned char*>(buf), cap, tag, ctx};

    // A message that is already here (in part or whole) is matched first:
    // receives match messages in arrival order.
    for (auto it = s.unexpected.begin(); it != s.unexpected.end(); ++it) {
        if (tag != ODL_TAG_ANY && tag != it->tag) continue;
        const size_t n = std::min<size_t>(it->data.size(), cap);
        if (n) std::memcpy(op.buf, it->data.data(), n);
        const uint32_t held = it->frames_held;
        if (it->complete) {
            complete_recv(op, stream, it->tag, it->msg_len, it->corrupt);
        } else {
            // Only the newest message can be incomplete: it is the one being
            // assembled; the rest of it now goes straight to the user buffer.
            s.cur.to_user = true;
            s.cur.op = op;
            s.cur.corrupt = it->corrupt;
        }
        s.unexpected.erase(it);
        consume(s, uint16_t(stream), held);
        return ODL_OK;
    }
    s.recvs.push_back(op);
    return ODL_OK;
}

int engine::cancel(uint32_t stream, uint64_t ctx) {
    if (stream >= m_s.size()) return ODL_ERR_INVAL;
    stream_state& s = m_s[stream];
    if (s.cur.active && s.cur.to_user && s.cur.op.ctx == ctx) {
        // Being received into: drop the rest of this message, once the
        // receive thread has stopped writing into its buffer.
        if (s.cur.last_ticket) rx_drain();
        complete(ctx, ODL_ERR_CANCELED, ODL_OP_RECV, stream, s.cur.tag, 0);
        s.cur.to_user = false;
        s.cur.discard = true;
        return ODL_OK;
    }
    if (s.split.active && !s.split.canceled && s.split.op.ctx == ctx) {
        // The peer may be writing into the buffer: the CANCELED completion
        // (and with it the buffer) comes when its RNDV_WROTE does.
        s.split.canceled = true;
        return ODL_OK;
    }
    if (s.resend_pending && s.resend_matched && !s.resend_discard && s.resend_op.ctx == ctx) {
        // Its message is still to be resent: drop it when it comes.
        complete(ctx, ODL_ERR_CANCELED, ODL_OP_RECV, stream, s.resend_tag, 0);
        s.resend_discard = true;
        return ODL_OK;
    }
    for (auto it = s.recvs.begin(); it != s.recvs.end(); ++it) {
        if (it->ctx != ctx) continue;
        complete(ctx, ODL_ERR_CANCELED, ODL_OP_RECV, stream, it->tag, 0);
        s.recvs.erase(it);
        return ODL_OK;
    }
    for (auto it = s.sends.begin(); it != s.sends.end(); ++it) {
        if (it->ctx != ctx || it->detached) continue;  // (a completed send is detached)
        // After an RNDV the peer expects this message next, even as frames.
        if (!it->started && it->rndv == send_op::rndv_phase::none) {
            complete(ctx, ODL_ERR_CANCELED, ODL_OP_SEND, stream, it->tag, 0);
            s.sends.erase(it);
            return ODL_OK;
        }
        // The peer is assembling this message: finish it from a copy, so the
        // stream stays consistent and the caller's buffer is free now. The
        // completion comes when the message has left, so the caller does not
        // reuse the stream while its tail is still queued.
        // With retransmission any frame not yet acknowledged may be sent
        // again: keep the whole message.
        it->owned_from = m_retx ? 0 : it->sent;
        it->owned.assign(it->buf + it->owned_from, it->buf + it->len);
        it->detached = true;
        // Frames of it the send thread has yet to copy read the caller's
        // buffer: the caller has it back only once they are copied.
        if (m_copier && it->last_ticket) m_copier->wait_done(it->last_ticket);
        if (it->rndv == send_op::rndv_phase::waiting) {
            // The peer may be reading the buffer now. Revoke the cookie
            // before the caller can touch the buffer: a peer that finds it
            // changed after copying throws the copy away and asks for frames
            // (sent from the copy just taken). The fence keeps the caller's
            // later writes behind the revocation.
            it->cookie_word->store(0, std::memory_order_seq_cst);
            std::atomic_thread_fence(std::memory_order_seq_cst);
        }
        return ODL_OK;
    }
    return ODL_ERR_INVAL;
}

int engine::discard(uint32_t stream, uint32_t tag, uint32_t mask, uint32_t flags) {
    if (stream >= m_s.size()) return ODL_ERR_INVAL;
    stream_state& s = m_s[stream];
    if (flags & ODL_DISCARD_STOP) {
        s.drop = false;
        return ODL_OK;
    }
    s.drop = true;
    s.drop_tag = tag & mask;
    s.drop_mask = mask;
    // Free what already waits for a receive; its withheld credit goes back,
    // so a sender held back by it can finish.
    for (auto it = s.unexpected.begin(); it != s.unexpected.end();) {
        if ((it->tag & mask) != s.drop_tag) {
            ++it;
            continue;
        }
        if (!it->complete) {
            // Still arriving (only the newest can be): drop the rest too.
            s.cur.discard = true;
        }
        const uint32_t held = it->frames_held;
        it = s.unexpected.erase(it);
        consume(s, uint16_t(stream), held);
    }
    return ODL_OK;
}

void engine::complete_recv(const recv_op& op, uint32_t stream, uint32_t tag, uint64_t msg_len, bool corrupt,
                           uint64_t serial, uint64_t ticket) {
    if (m_rx_copier && (ticket > m_rx_copier->done() || !m_rx_retired.empty())) {
        if (!m_rx_retired.empty()) ticket = std::max(ticket, m_rx_retired.back().ticket);
        m_rx_retired.push_back(rx_retired{ticket, serial, op, stream, tag, msg_len, corrupt, m_rx_due});
        return;
    }
    emit_recv(op, stream, tag, msg_len, corrupt, m_rx_due);
}

void engine::emit_recv(const recv_op& op, uint32_t stream, uint32_t tag, uint64_t msg_len, bool corrupt, uint64_t ready_ns) {
    int status = ODL_OK;
    if (corrupt) status = ODL_ERR_PROTO;
    else if (msg_len > op.cap) status = ODL_ERR_TRUNCATED;
    if (status == ODL_OK) {
        ++m_stats.rx_msgs;
        m_stats.rx_bytes += msg_len;
    }
    m_done.push_back(done_item{completion(op.ctx, status, ODL_OP_RECV, stream, tag, msg_len), ready_ns});
}

void engine::consume(stream_state& s, uint16_t stream, uint32_t frames) {
    s.consumed += frames;
    if (!s.credit_queued && s.consumed - s.advertised >= m_credit_batch) {
        s.credit_queued = true;
        queue_ctrl(ctrl::credit, stream);
    }
}

size_t engine::poll(odl_completion* comps, size_t max) {
    if (m_state == ODL_LINK_CONNECTING || m_state == ODL_LINK_UP) {
        unsigned processed = 0;
        if (m_state == ODL_LINK_CONNECTING && !m_hello_sent) {
            if (m_link->progress() == link_state::up) queue_ctrl(ctrl::hello, 0);
        }
        if (m_hello_sent || !m_ctrl.empty()) {
            if (m_copier) tx_commit_done();
            if (m_rx_copier) rx_retire();
            flush_ctrl();
            process_rx_budget(kRxBudget, processed);
            if (m_rx_copier) {
                m_rx_copier->publish();
                rx_retire();
                m_rx_busy = processed >= kCopierMinRx;
            }
            m_link->rx_flush();
            // Only now are the frames' buffers the transport's again.
            return_link_credit();
            if (m_retx && m_state == ODL_LINK_UP) {
                // Acknowledge when the transport ran dry (or a batch came).
                // A completion still held for its due time: the caller has
                // not had the chance to answer yet.
                if (m_ack_dirty) queue_acks(processed < kRxBudget && !holding());
                // The clock only every 64 polls: a probe is due after
                // milliseconds, and a clock read per poll shows in latency.
                if (m_next_probe && (++m_probe_polls & 63) == 0) check_probes();
            }
            if (m_state == ODL_LINK_UP) {
                m_tx_offload = m_copier && (m_tx_always || processed >= kCopierMinRx);
                pump_tx(kTxBudget);
                flush_ctrl();
            }
            if (m_copier) m_copier->publish();
            tx_flush();
        }
        if (processed == 0 && (m_state == ODL_LINK_UP || m_state == ODL_LINK_CONNECTING)) {
            if (m_link->progress() == link_state::lost) fail(ODL_ERR_PEER_LOST, ODL_LINK_LOST, m_link->failure());
        }
    }
    if (!m_orphans.empty()) drain_orphans();
    size_t n = 0;
    uint64_t now = 0;
    while (n < max && !m_done.empty()) {
        const done_item& d = m_done.front();
        // Held until its frame is due; a failed link holds nothing back (its
        // error must not overtake what came before it).
        if (d.ready_ns && m_fail_status == ODL_OK) {
            if (!now) now = now_ns();
            if (d.ready_ns > now) {
                // Due within a poll or two and nothing else to return: wait
                // here for it (open_config::spin_to_due_ns says why).
                if (n != 0 || d.ready_ns - now > m_cfg.spin_to_due_ns) break;
                do now = now_ns();
                while (now < d.ready_ns);
            }
            if (d.c.op == ODL_OP_RECV) m_link->rx_delivered(d.ready_ns);
        }
        comps[n++] = d.c;
        m_done.pop_front();
    }
    return n;
}

bool engine::holding() const {
    return !m_done.empty() && m_done.back().ready_ns && m_done.back().ready_ns > now_ns();
}

void engine::process_rx_budget(unsigned budget, unsigned& processed) {
    while (processed < budget && m_state != ODL_LINK_LOST && m_state != ODL_LINK_PEER_CLOSED) {
        if (m_rx_held.size() >= m_rx_depth) {
            m_rx_copier->publish();
            rx_retire();
            if (m_rx_held.size() >= m_rx_depth) return;  // the thread is behind: the next poll goes on
        }
        rx_frame f = m_rx_held.empty() ? m_link->rx_peek() : m_link->rx_peek_at(unsigned(m_rx_held.size()));
        if (!f.data) return;
        m_rx_due = f.due_ns;
        // In a burst (as the send thread), so a lone message's copy is
        // not delayed by the hand-over.
        m_rx_offload = m_rx_copier && (m_rx_busy || processed >= kCopierMinRx);
        const uint32_t link_rx = m_link_rx;
        handle_frame(f.data, f.len);
        m_rx_due = 0;
        if (m_rx_cur.ticket || !m_rx_held.empty()) {
            // Freed once its copy is made and every frame before it freed.
            m_rx_cur.link_frames = m_link_rx - link_rx;
            m_rx_held_link += m_rx_cur.link_frames;
            m_rx_held.push_back(m_rx_cur);
            m_rx_cur = rx_held{};
        } else {
            m_link->rx_release();
        }
        ++processed;
    }
}

void engine::rx_retire() {
    if (m_rx_held.empty() && m_rx_retired.empty()) return;
    const uint64_t done = m_rx_copier->done();
    while (!m_rx_held.empty() && m_rx_held.front().ticket <= done) {
        const rx_held& h = m_rx_held.front();
        if (h.ticket && m_rx_copier->failed(h.ticket)) rx_csum_failed(h);
        m_rx_held_link -= h.link_frames;
        m_link->rx_release();
        m_rx_held.pop_front();
    }
    while (!m_rx_retired.empty() && m_rx_retired.front().ticket <= done) {
        const rx_retired& r = m_rx_retired.front();
        emit_recv(r.op, r.stream, r.tag, r.msg_len, r.corrupt, r.ready_ns);
        m_rx_retired.pop_front();
    }
}

void engine::rx_drain() {
    if (!m_rx_copier) return;
    m_rx_copier->wait_done(m_rx_copier->pushed());
    rx_retire();
}

void engine::rx_csum_failed(const rx_held& h) {
    ++m_stats.rx_csum_errors;
    log::write(ODL_LOG_WARN, "{}: stream {}: payload checksum mismatch at offset {}", m_link->name(), h.stream, h.offset);
    // Its message is still arriving, or done and waiting for its copies.
    assembly& a = m_s[h.stream].cur;
    if (a.active && a.serial == h.serial) {
        a.corrupt = true;
        return;
    }
    for (rx_retired& r : m_rx_retired) {
        if (r.serial == h.serial) {
            r.corrupt = true;
            return;
        }
    }
}

void engine::handle_frame(const unsigned char* data, size_t len) {
    odl_frame_info fi{};
    const enum odl_frame_err err = odl_frame_decode(data, len, m_streams, &fi);
    if (err != ODL_FRAME_OK) {
        protocol_error(err, fmt::format("bad frame ({}), type 0x{:02x}, {} bytes", odl_frame_err_name(err), fi.type, len));
        return;
    }
    const unsigned char* payload = data + ODL_FRAME_HDR_BYTES;
    if (fi.type < ODL_FRAME_DATA) ++m_stats.rx_ctrl_frames;
    if (!m_hello_received && fi.type != ODL_FRAME_HELLO) {
        protocol_error(ODL_FRAME_ERR_TYPE, fmt::format("frame type 0x{:02x} before HELLO", fi.type));
        return;
    }
    switch (fi.type) {
    case ODL_FRAME_HELLO:
        handle_hello(fi, payload);
        break;
    case ODL_FRAME_CREDIT:
        handle_credit(uint16_t(fi.stream), fi.credit);
        break;
    case ODL_FRAME_ACK:
    case ODL_FRAME_NAK:
    case ODL_FRAME_PROBE:
        if (!m_retx) {
            protocol_error(ODL_FRAME_ERR_TYPE,
                           fmt::format("stream {}: ACK/NAK/PROBE without retransmission negotiated", fi.stream));
        } else if (fi.type == ODL_FRAME_PROBE) {
            handle_probe(fi);
        } else {
            handle_ack(fi);
        }
        break;
    case ODL_FRAME_LINK_CREDIT:
        handle_link_credit(fi.credit);
        break;
    case ODL_FRAME_GOODBYE:
        fail(ODL_ERR_PEER_CLOSED, ODL_LINK_PEER_CLOSED, m_link->name() + ": peer closed the link");
        break;
    case ODL_FRAME_DATA:
    case ODL_FRAME_RNDV:
        handle_data(fi, payload);
        break;
    case ODL_FRAME_RNDV_DONE:
        handle_rndv_done(fi, payload);
        break;
    case ODL_FRAME_RNDV_SPLIT:
        handle_rndv_split(fi, payload);
        break;
    case ODL_FRAME_RNDV_WROTE:
        handle_rndv_wrote(fi, payload);
        break;
    default:
        break;  // odl_frame_decode() refuses unknown types
    }
}

void engine::handle_hello(const odl_frame_info&, const unsigned char* payload) {
    if (m_hello_received) {
        protocol_error(ODL_FRAME_ERR_HELLO, "second HELLO");
        return;
    }
    odl_hello h;
    std::memcpy(&h, payload, sizeof(h));
    if (odl_hello_check(&h) != ODL_FRAME_OK) {
        protocol_error(ODL_FRAME_ERR_HELLO,
                       fmt::format("peer HELLO refused (magic 0x{:08x}, version {}.{})", odl_le32(h.magic),
                                   odl_le16(h.version_major), odl_le16(h.version_minor)));
        return;
    }
    m_hello_received = true;
    m_streams = std::min<uint32_t>(m_cfg.num_streams, odl_le16(h.streams));
    m_peer_window = odl_le32(h.window);
    m_peer_max_msg = odl_le64(h.max_msg_bytes);
    m_peer_version = uint32_t(odl_le16(h.version_major)) << 16 | odl_le16(h.version_minor);
    m_peer_features = odl_le32(h.features);
    m_peer_pid = odl_le32(h.pid);
    m_peer_host_id = odl_le64(h.host_id);
    m_peer_name.assign(h.name, strnlen(h.name, sizeof(h.name)));
    // odl_hello_check() refused a link_window without the feature bit.
    m_peer_link_window = odl_le32(h.link_window);
    m_link_rx_limit = m_cfg.link_window_frames != 0 && (m_peer_features & ODL_FEAT_LINK_CREDIT);
    // Both ends decide alike: retransmission when both offered it, and then
    // no rendezvous (a message read in place has no frames to resend).
    m_retx = m_offer_retx && (m_peer_features & ODL_FEAT_RETX);
    if (!m_retx && rndv_pid() && (m_peer_features & ODL_FEAT_RNDV)) {
        m_rndv.rx = true;
        // Checksummed sends keep the frame path: every byte gets a CRC.
        m_rndv.tx = !(m_cfg.flags & ODL_OPEN_CHECKSUM);
        m_rndv.split = m_rndv_split_pct < 100 && (m_peer_features & ODL_FEAT_RNDV_SPLIT);
        // Yama (ptrace_scope 1) lets a process read or write only its
        // descendants' memory unless the target names the other process:
        // the sender for the peer's reads, the receiver for the peer's
        // writes of split parts. One ptracer per process: with several
        // peers only the last is named, and the others' copies fail with
        // EPERM and fall back (to frames, or to the receiver copying).
        if ((m_rndv.tx || m_rndv.split) && m_rndv_pid != uint32_t(getpid()))
            prctl(PR_SET_PTRACER, static_cast<unsigned long>(m_rndv_pid), 0, 0, 0);
    }
    m_state = ODL_LINK_UP;
    log::write(ODL_LOG_DEBUG, "{}: link up with '{}' (pid {}), {} streams, window {}, link window {}{}", m_link->name(),
               m_peer_name, m_peer_pid, m_streams, m_peer_window, m_peer_link_window, m_retx ? ", retransmission" : "");

    // Operations posted before the handshake may no longer fit its terms.
    for (uint32_t i = 0; i < m_cfg.num_streams; ++i) {
        stream_state& s = m_s[i];
        for (auto it = s.sends.begin(); it != s.sends.end();) {
            const int st = i >= m_streams ? ODL_ERR_INVAL : it->len > m_peer_max_msg ? ODL_ERR_TOO_BIG : ODL_OK;
            if (st == ODL_OK) {
                ++it;
                continue;
            }
            complete(it->ctx, st, ODL_OP_SEND, i, it->tag, it->len);
            it = s.sends.erase(it);
        }
        if (i >= m_streams) {
            for (const recv_op& r : s.recvs) complete(r.ctx, ODL_ERR_INVAL, ODL_OP_RECV, i, r.tag, 0);
            s.recvs.clear();
        }
    }
}

void engine::handle_credit(uint16_t stream, uint32_t credit) {
    stream_state& s = m_s[stream];
    // The peer cannot have consumed frames we never sent (wrapping arithmetic).
    if (credit - s.peer_consumed > s.tx_max - s.peer_consumed) {
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("credit {} beyond frames sent {}", credit, s.tx_max));
        return;
    }
    s.peer_consumed = credit;
    // A consumed frame was received: credit acknowledges as far as it goes.
    if (m_retx) on_acked(s, stream, credit);
}

void engine::handle_ack(const odl_frame_info& fi) {
    const auto stream = uint16_t(fi.stream);
    stream_state& s = m_s[stream];
    handle_credit(stream, fi.credit);
    if (m_state != ODL_LINK_UP) return;
    on_acked(s, stream, fi.seq);
    if (m_state != ODL_LINK_UP) return;
    // NAK: the peer has everything before fi.seq and not fi.seq itself:
    // resend from there (go-back-N; it dropped what followed). A NAK older
    // than what was acknowledged since is stale.
    if (fi.type == ODL_FRAME_NAK && fi.seq == s.acked && s.tx_seq != fi.seq) {
        seek_tx(s, fi.seq);
        ++m_retx_info.rewinds;
    }
}

void engine::on_acked(stream_state& s, uint16_t stream, uint32_t ack) {
    const uint32_t d = ack - s.acked;
    if (d == 0) return;
    if (d > s.tx_max - s.acked) {
        if (d & kBehind) return;  // older than what we know: stale
        protocol_error(ODL_FRAME_ERR_RANGE,
                       fmt::format("stream {}: acknowledges frames up to {}, only {} were sent", stream, ack, s.tx_max));
        return;
    }
    s.acked = ack;
    // Every message whose last frame the peer has is done.
    while (!s.sends.empty()) {
        send_op& op = s.sends.front();
        if (!op.started || uint32_t(ack - op.first_seq) < op.nframes) break;
        if (!op.completed) {
            ++m_stats.tx_msgs;
            m_stats.tx_bytes += op.len;
            retire_send(op, op.detached ? ODL_ERR_CANCELED : ODL_OK, stream, true, std::move(op.owned));
        } else {
            --s.eager_held;
            retire_send(op, ODL_OK, stream, false, std::move(op.owned));  // a resend of it may still be copied
        }
        s.sends.pop_front();
        if (s.tx_cur) --s.tx_cur;
    }
    // Acknowledged beyond where a stale NAK sent us back: skip ahead.
    if ((s.tx_seq - ack) & kBehind) seek_tx(s, ack);
    s.probe_due = 0;
    s.probe_backoff = 0;
    if (s.acked != s.tx_max || s.tx_cur < s.sends.size()) arm_probe(s);
}

void engine::seek_tx(stream_state& s, uint32_t seq) {
    // Sends before @seq stay sent; the one holding @seq resends from it;
    // those after it (if started) start again. Their frames are the same
    // bytes under the same seqs as before.
    s.tx_seq = seq;
    size_t i = 0;
    for (; i < s.sends.size(); ++i) {
        send_op& op = s.sends[i];
        if (!op.started) break;
        const uint32_t into = seq - op.first_seq;
        if (into < op.nframes) {
            op.frames_sent = into;
            op.sent = std::min<uint64_t>(op.len, uint64_t(into) * ODL_FRAME_MAX_PAYLOAD);
            break;
        }
    }
    s.tx_cur = i;
    for (size_t j = i + 1; j < s.sends.size() && s.sends[j].started; ++j) {
        s.sends[j].frames_sent = 0;
        s.sends[j].sent = 0;
    }
}

void engine::arm_probe(stream_state& s) {
    // No clock here (once per frame sent): check_probes() gives an armed
    // stream its due time when it next reads the clock.
    if (s.probe_due) return;
    s.probe_due = kProbeArmed;
    m_next_probe = kProbeArmed;
}

void engine::check_probes() {
    const uint64_t now = now_ns();
    if (now < m_next_probe) return;
    uint64_t next = 0;
    for (uint32_t i = 0; i < m_streams; ++i) {
        stream_state& s = m_s[i];
        if (!s.probe_due) continue;
        if (s.acked == s.tx_max && s.tx_cur >= s.sends.size()) {
            s.probe_due = 0;  // nothing waits any more
            continue;
        }
        if (s.probe_due == kProbeArmed) {
            s.probe_due = now + (kProbeBaseNs << s.probe_backoff);
        } else if (now >= s.probe_due) {
            queue_ctrl(ctrl::probe, uint16_t(i));
            ++m_retx_info.probes;
            if (s.probe_backoff < kProbeMaxShift) ++s.probe_backoff;
            s.probe_due = now + (kProbeBaseNs << s.probe_backoff);
        }
        if (!next || s.probe_due < next) next = s.probe_due;
    }
    m_next_probe = next;
}

void engine::handle_probe(const odl_frame_info& fi) {
    const auto stream = uint16_t(fi.stream);
    stream_state& s = m_s[stream];
    // fi.seq: the seq after the highest the peer sent. Never behind what
    // we took, never beyond the credit we gave.
    if ((fi.seq - s.rx_seq) & kBehind) {
        protocol_error(ODL_FRAME_ERR_RANGE,
                       fmt::format("stream {}: PROBE says frames up to {} were sent, {} arrived", stream, fi.seq, s.rx_seq));
        return;
    }
    if (fi.seq - s.consumed > m_cfg.window_frames) {
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: PROBE says the peer sent beyond its credit", stream));
        return;
    }
    // Frames the peer sent after the last to arrive are lost.
    if (!count_link_seq(s, fi.seq, false)) return;
    if (fi.seq != s.rx_seq) {
        s.nak_sent = true;
        queue_ctrl(ctrl::nak, stream);
    } else if (!s.ack_queued) {
        s.ack_force = true;  // the peer asked: answer even if nothing is new
        s.ack_queued = true;
        queue_ctrl(ctrl::ack, stream);
    }
    // The peer may wait for link credit whose LINK_CREDIT was lost.
    if (m_link_rx_limit && !m_link_credit_queued) {
        m_link_credit_queued = true;
        queue_ctrl(ctrl::link_credit, 0);
    }
}

bool engine::count_link_seq(stream_state& s, uint32_t upto, bool arrived) {
    // Each seq counts once for link credit, when first passed: arrived, or
    // skipped (lost: it holds no buffer here). The sender counts each seq
    // once, when first sent; resent frames count on neither side.
    const uint32_t d = upto - s.rx_hi;
    if (d == 0 || (d & kBehind)) return true;
    if (m_link_rx_limit && (m_link_rx + d) - m_link_advertised > m_cfg.link_window_frames) {
        protocol_error(ODL_FRAME_ERR_RANGE, "peer sent beyond its link credit");
        return false;
    }
    m_stats.rx_lost_frames += arrived ? d - 1 : d;
    m_link_rx += d;
    s.rx_hi = upto;
    return true;
}

void engine::rx_out_of_order(stream_state& s, uint16_t stream, uint32_t seq) {
    ++m_stats.rx_dropped_frames;
    if ((seq - s.rx_seq) & kBehind) {
        // A second copy of a frame we have: the peer missed our ACK.
        s.ack_force = true;
        m_ack_dirty |= uint64_t(1) << stream;
        return;
    }
    if (seq - s.consumed >= m_cfg.window_frames) {
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: peer sent beyond its credit", stream));
        return;
    }
    // A frame before this one is missing: drop this one (the peer resends
    // everything from the missing one) and ask once per missing seq.
    if (!count_link_seq(s, seq + 1, true)) return;
    if (!s.nak_sent) {
        s.nak_sent = true;
        queue_ctrl(ctrl::nak, stream);
    }
}

void engine::queue_acks(bool idle) {
    uint64_t dirty = m_ack_dirty;
    while (dirty) {
        const unsigned i = unsigned(__builtin_ctzll(dirty));
        dirty &= dirty - 1;
        stream_state& s = m_s[i];
        const uint32_t due = s.rx_seq - s.ack_told;
        if (!s.ack_queued && (due || s.ack_force)) {
            if (!s.ack_force && due < m_ack_batch) {
                if (!idle) continue;  // more is coming: ACK later
                // Within a message: the rest of it is on its way, and its
                // send completes only once all of it is acknowledged, so an
                // ACK now frees nothing. On a paced link (frames a wire
                // time apart) the transport runs dry between every two
                // frames: an ACK each would take the way back from the
                // answer (a batch's ACK and PROBEs still come).
                if (s.cur.active) continue;
                // Idle: give the caller one poll to answer; a reply's
                // piggybacked credit then acknowledges, and ping-pong
                // traffic needs no ACK frames.
                if (!s.ack_deferred) {
                    s.ack_deferred = true;
                    continue;
                }
            }
            s.ack_queued = true;
            queue_ctrl(ctrl::ack, uint16_t(i));
        }
        s.ack_deferred = false;
        m_ack_dirty &= ~(uint64_t(1) << i);
    }
}

void engine::handle_link_credit(uint32_t credit) {
    if (m_peer_link_window == 0) {
        protocol_error(ODL_FRAME_ERR_TYPE, "LINK_CREDIT from a peer that set no link window");
        return;
    }
    if (credit - m_link_peer_returned > m_link_tx - m_link_peer_returned) {
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("link credit {} beyond data frames sent {}", credit, m_link_tx));
        return;
    }
    m_link_peer_returned = credit;
}

void engine::return_link_credit() {
    if (!m_link_rx_limit) return;
    m_link_returned = m_link_rx - m_rx_held_link;
    if (!m_link_credit_queued && m_link_returned - m_link_advertised >= m_link_batch) {
        m_link_credit_queued = true;
        queue_ctrl(ctrl::link_credit, 0);
    }
}

engine::link_credit_info engine::link_credit() const {
    link_credit_info i;
    i.peer_window = m_peer_link_window;
    i.outstanding = m_link_tx - m_link_peer_returned;
    i.max_outstanding = m_link_max_outstanding;
    i.stalls = m_link_stalls;
    i.returns_sent = m_link_returns_sent;
    return i;
}

void engine::start_message(stream_state& s, const odl_frame_info& fi) {
    s.cur = assembly{};
    s.cur.active = true;
    s.cur.tag = fi.tag;
    s.cur.msg_len = fi.msg_len;
    if (s.resend_pending) {
        // handle_data checked it is the message its RNDV announced.
        s.resend_pending = false;
        if (s.resend_matched) {
            s.cur.op = s.resend_op;
            s.cur.to_user = !s.resend_discard;
            s.cur.discard = s.resend_discard;
            return;
        }
        // Unmatched when its RNDV came: an ordinary message now.
    }
    if (s.drop && (fi.tag & s.drop_mask) == s.drop_tag) {
        s.cur.discard = true;  // odl_discard(): its frames are freed as they come
        return;
    }
    for (auto it = s.recvs.begin(); it != s.recvs.end(); ++it) {
        if (it->tag == ODL_TAG_ANY || it->tag == fi.tag) {
            s.cur.to_user = true;
            s.cur.op = *it;
            s.recvs.erase(it);
            return;
        }
    }
    ++m_stats.rx_unexpected_msgs;
    s.unexpected.push_back(unexpected_msg{fi.tag, fi.msg_len, {}, 0, false, false});
    s.cur.um = std::prev(s.unexpected.end());
}

void engine::handle_data(const odl_frame_info& fi, const unsigned char* payload) {
    stream_state& s = m_s[fi.stream];
    if (fi.type == ODL_FRAME_RNDV && !m_rndv.rx) {
        protocol_error(ODL_FRAME_ERR_TYPE, fmt::format("stream {}: RNDV without rendezvous negotiated", fi.stream));
        return;
    }
    if (fi.flags & ODL_FRAME_F_CREDIT) {
        handle_credit(uint16_t(fi.stream), fi.credit);
        if (m_state != ODL_LINK_UP) return;
    }
    if (fi.seq != s.rx_seq) {
        if (m_retx) {
            rx_out_of_order(s, uint16_t(fi.stream), fi.seq);
            return;
        }
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: frame seq {} where {} was due", fi.stream, fi.seq, s.rx_seq));
        return;
    }
    if (s.rx_seq - s.consumed >= m_cfg.window_frames) {
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: peer sent beyond its credit", fi.stream));
        return;
    }
    // The peer knows at most what we advertised, so an obedient peer never
    // has more than link_window past it.
    if (m_retx) {
        if (!count_link_seq(s, fi.seq + 1, true)) return;
    } else if (m_link_rx_limit && m_link_rx - m_link_advertised >= m_cfg.link_window_frames) {
        protocol_error(ODL_FRAME_ERR_RANGE, "peer sent beyond its link credit");
        return;
    }
    if (fi.flags & ODL_FRAME_F_SOM) {
        if (s.cur.active) {
            protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: new message before the last ended", fi.stream));
            return;
        }
        if (fi.msg_len > m_cfg.max_msg_bytes) {
            protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: {}-byte message exceeds our limit {}", fi.stream,
                                                            fi.msg_len, m_cfg.max_msg_bytes));
            return;
        }
        if (s.resend_pending && (fi.type == ODL_FRAME_RNDV || fi.tag != s.resend_tag || fi.msg_len != s.resend_len)) {
            protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: message is not the resend we asked for", fi.stream));
            return;
        }
        if (fi.type == ODL_FRAME_RNDV) {
            ++s.rx_seq;
            ++m_link_rx;  // never with retransmission
            ++m_stats.rx_frames;
            handle_rndv(s, fi, payload);
            return;
        }
        start_message(s, fi);
    } else if (!s.cur.active || fi.tag != s.cur.tag || fi.msg_len != s.cur.msg_len || fi.offset != s.cur.next_offset) {
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: frame at offset {} does not continue a message", fi.stream, fi.offset));
        return;
    }
    ++s.rx_seq;
    if (m_retx) {
        s.nak_sent = false;
        m_ack_dirty |= uint64_t(1) << fi.stream;
    } else {
        ++m_link_rx;  // taken off the transport right after this returns
    }
    ++m_stats.rx_frames;

    assembly& a = s.cur;
    // A burst's payload for the program: the receive thread checks and
    // copies it, the frame staying in the link till then.
    const bool offload =
        m_rx_offload && a.to_user && !a.discard && fi.offset < a.op.cap && fi.len >= kCopierMinPayload;
    bool corrupt = false;
    if (!offload && (fi.flags & ODL_FRAME_F_CSUM) && crc32c(payload, fi.len) != fi.csum) {
        ++m_stats.rx_csum_errors;
        corrupt = true;
        log::write(ODL_LOG_WARN, "{}: stream {}: payload checksum mismatch at offset {}", m_link->name(), fi.stream, fi.offset);
    }
    a.next_offset = fi.offset + fi.len;
    a.corrupt = a.corrupt || corrupt;
    if (a.discard) {
        consume(s, fi.stream, 1);
    } else if (a.to_user) {
        if (fi.offset < a.op.cap) {
            const size_t n = std::min<uint64_t>(fi.len, a.op.cap - fi.offset);
            if (offload) {
                if (!a.serial) a.serial = ++m_rx_serial;
                const copy_job job{a.op.buf + fi.offset, payload, fi, uint32_t(n), (fi.flags & ODL_FRAME_F_CSUM) != 0, true};
                // process_rx_budget() kept the frames held within the queue's capacity: push cannot fail.
                a.last_ticket = m_rx_copier->push(job);
                m_rx_cur = rx_held{a.last_ticket, a.serial, fi.offset, 0, uint16_t(fi.stream)};
            } else {
                std::memcpy(a.op.buf + fi.offset, payload, n);
            }
        }
        consume(s, fi.stream, 1);
    } else {
        unexpected_msg& um = *a.um;
        um.data.insert(um.data.end(), payload, payload + fi.len);
        ++um.frames_held;
        um.corrupt = um.corrupt || corrupt;
    }
    if (fi.flags & ODL_FRAME_F_EOM) {
        if (a.to_user) complete_recv(a.op, fi.stream, a.tag, a.msg_len, a.corrupt, a.serial, a.last_ticket);
        else if (!a.discard) a.um->complete = true;
        a.active = false;
    }
}

void engine::handle_rndv(stream_state& s, const odl_frame_info& fi, const unsigned char* payload) {
    odl_rndv r;
    std::memcpy(&r, payload, sizeof(r));
    const rndv_ref ref{odl_le64(r.addr), odl_le64(r.cookie_addr), odl_le64(r.cookie)};
    const auto stream = uint16_t(fi.stream);
    if (s.drop && (fi.tag & s.drop_mask) == s.drop_tag) {
        consume(s, stream, 1);
        m_ctrl.push_back(ctrl_item{ctrl::rndv_done, stream, ref.cookie, ODL_RNDV_COPIED});
        return;
    }
    for (auto it = s.recvs.begin(); it != s.recvs.end(); ++it) {
        if (it->tag == ODL_TAG_ANY || it->tag == fi.tag) {
            const recv_op op = *it;
            s.recvs.erase(it);
            consume(s, stream, 1);
            rndv_pull(s, stream, op, fi.tag, fi.msg_len, ref);
            return;
        }
    }
    // No receive yet: have it resent as frames, to be held like any early
    // message. Holding the RNDV instead would stop the stream (its sender
    // waits for the answer) where frames let later messages pass within the
    // window, so a receiver that posts out of order could wait forever.
    consume(s, stream, 1);
    ++m_rndv.resends;
    s.resend_pending = true;
    s.resend_matched = false;
    s.resend_discard = false;
    s.resend_tag = fi.tag;
    s.resend_len = fi.msg_len;
    m_ctrl.push_back(ctrl_item{ctrl::rndv_done, stream, ref.cookie, ODL_RNDV_RESEND});
}

int engine::rndv_read(unsigned char* dst, uint64_t src, uint64_t len) {
    // Bounded: every round copies at least one byte or stops.
    for (uint64_t done = 0; done < len;) {
        iovec local{dst + done, size_t(len - done)};
        iovec remote{reinterpret_cast<void*>(uintptr_t(src + done)), size_t(len - done)};
        const ssize_t k = process_vm_readv(pid_t(m_rndv_pid), &local, 1, &remote, 1, 0);
        if (k <= 0) return k < 0 ? errno : EFAULT;
        done += uint64_t(k);
    }
    return 0;
}

int engine::rndv_cookie_check(const rndv_ref& ref) {
    // The copy counts only if the cookie still stands after it: the sender
    // revokes it on cancel before its caller may reuse the buffer.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    uint64_t word = 0;
    iovec local{&word, sizeof(word)};
    iovec remote{reinterpret_cast<void*>(uintptr_t(ref.cookie_addr)), sizeof(word)};
    const ssize_t k = process_vm_readv(pid_t(m_rndv_pid), &local, 1, &remote, 1, 0);
    if (k != ssize_t(sizeof(word))) return k < 0 ? errno : EFAULT;
    return word == ref.cookie ? 0 : ECANCELED;
}

void engine::rndv_pull(stream_state& s, uint16_t stream, const recv_op& op, uint32_t tag, uint32_t msg_len,
                       const rndv_ref& ref) {
    const uint64_t n = std::min<uint64_t>(op.cap, msg_len);
    // Split on a page boundary, so each side copies whole pages.
    const uint64_t split = m_rndv.split ? (n * m_rndv_split_pct / 100) & ~uint64_t(4095) : n;
    if (split > 0 && split < n) {
        // The peer writes [split, n) while we read [0, split): out now.
        m_ctrl.push_back(ctrl_item{ctrl::rndv_split, stream, ref.cookie, 0, uint64_t(reinterpret_cast<uintptr_t>(op.buf)),
                                   uint32_t(split), uint32_t(n)});
        flush_ctrl();
        tx_drain();
        m_link->tx_flush();
        ++m_rndv.splits;
        stream_state::split_recv& sp = s.split;
        sp = stream_state::split_recv{};
        sp.active = true;
        sp.op = op;
        sp.tag = tag;
        sp.msg_len = msg_len;
        sp.ref = ref;
        sp.split = split;
        sp.end = n;
        sp.own_err = rndv_read(op.buf, ref.addr, split);
        return;  // handle_rndv_wrote() finishes it
    }
    int err = rndv_read(op.buf, ref.addr, n);
    if (err == 0) err = rndv_cookie_check(ref);
    rndv_finish(s, stream, op, tag, msg_len, ref, err);
}

void engine::rndv_finish(stream_state& s, uint16_t stream, const recv_op& op, uint32_t tag, uint32_t msg_len,
                         const rndv_ref& ref, int err) {
    if (err == 0) {
        ++m_rndv.copied;
        complete_recv(op, stream, tag, msg_len, false);
        m_ctrl.push_back(ctrl_item{ctrl::rndv_done, stream, ref.cookie, ODL_RNDV_COPIED});
        return;
    }
    // Never lose the message: the peer sends it as frames, into this buffer.
    // Not allowed to read the peer at all: stop asking.
    ++m_rndv.resends;
    const bool off = err == EPERM || err == ENOSYS;
    log::write(ODL_LOG_DEBUG, "{}: stream {}: rendezvous copy of {} bytes failed ({}), asking for frames{}", m_link->name(),
               stream, msg_len, strerror(err), off ? "; no more rendezvous" : "");
    s.resend_pending = true;
    s.resend_matched = true;
    s.resend_discard = false;
    s.resend_op = op;
    s.resend_tag = tag;
    s.resend_len = msg_len;
    m_ctrl.push_back(ctrl_item{ctrl::rndv_done, stream, ref.cookie, uint32_t(off ? ODL_RNDV_RESEND_OFF : ODL_RNDV_RESEND)});
}

void engine::handle_rndv_split(const odl_frame_info& fi, const unsigned char* payload) {
    odl_rndv_split r;
    std::memcpy(&r, payload, sizeof(r));
    stream_state& s = m_s[fi.stream];
    const uint64_t cookie = odl_le64(r.cookie);
    const uint64_t addr = odl_le64(r.addr);
    const uint32_t split = odl_le32(r.split);
    const uint32_t end = odl_le32(r.end);
    if (s.sends.empty() || s.sends.front().rndv != send_op::rndv_phase::waiting || s.sends.front().cookie != cookie ||
        s.sends.front().split_seen || split > end || end > s.sends.front().len) {
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: RNDV_SPLIT [{}, {}) for no rendezvous of ours", fi.stream, split, end));
        return;
    }
    send_op& op = s.sends.front();
    op.split_seen = true;
    // A canceled send writes from its copy: the caller's buffer is free.
    const unsigned char* src = op.detached ? op.owned.data() + (split - op.owned_from) : op.buf + split;
    const uint64_t len = end - split;
    int err = 0;
    // Bounded: every round copies at least one byte or stops.
    for (uint64_t done = 0; done < len;) {
        iovec local{const_cast<unsigned char*>(src + done), size_t(len - done)};
        iovec remote{reinterpret_cast<void*>(uintptr_t(addr + split + done)), size_t(len - done)};
        const ssize_t k = process_vm_writev(pid_t(m_rndv_pid), &local, 1, &remote, 1, 0);
        if (k <= 0) {
            err = k < 0 ? errno : EFAULT;
            break;
        }
        done += uint64_t(k);
    }
    if (err == 0) ++m_rndv.wrote;
    else
        log::write(ODL_LOG_DEBUG, "{}: stream {}: rendezvous write of {} bytes failed ({})", m_link->name(), fi.stream, len,
                   strerror(err));
    // Nothing more is written for this rendezvous after the answer.
    m_ctrl.push_back(ctrl_item{ctrl::rndv_wrote, uint16_t(fi.stream), cookie,
                               uint32_t(err ? ODL_RNDV_WROTE_FAILED : ODL_RNDV_WROTE_OK)});
}

void engine::handle_rndv_wrote(const odl_frame_info& fi, const unsigned char* payload) {
    odl_rndv_wrote w;
    std::memcpy(&w, payload, sizeof(w));
    stream_state& s = m_s[fi.stream];
    const uint64_t cookie = odl_le64(w.cookie);
    const uint32_t status = odl_le32(w.status);
    if (!s.split.active || s.split.ref.cookie != cookie || w.reserved || status > ODL_RNDV_WROTE_FAILED) {
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: RNDV_WROTE (status {}) for no split of ours", fi.stream, status));
        return;
    }
    const stream_state::split_recv sp = s.split;
    s.split = stream_state::split_recv{};
    const auto stream = uint16_t(fi.stream);
    int err = sp.own_err;
    if (status != ODL_RNDV_WROTE_OK) {
        // The peer cannot write here (Yama, seccomp): copy its part too,
        // and ask no more.
        ++m_rndv.write_fails;
        m_rndv.split = false;
        if (err == 0) err = rndv_read(sp.op.buf + sp.split, sp.ref.addr + sp.split, sp.end - sp.split);
    }
    if (sp.canceled) {
        // Dropped by the receiver: the rendezvous is done.
        complete(sp.op.ctx, ODL_ERR_CANCELED, ODL_OP_RECV, stream, sp.tag, 0);
        m_ctrl.push_back(ctrl_item{ctrl::rndv_done, stream, sp.ref.cookie, ODL_RNDV_COPIED});
        return;
    }
    if (err == 0) err = rndv_cookie_check(sp.ref);
    rndv_finish(s, stream, sp.op, sp.tag, sp.msg_len, sp.ref, err);
}

void engine::drain_orphans() {
    // The link failed here, but the peer may still write into an orphan's
    // buffer until its RNDV_WROTE: read on until that comes or the peer is
    // gone. Other frames no longer matter.
    for (unsigned i = 0; i < kRxBudget && !m_orphans.empty(); ++i) {
        rx_frame f = m_link->rx_peek();
        if (!f.data) break;
        odl_frame_info fi{};
        if (odl_frame_decode(f.data, f.len, m_streams, &fi) == ODL_FRAME_OK) {
            if (fi.type == ODL_FRAME_GOODBYE) {
                m_link->rx_release();
                break;  // the peer's engine is gone: it writes no more
            }
            if (fi.type == ODL_FRAME_RNDV_WROTE) {
                odl_rndv_wrote w;
                std::memcpy(&w, f.data + ODL_FRAME_HDR_BYTES, sizeof(w));
                for (auto it = m_orphans.begin(); it != m_orphans.end(); ++it) {
                    if (it->cookie != odl_le64(w.cookie) || it->stream != fi.stream) continue;
                    complete(it->ctx, m_fail_status, ODL_OP_RECV, it->stream, it->tag, it->msg_len);
                    m_orphans.erase(it);
                    break;
                }
            }
        }
        m_link->rx_release();
    }
    m_link->rx_flush();
    bool gone = !m_orphans.empty() && m_link->progress() == link_state::lost;
    if (!gone && !m_orphans.empty() && m_rndv_pid && kill(pid_t(m_rndv_pid), 0) != 0 && errno == ESRCH) gone = true;
    if (gone) {
        for (const split_orphan& o : m_orphans) complete(o.ctx, m_fail_status, ODL_OP_RECV, o.stream, o.tag, o.msg_len);
        m_orphans.clear();
    }
}

void engine::handle_rndv_done(const odl_frame_info& fi, const unsigned char* payload) {
    odl_rndv_done d;
    std::memcpy(&d, payload, sizeof(d));
    stream_state& s = m_s[fi.stream];
    const uint64_t cookie = odl_le64(d.cookie);
    const uint32_t status = odl_le32(d.status);
    if (s.sends.empty() || s.sends.front().rndv != send_op::rndv_phase::waiting || s.sends.front().cookie != cookie ||
        d.reserved || status > ODL_RNDV_RESEND_OFF) {
        protocol_error(ODL_FRAME_ERR_RANGE, fmt::format("stream {}: RNDV_DONE (status {}) for no rendezvous of ours", fi.stream, status));
        return;
    }
    send_op& op = s.sends.front();
    op.cookie_word.reset();  // the peer reads it no more
    if (status == ODL_RNDV_COPIED) {
        ++m_stats.tx_msgs;
        m_stats.tx_bytes += op.len;
        retire_send(op, op.detached ? ODL_ERR_CANCELED : ODL_OK, fi.stream, true, std::move(op.owned));
        s.sends.pop_front();
        return;
    }
    if (status == ODL_RNDV_RESEND_OFF) m_rndv.tx = false;
    op.rndv = send_op::rndv_phase::frames;
}

void engine::pump_tx(unsigned budget) {
    const uint32_t n = m_streams;
    unsigned sent = 0;
    bool progress = true;
    // Round-robin one frame per stream per pass, so streams share the link.
    while (sent < budget && progress) {
        progress = false;
        for (uint32_t k = 0; k < n && sent < budget; ++k) {
            const uint32_t i = (m_tx_rr + k) % n;
            stream_state& s = m_s[i];
            // Nothing unsent (with retransmission, the rest awaits acknowledgement).
            if (s.tx_cur >= s.sends.size()) continue;
            // An RNDV awaits its answer: nothing else may pass it.
            if (s.sends.front().rndv == send_op::rndv_phase::waiting) continue;
            if (s.tx_seq - s.peer_consumed >= m_peer_window) {
                ++m_stats.credit_stalls;
                if (m_retx) arm_probe(s);  // its CREDIT may have been lost
                continue;
            }
            // The peer's transport is full: no stream may send a new data
            // frame (a resent one counts on neither side).
            if (m_peer_link_window && s.tx_seq == s.tx_max && m_link_tx - m_link_peer_returned >= m_peer_link_window) {
                ++m_stats.credit_stalls;
                ++m_link_stalls;
                if (m_retx) arm_probe(s);
                m_tx_rr = i;
                return;
            }
            // Link full: this stream goes first next time; otherwise a link
            // that takes only a few frames per poll keeps serving the streams
            // early in the round and starves the rest.
            if (m_link->tx_busy()) {
                ++m_stats.link_full_stalls;
                m_tx_rr = i;
                return;
            }
            send_op& op = s.sends[s.tx_cur];
            const bool by_ref = m_rndv.tx && op.rndv == send_op::rndv_phase::none && !op.detached &&
                                op.len >= m_cfg.rndv_min_bytes;
            if (!(by_ref ? send_rndv_frame(uint16_t(i), s, op) : send_data_frame(uint16_t(i), s, op))) {
                m_tx_rr = i;
                return;
            }
            ++sent;
            progress = true;
            if (op.rndv != send_op::rndv_phase::waiting && op.frames_sent == op.nframes) {
                if (m_retx) {
                    // (A detached send is canceled or already completed.)
                    if (!op.detached && op.len <= kEagerCopyMax) {
                        op.owned.assign(op.buf, op.buf + op.len);
                        op.owned_from = 0;
                        op.detached = true;  // resends come from the copy
                        op.completed = true;
                        ++s.eager_held;
                        ++m_stats.tx_msgs;
                        m_stats.tx_bytes += op.len;
                        // (Its copy stays: resends come from it.)
                        retire_send(op, ODL_OK, i, true);
                    }
                    ++s.tx_cur;  // kept until acknowledged (on_acked)
                    continue;
                }
                ++m_stats.tx_msgs;
                m_stats.tx_bytes += op.len;
                retire_send(op, op.detached ? ODL_ERR_CANCELED : ODL_OK, i, true, std::move(op.owned));
                s.sends.pop_front();
            }
        }
        m_tx_rr = (m_tx_rr + 1) % n;
    }
}

bool engine::send_data_frame(uint16_t stream, stream_state& s, send_op& op) {
    unsigned char* slot = tx_room();
    if (!slot) {
        ++m_stats.link_full_stalls;
        return false;
    }
    const uint64_t chunk = std::min<uint64_t>(ODL_FRAME_MAX_PAYLOAD, op.len - op.sent);
    if (!op.started) {
        op.started = true;
        op.first_seq = s.tx_seq;
    }
    odl_frame_info fi{};
    fi.type = ODL_FRAME_DATA;
    fi.flags = uint8_t((op.sent == 0 ? ODL_FRAME_F_SOM : 0) | (op.sent + chunk == op.len ? ODL_FRAME_F_EOM : 0));
    fi.stream = stream;
    fi.len = uint16_t(chunk);
    fi.seq = s.tx_seq;
    fi.tag = op.tag;
    fi.msg_len = uint32_t(op.len);
    fi.offset = uint32_t(op.sent);
    const unsigned char* src = op.detached ? op.owned.data() + (op.sent - op.owned_from) : op.buf + op.sent;
    // A message's first frame, first time: a timed transport charges the
    // modelled host's send cost from when the program asked.
    const uint64_t asked = op.asked_ns && op.sent == 0 && s.tx_seq == s.tx_max ? op.asked_ns : 0;
    const bool csum = m_cfg.flags & ODL_OPEN_CHECKSUM;
    if (csum) fi.flags |= ODL_FRAME_F_CSUM;
    // Piggyback our receive credit: ping-pong traffic then needs no CREDIT frames.
    if (s.consumed != s.advertised) {
        fi.flags |= ODL_FRAME_F_CREDIT;
        fi.credit = s.consumed;
        s.advertised = s.consumed;
        if (m_retx && !((s.consumed - s.ack_told) & kBehind)) s.ack_told = s.consumed;  // an ACK as far as it goes
    }
    const copy_job job{slot, src, fi, 0, csum, false};
    uint64_t ticket = 0;
    if (m_tx_offload && chunk >= kCopierMinPayload) {
        // tx_room() kept the queue within its capacity: push cannot fail.
        ticket = m_copier->push(job);
    } else {
        fill_tx_frame(job);
    }
    // Its buffer is read until every frame queued before and with this one
    // is in the link.
    if (m_copier) op.last_ticket = m_copier->pushed();
    tx_queued(ODL_FRAME_HDR_BYTES + chunk, ticket, asked);
    op.sent += chunk;
    ++op.frames_sent;
    if (s.tx_seq == s.tx_max) {
        ++s.tx_max;
        ++m_link_tx;
        m_link_max_outstanding = std::max(m_link_max_outstanding, m_link_tx - m_link_peer_returned);
    } else {
        ++m_stats.tx_resent_frames;
    }
    ++s.tx_seq;
    ++m_stats.tx_frames;
    if (m_retx) arm_probe(s);
    return true;
}

bool engine::send_rndv_frame(uint16_t stream, stream_state& s, send_op& op) {
    unsigned char* slot = tx_room();
    if (!slot) {
        ++m_stats.link_full_stalls;
        return false;
    }
    if (++m_rndv_next_cookie == 0) ++m_rndv_next_cookie;  // 0 means revoked
    op.cookie = m_rndv_next_cookie;
    op.cookie_word = std::make_unique<std::atomic<uint64_t>>(op.cookie);
    odl_rndv r{};
    r.addr = odl_cpu_le64(uint64_t(reinterpret_cast<uintptr_t>(op.buf)));
    r.cookie_addr = odl_cpu_le64(uint64_t(reinterpret_cast<uintptr_t>(op.cookie_word.get())));
    r.cookie = odl_cpu_le64(op.cookie);
    odl_frame_info fi{};
    fi.type = ODL_FRAME_RNDV;
    fi.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM;
    fi.stream = stream;
    fi.len = sizeof(r);
    fi.seq = s.tx_seq;
    fi.tag = op.tag;
    fi.msg_len = uint32_t(op.len);
    if (s.consumed != s.advertised) {
        fi.flags |= ODL_FRAME_F_CREDIT;
        fi.credit = s.consumed;
        s.advertised = s.consumed;
    }
    std::memcpy(slot + ODL_FRAME_HDR_BYTES, &r, sizeof(r));
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(slot), &fi);
    tx_queued(ODL_FRAME_HDR_BYTES + sizeof(r), 0, 0);
    op.rndv = send_op::rndv_phase::waiting;
    op.started = true;
    op.first_seq = s.tx_seq;
    // One DATA-class frame for stream and link credit alike (never resent:
    // no rendezvous with retransmission).
    ++s.tx_seq;
    s.tx_max = s.tx_seq;
    ++m_link_tx;
    m_link_max_outstanding = std::max(m_link_max_outstanding, m_link_tx - m_link_peer_returned);
    ++m_stats.tx_frames;
    ++m_rndv.sent;
    return true;
}

void engine::queue_ctrl(ctrl kind, uint16_t stream) { m_ctrl.push_back(ctrl_item{kind, stream}); }

unsigned char* engine::tx_room() {
    if (!m_copier) return m_link->tx_reserve();
    if (m_tx_pending.size() >= m_tx_depth) {
        m_copier->publish();
        tx_commit_done();
        if (m_tx_pending.size() >= m_tx_depth) return nullptr;
    }
    return m_link->tx_reserve_at(unsigned(m_tx_pending.size()));
}

void engine::tx_queued(size_t bytes, uint64_t ticket, uint64_t asked_ns) {
    if (ticket == 0 && m_tx_pending.empty()) {  // nothing before it: out now
        commit_frame(tx_pending{0, bytes, asked_ns});
        return;
    }
    m_tx_pending.push_back(tx_pending{ticket, bytes, asked_ns});
}

void engine::commit_frame(const tx_pending& p) {
    if (p.asked_ns) m_link->tx_asked(p.asked_ns);
    m_link->tx_commit(p.bytes);
}

void engine::tx_commit_done() {
    if (m_tx_pending.empty() && m_tx_retired.empty()) return;
    const uint64_t done = m_copier->done();
    while (!m_tx_pending.empty() && m_tx_pending.front().ticket <= done) {
        commit_frame(m_tx_pending.front());
        m_tx_pending.pop_front();
    }
    while (!m_tx_retired.empty() && m_tx_retired.front().ticket <= done) {
        if (m_tx_retired.front().has_completion) m_done.push_back(m_tx_retired.front().d);
        m_tx_retired.pop_front();
    }
}

void engine::tx_flush() {
    if (m_copier) tx_commit_done();
    m_link->tx_flush();
}

void engine::tx_drain() {
    if (!m_copier) return;
    m_copier->wait_done(m_copier->pushed());
    tx_commit_done();
}

void engine::retire_send(const send_op& op, int status, uint32_t stream, bool complete_it, std::vector<unsigned char> owned) {
    if (m_copier && (op.last_ticket > m_copier->done() || !m_tx_retired.empty())) {
        tx_retired r{op.last_ticket, complete_it, done_item{}, std::move(owned)};
        if (complete_it) {
            r.d.c = completion(op.ctx, status, ODL_OP_SEND, stream, op.tag, op.len);
            r.d.ready_ns = m_rx_due;
        }
        m_tx_retired.push_back(std::move(r));
        return;
    }
    if (complete_it) complete(op.ctx, status, ODL_OP_SEND, stream, op.tag, op.len);
}

void engine::flush_ctrl() {
    while (!m_ctrl.empty()) {
        if (!try_send_ctrl(m_ctrl.front())) {
            ++m_stats.link_full_stalls;
            return;
        }
        m_ctrl.pop_front();
    }
}

bool engine::try_send_ctrl(const ctrl_item& item) {
    if (item.kind == ctrl::credit) {
        stream_state& s = m_s[item.stream];
        s.credit_queued = false;
        if (s.consumed == s.advertised) return true;  // a data frame carried it already
    }
    if (item.kind == ctrl::link_credit) m_link_credit_queued = false;
    if (item.kind == ctrl::ack) {
        stream_state& s = m_s[item.stream];
        if (!s.ack_force && s.rx_seq == s.ack_told) {
            s.ack_queued = false;  // a data frame's credit carried it already
            return true;
        }
    }
    unsigned char* slot = tx_room();
    if (!slot) {
        if (item.kind == ctrl::credit) m_s[item.stream].credit_queued = true;
        if (item.kind == ctrl::link_credit) m_link_credit_queued = true;
        return false;
    }
    odl_frame_info fi{};
    fi.stream = item.stream;
    switch (item.kind) {
    case ctrl::hello: {
        fi.type = ODL_FRAME_HELLO;
        fi.len = sizeof(odl_hello);
        odl_hello h{};
        h.magic = odl_cpu_le32(ODL_FRAME_MAGIC);
        h.version_major = odl_cpu_le16(ODL_PROTO_VERSION_MAJOR);
        h.version_minor = odl_cpu_le16(ODL_PROTO_VERSION_MINOR);
        h.features = odl_cpu_le32(ODL_FEAT_CSUM | ODL_FEAT_LINK_CREDIT | (rndv_pid() ? ODL_FEAT_RNDV | ODL_FEAT_RNDV_SPLIT : 0) |
                                  (m_offer_retx ? ODL_FEAT_RETX : 0));
        h.max_payload = odl_cpu_le16(ODL_FRAME_MAX_PAYLOAD);
        h.streams = odl_cpu_le16(uint16_t(m_cfg.num_streams));
        h.window = odl_cpu_le32(m_cfg.window_frames);
        h.link_window = odl_cpu_le32(m_cfg.link_window_frames);
        h.max_msg_bytes = odl_cpu_le64(m_cfg.max_msg_bytes);
        h.host_id = odl_cpu_le64(host_id());
        h.pid = odl_cpu_le32(uint32_t(getpid()));
        std::memcpy(h.name, m_cfg.node_name.data(), std::min(m_cfg.node_name.size(), sizeof(h.name)));
        std::memcpy(slot + ODL_FRAME_HDR_BYTES, &h, sizeof(h));
        m_hello_sent = true;
        break;
    }
    case ctrl::credit: {
        stream_state& s = m_s[item.stream];
        fi.type = ODL_FRAME_CREDIT;
        fi.flags = ODL_FRAME_F_CREDIT;
        fi.credit = s.consumed;
        s.advertised = s.consumed;
        break;
    }
    case ctrl::goodbye:
        fi.type = ODL_FRAME_GOODBYE;
        m_goodbye_sent = true;
        break;
    case ctrl::rndv_done: {
        fi.type = ODL_FRAME_RNDV_DONE;
        fi.len = sizeof(odl_rndv_done);
        odl_rndv_done d{};
        d.cookie = odl_cpu_le64(item.cookie);
        d.status = odl_cpu_le32(item.status);
        std::memcpy(slot + ODL_FRAME_HDR_BYTES, &d, sizeof(d));
        break;
    }
    case ctrl::rndv_split: {
        fi.type = ODL_FRAME_RNDV_SPLIT;
        fi.len = sizeof(odl_rndv_split);
        odl_rndv_split r{};
        r.cookie = odl_cpu_le64(item.cookie);
        r.addr = odl_cpu_le64(item.addr);
        r.split = odl_cpu_le32(item.split);
        r.end = odl_cpu_le32(item.end);
        std::memcpy(slot + ODL_FRAME_HDR_BYTES, &r, sizeof(r));
        break;
    }
    case ctrl::rndv_wrote: {
        fi.type = ODL_FRAME_RNDV_WROTE;
        fi.len = sizeof(odl_rndv_wrote);
        odl_rndv_wrote w{};
        w.cookie = odl_cpu_le64(item.cookie);
        w.status = odl_cpu_le32(item.status);
        std::memcpy(slot + ODL_FRAME_HDR_BYTES, &w, sizeof(w));
        break;
    }
    case ctrl::ack:
    case ctrl::nak: {
        // The latest state, not the one when this was queued.
        stream_state& s = m_s[item.stream];
        fi.type = item.kind == ctrl::ack ? ODL_FRAME_ACK : ODL_FRAME_NAK;
        fi.flags = ODL_FRAME_F_CREDIT;
        fi.seq = s.rx_seq;
        fi.credit = s.consumed;
        s.advertised = s.consumed;
        s.ack_told = s.rx_seq;
        if (item.kind == ctrl::ack) {
            s.ack_queued = false;
            s.ack_force = false;
            ++m_retx_info.acks;
        } else {
            ++m_retx_info.naks;
        }
        break;
    }
    case ctrl::probe:
        fi.type = ODL_FRAME_PROBE;
        fi.seq = m_s[item.stream].tx_max;
        break;
    case ctrl::link_credit:
        // The latest count, not the one when this was queued.
        fi.type = ODL_FRAME_LINK_CREDIT;
        fi.flags = ODL_FRAME_F_CREDIT;
        fi.credit = m_link_returned;
        m_link_advertised = m_link_returned;
        ++m_link_returns_sent;
        break;
    }
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(slot), &fi);
    tx_queued(ODL_FRAME_HDR_BYTES + fi.len, 0, 0);
    ++m_stats.tx_ctrl_frames;
    return true;
}

void engine::protocol_error(enum odl_frame_err err, const std::string& what) {
    ++m_bad[err];
    ++m_stats.rx_bad_frames;
    log::write(ODL_LOG_WARN, "{}: {}", m_link->name(), what);
    fail(ODL_ERR_PROTO, ODL_LINK_LOST, m_link->name() + ": protocol error: " + what);
}

void engine::fail(int status, uint32_t new_state, std::string why) {
    if (m_fail_status != ODL_OK) return;
    // Every buffer goes back below: the copy threads must be done with them
    // (and what the receive thread finished completes before the failure).
    tx_drain();
    rx_drain();
    m_fail_status = status;
    m_state = new_state;
    m_failure = std::move(why);
    // Every operation still pending completes now, with the reason.
    for (uint32_t i = 0; i < m_s.size(); ++i) {
        stream_state& s = m_s[i];
        for (const send_op& op : s.sends)
            if (!op.completed) complete(op.ctx, status, ODL_OP_SEND, i, op.tag, op.sent);
        if (s.cur.active && s.cur.to_user) complete(s.cur.op.ctx, status, ODL_OP_RECV, i, s.cur.tag, s.cur.msg_len);
        for (const recv_op& op : s.recvs) complete(op.ctx, status, ODL_OP_RECV, i, op.tag, 0);
        if (s.resend_pending && s.resend_matched && !s.resend_discard) complete(s.resend_op.ctx, status, ODL_OP_RECV, i, s.resend_tag, s.resend_len);
        if (s.split.active) {
            // A peer that closed or died writes no more; one that is alive
            // may still be writing: hold the receive until it says so.
            const int st = s.split.canceled ? ODL_ERR_CANCELED : status;
            if (status == ODL_ERR_PEER_LOST || status == ODL_ERR_PEER_CLOSED)
                complete(s.split.op.ctx, st, ODL_OP_RECV, i, s.split.tag, s.split.msg_len);
            else
                m_orphans.push_back(split_orphan{s.split.op.ctx, i, s.split.tag, s.split.msg_len, s.split.ref.cookie});
            s.split = stream_state::split_recv{};
        }
        s.resend_pending = false;
        s.sends.clear();
        s.eager_held = 0;
        s.recvs.clear();
        s.unexpected.clear();
        s.cur = assembly{};
    }
}

void engine::shutdown() {
    // The caller may free receive buffers once close returns: the receive
    // thread must be done with them, and (bounded) the peer's RNDV_WROTE of
    // any split receive must have come first.
    rx_drain();
    const auto splitting = [this] {
        if (!m_orphans.empty()) return true;
        for (const stream_state& s : m_s)
            if (s.split.active) return true;
        return false;
    };
    for (int i = 0; i < kSplitCloseTries && splitting(); ++i) {
        if (m_state == ODL_LINK_UP) {
            unsigned processed = 0;
            flush_ctrl();
            tx_flush();
            process_rx_budget(kRxBudget, processed);
            m_link->rx_flush();
            if (processed == 0 && m_link->progress() == link_state::lost) fail(ODL_ERR_PEER_LOST, ODL_LINK_LOST, m_link->failure());
        } else {
            drain_orphans();
        }
        if (splitting()) std::this_thread::sleep_for(kSplitCloseRetry);
    }
    if (m_goodbye_sent || m_state == ODL_LINK_LOST || m_state == ODL_LINK_PEER_CLOSED) return;
    if (!m_hello_sent) return;  // the peer never heard of us
    confirm_eager_sends();
    if (m_state == ODL_LINK_LOST || m_state == ODL_LINK_PEER_CLOSED) return;
    m_ctrl.clear();
    if (m_retx && m_state == ODL_LINK_UP) {
        // Acknowledge everything that arrived, even if an ACK went out (it
        // may have been lost): a peer whose last send we took must not see
        // it fail for want of an ACK when our GOODBYE comes.
        for (uint32_t i = 0; i < m_streams; ++i) {
            stream_state& s = m_s[i];
            if (s.rx_seq == 0) continue;
            s.ack_force = true;
            s.ack_queued = true;
            queue_ctrl(ctrl::ack, uint16_t(i));
        }
    }
    queue_ctrl(ctrl::goodbye, 0);
    tx_drain();
    for (int i = 0; i < kGoodbyeTries && !m_ctrl.empty(); ++i) {
        flush_ctrl();
        tx_drain();
        m_link->tx_flush();
        if (m_ctrl.empty()) break;
        if (m_link->progress() == link_state::lost) break;
        std::this_thread::sleep_for(kGoodbyeRetry);
    }
}

void engine::confirm_eager_sends() {
    // The caller was told these sends are done. Our GOODBYE, or a kernel
    // link's close notice (which travels apart from the frames), would end
    // the peer's session with them still on the way or lost for good; so
    // keep the link going (resends, PROBEs, our own ACKs) until the peer
    // has acknowledged them, bounded.
    const auto unconfirmed = [this] {
        size_t n = 0;
        for (uint32_t i = 0; i < m_streams; ++i) n += m_s[i].eager_held;
        return n;
    };
    if (!m_retx || m_state != ODL_LINK_UP || unconfirmed() == 0) return;
    const uint64_t end = now_ns() + kCloseConfirmNs;
    while (m_state == ODL_LINK_UP && unconfirmed() != 0 && now_ns() < end) {
        poll(nullptr, 0);  // the link's work only: the caller takes no completions now
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if (const size_t n = unconfirmed(); n != 0 && m_state == ODL_LINK_UP)
        log::write(ODL_LOG_WARN, "{}: close: the peer did not acknowledge {} completed send(s) within {} ms", m_link->name(),
                   n, kCloseConfirmNs / 1'000'000);
}

void engine::query(odl_dev_info& info) const {
    fmt::format_to_n(info.backend, sizeof(info.backend) - 1, "{}", m_cfg.backend);
    fmt::format_to_n(info.name, sizeof(info.name) - 1, "{}", m_link->name());
    info.index = m_cfg.index;
    info.link_state = m_state;
    info.link_rate_mbps = m_link->rate_mbps();
    info.num_streams = m_streams;
    info.window_frames = m_peer_window;
    info.max_frame_payload = ODL_FRAME_MAX_PAYLOAD;
    info.max_msg_bytes = m_peer_max_msg;
    fmt::format_to_n(info.peer_name, sizeof(info.peer_name) - 1, "{}", m_peer_name);
    info.peer_pid = m_peer_pid;
    info.peer_host_id = m_peer_host_id;
    info.peer_version = m_peer_version;
    info.peer_features = m_peer_features;
    fmt::format_to_n(info.local_name, sizeof(info.local_name) - 1, "{}", m_cfg.node_name);
    info.local_host_id = host_id();
    info.local_pid = uint32_t(getpid());
}

void engine::stats(odl_stats& stats) const {
    stats = m_stats;
    const sim_lag lag = sim_link_lag(*m_link);
    stats.model_frames = lag.frames;
    stats.model_late_frames = lag.late_frames;
    stats.model_lag_max_ns = lag.max_ns;
}

}  // namespace odl
