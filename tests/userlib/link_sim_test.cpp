// SPDX-License-Identifier: MIT
// The sim link against a hand-made model server that lies about its
// window: acknowledgements of frames never sent, acknowledgements taken
// back, a window of nothing. Each must fail the link (or its open) with the
// reason, never leave a program sending into a window that does not exist.
// (Garbage datagrams and bad rings are sim_backend_test's and the fuzzers'.)
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "clock.h"
#include "error.h"
#include "link_sim.h"
#include "odl/wire/sim_codec.h"

namespace {

/// A descriptor closed when it goes.
struct fd_guard {
    int fd = -1;
    ~fd_guard() {
        if (fd >= 0) ::close(fd);
    }
};

/// A mapping of a ring region, unmapped when it goes.
struct region {
    odl_sim_shm* shm = nullptr;
    ~region() {
        if (shm) ::munmap(shm, ODL_SIM_SHM_BYTES);
    }
};

/// One program's worth of a model server on a socket of its own: takes the
/// program's HELLO and rings, answers with @window, a peer's (empty) rings
/// and a link that is up. The program's ring memory is then @theirs.
class fake_server {
public:
    explicit fake_server(uint32_t window, uint32_t answer_ns = 0) : m_window(window), m_answer_ns(answer_ns) {
        char dir[] = "/tmp/odl-link-sim-test.XXXXXX";
        if (!::mkdtemp(dir)) throw std::runtime_error("mkdtemp");
        m_dir = dir;
        m_path = m_dir + "/s.sock";
        m_listen.fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un a{};
        a.sun_family = AF_UNIX;
        std::strncpy(a.sun_path, m_path.c_str(), sizeof(a.sun_path) - 1);
        if (::bind(m_listen.fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) < 0 || ::listen(m_listen.fd, 1) < 0)
            throw std::runtime_error("bind/listen " + m_path);
        ::setenv("ODL_SIM_SOCKET", m_path.c_str(), 1);
        m_thread = std::thread([this] { serve(); });
    }
    ~fake_server() {
        if (m_thread.joinable()) m_thread.join();
        ::unsetenv("ODL_SIM_SOCKET");
        ::unlink(m_path.c_str());
        ::rmdir(m_dir.c_str());
    }
    fake_server(const fake_server&) = delete;
    fake_server& operator=(const fake_server&) = delete;

    /// After the program's open returned: the server has its rings.
    odl_sim_shm* theirs() {
        if (m_thread.joinable()) m_thread.join();
        return m_theirs.shm;
    }
    const std::string& error() const { return m_error; }

private:
    void send(unsigned type, const void* payload, uint32_t len, uint64_t arg, int fd) {
        odl_sim_hdr h;
        odl_sim_hdr_init(&h, type, len, m_seq++, 0, arg);
        iovec iov[2] = {{&h, sizeof(h)}, {const_cast<void*>(payload), len}};
        if (odl_sim_send(m_conn.fd, iov, len ? 2 : 1, fd) < 0) m_error = "send failed";
    }

