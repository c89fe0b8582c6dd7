// SPDX-License-Identifier: MIT
// Tests for userlib/src/engine.cpp over an in-memory link: segmentation and
// reassembly edge cases, tag matching, flow control, and hostile input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <vector>

#include <unistd.h>

#include "clock.h"
#include "engine.h"
#include "engine_test_data.h"
#include "mem_link.h"
#include "odl/wire/frame_codec.h"

namespace {

using odl::engine;
using odl::open_config;
using odl::test::mem_link_pair;

using odl::test::pattern;

open_config config(uint32_t streams = 4, uint32_t window = 64) { return odl::test::engine_config(streams, window); }

class EnginePair : public ::testing::Test {
protected:
    void SetUp() override { make(config(), config()); }

    void make(const open_config& ca, const open_config& cb) {
        mem_link_pair links;
        state = links.state;
        a = std::make_unique<engine>(std::move(links.a), ca);
        b = std::make_unique<engine>(std::move(links.b), cb);
        pump();
        ASSERT_EQ(a->link_state(), uint32_t(ODL_LINK_UP));
        ASSERT_EQ(b->link_state(), uint32_t(ODL_LINK_UP));
    }

    /// Polls both ends until nothing moves (bounded).
    void pump(int rounds = 100000) {
        for (int i = 0; i < rounds; ++i) {
            odl_completion c[16];
            size_t na = a->poll(c, 16);
            done_a.insert(done_a.end(), c, c + na);
            size_t nb = b->poll(c, 16);
            done_b.insert(done_b.end(), c, c + nb);
            if (na == 0 && nb == 0 && state->q[0].frames.empty() && state->q[1].frames.empty() && i > 2) return;
        }
    }

    /// Polls only @e (the other end is "slow").
    void pump_one(engine& e, std::vector<odl_completion>& out, int rounds) {
        for (int i = 0; i < rounds; ++i) {
            odl_completion c[16];
            size_t n = e.poll(c, 16);
            out.insert(out.end(), c, c + n);
        }
    }

    std::shared_ptr<odl::test::mem_link_pair_state> state;
    std::unique_ptr<engine> a, b;
    std::vector<odl_completion> done_a, done_b;
};

TEST_F(EnginePair, DeliversMessagesAtFrameBoundaries) {
    const size_t P = ODL_FRAME_MAX_PAYLOAD;
    const std::vector<size_t> sizes = {0, 1, P - 1, P, P + 1, 4095, 4096, 4097, 3 * P, 1 << 20, (1 << 20) + 13};
    for (size_t i = 0; i < sizes.size(); ++i) {
        auto tx = pattern(sizes[i], unsigned(i));
        std::vector<unsigned char> rx(sizes[i] + 16, 0xee);
        done_a.clear();
        done_b.clear();
        ASSERT_EQ(b->post_recv(0, 5, rx.data(), rx.size(), 100 + i), ODL_OK);
        ASSERT_EQ(a->post_send(0, 5, tx.data(), tx.size(), 200 + i), ODL_OK);
        pump();
        ASSERT_EQ(done_a.size(), 1u);
        ASSERT_EQ(done_b.size(), 1u);
        EXPECT_EQ(done_a[0].status, ODL_OK);
        EXPECT_EQ(done_a[0].ctx, 200 + i);
        EXPECT_EQ(done_b[0].status, ODL_OK) << "size " << sizes[i];
        EXPECT_EQ(done_b[0].ctx, 100 + i);
        EXPECT_EQ(done_b[0].len, sizes[i]);
        EXPECT_TRUE(std::equal(tx.begin(), tx.end(), rx.begin())) << "size " << sizes[i];
        EXPECT_EQ(rx[sizes[i]], 0xee) << "wrote past the message";
    }
    odl_stats st{};
    a->stats(st);
    EXPECT_EQ(st.tx_msgs, sizes.size());
}

TEST_F(EnginePair, FrameCountMatchesTheFormula) {
    auto tx = pattern(3 * ODL_FRAME_MAX_PAYLOAD + 1, 1);
    std::vector<unsigned char> rx(tx.size());
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 1), ODL_OK);
    pump();
    odl_stats st{};
    a->stats(st);
    EXPECT_EQ(st.tx_frames, odl_msg_frames(tx.size()));
}

