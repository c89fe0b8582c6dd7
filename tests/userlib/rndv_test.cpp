// SPDX-License-Identifier: MIT
// Tests for the loopback backend's single-copy rendezvous (RNDV): large
// messages are read by the receiver straight from the sender's memory with
// process_vm_readv. Integrity, the frame path when disabled or when the copy
// fails, truncation, cancel and discard, and a peer that dies before the copy.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backend.h"
#include "engine.h"
#include "link_loopback.h"
#include "mem_link.h"
#include "peer_frames.h"
#include "odl/odl.h"
#include "odl/wire/frame_codec.h"
#include "two_process.h"

namespace {

using odl::engine;
using odl::open_config;

constexpr uint64_t kMin = odl::kLoopbackRndvMinBytes;

open_config config() {
    open_config c;
    c.backend = "loopback";
    c.num_streams = 4;
    c.window_frames = 512;
    c.max_msg_bytes = 16ull << 20;
    c.node_name = "node";
    return c;
}

std::vector<unsigned char> pattern(size_t n, unsigned seed) {
    std::vector<unsigned char> v;
    v.reserve(n);
    for (size_t i = 0; i < n; ++i) v.push_back(static_cast<unsigned char>(i * 31 + seed * 7 + (i >> 11)));
    return v;
}

/// Sets or clears an environment variable for one scope.
class scoped_env {
public:
    scoped_env(const char* name, const char* value) : m_name(name) {
        if (const char* old = std::getenv(name)) m_old = old, m_had = true;
        if (value) setenv(name, value, 1);
        else unsetenv(name);
    }
    ~scoped_env() {
        if (m_had) setenv(m_name, m_old.c_str(), 1);
        else unsetenv(m_name);
    }
    scoped_env(const scoped_env&) = delete;
    scoped_env& operator=(const scoped_env&) = delete;

private:
    const char* m_name;
    std::string m_old;
    bool m_had = false;
};

/// Whether this process may read @pid's memory (seccomp or Yama may forbid
/// it; the library then falls back to frames, which other tests cover).
bool cma_works(pid_t pid, const void* addr) {
    char b = 0;
    iovec local{&b, 1};
    iovec remote{const_cast<void*>(addr), 1};
    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == 1;
}

#define SKIP_WITHOUT_CMA(pid, addr)                                                          \
    do {                                                                                     \
        if (!cma_works(pid, addr)) GTEST_SKIP() << "process_vm_readv not permitted here: " \
                                                 << strerror(errno);                         \
    } while (0)

class Rndv : public ::testing::Test {
protected:
    void SetUp() override {
        static const char probe = 'p';
        SKIP_WITHOUT_CMA(getpid(), &probe);
    }

    void make(const open_config& c = config()) {
        auto [x, y] = odl::open_loopback_backend_pair(c);
        pa = std::move(x);
        pb = std::move(y);
        a = dynamic_cast<engine*>(pa.get());
        b = dynamic_cast<engine*>(pb.get());
        ASSERT_NE(a, nullptr);
        ASSERT_NE(b, nullptr);
        pump();
        ASSERT_EQ(a->link_state(), uint32_t(ODL_LINK_UP));
        ASSERT_EQ(b->link_state(), uint32_t(ODL_LINK_UP));
    }

    /// Polls both ends until both have @want completions or nothing moves.
    void pump(size_t want_a = 0, size_t want_b = 0, int rounds = 200000) {
        for (int i = 0; i < rounds; ++i) {
            odl_completion c[16];
            const size_t na = pa->poll(c, 16);
            done_a.insert(done_a.end(), c, c + na);
            const size_t nb = pb->poll(c, 16);
            done_b.insert(done_b.end(), c, c + nb);
            if (done_a.size() >= want_a && done_b.size() >= want_b && i > 50 && na == 0 && nb == 0) return;
        }
    }

