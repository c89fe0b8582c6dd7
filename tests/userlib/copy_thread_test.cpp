// SPDX-License-Identifier: MIT
// The engine's copy threads (userlib/src/copy_thread.cpp, engine.cpp) over
// a real loopback link. Send thread: checksums are taken over what it
// copied, a canceled send's buffer is the caller's the moment cancel
// returns. Receive thread: a receive completes only once its bytes are in
// place, a damaged payload it checks fails its message, a canceled or
// closed receive's buffer is not written after cancel or close returns,
// and frames it holds keep their link credit. Both: messages both ways at
// once arrive whole and in order, and a peer that goes away mid-stream ends
// every operation without a hang.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine.h"
#include "engine_test_data.h"
#include "link_loopback.h"

namespace {

using odl::engine;
using odl::test::pattern;

constexpr unsigned kTx = 1, kRx = 2;

/// Threads of this process whose name starts with @prefix.
int threads_named(const std::string& prefix) {
    int n = 0;
    DIR* d = opendir("/proc/self/task");
    if (!d) return -1;
    while (const dirent* e = readdir(d)) {
        if (e->d_name[0] == '.') continue;
        std::ifstream f(std::string("/proc/self/task/") + e->d_name + "/comm");
        std::string comm;
        std::getline(f, comm);
        if (comm.rfind(prefix, 0) == 0) ++n;
    }
    closedir(d);
    return n;
}

/// A link that damages one payload byte of the data frame at @offset of
/// stream 0, once, as a bad cable would: the header stays intact, so only
/// the payload checksum can tell. With @header, the header's first byte
/// instead: the engine refuses the frame and ends the link.
class damaging_link final : public odl::link {
public:
    damaging_link(std::unique_ptr<odl::link> inner, uint32_t offset, bool header)
        : m_in(std::move(inner)), m_offset(offset), m_header(header) {}
    unsigned char* tx_reserve() override { return m_in->tx_reserve(); }
    void tx_commit(size_t bytes) override { m_in->tx_commit(bytes); }
    unsigned tx_depth() const override { return m_in->tx_depth(); }
    unsigned char* tx_reserve_at(unsigned ahead) override { return m_in->tx_reserve_at(ahead); }
    bool tx_busy() override { return m_in->tx_busy(); }
    void tx_flush() override { m_in->tx_flush(); }
    odl::rx_frame rx_peek() override { return damage(m_in->rx_peek()); }
    void rx_release() override { m_in->rx_release(); }
    void rx_flush() override { m_in->rx_flush(); }
    unsigned rx_depth() const override { return m_in->rx_depth(); }
    odl::rx_frame rx_peek_at(unsigned ahead) override { return damage(m_in->rx_peek_at(ahead)); }
    odl::link_state progress() override { return m_in->progress(); }
    std::string failure() const override { return m_in->failure(); }
    std::string name() const override { return m_in->name(); }
    bool damaged() const { return m_done; }

private:
    odl::rx_frame damage(odl::rx_frame f) {
        odl_frame_info fi{};
        if (m_done || !f.data || odl_frame_decode(f.data, f.len, 1, &fi) != ODL_FRAME_OK) return f;
        if (fi.type != ODL_FRAME_DATA || fi.offset != m_offset || fi.len < 100) return f;
        // The test's own shared memory: the frame is ours to spoil.
        const_cast<unsigned char*>(f.data)[m_header ? 0 : ODL_FRAME_HDR_BYTES + 99] ^= 0x40;
        m_done = true;
        return f;
    }
    std::unique_ptr<odl::link> m_in;
    uint32_t m_offset;
    bool m_header;
    bool m_done = false;
};

class CopyThreads : public ::testing::Test {
protected:
    /// Both ends with the copy threads in @threads (kTx, kRx), a link
    /// window of @link_window frames (0: none); b's link damaged at
    /// @damage_at if set (its header if @header).
    void open(unsigned threads, uint32_t flags = 0, uint32_t link_window = 0, int64_t damage_at = -1,
              bool header = false) {
        auto [la, lb] = odl::open_loopback_pair();
        if (damage_at >= 0) {
            auto d = std::make_unique<damaging_link>(std::move(lb), uint32_t(damage_at), header);
            damage = d.get();
            lb = std::move(d);
        }
        odl::open_config c = odl::test::engine_config(2, 512, link_window);
        c.tx_thread = threads & kTx;
        c.rx_thread = threads & kRx;
        c.flags = flags;
        a = std::make_unique<engine>(std::move(la), c);
        b = std::make_unique<engine>(std::move(lb), c);
        step_while([&] { return a->link_state() != ODL_LINK_UP || b->link_state() != ODL_LINK_UP; });
        ASSERT_EQ(a->link_state(), uint32_t(ODL_LINK_UP));
        ASSERT_EQ(b->link_state(), uint32_t(ODL_LINK_UP));
    }
    void TearDown() override {
        if (a) a->shutdown();
        if (b) b->shutdown();
    }
    /// One poll of each end (of b only every @b_every steps); completions
    /// by ctx, each shown to on_done.
    void step(unsigned b_every = 1) {
        odl_completion c[32];
        ++m_steps;
        for (engine* e : {a.get(), b.get()}) {
            if (!e || (e == b.get() && m_steps % b_every != 0)) continue;
            const size_t n = e->poll(c, 32);
            for (size_t i = 0; i < n; ++i) {
                done[c[i].ctx] = c[i];
                if (on_done) on_done(c[i]);
            }
        }
    }
    /// Steps while @more() holds, for at most 30 s: bounded in time, not in
    /// steps (a slowed copy thread sleeps per frame, and a sleep of a few
    /// microseconds takes far longer on a loaded machine than a step).
    template <class More>
    void step_while(More more, unsigned b_every = 1) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
        while (more() && std::chrono::steady_clock::now() < until) step(b_every);
    }
    /// Ends both engines, their copy threads with them, when it goes.
    /// Declared after the buffers a test lends them: an assertion that ends
    /// the test early then cannot leave a thread copying into freed memory
    /// (TearDown() runs only after the test's own variables are gone).
    struct ends_first {
        CopyThreads& t;
        ~ends_first() {
            if (t.a) t.a->shutdown();
            if (t.b) t.b->shutdown();
            t.a.reset();
            t.b.reset();
        }
    };
    /// Steps until every ctx in @want completed (bounded in time: a loaded
    /// machine may need many steps).
    void run_until(const std::vector<uint64_t>& want, unsigned b_every = 1) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (std::chrono::steady_clock::now() < until) {
            bool all = true;
            for (uint64_t w : want) all = all && done.count(w);
            if (all) return;
            step(b_every);
        }
        FAIL() << "operations did not complete";
    }

    std::unique_ptr<engine> a, b;
    damaging_link* damage = nullptr;
    std::map<uint64_t, odl_completion> done;
    std::function<void(const odl_completion&)> on_done;
    uint64_t m_steps = 0;
};

