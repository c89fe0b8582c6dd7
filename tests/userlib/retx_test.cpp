// SPDX-License-Identifier: MIT
// Tests for the frame engine's retransmission (ODL_FEAT_RETX, protocol 1.2)
// over an in-memory link that loses frames: every message still arrives
// whole and in order, sends complete only once acknowledged, lost
// acknowledgements, NAKs, PROBEs and credits are recovered, link credit does
// not leak, and a peer that abuses the new frames is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "engine.h"
#include "engine_test_data.h"
#include "mem_link.h"
#include "odl/wire/frame_codec.h"
#include "peer_frames.h"

namespace {

using odl::engine;
using odl::open_config;
using odl::test::mem_link_pair;
using odl::test::peer_frame;

using odl::test::pattern;

open_config config(uint32_t streams = 4, uint32_t window = 64, uint32_t link_window = 0) {
    return odl::test::engine_config(streams, window, link_window);
}

uint8_t type_of(const std::vector<unsigned char>& f) { return f.empty() ? 0 : f[0]; }

/// A drop hook: the first DATA frame side a (0) sends vanishes; @lost says it did.
auto lose_first_data_frame_of_a(bool& lost) {
    return [&lost](int from, const std::vector<unsigned char>& f) {
        if (from != 0 || type_of(f) != ODL_FRAME_DATA || lost) return false;
        return lost = true;
    };
}

/// A deterministic pseudo-random sequence (xorshift), so a failure repeats.
struct rng {
    uint64_t x;
    explicit rng(uint64_t seed) : x(seed * 0x9e3779b97f4a7c15ull + 1) {}
    uint32_t next() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return uint32_t(x >> 11);
    }
    bool chance(unsigned percent) { return next() % 100 < percent; }
};

class Retx : public ::testing::Test {
protected:
    void make(bool lossy_a, bool lossy_b, const open_config& ca = config(), const open_config& cb = config()) {
        mem_link_pair links;
        state = links.state;
        state->q[0].capacity = state->q[1].capacity = 256;
        state->lossy[0] = lossy_a;
        state->lossy[1] = lossy_b;
        done_a.clear();
        done_b.clear();
        a = std::make_unique<engine>(std::move(links.a), ca);
        b = std::make_unique<engine>(std::move(links.b), cb);
        run_until([&] { return a->link_state() == ODL_LINK_UP && b->link_state() == ODL_LINK_UP; }, 1000);
        ASSERT_EQ(a->link_state(), uint32_t(ODL_LINK_UP));
        ASSERT_EQ(b->link_state(), uint32_t(ODL_LINK_UP));
    }

    void poll_both() {
        odl_completion c[16];
        size_t na = a->poll(c, 16);
        done_a.insert(done_a.end(), c, c + na);
        size_t nb = b->poll(c, 16);
        done_b.insert(done_b.end(), c, c + nb);
    }

    /// Polls both ends until @done or @max_ms of wall time (PROBEs wait
    /// milliseconds); false on timeout.
    template <class F>
    bool run_until(F done, int max_ms = 5000) {
        const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(max_ms);
        while (!done()) {
            if (std::chrono::steady_clock::now() > end) return false;
            if (a) {
                odl_completion c[16];
                size_t na = a->poll(c, 16);
                done_a.insert(done_a.end(), c, c + na);
            }
            if (b) {
                odl_completion c[16];
                size_t nb = b->poll(c, 16);
                done_b.insert(done_b.end(), c, c + nb);
            }
        }
        return true;
    }

    static size_t count_ok(const std::vector<odl_completion>& v) {
        size_t n = 0;
        for (const auto& c : v) n += c.status == ODL_OK;
        return n;
    }

    std::shared_ptr<odl::test::mem_link_pair_state> state;
    std::unique_ptr<engine> a, b;
    std::vector<odl_completion> done_a, done_b;
};

