// SPDX-License-Identifier: MIT
// Loopback link: SPSC frame rings in a memfd shared by the two endpoints. The
// unix socket used to pass the memfd stays open as the liveness signal: when
// the peer process dies the kernel closes it and we see EOF at once.
#include "link_loopback.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <new>

#include <fmt/format.h>

#include "clock.h"
#include "error.h"
#include "log.h"
#include "spsc_ring.h"

namespace odl {
namespace {

constexpr uint32_t kShmMagic = 0x534c444fu;  // "ODLS"
constexpr uint32_t kShmVersion = 1;
/// Frames the engine may hold reserved for its send thread to fill: as many
/// as tx_busy() lets wait, so the thread always has the next burst's room.
constexpr unsigned kLoopbackTxDepth = kLoopbackQueueLimit;
/// Received frames the engine may hold for its receive thread to copy out:
/// a poll's worth (its receive budget), a small part of the ring.
constexpr unsigned kLoopbackRxDepth = 64;

/// Start of the shared region. Ring 0 carries frames from side 0 (the one
/// that created the region) to side 1; ring 1 the other way.
struct shm_header {
    uint32_t magic;
    uint32_t version;
    uint32_t slots;
    uint32_t reserved;
    std::atomic<uint32_t> alive[2];  ///< 1 while side i has the link open
    uint32_t pad[10];
    spsc_ring_ctrl ctrl[2];
};
static_assert(sizeof(shm_header) % 64 == 0, "slots stay cache-line aligned");

/// What the creator sends with the memfd.
struct intro_msg {
    uint32_t magic;
    uint32_t version;
    uint32_t slots;
    uint32_t pid;
};

size_t region_bytes(uint32_t slots) { return sizeof(shm_header) + 2ull * slots * sizeof(spsc_slot); }

/// Owns one mapping of the shared region.
class shm_region {
public:
    shm_region(void* base, size_t bytes) : m_base(base), m_bytes(bytes) {}
    ~shm_region() {
        if (m_base) munmap(m_base, m_bytes);
    }
    shm_region(const shm_region&) = delete;
    shm_region& operator=(const shm_region&) = delete;

    shm_header* hdr() const { return static_cast<shm_header*>(m_base); }
    spsc_slot* slots(int ring) const {
        auto* first = reinterpret_cast<spsc_slot*>(static_cast<char*>(m_base) + sizeof(shm_header));
        return first + size_t(ring) * hdr()->slots;
    }

private:
    void* m_base;
    size_t m_bytes;
};

std::shared_ptr<shm_region> map_region(int fd, uint32_t slots) {
    const size_t bytes = region_bytes(slots);
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) throw error(ODL_ERR_IO, fmt::format("mmap of loopback ring failed: {}", strerror(errno)));
    return std::make_shared<shm_region>(p, bytes);
}

/// Creates and initialises a region; returns its memfd and mapping.
std::pair<int, std::shared_ptr<shm_region>> create_region(uint32_t slots) {
    int fd = memfd_create("odl-loopback", MFD_CLOEXEC);
    if (fd < 0) throw error(ODL_ERR_IO, fmt::format("memfd_create failed: {}", strerror(errno)));
    if (ftruncate(fd, off_t(region_bytes(slots))) != 0) {
        int e = errno;
        close(fd);
        throw error(ODL_ERR_NOMEM, fmt::format("cannot size loopback ring: {}", strerror(e)));
    }
    auto region = map_region(fd, slots);
    auto* h = new (region->hdr()) shm_header{};
    h->magic = kShmMagic;
    h->version = kShmVersion;
    h->slots = slots;
    h->alive[0].store(1);
    return {fd, region};
}

class loopback_link final : public link {
public:
    /// In-process endpoint over an existing region.
    loopback_link(std::shared_ptr<shm_region> region, int side, uint32_t index)
        : m_index(index) {
        attach(std::move(region), side);
        m_peer_pid = uint32_t(getpid());
    }

    /// Two-process endpoint: starts the rendezvous on @index.
    explicit loopback_link(uint32_t index) : m_index(index) { start_rendezvous(); }

    ~loopback_link() override {
        if (m_region) m_region->hdr()->alive[m_side].store(0, std::memory_order_release);
        if (m_listen_fd >= 0) close(m_listen_fd);
        if (m_conn_fd >= 0) close(m_conn_fd);
    }