TEST_F(EnginePair, MatchesTagsInArrivalOrder) {
    auto m1 = pattern(100, 1), m2 = pattern(200, 2), m3 = pattern(300, 3);
    std::vector<unsigned char> r1(400), r2(400), r3(400);
    ASSERT_EQ(a->post_send(0, 1, m1.data(), m1.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 2, m2.data(), m2.size(), 2), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, m3.data(), m3.size(), 3), ODL_OK);
    pump();  // all three arrive unexpected
    ASSERT_EQ(b->post_recv(0, 2, r2.data(), r2.size(), 20), ODL_OK);
    ASSERT_EQ(b->post_recv(0, ODL_TAG_ANY, r1.data(), r1.size(), 10), ODL_OK);
    ASSERT_EQ(b->post_recv(0, 1, r3.data(), r3.size(), 30), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size(), 3u);
    EXPECT_EQ(done_b[0].ctx, 20u);
    EXPECT_EQ(done_b[0].len, 200u);
    EXPECT_EQ(done_b[1].ctx, 10u);
    EXPECT_EQ(done_b[1].tag, 1u);
    EXPECT_EQ(done_b[2].ctx, 30u);
    EXPECT_EQ(std::memcmp(r1.data(), m1.data(), m1.size()), 0);
    EXPECT_EQ(std::memcmp(r2.data(), m2.data(), m2.size()), 0);
    EXPECT_EQ(std::memcmp(r3.data(), m3.data(), m3.size()), 0);
    odl_stats st{};
    b->stats(st);
    EXPECT_EQ(st.rx_unexpected_msgs, 3u);
}

TEST_F(EnginePair, TruncatesLongMessagesWithAnError) {
    auto tx = pattern(10000, 4);
    std::vector<unsigned char> rx(5000 + 8, 0xee);
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), 5000, 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 1), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_TRUNCATED);
    EXPECT_EQ(done_b[0].len, 10000u);
    EXPECT_EQ(std::memcmp(rx.data(), tx.data(), 5000), 0);
    EXPECT_EQ(rx[5000], 0xee);
    // The link survives: the next message arrives whole.
    done_b.clear();
    std::vector<unsigned char> rx2(10000);
    ASSERT_EQ(b->post_recv(0, 1, rx2.data(), rx2.size(), 2), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 2), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_OK);
}

TEST_F(EnginePair, SlowReceiverLosesNothing) {
    // 40 messages of 3 frames against a 64-frame window: the sender must
    // stall on credit, never overrun, and everything arrives once posted.
    const size_t n = 40, size = 3 * ODL_FRAME_MAX_PAYLOAD;
    std::vector<std::vector<unsigned char>> tx;
    for (size_t i = 0; i < n; ++i) tx.push_back(pattern(size, unsigned(i)));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a->post_send(1, 9, tx[i].data(), size, i), ODL_OK);
    pump_one(*a, done_a, 1000);
    std::vector<odl_completion> ignored;
    pump_one(*b, ignored, 1000);  // b reads frames but has no receives posted
    pump_one(*a, done_a, 1000);
    odl_stats st{};
    a->stats(st);
    EXPECT_GT(st.credit_stalls, 0u);
    EXPECT_LE(st.tx_frames, 64u) << "sender exceeded the receiver's window";
    EXPECT_LT(done_a.size(), n);

    std::vector<std::vector<unsigned char>> rx(n, std::vector<unsigned char>(size));
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(b->post_recv(1, 9, rx[i].data(), size, i), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size() + ignored.size(), n);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(rx[i], tx[i]) << "message " << i;
    EXPECT_EQ(done_a.size(), n);
}

