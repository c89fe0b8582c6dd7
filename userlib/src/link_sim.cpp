// SPDX-License-Identifier: MIT
// Sim link: frames to and from odl-linkd --sim over a SOCK_SEQPACKET socket.
// The server paces delivery to the wall clock; each frame it hands over
// carries the time it was due, so this end can tell how far behind the
// model fell.
#include "link_sim.h"

#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

#include <fmt/format.h>

#include "clock.h"
#include "error.h"
#include "odl/wire/sim_codec.h"

namespace odl {
namespace {

constexpr uint64_t kHandshakeNs = 2'000'000'000ull;
/// Frames kept in the model before tx_busy(): enough for the link's
/// bandwidth-delay product with the socket hops, few enough that another
/// stream's frame does not wait long behind a bulk stream.
constexpr unsigned kBusyFrames = 128;
/// On close: how long to wait for frames still in the model (a GOODBYE
/// among them) to leave it, so the peer sees them before our end goes.
constexpr uint64_t kDrainNs = 500'000'000ull;

uint64_t lag_threshold_ns() {
    const char* v = std::getenv("ODL_SIM_LATE_NS");
    if (v && *v) {
        char* end = nullptr;
        const unsigned long long n = std::strtoull(v, &end, 10);
        if (end && *end == '\0') return n;
    }
    return 50'000;
}

class sim_link final : public link {
public:
    sim_link(int fd, uint8_t want_end, std::string path) : m_fd(fd), m_path(std::move(path)) {
        m_lag.threshold_ns = lag_threshold_ns();
        odl_sim_hello h{};
        h.magic = odl_cpu_le32(ODL_SIM_MAGIC);
        h.version = odl_cpu_le16(ODL_SIM_VERSION);
        h.end = want_end;
        h.pid = odl_cpu_le32(uint32_t(getpid()));
        send_msg(ODL_SIM_HELLO, now_ns(), 0, &h, sizeof(h));
        m_deadline = now_ns() + kHandshakeNs;
    }
    ~sim_link() override {
        // Bounded: frames still in the model reach the peer before it
        // learns that this end left.
        const uint64_t until = now_ns() + kDrainNs;
        while (m_state != link_state::lost && m_in_window > 0 && now_ns() < until) {
            flush_out();
            pollfd p{m_fd, POLLIN, 0};
            if (::poll(&p, 1, 10) > 0) pump(true);
        }
        // A goodbye whenever the connection still works, so the server
        // logs nothing for an orderly end (a lost link may be the peer's).
        if (!m_sock_failed) {
            m_state = link_state::connecting;  // lets the goodbye out
            send_msg(ODL_SIM_BYE, now_ns(), 0, nullptr, 0);
            flush_out();
        }
        ::close(m_fd);
    }

    unsigned char* tx_reserve() override {
        if (m_state == link_state::lost || m_in_window + m_out.size() >= m_window) return nullptr;
        return m_tx.data() + sizeof(odl_sim_hdr);
    }
    void tx_commit(size_t bytes) override {
        odl_sim_hdr h;
        odl_sim_hdr_init(&h, ODL_SIM_FRAME, uint32_t(bytes), m_tx_seq++, now_ns(), 0);
        std::memcpy(m_tx.data(), &h, sizeof(h));
        ++m_in_window;
        queue(m_tx.data(), sizeof(h) + bytes);
    }
    bool tx_busy() override { return m_in_window >= kBusyFrames; }

    rx_frame rx_peek() override {
        if (!m_rx_ready) pump(false);
        if (!m_rx_ready) return {};
        return {m_rx.data() + sizeof(odl_sim_hdr), m_rx_len};
    }
    void rx_release() override { m_rx_ready = false; }

    link_state progress() override {
        if (m_state == link_state::lost) return m_state;
        flush_out();
        if (!m_rx_ready) pump(false);
        if (m_state == link_state::connecting && m_end < 0 && now_ns() > m_deadline)
            lose(fmt::format("the model server at {} did not answer HELLO within 2 s", m_path));
        return m_state;
    }
    std::string failure() const override { return m_failure; }
    std::string name() const override { return m_name; }
    uint32_t rate_mbps() const override { return m_rate; }

    sim_lag lag() const { return m_lag; }