    std::unique_ptr<odl::backend> pa, pb;
    engine* a = nullptr;
    engine* b = nullptr;
    std::vector<odl_completion> done_a, done_b;
};

TEST_F(Rndv, LargeMessagesGoByReferenceIntact) {
    scoped_env on("ODL_LOOPBACK_RNDV", nullptr), min("ODL_LOOPBACK_RNDV_MIN", nullptr);
    make();
    ASSERT_TRUE(a->rndv().tx);
    ASSERT_TRUE(b->rndv().rx);
    const std::vector<size_t> sizes = {kMin - 1, kMin, (1 << 20) + 13, 3 << 20};
    std::vector<std::vector<unsigned char>> tx, rx;
    for (size_t i = 0; i < sizes.size(); ++i) {
        tx.push_back(pattern(sizes[i], unsigned(i)));
        rx.emplace_back(sizes[i] + 64, 0xee);
        ASSERT_EQ(pb->post_recv(1, 4, rx[i].data(), rx[i].size(), i), ODL_OK);
        ASSERT_EQ(pa->post_send(1, 4, tx[i].data(), tx[i].size(), i), ODL_OK);
    }
    pump(sizes.size(), sizes.size());
    ASSERT_EQ(done_a.size(), sizes.size());
    ASSERT_EQ(done_b.size(), sizes.size());
    for (size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(done_a[i].status, ODL_OK);
        EXPECT_EQ(done_b[i].status, ODL_OK);
        EXPECT_EQ(done_b[i].ctx, i) << "order";
        EXPECT_EQ(done_b[i].len, sizes[i]);
        EXPECT_TRUE(std::equal(tx[i].begin(), tx[i].end(), rx[i].begin())) << "size " << sizes[i];
        EXPECT_EQ(rx[i][sizes[i]], 0xee) << "wrote past the message";
    }
    EXPECT_EQ(a->rndv().sent, 3u);
    EXPECT_EQ(b->rndv().copied, 3u);
    EXPECT_EQ(b->rndv().resends, 0u);
    // Split by default: the sender wrote its part of each.
    EXPECT_TRUE(b->rndv().split);
    EXPECT_EQ(b->rndv().splits, 3u);
    EXPECT_EQ(a->rndv().wrote, 3u);
    EXPECT_EQ(b->rndv().write_fails, 0u);
    odl_stats st{};
    pa->stats(st);
    // The one below the threshold in frames, each of the others in one RNDV.
    EXPECT_EQ(st.tx_frames, odl_msg_frames(kMin - 1) + 3);
    EXPECT_EQ(st.tx_msgs, sizes.size());
    pb->stats(st);
    EXPECT_EQ(st.rx_msgs, sizes.size());
}

TEST_F(Rndv, DisabledByEnvironmentUsesFrames) {
    scoped_env off("ODL_LOOPBACK_RNDV", "0");
    make();
    EXPECT_FALSE(a->rndv().tx);
    EXPECT_FALSE(b->rndv().rx);
    auto tx = pattern(1 << 20, 1);
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(pb->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(pa->post_send(0, 1, tx.data(), tx.size(), 1), ODL_OK);
    pump(1, 1);
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(rx, tx);
    odl_stats st{};
    pa->stats(st);
    EXPECT_EQ(st.tx_frames, odl_msg_frames(tx.size()));
    EXPECT_EQ(a->rndv().sent, 0u);
}

TEST_F(Rndv, ThresholdFromTheEnvironment) {
    scoped_env on("ODL_LOOPBACK_RNDV", nullptr), min("ODL_LOOPBACK_RNDV_MIN", "1000000");
    make();
    auto small = pattern(999999, 1), big = pattern(1000000, 2);
    std::vector<unsigned char> r1(small.size()), r2(big.size());
    ASSERT_EQ(pb->post_recv(0, 1, r1.data(), r1.size(), 1), ODL_OK);
    ASSERT_EQ(pb->post_recv(0, 1, r2.data(), r2.size(), 2), ODL_OK);
    ASSERT_EQ(pa->post_send(0, 1, small.data(), small.size(), 1), ODL_OK);
    ASSERT_EQ(pa->post_send(0, 1, big.data(), big.size(), 2), ODL_OK);
    pump(2, 2);
    EXPECT_EQ(r1, small);
    EXPECT_EQ(r2, big);
    EXPECT_EQ(a->rndv().sent, 1u);
}

TEST_F(Rndv, ChecksummedSendsKeepTheFramePath) {
    open_config c = config();
    c.flags = ODL_OPEN_CHECKSUM;
    make(c);
    EXPECT_FALSE(a->rndv().tx);
    EXPECT_TRUE(a->rndv().rx);
    auto tx = pattern(1 << 20, 3);
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(pb->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(pa->post_send(0, 1, tx.data(), tx.size(), 1), ODL_OK);
    pump(1, 1);
    EXPECT_EQ(rx, tx);
    EXPECT_EQ(a->rndv().sent, 0u);
}

TEST_F(Rndv, ShortBufferTruncatesLikeTheFramePath) {
    make();
    auto tx = pattern(1 << 20, 4);
    std::vector<unsigned char> rx(300000 + 16, 0xee);
    ASSERT_EQ(pb->post_recv(0, 1, rx.data(), 300000, 1), ODL_OK);
    ASSERT_EQ(pa->post_send(0, 1, tx.data(), tx.size(), 1), ODL_OK);
    pump(1, 1);
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_TRUNCATED);
    EXPECT_EQ(done_b[0].len, tx.size());
    EXPECT_TRUE(std::equal(tx.begin(), tx.begin() + 300000, rx.begin()));
    EXPECT_EQ(rx[300000], 0xee) << "wrote past the buffer";
    ASSERT_EQ(done_a.size(), 1u);
    EXPECT_EQ(done_a[0].status, ODL_OK);
    EXPECT_EQ(a->rndv().sent, 1u);
}

TEST_F(Rndv, EarlyMessageGoesAsFramesAndLaterOnesPassIt) {
    // No receive when the RNDV comes: it is resent as frames and held like
    // any early message, so a later message on the stream still gets
    // through (holding the RNDV would stop the stream until the first
    // receive is posted).
    make();
    auto big = pattern(300000, 5), small = pattern(10, 6);
    ASSERT_EQ(pa->post_send(2, 1, big.data(), big.size(), 1), ODL_OK);
    ASSERT_EQ(pa->post_send(2, 2, small.data(), small.size(), 2), ODL_OK);
    std::vector<unsigned char> r1(big.size()), r2(small.size());
    ASSERT_EQ(pb->post_recv(2, 2, r2.data(), r2.size(), 2), ODL_OK);
    pump(2, 1);
    ASSERT_EQ(done_b.size(), 1u) << "the later message did not pass the early one";
    EXPECT_EQ(done_b[0].ctx, 2u);
    EXPECT_EQ(r2, small);
    ASSERT_EQ(pb->post_recv(2, 1, r1.data(), r1.size(), 1), ODL_OK);
    pump(2, 2);
    ASSERT_EQ(done_b.size(), 2u);
    EXPECT_EQ(r1, big);
    EXPECT_EQ(done_a.size(), 2u);
    EXPECT_EQ(a->rndv().sent, 1u);
    EXPECT_EQ(b->rndv().resends, 1u);
    EXPECT_EQ(b->rndv().copied, 0u);
}

TEST_F(Rndv, CancelOfAWaitingSendFreesTheBufferAndTheCopyStillArrives) {
    make();
    auto tx = pattern(1 << 20, 7);
    const auto orig = tx;
    ASSERT_EQ(pa->post_send(0, 1, tx.data(), tx.size(), 1), ODL_OK);
    odl_completion c[4];
    ASSERT_EQ(pa->poll(c, 4), 0u);  // the RNDV leaves; b has not seen it
    ASSERT_EQ(a->rndv().sent, 1u);
    ASSERT_EQ(pa->cancel(0, 1), ODL_OK);
    std::fill(tx.begin(), tx.end(), 0x5a);  // the caller owns it again
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(pb->post_recv(0, 1, rx.data(), rx.size(), 9), ODL_OK);
    pump(1, 1);
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_OK);
    EXPECT_EQ(rx, orig) << "the receiver used the reused buffer";
    EXPECT_EQ(b->rndv().resends, 1u) << "the revoked cookie was not noticed";
    EXPECT_EQ(b->rndv().copied, 0u);
    ASSERT_EQ(done_a.size(), 1u);
    EXPECT_EQ(done_a[0].status, ODL_ERR_CANCELED);
    // The stream goes on.
    auto next = pattern(100000, 8);
    ASSERT_EQ(pb->post_recv(0, 1, rx.data(), rx.size(), 10), ODL_OK);
    ASSERT_EQ(pa->post_send(0, 1, next.data(), next.size(), 2), ODL_OK);
    pump(2, 2);
    ASSERT_EQ(done_b.size(), 2u);
    EXPECT_EQ(done_b[1].status, ODL_OK);
    EXPECT_TRUE(std::equal(next.begin(), next.end(), rx.begin()));
}

TEST_F(Rndv, DiscardSelectionDropsAnArrivingRendezvous) {
    make();
    auto tx = pattern(1 << 20, 9);
    ASSERT_EQ(pb->discard(3, 77, 0xffffffffu, 0), ODL_OK);
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(pb->post_recv(3, ODL_TAG_ANY, rx.data(), rx.size(), 5), ODL_OK);
    ASSERT_EQ(pa->post_send(3, 77, tx.data(), tx.size(), 1), ODL_OK);
    ASSERT_EQ(pa->post_send(3, 78, tx.data(), tx.size(), 2), ODL_OK);
    pump(2, 1);
    ASSERT_EQ(done_a.size(), 2u);
    EXPECT_EQ(done_a[0].status, ODL_OK);
    ASSERT_EQ(done_b.size(), 1u) << "the selected message was delivered";
    EXPECT_EQ(done_b[0].tag, 78u);
    EXPECT_EQ(rx, tx);
    EXPECT_EQ(a->rndv().sent, 2u);
    EXPECT_EQ(b->rndv().copied, 1u);
}

TEST_F(Rndv, SplitCopiesAreIntactAtOddSizesAndSplits) {
    const std::vector<const char*> pcts = {"1", "37", "50", "99", "100"};
    const std::vector<size_t> sizes = {kMin, kMin + 1, kMin + 4095, kMin + 4097, (1 << 20) - 1, (2 << 20) + 333};
    for (const char* pct : pcts) {
        SCOPED_TRACE(pct);
        scoped_env split("ODL_LOOPBACK_RNDV_SPLIT", pct);
        done_a.clear();
        done_b.clear();
        make();
        std::vector<std::vector<unsigned char>> tx, rx;
        for (size_t i = 0; i < sizes.size(); ++i) {
            tx.push_back(pattern(sizes[i], unsigned(i + 11)));
            rx.emplace_back(sizes[i] + 4096, 0xee);
            ASSERT_EQ(pb->post_recv(2, ODL_TAG_ANY, rx[i].data(), rx[i].size(), i), ODL_OK);
            ASSERT_EQ(pa->post_send(2, 5, tx[i].data(), tx[i].size(), i), ODL_OK);
        }
        pump(sizes.size(), sizes.size());
        ASSERT_EQ(done_b.size(), sizes.size());
        for (size_t i = 0; i < sizes.size(); ++i) {
            EXPECT_EQ(done_b[i].status, ODL_OK);
            EXPECT_TRUE(std::equal(tx[i].begin(), tx[i].end(), rx[i].begin())) << "size " << sizes[i];
            EXPECT_TRUE(std::all_of(rx[i].begin() + long(sizes[i]), rx[i].end(), [](unsigned char c) { return c == 0xee; }))
                << "wrote past the message, size " << sizes[i];
        }
        EXPECT_EQ(b->rndv().copied, sizes.size());
        if (std::string(pct) == "100") {
            EXPECT_FALSE(b->rndv().split);
            EXPECT_EQ(a->rndv().wrote, 0u);
        } else {
            EXPECT_EQ(b->rndv().splits, a->rndv().wrote);
            EXPECT_GT(a->rndv().wrote, 0u);
        }
    }
}

TEST_F(Rndv, SplitIntoAShortBufferTruncates) {
    make();
    auto tx = pattern(1 << 20, 12);
    std::vector<unsigned char> rx(kMin + 5000 + 64, 0xee);
    ASSERT_EQ(pb->post_recv(0, 1, rx.data(), kMin + 5000, 1), ODL_OK);
    ASSERT_EQ(pa->post_send(0, 1, tx.data(), tx.size(), 1), ODL_OK);
    pump(1, 1);
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_TRUNCATED);
    EXPECT_TRUE(std::equal(rx.begin(), rx.begin() + long(kMin + 5000), tx.begin()));
    EXPECT_EQ(rx[kMin + 5000], 0xee) << "wrote past the receive";
    EXPECT_EQ(a->rndv().wrote, 1u);
}