TEST_F(EnginePair, StreamsAreIndependent) {
    // Stream 0 is blocked (no receive, window full); stream 1 still flows.
    auto big = pattern(200 * ODL_FRAME_MAX_PAYLOAD, 1);
    auto small = pattern(64, 2);
    std::vector<unsigned char> rx(64);
    ASSERT_EQ(a->post_send(0, 1, big.data(), big.size(), 1), ODL_OK);
    pump();
    ASSERT_EQ(b->post_recv(1, 1, rx.data(), rx.size(), 7), ODL_OK);
    ASSERT_EQ(a->post_send(1, 1, small.data(), small.size(), 2), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].ctx, 7u);
    EXPECT_EQ(rx, small);
}

TEST_F(EnginePair, ChecksumCatchesCorruptionInFlight) {
    open_config ca = config();
    ca.flags = ODL_OPEN_CHECKSUM;
    make(ca, config());
    auto tx = pattern(5000, 3);
    std::vector<unsigned char> rx(5000);
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 1), ODL_OK);
    odl_completion c[4];
    a->poll(c, 4);  // frames now sit in the link
    ASSERT_FALSE(state->q[0].frames.empty());
    state->q[0].frames.front()[ODL_FRAME_HDR_BYTES + 100] ^= 1;
    pump();
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_PROTO);
    odl_stats st{};
    b->stats(st);
    EXPECT_EQ(st.rx_csum_errors, 1u);
}

TEST_F(EnginePair, GarbageFromThePeerEndsTheLinkCleanly) {
    std::vector<unsigned char> rx(100);
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 42), ODL_OK);
    odl::test::mem_link_pair unused;
    (void)unused;
    std::vector<unsigned char> junk(300);
    for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<unsigned char>(i * 13);
    state->q[0].frames.push_back(junk);
    pump();
    EXPECT_EQ(b->link_state(), uint32_t(ODL_LINK_LOST));
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].ctx, 42u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_PROTO);
    EXPECT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 43), ODL_ERR_PROTO);
    EXPECT_NE(b->failure().find("protocol error"), std::string::npos);
}

/// A well-formed DATA frame a hostile peer might send.
std::vector<unsigned char> forged(uint16_t stream, uint32_t seq, uint32_t msg_len, uint32_t offset, uint16_t len, uint8_t flags) {
    odl_frame_info fi{};
    fi.type = ODL_FRAME_DATA;
    fi.flags = flags;
    fi.stream = stream;
    fi.seq = seq;
    fi.msg_len = msg_len;
    fi.offset = offset;
    fi.len = len;
    std::vector<unsigned char> b(ODL_FRAME_HDR_BYTES + len);
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(b.data()), &fi);
    return b;
}

TEST_F(EnginePair, RefusesASequenceGap) {
    state->q[0].frames.push_back(forged(0, 5, 10, 0, 10, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM));
    pump();
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
    EXPECT_EQ(b->bad_frames()[ODL_FRAME_ERR_RANGE], 1u);
}

TEST_F(EnginePair, RefusesAPeerThatIgnoresCredit) {
    // Window is 64 frames; the 65th unconsumed frame is an overrun.
    for (uint32_t i = 0; i <= 64; ++i)
        state->q[0].frames.push_back(forged(0, i, 0, 0, 0, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM));
    pump();
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
    EXPECT_NE(b->failure().find("beyond its credit"), std::string::npos);
}

TEST_F(EnginePair, RefusesAContinuationWithoutAStart) {
    state->q[0].frames.push_back(forged(0, 0, 2 * ODL_FRAME_MAX_PAYLOAD, ODL_FRAME_MAX_PAYLOAD, ODL_FRAME_MAX_PAYLOAD, ODL_FRAME_F_EOM));
    pump();
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
}

TEST_F(EnginePair, RefusesAMessageAboveOurLimit) {
    open_config cb = config();
    cb.max_msg_bytes = 1000;
    make(config(), cb);
    state->q[0].frames.push_back(forged(0, 0, 5000, 0, ODL_FRAME_MAX_PAYLOAD, ODL_FRAME_F_SOM));
    pump();
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
}

