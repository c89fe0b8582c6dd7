// SPDX-License-Identifier: MIT
// The engine's send thread (userlib/src/tx_copier.cpp, engine.cpp) over a
// real loopback link: messages both ways at once arrive whole and in order,
// checksums are taken over what the thread copied, a canceled send's buffer
// is the caller's the moment cancel returns, and a peer that goes away
// mid-stream ends every operation without a hang.
#include <gtest/gtest.h>

#include <dirent.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine.h"
#include "engine_test_data.h"
#include "link_loopback.h"

namespace {

using odl::engine;
using odl::test::pattern;

/// Threads of this process named as the send thread names itself.
int tx_threads() {
    int n = 0;
    DIR* d = opendir("/proc/self/task");
    if (!d) return -1;
    while (const dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
        std::string comm;
        std::getline(f, comm);
        if (comm.rfind("odl-tx-", 0) == 0) ++n;
    }
    closedir(d);
    return n;
}

class TxThread : public ::testing::Test {
protected:
    void open(bool tx_thread = true, uint32_t flags = 0) {
        auto [la, lb] = odl::open_loopback_pair();
        odl::open_config c = odl::test::engine_config(2, 512);
        c.tx_thread = tx_thread;
        c.flags = flags;
        a = std::make_unique<engine>(std::move(la), c);
        b = std::make_unique<engine>(std::move(lb), c);
        for (int i = 0; i < 10000 && (a->link_state() != ODL_LINK_UP || b->link_state() != ODL_LINK_UP); ++i) step();
        ASSERT_EQ(a->link_state(), uint32_t(ODL_LINK_UP));
        ASSERT_EQ(b->link_state(), uint32_t(ODL_LINK_UP));
    }
    void TearDown() override {
        if (a) a->shutdown();
        if (b) b->shutdown();
    }
    /// One poll of each end; completions by ctx, each shown to on_done.
    void step() {
        odl_completion c[32];
        for (engine* e : {a.get(), b.get()}) {
            if (!e) continue;
            const size_t n = e->poll(c, 32);
            for (size_t i = 0; i < n; ++i) {
                done[c[i].ctx] = c[i];
                if (on_done) on_done(c[i]);
            }
        }
    }
    /// Steps until every ctx in @want completed (bounded).
    void run_until(const std::vector<uint64_t>& want) {
        for (int i = 0; i < 2'000'000; ++i) {
            bool all = true;
            for (uint64_t w : want) all = all && done.count(w);
            if (all) return;
            step();
        }
        FAIL() << "operations did not complete";
    }