TEST_F(Rndv, CancelOfASplitReceiveWaitsForTheWrite) {
    make();
    auto tx = pattern(1 << 20, 13);
    std::vector<unsigned char> rx(tx.size(), 0);
    ASSERT_EQ(pb->post_recv(0, 1, rx.data(), rx.size(), 7), ODL_OK);
    ASSERT_EQ(pa->post_send(0, 1, tx.data(), tx.size(), 1), ODL_OK);
    odl_completion c[4];
    ASSERT_EQ(pa->poll(c, 4), 0u);  // RNDV out
    ASSERT_EQ(pb->poll(c, 4), 0u);  // SPLIT out, b's half copied
    ASSERT_EQ(b->rndv().splits, 1u);
    ASSERT_EQ(pb->cancel(0, 7), ODL_OK);
    // Not yet: a has not written its half.
    EXPECT_EQ(pb->poll(c, 4), 0u) << "canceled while the peer may still write";
    pump(1, 1);
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_CANCELED);
    EXPECT_EQ(a->rndv().wrote, 1u);
    ASSERT_EQ(done_a.size(), 1u);
    EXPECT_EQ(done_a[0].status, ODL_OK);  // dropped by the receiver: done
    EXPECT_EQ(pb->cancel(0, 7), ODL_ERR_INVAL) << "canceled twice";
    // The stream goes on.
    std::fill(rx.begin(), rx.end(), 0);
    ASSERT_EQ(pb->post_recv(0, 1, rx.data(), rx.size(), 8), ODL_OK);
    ASSERT_EQ(pa->post_send(0, 1, tx.data(), tx.size(), 2), ODL_OK);
    pump(2, 2);
    ASSERT_EQ(done_b.size(), 2u);
    EXPECT_EQ(done_b[1].status, ODL_OK);
    EXPECT_EQ(rx, tx);
}

