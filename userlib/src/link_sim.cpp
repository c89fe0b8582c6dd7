// SPDX-License-Identifier: MIT
// Sim link: frames to and from odl-linkd --sim through two rings in a memfd
// this end creates and hands over with HELLO; the control socket carries
// HELLO, link state, the peer's ring memory (read-only), wake-ups and
// goodbyes. The server paces delivery to the wall clock: it hands over a
// descriptor of each frame, stamped with the time it was due (so this end
// can tell how far behind the model fell), and this end reads the bytes
// from the peer's ring.
#include "link_sim.h"

#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include <fmt/format.h>

#include "clock.h"
#include "error.h"
#include "log.h"
#include "odl/wire/sim_codec.h"
#include "odl/wire/sim_inproc.h"
#include "sim_inproc.h"

namespace odl {
namespace {

constexpr uint64_t kHandshakeNs = 2'000'000'000ull;
/// Frames kept in the model before tx_busy(): enough for the link's
/// bandwidth-delay product, few enough that another stream's frame does not
/// wait long behind a bulk stream.
constexpr unsigned kBusyFrames = 128;
/// Frames of a burst put in the ring between two publications to the server
/// (after the burst's first 8, published at 1, 2, 4 and 8).
constexpr unsigned kSimPublishEvery = 8;
/// Frames the engine may hold reserved for its send thread to fill.
constexpr unsigned kSimTxDepth = 64;
/// Received frames the engine may hold for its receive thread to copy out
/// (their slots stay the sender's until freed): a poll's worth.
constexpr unsigned kSimRxDepth = 64;
/// On close: how long to wait for frames still in the model (a GOODBYE
/// among them) to leave it, so the peer sees them before our end goes.
constexpr uint64_t kDrainNs = 500'000'000ull;
/// Empty receive polls between two looks at the control socket (a system
/// call; link state changes are rare).
constexpr unsigned kControlEvery = 64;
/// Fewer cores than busy processes: a program that has found nothing for
/// this long sleeps until the server wakes it (or kNapNs pass), so that the
/// server and the peer get the cores; spinning and yielding here let the
/// scheduler hold the server off for a whole time slice (about a
/// millisecond).
constexpr uint64_t kSpinBeforeNapNs = 20'000;
constexpr uint64_t kNapNs = 200'000;
/// A frame handed over this long before it is due is the server's error: the
/// model runs ahead by microseconds (odl-linkd --lookahead), never this far.
constexpr uint64_t kMaxEarlyNs = 1'000'000'000ull;

constexpr uint64_t kLateNs = 50'000;

uint64_t lag_threshold_ns() {
    const char* v = std::getenv("ODL_SIM_LATE_NS");
    if (!v || !*v) return kLateNs;
    // Digits only: strtoull took "-5" as 2^64 - 5 (nothing ever late).
    errno = 0;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*v >= '0' && *v <= '9' && end && *end == '\0' && errno == 0) return n;
    log::write(ODL_LOG_WARN, "ODL_SIM_LATE_NS='{}' is not a whole number of nanoseconds; using {}", v, kLateNs);
    return kLateNs;
}

/// Whether this program may spin on its rings without starving the server
/// and its peer: ODL_SIM_SPIN=on|off, or auto: a core each for the two
/// programs and the server of every link, and one more.
bool spare_cores(uint32_t links) {
    const char* v = std::getenv("ODL_SIM_SPIN");
    if (v && !std::strcmp(v, "on")) return true;
    if (v && !std::strcmp(v, "off")) return false;
    if (v && *v && std::strcmp(v, "auto"))
        log::write(ODL_LOG_WARN, "ODL_SIM_SPIN='{}' is not on, off or auto; using auto", v);
    return ::sysconf(_SC_NPROCESSORS_ONLN) >= long(3 * links + 1);
}

/// A received descriptor, closed unless someone took it.
struct fd_owner {
    int fd = -1;
    fd_owner() = default;
    fd_owner(const fd_owner&) = delete;
    fd_owner& operator=(const fd_owner&) = delete;
    ~fd_owner() {
        if (fd >= 0) ::close(fd);
    }
};

/// The shared region: created here, mapped here and by the server (and
/// read-only by the peer).
class ring_memory {
public:
    ring_memory() {
        m_fd = ::memfd_create("odl-sim-rings", MFD_CLOEXEC);
        if (m_fd < 0) throw error(ODL_ERR_NOMEM, fmt::format("memfd_create: {}", std::strerror(errno)));
        if (::ftruncate(m_fd, ODL_SIM_SHM_BYTES) < 0) {
            const int e = errno;
            ::close(m_fd);
            throw error(ODL_ERR_NOMEM, fmt::format("sim rings: ftruncate: {}", std::strerror(e)));
        }
        void* p = ::mmap(nullptr, ODL_SIM_SHM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, m_fd, 0);
        if (p == MAP_FAILED) {
            const int e = errno;
            ::close(m_fd);
            throw error(ODL_ERR_NOMEM, fmt::format("sim rings: mmap: {}", std::strerror(e)));
        }
        m_shm = static_cast<odl_sim_shm*>(p);
        odl_sim_shm_init(m_shm);
    }
    ~ring_memory() {
        ::munmap(m_shm, ODL_SIM_SHM_BYTES);
        if (m_fd >= 0) ::close(m_fd);
    }
    ring_memory(const ring_memory&) = delete;
    ring_memory& operator=(const ring_memory&) = delete;
    odl_sim_shm* shm() const { return m_shm; }
    int fd() const { return m_fd; }
    /// Once the server has it, our descriptor is no longer needed.
    void close_fd() {
        if (m_fd >= 0) ::close(m_fd);
        m_fd = -1;
    }

private:
    int m_fd = -1;
    odl_sim_shm* m_shm = nullptr;
};

/// A read-only view of the peer's ring memory (PEER), named as the
/// server's descriptors name it.
class peer_view {
public:
    peer_view(uint64_t region, int fd) : m_region(region) {
        struct stat st {};
        if (::fstat(fd, &st) < 0 || uint64_t(st.st_size) < ODL_SIM_SHM_BYTES)
            throw error(ODL_ERR_IO, "the model server sent the peer's ring memory with the wrong size");
        void* p = ::mmap(nullptr, ODL_SIM_SHM_BYTES, PROT_READ, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            throw error(ODL_ERR_IO, fmt::format("the peer's ring memory cannot be mapped: {}", std::strerror(errno)));
        m_shm = static_cast<odl_sim_shm*>(p);
        if (const char* why = odl_sim_shm_check(m_shm)) {
            ::munmap(m_shm, ODL_SIM_SHM_BYTES);
            throw error(ODL_ERR_IO, fmt::format("the model server sent the peer's {}", why));
        }
    }
    ~peer_view() {
        if (m_shm) ::munmap(m_shm, ODL_SIM_SHM_BYTES);
    }
    peer_view(const peer_view&) = delete;
    peer_view& operator=(const peer_view&) = delete;
    uint64_t region() const { return m_region; }
    const odl_sim_slot* slots() const { return odl_sim_slots(m_shm); }

private:
    uint64_t m_region;
    odl_sim_shm* m_shm = nullptr;
};

class sim_link final : public link {
public:
    sim_link(int fd, uint8_t want_link, uint8_t want_end, std::string path)
        : m_fd(fd), m_path(std::move(path)), m_want_link(want_link) {
        m_lag.threshold_ns = lag_threshold_ns();
        m_to_server = odl_sim_slots(m_mem.shm());
        m_descs = odl_sim_descs(m_mem.shm());
        odl_sim_hello h{};
        h.magic = odl_cpu_le32(ODL_SIM_MAGIC);
        h.version = odl_cpu_le16(ODL_SIM_VERSION);
        h.end = want_end;
        h.link = want_link;
        h.pid = odl_cpu_le32(uint32_t(getpid()));
        send_msg(ODL_SIM_HELLO, now_ns(), 0, &h, sizeof(h), m_mem.fd());
        m_mem.close_fd();
        m_deadline = now_ns() + kHandshakeNs;
    }
    ~sim_link() override {
        // Bounded: frames still in the model reach the peer before it
        // learns that this end left.
        tx_flush();
        const uint64_t until = now_ns() + kDrainNs;
        while (m_state != link_state::lost && in_window(1) > 0 && now_ns() < until) {
            wake_server();
            pollfd p{m_fd, POLLIN, 0};
            if (::poll(&p, 1, 1) > 0) read_control();
        }
        // A goodbye whenever the connection still works, so the server
        // logs nothing for an orderly end (a lost link may be the peer's).
        if (!m_sock_failed) {
            m_state = link_state::connecting;  // lets the goodbye out
            send_msg(ODL_SIM_BYE, now_ns(), 0, nullptr, 0);
        }
        ::close(m_fd);
    }

