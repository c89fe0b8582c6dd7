// SPDX-License-Identifier: MIT
// odl-linkd server: accepts QEMU devices on a unix SOCK_SEQPACKET socket,
// validates every datagram before trusting it, forwards MMIO to the model's
// NHIs and carries the model's DMA and interrupts back. One thread, poll()
// based; a host that misbehaves or dies is dropped without touching the
// others (the model sees an unplug).
#include "odl/model/linkd/server.h"

#include "odl/model/linkd/unix_listen.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cerrno>
#include <chrono>
#include <cctype>
#include <cstring>
#include <sstream>

#include "odl/wire/linkd_codec.h"
#include "shared_ram.h"

namespace odl::model::linkd {

namespace {

constexpr std::size_t max_stash = 4096;  // datagrams held during a DMA wait
constexpr int batch = 64;                // datagrams per connection per turn

std::int64_t mono_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

}  // namespace

/// One QEMU device connection; also the host_bus the model uses for it.
class connection : public host_bus {
public:
    enum class state { handshake, attached, dead };

    connection(server& srv, int fd) : m_srv(srv), m_fd(fd), m_born_ns(mono_ns()) {}
    ~connection() override {
        close_rx_fds();
        if (m_fd >= 0) ::close(m_fd);
    }
    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    int fd() const { return m_fd; }
    state st() const { return m_state; }
    int host() const { return m_host; }
    std::int64_t born_ns() const { return m_born_ns; }
    conn_stats& stats() { return m_stats; }
    const conn_stats& stats() const { return m_stats; }
    std::deque<std::vector<std::uint8_t>>& stash() { return m_stash; }
    std::uint64_t& rx_seq() { return m_rx_seq; }
    void attach(int host) {
        m_host = host;
        m_state = state::attached;
    }
    void kill() { m_state = state::dead; }
    int& last_peer() { return m_last_peer; }
    shared_ram& ram() { return m_ram; }
    void drop_fds() { close_rx_fds(); }
    void set_command(std::uint16_t command) { m_bus_master = command & 0x4; }
    std::uint32_t& features() { return m_features; }
    /// Deterministic mode: the host said it reached its horizon (SYNC) and
    /// waits for the next grant.
    bool& synced() { return m_synced; }
    std::uint64_t& sync_ts() { return m_sync_ts; }

    /// The one file descriptor that came with the last datagram, or -1
    /// (none, or several: those are closed). The caller owns it.
    int take_fd() {
        int fd = -1;
        if (m_rx_fds.size() == 1) {
            fd = m_rx_fds.front();
            m_rx_fds.clear();
        }
        close_rx_fds();
        return fd;
    }
    bool was_attached() const { return m_host >= 0; }

