// SPDX-License-Identifier: MIT
// The frame engine: OdinLink's message layer over any frame link. Cuts
// messages into frames, reassembles them in order, matches tags, and keeps
// the receiver safe with per-stream credits (and, where the transport says
// how much it holds, a link-wide credit), so nothing is dropped when the
// receiver is slow and a hostile peer cannot make it buffer without bound.
// Where both ends share a kernel, large messages may go by single-copy
// rendezvous (RNDV) instead of frames.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"
#include "link.h"
#include "odl/wire/frame_codec.h"
#include "copy_thread.h"

namespace odl {

class engine final : public backend {
public:
    engine(std::unique_ptr<link> l, open_config cfg);
    ~engine() override;
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    int post_send(uint32_t stream, uint32_t tag, const void* buf, uint64_t len, uint64_t ctx) override;
    int post_recv(uint32_t stream, uint32_t tag, void* buf, uint64_t cap, uint64_t ctx) override;
    int cancel(uint32_t stream, uint64_t ctx) override;
    int discard(uint32_t stream, uint32_t tag, uint32_t mask, uint32_t flags) override;
    size_t poll(odl_completion* comps, size_t max) override;
    void query(odl_dev_info& info) const override;
    void stats(odl_stats& stats) const override;
    uint32_t link_state() const override { return m_state; }
    std::string failure() const override { return m_failure; }
    int error_status() const override { return m_fail_status; }
    void shutdown() override;

    /// Per-reason counts of refused frames (enum odl_frame_err), for tests.
    const std::array<uint64_t, ODL_FRAME_ERR_COUNT>& bad_frames() const { return m_bad; }

    /// Link-wide credit as this end sees it (not in odl_stats: the public
    /// struct stays as it is), for tests and debugging.
    struct link_credit_info {
        uint32_t peer_window = 0;      ///< peer's link_window in force; 0: none
        uint32_t outstanding = 0;      ///< data frames sent, not yet returned
        uint32_t max_outstanding = 0;  ///< highest @outstanding seen
        uint64_t stalls = 0;           ///< times sending waited for link credit
        uint64_t returns_sent = 0;     ///< LINK_CREDIT frames sent
    };
    link_credit_info link_credit() const;

    /// Single-copy rendezvous counters, for tests.
    struct rndv_info {
        bool tx = false;         ///< this end sends large messages by RNDV
        bool rx = false;         ///< this end accepts RNDV
        uint64_t sent = 0;       ///< RNDV frames sent
        uint64_t copied = 0;     ///< messages this end copied from the peer
        uint64_t resends = 0;    ///< RNDV answered RESEND (no receive yet, copy failed or revoked)
        bool split = false;      ///< this end, receiving, asks the sender to write part (RNDV_SPLIT)
        uint64_t splits = 0;     ///< RNDV_SPLIT sent (receiver)
        uint64_t wrote = 0;      ///< parts this end wrote into the peer on RNDV_SPLIT (sender)
        uint64_t write_fails = 0;  ///< RNDV_WROTE received with a failure (receiver)
    };
    rndv_info rndv() const { return m_rndv; }

    /// Retransmission (ODL_FEAT_RETX) counters, for tests.
    struct retx_info {
        bool on = false;       ///< negotiated: both ends' links may lose frames
        uint64_t acks = 0;     ///< ACK frames sent
        uint64_t naks = 0;     ///< NAK frames sent
        uint64_t probes = 0;   ///< PROBE frames sent
        uint64_t rewinds = 0;  ///< times this end went back to resend
    };
    retx_info retx() const {
        retx_info r = m_retx_info;
        r.on = m_retx;
        return r;
    }