// --- A hand-driven peer: forged RNDV frames against one engine. ---

using odl::test::peer_frame;

struct HandRndv : ::testing::Test {
    uint32_t peer_features = ODL_FEAT_RNDV;  // the hand-driven peer's HELLO
    odl::test::mem_link_pair links;
    std::unique_ptr<engine> b;
    std::vector<odl_completion> done;
    uint32_t seq = 0;

    void SetUp() override {
        static const char probe = 'p';
        SKIP_WITHOUT_CMA(getpid(), &probe);
        open_config c = config();
        c.rndv_min_bytes = kMin;
        c.rndv_peer_pid = [] { return uint32_t(getpid()); };  // the "peer" is this process
        b = std::make_unique<engine>(std::move(links.b), c);
        links.inject(0, odl::test::hello_frame(odl::test::peer_hello(peer_features, ODL_PROTO_VERSION_MINOR, 0, 16 << 20)));
        poll(5);
        ASSERT_EQ(b->link_state(), uint32_t(ODL_LINK_UP)) << b->failure();
        ASSERT_TRUE(b->rndv().rx);
        links.state->q[1].frames.clear();  // b's HELLO
    }
    void poll(int rounds) {
        for (int i = 0; i < rounds; ++i) {
            odl_completion c[16];
            const size_t n = b->poll(c, 16);
            done.insert(done.end(), c, c + n);
        }
    }
    void rndv(uint32_t tag, uint64_t addr, uint32_t len, const uint64_t* cookie_word, uint64_t cookie) {
        odl_rndv r{};
        r.addr = odl_cpu_le64(addr);
        r.cookie_addr = odl_cpu_le64(uint64_t(reinterpret_cast<uintptr_t>(cookie_word)));
        r.cookie = odl_cpu_le64(cookie);
        odl_frame_info fi{};
        fi.type = ODL_FRAME_RNDV;
        fi.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM;
        fi.seq = seq++;
        fi.tag = tag;
        fi.msg_len = len;
        fi.len = sizeof(r);
        links.inject(0, peer_frame(fi, &r));
    }
    /// The message as DATA frames, as a peer answering RESEND sends it.
    void data(uint32_t tag, const std::vector<unsigned char>& m) {
        for (size_t off = 0; off < m.size() || off == 0;) {
            const size_t n = std::min<size_t>(ODL_FRAME_MAX_PAYLOAD, m.size() - off);
            odl_frame_info fi{};
            fi.type = ODL_FRAME_DATA;
            fi.flags = uint8_t((off == 0 ? ODL_FRAME_F_SOM : 0) | (off + n == m.size() ? ODL_FRAME_F_EOM : 0));
            fi.seq = seq++;
            fi.tag = tag;
            fi.msg_len = uint32_t(m.size());
            fi.offset = uint32_t(off);
            fi.len = uint16_t(n);
            links.inject(0, peer_frame(fi, m.data() + off));
            off += n;
            if (m.empty()) break;
        }
    }
    /// RNDV_DONE answers b sent, as (cookie, status).
    std::vector<std::pair<uint64_t, uint32_t>> answers() {
        std::vector<std::pair<uint64_t, uint32_t>> out;
        for (const auto& f : links.state->q[1].frames) {
            odl_frame_info fi{};
            if (odl_frame_decode(f.data(), f.size(), 4, &fi) != ODL_FRAME_OK || fi.type != ODL_FRAME_RNDV_DONE) continue;
            odl_rndv_done d;
            std::memcpy(&d, f.data() + ODL_FRAME_HDR_BYTES, sizeof(d));
            out.emplace_back(odl_le64(d.cookie), odl_le32(d.status));
        }
        return out;
    }
};

/// The same with a peer that offers split rendezvous: b, receiving, asks it
/// to write part of each message (RNDV_SPLIT), and answers such requests
/// when it sends.
struct HandSplit : HandRndv {
    HandSplit() { peer_features = ODL_FEAT_RNDV | ODL_FEAT_RNDV_SPLIT; }
    /// Frames of @type b sent, payloads only.
    template <typename T>
    std::vector<T> sent(uint8_t type) {
        std::vector<T> out;
        for (const auto& f : links.state->q[1].frames) {
            odl_frame_info fi{};
            if (odl_frame_decode(f.data(), f.size(), 4, &fi) != ODL_FRAME_OK || fi.type != type) continue;
            T t;
            std::memcpy(&t, f.data() + ODL_FRAME_HDR_BYTES, sizeof(t));
            out.push_back(t);
        }
        return out;
    }
    void wrote(uint64_t cookie, uint32_t status, uint16_t stream = 0) {
        odl_rndv_wrote w{};
        w.cookie = odl_cpu_le64(cookie);
        w.status = odl_cpu_le32(status);
        odl_frame_info fi{};
        fi.type = ODL_FRAME_RNDV_WROTE;
        fi.stream = stream;
        fi.len = sizeof(w);
        links.inject(0, peer_frame(fi, &w));
    }
    void split(uint64_t cookie, uint64_t addr, uint32_t at, uint32_t end) {
        odl_rndv_split r{};
        r.cookie = odl_cpu_le64(cookie);
        r.addr = odl_cpu_le64(addr);
        r.split = odl_cpu_le32(at);
        r.end = odl_cpu_le32(end);
        odl_frame_info fi{};
        fi.type = ODL_FRAME_RNDV_SPLIT;
        fi.len = sizeof(r);
        links.inject(0, peer_frame(fi, &r));
    }
};