    /// Sends one message (+payload), stamped @ts_ps (default: now). False
    /// and marked dead on failure.
    bool send(struct odl_linkd_msg& m, const void* payload = nullptr,
              std::uint32_t len = 0, std::uint64_t ts_ps = UINT64_MAX) {
        if (m_state == state::dead) return false;
        m.hdr.seq = odl_cpu_le64(m_tx_seq++);
        m.hdr.ts_ps = odl_cpu_le64(ts_ps == UINT64_MAX ? m_srv.now_ps() : ts_ps);
        m.hdr.payload_len = odl_cpu_le32(len);
        struct iovec iov[2] = {{&m, sizeof(m)},
                               {const_cast<void*>(payload), len}};
        struct msghdr mh {};
        mh.msg_iov = iov;
        mh.msg_iovlen = len ? 2 : 1;
        // Never block in sendmsg(): a QEMU whose vCPU is itself blocked
        // sending to us (holding its big lock) cannot read until we read.
        // While there is no room, take in what it sends (kept, in order,
        // for the main loop, as during a DMA wait); give up after 5 s
        // without room (a QEMU that stopped reading).
        const std::int64_t deadline = mono_ns() + 5'000'000'000;
        std::vector<std::uint8_t> in;
        ssize_t n;
        for (;;) {
            n = ::sendmsg(m_fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
            if (n >= 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) break;
            if (errno == EINTR) continue;
            if (mono_ns() > deadline) break;
            struct pollfd p = {m_fd, static_cast<short>(POLLOUT | (m_stash.size() < max_stash ? POLLIN : 0)), 0};
            if (::poll(&p, 1, 100) < 0 && errno != EINTR) break;
            if (!(p.revents & POLLIN)) continue;
            const ssize_t got = recv(in, 0);
            if (got < 0) return false;  // dropped by recv()
            if (got == 0) continue;
            in.resize(std::min<std::size_t>(static_cast<std::size_t>(got), ODL_LINKD_MAX_DATAGRAM + 1));
            m_stash.push_back(in);
            m_stats.send_waits++;
        }
        if (n != static_cast<ssize_t>(sizeof(m) + len)) {
            m_srv.drop(*this, n < 0 ? std::strerror(errno) : "short send");
            return false;
        }
        m_stats.tx_msgs++;
        return true;
    }

    /// Receives one datagram, waiting up to @timeout_ms. Returns its length
    /// (may exceed the buffer: MSG_TRUNC), 0 if none, -1 if the peer is gone.
    ssize_t recv(std::vector<std::uint8_t>& buf, int timeout_ms) {
        if (m_state == state::dead) return -1;
        if (timeout_ms > 0) {
            struct pollfd p = {m_fd, POLLIN, 0};
            int r;
            do {
                r = ::poll(&p, 1, timeout_ms);
            } while (r < 0 && errno == EINTR);
            if (r == 0) return 0;
        }
        buf.resize(ODL_LINKD_MAX_DATAGRAM);
        // File descriptors come only with MEM_MAP; any left unclaimed from
        // the previous datagram are closed here, so garbage cannot leak fds.
        close_rx_fds();
        union {
            struct cmsghdr align;
            char buf[CMSG_SPACE(4 * sizeof(int))];
        } ctl;
        struct iovec iov = {buf.data(), buf.size()};
        struct msghdr mh {};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof(ctl.buf);
        ssize_t n;
        do {
            n = ::recvmsg(m_fd, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
        } while (n < 0 && errno == EINTR);
        for (struct cmsghdr* c = n >= 0 ? CMSG_FIRSTHDR(&mh) : nullptr; c;
             c = CMSG_NXTHDR(&mh, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < count; i++) {
                int fd;
                std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                m_rx_fds.push_back(fd);
            }
        }
        if (n >= 0 && (mh.msg_flags & MSG_CTRUNC)) m_stats.bad_msgs++;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
        if (n <= 0) {
            m_srv.drop(*this, n == 0 ? "disconnected" : std::strerror(errno));
            return -1;
        }
        m_stats.rx_msgs++;
        return n;
    }

    // host_bus
    bool dma_read(std::uint64_t addr, void* buf, std::size_t len) override {
        return dma(ODL_LINKD_DMA_READ, addr, buf, nullptr, len);
    }
    bool dma_write(std::uint64_t addr, const void* buf,
                   std::size_t len) override {
        return dma(ODL_LINKD_DMA_WRITE, addr, nullptr, buf, len);
    }
    void raise_irq(unsigned vector) override {
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_IRQ, 0, 0, 0);
        m.body.irq.vector = odl_cpu_le16(static_cast<std::uint16_t>(vector));
        m.body.irq.kind = ODL_LINKD_IRQ_MSIX;
        if (send(m)) m_stats.irqs++;
    }

private:
    /// Synchronous DMA: send the request, wait for its completion, stash
    /// anything else the host sends meanwhile for the main loop.
    bool dma(unsigned type, std::uint64_t addr, void* rbuf, const void* wbuf,
             std::size_t len) {
        // Shared guest RAM: no round trip. Bus mastering is checked here as
        // QEMU would; anything outside the shared ranges (MMIO, unmapped)
        // still goes to QEMU, which refuses or performs it.
        if (m_state == state::attached && m_bus_master && m_ram.ranges() &&
            (rbuf ? m_ram.read(addr, rbuf, len) : m_ram.write(addr, wbuf, len))) {
            m_stats.dma_direct++;
            return true;
        }
        if (m_state != state::attached || len == 0 ||
            len > ODL_LINKD_MAX_PAYLOAD)
            return false;
        const std::uint64_t tag = ++m_next_tag;
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, type, 0, 0, tag);
        m.body.dma.addr = odl_cpu_le64(addr);
        m.body.dma.len = odl_cpu_le32(static_cast<std::uint32_t>(len));
        if (!send(m, wbuf, wbuf ? static_cast<std::uint32_t>(len) : 0))
            return false;
        (type == ODL_LINKD_DMA_READ ? m_stats.dma_reads : m_stats.dma_writes)++;
        const unsigned want = type == ODL_LINKD_DMA_READ
                                  ? ODL_LINKD_DMA_READ_CPL
                                  : ODL_LINKD_DMA_WRITE_CPL;
        const std::int64_t deadline =
            mono_ns() + std::int64_t{m_srv.m_cfg.dma_timeout_ms} * 1000000;
        std::vector<std::uint8_t> buf;
        for (;;) {
            const std::int64_t left_ms = (deadline - mono_ns()) / 1000000;
            if (left_ms <= 0) {
                m_srv.drop(*this, "DMA completion timed out");
                return false;
            }
            const ssize_t n = recv(buf, static_cast<int>(left_ms));
            if (n < 0) return false;
            if (n == 0) continue;
            struct odl_linkd_msg r;
            const auto err = odl_linkd_check(buf.data(), static_cast<std::size_t>(n),
                                             ODL_LINKD_SIDE_DEV, &r);
            if (err == ODL_LINKD_OK && odl_le16(r.hdr.type) == want &&
                odl_le64(r.hdr.tag) == tag) {
                m_rx_seq = odl_le64(r.hdr.seq) + 1;
                if (odl_le32(r.body.dma.status) != ODL_LINKD_ST_OK ||
                    odl_le32(r.body.dma.len) != len)
                    return false;
                if (rbuf) std::memcpy(rbuf, buf.data() + ODL_LINKD_MSG_BYTES, len);
                return true;
            }
            // Not ours: keep it, in order, for the main loop.
            if (m_stash.size() >= max_stash) {
                m_srv.drop(*this, "too many messages during a DMA wait");
                return false;
            }
            buf.resize(std::min<std::size_t>(static_cast<std::size_t>(n),
                                             ODL_LINKD_MAX_DATAGRAM + 1));
            m_stash.push_back(buf);
        }
    }

    server& m_srv;
    int m_fd;
    state m_state = state::handshake;
    int m_host = -1;
    std::int64_t m_born_ns;
    std::uint64_t m_tx_seq = 0;
    std::uint64_t m_rx_seq = 0;
    std::uint64_t m_next_tag = 0;
    conn_stats m_stats;
    void close_rx_fds() {
        for (int fd : m_rx_fds) ::close(fd);
        m_rx_fds.clear();
    }