    /// The send thread (open_config::tx_thread), for tests.
    struct tx_thread_info {
        bool on = false;      ///< this engine has one
        uint64_t frames = 0;  ///< data frames handed to it
    };
    tx_thread_info tx_thread() const { return {m_copier != nullptr, m_copier ? m_copier->pushed() : 0}; }
    /// Tests: slow the send thread down (copy_thread::set_test_delay_us()).
    void tx_thread_test_delay(uint32_t us) {
        if (m_copier) m_copier->set_test_delay_us(us);
    }
    /// Tests: every data frame goes to the send thread, not only those of a
    /// poll that also received a burst. A test that needs frames waiting for
    /// the thread otherwise depends on how the polls fall: on a loaded
    /// machine the receive side came a frame or two a poll, the sends went
    /// out on the engine's thread, and the wait for 128 through the thread
    /// never ended.
    void tx_thread_test_always(bool on) { m_tx_always = on; }
    /// The receive thread (open_config::rx_thread), for tests.
    struct rx_thread_info {
        bool on = false;      ///< this engine has one
        uint64_t frames = 0;  ///< payloads handed to it
        size_t held = 0;      ///< frames held in the link now
    };
    rx_thread_info rx_thread() const {
        return {m_rx_copier != nullptr, m_rx_copier ? m_rx_copier->pushed() : 0, m_rx_held.size()};
    }
    /// Tests: slow the receive thread down.
    void rx_thread_test_delay(uint32_t us) {
        if (m_rx_copier) m_rx_copier->set_test_delay_us(us);
    }

private:
    struct send_op {
        const unsigned char* buf;
        uint64_t len;
        uint64_t sent;
        uint32_t tag;
        uint64_t ctx;
        /// Canceled after it started: the unsent bytes from offset @owned_from
        /// live here, the caller's buffer is free, and the completion says
        /// ODL_ERR_CANCELED once the message has left.
        std::vector<unsigned char> owned{};
        uint64_t owned_from = 0;
        bool detached = false;
        /// Rendezvous: none (frames), waiting (RNDV sent, RNDV_DONE due;
        /// the stream sends nothing else meanwhile), frames (the peer asked
        /// for DATA frames after all).
        enum class rndv_phase : uint8_t { none, waiting, frames } rndv = rndv_phase::none;
        uint64_t cookie = 0;
        /// Holds @cookie while the peer may read the buffer; 0 once canceled.
        std::unique_ptr<std::atomic<uint64_t>> cookie_word{};
        bool split_seen = false;  ///< RNDV_SPLIT answered (one per RNDV)
        /// Frames: the message takes @nframes; @frames_sent of them went out
        /// in the current pass (a resend sets it back). With retransmission
        /// the op stays queued, fully sent, until the peer acknowledges its
        /// last frame; @first_seq is its first frame's seq once @started.
        uint32_t nframes = 1;
        uint32_t frames_sent = 0;
        uint32_t first_seq = 0;
        bool started = false;
        /// Retransmission: a small send completed once sent, from a copy in
        /// @owned (detached); kept until acknowledged, completed no more.
        bool completed = false;
        /// When the program asked (timed transports only; 0 otherwise).
        uint64_t asked_ns = 0;
        /// Send thread: its frames are in the link once the thread's done()
        /// reaches this (0: none went through the thread).
        uint64_t last_ticket = 0;
    };
    struct recv_op {
        unsigned char* buf;
        uint64_t cap;
        uint32_t tag;
        uint64_t ctx;
    };
    /// An RNDV frame's reference to a message in the peer's memory.
    struct rndv_ref {
        uint64_t addr = 0;
        uint64_t cookie_addr = 0;
        uint64_t cookie = 0;
    };
    /// A message that arrived before a matching receive was posted. Its
    /// frames' credits are withheld until it is matched.
    struct unexpected_msg {
        uint32_t tag;
        uint32_t msg_len;
        std::vector<unsigned char> data;
        uint32_t frames_held = 0;
        bool complete = false;
        bool corrupt = false;
    };
    /// The message being received on a stream.
    struct assembly {
        bool active = false;
        bool to_user = false;  ///< true: into @op; false: into @um (or dropped)
        bool discard = false;  ///< its receive was canceled: drop the rest
        recv_op op{};
        std::list<unexpected_msg>::iterator um;
        uint32_t tag = 0;
        uint32_t msg_len = 0;
        uint32_t next_offset = 0;
        bool corrupt = false;
        /// Receive thread: the message's number once a frame of it went to
        /// the thread (0: none did), and the last such frame's ticket.
        uint64_t serial = 0;
        uint64_t last_ticket = 0;
    };
    struct stream_state {
        // Transmit side.
        std::deque<send_op> sends;
        uint32_t tx_seq = 0;         ///< seq of the next data frame to send
        uint32_t peer_consumed = 0;  ///< peer's latest credit report
        // Retransmission: frames [acked, tx_max) are kept (their ops stay in
        // @sends) until acknowledged; a NAK sets tx_seq back. @tx_cur is the
        // op being sent: those before it are sent and await acknowledgement.
        uint32_t tx_max = 0;  ///< seq after the highest ever sent
        uint32_t acked = 0;   ///< the peer has every frame before it
        size_t tx_cur = 0;
        size_t eager_held = 0;  ///< sends in @sends already completed (small, copied), awaiting acknowledgement
        uint64_t probe_due = 0;     ///< when to PROBE if nothing is acknowledged; 0: not armed, 1: armed, time not yet set
        uint8_t probe_backoff = 0;  ///< PROBEs since the last acknowledgement (interval doubles)
        // Receive side.
        std::deque<recv_op> recvs;
        std::list<unexpected_msg> unexpected;
        assembly cur;
        uint32_t rx_seq = 0;      ///< next expected frame seq
        uint32_t rx_hi = 0;       ///< retransmission: seq after the highest seen (link credit counts each seq once)
        uint32_t ack_told = 0;    ///< last rx_seq told the peer (ACK, NAK, or credit)
        bool ack_queued = false;
        bool ack_force = false;   ///< a resent frame or a PROBE came: ACK even if nothing is new
        bool ack_deferred = false;  ///< idle once with frames unacknowledged (ACK on the next idle poll)
        bool nak_sent = false;    ///< NAK sent for the current rx_seq
        uint32_t consumed = 0;    ///< frames freed (delivered or dropped)
        uint32_t advertised = 0;  ///< last credit value told to the peer
        bool credit_queued = false;
        /// odl_discard(): arriving messages whose tag matches are dropped.
        bool drop = false;
        uint32_t drop_tag = 0;
        uint32_t drop_mask = 0;
        /// An RNDV we answered RESEND: the peer sends it as DATA frames, the
        /// next message on this stream; into @resend_op if it was matched
        /// (the copy failed), else matched as it arrives (no receive yet).
        bool resend_pending = false;
        bool resend_matched = false;
        bool resend_discard = false;  ///< its receive was canceled meanwhile
        recv_op resend_op{};
        uint32_t resend_tag = 0;
        uint32_t resend_len = 0;
        /// A split rendezvous: RNDV_SPLIT sent, the peer may be writing
        /// [split, end) of @op's buffer until its RNDV_WROTE comes. Until
        /// then the receive neither completes nor is canceled (a cancel only
        /// marks it), so its buffer cannot go back to the caller while the
        /// peer writes into it.
        struct split_recv {
            bool active = false;
            bool canceled = false;
            int own_err = 0;  ///< errno of our copy of [0, split); 0: copied
            recv_op op{};
            uint32_t tag = 0;
            uint32_t msg_len = 0;
            rndv_ref ref{};
            uint64_t split = 0;
            uint64_t end = 0;
        } split;
    };
    /// A split receive whose link failed here while the peer may still be
    /// writing into it: completed once the peer's RNDV_WROTE comes or the
    /// peer is gone (closed or dead), never before.
    struct split_orphan {
        uint64_t ctx;
        uint32_t stream;
        uint32_t tag;
        uint32_t msg_len;
        uint64_t cookie;
    };
    enum class ctrl { hello, credit, goodbye, link_credit, rndv_done, rndv_split, rndv_wrote, ack, nak, probe };
    struct ctrl_item {
        ctrl kind;
        uint16_t stream;
        uint64_t cookie = 0;  ///< rndv_done, rndv_split, rndv_wrote
        uint32_t status = 0;  ///< rndv_done: enum odl_rndv_status; rndv_wrote: odl_rndv_wrote_status
        uint64_t addr = 0;    ///< rndv_split
        uint32_t split = 0;   ///< rndv_split
        uint32_t end = 0;     ///< rndv_split
    };