TEST_F(Retx, NegotiatedOnlyWhenBothLinksMayLoseFrames) {
    make(true, true);
    EXPECT_TRUE(a->retx().on);
    EXPECT_TRUE(b->retx().on);
    make(true, false);
    EXPECT_FALSE(a->retx().on);
    EXPECT_FALSE(b->retx().on);
    make(false, false);
    EXPECT_FALSE(a->retx().on);
}

TEST_F(Retx, WithoutItALostFrameEndsTheLink) {
    make(false, false);
    int n = 0;
    state->drop = [&n](int from, const std::vector<unsigned char>& f) { return from == 0 && type_of(f) == ODL_FRAME_DATA && ++n == 2; };
    auto tx = pattern(3 * ODL_FRAME_MAX_PAYLOAD, 1);
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 2), ODL_OK);
    EXPECT_TRUE(run_until([&] { return b->link_state() == ODL_LINK_LOST; }));
    EXPECT_NE(b->failure().find("seq"), std::string::npos) << b->failure();
}

TEST_F(Retx, EveryMessageArrivesWholeThroughRandomLossBothWays) {
    make(true, true);
    rng r(7);
    state->drop = [&r](int, const std::vector<unsigned char>& f) { return type_of(f) != ODL_FRAME_HELLO && r.chance(15); };
    const size_t P = ODL_FRAME_MAX_PAYLOAD;
    const std::vector<size_t> sizes = {0, 1, P - 1, P, P + 1, 3 * P, 64 * 1024 + 5, 300 * 1024};
    std::vector<std::vector<unsigned char>> tx_a, tx_b, rx_a, rx_b;
    for (size_t i = 0; i < sizes.size() * 3; ++i) {
        tx_a.push_back(pattern(sizes[i % sizes.size()], unsigned(i)));
        tx_b.push_back(pattern(sizes[(i + 3) % sizes.size()], unsigned(i + 100)));
        rx_a.emplace_back(tx_b.back().size() + 1, 0xee);
        rx_b.emplace_back(tx_a.back().size() + 1, 0xee);
    }
    for (size_t i = 0; i < tx_a.size(); ++i) {
        const auto st = uint32_t(i % 3);
        ASSERT_EQ(b->post_recv(st, uint32_t(i), rx_b[i].data(), rx_b[i].size(), 1000 + i), ODL_OK);
        ASSERT_EQ(a->post_recv(st, uint32_t(i), rx_a[i].data(), rx_a[i].size(), 2000 + i), ODL_OK);
        ASSERT_EQ(a->post_send(st, uint32_t(i), tx_a[i].data(), tx_a[i].size(), 3000 + i), ODL_OK);
        ASSERT_EQ(b->post_send(st, uint32_t(i), tx_b[i].data(), tx_b[i].size(), 4000 + i), ODL_OK);
    }
    const size_t want = 2 * tx_a.size();
    ASSERT_TRUE(run_until([&] { return done_a.size() >= want && done_b.size() >= want; }, 30000))
        << "a " << done_a.size() << " b " << done_b.size() << " of " << want << "; " << a->failure() << b->failure();
    EXPECT_EQ(count_ok(done_a), want);
    EXPECT_EQ(count_ok(done_b), want);
    for (size_t i = 0; i < tx_a.size(); ++i) {
        EXPECT_TRUE(std::equal(tx_a[i].begin(), tx_a[i].end(), rx_b[i].begin())) << "message " << i << " a->b";
        EXPECT_TRUE(std::equal(tx_b[i].begin(), tx_b[i].end(), rx_a[i].begin())) << "message " << i << " b->a";
        EXPECT_EQ(rx_b[i].back(), 0xee);
    }
    odl_stats sa{}, sb{};
    a->stats(sa);
    b->stats(sb);
    EXPECT_GT(state->dropped, 20u);
    EXPECT_GT(sa.tx_resent_frames, 0u);
    EXPECT_GT(sb.tx_resent_frames, 0u);
    EXPECT_GT(sa.rx_lost_frames + sb.rx_lost_frames, 0u);
    EXPECT_EQ(sa.rx_bad_frames + sb.rx_bad_frames, 0u);
    EXPECT_EQ(sa.tx_msgs, tx_a.size());
    EXPECT_GT(a->retx().naks + b->retx().naks, 0u);
}