TEST_F(HandSplit, ReceiverAsksForTheSecondHalfAndWaitsForIt) {
    auto m = pattern(300000, 21);
    uint64_t word = 0x51;
    std::vector<unsigned char> rx(m.size() + 16, 0xee);
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    rndv(3, uint64_t(reinterpret_cast<uintptr_t>(m.data())), uint32_t(m.size()), &word, 0x51);
    poll(3);
    EXPECT_TRUE(done.empty()) << "completed before the peer wrote its part";
    const auto sp = sent<odl_rndv_split>(ODL_FRAME_RNDV_SPLIT);
    ASSERT_EQ(sp.size(), 1u);
    EXPECT_EQ(odl_le64(sp[0].cookie), 0x51u);
    EXPECT_EQ(odl_le64(sp[0].addr), uint64_t(reinterpret_cast<uintptr_t>(rx.data())));
    const uint32_t at = odl_le32(sp[0].split), end = odl_le32(sp[0].end);
    EXPECT_EQ(end, m.size());
    EXPECT_EQ(at, 147456u) << "half, rounded down to a page";
    EXPECT_TRUE(std::equal(m.begin(), m.begin() + at, rx.begin())) << "b's own part";
    EXPECT_EQ(rx[at], 0xee) << "b copied the peer's part";
    std::memcpy(rx.data() + at, m.data() + at, end - at);  // the peer's write
    wrote(0x51, ODL_RNDV_WROTE_OK);
    poll(3);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, ODL_OK);
    EXPECT_TRUE(std::equal(m.begin(), m.end(), rx.begin()));
    ASSERT_EQ(answers().size(), 1u);
    EXPECT_EQ(answers()[0], std::make_pair(uint64_t(0x51), uint32_t(ODL_RNDV_COPIED)));
}

TEST_F(HandSplit, FailedWriteIsCopiedByTheReceiverAndSplitStops) {
    auto m = pattern(300000, 22);
    uint64_t word = 0x52;
    std::vector<unsigned char> rx(m.size(), 0xee);
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    rndv(3, uint64_t(reinterpret_cast<uintptr_t>(m.data())), uint32_t(m.size()), &word, 0x52);
    poll(3);
    ASSERT_EQ(sent<odl_rndv_split>(ODL_FRAME_RNDV_SPLIT).size(), 1u);
    wrote(0x52, ODL_RNDV_WROTE_FAILED);  // wrote nothing
    poll(3);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, ODL_OK);
    EXPECT_EQ(rx, m);
    EXPECT_EQ(b->rndv().write_fails, 1u);
    EXPECT_FALSE(b->rndv().split);
    ASSERT_EQ(answers().size(), 1u);
    EXPECT_EQ(answers()[0].second, uint32_t(ODL_RNDV_COPIED));
    // The next one is copied whole, no SPLIT.
    std::fill(rx.begin(), rx.end(), 0);
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 2), ODL_OK);
    word = 0x53;
    rndv(3, uint64_t(reinterpret_cast<uintptr_t>(m.data())), uint32_t(m.size()), &word, 0x53);
    poll(3);
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[1].status, ODL_OK);
    EXPECT_EQ(rx, m);
    EXPECT_EQ(sent<odl_rndv_split>(ODL_FRAME_RNDV_SPLIT).size(), 1u);
}

TEST_F(HandSplit, RevokedCookieAfterTheSplitAsksForFrames) {
    auto m = pattern(300000, 23);
    uint64_t word = 0x54;
    std::vector<unsigned char> rx(m.size(), 0xee);
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    rndv(3, uint64_t(reinterpret_cast<uintptr_t>(m.data())), uint32_t(m.size()), &word, 0x54);
    poll(3);
    word = 0;  // the sender's cancel
    wrote(0x54, ODL_RNDV_WROTE_OK);
    poll(3);
    EXPECT_TRUE(done.empty());
    ASSERT_EQ(answers().size(), 1u);
    EXPECT_EQ(answers()[0].second, uint32_t(ODL_RNDV_RESEND));
    data(3, m);
    poll(60);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, ODL_OK);
    EXPECT_EQ(rx, m);
}

TEST_F(HandSplit, OwnCopyFailureStillWaitsForTheWriteThenAsksForFrames) {
    uint64_t word = 0x55;
    std::vector<unsigned char> rx(300000, 0xee);
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    rndv(3, 16, uint32_t(rx.size()), &word, 0x55);  // page zero: EFAULT
    poll(3);
    ASSERT_EQ(sent<odl_rndv_split>(ODL_FRAME_RNDV_SPLIT).size(), 1u);
    EXPECT_TRUE(answers().empty()) << "answered before the peer's write ended";
    wrote(0x55, ODL_RNDV_WROTE_FAILED);
    poll(3);
    ASSERT_EQ(answers().size(), 1u);
    EXPECT_EQ(answers()[0].second, uint32_t(ODL_RNDV_RESEND));
    auto m = pattern(rx.size(), 24);
    data(3, m);
    poll(60);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, ODL_OK);
    EXPECT_EQ(rx, m);
}