TEST_F(EnginePair, SenderRespectsPeerMessageLimit) {
    open_config cb = config();
    cb.max_msg_bytes = 1000;
    make(config(), cb);
    std::vector<unsigned char> tx(1001);
    EXPECT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 1), ODL_ERR_TOO_BIG);
    EXPECT_EQ(a->post_send(0, 1, tx.data(), 1000, 1), ODL_OK);
}

TEST_F(EnginePair, NegotiatesTheSmallerStreamCount) {
    make(config(8), config(2));
    odl_dev_info ia{};
    a->query(ia);
    EXPECT_EQ(ia.num_streams, 2u);
    std::vector<unsigned char> tx(10);
    EXPECT_EQ(a->post_send(2, 1, tx.data(), tx.size(), 1), ODL_ERR_INVAL);
}

TEST_F(EnginePair, GoodbyeFailsPendingOperationsWithPeerClosed) {
    std::vector<unsigned char> rx(100);
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 5), ODL_OK);
    a->shutdown();
    pump();
    EXPECT_EQ(b->link_state(), uint32_t(ODL_LINK_PEER_CLOSED));
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_PEER_CLOSED);
}

TEST_F(EnginePair, CutLinkFailsPendingOperationsWithPeerLost) {
    std::vector<unsigned char> tx(100), rx(100);
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 5), ODL_OK);
    state->cut = true;
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 6), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_PEER_LOST);
    ASSERT_EQ(done_a.size(), 1u);
    EXPECT_EQ(done_a[0].status, ODL_ERR_PEER_LOST);
}

TEST_F(EnginePair, PostingLimitGivesAgain) {
    open_config ca = config();
    ca.max_posted = 3;
    make(ca, config());
    std::vector<unsigned char> rx(10);
    for (int i = 0; i < 3; ++i) ASSERT_EQ(a->post_recv(0, 1, rx.data(), rx.size(), i), ODL_OK);
    EXPECT_EQ(a->post_recv(0, 1, rx.data(), rx.size(), 3), ODL_ERR_AGAIN);
}

TEST_F(EnginePair, CancelWithdrawsUnstartedOperations) {
    std::vector<unsigned char> rx1(100, 0xee), rx2(100);
    ASSERT_EQ(b->post_recv(0, 1, rx1.data(), rx1.size(), 1), ODL_OK);
    ASSERT_EQ(b->post_recv(0, 1, rx2.data(), rx2.size(), 2), ODL_OK);
    EXPECT_EQ(b->cancel(0, 1), ODL_OK);
    EXPECT_EQ(b->cancel(0, 1), ODL_ERR_INVAL) << "canceled twice";
    EXPECT_EQ(b->cancel(0, 99), ODL_ERR_INVAL);
    auto tx = pattern(50, 9);
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 3), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size(), 2u);
    EXPECT_EQ(done_b[0].ctx, 1u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_CANCELED);
    EXPECT_EQ(done_b[1].ctx, 2u);
    EXPECT_EQ(done_b[1].status, ODL_OK);
    EXPECT_EQ(rx1[0], 0xee) << "a canceled buffer was written";
    EXPECT_TRUE(std::equal(tx.begin(), tx.end(), rx2.begin()));
}

TEST_F(EnginePair, CancelOfAStartedSendFinishesTheMessageFromACopy) {
    auto big = pattern(300 * ODL_FRAME_MAX_PAYLOAD, 1);  // beyond the 64-frame window
    const auto expect = big;
    std::vector<unsigned char> rx(big.size());
    ASSERT_EQ(a->post_send(0, 1, big.data(), big.size(), 1), ODL_OK);
    pump();  // part of it left; the rest waits for credit
    ASSERT_TRUE(done_a.empty());
    EXPECT_EQ(a->cancel(0, 1), ODL_OK);
    std::fill(big.begin(), big.end(), 0);  // the caller may reuse its buffer now
    EXPECT_EQ(a->cancel(0, 1), ODL_ERR_INVAL) << "canceled twice";
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 2), ODL_OK);
    pump();
    ASSERT_EQ(done_a.size(), 1u);
    EXPECT_EQ(done_a[0].status, ODL_ERR_CANCELED);
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_OK);
    EXPECT_EQ(rx, expect) << "the peer must get the message as it was when canceled";
}