    std::deque<std::vector<std::uint8_t>> m_stash;
    int m_last_peer = -1;  ///< last LINK_STATE sent: peer host, -1 = down
    shared_ram m_ram;
    bool m_bus_master = false;
    std::uint32_t m_features = 0;  ///< agreed ODL_LINKD_FEAT_*
    bool m_synced = false;
    std::uint64_t m_sync_ts = 0;  ///< the stamp of its last SYNC
    std::vector<int> m_rx_fds;     ///< fds received with the last datagram
};

conn_stats server::live_stats() const {
    conn_stats t;
    for (const auto& c : m_conns) {
        const conn_stats& s = c->stats();
        t.rx_msgs += s.rx_msgs;
        t.tx_msgs += s.tx_msgs;
        t.bad_msgs += s.bad_msgs;
        t.seq_gaps += s.seq_gaps;
        t.mmio_reads += s.mmio_reads;
        t.mmio_writes += s.mmio_writes;
        t.dma_reads += s.dma_reads;
        t.dma_writes += s.dma_writes;
        t.dma_direct += s.dma_direct;
        t.mem_maps += s.mem_maps;
        t.irqs += s.irqs;
    }
    return t;
}

server::server(server_config cfg, model_backend& model)
    : m_cfg(std::move(cfg)), m_model(model), m_start_ns(mono_ns()), m_det_ctl(model.host_count()) {}

server::~server() {
    for (auto& c : m_conns) {
        if (c->st() == connection::state::attached) {
            struct odl_linkd_msg m;
            odl_linkd_msg_init(&m, ODL_LINKD_TERMINATE, 0, 0, 0);
            m.body.terminate.reason = odl_cpu_le32(ODL_LINKD_TERM_NORMAL);
            c->send(m);
        }
        if (c->was_attached()) m_model.attach(static_cast<unsigned>(c->host()), nullptr);
    }
    m_conns.clear();
    if (m_det_reply_fd >= 0) reply_control(m_det_reply_fd, "error: odl-linkd stopped");
}


std::uint64_t server::now_ps() const {
    if (m_cfg.deterministic) return m_det_now;
    return static_cast<std::uint64_t>(mono_ns() - m_start_ns) * 1000u;
}

unsigned server::attached_hosts() const {
    return static_cast<unsigned>(std::count_if(
        m_conns.begin(), m_conns.end(),
        [](const auto& c) { return c->st() == connection::state::attached; }));
}

bool server::listen(std::string& err) {
    if (!m_listen.open(m_cfg.socket_path, err)) return false;
    return m_cfg.control_path.empty() || m_ctl.open(m_cfg.control_path, err);
}

namespace {
// "cable [N] stats": a query, which changes nothing.
bool stats_query(const std::string& cmd) { return cmd.size() >= 6 && cmd.compare(cmd.size() - 6, 6, " stats") == 0; }
}  // namespace

// One command per connection: "cable [N] plug", "cable [N] unplug",
// "cable [N] retrain", "cable [N] degrade GEN LANES", "cable [N] ber RATE",
// "cable [N] stats" (N: the cable, 0 when left out), "status", "nhi",
// "fault add SPEC|clear|status".
void server::control_one() {
    std::string cmd;
    const int fd = take_control(m_ctl.fd(), cmd);
    if (fd < 0) return;
    if (m_cfg.deterministic && det_request(cmd, fd)) return;
    const std::string reply = control_reply(cmd);
    // Queries and refusals move nothing: only what the run took is noted.
    if (reply.rfind("ok", 0) == 0 && cmd != "status" && cmd != "nhi" &&
        !stats_query(cmd))
        note_control(cmd);
    reply_control(fd, reply);
}

// --windows: a control command the run took, at the model time it took it.
void server::note_control(const std::string& cmd) {
    if (m_cfg.windows) *m_cfg.windows << m_det_now << " ctl " << cmd << '\n';
}

std::string server::control_reply(const std::string& cmd) {
    if (cmd.empty()) return "error: no command";
    if (cmd.rfind("cable ", 0) == 0) {
        // A deterministic run takes its events at model times (--event), or
        // while its controller holds it (the same instant in every run); one
        // applied whenever a command arrives would differ per run.
        const bool query = stats_query(cmd);
        if (m_cfg.deterministic && !query && !(m_det_ctl.controlled() && !m_det_ctl.busy()))
            return std::string("error: deterministic mode: cable events come with odl-linkd --event TIME_NS:EVENT, "
                               "or while the run stands still between exec and advance requests");
        return cable_command(cmd);
    }
    if (cmd == "status") return fmt::format("ok hosts {} bad {}", attached_hosts(), m_total_bad);
    if (cmd == "nhi") {
        const std::string d = m_model.describe();
        return d.empty() ? "error: this model has no NHI state to show" : "ok\n" + d;
    }
    if (cmd.rfind("fault ", 0) == 0 && m_cfg.fault_command) {
        std::string reply = m_cfg.fault_command(cmd.substr(6));
        fmt::print(stderr, "odl-linkd: control: {} -> {}\n", cmd, reply);
        return reply;
    }
    return fmt::format("error: unknown command (have: cable [N] plug|unplug|retrain, cable [N] degrade GEN LANES, "
                       "cable [N] ber RATE, cable [N] stats, status, nhi{}{})",
                       m_cfg.fault_command ? ", fault add SPEC, fault clear, fault status" : "",
                       m_cfg.deterministic ? ", time, exec HOST TIMEOUT_MS CMD, advance NS, at NS cable ..." : "");
}

// Deterministic mode's requests: "time" (answered now), "exec HOST
// TIMEOUT_MS CMD" and "advance NS" (answered when met: the run goes on
// until then). True when @fd was taken (answered or kept for later).
bool server::det_request(const std::string& cmd, int fd) {
    const auto number = [](const std::string& w, std::uint64_t& v) {
        if (w.empty() || w.size() > 18 || w.find_first_not_of("0123456789") != std::string::npos) return false;
        v = std::stoull(w);
        return true;
    };
    std::string err;
    if (cmd == "time") {
        reply_control(fd, fmt::format("ok {} ns ready {} {}", m_det_now / 1000, m_det_ctl.ready_hosts(),
                                      m_det_ctl.controlled() ? (m_det_ctl.busy() ? "running" : "held") : "booting"));
        return true;
    }
    if (cmd.rfind("exec ", 0) == 0) {
        // exec HOST TIMEOUT_MS CMD: the command is everything after the second number.
        const std::size_t a = cmd.find(' ', 5);
        const std::size_t b = a == std::string::npos ? a : cmd.find(' ', a + 1);
        std::uint64_t host = 0, ms = 0;
        if (b == std::string::npos || !number(cmd.substr(5, a - 5), host) || !number(cmd.substr(a + 1, b - a - 1), ms) ||
            ms > 86'400'000)
            err = "usage: exec HOST TIMEOUT_MS CMD (TIMEOUT_MS at most a day)";
        else
            err = m_det_ctl.exec(static_cast<unsigned>(std::min<std::uint64_t>(host, UINT32_MAX)), ms * 1'000'000'000,
                                 cmd.substr(b + 1), m_det_now);
    } else if (cmd.rfind("at ", 0) == 0) {
        // at NS cable [N] EVENT: a timed event (as --event), handed over
        // while the run stands so that it cannot arrive too late.
        const std::size_t sp = cmd.find(' ', 3);
        std::uint64_t ns = 0;
        const std::string what = sp == std::string::npos ? "" : cmd.substr(sp + 1);
        if (sp == std::string::npos || !number(cmd.substr(3, sp - 3), ns) || ns > 86'400'000'000'000 ||
            what.rfind("cable ", 0) != 0 || !known_cable_event(what.substr(6)))
            err = "usage: at NS cable [N] plug|unplug|retrain|degrade GEN LANES|ber RATE";
        else if (!m_det_ctl.controlled() || m_det_ctl.busy())
            err = "at: only while the run stands (between exec and advance requests)";
        else if (ns * 1000 <= m_det_now)
            err = fmt::format("at {} ns: the run is at {} ns already", ns, m_det_now / 1000);
        else {
            auto& ev = m_cfg.timed_events;
            // Every event before the next one due is at or before now.
            const auto pos = std::upper_bound(ev.begin(), ev.end(), ns * 1000,
                                              [](std::uint64_t t, const auto& e) { return t < e.first; });
            ev.insert(pos, {ns * 1000, cmd.substr(sp + 1)});
            note_control(cmd);
            reply_control(fd, fmt::format("ok at {} ns", ns));
            return true;
        }
        reply_control(fd, "error: " + err);
        return true;
    } else if (cmd.rfind("advance ", 0) == 0) {
        std::uint64_t ns = 0;
        if (!number(cmd.substr(8), ns) || ns > 86'400'000'000'000)
            err = "usage: advance NS (at most a day)";
        else
            err = m_det_ctl.advance(ns * 1000, m_det_now);
    } else {
        return false;
    }
    if (!err.empty()) {
        reply_control(fd, "error: " + err);
        return true;
    }
    note_control(cmd);
    if (m_det_reply_fd >= 0) reply_control(m_det_reply_fd, "error: superseded");
    m_det_reply_fd = fd;
    return true;
}

// The request met: its answer to the connection that asked.
void server::det_answer() {
    if (const auto reply = m_det_ctl.finished(m_det_now)) {
        if (m_det_reply_fd >= 0) reply_control(m_det_reply_fd, *reply);
        m_det_reply_fd = -1;
    }
}

// The run stands still: hosts waiting for a grant hear that odl-linkd is
// alive (a SYNC stamped 0), so they do not give up on it.
void server::det_hold(const std::vector<connection*>& order) {
    const std::int64_t now = mono_ns();
    if (now - m_det_hold_ns < std::int64_t{ODL_LINKD_HOLD_INTERVAL_MS} * 1'000'000 / 2) return;
    m_det_hold_ns = now;
    for (auto* c : order) {
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_SYNC, 0, 0, 0);
        c->send(m, nullptr, 0, 0);
    }
}