    unsigned char* tx_reserve() override { return tx_reserve_at(0); }
    unsigned tx_depth() const override { return kSimTxDepth; }
    unsigned char* tx_reserve_at(unsigned ahead) override {
        if (m_state == link_state::lost || !m_loss.empty() || ahead >= m_window ||
            in_window(m_window - ahead) + ahead >= m_window)
            return nullptr;
        // The server's free position is read again only when the last one
        // read leaves no room (as acked, in_window()).
        if (m_put + ahead - m_tail_seen >= ODL_SIM_SLOTS) {
            const int64_t n = odl_sim_ring_free(&m_mem.shm()->to_server, m_put);
            if (n < 0) lose("the model server corrupted the ring indices");
            if (n <= int64_t(ahead)) return nullptr;
            m_tail_seen = m_put + uint64_t(n) - ODL_SIM_SLOTS;
        }
        return m_to_server[(m_put + ahead) & (ODL_SIM_SLOTS - 1)].data;
    }
    void tx_commit(size_t bytes) override {
        // The model posts a frame at its stamp: for a message's first frame
        // when the program asked (the modelled host's send cost stands for
        // the library's work since then, as in the measurements the
        // profiles were fitted to), never before a frame this program took
        // was due (nothing it sends can be the model's earlier than what
        // caused it). A message asked for after a receive completion went
        // to the program answers it: the receiving host's modelled
        // completion cost stands for the program's work up to that answer,
        // which it did for real after the completion was due, so up to that
        // much of it is not counted twice (the frames of this burst move
        // with the first).
        uint64_t stamp = now_ns();
        if (m_asked_ns) {
            if (m_asked_ns < stamp) stamp = m_asked_ns;
            m_answer_shift_ns =
                m_answer_due_ns && stamp > m_answer_due_ns ? std::min<uint64_t>(stamp - m_answer_due_ns, m_answer_ns) : 0;
            m_answer_due_ns = 0;
        }
        m_asked_ns = 0;
        odl_sim_slot& slot = m_to_server[m_put & (ODL_SIM_SLOTS - 1)];
        slot.stamp_ns = std::max(stamp - m_answer_shift_ns, m_taken_due_ns);
        m_empty_polls = 0;  // busy sending: no nap
        __atomic_store_n(&slot.len, uint32_t(bytes), __ATOMIC_RELAXED);
        ++m_put;
        // A burst's 1st, 2nd, 4th and 8th frame at once, then every 8th: a
        // frame reaches the server before the model's NHI, busy with those
        // before it, would take it (a frame time, 0.78 us on TB5, each).
        const uint64_t n = ++m_burst;
        if ((n & (n - 1)) == 0 || n % kSimPublishEvery == 0) publish();
    }
    void tx_flush() override {
        m_burst = 0;
        m_answer_shift_ns = 0;
        if (m_put != m_published) publish();
    }
    bool tx_busy() override { return in_window(kBusyFrames) >= kBusyFrames; }
    bool timed() const override { return true; }
    void tx_asked(uint64_t ns) override { m_asked_ns = ns; }
    void rx_delivered(uint64_t due_ns) override { m_answer_due_ns = std::max(m_answer_due_ns, due_ns); }