class CopyThreadsBothWays : public CopyThreads, public ::testing::WithParamInterface<unsigned> {};

// Both ends send at once, so each poll takes frames in and the copies go
// through the threads; every byte and every order must survive them. A
// send's buffer is scribbled over the moment it completes: a completion
// that came before the send thread had copied its frames shows as a
// damaged message. A receive's buffer is read the moment it completes: one
// that came before the receive thread had copied its frames shows too.
TEST_P(CopyThreadsBothWays, ArriveWholeAndInOrder) {
    const unsigned threads = GetParam();
    ASSERT_NO_FATAL_FAILURE(open(threads));
    EXPECT_EQ(a->tx_thread().on, bool(threads & kTx));
    EXPECT_EQ(a->rx_thread().on, bool(threads & kRx));
    EXPECT_EQ(threads_named("odl-tx-"), threads & kTx ? 2 : 0);
    EXPECT_EQ(threads_named("odl-rx-"), threads & kRx ? 2 : 0);
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
    std::map<uint64_t, std::vector<unsigned char>> seen;  // each receive's buffer as it completed
    const ends_first ends{*this};
    on_done = [&](const odl_completion& c) {
        if (c.op == ODL_OP_RECV) {
            seen[c.ctx] = c.ctx >= 2000 ? rx_a[c.ctx - 2000] : rx_b[c.ctx - 1000];
            return;
        }
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
        EXPECT_TRUE(seen[1000 + i] == sent_a[i]) << "a -> b, message " << i << " (" << sizes[i] << " bytes)";
        EXPECT_TRUE(seen[2000 + i] == sent_b[i]) << "b -> a, message " << i << " (" << sizes[i] << " bytes)";
    }
    // The threads did carry frames (not only the engine's own copies).
    if (threads & kTx) {
        EXPECT_GT(a->tx_thread().frames, 0u);
        EXPECT_GT(b->tx_thread().frames, 0u);
    }
    if (threads & kRx) {
        EXPECT_GT(a->rx_thread().frames, 0u);
        EXPECT_GT(b->rx_thread().frames, 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(Threads, CopyThreadsBothWays, ::testing::Values(kTx, kRx, kTx | kRx),
                         [](const ::testing::TestParamInfo<unsigned>& i) {
                             return std::string(i.param == kTx ? "Send" : i.param == kRx ? "Receive" : "Both");
                         });

// The checksum must be taken over the bytes the send thread copied: one
// taken before them, or over the wrong slot, fails the receiver's check
// (made by its receive thread).
TEST_F(CopyThreads, ChecksumsCoverWhatTheThreadsCopied) {
    ASSERT_NO_FATAL_FAILURE(open(kTx | kRx, ODL_OPEN_CHECKSUM));
    const size_t n = 4 << 20;
    auto ta = pattern(n, 3), tb = pattern(n, 4);
    std::vector<unsigned char> ra(n), rb(n);
    const ends_first ends{*this};
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
    EXPECT_GT(a->rx_thread().frames + b->rx_thread().frames, 0u);
}

// A payload damaged on the way, in the middle of a burst that the receive
// thread checks and copies: the message fails (ODL_ERR_PROTO), the error
// is counted once, and the next message on the stream arrives intact.
TEST_F(CopyThreads, ReceiveThreadCatchesADamagedPayload) {
    const uint32_t P = ODL_FRAME_MAX_PAYLOAD;
    ASSERT_NO_FATAL_FAILURE(open(kRx, ODL_OPEN_CHECKSUM, 0, int64_t(200) * P));
    const size_t n = 4 << 20;
    auto t1 = pattern(n, 7), t2 = pattern(n, 8);
    std::vector<unsigned char> r1(n), r2(n);
    const ends_first ends{*this};
    ASSERT_EQ(b->post_recv(0, 1, r1.data(), n, 1), ODL_OK);
    ASSERT_EQ(b->post_recv(0, 1, r2.data(), n, 2), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, t1.data(), n, 3), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, t2.data(), n, 4), ODL_OK);
    // b polls now and then, so each poll finds a burst: its copies go to
    // the thread.
    ASSERT_NO_FATAL_FAILURE(run_until({1, 2, 3, 4}, 8));
    ASSERT_TRUE(damage->damaged());
    EXPECT_GT(b->rx_thread().frames, 300u) << "the damaged frame should have been the thread's to check";
    EXPECT_EQ(done[1].status, ODL_ERR_PROTO);
    EXPECT_EQ(done[2].status, ODL_OK);
    EXPECT_TRUE(r2 == t2);
    odl_stats sb{};
    b->stats(sb);
    EXPECT_EQ(sb.rx_csum_errors, 1u);
    EXPECT_EQ(sb.rx_msgs, 1u);
    EXPECT_EQ(b->link_state(), uint32_t(ODL_LINK_UP));
}

// cancel() hands a send's buffer back: frames the send thread has yet to
// copy must not read it afterwards. The caller scribbles over it at once;
// the peer still receives the message as it was.
TEST_F(CopyThreads, CanceledSendsBufferIsTheCallersAtOnce) {
    ASSERT_NO_FATAL_FAILURE(open(kTx));
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
        a->tx_thread_test_always(true);
        const uint64_t before = a->tx_thread().frames;
        const uint64_t want = before + (slow ? 16 : 64);
        step_while([&] { return a->tx_thread().frames < want; });
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

// cancel() hands a receive's buffer back: the receive thread must not write
// into it afterwards. The caller scribbles over it at once and it stays so;
// the stream goes on with the next message.
TEST_F(CopyThreads, CanceledReceivesBufferIsTheCallersAtOnce) {
    ASSERT_NO_FATAL_FAILURE(open(kRx));
    const size_t n = 8 << 20;
    auto ta = pattern(n, 30), next = pattern(4096, 31);
    std::vector<unsigned char> rb(n), rnext(4096);
    const ends_first ends{*this};
    b->rx_thread_test_delay(200);  // copies surely wait for the thread when cancel comes
    ASSERT_EQ(b->post_recv(0, 1, rb.data(), n, 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, ta.data(), n, 2), ODL_OK);
    step_while([&] { return b->rx_thread().frames < 32; }, 8);
    ASSERT_GE(b->rx_thread().frames, 32u) << "the receive never went through the thread";
    ASSERT_FALSE(done.count(1)) << "received whole before it could be canceled";
    ASSERT_EQ(b->cancel(0, 1), ODL_OK);
    std::memset(rb.data(), 0x5a, n);
    b->rx_thread_test_delay(0);
    ASSERT_EQ(b->post_recv(0, 1, rnext.data(), rnext.size(), 3), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, next.data(), next.size(), 4), ODL_OK);
    ASSERT_NO_FATAL_FAILURE(run_until({1, 2, 3, 4}, 8));
    EXPECT_EQ(done[1].status, ODL_ERR_CANCELED);
    EXPECT_EQ(done[3].status, ODL_OK);
    EXPECT_TRUE(rnext == next);
    EXPECT_EQ(std::count(rb.begin(), rb.end(), 0x5a), std::ptrdiff_t(n)) << "written after cancel returned";
}

// close: the caller may free its receive buffers once it returns, so the
// receive thread must be done writing into them by then.
TEST_F(CopyThreads, CloseWaitsForTheReceiveThread) {
    ASSERT_NO_FATAL_FAILURE(open(kRx));
    const size_t n = 8 << 20;
    auto ta = pattern(n, 40);
    std::vector<unsigned char> rb(n);
    const ends_first ends{*this};
    b->rx_thread_test_delay(300);
    ASSERT_EQ(b->post_recv(0, 1, rb.data(), n, 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, ta.data(), n, 2), ODL_OK);
    step_while([&] { return b->rx_thread().frames < 48; }, 8);
    ASSERT_GE(b->rx_thread().frames, 48u);
    ASSERT_GT(b->rx_thread().held, 0u) << "no copy was waiting for the thread";
    b->shutdown();
    std::memset(rb.data(), 0x5a, n);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // 160 of the thread's 300 us copies
    EXPECT_EQ(std::count(rb.begin(), rb.end(), 0x5a), std::ptrdiff_t(n)) << "written after close returned";
}

// A frame the engine refuses ends the link in the middle of a burst whose
// copies still wait for the receive thread: the receive fails, and its
// buffer is the caller's from that completion on (scribbled over at once,
// it stays so).
TEST_F(CopyThreads, ProtocolErrorWaitsForTheReceiveThread) {
    const uint32_t P = ODL_FRAME_MAX_PAYLOAD;
    ASSERT_NO_FATAL_FAILURE(open(kRx, 0, 0, int64_t(40) * P, true));  // in the first burst
    const size_t n = 8 << 20;
    auto ta = pattern(n, 60);
    std::vector<unsigned char> rb(n);
    const ends_first ends{*this};
    b->rx_thread_test_delay(200);
    on_done = [&](const odl_completion& c) {
        if (c.ctx == 1) std::memset(rb.data(), 0x5a, n);
    };
    ASSERT_EQ(b->post_recv(0, 1, rb.data(), n, 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, ta.data(), n, 2), ODL_OK);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done.count(1) && std::chrono::steady_clock::now() < until) step(4);
    ASSERT_TRUE(done.count(1));
    ASSERT_TRUE(damage->damaged());
    EXPECT_EQ(done[1].status, ODL_ERR_PROTO);
    EXPECT_GE(b->rx_thread().frames, 16u) << "no copy was the thread's when the link failed";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // 250 of the thread's 200 us copies
    EXPECT_EQ(std::count(rb.begin(), rb.end(), 0x5a), std::ptrdiff_t(n)) << "written after the receive failed";
}