TEST_F(EnginePair, CancelOfAStartedReceiveDropsTheRest) {
    auto big = pattern(300 * ODL_FRAME_MAX_PAYLOAD, 2);
    std::vector<unsigned char> rx(big.size(), 0xee), rx2(100);
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 7), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, big.data(), big.size(), 1), ODL_OK);
    for (int i = 0; i < 3; ++i) {  // a few frames in, not all
        odl_completion c[4];
        a->poll(c, 4);
        b->poll(c, 4);
    }
    const size_t before = size_t(std::count(rx.begin(), rx.end(), 0xee));
    ASSERT_LT(before, rx.size()) << "the receive has not started";
    EXPECT_EQ(b->cancel(0, 7), ODL_OK);
    pump();
    EXPECT_EQ(size_t(std::count(rx.begin(), rx.end(), 0xee)), before) << "written after cancel";
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_CANCELED);
    // The stream goes on: the next message arrives whole.
    auto small = pattern(100, 3);
    ASSERT_EQ(b->post_recv(0, 1, rx2.data(), rx2.size(), 8), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, small.data(), small.size(), 2), ODL_OK);
    pump();
    EXPECT_EQ(rx2, small);
    EXPECT_EQ(b->error_status(), ODL_OK);
}

TEST_F(EnginePair, DiscardFreesABufferedMessageAndItsSenderCompletes) {
    // A message nobody receives holds its frames' credit: a sender beyond
    // the window waits forever, until the receiver discards it.
    auto big = pattern(300 * ODL_FRAME_MAX_PAYLOAD, 4);  // beyond the 64-frame window
    ASSERT_EQ(a->post_send(1, 0x05000001, big.data(), big.size(), 1), ODL_OK);
    pump();
    ASSERT_TRUE(done_a.empty()) << "the send must be held back by credit";
    odl_stats st{};
    b->stats(st);
    EXPECT_EQ(st.rx_unexpected_msgs, 1u);
    // A selection that does not match (another generation) changes nothing.
    ASSERT_EQ(b->discard(1, 0x06000000, 0x7f000000, 0), ODL_OK);
    pump();
    ASSERT_TRUE(done_a.empty());
    ASSERT_EQ(b->discard(1, 0x05000000, 0x7f000000, 0), ODL_OK);
    pump();
    ASSERT_EQ(done_a.size(), 1u);
    EXPECT_EQ(done_a[0].ctx, 1u);
    EXPECT_EQ(done_a[0].status, ODL_OK);
    EXPECT_TRUE(done_b.empty()) << "a discarded message completes nothing";
    // A later message of the same selection is dropped as it arrives, even
    // with a receive posted; another tag on the stream is delivered.
    std::vector<unsigned char> rx(big.size(), 0xee), rx2(100);
    ASSERT_EQ(b->post_recv(1, ODL_TAG_ANY, rx.data(), rx.size(), 7), ODL_OK);
    ASSERT_EQ(a->post_send(1, 0x05000002, big.data(), big.size(), 2), ODL_OK);
    auto small = pattern(100, 5);
    ASSERT_EQ(a->post_send(1, 0x06000003, small.data(), small.size(), 3), ODL_OK);
    pump();
    ASSERT_EQ(done_a.size(), 3u);
    EXPECT_EQ(done_a[1].status, ODL_OK);
    EXPECT_EQ(done_a[2].status, ODL_OK);
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].ctx, 7u);
    EXPECT_EQ(done_b[0].tag, 0x06000003u);
    EXPECT_EQ(done_b[0].len, small.size());
    EXPECT_TRUE(std::equal(small.begin(), small.end(), rx.begin()));
    EXPECT_EQ(b->error_status(), ODL_OK);
}