// A guest agent's access to the testbed mailbox (BAR 4, deterministic mode).
void server::mailbox(connection& c, const struct odl_linkd_msg& m) {
    const unsigned type = odl_le16(m.hdr.type);
    const std::uint64_t off = odl_le64(m.body.mmio.offset);
    const unsigned size = m.body.mmio.size;
    const auto host = static_cast<unsigned>(c.host());
    m_det_mbox_msgs += type == ODL_LINKD_MMIO_READ ? 2 : 1;
    if (type == ODL_LINKD_MMIO_WRITE) {
        const std::string why = m_det_ctl.mbox_write(host, off, size, static_cast<std::uint32_t>(odl_le64(m.body.mmio.data)));
        if (!why.empty()) {
            note_bad(c, "mailbox write refused");
            fmt::print(stderr, "odl-linkd: host {}: {}\n", host, why);
        } else if (off == ODL_LINKD_MBOX_READY && m_det_ctl.controlled()) {
            fmt::print(stderr, "odl-linkd: every host's agent is ready at {:.6f} s: the run goes on as asked "
                               "(exec, advance)\n", double(m_det_now) / 1e12);
        }
        return;
    }
    struct odl_linkd_msg r;
    odl_linkd_msg_init(&r, ODL_LINKD_MMIO_READ_CPL, 0, 0, odl_le64(m.hdr.tag));
    r.body.mmio = m.body.mmio;
    if (size >= 1 && size <= 4 && off < ODL_LINKD_MBOX_BYTES && size <= ODL_LINKD_MBOX_BYTES - off)
        r.body.mmio.data = odl_cpu_le64(m_det_ctl.mbox_read(host, off, size));
    else
        r.body.mmio.status = odl_cpu_le32(ODL_LINKD_ST_BAD_REQ);
    c.send(r);
}

// "cable [N] EVENT": the control socket's cable commands, also the
// deterministic mode's timed events.
std::string server::cable_command(const std::string& cmd) {
    // Words apart by any number of spaces: "cable  plug" was an "unknown
    // cable event 'plug'".
    std::string rest;
    {
        std::istringstream words(cmd.substr(6));
        for (std::string w; words >> w;) rest += (rest.empty() ? "" : " ") + w;
    }
    unsigned index = 0;
    if (!rest.empty() && rest[0] >= '0' && rest[0] <= '9') {
        const std::size_t sp = rest.find(' ');
        const std::string num = rest.substr(0, sp);
        char* end = nullptr;
        const unsigned long n = std::strtoul(num.c_str(), &end, 10);
        if (*end || n > 64 || sp == std::string::npos) return fmt::format("error: cable '{}': expected cable N EVENT", num);
        index = static_cast<unsigned>(n);
        rest = rest.substr(sp + 1);
    }
    std::string reply;
    if (index >= m_model.cable_count())
        reply = m_model.cable_count() ? fmt::format("error: no cable {} (cables 0 to {})", index, m_model.cable_count() - 1)
                                      : "error: this model has no cable";
    else if (rest == "stats") {  // a query: answered, not logged
        const std::string st = m_model.cable_stats(index);
        return st.empty() ? "error: this model keeps no cable statistics" : "ok " + st;
    }
    else if (rest == "plug" || rest == "unplug")
        reply = m_model.set_cable(index, rest == "plug") ? "ok" : "error: this model has no cable";
    else if (const std::string why = m_model.cable_event(index, rest); why.empty())
        reply = "ok";
    else
        reply = "error: " + why;
    fmt::print(stderr, "odl-linkd: {}: {} -> {}\n", m_cfg.deterministic ? "event" : "control", cmd, reply);
    return reply;
}