    std::unique_ptr<engine> a, b;
    std::map<uint64_t, odl_completion> done;
    std::function<void(const odl_completion&)> on_done;
};

// Both ends send at once, so each poll takes frames in and the sends go
// through the thread; every byte and every order must survive it. A send's
// buffer is scribbled over the moment it completes: a completion that came
// before the thread had copied its frames shows as a damaged message.
TEST_F(TxThread, BothWaysAtOnceArriveWholeAndInOrder) {
    ASSERT_NO_FATAL_FAILURE(open());
    ASSERT_TRUE(a->tx_thread().on);
    ASSERT_TRUE(b->tx_thread().on);
    EXPECT_EQ(tx_threads(), 2);
    const size_t P = ODL_FRAME_MAX_PAYLOAD;
    const std::vector<size_t> sizes = {1 << 20, 100, 3 * P + 1, 1 << 20, P, 64 << 10, 1, (2 << 20) + 7, 1 << 20, 4097};
    std::vector<std::vector<unsigned char>> tx_a, tx_b, rx_a, rx_b;
    for (size_t i = 0; i < sizes.size(); ++i) {
        tx_a.push_back(pattern(sizes[i], unsigned(i)));
        tx_b.push_back(pattern(sizes[i], unsigned(100 + i)));
        rx_a.emplace_back(sizes[i], 0xee);
        rx_b.emplace_back(sizes[i], 0xee);
    }
    const auto sent_a = tx_a, sent_b = tx_b;
    on_done = [&](const odl_completion& c) {
        if (c.op != ODL_OP_SEND) return;
        auto& buf = c.ctx >= 4000 ? tx_b[c.ctx - 4000] : tx_a[c.ctx - 3000];
        std::fill(buf.begin(), buf.end(), 0x5a);
    };
    std::vector<uint64_t> want;
    for (size_t i = 0; i < sizes.size(); ++i) {
        ASSERT_EQ(b->post_recv(0, 7, rx_b[i].data(), rx_b[i].size(), 1000 + i), ODL_OK);
        ASSERT_EQ(a->post_recv(0, 7, rx_a[i].data(), rx_a[i].size(), 2000 + i), ODL_OK);
        ASSERT_EQ(a->post_send(0, 7, tx_a[i].data(), tx_a[i].size(), 3000 + i), ODL_OK);
        ASSERT_EQ(b->post_send(0, 7, tx_b[i].data(), tx_b[i].size(), 4000 + i), ODL_OK);
        for (uint64_t base : {1000, 2000, 3000, 4000}) want.push_back(base + i);
    }
    ASSERT_NO_FATAL_FAILURE(run_until(want));
    for (size_t i = 0; i < sizes.size(); ++i) {
        EXPECT_EQ(done[1000 + i].status, ODL_OK) << i;
        EXPECT_EQ(done[2000 + i].status, ODL_OK) << i;
        EXPECT_EQ(done[3000 + i].status, ODL_OK) << i;
        EXPECT_EQ(done[4000 + i].status, ODL_OK) << i;
        EXPECT_TRUE(rx_b[i] == sent_a[i]) << "a -> b, message " << i << " (" << sizes[i] << " bytes)";
        EXPECT_TRUE(rx_a[i] == sent_b[i]) << "b -> a, message " << i << " (" << sizes[i] << " bytes)";
    }
    // The thread did carry frames (not only the engine's own copy).
    EXPECT_GT(a->tx_thread().frames, 0u);
    EXPECT_GT(b->tx_thread().frames, 0u);
}

// The checksum must be taken over the bytes the thread copied: one taken
// before them, or over the wrong slot, fails the receiver's check.
TEST_F(TxThread, ChecksumsCoverWhatTheThreadCopied) {
    ASSERT_NO_FATAL_FAILURE(open(true, ODL_OPEN_CHECKSUM));
    const size_t n = 4 << 20;
    auto ta = pattern(n, 3), tb = pattern(n, 4);
    std::vector<unsigned char> ra(n), rb(n);
    ASSERT_EQ(b->post_recv(0, 1, rb.data(), n, 1), ODL_OK);
    ASSERT_EQ(a->post_recv(0, 1, ra.data(), n, 2), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, ta.data(), n, 3), ODL_OK);
    ASSERT_EQ(b->post_send(0, 1, tb.data(), n, 4), ODL_OK);
    ASSERT_NO_FATAL_FAILURE(run_until({1, 2, 3, 4}));
    EXPECT_EQ(done[1].status, ODL_OK);
    EXPECT_EQ(done[2].status, ODL_OK);
    EXPECT_TRUE(ra == tb);
    EXPECT_TRUE(rb == ta);
    odl_stats sa{}, sb{};
    a->stats(sa);
    b->stats(sb);
    EXPECT_EQ(sa.rx_csum_errors, 0u);
    EXPECT_EQ(sb.rx_csum_errors, 0u);
    EXPECT_GT(a->tx_thread().frames + b->tx_thread().frames, 0u);
}