    void process_rx_budget(unsigned budget, unsigned& processed);
    void handle_frame(const unsigned char* data, size_t len);
    void handle_hello(const odl_frame_info& fi, const unsigned char* payload);
    void handle_credit(uint16_t stream, uint32_t credit);
    void handle_ack(const odl_frame_info& fi);
    void handle_probe(const odl_frame_info& fi);
    void on_acked(stream_state& s, uint16_t stream, uint32_t ack);
    void seek_tx(stream_state& s, uint32_t seq);
    void rx_out_of_order(stream_state& s, uint16_t stream, uint32_t seq);
    bool count_link_seq(stream_state& s, uint32_t upto, bool arrived);
    void queue_acks(bool idle);
    void arm_probe(stream_state& s);
    void check_probes();
    void handle_link_credit(uint32_t credit);
    void return_link_credit();
    void handle_data(const odl_frame_info& fi, const unsigned char* payload);
    void handle_rndv(stream_state& s, const odl_frame_info& fi, const unsigned char* payload);
    void handle_rndv_done(const odl_frame_info& fi, const unsigned char* payload);
    void handle_rndv_split(const odl_frame_info& fi, const unsigned char* payload);
    void handle_rndv_wrote(const odl_frame_info& fi, const unsigned char* payload);
    void rndv_finish(stream_state& s, uint16_t stream, const recv_op& op, uint32_t tag, uint32_t msg_len, const rndv_ref& ref,
                     int err);
    int rndv_read(unsigned char* dst, uint64_t src, uint64_t len);
    int rndv_cookie_check(const rndv_ref& ref);
    void drain_orphans();
    /// close(): until the peer acknowledged the sends completed at once (bounded).
    void confirm_eager_sends();
    void rndv_pull(stream_state& s, uint16_t stream, const recv_op& op, uint32_t tag, uint32_t msg_len, const rndv_ref& ref);
    bool send_rndv_frame(uint16_t stream, stream_state& s, send_op& op);
    uint32_t rndv_pid();
    void start_message(stream_state& s, const odl_frame_info& fi);
    /// A receive is done: it completes now, or once the receive thread has
    /// copied the message's frames (@ticket: its last; @serial: its number),
    /// and never before an earlier receive's completion.
    void complete_recv(const recv_op& op, uint32_t stream, uint32_t tag, uint64_t msg_len, bool corrupt,
                       uint64_t serial = 0, uint64_t ticket = 0);
    void emit_recv(const recv_op& op, uint32_t stream, uint32_t tag, uint64_t msg_len, bool corrupt, uint64_t ready_ns);
    struct rx_held;
    /// Receive thread: frees the frames it is done with (in order), then
    /// completes the receives whose frames all are copied.
    void rx_retire();
    /// Waits (briefly) for the receive thread to finish everything queued
    /// and retires it: before a receive buffer goes back to its owner in
    /// ways the thread cannot see coming (cancel, failure, close).
    void rx_drain();
    /// A frame the receive thread copied failed its checksum.
    void rx_csum_failed(const rx_held& h);
    /// A completion waits for its frame's due time (timed transports).
    bool holding() const;
    void consume(stream_state& s, uint16_t stream, uint32_t frames);
    void pump_tx(unsigned budget);
    bool send_data_frame(uint16_t stream, stream_state& s, send_op& op);
    /// Room for the next frame: the link's, or with the send thread the
    /// next of the slots it may hold reserved. nullptr when full.
    unsigned char* tx_room();
    /// The frame in the last tx_room() is written (or will be, once the send
    /// thread's done() reaches @ticket; 0: written now): committed at once,
    /// or with the send thread in order once it and those before are done.
    void tx_queued(size_t bytes, uint64_t ticket, uint64_t asked_ns);
    struct tx_pending;
    /// Commits the oldest reserved frame (@p's bytes; its program's ask time).
    void commit_frame(const tx_pending& p);
    /// Send thread: commits the frames it has filled, completes the sends
    /// whose frames all are in the link (in order).
    void tx_commit_done();
    /// tx_commit_done(), then the link's tx_flush().
    void tx_flush();
    /// Waits (briefly) for the send thread to finish everything queued and
    /// commits it: before a send's buffer goes back to its owner in ways
    /// the thread cannot see coming (cancel, failure, close).
    void tx_drain();
    /// A send is done (@status): it completes now, or with the send thread
    /// once its frames are in the link, keeping @owned (the op's copy, which
    /// they may read) till then. @complete false: it completed before (an
    /// eager send), only the copy is kept.
    void retire_send(const send_op& op, int status, uint32_t stream, bool complete, std::vector<unsigned char> owned = {});
    void flush_ctrl();
    bool try_send_ctrl(const ctrl_item& item);
    void queue_ctrl(ctrl kind, uint16_t stream);
    void protocol_error(enum odl_frame_err err, const std::string& what);
    void fail(int status, uint32_t new_state, std::string why);
    static odl_completion completion(uint64_t ctx, int status, uint32_t op, uint32_t stream, uint32_t tag, uint64_t len);
    /// Queues a completion, held for the due time of the frame being handled.
    void complete(uint64_t ctx, int status, uint32_t op, uint32_t stream, uint32_t tag, uint64_t len);