TEST_F(Retx, ALostLastFrameIsFoundByProbe) {
    make(true, true);
    // Only the first copy of the message's last frame is lost: nothing
    // follows it, so only the sender's PROBE can reveal the gap.
    bool lost = false;
    state->drop = [&lost](int from, const std::vector<unsigned char>& f) {
        if (from != 0 || type_of(f) != ODL_FRAME_DATA || lost || !(f[1] & ODL_FRAME_F_EOM)) return false;
        return lost = true;
    };
    // Larger than what is copied and completed at once (8 KiB).
    auto tx = pattern(3 * ODL_FRAME_MAX_PAYLOAD + 7, 3);
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(b->post_recv(0, 9, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 9, tx.data(), tx.size(), 2), ODL_OK);
    // The send is not done while its last frame is unacknowledged.
    for (int i = 0; i < 50; ++i) poll_both();
    EXPECT_TRUE(lost);
    EXPECT_TRUE(done_a.empty()) << "send completed before the peer had the message";
    EXPECT_TRUE(done_b.empty());
    ASSERT_TRUE(run_until([&] { return done_a.size() == 1 && done_b.size() == 1; }));
    EXPECT_EQ(done_a[0].status, ODL_OK);
    EXPECT_EQ(done_b[0].status, ODL_OK);
    EXPECT_EQ(rx, tx);
    EXPECT_GE(a->retx().probes, 1u);
    EXPECT_GE(b->retx().naks, 1u);
}

TEST_F(Retx, LostAcknowledgementsNaksAndProbesAreRecovered) {
    make(true, true);
    rng r(11);
    // Half of every control frame b sends (ACK, NAK, CREDIT) and of a's
    // PROBEs vanish, and a tenth of a's data frames.
    state->drop = [&r](int from, const std::vector<unsigned char>& f) {
        const uint8_t t = type_of(f);
        if (t == ODL_FRAME_HELLO) return false;
        if (from == 1) return r.chance(50);
        return t == ODL_FRAME_PROBE ? r.chance(50) : r.chance(10);
    };
    std::vector<std::vector<unsigned char>> tx, rx;
    for (unsigned i = 0; i < 40; ++i) {
        tx.push_back(pattern(1000 + i * 3000, i));
        rx.emplace_back(tx.back().size());
    }
    for (unsigned i = 0; i < tx.size(); ++i) {
        ASSERT_EQ(b->post_recv(0, i, rx[i].data(), rx[i].size(), i), ODL_OK);
        ASSERT_EQ(a->post_send(0, i, tx[i].data(), tx[i].size(), i), ODL_OK);
    }
    ASSERT_TRUE(run_until([&] { return done_a.size() == tx.size() && done_b.size() == tx.size(); }, 30000))
        << done_a.size() << "/" << done_b.size();
    EXPECT_EQ(count_ok(done_a), tx.size());
    EXPECT_EQ(count_ok(done_b), tx.size());
    EXPECT_EQ(rx, tx);
}

TEST_F(Retx, ALostCreditIsRecoveredByProbe) {
    make(true, true, config(1, 8), config(1, 8));
    // b gives credit back only through CREDIT frames (a never sends it
    // data to piggyback on); the first few vanish.
    int credits = 0;
    state->drop = [&credits](int from, const std::vector<unsigned char>& f) {
        return from == 1 && (type_of(f) == ODL_FRAME_CREDIT || type_of(f) == ODL_FRAME_ACK) && ++credits <= 3;
    };
    auto tx = pattern(40 * ODL_FRAME_MAX_PAYLOAD, 5);  // five windows' worth
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 2), ODL_OK);
    ASSERT_TRUE(run_until([&] { return done_a.size() == 1 && done_b.size() == 1; }));
    EXPECT_EQ(done_b[0].status, ODL_OK);
    EXPECT_EQ(rx, tx);
    EXPECT_GE(credits, 3);
}