TEST_F(HandSplit, LocalFailureHoldsTheReceiveUntilThePeerWrote) {
    auto m = pattern(300000, 25);
    uint64_t word = 0x56;
    std::vector<unsigned char> rx(m.size());
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    rndv(3, uint64_t(reinterpret_cast<uintptr_t>(m.data())), uint32_t(m.size()), &word, 0x56);
    poll(3);
    wrote(0x99, ODL_RNDV_WROTE_OK, 1);  // for no split of b's: protocol error
    poll(3);
    ASSERT_EQ(b->error_status(), ODL_ERR_PROTO);
    EXPECT_TRUE(done.empty()) << "buffer handed back while the peer may write into it";
    wrote(0x56, ODL_RNDV_WROTE_OK);
    poll(3);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].ctx, 1u);
    EXPECT_EQ(done[0].status, ODL_ERR_PROTO);
}

TEST_F(HandSplit, WroteForNoSplitIsRefused) {
    wrote(7, ODL_RNDV_WROTE_OK);
    poll(3);
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
}

TEST_F(HandSplit, SenderWritesTheAskedPartIntoThePeer) {
    auto m = pattern(kMin + 10000, 26);
    ASSERT_EQ(b->post_send(0, 4, m.data(), m.size(), 1), ODL_OK);
    poll(3);
    const auto r = sent<odl_rndv>(ODL_FRAME_RNDV);
    ASSERT_EQ(r.size(), 1u);
    const uint64_t cookie = odl_le64(r[0].cookie);
    std::vector<unsigned char> dst(m.size(), 0xee);
    const uint32_t at = 4096 * 3 + 1, end = uint32_t(m.size()) - 7;  // odd bounds, a short receive
    split(cookie, uint64_t(reinterpret_cast<uintptr_t>(dst.data())), at, end);
    poll(3);
    const auto w = sent<odl_rndv_wrote>(ODL_FRAME_RNDV_WROTE);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(odl_le64(w[0].cookie), cookie);
    EXPECT_EQ(odl_le32(w[0].status), uint32_t(ODL_RNDV_WROTE_OK));
    EXPECT_TRUE(std::all_of(dst.begin(), dst.begin() + at, [](unsigned char c) { return c == 0xee; }));
    EXPECT_TRUE(std::equal(m.begin() + at, m.begin() + end, dst.begin() + at));
    EXPECT_TRUE(std::all_of(dst.begin() + end, dst.end(), [](unsigned char c) { return c == 0xee; }));
    EXPECT_TRUE(done.empty()) << "the send completes on RNDV_DONE, not before";
    EXPECT_EQ(b->rndv().wrote, 1u);
    // A second SPLIT for the same rendezvous is refused.
    split(cookie, uint64_t(reinterpret_cast<uintptr_t>(dst.data())), at, end);
    poll(3);
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
}

TEST_F(HandSplit, SenderAnswersAFailedWrite) {
    auto m = pattern(kMin, 27);
    ASSERT_EQ(b->post_send(0, 4, m.data(), m.size(), 1), ODL_OK);
    poll(3);
    const auto r = sent<odl_rndv>(ODL_FRAME_RNDV);
    ASSERT_EQ(r.size(), 1u);
    split(odl_le64(r[0].cookie), 16, 0, uint32_t(m.size()));  // page zero: EFAULT
    poll(3);
    const auto w = sent<odl_rndv_wrote>(ODL_FRAME_RNDV_WROTE);
    ASSERT_EQ(w.size(), 1u);
    EXPECT_EQ(odl_le32(w[0].status), uint32_t(ODL_RNDV_WROTE_FAILED));
    EXPECT_EQ(b->error_status(), ODL_OK) << b->failure();
}

TEST_F(HandSplit, BadSplitsAreRefused) {
    auto m = pattern(kMin, 28);
    std::vector<unsigned char> dst(m.size(), 0xee);
    const uint64_t addr = uint64_t(reinterpret_cast<uintptr_t>(dst.data()));
    struct bad {
        uint64_t cookie_delta;
        uint32_t at, end;
    };
    for (const bad& x : {bad{1, 0, 10}, bad{0, 20, 10}, bad{0, 0, uint32_t(m.size()) + 1}}) {
        SCOPED_TRACE(std::to_string(x.at) + " " + std::to_string(x.end));
        links = odl::test::mem_link_pair{};  // a fresh engine on a fresh link
        done.clear();
        seq = 0;
        SetUp();
        ASSERT_EQ(b->post_send(0, 4, m.data(), m.size(), 1), ODL_OK);
        poll(3);
        const uint64_t c = odl_le64(sent<odl_rndv>(ODL_FRAME_RNDV).at(0).cookie);
        split(c + x.cookie_delta, addr, x.at, x.end);
        poll(3);
        EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
        EXPECT_TRUE(sent<odl_rndv_wrote>(ODL_FRAME_RNDV_WROTE).empty()) << "answered a bad split";
        EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](unsigned char v) { return v == 0xee; })) << "wrote for a bad split";
    }
}

TEST_F(HandRndv, CopiesAForgedReferenceWhenTheCookieStands) {
    auto m = pattern(200000, 1);
    uint64_t word = 0x1234;
    std::vector<unsigned char> rx(m.size());
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    rndv(3, uint64_t(reinterpret_cast<uintptr_t>(m.data())), uint32_t(m.size()), &word, 0x1234);
    poll(3);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, ODL_OK);
    EXPECT_EQ(rx, m);
    ASSERT_EQ(answers().size(), 1u);
    EXPECT_EQ(answers()[0], std::make_pair(uint64_t(0x1234), uint32_t(ODL_RNDV_COPIED)));
}

TEST_F(HandRndv, BadAddressAsksForFramesAndTheResendLandsInTheSameBuffer) {
    auto m = pattern(150000, 2);
    uint64_t word = 77;
    std::vector<unsigned char> rx(m.size() + 8, 0xee);
    ASSERT_EQ(b->post_recv(0, ODL_TAG_ANY, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(b->post_recv(0, ODL_TAG_ANY, rx.data(), rx.size(), 2), ODL_OK);
    rndv(3, 16, uint32_t(m.size()), &word, 77);  // page zero: EFAULT
    poll(3);
    EXPECT_TRUE(done.empty());
    ASSERT_EQ(answers().size(), 1u);
    EXPECT_EQ(answers()[0].second, uint32_t(ODL_RNDV_RESEND));
    EXPECT_EQ(b->rndv().resends, 1u);
    data(3, m);
    poll(60);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].ctx, 1u) << "the resend went to another receive";
    EXPECT_EQ(done[0].status, ODL_OK);
    EXPECT_TRUE(std::equal(m.begin(), m.end(), rx.begin()));
    EXPECT_EQ(b->error_status(), ODL_OK) << b->failure();
}