    rx_frame rx_peek() override { return rx_peek_at(0); }
    unsigned rx_depth() const override { return kSimRxDepth; }
    rx_frame rx_peek_at(unsigned ahead) override {
        if (m_state == link_state::lost) return {};
        const uint64_t at = m_taken + ahead;
        // The server's head is read again only once the frames the last
        // read showed are taken.
        const auto st = at < m_head_seen ? ODL_SIM_RING_OK : look_for_frames();
        if (st == ODL_SIM_RING_CORRUPT) {
            lose("the model server corrupted the ring indices");
            return {};
        }
        if (st != ODL_SIM_RING_OK || at >= m_head_seen) {
            if (!m_loss.empty()) {
                lose(m_loss);
                return {};
            }
            // Frames held (ahead > 0) are being copied out: no nap now.
            if (ahead == 0) idle();
            return {};
        }
        m_empty_polls = 0;
        odl_sim_desc d;
        if (const char* why = odl_sim_desc_take(&m_descs[at & (ODL_SIM_SLOTS - 1)], &d)) {
            lose(fmt::format("the model server sent {}", why));
            return {};
        }
        // The server may hand a frame over before it is due (odl-linkd
        // --lookahead, pipeline timing): the engine takes it at once, as the
        // modelled host's receive cost stands for the library's work, and
        // what it completes is the program's at the due time, not before.
        const uint64_t t = now_ns();
        if (d.stamp_ns > t && d.stamp_ns - t > kMaxEarlyNs) {
            lose(fmt::format("the model server handed over a frame due {} ms from now", (d.stamp_ns - t) / 1'000'000));
            return {};
        }
        const peer_view* peer = view_of(d.region);
        if (!peer) return {};
        if (at == m_uncounted) {  // once per frame, however often it is peeked at
            ++m_uncounted;
            // Late is what the server handed over after it was due: the
            // model or the machine fell behind. A frame that waited in the
            // ring for this program (not polling, asleep, busy elsewhere)
            // waited for it, as it would on a real link.
            const uint64_t due = d.stamp_ns;
            const uint64_t handed = std::min<uint64_t>(d.handed_ns, t);
            const uint64_t late = handed > due ? handed - due : 0;
            m_taken_due_ns = std::max(m_taken_due_ns, due);
            ++m_lag.frames;
            m_lag.max_ns = std::max(m_lag.max_ns, late);
            if (late > m_lag.threshold_ns) ++m_lag.late_frames;
        }
        // The bytes are the sender's, read in place: a peer that rewrites
        // a slot it sent corrupts only its own frame, which the engine's
        // checks catch like any damaged frame.
        return {peer->slots()[d.slot].data, d.len, d.stamp_ns > t ? d.stamp_ns : 0};
    }
    void rx_release() override { odl_sim_store(&m_mem.shm()->to_client.tail, ++m_taken); }