TEST_F(Retx, LinkCreditDoesNotLeakThroughLosses) {
    // b's transport takes 8 data frames at a time; a's lost frames must not
    // stay counted against that window.
    make(true, true, config(2, 64, 0), config(2, 64, 8));
    rng r(3);
    state->drop = [&r](int from, const std::vector<unsigned char>& f) { return from == 0 && type_of(f) == ODL_FRAME_DATA && r.chance(20); };
    std::vector<std::vector<unsigned char>> tx, rx;
    for (unsigned i = 0; i < 30; ++i) {
        tx.push_back(pattern(ODL_FRAME_MAX_PAYLOAD * (1 + i % 5), i));
        rx.emplace_back(tx.back().size());
    }
    for (unsigned i = 0; i < tx.size(); ++i) {
        ASSERT_EQ(b->post_recv(i % 2, i, rx[i].data(), rx[i].size(), i), ODL_OK);
        ASSERT_EQ(a->post_send(i % 2, i, tx[i].data(), tx[i].size(), i), ODL_OK);
    }
    ASSERT_TRUE(run_until([&] { return done_a.size() == tx.size() && done_b.size() == tx.size(); }, 30000))
        << done_a.size() << "/" << done_b.size() << " " << a->failure() << b->failure();
    EXPECT_EQ(rx, tx);
    // Everything acknowledged and returned: nothing outstanding.
    ASSERT_TRUE(run_until([&] { return a->link_credit().outstanding == 0; }, 2000))
        << "outstanding " << a->link_credit().outstanding;
    EXPECT_LE(a->link_credit().max_outstanding, 8u);
    odl_stats sb{};
    b->stats(sb);
    EXPECT_GT(sb.rx_lost_frames, 0u);
}

TEST_F(Retx, ACanceledSendAwaitingAcknowledgementIsResentFromACopy) {
    make(true, true);
    bool lost = false;
    state->drop = [&lost](int from, const std::vector<unsigned char>& f) {
        if (from != 0 || type_of(f) != ODL_FRAME_DATA || lost) return false;
        return lost = true;  // the first frame
    };
    auto tx = pattern(3 * ODL_FRAME_MAX_PAYLOAD, 8);
    auto buf = tx;
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(a->post_send(0, 4, buf.data(), buf.size(), 7), ODL_OK);
    for (int i = 0; i < 3; ++i) a->poll(nullptr, 0);  // all three frames out, the first lost
    ASSERT_EQ(a->cancel(0, 7), ODL_OK);
    std::fill(buf.begin(), buf.end(), 0);  // the caller's buffer is free
    ASSERT_EQ(b->post_recv(0, 4, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_TRUE(run_until([&] { return done_a.size() == 1 && done_b.size() == 1; }));
    EXPECT_EQ(done_a[0].status, ODL_ERR_CANCELED);
    EXPECT_EQ(done_b[0].status, ODL_OK);
    EXPECT_EQ(rx, tx);
}

TEST_F(Retx, APeerThatClosesRightAfterReceivingAcknowledgesFirst) {
    make(true, true);
    // b's ACKs vanish while it works; it then closes at once. Its GOODBYE
    // must come after a last ACK, or a's send (which b has) fails.
    bool closing = false;
    state->drop = [&closing](int from, const std::vector<unsigned char>& f) {
        return from == 1 && !closing && type_of(f) == ODL_FRAME_ACK;
    };
    auto tx = pattern(50000, 2);  // completes only once acknowledged
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 2), ODL_OK);
    ASSERT_TRUE(run_until([&] { return done_b.size() == 1; }));
    EXPECT_EQ(done_b[0].status, ODL_OK);
    EXPECT_EQ(rx, tx);
    EXPECT_TRUE(done_a.empty()) << "a's send completed without an ACK";
    closing = true;
    b->shutdown();  // close: GOODBYE
    b.reset();
    ASSERT_TRUE(run_until([&] { return !done_a.empty(); }, 1000));
    EXPECT_EQ(done_a[0].status, ODL_OK) << odl_strerror(done_a[0].status);
    EXPECT_EQ(a->link_state(), uint32_t(ODL_LINK_PEER_CLOSED));
}