    unsigned char* tx_reserve() override { return m_region ? m_tx.reserve() : nullptr; }
    unsigned tx_depth() const override { return kLoopbackTxDepth; }
    unsigned char* tx_reserve_at(unsigned ahead) override { return m_region ? m_tx.reserve_at(ahead) : nullptr; }
    void tx_commit(size_t bytes) override { m_tx.commit(bytes); }
    void tx_flush() override {
        if (m_region) m_tx.publish();
    }
    bool tx_busy() override { return m_region && m_tx.backlog_at_least(kLoopbackQueueLimit); }

    rx_frame rx_peek() override {
        rx_frame f;
        if (m_region) f.data = m_rx.peek(f.len);
        return f;
    }
    void rx_release() override { m_rx.release(); }
    unsigned rx_depth() const override { return kLoopbackRxDepth; }
    rx_frame rx_peek_at(unsigned ahead) override {
        rx_frame f;
        if (m_region) f.data = m_rx.peek_at(ahead, f.len);
        return f;
    }
    void rx_flush() override {
        if (m_region) m_rx.free_slots();
    }

    link_state progress() override {
        if (m_state == link_state::connecting) {
            if (m_listen_fd >= 0) try_accept();
            else if (m_conn_fd >= 0) try_receive_region();
            return m_state;
        }
        if (m_state == link_state::up) check_liveness();
        return m_state;
    }

    std::string failure() const override { return m_failure; }
    std::string name() const override { return fmt::format("loopback{}", m_index); }

    /// The peer process as our kernel knows it (0 until connected).
    uint32_t peer_pid() const { return m_peer_pid; }

private:
    void attach(std::shared_ptr<shm_region> region, int side) {
        m_region = std::move(region);
        m_side = side;
        shm_header* h = m_region->hdr();
        h->alive[side].store(1, std::memory_order_release);
        m_tx = spsc_ring(&h->ctrl[side], m_region->slots(side), h->slots);
        m_rx = spsc_ring(&h->ctrl[1 - side], m_region->slots(1 - side), h->slots);
        m_state = link_state::up;
    }

    void start_rendezvous() {
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const std::string name = loopback_socket_name(m_index);
        std::memcpy(addr.sun_path, name.data(), name.size());
        const auto len = socklen_t(offsetof(sockaddr_un, sun_path) + name.size());
        // Join a waiting endpoint, or become the waiting one. Bounded: a
        // racing third party can make bind fail once or twice, not forever.
        for (int attempt = 0; attempt < 8; ++attempt) {
            int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd < 0) throw error(ODL_ERR_IO, fmt::format("socket: {}", strerror(errno)));
            if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
                m_conn_fd = fd;
                return;
            }
            if (bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 && listen(fd, 1) == 0) {
                m_listen_fd = fd;
                return;
            }
            close(fd);
            usleep(1000);
        }
        throw error(ODL_ERR_IO, fmt::format("loopback{}: cannot join or create the rendezvous socket", m_index));
    }

    void try_accept() {
        int fd = accept4(m_listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                fail(fmt::format("accept: {}", strerror(errno)));
            return;
        }
        close(m_listen_fd);  // the name is free again: a loopback index joins two endpoints
        m_listen_fd = -1;
        m_conn_fd = fd;
        auto [memfd, region] = create_region(kLoopbackSlots);
        intro_msg intro{kShmMagic, kShmVersion, kLoopbackSlots, uint32_t(getpid())};
        char cbuf[CMSG_SPACE(sizeof(int))] = {};
        iovec iov{&intro, sizeof(intro)};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &memfd, sizeof(int));
        const ssize_t n = sendmsg(m_conn_fd, &msg, MSG_NOSIGNAL);
        close(memfd);
        if (n != ssize_t(sizeof(intro))) {
            fail("peer left during the rendezvous");
            return;
        }
        attach(std::move(region), 0);
        learn_peer_pid();
    }

    void try_receive_region() {
        intro_msg intro{};
        char cbuf[CMSG_SPACE(sizeof(int))] = {};
        iovec iov{&intro, sizeof(intro)};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf;
        msg.msg_controllen = sizeof(cbuf);
        const ssize_t n = recvmsg(m_conn_fd, &msg, MSG_CMSG_CLOEXEC);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        int memfd = -1;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
            if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) std::memcpy(&memfd, CMSG_DATA(c), sizeof(int));
        if (n != ssize_t(sizeof(intro)) || memfd < 0) {
            if (memfd >= 0) close(memfd);
            fail(n == 0 ? "peer left during the rendezvous" : "malformed rendezvous message");
            return;
        }
        struct stat st {};
        const bool ok = intro.magic == kShmMagic && intro.version == kShmVersion && intro.slots >= 2 &&
                        (intro.slots & (intro.slots - 1)) == 0 && intro.slots <= 65536 &&
                        fstat(memfd, &st) == 0 && uint64_t(st.st_size) == region_bytes(intro.slots);
        if (!ok) {
            close(memfd);
            fail("peer offered an incompatible loopback ring");
            return;
        }
        try {
            auto region = map_region(memfd, intro.slots);
            close(memfd);
            if (region->hdr()->magic != kShmMagic || region->hdr()->slots != intro.slots) {
                fail("peer's loopback ring header is corrupt");
                return;
            }
            attach(std::move(region), 1);
            learn_peer_pid();
        } catch (const error& e) {
            close(memfd);
            fail(e.what());
        }
    }

    void check_liveness() {
        // Rate-limited: a clock read every 64 idle calls, a syscall per ms.
        if (++m_idle_calls & 63) return;
        const uint64_t now = now_ns();
        if (now - m_last_check_ns < 1000000) return;
        m_last_check_ns = now;
        if (m_region->hdr()->alive[1 - m_side].load(std::memory_order_acquire) == 0 &&
            m_conn_fd < 0) {
            fail("peer endpoint closed without goodbye");
            return;
        }
        if (m_conn_fd < 0) return;
        char b;
        const ssize_t n = recv(m_conn_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n == 0) fail("peer process exited (its connection closed)");
        else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            fail(fmt::format("peer connection failed: {}", strerror(errno)));
    }

    /// SO_PEERCRED: the pid in our own pid namespace (the one in HELLO is
    /// the peer's view, which differs across namespaces).
    void learn_peer_pid() {
        ucred cred{};
        socklen_t len = sizeof(cred);
        if (getsockopt(m_conn_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 && cred.pid > 0) m_peer_pid = uint32_t(cred.pid);
    }

    void fail(std::string why) {
        if (m_state == link_state::lost) return;
        m_failure = name() + ": " + std::move(why);
        m_state = link_state::lost;
        log::write(ODL_LOG_DEBUG, "{}", m_failure);
    }

    uint32_t m_index;
    int m_side = 0;
    int m_listen_fd = -1;
    int m_conn_fd = -1;
    link_state m_state = link_state::connecting;
    std::string m_failure;
    std::shared_ptr<shm_region> m_region;
    spsc_ring m_tx;
    spsc_ring m_rx;
    uint64_t m_idle_calls = 0;
    uint64_t m_last_check_ns = 0;
    uint32_t m_peer_pid = 0;
};

}  // namespace