    link_state progress() override {
        if (m_state == link_state::lost) return m_state;
        if (m_state == link_state::connecting || ++m_progress_calls % kControlEvery == 0) read_control();
        if (m_state == link_state::connecting && m_end < 0 && now_ns() > m_deadline)
            lose(fmt::format("the model server at {} did not answer HELLO within 2 s", m_path));
        return m_state;
    }
    std::string failure() const override { return m_failure; }
    std::string name() const override { return m_name; }
    uint32_t rate_mbps() const override { return m_rate; }
    bool lossy() const override { return true; }  // the model drops frames bit errors damaged

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
            pollfd p{m_fd, POLLIN, 0};
            ::poll(&p, 1, int((m_deadline - now) / 1'000'000 + 1));
            read_control();
        }
        if (m_state == link_state::lost) throw error(ODL_ERR_NO_DEVICE, m_failure);
    }

private:
    /// Frames put in the ring that the model has not let go of yet, at
    /// least @limit of them. acked is a line the server writes every turn:
    /// read on every frame it would cost a cross-core miss each time, so the
    /// last value read stands until it says @limit is reached.
    uint64_t in_window(uint64_t limit) {
        if (m_put - m_acked_seen < limit) return m_put - m_acked_seen;
        const uint64_t acked = odl_sim_load(&m_mem.shm()->acked);
        if (acked > m_put || acked < m_acked_seen) {
            lose(acked > m_put ? "the model server acknowledged frames never sent"
                               : "the model server took back acknowledgements");
            return m_window;
        }
        m_acked_seen = acked;
        return m_put - acked;
    }

    /// The server's head, read: OK if it shows a frame not taken yet.
    odl_sim_ring_st look_for_frames() {
        const int64_t n = odl_sim_ring_filled(&m_mem.shm()->to_client, m_taken);
        if (n < 0) return ODL_SIM_RING_CORRUPT;
        m_head_seen = m_taken + uint64_t(n);
        return n ? ODL_SIM_RING_OK : ODL_SIM_RING_NONE;
    }