    /// Waits (bounded) for the server's HELLO, so that the rate and the
    /// end are known from open on and a refusal fails the open itself.
    void await_hello() {
        while (m_end < 0 && m_state != link_state::lost) {
            const uint64_t now = now_ns();
            if (now >= m_deadline) {
                lose(fmt::format("the model server at {} did not answer HELLO within 2 s", m_path));
                break;
            }
            flush_out();
            pollfd p{m_fd, POLLIN, 0};
            ::poll(&p, 1, int((m_deadline - now) / 1'000'000 + 1));
            pump(false);
        }
        if (m_state == link_state::lost) throw error(ODL_ERR_NO_DEVICE, m_failure);
    }

private:
    void lose(std::string why) {
        if (m_state == link_state::lost) return;
        m_state = link_state::lost;
        m_failure = std::move(why);
    }

    void lose_io(const char* what, int err) {
        m_sock_failed = true;
        if (err == ECONNRESET || err == EPIPE)
            lose(fmt::format("the model server closed the connection (odl-linkd --sim stopped or died: {})",
                             std::strerror(err)));
        else
            lose(fmt::format("{} the model server failed: {}", what, std::strerror(err)));
    }

    void send_msg(unsigned type, uint64_t stamp, uint64_t arg, const void* payload, size_t len) {
        unsigned char buf[ODL_SIM_MAX_DATAGRAM];
        odl_sim_hdr h;
        odl_sim_hdr_init(&h, type, uint32_t(len), m_tx_seq++, stamp, arg);
        std::memcpy(buf, &h, sizeof(h));
        if (len) std::memcpy(buf + sizeof(h), payload, len);
        queue(buf, sizeof(h) + len);
    }

    void queue(const unsigned char* d, size_t n) {
        if (m_out.empty() && try_send(d, n)) return;
        m_out.emplace_back(d, d + n);
    }
    bool try_send(const unsigned char* d, size_t n) {
        if (::send(m_fd, d, n, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0) return true;
        if (errno != EAGAIN && errno != EWOULDBLOCK) lose_io("send to", errno);
        return m_state == link_state::lost;  // nothing more to send on a lost link
    }
    void flush_out() {
        while (!m_out.empty() && try_send(m_out.front().data(), m_out.front().size())) m_out.pop_front();
    }

    /// Takes in server messages until a frame is ready (or none is waiting;
    /// @all: drain everything, keeping no frame).
    void pump(bool all) {
        for (int i = 0; i < 256 && m_state != link_state::lost && (all || !m_rx_ready); ++i) {
            unsigned char* buf = m_rx_ready ? m_scratch.data() : m_rx.data();
            const ssize_t n = ::recv(m_fd, buf, ODL_SIM_MAX_DATAGRAM + 1, MSG_DONTWAIT | MSG_TRUNC);
            if (n == 0) {
                m_sock_failed = true;
                return lose("the model server closed the connection (odl-linkd --sim stopped)");
            }
            if (n < 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK) return lose_io("receive from", errno);
                // Nothing from the model. A program polls its device in a
                // loop, and the model server needs the CPU to run the link:
                // on a machine with fewer cores than busy processes, spinning
                // here would starve it. Every few empty polls, let it run.
                if ((++m_empty_polls & 15) == 0) sched_yield();
                return;
            }
            m_empty_polls = 0;
            if (size_t(n) > ODL_SIM_MAX_DATAGRAM) return lose("the model server sent an oversized datagram");
            if (const char* why = odl_sim_check(buf, size_t(n), ODL_SIM_SIDE_SERVER))
                return lose(fmt::format("the model server sent a bad message: {}", why));
            odl_sim_hdr h;
            std::memcpy(&h, buf, sizeof(h));
            if (odl_le64(h.seq) != m_rx_seq++) return lose("the model server sent a message out of sequence");
            handle(h, buf, size_t(n), all);
        }
    }