TEST_F(Retx, ASmallSendCompletesAtOnceAndIsResentFromACopy) {
    make(true, true);
    // The first copy of the only frame is lost; the send completes anyway
    // (8 KiB or less), the caller overwrites its buffer, and the resend
    // still carries the message as it was.
    bool lost = false;
    state->drop = lose_first_data_frame_of_a(lost);
    auto tx = pattern(3000, 4);
    auto buf = tx;
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(b->post_recv(0, 3, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 3, buf.data(), buf.size(), 2), ODL_OK);
    for (int i = 0; i < 3; ++i) poll_both();
    ASSERT_TRUE(lost);
    ASSERT_EQ(done_a.size(), 1u);
    EXPECT_EQ(done_a[0].status, ODL_OK);
    std::fill(buf.begin(), buf.end(), 0xff);
    EXPECT_TRUE(done_b.empty());
    ASSERT_TRUE(run_until([&] { return done_b.size() == 1; }));
    EXPECT_EQ(done_b[0].status, ODL_OK);
    EXPECT_EQ(rx, tx);
    EXPECT_EQ(done_a.size(), 1u) << "completed twice";
}

TEST_F(Retx, CloseWaitsUntilThePeerHasTheSendsThatCompletedAtOnce) {
    make(true, true);
    // The only copy of a small send's frame is lost; the send completed at
    // once. a closes right away while b is polled on its own thread: close
    // must return only once b has the message (resent after a PROBE), as a
    // kernel link's close notice may end b's session the moment it does.
    bool lost = false;
    state->drop = lose_first_data_frame_of_a(lost);
    auto tx = pattern(3000, 6);
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(b->post_recv(0, 5, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 5, tx.data(), tx.size(), 2), ODL_OK);
    odl_completion c[4];
    for (int i = 0; i < 3 && done_a.empty(); ++i) done_a.insert(done_a.end(), c, c + a->poll(c, 4));
    ASSERT_EQ(done_a.size(), 1u);
    ASSERT_EQ(done_a[0].status, ODL_OK);
    {
        const std::lock_guard<std::mutex> hold(state->lock);
        ASSERT_TRUE(lost);
    }
    std::atomic<int> b_status{-1};
    std::atomic<bool> stop{false};
    std::thread tb([&] {
        odl_completion d[4];
        while (!stop.load()) {
            const size_t n = b->poll(d, 4);
            for (size_t i = 0; i < n; ++i)
                if (d[i].op == ODL_OP_RECV) b_status.store(d[i].status);
        }
    });
    a->shutdown();
    // b writes the message into rx before its ACK leaves (the in-memory
    // link's lock orders the two), so rx is whole when close returns. Its
    // completion, in contrast, reaches b_status only after b's poll returns,
    // which a loaded machine may delay past close: waited for below.
    const std::vector<unsigned char> at_close = rx;
    EXPECT_EQ(at_close, tx) << "close returned before the peer had the message it completed at once";
    // What b does after the GOODBYE (it must not hang either).
    for (int i = 0; i < 500 && b_status.load() == -1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stop.store(true);
    tb.join();
    EXPECT_EQ(b_status.load(), ODL_OK);
    EXPECT_EQ(rx, tx);
    EXPECT_EQ(b->link_state(), uint32_t(ODL_LINK_PEER_CLOSED));
}

TEST_F(Retx, SmallSendsCompletedAtOnceDoNotCountAgainstThePostLimit) {
    open_config ca = config();
    ca.max_posted = 4;
    make(true, true, ca, config());
    // b does not poll, so nothing is acknowledged: a's four small sends
    // complete at once (copied) and four more may be posted.
    uint32_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 4; ++i) ASSERT_EQ(a->post_send(0, 1, &v[i], sizeof(v[i]), i), ODL_OK);
    EXPECT_EQ(a->post_send(0, 1, &v[4], sizeof(v[4]), 4), ODL_ERR_AGAIN);
    for (int i = 0; i < 3; ++i) {
        odl_completion c[16];
        const size_t n = a->poll(c, 16);
        done_a.insert(done_a.end(), c, c + n);
    }
    ASSERT_EQ(done_a.size(), 4u);
    for (int i = 4; i < 8; ++i) EXPECT_EQ(a->post_send(0, 1, &v[i], sizeof(v[i]), i), ODL_OK) << i;
    std::vector<uint32_t> rx(8);
    for (int i = 0; i < 8; ++i) ASSERT_EQ(b->post_recv(0, 1, &rx[i], sizeof(rx[i]), 100 + i), ODL_OK);
    ASSERT_TRUE(run_until([&] { return done_a.size() == 8 && done_b.size() == 8; }));
    for (int i = 0; i < 8; ++i) EXPECT_EQ(rx[i], v[i]);
}