    /// The ring's head and the look at server_waiting (behind a fence) each
    /// take a line the server reads: a cross-core round trip, so a few
    /// frames share one (kSimPublishEvery) and the rest go at tx_flush().
    void publish() {
        odl_sim_store(&m_mem.shm()->to_server.head, m_put);
        m_published = m_put;
        wake_server();
    }
    /// The server sleeps only after saying so; it is woken for new frames.
    void wake_server() {
        if (odl_sim_take_flag(&m_mem.shm()->server_waiting)) send_msg(ODL_SIM_WAKE, now_ns(), 0, nullptr, 0);
    }

    /// Nothing from the model. A program polls its device in a loop, and
    /// the model server needs the CPU to run the link: on a machine with
    /// fewer cores than busy processes, spinning here would starve it.
    /// Every few empty polls, let it run; now and then, read the control
    /// socket (link state, goodbye).
    void idle() {
        ++m_empty_polls;
        if (m_empty_polls % kControlEvery == 0) read_control();
        // With a core each for both programs and the server, a yield (a
        // system call, about a microsecond in a VM) only delays the next
        // frame.
        if (m_spare_cores) return;
        if (m_empty_polls == 1) {
            m_idle_since = now_ns();
            return;
        }
        if (m_empty_polls % 16 != 0) return;
        const uint64_t now = now_ns();
        // A frame taken early is due soon: its completion waits for the
        // clock, not for the server.
        if (now - m_idle_since < kSpinBeforeNapNs || now < m_taken_due_ns) {
            sched_yield();
            return;
        }
        nap();
    }

    /// Sleeps until the server has something for this program (WAKE), at
    /// most kNapNs. The server clears client_waiting and sends WAKE after it
    /// puts descriptors, acknowledges frames or frees slots; it or this
    /// side sees the other's write (a fence on each side: odl_sim_take_flag()).
    void nap() {
        odl_sim_shm* shm = m_mem.shm();
        const uint64_t acked = odl_sim_load(&shm->acked);
        __atomic_store_n(&shm->client_waiting, 1u, __ATOMIC_SEQ_CST);
        if (odl_sim_ring_can_take(&shm->to_client, m_taken) == ODL_SIM_RING_NONE &&
            __atomic_load_n(&shm->acked, __ATOMIC_SEQ_CST) == acked) {
            pollfd p{m_fd, POLLIN, 0};
            const timespec ts{0, long(kNapNs)};
            ::ppoll(&p, 1, &ts, nullptr);
        }
        __atomic_store_n(&shm->client_waiting, 0u, __ATOMIC_SEQ_CST);
        m_empty_polls = 0;
        read_control();  // the WAKE, or whatever else came
    }

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

    /// Control messages are rare and small: sent at once, waiting (bounded)
    /// if the socket is full; @fd goes along with SCM_RIGHTS.
    void send_msg(unsigned type, uint64_t stamp, uint64_t arg, const void* payload, size_t len, int fd = -1) {
        if (m_sock_failed) return;
        odl_sim_hdr h;
        odl_sim_hdr_init(&h, type, uint32_t(len), m_tx_seq++, stamp, arg);
        iovec iov[2] = {{&h, sizeof(h)}, {const_cast<void*>(payload), len}};
        for (int tries = 0; tries < 100; ++tries) {
            if (odl_sim_send(m_fd, iov, len ? 2 : 1, fd) >= 0) return;
            if (errno != EAGAIN && errno != EWOULDBLOCK) return lose_io("send to", errno);
            pollfd p{m_fd, POLLOUT, 0};
            ::poll(&p, 1, 10);
        }
        lose_io("send to", ETIMEDOUT);
    }

    /// The peer's ring memory named @region. PEER comes before the first
    /// descriptor naming it, but this end reads the control socket only now
    /// and then: read it now, and wait for it (bounded) if need be.
    const peer_view* view_of(uint64_t region) {
        for (int tries = 0; tries < 100 && m_state != link_state::lost; ++tries) {
            for (const auto& v : m_peers)
                if (v->region() == region) return v.get();
            if (tries > 0) {
                pollfd p{m_fd, POLLIN, 0};
                ::poll(&p, 1, 10);
            }
            read_control();
        }
        lose(fmt::format("the model server named ring memory it never sent (region {})", region));
        return nullptr;
    }