    void serve() {
        pollfd p{m_listen.fd, POLLIN, 0};
        if (::poll(&p, 1, 5000) != 1) return void(m_error = "no program connected");
        m_conn.fd = ::accept4(m_listen.fd, nullptr, nullptr, SOCK_CLOEXEC);
        pollfd q{m_conn.fd, POLLIN, 0};
        if (::poll(&q, 1, 5000) != 1) return void(m_error = "no HELLO");
        unsigned char buf[ODL_SIM_MAX_DATAGRAM];
        fd_guard rings;
        int flags = 0;
        if (odl_sim_recv(m_conn.fd, buf, sizeof(buf), &rings.fd, &flags) <= 0 || rings.fd < 0)
            return void(m_error = "HELLO without rings");
        void* t = ::mmap(nullptr, ODL_SIM_SHM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, rings.fd, 0);
        if (t == MAP_FAILED) return void(m_error = "cannot map the program's rings");
        m_theirs.shm = static_cast<odl_sim_shm*>(t);

        fd_guard ours;
        ours.fd = ::memfd_create("fake-peer", MFD_CLOEXEC);
        if (ours.fd < 0 || ::ftruncate(ours.fd, ODL_SIM_SHM_BYTES) < 0) return void(m_error = "memfd");
        region peer;
        void* o = ::mmap(nullptr, ODL_SIM_SHM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, ours.fd, 0);
        if (o == MAP_FAILED) return void(m_error = "cannot map our rings");
        peer.shm = static_cast<odl_sim_shm*>(o);
        odl_sim_shm_init(peer.shm);

        odl_sim_hello s{};
        s.magic = odl_cpu_le32(ODL_SIM_MAGIC);
        s.version = odl_cpu_le16(ODL_SIM_VERSION);
        s.end = 0;
        s.link = 0;
        s.rate_mbps = odl_cpu_le32(10000);
        s.window = odl_cpu_le32(m_window);
        s.pid = odl_cpu_le32(uint32_t(getpid()));
        s.links = odl_cpu_le32(1);
        s.answer_ns = odl_cpu_le32(m_answer_ns);
        std::memcpy(s.profile, "fake", 4);
        send(ODL_SIM_HELLO, &s, sizeof(s), 0, -1);
        send(ODL_SIM_PEER, nullptr, 0, 7, ours.fd);
        send(ODL_SIM_LINK, nullptr, 0, ODL_SIM_LINK_ALL, -1);
    }

