// SPDX-License-Identifier: MIT
// One libodl device driven by its own progress thread. NCCL's threads never
// call into the device: they queue work (lock-free push), the thread posts
// it, polls libodl, and publishes completions through atomics, so copies
// for different lanes run on different cores. The thread is joined when the
// link is destroyed (finalize, or unload for v8-v10), so nothing of the
// plugin runs after NCCL dlclose()s it.
#include "link.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "core.h"
#include "log.h"
#include "odl/wire/spin.h"

namespace odl::plugin {
namespace {

enum : uint64_t { kCtxConnectSend = 8, kCtxCtrlRecv = 9, kCtxKindMask = 15 };

uint64_t ctx_of(const void* p, uint64_t kind) { return reinterpret_cast<uint64_t>(p) | kind; }

uint64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

uint32_t* futex_word(std::atomic<uint32_t>& a) { return reinterpret_cast<uint32_t*>(&a); }

// Idle policy of a progress thread. With operations outstanding it polls
// flat out for kSpinNs, then yields the core between polls, and only after
// kYieldNs without progress sleeps kBusyNapNs at a time (a long gap between
// collectives). With nothing outstanding it naps up to kIdleNapNs; new work
// from NCCL wakes it at once through the doorbell.
constexpr uint64_t kSpinNs = 100'000;
constexpr uint64_t kYieldNs = 5'000'000;
constexpr uint64_t kBusyNapNs = 50'000;
constexpr uint64_t kIdleNapNs = 1'000'000;

bool sticky(int st) {
    return st == ODL_ERR_PEER_LOST || st == ODL_ERR_PEER_CLOSED || st == ODL_ERR_IO || st == ODL_ERR_PROTO ||
           st == ODL_ERR_TIMEOUT;
}

}  // namespace

link::link(int dev, const std::string& backend, uint32_t index, const std::string& identity, stats_link* stats)
    : m_nccl_dev(dev), m_name(backend + std::to_string(index)), m_stats(stats) {
    odl_open_params p;
    odl_open_params_init(&p);
    p.backend = backend.c_str();
    p.index = index;
    // connect/accept must never block; a collective sends and receives at
    // once, so its copies out go on a thread of their own where there are cores.
    p.flags = ODL_OPEN_NONBLOCK | ODL_OPEN_TX_THREAD | ODL_OPEN_RX_THREAD;
    p.num_streams = kStreams;
    p.max_msg_bytes = 1ull << 30;  // what NCCL assumes for v8 plugins (MAX_NET_SIZE)
    p.node_name = identity.c_str();
    const int rc = odl_open(&p, &m_dev);
    if (rc != ODL_OK)
        throw std::runtime_error(m_name + ": " + odl_strerror(rc) + " (" + odl_last_error() + ")");
    copy_str(m_stats->name, sizeof(m_stats->name), m_name);
    // Before the progress thread: NCCL asks for the speed from its own.
    odl_dev_info info{};
    info.struct_size = sizeof(info);
    if (odl_query(m_dev, &info) == ODL_OK) m_rate_mbps = info.link_rate_mbps;
    post_ctrl_recv();
    try {
        m_thread = std::thread([this] { run(); });
    } catch (const std::exception& e) {
        odl_close(m_dev);
        throw std::runtime_error(m_name + ": cannot start its progress thread: " + e.what());
    }
}

link::~link() {
    m_stop.store(true, std::memory_order_seq_cst);
    wake();
    if (m_thread.joinable()) m_thread.join();
    // odl_close drops whatever is still posted; zombies go with it.
    if (!m_zombies.empty())
        ODL_INFO("%s: %zu closed comm(s) still had operations under way at finalize", m_name.c_str(),
                 m_zombies.size());
    report_model_timing();
    report_recovery();
    odl_close(m_dev);
    for (comm* c : m_zombies) delete c;
    m_zombies.clear();
}

// ---- NCCL's side ----------------------------------------------------------

void link::push(op* o) {
    op* h = m_head.load(std::memory_order_relaxed);
    do {
        o->next = h;
    } while (!m_head.compare_exchange_weak(h, o, std::memory_order_seq_cst, std::memory_order_relaxed));
    if (m_sleeping.load(std::memory_order_seq_cst)) wake();
}

void link::wake() {
    m_doorbell.fetch_add(1, std::memory_order_seq_cst);
    syscall(SYS_futex, futex_word(m_doorbell), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
}

void link::call(std::function<void()> fn) {
    call_op c;
    c.kind = op::kCall;
    c.obj = &c;
    c.fn = std::move(fn);
    push(&c);
    for (uint32_t i = 0; !c.done.load(std::memory_order_acquire); ++i) {
        if (i < 64) {
            odl_cpu_relax();
        } else {
            timespec ts{0, 20'000};
            nanosleep(&ts, nullptr);
        }
    }
}

comm* link::open_send(uint64_t listen_id, std::string& why) {
    auto c = std::make_unique<comm>();
    {
        std::lock_guard<std::mutex> lk(m_alloc_mu);
        uint32_t s = 0;
        for (uint32_t i = 0; i < kStreams - 1 && !s; ++i) {
            const uint32_t cand = 1 + (m_next_stream - 1 + i) % (kStreams - 1);
            if (!m_tx_used.test(cand)) s = cand;
        }
        if (!s) {
            why = "all " + std::to_string(kStreams - 1) + " streams of " + m_name + " are in use";
            return nullptr;
        }
        m_next_stream = 1 + s % (kStreams - 1);
        m_tx_used.set(s);
        c->stream = s;
        c->gen = m_gen[s] = (m_gen[s] + 1) & 0x7f;
    }
    c->magic = kSendMagic;
    c->ln = this;
    c->is_send = true;
    c->reqs.resize(NCCL_NET_MAX_REQUESTS * kMaxRecvs);
    const connect_msg m{kConnectMagic, 1, listen_id, c->stream, c->gen};
    std::memcpy(c->hello, &m, sizeof(m));
    c->hello_node.kind = op::kConnect;
    c->hello_node.obj = c.get();
    m_send_comms.fetch_add(1, std::memory_order_relaxed);
    stat_add(m_stats->send_comms, uint64_t(1));
    push(&c->hello_node);
    return c.release();
}

comm* link::open_recv(uint32_t stream, uint32_t gen) {
    auto* c = new comm();
    c->magic = kRecvMagic;
    c->ln = this;
    c->stream = stream;
    c->gen = gen;
    c->reqs.resize(NCCL_NET_MAX_REQUESTS);
    stat_add(m_stats->recv_comms, uint64_t(1));
    return c;
}

void link::close_comm(comm* c) {
    const bool is_send = c->magic == kSendMagic;
    stat_add(is_send ? m_stats->send_comms : m_stats->recv_comms, uint64_t(-1));
    if (is_send) m_send_comms.fetch_sub(1, std::memory_order_relaxed);
    uint64_t live = 0;
    for (auto& r : c->reqs) {
        if (r.in_use) ++live;
        r.magic = kDeadMagic;
    }
    stat_add(m_stats->inflight, uint64_t(0) - live);
    c->magic = kDeadMagic;
    c->close_node.kind = op::kClose;
    c->close_node.obj = c;
    push(&c->close_node);  // the thread frees it
}

// ---- the progress thread ---------------------------------------------------

void link::post_ctrl_recv() {
    if (m_ctrl_posted || failed()) return;
    const int rc = odl_post_recv(m_dev, kCtrlStream, ODL_TAG_ANY, &m_ctrl_buf, sizeof(m_ctrl_buf), nullptr,
                                 ctx_of(this, kCtxCtrlRecv));
    if (rc == ODL_OK)
        m_ctrl_posted = true;
    else if (rc == ODL_ERR_PEER_CLOSED)  // an orderly end, seen before refresh_state()
        ODL_INFO("%s: peer closed the link", m_name.c_str());
    else
        ODL_WARN("%s: cannot post control receive: %s (%s)", m_name.c_str(), odl_strerror(rc), odl_last_error());
}

void link::refresh_state() {
    odl_dev_info info{};
    info.struct_size = sizeof(info);
    if (odl_query(m_dev, &info) == ODL_OK) {
        const uint32_t old = m_state.load(std::memory_order_relaxed);
        if (info.link_state != old) {
            if (info.link_state == ODL_LINK_UP) {
                m_peer = info.peer_name;
                m_peer_max_msg.store(info.max_msg_bytes, std::memory_order_release);
                copy_str(m_stats->peer, sizeof(m_stats->peer), m_peer);
                ODL_INFO("%s: link up to %s", m_name.c_str(), info.peer_name);
            } else if (info.link_state == ODL_LINK_PEER_CLOSED) {
                // A goodbye is how every job ends; what it cuts short fails
                // in its own call and is reported there.
                ODL_INFO("%s: link to %s closed by the peer", m_name.c_str(), m_peer.c_str());
            } else if (info.link_state > ODL_LINK_UP) {
                ODL_WARN("%s: link to %s is lost", m_name.c_str(), m_peer.c_str());
            }
            m_state.store(info.link_state, std::memory_order_release);
            stat_store(m_stats->link_state, info.link_state);
        }
    }
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

// On a modelled link (the sim backend) the job's timings are the model's only
// if every frame arrived when the model said: say so once, at the end, when
// some did not (NCCL's own numbers would otherwise look like the link's).
void link::report_model_timing() {
    odl_stats s{};
    s.struct_size = sizeof(s);
    if (odl_get_stats(m_dev, &s) != ODL_OK || s.model_frames == 0) return;
    if (s.model_late_frames == 0) {
        ODL_INFO("%s: model timing: %llu frames, none late", m_name.c_str(), (unsigned long long)s.model_frames);
        return;
    }
    ODL_WARN("%s: model timing: %llu of %llu frames arrived later than the link model said (by up to %.1f us): "
             "the model or this machine did not keep up with the wall clock, so this job's timings are slower "
             "than the modelled link's",
             m_name.c_str(), (unsigned long long)s.model_late_frames, (unsigned long long)s.model_frames,
             double(s.model_lag_max_ns) / 1000.0);
}

// Frames the link lost and libodl sent again (kernel, sim): the job's data
// are whole, but its timings include the resends; say how many, once.
void link::report_recovery() {
    odl_stats s{};
    s.struct_size = sizeof(s);
    if (odl_get_stats(m_dev, &s) != ODL_OK || (s.tx_resent_frames == 0 && s.rx_lost_frames == 0)) return;
    ODL_INFO("%s: link recovery: %llu frames sent again, %llu found missing, %llu dropped out of order", m_name.c_str(),
             (unsigned long long)s.tx_resent_frames, (unsigned long long)s.rx_lost_frames,
             (unsigned long long)s.rx_dropped_frames);
}

void link::idle_wait(uint64_t timeout_ns) {
    const uint32_t v = m_doorbell.load(std::memory_order_seq_cst);
    m_sleeping.store(1, std::memory_order_seq_cst);
    if (!m_head.load(std::memory_order_seq_cst) && !m_stop.load(std::memory_order_seq_cst)) {
        timespec ts{time_t(timeout_ns / 1000000000ull), long(timeout_ns % 1000000000ull)};
        syscall(SYS_futex, futex_word(m_doorbell), FUTEX_WAIT_PRIVATE, v, &ts, nullptr, 0);
    }
    m_sleeping.store(0, std::memory_order_relaxed);
}

void link::run() {
    {
        char name[16];
        std::snprintf(name, sizeof(name), "odl-%s", m_name.c_str());
        pthread_setname_np(pthread_self(), name);
    }
    odl_completion comps[64];
    uint64_t idle_since = 0;
    refresh_state();
    while (!m_stop.load(std::memory_order_acquire)) {
        bool busy = false;
        if (m_head.load(std::memory_order_relaxed)) {
            op* l = m_head.exchange(nullptr, std::memory_order_acquire);
            op* fifo = nullptr;
            while (l) {  // the stack is newest first
                op* nx = l->next;
                l->next = fifo;
                fifo = l;
                l = nx;
            }
            while (fifo) {
                op* nx = fifo->next;  // @fifo may be reused once processed
                process(fifo);
                fifo = nx;
            }
            busy = true;
        }
        size_t n = 0;
        if (odl_poll(m_dev, comps, 64, &n) == ODL_OK && n) {
            for (size_t i = 0; i < n; ++i) route(comps[i]);
            busy = true;
        }
        if (m_state.load(std::memory_order_relaxed) != ODL_LINK_UP || (++m_polls & 4095) == 0) refresh_state();
        if (busy) {
            idle_since = 0;
            continue;
        }
        const uint64_t now = mono_ns();
        if (!idle_since) idle_since = now;
        const uint64_t idle = now - idle_since;
        if (m_outstanding > 0) {
            if (idle < kSpinNs)
                odl_cpu_relax();
            else if (idle < kYieldNs)
                sched_yield();
            else
                idle_wait(kBusyNapNs);
        } else {
            if (idle < kSpinNs / 4)
                odl_cpu_relax();
            else if (idle < kSpinNs)
                sched_yield();
            else
                idle_wait(std::min<uint64_t>(kIdleNapNs, idle / 2));
        }
    }
    // Stopping: run waiting calls (their callers block on them); a comm
    // closed just before finalize joins the zombies the destructor frees (it
    // was leaked before); drop the rest.
    op* l = m_head.exchange(nullptr, std::memory_order_acquire);
    while (l) {
        op* nx = l->next;  // a close node lives in its comm
        if (l->kind == op::kCall) process(l);
        if (l->kind == op::kDrop) delete static_cast<drop_op*>(l->obj);
        if (l->kind == op::kClose) m_zombies.push_back(static_cast<comm*>(l->obj));
        l = nx;
    }
}

void link::process(op* o) {
    switch (o->kind) {
    case op::kSend:
    case op::kRecv: post_request(static_cast<request*>(o->obj)); break;
    case op::kConnect: {
        auto* c = static_cast<comm*>(o->obj);
        const int rc = odl_post_send(m_dev, kCtrlStream, 1, c->hello, sizeof(connect_msg), nullptr,
                                     ctx_of(c, kCtxConnectSend));
        if (rc == ODL_OK) {
            ++c->posted;
            ++m_outstanding;
            c->hello_live = true;
        } else {
            ODL_WARN("cannot send CONNECT on %s: %s (%s)", m_name.c_str(), odl_strerror(rc), odl_last_error());
            int ok = ODL_OK;
            c->status.compare_exchange_strong(ok, rc == ODL_ERR_AGAIN ? ODL_ERR_IO : rc);
        }
        break;
    }
    case op::kClose: do_close(static_cast<comm*>(o->obj)); break;
    case op::kDrop: {
        auto* d = static_cast<drop_op*>(o->obj);
        discard_gen(d->stream, d->gen);
        delete d;
        break;
    }
    case op::kCall: {
        auto* c = static_cast<call_op*>(o->obj);
        c->fn();
        c->done.store(true, std::memory_order_release);  // the caller may free it now
        break;
    }
    }
}

void link::post_request(request* r) {
    comm* c = r->owner;
    const int n = r->n;
    r->live = 0;
    int failed_bufs = 0;
    int err = c->status.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
        int rc = err;
        if (rc == ODL_OK) {
            const uint64_t ctx = reinterpret_cast<uint64_t>(r) | uint64_t(i);
            rc = r->is_send ? odl_post_send(m_dev, c->stream, r->tag[i], r->data[i], r->cap[i], r->mr[i], ctx)
                            : odl_post_recv(m_dev, c->stream, r->tag[i], r->data[i], r->cap[i], r->mr[i], ctx);
            if (rc != ODL_OK) {
                ODL_WARN("%s on %s stream %u: %s (%s)", r->is_send ? "isend" : "irecv", m_name.c_str(), c->stream,
                         odl_strerror(rc), odl_last_error());
                if (sticky(rc)) {
                    int ok = ODL_OK;
                    c->status.compare_exchange_strong(ok, rc);
                }
                err = rc;
            }
        }
        if (rc == ODL_OK) {
            r->live |= uint8_t(1u << i);
            ++c->posted;
            ++m_outstanding;
        } else {
            if (r->status == ODL_OK) r->status = rc;
            ++failed_bufs;
        }
    }
    // Last touch of @r when nothing was posted: NCCL may reuse it after this.
    if (failed_bufs) r->pending.fetch_sub(failed_bufs, std::memory_order_release);
}

void link::do_close(comm* c) {
    c->closed = true;
    // Withdraw everything: once odl_cancel() returns, libodl no longer
    // touches the buffer (a started send finishes from its own copy).
    for (auto& r : c->reqs) {
        for (int i = 0; i < kMaxRecvs && r.live; ++i)
            if (r.live & (1u << i)) odl_cancel(m_dev, c->stream, reinterpret_cast<uint64_t>(&r) | uint64_t(i));
    }
    // A CONNECT still queued goes out all the same: connect() returned this
    // comm, so the peer's accept() must complete (the comm's own buffer
    // holds the message until then).
    // What the peer's send comm still sends here is for nobody now: drop it
    // as it arrives, so its sends complete and free their stream.
    if (!c->is_send) discard_gen(c->stream, c->gen);
    if (c->posted == 0) {
        free_comm(c);
    } else {
        m_zombies.push_back(c);  // freed by finish_op when the last completion arrives
        stat_store(m_stats->closing_comms, uint32_t(m_zombies.size()));
    }
}

void link::discard_gen(uint32_t stream, uint32_t gen) {
    const int rc = odl_discard(m_dev, stream, tag_for(gen, 0), kGenTagMask, 0);
    if (rc != ODL_OK && !failed())
        ODL_WARN("%s: cannot drop stream %u: %s (%s)", m_name.c_str(), stream, odl_strerror(rc), odl_last_error());
}

void link::drop_stream(uint32_t stream, uint32_t gen) {
    auto* d = new drop_op;
    d->kind = op::kDrop;
    d->obj = d;
    d->stream = stream;
    d->gen = gen;
    push(d);
}

void link::free_comm(comm* c) {
    if (c->is_send) {
        std::lock_guard<std::mutex> lk(m_alloc_mu);
        m_tx_used.reset(c->stream);
    }
    delete c;
}

void link::finish_op(comm* c) {
    --m_outstanding;
    if (--c->posted > 0 || !c->closed) return;
    auto it = std::find(m_zombies.begin(), m_zombies.end(), c);
    if (it != m_zombies.end()) m_zombies.erase(it);
    stat_store(m_stats->closing_comms, uint32_t(m_zombies.size()));
    free_comm(c);
}

void link::on_ctrl(const odl_completion& c) {
    m_ctrl_posted = false;
    if (c.status == ODL_OK) {
        const connect_msg m = m_ctrl_buf;
        if (c.len == sizeof(m) && m.magic == kConnectMagic && m.version == 1 && m.stream > kCtrlStream &&
            m.stream < kStreams) {
            ODL_TRACE("%s: CONNECT for listener %016llx, stream %u", m_name.c_str(),
                      static_cast<unsigned long long>(m.listen_id), m.stream);
            // Every frame of the stream's previous connection came before
            // this CONNECT (the peer reuses a stream only once its sends
            // are done): whatever was dropped there, deliver again.
            odl_discard(m_dev, m.stream, 0, 0, ODL_DISCARD_STOP);
            if (!enqueue_connect(pending_connect{m.listen_id, this, m.stream, m.gen})) discard_gen(m.stream, m.gen);
        } else {
            ODL_WARN("%s: dropped a malformed CONNECT message (%llu bytes)", m_name.c_str(),
                     static_cast<unsigned long long>(c.len));
        }
    }
    post_ctrl_recv();
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
        cm->hello_live = false;
        ODL_TRACE("%s: CONNECT of stream %u sent: %s", m_name.c_str(), cm->stream, odl_strerror(c.status));
        if (c.status != ODL_OK && c.status != ODL_ERR_CANCELED) {
            int ok = ODL_OK;
            cm->status.compare_exchange_strong(ok, c.status);
        }
        finish_op(cm);
        return;
    }
    auto* r = static_cast<request*>(p);
    comm* owner = r->owner;
    r->sizes[kind] = c.len;
    r->live &= uint8_t(~(1u << kind));
    if (c.status != ODL_OK && r->status == ODL_OK) r->status = c.status;
    if (sticky(c.status)) {
        int ok = ODL_OK;
        owner->status.compare_exchange_strong(ok, c.status);
    }
    r->pending.fetch_sub(1, std::memory_order_release);  // last touch of @r
    finish_op(owner);
}

}  // namespace odl::plugin