    /// Takes in the server's control messages (PEER with its descriptor).
    void read_control() {
        unsigned char buf[ODL_SIM_MAX_DATAGRAM + 1];
        for (int i = 0; i < 64 && !m_sock_failed; ++i) {
            fd_owner fd;
            int flags = 0;
            const ssize_t n = odl_sim_recv(m_fd, buf, sizeof(buf), &fd.fd, &flags);
            if (n > 0 && (flags & MSG_CTRUNC)) return lose("the model server sent more than one descriptor");
            if (n == 0) {
                m_sock_failed = true;
                return lose("the model server closed the connection (odl-linkd --sim stopped)");
            }
            if (n < 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK) lose_io("receive from", errno);
                return;
            }
            if (size_t(n) > ODL_SIM_MAX_DATAGRAM) return lose("the model server sent an oversized datagram");
            if (const char* why = odl_sim_check(buf, size_t(n), ODL_SIM_SIDE_SERVER))
                return lose(fmt::format("the model server sent a bad message: {}", why));
            odl_sim_hdr h;
            std::memcpy(&h, buf, sizeof(h));
            if (odl_le64(h.seq) != m_rx_seq++) return lose("the model server sent a message out of sequence");
            handle(h, buf, fd.fd);
        }
    }

    void handle(const odl_sim_hdr& h, const unsigned char* buf, int fd) {
        switch (odl_le16(h.type)) {
        case ODL_SIM_PEER: {
            if (fd < 0) return lose("the model server sent PEER without the peer's ring memory");
            try {
                m_peers.push_back(std::make_unique<peer_view>(odl_le64(h.arg), fd));
            } catch (const error& e) {
                return lose(e.what());
            }
            // Frames of an earlier peer may still wait in our ring: keep
            // its view too, not older ones.
            if (m_peers.size() > 2) m_peers.erase(m_peers.begin());
            return;
        }
        case ODL_SIM_HELLO: {
            if (m_end >= 0) return lose("the model server sent a second HELLO");
            odl_sim_hello s;
            std::memcpy(&s, buf + sizeof(h), sizeof(s));
            const uint32_t links = odl_le32(s.links);
            if (s.end == ODL_SIM_END_ANY) {  // a refusal; BYE follows
                m_refusal = m_want_link >= links
                                ? fmt::format("the model server at {} models {} link{} (sim device{} {}): there is "
                                              "no sim device {}",
                                              m_path, links, links == 1 ? "" : "s", links == 1 ? "" : "s",
                                              links == 1 ? std::string("0") : fmt::format("0 to {}", links - 1),
                                              m_want_link)
                                : fmt::format("the model server at {} refused sim device {}: both of its ends are "
                                              "taken, or ODL_SIM_END names one in use",
                                              m_path, m_want_link);
                return;
            }
            if (s.link != m_want_link)
                return lose(fmt::format("the model server at {} gave link {} for sim device {}", m_path, s.link,
                                        m_want_link));
            m_end = s.end;
            m_spare_cores = spare_cores(links);
            m_rate = odl_le32(s.rate_mbps);
            m_window = std::min<unsigned>(odl_le32(s.window), ODL_SIM_WINDOW);
            m_answer_ns = std::min<uint32_t>(odl_le32(s.answer_ns), ODL_SIM_ANSWER_MAX_NS);
            const std::string prof(s.profile, strnlen(s.profile, sizeof(s.profile)));
            m_name = links > 1 ? fmt::format("sim{}{}:{}", m_want_link, m_end ? 'B' : 'A', prof)
                               : fmt::format("sim{}:{}", m_end ? 'B' : 'A', prof);
            return;
        }
        case ODL_SIM_LINK: {
            const uint64_t st = odl_le64(h.arg);
            if (m_state == link_state::connecting && st == ODL_SIM_LINK_ALL) {
                m_state = link_state::up;
            } else if (m_state == link_state::up && st != ODL_SIM_LINK_ALL && m_loss.empty()) {
                // Frames handed over before it are still ours to read (a
                // peer's last words before it closed): the link is lost
                // once the ring is empty.
                m_loss = !(st & ODL_SIM_LINK_UP) ? "the modelled link went down (cable unplugged)"
                                                 : "the peer left the modelled link";
            }
            return;
        }
        case ODL_SIM_BYE:
            if (m_end < 0 && !m_refusal.empty()) return lose(m_refusal);
            return lose(m_end < 0 ? fmt::format("the model server at {} refused this end (both ends taken, or "
                                                "ODL_SIM_END names one in use)",
                                                m_path)
                                  : "the model server is shutting down");
        default: return;
        }
    }

    int m_fd;
    std::string m_path, m_name = "sim", m_failure;
    uint8_t m_want_link;    ///< the sim device index: which modelled link
    std::string m_refusal;  ///< why the server's HELLO refused us (BYE follows)
    std::string m_loss;  ///< why the link is going, once the ring is read
    ring_memory m_mem;
    odl_sim_slot* m_to_server = nullptr;
    odl_sim_desc* m_descs = nullptr;
    std::vector<std::unique_ptr<peer_view>> m_peers;
    link_state m_state = link_state::connecting;
    int m_end = -1;
    uint32_t m_rate = 0;
    unsigned m_window = ODL_SIM_WINDOW;
    uint64_t m_put = 0, m_taken = 0;  ///< our ring counts: frames put, frames taken
    uint64_t m_published = 0;         ///< frames put that the server may see (to_server.head)
    uint64_t m_burst = 0;             ///< frames put since the last tx_flush()
    /// The server's positions as last read (in_window(), tx_reserve(),
    /// rx_peek()): each a line it writes, read again only when needed.
    uint64_t m_acked_seen = 0, m_tail_seen = 0, m_head_seen = 0;
    uint64_t m_uncounted = 0;     ///< the first frame whose lag is not counted yet
    uint64_t m_asked_ns = 0;      ///< tx_asked() for the next commit (0: none)
    uint64_t m_idle_since = 0;    ///< the first of the current run of empty polls
    uint64_t m_taken_due_ns = 0;  ///< the latest due time of a frame taken
    uint32_t m_answer_ns = 0;         ///< HELLO's answer_ns: this host's modelled completion cost
    uint64_t m_answer_due_ns = 0;     ///< due time of a receive completion the program got, not yet answered
    uint64_t m_answer_shift_ns = 0;   ///< how much earlier this burst's frames are stamped (an answer)
    uint64_t m_tx_seq = 0, m_rx_seq = 0, m_deadline = 0;
    bool m_sock_failed = false;  ///< the server connection itself broke
    unsigned m_empty_polls = 0, m_progress_calls = 0;
    /// Two polling programs and the server fit the machine (odl-linkd
    /// --sim spins then too).
    bool m_spare_cores = false;  ///< spin without yielding or napping; set at HELLO
    sim_lag m_lag;
};

}  // namespace