TEST_F(EnginePair, DiscardDropsTheRestOfAMessageStillArriving) {
    auto big = pattern(300 * ODL_FRAME_MAX_PAYLOAD, 6);
    ASSERT_EQ(a->post_send(0, 9, big.data(), big.size(), 1), ODL_OK);
    for (int i = 0; i < 3; ++i) {  // a few frames in, not all
        odl_completion c[4];
        a->poll(c, 4);
        b->poll(c, 4);
    }
    ASSERT_TRUE(done_a.empty());
    ASSERT_EQ(b->discard(0, 0, 0, 0), ODL_OK);  // mask 0: every message
    pump();
    ASSERT_EQ(done_a.size(), 1u);
    EXPECT_EQ(done_a[0].status, ODL_OK);
    EXPECT_TRUE(done_b.empty());
    // After ODL_DISCARD_STOP messages are delivered again, whole.
    ASSERT_EQ(b->discard(0, 0, 0, ODL_DISCARD_STOP), ODL_OK);
    std::vector<unsigned char> rx(big.size());
    ASSERT_EQ(a->post_send(0, 9, big.data(), big.size(), 2), ODL_OK);
    pump();
    ASSERT_EQ(b->post_recv(0, 9, rx.data(), rx.size(), 8), ODL_OK);  // arrives unexpected, then matched
    pump();
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].status, ODL_OK);
    EXPECT_EQ(rx, big);
    EXPECT_EQ(b->error_status(), ODL_OK);
}

TEST_F(EnginePair, DiscardLeavesPostedReceivesAndOtherStreamsAlone) {
    std::vector<unsigned char> rx(100, 0xee), rx1(100);
    ASSERT_EQ(b->post_recv(2, 1, rx.data(), rx.size(), 5), ODL_OK);
    auto m = pattern(100, 7);
    ASSERT_EQ(a->post_send(3, 1, m.data(), m.size(), 1), ODL_OK);  // unexpected on stream 3
    pump();
    ASSERT_EQ(b->discard(2, 0, 0, 0), ODL_OK);
    ASSERT_EQ(b->cancel(2, 5), ODL_OK) << "the receive stays posted";
    ASSERT_EQ(b->post_recv(3, 1, rx1.data(), rx1.size(), 6), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size(), 2u);
    EXPECT_EQ(done_b[0].status, ODL_ERR_CANCELED);
    EXPECT_EQ(done_b[1].ctx, 6u);
    EXPECT_EQ(done_b[1].status, ODL_OK);
    EXPECT_EQ(rx1, m) << "stream 3 kept its message";
    EXPECT_EQ(b->discard(4, 0, 0, 0), ODL_ERR_INVAL);
}

TEST_F(EnginePair, ReportsLocalIdentity) {
    odl_dev_info ia{}, ib{};
    a->query(ia);
    b->query(ib);
    EXPECT_STREQ(ia.local_name, "node");
    EXPECT_EQ(ia.local_pid, uint32_t(getpid()));
    EXPECT_EQ(ia.local_host_id, ib.peer_host_id);
}

}  // namespace

// A timed link (the sim backend's model) hands frames over before they are
// due: the engine takes them at once, but what they complete is the
// program's at the due time, not before; and it says when the program asked
// to send each message.
class TimedPair : public ::testing::Test {
protected:
    void SetUp() override { make(config(), config()); }
    void make(const open_config& ca, const open_config& cb) {
        a.reset();
        b.reset();
        mem_link_pair links;
        state = links.state;
        state->due_ns = [this](int) { return hold_until; };
        state->lossy[0] = state->lossy[1] = lossy;
        a = std::make_unique<engine>(std::move(links.a), ca);
        b = std::make_unique<engine>(std::move(links.b), cb);
        for (int i = 0; i < 1000 && (a->link_state() != ODL_LINK_UP || b->link_state() != ODL_LINK_UP); ++i) {
            odl_completion c[4];
            a->poll(c, 4);
            b->poll(c, 4);
        }
        ASSERT_EQ(b->link_state(), uint32_t(ODL_LINK_UP));
    }
    /// Polls both until @e has @want completions or @limit_ns passed.
    std::vector<odl_completion> wait_for(engine& e, uint64_t limit_ns, size_t want = 1) {
        std::vector<odl_completion> got;
        const uint64_t end = odl::now_ns() + limit_ns;
        while (got.size() < want && odl::now_ns() < end) {
            odl_completion c[4];
            engine& other = &e == a.get() ? *b : *a;
            other.poll(c, 4);
            const size_t n = e.poll(c, 4);
            got.insert(got.end(), c, c + n);
        }
        return got;
    }
    uint64_t hold_until = 0;
    bool lossy = false;  ///< both links may lose frames: retransmission, with ACKs
    std::shared_ptr<odl::test::mem_link_pair_state> state;
    std::unique_ptr<engine> a, b;
};