void server::accept_one() {
    const int fd = ::accept4(m_listen.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;
    // A QEMU that stops reading must not block the whole server forever.
    struct timeval tv = {5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    m_conns.push_back(std::make_unique<connection>(*this, fd));
}

void server::drop(connection& c, const char* why) {
    if (c.st() == connection::state::dead) return;
    if (m_cfg.deterministic && c.host() >= 0 && m_det_started) m_det_ctl.host_left(static_cast<unsigned>(c.host()));
    if (why && c.host() >= 0)
        fmt::print(stderr, "odl-linkd: host {} dropped: {}\n", c.host(), why);
    else if (why && m_cfg.verbose)
        fmt::print(stderr, "odl-linkd: connection dropped: {}\n", why);
    c.kill();
}

void server::note_bad(connection& c, const char* why) {
    c.stats().bad_msgs++;
    m_total_bad++;
    // Rate limit: the first few, then every 100th.
    const auto n = c.stats().bad_msgs;
    if (n <= 5 || n % 100 == 0)
        fmt::print(stderr, "odl-linkd: host {}: dropped bad message ({}), {} so far\n",
                   c.host(), why, n);
    if (n >= m_cfg.max_bad_msgs) {
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_TERMINATE, 0, 0, 0);
        m.body.terminate.reason = odl_cpu_le32(ODL_LINKD_TERM_PROTOCOL);
        c.send(m);
        drop(c, "too many bad messages");
    }
}

void server::handshake(connection& c, const struct odl_linkd_msg& m) {
    const unsigned host = odl_le32(m.body.hello.host_id);
    const char* refuse = nullptr;
    if (odl_le16(m.hdr.type) != ODL_LINKD_HELLO)
        refuse = "first message is not HELLO";
    else if (host >= m_model.host_count())
        refuse = "host id out of range";
    else if (std::any_of(m_conns.begin(), m_conns.end(), [&](const auto& o) {
                 return o.get() != &c && o->st() == connection::state::attached &&
                        o->host() == static_cast<int>(host);
             }))
        refuse = "host id already in use";
    else if (m.body.hello.mode != (m_cfg.deterministic ? ODL_LINKD_MODE_DET : ODL_LINKD_MODE_FREE))
        refuse = m_cfg.deterministic ? "this server runs deterministic (a device without deterministic=on)"
                                     : "this server runs free (a device with deterministic=on needs odl-linkd --deterministic)";
    else if (m_det_started)
        // The others' simulated time has moved on: a new QEMU starts at 0.
        refuse = "the deterministic run is under way (a host cannot join or come back)";
    if (refuse) {
        fmt::print(stderr, "odl-linkd: refused a device (host id {}): {}\n", host, refuse);
        struct odl_linkd_msg t;
        odl_linkd_msg_init(&t, ODL_LINKD_TERMINATE, 0, 0, 0);
        t.body.terminate.reason = odl_cpu_le32(ODL_LINKD_TERM_REFUSED);
        c.send(t);
        drop(c, refuse);
        return;
    }
    struct odl_linkd_msg h;
    odl_linkd_hello_init(&h, 0, 0, host, m_cfg.deterministic ? ODL_LINKD_MODE_DET : ODL_LINKD_MODE_FREE,
                         static_cast<__u32>(::getpid()));
    c.features() = odl_le32(m.body.hello.features) &
                   (m_cfg.shared_ram ? ODL_LINKD_FEAT_SHARED_RAM : 0u);
    h.body.hello.features = odl_cpu_le32(c.features());
    const device_info di = m_model.info(host);
    struct odl_linkd_msg d;
    odl_linkd_msg_init(&d, ODL_LINKD_DEV_INFO, 0, 0, 0);
    d.body.dev_info.vendor_id = odl_cpu_le16(di.vendor_id);
    d.body.dev_info.device_id = odl_cpu_le16(di.device_id);
    d.body.dev_info.class_code = odl_cpu_le32(di.class_code);
    d.body.dev_info.revision = di.revision;
    d.body.dev_info.msix_vectors = di.msix_vectors;
    d.body.dev_info.hop_count = odl_cpu_le16(di.hop_count);
    d.body.dev_info.bar0_bytes = odl_cpu_le32(di.bar0_bytes);
    if (m_cfg.deterministic) {
        d.body.dev_info.link_latency_ps = odl_cpu_le64(m_cfg.quantum_ps);
        d.body.dev_info.sync_interval_ps = odl_cpu_le64(m_cfg.quantum_ps);
    }
    if (!c.send(h) || !c.send(d)) return;
    c.attach(static_cast<int>(host));
    fmt::print(stderr, "odl-linkd: host {} attached (pid {})\n", host,
               odl_le32(m.body.hello.pid));
    // Deterministic: the model meets the hosts in host order when the run
    // starts, not in the order their QEMUs happened to connect.
    if (!m_cfg.deterministic) m_model.attach(host, &c);
}

void server::handle(connection& c, const struct odl_linkd_msg& m,
                    const std::uint8_t* /*payload*/) {
    if (c.st() == connection::state::handshake) {
        handshake(c, m);
        return;
    }
    const unsigned type = odl_le16(m.hdr.type);
    nhi_port& nhi = m_model.nhi(static_cast<unsigned>(c.host()));
    const std::uint32_t bar0 = m_model.info(static_cast<unsigned>(c.host())).bar0_bytes;
    switch (type) {
    case ODL_LINKD_MMIO_READ:
    case ODL_LINKD_MMIO_WRITE: {
        if (m.body.mmio.bar == ODL_LINKD_MBOX_BAR && m_cfg.deterministic) {
            mailbox(c, m);
            break;
        }
        const std::uint64_t off = odl_le64(m.body.mmio.offset);
        const unsigned size = m.body.mmio.size;
        const bool ok = m.body.mmio.bar == 0 && off < bar0 && size <= bar0 - off;
        if (type == ODL_LINKD_MMIO_WRITE) {
            c.stats().mmio_writes++;
            if (ok)
                nhi.mmio_write(off, size, odl_le64(m.body.mmio.data));
            else
                note_bad(c, "MMIO write outside BAR0");
            break;
        }
        c.stats().mmio_reads++;
        struct odl_linkd_msg r;
        odl_linkd_msg_init(&r, ODL_LINKD_MMIO_READ_CPL, 0, 0, odl_le64(m.hdr.tag));
        r.body.mmio = m.body.mmio;
        if (ok)
            r.body.mmio.data = odl_cpu_le64(nhi.mmio_read(off, size));
        else
            r.body.mmio.status = odl_cpu_le32(ODL_LINKD_ST_BAD_REQ);
        c.send(r);
        break;
    }
    case ODL_LINKD_MEM_MAP: {
        const int fd = c.take_fd();
        std::string err;
        if (!(c.features() & ODL_LINKD_FEAT_SHARED_RAM))
            err = "MEM_MAP without the shared-RAM feature";
        else if (fd < 0)
            err = "MEM_MAP without exactly one file descriptor";
        else if (!c.ram().add(fd, odl_le64(m.body.mem_map.addr), odl_le64(m.body.mem_map.len),
                              odl_le64(m.body.mem_map.fd_offset), err))
            err = "MEM_MAP refused: " + err;
        if (fd >= 0) ::close(fd);
        if (!err.empty()) {
            note_bad(c, err.c_str());
            break;
        }
        c.stats().mem_maps++;
        if (m_cfg.verbose)
            fmt::print(stderr, "odl-linkd: host {}: guest RAM 0x{:x}+0x{:x} shared\n", c.host(),
                       odl_le64(m.body.mem_map.addr), odl_le64(m.body.mem_map.len));
        break;
    }
    case ODL_LINKD_DEVCTRL:
        c.set_command(odl_le16(m.body.devctrl.command));
        nhi.devctrl(odl_le16(m.body.devctrl.command),
                    odl_le16(m.body.devctrl.flags) & ODL_LINKD_DEVCTRL_MSIX_ENABLED);
        break;
    case ODL_LINKD_RESET:
        nhi.reset();
        break;
    case ODL_LINKD_SYNC:
        // Deterministic: the host reached its horizon and waits for the
        // next grant. Free-running: informative.
        if (m_cfg.deterministic) {
            c.synced() = true;
            c.sync_ts() = odl_le64(m.hdr.ts_ps);
        }
        break;
    case ODL_LINKD_TERMINATE:
        // An orderly goodbye (QEMU exiting) is not a fault: reap() says it.
        if (odl_le32(m.body.terminate.reason) == ODL_LINKD_TERM_NORMAL) drop(c, nullptr);
        else drop(c, "device terminated");
        break;
    default:
        // HELLO again, or a DMA completion that arrived after its timeout.
        note_bad(c, odl_linkd_type_name(type));
        break;
    }
}

void server::serve(connection& c) {
    std::vector<std::uint8_t> buf;
    for (int i = 0; i < batch && c.st() != connection::state::dead; i++) {
        ssize_t n;
        if (!c.stash().empty()) {
            // A stashed datagram's fds were closed while it waited.
            c.drop_fds();
            buf = std::move(c.stash().front());
            c.stash().pop_front();
            n = static_cast<ssize_t>(buf.size());
        } else {
            n = c.recv(buf, 0);
            if (n <= 0) break;
        }
        struct odl_linkd_msg m;
        const auto err = n > static_cast<ssize_t>(ODL_LINKD_MAX_DATAGRAM)
                             ? ODL_LINKD_ERR_LEN
                             : odl_linkd_check(buf.data(), static_cast<std::size_t>(n),
                                               ODL_LINKD_SIDE_DEV, &m);
        if (err != ODL_LINKD_OK) {
            if (c.st() == connection::state::handshake) {
                drop(c, "malformed first message");
                break;
            }
            note_bad(c, odl_linkd_err_name(err));
            continue;
        }
        const std::uint64_t seq = odl_le64(m.hdr.seq);
        if (seq != c.rx_seq()) c.stats().seq_gaps++;
        c.rx_seq() = seq + 1;
        const bool was_handshake = c.st() == connection::state::handshake;
        handle(c, m, buf.data() + ODL_LINKD_MSG_BYTES);
        // Deterministic: what follows the HELLO is taken in host order
        // when the run starts; a SYNC ends the host's turn.
        if (m_cfg.deterministic && (was_handshake || c.synced())) break;
    }
}

void server::reap() {
    for (auto it = m_conns.begin(); it != m_conns.end();) {
        if ((*it)->st() == connection::state::handshake &&
            mono_ns() - (*it)->born_ns() >
                std::int64_t{m_cfg.handshake_timeout_ms} * 1000000)
            drop(**it, "no HELLO in time");
        if ((*it)->st() != connection::state::dead) {
            ++it;
            continue;
        }
        if ((*it)->was_attached()) {
            // The model unplugs this host; its peers see the link go down.
            m_model.attach(static_cast<unsigned>((*it)->host()), nullptr);
            const conn_stats& st = (*it)->stats();
            fmt::print(stderr,
                       "odl-linkd: host {} detached (DMA: {} from shared RAM in {} MiB, "
                       "{} reads and {} writes by message; {} MMIO reads, {} irqs; {} taken in "
                       "while a send waited)\n",
                       (*it)->host(), st.dma_direct, (*it)->ram().bytes() >> 20,
                       st.dma_reads, st.dma_writes, st.mmio_reads, st.irqs, st.send_waits);
        }
        it = m_conns.erase(it);
    }
}

// Tells each attached device when its cable comes up or goes down.
void server::notify_links() {
    for (auto& c : m_conns) {
        if (c->st() != connection::state::attached) continue;
        const int peer = m_model.link_peer(static_cast<unsigned>(c->host()));
        if (peer == c->last_peer()) continue;
        c->last_peer() = peer;
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_LINK_STATE, 0, 0, 0);
        m.body.link.up = peer >= 0 ? 1 : 0;
        m.body.link.peer_host_id = odl_cpu_le32(peer >= 0 ? static_cast<std::uint32_t>(peer) : 0);
        c->send(m);
    }
}