    std::unique_ptr<link> m_link;
    open_config m_cfg;
    uint32_t m_state = ODL_LINK_CONNECTING;
    int m_fail_status = ODL_OK;
    std::string m_failure;
    bool m_hello_sent = false;
    bool m_hello_received = false;
    bool m_goodbye_sent = false;

    // Peer's terms, from its HELLO.
    uint32_t m_streams;  ///< negotiated (local until HELLO)
    uint32_t m_peer_window = 0;
    uint64_t m_peer_max_msg = 0;
    uint32_t m_peer_version = 0;
    uint32_t m_peer_features = 0;
    uint32_t m_peer_pid = 0;
    uint64_t m_peer_host_id = 0;
    std::string m_peer_name;

    // Link-wide credit (ODL_FEAT_LINK_CREDIT). Transmit: data frames sent,
    // and the peer's latest count of those it gave back to its transport.
    uint32_t m_peer_link_window = 0;  ///< 0: peer set no link limit
    uint32_t m_link_tx = 0;
    uint32_t m_link_peer_returned = 0;
    uint32_t m_link_max_outstanding = 0;
    uint64_t m_link_stalls = 0;
    uint64_t m_link_returns_sent = 0;
    // Receive: data frames taken off the transport, those handed back to it
    // (after rx_flush), and the count last told to the peer.
    bool m_link_rx_limit = false;  ///< we set a link window and the peer obeys it
    uint32_t m_link_rx = 0;
    uint32_t m_link_returned = 0;
    uint32_t m_link_advertised = 0;
    bool m_link_credit_queued = false;
    uint32_t m_link_batch;