TEST_F(HandRndv, UnmatchedRndvComesBackAsAnOrdinaryMessage) {
    auto m = pattern(120000, 6);
    uint64_t word = 5;
    rndv(9, uint64_t(reinterpret_cast<uintptr_t>(m.data())), uint32_t(m.size()), &word, 5);
    poll(3);
    ASSERT_EQ(answers().size(), 1u);
    EXPECT_EQ(answers()[0], std::make_pair(uint64_t(5), uint32_t(ODL_RNDV_RESEND)));
    data(9, m);
    poll(60);
    EXPECT_TRUE(done.empty());
    std::vector<unsigned char> rx(m.size());
    ASSERT_EQ(b->post_recv(0, 9, rx.data(), rx.size(), 1), ODL_OK);
    poll(3);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, ODL_OK);
    EXPECT_EQ(rx, m);
    EXPECT_EQ(b->error_status(), ODL_OK) << b->failure();
}

TEST_F(HandRndv, RevokedCookieAsksForFrames) {
    auto m = pattern(100000, 3);
    uint64_t word = 0;  // canceled by the sender
    std::vector<unsigned char> rx(m.size());
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    rndv(3, uint64_t(reinterpret_cast<uintptr_t>(m.data())), uint32_t(m.size()), &word, 99);
    poll(3);
    EXPECT_TRUE(done.empty()) << "completed from a revoked reference";
    ASSERT_EQ(answers().size(), 1u);
    EXPECT_EQ(answers()[0].second, uint32_t(ODL_RNDV_RESEND));
}

TEST_F(HandRndv, ResendMustBeTheSameMessage) {
    uint64_t word = 1;
    std::vector<unsigned char> rx(100000);
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    rndv(3, 16, 100000, &word, 1);
    poll(3);
    data(3, pattern(5000, 1));  // another length
    poll(3);
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, ODL_ERR_PROTO);
}

TEST_F(HandRndv, CanceledReceiveDropsTheResend) {
    auto m = pattern(100000, 4);
    uint64_t word = 1;
    std::vector<unsigned char> rx(m.size(), 0xee), rx2(10);
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    rndv(3, 16, uint32_t(m.size()), &word, 1);
    poll(3);
    ASSERT_EQ(b->cancel(0, 1), ODL_OK);
    poll(1);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, ODL_ERR_CANCELED);
    data(3, m);
    ASSERT_EQ(b->post_recv(0, ODL_TAG_ANY, rx2.data(), rx2.size(), 2), ODL_OK);
    data(4, pattern(10, 5));
    poll(60);
    ASSERT_EQ(done.size(), 2u);
    EXPECT_EQ(done[1].ctx, 2u);
    EXPECT_EQ(done[1].tag, 4u);
    EXPECT_EQ(rx, std::vector<unsigned char>(m.size(), 0xee)) << "a canceled buffer was written";
}

TEST_F(HandRndv, RndvWithoutNegotiationIsRefused) {
    odl::test::mem_link_pair l2;
    engine e(std::move(l2.b), config());  // offers no rendezvous
    odl_hello h{};
    h.magic = odl_cpu_le32(ODL_FRAME_MAGIC);
    h.version_major = odl_cpu_le16(ODL_PROTO_VERSION_MAJOR);
    h.features = odl_cpu_le32(ODL_FEAT_RNDV);
    h.max_payload = odl_cpu_le16(ODL_FRAME_MAX_PAYLOAD);
    h.streams = odl_cpu_le16(4);
    h.window = odl_cpu_le32(64);
    h.max_msg_bytes = odl_cpu_le64(1 << 20);
    odl_frame_info fi{};
    fi.type = ODL_FRAME_HELLO;
    fi.len = sizeof(h);
    l2.inject(0, peer_frame(fi, &h));
    odl_rndv r{};
    fi = {};
    fi.type = ODL_FRAME_RNDV;
    fi.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM;
    fi.msg_len = 100000;
    fi.len = sizeof(r);
    l2.inject(0, peer_frame(fi, &r));
    odl_completion c[4];
    for (int i = 0; i < 5; ++i) e.poll(c, 4);
    EXPECT_EQ(e.error_status(), ODL_ERR_PROTO);
    EXPECT_FALSE(e.rndv().rx);
}

// --- Two processes: the real cross-process copy, and a peer that dies. ---

/// Devices allow the 4 MiB messages below.
class RndvProcess : public odl::test::two_process {
protected:
    static odl_dev* open_dev(uint32_t index) { return two_process::open_dev(index, 8 << 20); }
};