TEST_F(Retx, PingPongNeedsNoAckFrames) {
    make(true, true);
    // Each side answers in its next poll: the answer's credit acknowledges,
    // so the idle ACK (deferred one poll) is never sent.
    uint32_t ping = 0, pong = 0, rx_a = 0, rx_b = 0;
    for (uint32_t i = 0; i < 100; ++i) {
        ping = i;
        done_a.clear();
        done_b.clear();
        ASSERT_EQ(b->post_recv(0, 1, &rx_b, sizeof(rx_b), 1), ODL_OK);
        ASSERT_EQ(a->post_recv(0, 2, &rx_a, sizeof(rx_a), 2), ODL_OK);
        ASSERT_EQ(a->post_send(0, 1, &ping, sizeof(ping), 3), ODL_OK);
        ASSERT_TRUE(run_until([&] { return !done_b.empty(); }));
        pong = rx_b + 1;
        ASSERT_EQ(b->post_send(0, 2, &pong, sizeof(pong), 4), ODL_OK);
        ASSERT_TRUE(run_until([&] { return done_a.size() == 2 && done_b.size() == 2; }));
        EXPECT_EQ(rx_a, i + 1);
    }
    EXPECT_LE(a->retx().acks + b->retx().acks, 2u) << "a " << a->retx().acks << " b " << b->retx().acks;
}

TEST_F(Retx, AMessageArrivingAFrameAtATimeIsAcknowledgedOnceWhole) {
    make(true, true);
    // A one-frame transport from a to b: b takes each frame of the message
    // alone and finds the transport dry twice before the next (as on a
    // paced link, where frames come a wire time apart). Its ACKs would free
    // nothing before the last frame (the send completes only when all of
    // it is acknowledged); each would take the way back from the answer.
    state->q[0].capacity = 1;
    auto tx = pattern(12 * ODL_FRAME_MAX_PAYLOAD, 7);  // under b's ACK batch (window 64 / 4)
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 2), ODL_OK);
    const uint64_t acks_before = b->retx().acks;
    for (int i = 0; i < 1000 && done_b.empty(); ++i) {
        odl_completion c[16];
        done_a.insert(done_a.end(), c, c + a->poll(c, 16));  // puts the next frame in
        for (int k = 0; k < 3; ++k) done_b.insert(done_b.end(), c, c + b->poll(c, 16));
    }
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(rx, tx);
    // The message's send still completes: b acknowledges it once it is whole.
    ASSERT_TRUE(run_until([&] { return done_a.size() == 1; }));
    EXPECT_EQ(done_a[0].status, ODL_OK);
    EXPECT_LE(b->retx().acks - acks_before, 1u) << "b acknowledged frame by frame within one message";
}