// Frames the receive thread holds are still in the link: their link credit
// goes back only once they are freed, so the sender never counts more
// room in the receiver's transport than there is.
TEST_F(CopyThreads, HeldFramesKeepTheirLinkCredit) {
    ASSERT_NO_FATAL_FAILURE(open(kRx, 0, 64));
    const size_t n = 8 << 20;
    auto ta = pattern(n, 50);
    std::vector<unsigned char> rb(n);
    const ends_first ends{*this};
    b->rx_thread_test_delay(100);
    ASSERT_EQ(b->post_recv(0, 1, rb.data(), n, 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, ta.data(), n, 2), ODL_OK);
    size_t most_held = 0;
    // Bounded by time: the slowed thread alone needs about 0.2 s.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!(done.count(1) && done.count(2)) && std::chrono::steady_clock::now() < until) {
        step(4);
        const size_t held = b->rx_thread().held;
        most_held = std::max(most_held, held);
        ASSERT_GE(a->link_credit().outstanding, held) << "credit for held frames went back early";
    }
    ASSERT_TRUE(done.count(1) && done.count(2));
    EXPECT_GE(most_held, 16u) << "the thread never held much";
    EXPECT_EQ(done[1].status, ODL_OK);
    EXPECT_TRUE(rb == ta);
}