TEST_F(RndvProcess, ChildSendsLargeMessagesByReference) {
    const std::vector<size_t> sizes = {kMin, 1 << 20, (4 << 20) + 5};
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        odl_dev* d = open_dev(7);
        if (!d) _exit(2);
        // Wait for the parent's receives: an RNDV that finds none goes as frames.
        char go = 0;
        odl_completion g;
        size_t gn = 0;
        if (odl_post_recv(d, 0, 1000, &go, 1, nullptr, 99) != ODL_OK) _exit(6);
        if (odl_wait(d, &g, 1, &gn, 5'000'000'000ull) != ODL_OK || g.status != ODL_OK) _exit(7);
        for (size_t i = 0; i < sizes.size(); ++i) {
            auto m = pattern(sizes[i], unsigned(i + 40));
            odl_completion c;
            size_t n = 0;
            if (odl_post_send(d, 0, uint32_t(i), m.data(), m.size(), nullptr, i) != ODL_OK) _exit(3);
            if (odl_wait(d, &c, 1, &n, 5'000'000'000ull) != ODL_OK || c.status != ODL_OK) _exit(4);
        }
        odl_stats st{};
        st.struct_size = sizeof(st);
        odl_get_stats(d, &st);
        const bool by_ref = st.tx_frames == sizes.size();
        odl_close(d);
        _exit(by_ref ? 0 : 5);
    }
    static const char probe = 'p';  // same address in the child
    SKIP_WITHOUT_CMA(child, &probe);
    odl_dev* d = open_dev(7);
    ASSERT_NE(d, nullptr) << odl_last_error();
    std::vector<std::vector<unsigned char>> rxs;
    for (size_t i = 0; i < sizes.size(); ++i) {
        rxs.emplace_back(sizes[i] + 1, 0xee);
        ASSERT_EQ(odl_post_recv(d, 0, uint32_t(i), rxs[i].data(), rxs[i].size(), nullptr, i), ODL_OK);
    }
    const char go = 'g';
    ASSERT_EQ(odl_post_send(d, 0, 1000, &go, 1, nullptr, 100), ODL_OK);
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<unsigned char>& rx = rxs[i];
        odl_completion c;
        size_t n = 0;
        do {
            ASSERT_EQ(odl_wait(d, &c, 1, &n, 5'000'000'000ull), ODL_OK);
        } while (c.op == ODL_OP_SEND);  // the go message
        ASSERT_EQ(c.status, ODL_OK);
        ASSERT_EQ(c.ctx, i);
        ASSERT_EQ(c.len, sizes[i]);
        const auto want = pattern(sizes[i], unsigned(i + 40));
        EXPECT_TRUE(std::equal(want.begin(), want.end(), rx.begin())) << "size " << sizes[i];
        EXPECT_EQ(rx[sizes[i]], 0xee);
    }
    int status = 0;
    waitpid(child, &status, 0);
    child = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status << " (5: frames used)";
    odl_close(d);
}

/// Child: send a 2 MiB message (its RNDV) on device @d, poll until the RNDV
/// frame has left, tell the parent through @notify_fd, then wait to be killed.
[[noreturn]] void send_rndv_then_stall(odl_dev* d, unsigned seed, int notify_fd) {
    if (!d) _exit(2);
    auto m = pattern(2 << 20, seed);
    if (odl_post_send(d, 0, 1, m.data(), m.size(), nullptr, 1) != ODL_OK) _exit(3);
    for (int i = 0; i < 1000000; ++i) {
        odl_completion c;
        size_t n = 0;
        odl_poll(d, &c, 1, &n);
        odl_stats st{};
        st.struct_size = sizeof(st);
        odl_get_stats(d, &st);
        if (st.tx_frames >= 1) break;
    }
    const char x = 'x';
    if (write(notify_fd, &x, 1) != 1) _exit(4);
    pause();
    _exit(0);
}

TEST_F(RndvProcess, PeerThatDiesBeforeTheCopyGivesAnErrorNotACrash) {
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        close(pipefd[0]);
        // The RNDV leaves; the child then waits to be killed uncleanly.
        send_rndv_then_stall(open_dev(8), 1, pipefd[1]);
    }
    close(pipefd[1]);
    odl_dev* d = open_dev(8);
    ASSERT_NE(d, nullptr) << odl_last_error();
    // The RNDV waits in the ring (we do not poll) while the peer dies; then
    // the receive is posted and the copy from the dead peer is tried.
    std::vector<unsigned char> rx(2 << 20);
    ASSERT_EQ(odl_post_recv(d, 0, 1, rx.data(), rx.size(), nullptr, 5), ODL_OK);
    char x = 0;
    ASSERT_EQ(read(pipefd[0], &x, 1), 1);
    close(pipefd[0]);
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);  // reaped: its pid no longer names it
    child = -1;
    odl_completion c;
    size_t n = 0;
    ASSERT_EQ(odl_wait(d, &c, 1, &n, 5'000'000'000ull), ODL_OK);
    EXPECT_EQ(c.ctx, 5u);
    EXPECT_EQ(c.status, ODL_ERR_PEER_LOST);
    odl_close(d);
}

TEST_F(RndvProcess, PeerKilledMidSplitGivesAnErrorNotACrash) {
    int pipefd[2];
    ASSERT_EQ(pipe(pipefd), 0);
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        close(pipefd[0]);
        // The RNDV leaves, then the child never polls again: the SPLIT goes unanswered.
        send_rndv_then_stall(open_dev(9), 3, pipefd[1]);
    }
    close(pipefd[1]);
    static const char probe = 'p';
    SKIP_WITHOUT_CMA(child, &probe);
    odl_dev* d = open_dev(9);
    ASSERT_NE(d, nullptr) << odl_last_error();
    std::vector<unsigned char> rx(2 << 20);
    ASSERT_EQ(odl_post_recv(d, 0, 1, rx.data(), rx.size(), nullptr, 5), ODL_OK);
    char x = 0;
    ASSERT_EQ(read(pipefd[0], &x, 1), 1);
    close(pipefd[0]);
    // The RNDV is handled: SPLIT sent, our half copied, the receive held.
    odl_completion c;
    size_t n = 0;
    EXPECT_EQ(odl_wait(d, &c, 1, &n, 200'000'000ull), ODL_ERR_TIMEOUT);
    EXPECT_EQ(n, 0u) << "completed before the peer wrote its part";
    kill(child, SIGKILL);
    waitpid(child, nullptr, 0);
    child = -1;
    ASSERT_EQ(odl_wait(d, &c, 1, &n, 5'000'000'000ull), ODL_OK);
    EXPECT_EQ(c.ctx, 5u);
    EXPECT_EQ(c.status, ODL_ERR_PEER_LOST);
    odl_close(d);
}

}  // namespace