/// One engine against a hand-driven peer (side 0) that offered RETX.
class RetxPeer : public ::testing::Test {
protected:
    void SetUp() override {
        mem_link_pair links;
        state = links.state;
        state->lossy[1] = true;
        e = std::make_unique<engine>(std::move(links.b), config(2, 16));
        links.inject(0, odl::test::hello_frame(odl::test::peer_hello(ODL_FEAT_RETX | ODL_FEAT_LINK_CREDIT)));
        poll(20);
        ASSERT_EQ(e->link_state(), uint32_t(ODL_LINK_UP));
        ASSERT_TRUE(e->retx().on);
        state->q[1].frames.clear();  // its HELLO
    }
    void poll(int n) {
        for (int i = 0; i < n; ++i) {
            odl_completion c[8];
            const size_t k = e->poll(c, 8);
            done.insert(done.end(), c, c + k);
        }
    }
    void inject(uint8_t type, uint16_t stream, uint32_t seq, uint8_t flags = 0, uint32_t credit = 0) {
        odl_frame_info fi{};
        fi.type = type;
        fi.flags = flags;
        fi.stream = stream;
        fi.seq = seq;
        fi.credit = credit;
        state->q[0].frames.push_back(peer_frame(fi));
    }
    void inject_data(uint16_t stream, uint32_t seq, uint32_t tag = 1) {
        odl_frame_info fi{};
        fi.type = ODL_FRAME_DATA;
        fi.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM;
        fi.stream = stream;
        fi.seq = seq;
        fi.tag = tag;
        fi.len = 4;
        fi.msg_len = 4;
        const uint32_t payload = seq;
        state->q[0].frames.push_back(peer_frame(fi, &payload));
    }
    /// The frames the engine sent, decoded.
    std::vector<odl_frame_info> sent() {
        std::vector<odl_frame_info> out;
        for (const auto& f : state->q[1].frames) {
            odl_frame_info fi{};
            EXPECT_EQ(odl_frame_decode(f.data(), f.size(), 4, &fi), ODL_FRAME_OK);
            out.push_back(fi);
        }
        state->q[1].frames.clear();
        return out;
    }
    std::shared_ptr<odl::test::mem_link_pair_state> state;
    std::unique_ptr<engine> e;
    std::vector<odl_completion> done;
};

TEST_F(RetxPeer, AGapIsDroppedAndAskedForOnce) {
    inject_data(0, 0);
    inject_data(0, 2);  // 1 is missing
    inject_data(0, 3);
    poll(3);
    auto out = sent();
    size_t naks = 0;
    for (const auto& fi : out) {
        if (fi.type != ODL_FRAME_NAK) continue;
        ++naks;
        EXPECT_EQ(fi.seq, 1u);
    }
    EXPECT_EQ(naks, 1u);
    odl_stats st{};
    e->stats(st);
    EXPECT_EQ(st.rx_frames, 1u);
    EXPECT_EQ(st.rx_dropped_frames, 2u);
    EXPECT_EQ(st.rx_lost_frames, 1u);
    // The resend from 1 is taken; a second copy of 0 is dropped and ACKed.
    inject_data(0, 1);
    inject_data(0, 2);
    inject_data(0, 0);
    poll(3);
    out = sent();
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.back().type, ODL_FRAME_ACK);
    EXPECT_EQ(out.back().seq, 3u);
    e->stats(st);
    EXPECT_EQ(st.rx_frames, 3u);
    EXPECT_EQ(st.rx_dropped_frames, 3u);
    EXPECT_EQ(e->link_state(), uint32_t(ODL_LINK_UP));
}

TEST_F(RetxPeer, AProbeIsAnsweredWithAckOrNak) {
    inject_data(0, 0);
    poll(2);
    sent();
    inject(ODL_FRAME_PROBE, 0, 1);  // all arrived
    poll(2);
    auto out = sent();
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.back().type, ODL_FRAME_ACK);
    EXPECT_EQ(out.back().seq, 1u);
    inject(ODL_FRAME_PROBE, 0, 3);  // 1 and 2 lost at the tail
    poll(2);
    out = sent();
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(out.front().type, ODL_FRAME_NAK);
    EXPECT_EQ(out.front().seq, 1u);
    odl_stats st{};
    e->stats(st);
    EXPECT_EQ(st.rx_lost_frames, 2u);
}