TEST_F(TimedPair, HoldsACompletionUntilItsFrameIsDue) {
    const auto tx = pattern(100, 3);
    std::vector<unsigned char> rx(100);
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 5), ODL_OK);
    const uint64_t start = odl::now_ns();
    hold_until = start + 80'000'000;  // due in 80 ms
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 6), ODL_OK);
    odl_completion c[4];
    for (int i = 0; i < 20; ++i) {
        a->poll(c, 4);
        ASSERT_EQ(b->poll(c, 4), 0u) << "a completion before its frame was due";
    }
    EXPECT_EQ(state->q[0].frames.size(), 0u) << "the frame was not taken at once";
    EXPECT_EQ(rx, tx) << "the bytes are in place before the completion";
    const auto got = wait_for(*b, 2'000'000'000);
    const uint64_t at = odl::now_ns();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].status, ODL_OK);
    EXPECT_EQ(got[0].ctx, 5u);
    EXPECT_GE(at, hold_until) << "completed " << (hold_until - at) / 1000 << " us before it was due";
    EXPECT_LT(at - hold_until, 1'000'000'000u);
}

TEST_F(TimedPair, ACompletionDueWithinAPollIsWaitedForInThatPoll) {
    // The modelled completion time already holds the host's own polling: a
    // completion due within spin_to_due_ns (2 us; here b's is 10 ms, so
    // that a loaded machine's slow poll cannot decide the test) after a
    // poll starts is returned by that poll, at its due time, not by the
    // caller's next one. A trial whose poll started only after the due time
    // (this thread preempted) proves nothing and is run again.
    open_config cb = config();
    cb.spin_to_due_ns = 10'000'000;
    make(config(), cb);
    std::vector<unsigned char> rx(100);
    const auto tx = pattern(100, 9);
    int judged = 0;
    for (int trial = 0; trial < 20 && judged < 3; ++trial) {
        ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 10 + trial), ODL_OK);
        hold_until = odl::now_ns() + 20'000'000;
        ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 100 + trial), ODL_OK);
        odl_completion c[4];
        for (int i = 0; i < 20; ++i) {
            a->poll(c, 4);
            ASSERT_EQ(b->poll(c, 4), 0u) << "a completion 20 ms before its frame was due";
        }
        ASSERT_EQ(state->q[0].frames.size(), 0u) << "the frame was not taken";
        if (hold_until > odl::now_ns() + 4'000'000) usleep(useconds_t((hold_until - odl::now_ns()) / 1000 - 3000));
        uint64_t start = odl::now_ns();
        while (start + 2'000'000 < hold_until) start = odl::now_ns();  // 2 ms before it is due
        const size_t n = b->poll(c, 4);
        const uint64_t end = odl::now_ns();
        if (start >= hold_until) {  // preempted: the frame was due before the poll began
            wait_for(*b, 1'000'000'000);
            continue;
        }
        ++judged;
        ASSERT_EQ(n, 1u) << "a completion due " << (hold_until - start) / 1000
                         << " us after the poll began was left to the next";
        EXPECT_EQ(c[0].ctx, uint64_t(10 + trial));
        EXPECT_GE(end, hold_until) << "returned before it was due";
        EXPECT_EQ(rx, tx);
        for (int i = 0; i < 100; ++i) a->poll(c, 4);  // a's send completes
    }
    EXPECT_EQ(judged, 3) << "too few trials began their poll before the due time";
}

