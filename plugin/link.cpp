// SPDX-License-Identifier: MIT
// One libodl device as an NCCL device. All progress is made by the threads
// NCCL already calls us from (connect/accept/test poll), so the plugin owns
// no thread that could outlive a dlclose().
#include "link.h"

#include <cstring>
#include <stdexcept>

#include "core.h"
#include "log.h"

namespace odl::plugin {
namespace {

enum : uint64_t { kCtxConnectSend = 8, kCtxCtrlRecv = 9, kCtxKindMask = 15 };

uint64_t ctx_of(const void* p, uint64_t kind) { return reinterpret_cast<uint64_t>(p) | kind; }

}  // namespace

link::link(int dev, const std::string& backend, uint32_t index, const std::string& identity, stats_link* stats)
    : m_nccl_dev(dev), m_name(backend + std::to_string(index)), m_stats(stats) {
    odl_open_params p;
    odl_open_params_init(&p);
    p.backend = backend.c_str();
    p.index = index;
    p.flags = ODL_OPEN_NONBLOCK;  // connect/accept must never block
    p.num_streams = kStreams;
    p.max_msg_bytes = 1ull << 30;  // what NCCL assumes for v8 plugins (MAX_NET_SIZE)
    p.node_name = identity.c_str();
    const int rc = odl_open(&p, &m_dev);
    if (rc != ODL_OK)
        throw std::runtime_error(m_name + ": " + odl_strerror(rc) + " (" + odl_last_error() + ")");
    copy_str(m_stats->name, sizeof(m_stats->name), m_name);
    std::lock_guard<std::mutex> lk(m_mu);
    post_ctrl_recv_locked();
}

link::~link() {
    // odl_close drops whatever is still posted; zombies go with it.
    odl_close(m_dev);
    m_zombies.clear();
}

void link::post_ctrl_recv_locked() {
    if (m_ctrl_posted || failed_locked()) return;
    const int rc = odl_post_recv(m_dev, kCtrlStream, ODL_TAG_ANY, &m_ctrl_buf, sizeof(m_ctrl_buf), nullptr,
                                 ctx_of(this, kCtxCtrlRecv));
    if (rc == ODL_OK)
        m_ctrl_posted = true;
    else
        ODL_WARN("%s: cannot post control receive: %s (%s)", m_name.c_str(), odl_strerror(rc), odl_last_error());
}

void link::refresh_state_locked() {
    odl_dev_info info{};
    info.struct_size = sizeof(info);
    if (odl_query(m_dev, &info) != ODL_OK) return;
    if (info.link_state != m_state) {
        if (info.link_state == ODL_LINK_UP) {
            m_peer = info.peer_name;
            m_peer_max_msg = info.max_msg_bytes;
            copy_str(m_stats->peer, sizeof(m_stats->peer), m_peer);
            ODL_INFO("%s: link up to %s", m_name.c_str(), info.peer_name);
        } else if (info.link_state > ODL_LINK_UP) {
            ODL_WARN("%s: link to %s is %s", m_name.c_str(), m_peer.c_str(),
                     info.link_state == ODL_LINK_PEER_CLOSED ? "closed by the peer" : "lost");
        }
        m_state = info.link_state;
        stat_store(m_stats->link_state, m_state);
    }
}

void link::progress() {
    std::lock_guard<std::mutex> lk(m_mu);
    progress_locked();
}

void link::progress_locked() {
    odl_completion comps[64];
    size_t n = 0;
    if (odl_poll(m_dev, comps, 64, &n) != ODL_OK) return;
    for (size_t i = 0; i < n; ++i) route(comps[i]);
    if (m_state != ODL_LINK_UP || (++m_polls & 1023) == 0) {
        refresh_state_locked();
        odl_stats s{};
        s.struct_size = sizeof(s);
        if (odl_get_stats(m_dev, &s) == ODL_OK) {
            stat_store(m_stats->odl_tx_frames, s.tx_frames);
            stat_store(m_stats->odl_rx_frames, s.rx_frames);
            stat_store(m_stats->odl_credit_stalls, s.credit_stalls);
            stat_store(m_stats->odl_link_full_stalls, s.link_full_stalls);
            stat_store(m_stats->odl_rx_unexpected_msgs, s.rx_unexpected_msgs);
        }
    }
}

void link::on_ctrl(const odl_completion& c) {
    m_ctrl_posted = false;
    if (c.status == ODL_OK) {
        const connect_msg m = m_ctrl_buf;
        if (c.len == sizeof(m) && m.magic == kConnectMagic && m.version == 1 && m.stream > kCtrlStream &&
            m.stream < kStreams)
            enqueue_connect(pending_connect{m.listen_id, this, m.stream, m.gen});
        else
            ODL_WARN("%s: dropped a malformed CONNECT message (%llu bytes)", m_name.c_str(),
                     static_cast<unsigned long long>(c.len));
    }
    post_ctrl_recv_locked();
}

void link::finish_op(comm* c) {
    if (--c->posted > 0 || !c->closed) return;
    // Last outstanding operation of a closed comm: now it can go.
    for (auto it = m_zombies.begin(); it != m_zombies.end(); ++it) {
        if (it->get() != c) continue;
        if (c->magic == kDeadMagic + 1) m_tx_used.reset(c->stream);
        m_zombies.erase(it);
        return;
    }
}

void link::route(const odl_completion& c) {
    const uint64_t kind = c.ctx & kCtxKindMask;
    void* p = reinterpret_cast<void*>(c.ctx & ~kCtxKindMask);
    if (kind == kCtxCtrlRecv) {
        on_ctrl(c);
        return;
    }
    if (kind == kCtxConnectSend) {
        auto* cm = static_cast<comm*>(p);
        if (c.status != ODL_OK && cm->status == ODL_OK) cm->status = c.status;
        finish_op(cm);
        return;
    }
    auto* r = static_cast<request*>(p);
    comm* owner = r->owner;
    r->sizes[kind] = c.len;
    if (c.status != ODL_OK && r->status == ODL_OK) r->status = c.status;
    --r->pending;
    finish_op(owner);
}

comm* link::open_send_locked(uint64_t listen_id, std::string& why, int& nccl_rc) {
    uint32_t s = 0;
    for (uint32_t i = 0; i < kStreams - 1 && !s; ++i) {
        const uint32_t cand = 1 + (m_next_stream - 1 + i) % (kStreams - 1);
        if (!m_tx_used.test(cand)) s = cand;
    }
    if (!s) {
        why = "all " + std::to_string(kStreams - 1) + " streams of " + m_name + " are in use";
        nccl_rc = ncclSystemError;
        return nullptr;
    }
    m_next_stream = 1 + s % (kStreams - 1);
    auto c = std::make_unique<comm>();
    c->magic = kSendMagic;
    c->ln = this;
    c->stream = s;
    c->gen = m_gen[s] = (m_gen[s] + 1) & 0x7f;
    c->reqs.resize(NCCL_NET_MAX_REQUESTS * kMaxRecvs);
    const connect_msg m{kConnectMagic, 1, listen_id, s, c->gen};
    std::memcpy(c->hello, &m, sizeof(m));
    const int rc = odl_post_send(m_dev, kCtrlStream, 1, c->hello, sizeof(m), nullptr, ctx_of(c.get(), kCtxConnectSend));
    if (rc != ODL_OK) {
        why = std::string("cannot send CONNECT on ") + m_name + ": " + odl_strerror(rc) + " (" + odl_last_error() + ")";
        nccl_rc = ncclSystemError;
        return nullptr;
    }
    c->posted = 1;
    m_tx_used.set(s);
    // Push CONNECT out now: the caller may not touch this link again before
    // the listener's accept() needs it.
    progress_locked();
    stat_add(m_stats->send_comms, uint64_t(1));
    return c.release();
}

comm* link::open_recv_locked(uint32_t stream, uint32_t gen) {
    auto* c = new comm();
    c->magic = kRecvMagic;
    c->ln = this;
    c->stream = stream;
    c->gen = gen;
    c->reqs.resize(NCCL_NET_MAX_REQUESTS);
    stat_add(m_stats->recv_comms, uint64_t(1));
    return c;
}

void link::close_comm_locked(comm* c) {
    const bool is_send = c->magic == kSendMagic;
    stat_add(is_send ? m_stats->send_comms : m_stats->recv_comms, uint64_t(-1));
    uint64_t live = 0;
    for (auto& r : c->reqs) {
        if (r.in_use) ++live;
        r.magic = kDeadMagic;
    }
    stat_add(m_stats->inflight, uint64_t(0) - live);
    c->closed = true;
    // Marks "send comm" in the dead state so finish_op knows to free the stream.
    c->magic = is_send ? kDeadMagic + 1 : kDeadMagic;
    if (c->posted == 0) {
        if (is_send) m_tx_used.reset(c->stream);
        delete c;
        return;
    }
    // libodl cannot cancel posted operations, so the comm (whose requests the
    // completions point at) lives on until they complete or the link closes.
    m_zombies.emplace_back(c);
}

}  // namespace odl::plugin