    uint32_t m_window;
    uint32_t m_answer_ns;
    std::string m_dir, m_path, m_error;
    fd_guard m_listen;
    fd_guard m_conn;  ///< open until the test ends: the program's link stays
    region m_theirs;
    uint64_t m_seq = 0;
    std::thread m_thread;
};

/// The link, opened and up (bounded), or a failed assertion.
std::unique_ptr<odl::link> open_up(fake_server& srv) {
    auto l = odl::open_sim_link(0);
    for (int i = 0; i < 2000 && l->progress() == odl::link_state::connecting; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(l->progress(), odl::link_state::up) << l->failure() << srv.error();
    return l;
}

/// Puts one 64-byte frame in the ring; false when the link gives no room.
bool put_frame(odl::link& l) {
    unsigned char* p = l.tx_reserve();
    if (!p) return false;
    std::memset(p, 0x5a, 64);
    l.tx_commit(64);
    return true;
}

/// A link up against a server with a window of one frame (declared first:
/// the link goes before its server).
class WindowOfOne : public ::testing::Test {
protected:
    void SetUp() override {
        l = open_up(srv);
        shm = srv.theirs();
        ASSERT_NE(shm, nullptr) << srv.error();
    }
    /// The next frame is refused and the link lost, saying @why.
    void expect_lost(const std::string& why) {
        EXPECT_FALSE(put_frame(*l));
        EXPECT_EQ(l->progress(), odl::link_state::lost);
        EXPECT_NE(l->failure().find(why), std::string::npos) << l->failure();
    }
    fake_server srv{1};
    std::unique_ptr<odl::link> l;
    odl_sim_shm* shm = nullptr;
};

TEST_F(WindowOfOne, AServerThatAcknowledgesTheWindowGetsMoreFrames) {
    // The harness itself: with honest acknowledgements a window of one
    // frame carries frame after frame.
    for (uint64_t i = 1; i <= 3; ++i) {
        ASSERT_TRUE(put_frame(*l)) << "frame " << i << ": " << l->failure();
        EXPECT_EQ(l->tx_reserve(), nullptr) << "a window of one frame held two";
        odl_sim_store(&shm->acked, i);
    }
    EXPECT_EQ(l->progress(), odl::link_state::up) << l->failure();
}

TEST_F(WindowOfOne, AcknowledgingFramesNeverSentFailsTheLink) {
    ASSERT_TRUE(put_frame(*l)) << l->failure();
    odl_sim_store(&shm->acked, 5);  // one frame sent
    expect_lost("acknowledged frames never sent");
}

TEST_F(WindowOfOne, TakingBackAcknowledgementsFailsTheLink) {
    ASSERT_TRUE(put_frame(*l)) << l->failure();
    odl_sim_store(&shm->acked, 1);
    ASSERT_TRUE(put_frame(*l)) << l->failure();
    odl_sim_store(&shm->acked, 0);  // the first one, taken back
    expect_lost("took back acknowledgements");
}

TEST(SimLink, ABurstReachesTheServerByItsFlushAndItsFirstFrameAtOnce) {
    // Frames are published to the server a few at a time: a burst's first
    // at once (the model may be idle for this end), every frame by the end
    // of its burst (tx_flush), whatever the burst's length.
    fake_server srv(ODL_SIM_WINDOW);
    auto l = open_up(srv);
    odl_sim_shm* shm = srv.theirs();
    ASSERT_NE(shm, nullptr) << srv.error();
    uint64_t put = 0;
    for (unsigned n = 1; n <= 20; ++n) {
        for (unsigned i = 0; i < n; ++i) {
            ASSERT_TRUE(put_frame(*l)) << "burst " << n << ", frame " << i << ": " << l->failure();
            ++put;
            if (i == 0) {
                EXPECT_EQ(odl_sim_load(&shm->to_server.head), put) << "burst " << n << ": first frame held";
            }
        }
        l->tx_flush();
        EXPECT_EQ(odl_sim_load(&shm->to_server.head), put) << "burst " << n << ": frames held after the flush";
    }
    EXPECT_EQ(l->progress(), odl::link_state::up) << l->failure();
}

TEST(SimLink, AnAnswerIsStampedUpToTheModelledCompletionCostEarlier) {
    // The server says this host's modelled completion cost is 1 ms (the
    // most a program takes: large, so that a clock read apart cannot hide a
    // wrong stamp): a message asked for after a receive completion went to
    // the program is stamped up to that much earlier, never before the
    // completion's due time, and only the message that answers it.
    fake_server srv(ODL_SIM_WINDOW, ODL_SIM_ANSWER_MAX_NS);
    auto l = open_up(srv);
    odl_sim_shm* shm = srv.theirs();
    ASSERT_NE(shm, nullptr) << srv.error();
    const odl_sim_slot* slots = odl_sim_slots(shm);
    uint64_t put = 0;
    const auto send = [&](uint64_t asked) {
        l->tx_asked(asked);
        EXPECT_TRUE(put_frame(*l)) << l->failure();
        ++put;
    };
    const auto stamp = [&](uint64_t k) { return slots[(k - 1) & (ODL_SIM_SLOTS - 1)].stamp_ns; };
    const uint64_t due = odl::now_ns() - 10'000'000;  // asked times lie in the past: taken as they are

    l->rx_delivered(due);
    send(due + 100);  // answered within the cost: at the due time
    EXPECT_EQ(stamp(put), due);
    const uint64_t t0 = odl::now_ns();
    ASSERT_TRUE(put_frame(*l));  // the same burst: moves with its first frame
    ++put;
    EXPECT_LE(stamp(put), odl::now_ns() - 100);
    EXPECT_GE(stamp(put), t0 - 100);
    l->tx_flush();

    send(due + 5000);  // no receive since: as asked
    EXPECT_EQ(stamp(put), due + 5000);
    l->tx_flush();

    l->rx_delivered(due + 6000);
    send(due + 2'006'000);  // answered later than the cost: 1 ms of it taken off
    EXPECT_EQ(stamp(put), due + 1'006'000);
    l->tx_flush();
    const uint64_t t1 = odl::now_ns();
    ASSERT_TRUE(put_frame(*l));  // a later burst of that message: as it is
    ++put;
    EXPECT_GE(stamp(put), t1);
    l->tx_flush();
    EXPECT_EQ(l->progress(), odl::link_state::up) << l->failure();
}

TEST(SimLink, AServerThatGivesNoWindowIsRefusedAtOpen) {
    // A window of zero frames would let the program send nothing, not even
    // its HELLO: the open fails at once with the reason instead of the
    // connect timing out later.
    fake_server srv(0);
    try {
        auto l = odl::open_sim_link(0);
        FAIL() << "opened a link with no window";
    } catch (const odl::error& e) {
        EXPECT_NE(std::string(e.what()).find("gives no window"), std::string::npos) << e.what();
    }
}

}  // namespace