    // Single-copy rendezvous (ODL_FEAT_RNDV).
    bool m_rndv_pid_known = false;
    uint32_t m_rndv_pid = 0;  ///< peer's pid for process_vm_readv; 0: no rendezvous
    uint64_t m_rndv_next_cookie;
    rndv_info m_rndv;
    uint32_t m_rndv_split_pct;  ///< part of a message the receiver copies itself, percent; 100: no split
    std::vector<split_orphan> m_orphans;

    // Retransmission (ODL_FEAT_RETX).
    bool m_offer_retx;  ///< the link may lose frames (and ODL_RETX is not off)
    bool m_retx = false;
    retx_info m_retx_info;
    uint64_t m_ack_dirty = 0;   ///< streams (bit i) that took frames since their last ACK
    uint32_t m_ack_batch;       ///< ACK at least every this many frames while busy
    uint64_t m_next_probe = 0;  ///< earliest armed probe_due (1: armed, time not yet set); 0: none
    uint32_t m_probe_polls = 0;

    std::vector<stream_state> m_s;
    uint32_t m_credit_batch;
    uint32_t m_tx_rr = 0;  ///< round-robin start for fairness across streams
    std::deque<ctrl_item> m_ctrl;
    /// A completion and when it is the program's (0: at once): one caused
    /// by a frame a timed transport handed over early waits for its due time.
    struct done_item {
        odl_completion c;
        uint64_t ready_ns;
    };
    std::deque<done_item> m_done;
    uint64_t m_rx_due = 0;  ///< the due time of the frame being handled (0: none)
    /// Send thread (open_config::tx_thread on a link that can reserve
    /// ahead): frames reserved and handed to it, committed in this order.
    struct tx_pending {
        uint64_t ticket;  ///< 0: written by this thread
        size_t bytes;
        uint64_t asked_ns;
    };
    std::deque<tx_pending> m_tx_pending;
    unsigned m_tx_depth = 1;
    bool m_tx_offload = false;  ///< this poll's data frames go to the thread
    bool m_tx_always = false;   ///< tests: m_tx_offload whenever there is a thread
    /// Sends done whose frames the thread is still copying: their
    /// completions (none for an eager one) wait, and so does their copy.
    struct tx_retired {
        uint64_t ticket;
        bool has_completion;
        done_item d;
        std::vector<unsigned char> owned;
    };
    std::deque<tx_retired> m_tx_retired;
    /// Receive thread (open_config::rx_thread on a link that can hold
    /// frames): frames taken but not yet freed, oldest first, each with its
    /// copy's ticket (0: none, held only behind one that has).
    struct rx_held {
        uint64_t ticket = 0;
        uint64_t serial = 0;      ///< its message (assembly::serial)
        uint32_t offset = 0;      ///< in the message, for the report
        uint32_t link_frames = 0;  ///< link credit it holds (of m_link_rx)
        uint16_t stream = 0;
    };
    std::deque<rx_held> m_rx_held;
    rx_held m_rx_cur;             ///< the frame being handled: its copy, if it went to the thread
    uint32_t m_rx_held_link = 0;  ///< of m_link_rx, held in m_rx_held
    unsigned m_rx_depth = 1;
    bool m_rx_busy = false;     ///< the last poll took a burst in
    bool m_rx_offload = false;  ///< the frame being handled may go to the thread
    uint64_t m_rx_serial = 0;
    /// Receives done whose frames the thread is still copying, in order.
    struct rx_retired {
        uint64_t ticket;
        uint64_t serial;
        recv_op op;
        uint32_t stream;
        uint32_t tag;
        uint64_t msg_len;
        bool corrupt;
        uint64_t ready_ns;
    };
    std::deque<rx_retired> m_rx_retired;
    const bool m_timed;     ///< the transport is timed (link::timed())
    odl_stats m_stats{};
    std::array<uint64_t, ODL_FRAME_ERR_COUNT> m_bad{};
    /// Last: stopped before anything their jobs point into goes.
    std::unique_ptr<copy_thread> m_copier;     ///< the send thread
    std::unique_ptr<copy_thread> m_rx_copier;  ///< the receive thread
};

}  // namespace odl