std::string loopback_socket_name(uint32_t index) {
    const char* ns = std::getenv("ODL_LOOPBACK_NAMESPACE");
    // Leading NUL: Linux's abstract namespace, removed automatically on exit.
    return std::string(1, '\0') +
           fmt::format("odl-loopback-{}-{}-{}", getuid(), ns && *ns ? ns : "default", index);
}

std::unique_ptr<link> open_loopback_link(uint32_t index) {
    if (index >= kLoopbackDevices)
        throw error(ODL_ERR_NO_DEVICE,
                    fmt::format("no loopback device {} (have: 0-{})", index, kLoopbackDevices - 1));
    return std::make_unique<loopback_link>(index);
}

uint32_t loopback_peer_pid(const link& l) {
    const auto* lb = dynamic_cast<const loopback_link*>(&l);
    return lb ? lb->peer_pid() : 0;
}

uint64_t loopback_rndv_min_bytes() {
    const char* on = std::getenv("ODL_LOOPBACK_RNDV");
    if (on && std::strcmp(on, "0") == 0) return 0;
    const char* min = std::getenv("ODL_LOOPBACK_RNDV_MIN");
    if (min && *min) {
        char* end = nullptr;
        const unsigned long long v = std::strtoull(min, &end, 0);
        if (*min >= '0' && *min <= '9' && end && *end == '\0' && v > 0) return v;  // "-1" was 2^64 - 1
        log::write(ODL_LOG_WARN, "ODL_LOOPBACK_RNDV_MIN='{}' is not a positive byte count; using {}", min, kLoopbackRndvMinBytes);
    }
    return kLoopbackRndvMinBytes;
}

std::pair<std::unique_ptr<link>, std::unique_ptr<link>> open_loopback_pair() {
    auto [fd, region] = create_region(kLoopbackSlots);
    close(fd);  // the mapping keeps the memory; no other process needs it
    return {std::make_unique<loopback_link>(region, 0, 0), std::make_unique<loopback_link>(region, 1, 0)};
}

}  // namespace odl