    void handle(const odl_sim_hdr& h, const unsigned char* buf, size_t n, bool all) {
        switch (odl_le16(h.type)) {
        case ODL_SIM_HELLO: {
            if (m_end >= 0) return lose("the model server sent a second HELLO");
            odl_sim_hello s;
            std::memcpy(&s, buf + sizeof(h), sizeof(s));
            m_end = s.end;
            m_rate = odl_le32(s.rate_mbps);
            m_window = std::min<unsigned>(odl_le32(s.window), ODL_SIM_WINDOW);
            const std::string prof(s.profile, strnlen(s.profile, sizeof(s.profile)));
            m_name = fmt::format("sim{}:{}", m_end ? 'B' : 'A', prof);
            return;
        }
        case ODL_SIM_FRAME: {
            if (m_end < 0) return lose("the model server sent a frame before HELLO");
            const uint64_t now = now_ns(), due = odl_le64(h.stamp_ns);
            const uint64_t late = now > due ? now - due : 0;
            ++m_lag.frames;
            m_lag.max_ns = std::max(m_lag.max_ns, late);
            if (late > m_lag.threshold_ns) ++m_lag.late_frames;
            if (all) return;  // closing: nobody reads it any more
            m_rx_len = n - sizeof(h);
            m_rx_ready = true;
            return;
        }
        case ODL_SIM_ACK: {
            const uint64_t k = odl_le64(h.arg);
            if (k > m_in_window) return lose("the model server acknowledged frames never sent");
            m_in_window -= unsigned(k);
            return;
        }
        case ODL_SIM_LINK: {
            const uint64_t st = odl_le64(h.arg);
            if (m_state == link_state::connecting && st == ODL_SIM_LINK_ALL) {
                m_state = link_state::up;
            } else if (m_state == link_state::up && st != ODL_SIM_LINK_ALL) {
                lose(!(st & ODL_SIM_LINK_UP) ? "the modelled link went down (cable unplugged)"
                                             : "the peer left the modelled link");
            }
            return;
        }
        case ODL_SIM_BYE:
            return lose(m_end < 0 ? fmt::format("the model server at {} refused this end (both ends taken, or "
                                                "ODL_SIM_END names one in use)",
                                                m_path)
                                  : "the model server is shutting down");
        default: return;
        }
    }

    int m_fd;
    std::string m_path, m_name = "sim", m_failure;
    link_state m_state = link_state::connecting;
    int m_end = -1;
    uint32_t m_rate = 0;
    unsigned m_window = ODL_SIM_WINDOW, m_in_window = 0;
    uint64_t m_tx_seq = 0, m_rx_seq = 0, m_deadline = 0;
    std::vector<unsigned char> m_tx = std::vector<unsigned char>(ODL_SIM_MAX_DATAGRAM);
    std::vector<unsigned char> m_rx = std::vector<unsigned char>(ODL_SIM_MAX_DATAGRAM + 1);
    std::vector<unsigned char> m_scratch = std::vector<unsigned char>(ODL_SIM_MAX_DATAGRAM + 1);
    size_t m_rx_len = 0;
    bool m_rx_ready = false;
    bool m_sock_failed = false;  ///< the server connection itself broke
    unsigned m_empty_polls = 0;
    std::deque<std::vector<unsigned char>> m_out;
    sim_lag m_lag;
};

}  // namespace

std::string sim_socket_path() {
    if (const char* p = std::getenv("ODL_SIM_SOCKET"); p && *p) return p;
    const char* dir = std::getenv("XDG_RUNTIME_DIR");
    return fmt::format("{}/odl-sim-{}.sock", dir && *dir ? dir : "/tmp", getuid());
}

std::unique_ptr<link> open_sim_link(uint32_t index) {
    if (index != 0)
        throw error(ODL_ERR_NO_DEVICE, fmt::format("sim device {}: the model server offers one link (device 0)", index));
    uint8_t end = ODL_SIM_END_ANY;
    if (const char* e = std::getenv("ODL_SIM_END"); e && *e) {
        const std::string s(e);
        if (s == "a" || s == "A")
            end = 0;
        else if (s == "b" || s == "B")
            end = 1;
        else
            throw error(ODL_ERR_INVAL, fmt::format("ODL_SIM_END='{}': want a or b", s));
    }
    const std::string path = sim_socket_path();
    sockaddr_un addr{};
    if (path.size() >= sizeof(addr.sun_path))
        throw error(ODL_ERR_INVAL, fmt::format("sim socket path too long: {}", path));
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) throw error(ODL_ERR_IO, fmt::format("socket: {}", std::strerror(errno)));
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.c_str(), path.size());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) < 0) {
        const int e = errno;
        ::close(fd);
        throw error(ODL_ERR_NO_DEVICE,
                    fmt::format("no model server at {} ({}): start one with `odl-linkd --sim --socket {}` or set "
                                "ODL_SIM_SOCKET",
                                path, std::strerror(e), path));
    }
    auto l = std::make_unique<sim_link>(fd, end, path);
    l->await_hello();
    return l;
}

sim_lag sim_link_lag(const link& l) {
    if (const auto* s = dynamic_cast<const sim_link*>(&l)) return s->lag();
    return {};
}

}  // namespace odl