// cancel() hands the buffer back: frames the thread has yet to copy must
// not read it afterwards. The caller scribbles over it at once; the peer
// still receives the message as it was.
TEST_F(TxThread, CanceledSendsBufferIsTheCallersAtOnce) {
    ASSERT_NO_FATAL_FAILURE(open());
    // b's message is the longer, so a keeps taking frames in (and sending
    // through the thread) until it cancels.
    const size_t n = 16 << 20, nb = 4 * n;
    for (unsigned round = 0; round < 4; ++round) {
        SCOPED_TRACE(round);
        done.clear();
        auto ta = pattern(n, 10 + round), tb = pattern(nb, 20 + round);
        const auto original = ta;
        std::vector<unsigned char> ra(nb), rb(n);
        ASSERT_EQ(b->post_recv(1, 2, rb.data(), n, 1), ODL_OK);
        ASSERT_EQ(a->post_recv(1, 2, ra.data(), nb, 2), ODL_OK);
        ASSERT_EQ(b->post_send(1, 2, tb.data(), nb, 4), ODL_OK);
        ASSERT_EQ(a->post_send(1, 2, ta.data(), n, 3), ODL_OK);
        // Until a's send is under way through the thread. Every other round
        // the thread is slowed down, so that frames of it surely wait for the
        // thread when cancel comes; the others run at full speed.
        const bool slow = round % 2 == 0;
        if (slow) a->tx_thread_test_delay(200);
        const uint64_t before = a->tx_thread().frames;
        const uint64_t want = before + (slow ? 16 : 64);
        for (int i = 0; i < 100000 && a->tx_thread().frames < want; ++i) step();
        ASSERT_GE(a->tx_thread().frames, want) << "the send never went through the thread";
        ASSERT_FALSE(done.count(3)) << "sent whole before it could be canceled";
        ASSERT_EQ(a->cancel(1, 3), ODL_OK);
        std::memset(ta.data(), 0x5a, n);
        a->tx_thread_test_delay(0);
        ASSERT_NO_FATAL_FAILURE(run_until({1, 2, 3, 4}));
        EXPECT_EQ(done[3].status, ODL_ERR_CANCELED);
        EXPECT_EQ(done[1].status, ODL_OK);
        EXPECT_TRUE(rb == original) << "the peer got bytes written after cancel returned";
        EXPECT_TRUE(ra == tb);
    }
}

// The peer goes mid-stream: everything pending ends with an error, at once,
// and closing after it neither hangs nor touches freed memory. The send's
// buffer is freed the moment its error completion comes (under the
// sanitizers a read by the thread after that is reported).
TEST_F(TxThread, PeerGoneMidStreamEndsEverything) {
    ASSERT_NO_FATAL_FAILURE(open());
    a->tx_thread_test_delay(20);  // frames still wait for the thread when b goes
    const size_t n = 32 << 20;
    auto ta = std::make_unique<std::vector<unsigned char>>(pattern(n, 5));
    auto tb = pattern(n, 6);
    std::vector<unsigned char> ra(n), rb(n);
    on_done = [&](const odl_completion& c) {
        if (c.ctx == 3) ta.reset();
    };
    ASSERT_EQ(b->post_recv(0, 3, rb.data(), n, 1), ODL_OK);
    ASSERT_EQ(a->post_recv(0, 3, ra.data(), n, 2), ODL_OK);
    ASSERT_EQ(a->post_send(0, 3, ta->data(), n, 3), ODL_OK);
    ASSERT_EQ(b->post_send(0, 3, tb.data(), n, 4), ODL_OK);
    for (int i = 0; i < 100000 && a->tx_thread().frames < 128; ++i) step();
    ASSERT_GE(a->tx_thread().frames, 128u);
    b.reset();  // no goodbye: gone
    ASSERT_NO_FATAL_FAILURE(run_until({2, 3}));
    EXPECT_NE(done[2].status, ODL_OK);
    EXPECT_NE(done[3].status, ODL_OK);
    EXPECT_NE(a->link_state(), uint32_t(ODL_LINK_UP));
}

// Asked for, but switched off: no thread, same results.
TEST(TxThreadConfig, OffMeansNoThread) {
    auto [la, lb] = odl::open_loopback_pair();
    odl::open_config c = odl::test::engine_config(1, 64);
    engine a(std::move(la), c), b(std::move(lb), c);
    EXPECT_FALSE(a.tx_thread().on);
    EXPECT_EQ(tx_threads(), 0);
}

}  // namespace