void server::run() {
    if (m_cfg.deterministic) {
        run_deterministic();
        return;
    }
    std::vector<struct pollfd> pfds;
    while (!m_stop.load()) {
        const std::uint64_t now = now_ps();
        m_model.advance_to(now);
        reap();
        notify_links();

        int timeout_ms = m_cfg.max_poll_ms;
        const std::uint64_t next = m_model.next_event_ps();
        if (next != UINT64_MAX) {
            const std::uint64_t wait_ms = next > now ? (next - now) / 1000000000u : 0;
            timeout_ms = static_cast<int>(std::min<std::uint64_t>(
                wait_ms, static_cast<std::uint64_t>(timeout_ms)));
        }
        pfds.clear();
        pfds.push_back({m_listen.fd(), POLLIN, 0});
        pfds.push_back({m_ctl.fd(), POLLIN, 0});  // fd -1: ignored by poll()
        for (auto& c : m_conns) {
            pfds.push_back({c->fd(), POLLIN, 0});
            if (!c->stash().empty()) timeout_ms = 0;
        }
        int r;
        do {
            r = ::poll(pfds.data(), pfds.size(), timeout_ms);
        } while (r < 0 && errno == EINTR && !m_stop.load());
        if (r < 0) continue;
        if (pfds[0].revents & POLLIN) accept_one();
        if (pfds[1].revents & POLLIN) control_one();
        // Connections accepted just now are polled next turn.
        const std::size_t polled = pfds.size() - 2;
        for (std::size_t i = 0; i < polled && i < m_conns.size(); i++) {
            auto& c = *m_conns[i];
            if ((pfds[i + 2].revents & (POLLIN | POLLHUP | POLLERR)) ||
                !c.stash().empty())
                serve(c);
        }
    }
}