std::string sim_socket_path() {
    if (const char* p = std::getenv("ODL_SIM_SOCKET"); p && *p) return std::strcmp(p, ODL_SIM_INPROC_SOCKET) == 0 ? sim_inproc_socket() : p;
    const char* dir = std::getenv("XDG_RUNTIME_DIR");
    return fmt::format("{}/odl-sim-{}.sock", dir && *dir ? dir : "/tmp", getuid());
}

std::unique_ptr<link> open_sim_link(uint32_t index, sim_end which) {
    // One link per device index; the server says how many it models.
    if (index > 255)
        throw error(ODL_ERR_NO_DEVICE, fmt::format("sim device {}: a model server models at most 256 links", index));
    uint8_t end = which == sim_end::a ? 0 : which == sim_end::b ? 1 : ODL_SIM_END_ANY;
    if (const char* e = which != sim_end::from_env ? nullptr : std::getenv("ODL_SIM_END"); e && *e) {
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
    std::unique_ptr<sim_link> l;
    try {
        l = std::make_unique<sim_link>(fd, uint8_t(index), end, path);
    } catch (...) {
        ::close(fd);
        throw;
    }
    l->await_hello();
    return l;
}

sim_lag sim_link_lag(const link& l) {
    if (const auto* s = dynamic_cast<const sim_link*>(&l)) return s->lag();
    return {};
}

}  // namespace odl