// The peer goes mid-stream: everything pending ends with an error, at once,
// and closing after it neither hangs nor touches freed memory. The send's
// and the receive's buffers are freed the moment their error completions
// come (under the sanitizers a copy thread's access after that is
// reported).
TEST_F(CopyThreads, PeerGoneMidStreamEndsEverything) {
    ASSERT_NO_FATAL_FAILURE(open(kTx | kRx));
    a->tx_thread_test_delay(20);  // frames still wait for the threads when b goes
    a->rx_thread_test_delay(20);
    a->tx_thread_test_always(true);  // whatever the receive side does per poll
    const size_t n = 32 << 20;
    auto ta = std::make_unique<std::vector<unsigned char>>(pattern(n, 5));
    auto ra = std::make_unique<std::vector<unsigned char>>(n);
    auto tb = pattern(n, 6);
    std::vector<unsigned char> rb(n);
    const ends_first ends{*this};
    on_done = [&](const odl_completion& c) {
        if (c.ctx == 3) ta.reset();
        if (c.ctx == 2) ra.reset();
    };
    ASSERT_EQ(b->post_recv(0, 3, rb.data(), n, 1), ODL_OK);
    ASSERT_EQ(a->post_recv(0, 3, ra->data(), n, 2), ODL_OK);
    ASSERT_EQ(a->post_send(0, 3, ta->data(), n, 3), ODL_OK);
    ASSERT_EQ(b->post_send(0, 3, tb.data(), n, 4), ODL_OK);
    step_while([&] { return a->tx_thread().frames < 128 || a->rx_thread().frames < 64; });
    ASSERT_GE(a->tx_thread().frames, 128u);
    ASSERT_GE(a->rx_thread().frames, 64u);
    b.reset();  // no goodbye: gone
    ASSERT_NO_FATAL_FAILURE(run_until({2, 3}));
    EXPECT_NE(done[2].status, ODL_OK);
    EXPECT_NE(done[3].status, ODL_OK);
    EXPECT_NE(a->link_state(), uint32_t(ODL_LINK_UP));
}

// Asked for, but switched off: no threads, same results.
TEST(CopyThreadConfig, OffMeansNoThreads) {
    auto [la, lb] = odl::open_loopback_pair();
    odl::open_config c = odl::test::engine_config(1, 64);
    engine a(std::move(la), c), b(std::move(lb), c);
    EXPECT_FALSE(a.tx_thread().on);
    EXPECT_FALSE(a.rx_thread().on);
    EXPECT_EQ(threads_named("odl-tx-"), 0);
    EXPECT_EQ(threads_named("odl-rx-"), 0);
}

}  // namespace