// Deterministic mode. QEMU runs with -icount, so a guest's simulated time
// depends only on what it executes; what remains is to make everything it
// exchanges with the model happen at the same simulated instants in every
// run. The hosts take turns: host 0 runs the window [T, H), then host 1,
// ...; meanwhile the model stands at T, so a host's MMIO touches only its
// own NHI's registers and the actions it schedules wait for the advance.
// When every host has reached H (its SYNC), the model runs to H; its DMA
// and interrupts reach the hosts while they wait there. The windows are
// one quantum long while anything moves (a message from a host, a model
// event due) and double, up to the longest, while all is idle, so a boot
// does not cost millions of turns. No wall clock is read for any of it.
void server::run_deterministic() {
    auto& events = m_cfg.timed_events;
    std::stable_sort(events.begin(), events.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::size_t next_event = 0;
    std::uint64_t quantum = m_cfg.quantum_ps;
    std::uint64_t windows = 0;
    bool ended = false;
    std::vector<struct pollfd> pfds;
    auto hosts_in_order = [this] {
        std::vector<connection*> v;
        for (auto& c : m_conns)
            if (c->st() == connection::state::attached) v.push_back(c.get());
        std::sort(v.begin(), v.end(), [](auto* a, auto* b) { return a->host() < b->host(); });
        return v;
    };
    while (!m_stop.load()) {
        reap();
        bool held = false;
        if (!m_det_started) {
            // Wait for every host's HELLO; then attach them and take what
            // they sent up to their first SYNC, host by host.
            if (attached_hosts() == m_model.host_count()) {
                m_det_started = true;
                const auto order = hosts_in_order();
                for (auto* c : order) m_model.attach(static_cast<unsigned>(c->host()), c);
                for (auto* c : order) det_window(*c, UINT64_MAX);
                fmt::print(stderr, "odl-linkd: deterministic run started ({} hosts, quantum {} ns, longest window {} ns)\n",
                           order.size(), m_cfg.quantum_ps / 1000, m_cfg.quantum_max_ps / 1000);
                continue;
            }
        } else {
            const auto order = hosts_in_order();
            if (order.empty()) {
                // The run is over (its record complete); linkd stays until
                // stopped, refusing newcomers.
                if (!ended) {
                    // Where the wall time went (SplitSim-style): each host
                    // running its windows (the others wait), the model.
                    std::string hosts;
                    for (std::size_t h = 0; h < m_det_wait_ns.size(); h++)
                        hosts += fmt::format(", host {} {:.1f} s", h, double(m_det_wait_ns[h]) / 1e9);
                    fmt::print(stderr,
                               "odl-linkd: every host left the deterministic run at {:.6f} s after {} windows "
                               "(wall time: model {:.1f} s{})\n",
                               double(m_det_now) / 1e12, windows, double(m_det_model_ns) / 1e9, hosts);
                }
                ended = true;
                if (m_det_reply_fd >= 0) reply_control(m_det_reply_fd, "error: every host left the run");
                m_det_reply_fd = -1;
            } else if (m_det_ctl.may_run(m_det_now)) {
                det_turn(order, quantum, next_event);
                windows++;
                det_answer();
            } else {
                // Every agent ready and no request (or one just met): the
                // run stands still until the controller asks for more.
                det_answer();
                det_hold(order);
                held = true;
            }
        }
        // The listener and the control socket: waited on only before the
        // run, looked at between windows after it starts.
        pfds.clear();
        pfds.push_back({m_listen.fd(), POLLIN, 0});
        pfds.push_back({m_ctl.fd(), POLLIN, 0});
        // Connections: only those still owing their HELLO are read here
        // (after the start, to refuse them); the rest in their turns.
        // While the run stands still, the hosts too: a host that leaves
        // then (its QEMU stopped) says so at once, at this model time.
        std::vector<connection*> polled;
        for (auto& c : m_conns)
            if (!m_det_started || c->st() == connection::state::handshake ||
                (held && c->st() == connection::state::attached)) {
                pfds.push_back({c->fd(), POLLIN, 0});
                polled.push_back(c.get());
            }
        int r;
        do {
            r = ::poll(pfds.data(), pfds.size(), m_det_started && !ended && !held ? 0 : 100);
        } while (r < 0 && errno == EINTR && !m_stop.load());
        if (r <= 0) continue;
        if (pfds[0].revents & POLLIN) accept_one();
        if (pfds[1].revents & POLLIN) control_one();
        for (std::size_t i = 0; i < polled.size(); i++) {
            auto& c = *polled[i];
            const short ev = pfds[i + 2].revents;
            // Only HELLOs are taken here (serve stops after one), and what
            // a held host sends: its TERMINATE. What an attached host sends
            // before the start waits for it, to be taken in host order.
            const bool take = c.st() == connection::state::handshake ||
                              (held && c.st() == connection::state::attached);
            if ((ev & (POLLIN | POLLHUP | POLLERR)) && take) serve(c);
            else if (ev & (POLLHUP | POLLERR)) drop(c, "disconnected");
        }
        if (held) reap();
    }
}

// One turn: the timed events due, each host's window, the model's advance.
void server::det_turn(const std::vector<connection*>& order, std::uint64_t& quantum, std::size_t& next_event) {
    const auto& events = m_cfg.timed_events;
    // Everything but the SYNCs: what says "something moves".
    auto traffic = [this] {
        std::uint64_t n = 0;
        for (auto& c : m_conns) n += c->stats().rx_msgs + c->stats().tx_msgs + c->stats().dma_direct;
        return n - m_det_mbox_msgs;  // an agent polling its mailbox moves nothing
    };
    while (next_event < events.size() && events[next_event].first <= m_det_now) {
        const std::string reply = cable_command(events[next_event].second);
        if (reply.rfind("ok", 0) != 0) {
            // Checked before the run; one the model refuses now (a retrain
            // of a pulled cable) is said, the same in every run.
            fmt::print(stderr, "odl-linkd: event at {} ns refused: {}\n", events[next_event].first / 1000,
                       reply);
        }
        next_event++;
    }
    const std::uint64_t due = m_model.next_event_ps();
    const std::uint64_t start = m_det_now;
    std::uint64_t horizon = m_det_now + quantum;
    const std::uint64_t soonest = m_det_now + m_cfg.quantum_ps;
    // Stop at the model's next action and the next timed event (one
    // quantum at least), to the nanosecond QEMU's timers know; and at the
    // end of the controller's request exactly.
    for (std::uint64_t at : {due, next_event < events.size() ? events[next_event].first : UINT64_MAX})
        if (at != UINT64_MAX) horizon = std::min(horizon, std::max(soonest, (at + 999) / 1000 * 1000));
    if (const std::uint64_t end = m_det_ctl.limit(); end != UINT64_MAX && end > m_det_now)
        horizon = std::min(horizon, (end + 999) / 1000 * 1000);
    const std::uint64_t before = traffic();
    // A host may end its window early (soon after an MMIO write, so that
    // what it started is modelled in time); the hosts after it then run
    // only as far, and the model advances to the host furthest behind. A
    // host still ahead from an earlier turn waits this one out.
    std::uint64_t reach = horizon;
    std::size_t granted = 0;
    for (auto* c : order) {
        if (c->sync_ts() >= reach) continue;
        granted++;
        const std::int64_t t0 = mono_ns();
        const bool ok = det_window(*c, reach);
        const auto h = static_cast<std::size_t>(c->host());
        if (m_det_wait_ns.size() <= h) m_det_wait_ns.resize(h + 1);
        m_det_wait_ns[h] += static_cast<std::uint64_t>(mono_ns() - t0);
        if (ok && c->sync_ts() < reach) reach = c->sync_ts();
    }
    if (m_stop.load()) return;  // stopped inside a window: the hosts never got there
    std::uint64_t target = UINT64_MAX;
    for (auto* c : order)
        if (c->st() == connection::state::attached) target = std::min(target, c->sync_ts());
    if (target == UINT64_MAX || target <= m_det_now) target = reach;
    const std::int64_t t0 = mono_ns();
    m_model.advance_to(target);
    m_det_model_ns += static_cast<std::uint64_t>(mono_ns() - t0);
    m_det_now = target;
    reap();
    notify_links();
    const std::uint64_t delta = traffic() - before;
    const bool moved = delta != 2 * granted || (due != UINT64_MAX && due <= target);
    quantum = moved ? m_cfg.quantum_ps : std::min(2 * quantum, m_cfg.quantum_max_ps);
    if (m_cfg.windows) {
        // "FROM HORIZON due DUE|- host:STOP... to TARGET msgs DELTA": every
        // input of the next turn's window, in picoseconds.
        auto& w = *m_cfg.windows;
        w << start << ' ' << horizon << " due ";
        if (due == UINT64_MAX) w << '-';
        else w << due;
        for (auto* c : order) w << ' ' << c->host() << ':' << c->sync_ts();
        w << " to " << target << " msgs " << static_cast<std::int64_t>(delta) << '\n';  // < 0: a host left
    }
}

// Grants @c the window up to @horizon_ps (UINT64_MAX: no grant, only take
// in what it sent up to its SYNC) and serves it until it SYNCs.
bool server::det_window(connection& c, std::uint64_t horizon_ps) {
    if (horizon_ps != UINT64_MAX) {
        c.synced() = false;
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_SYNC, 0, 0, 0);
        if (!c.send(m, nullptr, 0, horizon_ps)) return false;
    }
    const std::int64_t deadline = mono_ns() + std::int64_t{m_cfg.sync_timeout_ms} * 1000000;
    while (!c.synced() && c.st() == connection::state::attached && !m_stop.load()) {
        if (mono_ns() > deadline) {
            drop(c, fmt::format("no SYNC within {} s of its grant", m_cfg.sync_timeout_ms / 1000).c_str());
            return false;
        }
        if (c.stash().empty()) {
            struct pollfd p = {c.fd(), POLLIN, 0};
            if (::poll(&p, 1, 100) <= 0) continue;
        }
        serve(c);
    }
    // A QEMU without -icount (or a timer run late) stops past its horizon:
    // the run is then not repeatable. Said, not hidden. (Before it, a host
    // may stop: see det_turn.)
    if (c.synced() && horizon_ps != UINT64_MAX && c.sync_ts() > horizon_ps && ++m_det_late <= 3)
        fmt::print(stderr, "odl-linkd: host {} reached {} ps, granted {} ps: not deterministic{}\n", c.host(),
                   c.sync_ts(), horizon_ps, m_det_late == 3 ? " (further ones not shown)" : "");
    return c.synced();
}

}  // namespace odl::model::linkd