TEST_F(TimedPair, AFailedLinkHoldsNothingBack) {
    const auto tx = pattern(100, 4);
    std::vector<unsigned char> rx(100), rx2(100);
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 5), ODL_OK);
    ASSERT_EQ(b->post_recv(0, 2, rx2.data(), rx2.size(), 7), ODL_OK);
    hold_until = odl::now_ns() + 60'000'000'000;  // a minute away
    ASSERT_EQ(a->post_send(0, 1, tx.data(), tx.size(), 6), ODL_OK);
    odl_completion c[4];
    for (int i = 0; i < 20; ++i) {
        a->poll(c, 4);
        ASSERT_EQ(b->poll(c, 4), 0u);
    }
    state->cut = true;  // the link goes: the message that came first, then the error
    const auto got = wait_for(*b, 2'000'000'000, 2);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].ctx, 5u);
    EXPECT_EQ(got[0].status, ODL_OK);
    EXPECT_EQ(got[1].ctx, 7u);
    EXPECT_EQ(got[1].status, ODL_ERR_PEER_LOST);
}

TEST_F(TimedPair, SaysWhenTheProgramAskedForEachMessage) {
    const auto big = pattern(3 * ODL_FRAME_MAX_PAYLOAD + 10, 5);  // four frames
    const auto small = pattern(10, 6);
    std::vector<unsigned char> rx(big.size()), rx2(10);
    ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
    ASSERT_EQ(b->post_recv(0, 2, rx2.data(), rx2.size(), 2), ODL_OK);
    state->asked[0].clear();
    const uint64_t before = odl::now_ns();
    ASSERT_EQ(a->post_send(0, 1, big.data(), big.size(), 3), ODL_OK);
    ASSERT_EQ(a->post_send(0, 2, small.data(), small.size(), 4), ODL_OK);
    const uint64_t after = odl::now_ns();
    usleep(20'000);  // the frames go out later than they were asked for
    for (int i = 0; i < 100; ++i) {
        odl_completion c[4];
        a->poll(c, 4);
        b->poll(c, 4);
    }
    EXPECT_EQ(rx, big);
    EXPECT_EQ(rx2, small);
    ASSERT_EQ(state->asked[0].size(), 2u) << "one time per message, on its first frame";
    for (uint64_t t : state->asked[0]) {
        EXPECT_GE(t, before);
        EXPECT_LE(t, after);
    }
}

// The receiver's acknowledgement waits while what it acknowledges is held:
// a reply sent once the message is the program's carries it, so ping-pong
// over a timed link sends no ACK frames (as over the others).
TEST_F(TimedPair, APingPongNeedsNoAckFrames) {
    lossy = true;
    SetUp();
    ASSERT_TRUE(b->retx().on);
    std::vector<unsigned char> rx(64), back(64);
    const auto ping = pattern(64, 7);
    for (int round = 0; round < 5; ++round) {
        ASSERT_EQ(b->post_recv(0, 1, rx.data(), rx.size(), 1), ODL_OK);
        ASSERT_EQ(a->post_recv(0, 2, back.data(), back.size(), 2), ODL_OK);
        hold_until = odl::now_ns() + 300'000;  // each frame due 0.3 ms after it was sent (probes come after 2 ms)
        ASSERT_EQ(a->post_send(0, 1, ping.data(), ping.size(), 3), ODL_OK);
        auto got = wait_for(*b, 2'000'000'000);
        ASSERT_EQ(got.size(), 1u);
        ASSERT_EQ(got[0].ctx, 1u);
        hold_until = odl::now_ns() + 300'000;
        ASSERT_EQ(b->post_send(0, 2, rx.data(), rx.size(), 4), ODL_OK);
        bool pong = false;  // (the ping's send may have completed already)
        for (int i = 0; i < 3 && !pong; ++i)
            for (const odl_completion& c : wait_for(*a, 2'000'000'000)) pong = pong || c.ctx == 2;
        ASSERT_TRUE(pong);
        ASSERT_EQ(back, ping);
    }
    EXPECT_EQ(b->retx().acks, 0u) << "the receiver acknowledged before its answer could carry it (" << b->retx().acks << " ACKs in 5 rounds)";
}