TEST_F(RetxPeer, AProbeBehindWhatArrivedIsRefused) {
    inject_data(0, 0);
    inject_data(0, 1);
    inject(ODL_FRAME_PROBE, 0, 1);
    poll(3);
    EXPECT_EQ(e->link_state(), uint32_t(ODL_LINK_LOST));
    EXPECT_NE(e->failure().find("PROBE"), std::string::npos) << e->failure();
}

TEST_F(RetxPeer, AProbeBeyondTheCreditIsRefused) {
    inject(ODL_FRAME_PROBE, 0, 17);  // window 16
    poll(2);
    EXPECT_EQ(e->link_state(), uint32_t(ODL_LINK_LOST));
    EXPECT_NE(e->failure().find("credit"), std::string::npos) << e->failure();
}

TEST_F(RetxPeer, AGapBeyondTheCreditIsRefused) {
    inject_data(0, 16);
    poll(2);
    EXPECT_EQ(e->link_state(), uint32_t(ODL_LINK_LOST));
    EXPECT_NE(e->failure().find("credit"), std::string::npos) << e->failure();
}

TEST_F(RetxPeer, AnAckOfFramesNeverSentIsRefused) {
    uint32_t v = 1;
    ASSERT_EQ(e->post_send(0, 1, &v, sizeof(v), 1), ODL_OK);
    poll(2);
    inject(ODL_FRAME_ACK, 0, 2, ODL_FRAME_F_CREDIT, 0);
    poll(2);
    EXPECT_EQ(e->link_state(), uint32_t(ODL_LINK_LOST));
    EXPECT_NE(e->failure().find("acknowledges"), std::string::npos) << e->failure();
}

TEST_F(RetxPeer, ANakResendsFromTheMissingFrameAndAnAckCompletes) {
    std::vector<unsigned char> m(3 * ODL_FRAME_MAX_PAYLOAD, 0x5a);
    ASSERT_EQ(e->post_send(1, 6, m.data(), m.size(), 42), ODL_OK);
    poll(2);
    auto out = sent();
    ASSERT_EQ(out.size(), 3u);
    EXPECT_TRUE(done.empty());
    inject(ODL_FRAME_NAK, 1, 1, ODL_FRAME_F_CREDIT, 0);
    poll(2);
    out = sent();
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].seq, 1u);
    EXPECT_EQ(out[0].offset, uint32_t(ODL_FRAME_MAX_PAYLOAD));
    EXPECT_EQ(out[1].seq, 2u);
    EXPECT_TRUE(out[1].flags & ODL_FRAME_F_EOM);
    EXPECT_TRUE(done.empty());
    odl_stats st{};
    e->stats(st);
    EXPECT_EQ(st.tx_resent_frames, 2u);
    inject(ODL_FRAME_ACK, 1, 3, ODL_FRAME_F_CREDIT, 3);
    poll(2);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].ctx, 42u);
    EXPECT_EQ(done[0].status, ODL_OK);
    EXPECT_EQ(e->link_state(), uint32_t(ODL_LINK_UP));
}

TEST(RetxNotNegotiated, AckFromAPeerWithoutItIsRefused) {
    mem_link_pair links;
    links.state->lossy[1] = true;
    auto state = links.state;
    engine e(std::move(links.b), config(2, 16));
    links.inject(0, odl::test::hello_frame(odl::test::peer_hello(ODL_FEAT_LINK_CREDIT)));
    odl_frame_info fi{};
    fi.type = ODL_FRAME_ACK;
    fi.flags = ODL_FRAME_F_CREDIT;
    state->q[0].frames.push_back(peer_frame(fi));
    for (int i = 0; i < 4; ++i) e.poll(nullptr, 0);
    EXPECT_FALSE(e.retx().on);
    EXPECT_EQ(e.link_state(), uint32_t(ODL_LINK_LOST));
    EXPECT_NE(e.failure().find("without retransmission"), std::string::npos) << e.failure();
}

}  // namespace
