// SPDX-License-Identifier: MIT
// Tests for the frame engine's link-wide credit (HELLO.link_window,
// LINK_CREDIT): per-stream windows may add up to more than the transport
// holds, yet no more than link_window data frames are ever in flight.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <unistd.h>

#include "engine.h"
#include "engine_test_data.h"
#include "mem_link.h"
#include "peer_frames.h"
#include "odl/wire/frame_codec.h"

namespace {

using odl::engine;
using odl::open_config;
using odl::test::mem_link_pair;

constexpr uint32_t kLinkWindow = 8;

using odl::test::pattern;

open_config config(uint32_t link_window, uint32_t streams = 4, uint32_t window = 64) {
    return odl::test::engine_config(streams, window, link_window);
}

size_t frames_of(const std::deque<std::vector<unsigned char>>& q, uint8_t type) {
    size_t n = 0;
    for (const auto& f : q) n += !f.empty() && f[0] == type;
    return n;
}

class LinkCredit : public ::testing::Test {
protected:
    void make(const open_config& ca, const open_config& cb) {
        mem_link_pair links;
        state = links.state;
        // Room for far more frames than the link window: only the window
        // may hold the sender back.
        state->q[0].capacity = state->q[1].capacity = 1024;
        a = std::make_unique<engine>(std::move(links.a), ca);
        b = std::make_unique<engine>(std::move(links.b), cb);
        pump();
        ASSERT_EQ(a->link_state(), uint32_t(ODL_LINK_UP));
        ASSERT_EQ(b->link_state(), uint32_t(ODL_LINK_UP));
    }

    /// Polls both ends until nothing moves (bounded); records the most data
    /// frames ever queued toward b, as the transport sees them.
    void pump(int rounds = 200000) {
        for (int i = 0; i < rounds; ++i) {
            odl_completion c[16];
            size_t na = a->poll(c, 16);
            done_a.insert(done_a.end(), c, c + na);
            max_queued_to_b = std::max(max_queued_to_b, frames_of(state->q[0].frames, ODL_FRAME_DATA));
            size_t nb = b->poll(c, 16);
            done_b.insert(done_b.end(), c, c + nb);
            if (na == 0 && nb == 0 && state->q[0].frames.empty() && state->q[1].frames.empty() && i > 2) return;
        }
    }

    std::shared_ptr<odl::test::mem_link_pair_state> state;
    std::unique_ptr<engine> a, b;
    std::vector<odl_completion> done_a, done_b;
    size_t max_queued_to_b = 0;
};

TEST_F(LinkCredit, ManyStreamsShareASmallLinkWindowAndLoseNothing) {
    make(config(kLinkWindow), config(kLinkWindow));
    ASSERT_EQ(a->link_credit().peer_window, kLinkWindow);
    const uint32_t streams = 4;
    const size_t per_stream = 6;
    std::vector<std::vector<unsigned char>> tx, rx;
    for (uint32_t s = 0; s < streams; ++s)
        for (size_t m = 0; m < per_stream; ++m) {
            // 0 bytes up to ~25 frames, so frames of all streams interleave.
            const size_t len = (m * 37 + s * 11) % 5 == 0 ? 0 : (s + 1) * (m + 1) * 4093;
            tx.push_back(pattern(len, unsigned(s * 100 + m)));
            rx.emplace_back(len + 8, 0xee);
        }
    for (size_t i = 0; i < tx.size(); ++i) {
        const uint32_t s = uint32_t(i / per_stream);
        ASSERT_EQ(b->post_recv(s, 3, rx[i].data(), rx[i].size(), i), ODL_OK);
        ASSERT_EQ(a->post_send(s, 3, tx[i].data(), tx[i].size(), i), ODL_OK);
    }
    pump();
    ASSERT_EQ(done_a.size(), tx.size());
    ASSERT_EQ(done_b.size(), tx.size());
    for (const auto& c : done_b) {
        ASSERT_EQ(c.status, ODL_OK);
        ASSERT_EQ(c.len, tx[c.ctx].size());
        EXPECT_TRUE(std::equal(tx[c.ctx].begin(), tx[c.ctx].end(), rx[c.ctx].begin())) << "message " << c.ctx;
        EXPECT_EQ(rx[c.ctx][tx[c.ctx].size()], 0xee) << "wrote past message " << c.ctx;
    }
    const auto lc = a->link_credit();
    EXPECT_EQ(lc.max_outstanding, kLinkWindow) << "the window was never reached or was exceeded";
    EXPECT_GT(lc.stalls, 0u);
    EXPECT_LE(max_queued_to_b, kLinkWindow);
    EXPECT_GT(b->link_credit().returns_sent, 0u);
    EXPECT_EQ(b->error_status(), ODL_OK) << b->failure();
}

TEST_F(LinkCredit, WithoutALinkWindowTheStreamsTogetherSendMore) {
    // The control for the test above: the same traffic, no link window.
    make(config(0), config(0));
    EXPECT_EQ(a->link_credit().peer_window, 0u);
    std::vector<std::vector<unsigned char>> tx, rx;
    for (uint32_t s = 0; s < 4; ++s) {
        tx.push_back(pattern(20 * ODL_FRAME_MAX_PAYLOAD, s));
        rx.emplace_back(tx.back().size());
        ASSERT_EQ(b->post_recv(s, 1, rx[s].data(), rx[s].size(), s), ODL_OK);
        ASSERT_EQ(a->post_send(s, 1, tx[s].data(), tx[s].size(), s), ODL_OK);
    }
    pump();
    ASSERT_EQ(done_b.size(), 4u);
    EXPECT_GT(a->link_credit().max_outstanding, kLinkWindow);
    EXPECT_EQ(a->link_credit().stalls, 0u);
    EXPECT_EQ(b->link_credit().returns_sent, 0u);
}

TEST_F(LinkCredit, UnexpectedMessagesOnOneStreamDoNotBlockAnother) {
    // Stream 0's messages have no receive: the engine buffers them (their
    // stream credit is withheld) but gives their transport buffers back, so
    // stream 1 still gets through a link window far below stream 0's load.
    make(config(kLinkWindow), config(kLinkWindow));
    auto big = pattern(40 * ODL_FRAME_MAX_PAYLOAD, 1);
    auto small = pattern(3 * ODL_FRAME_MAX_PAYLOAD + 5, 2);
    std::vector<unsigned char> rx_small(small.size()), rx_big(big.size());
    ASSERT_EQ(a->post_send(0, 1, big.data(), big.size(), 1), ODL_OK);
    pump();
    EXPECT_TRUE(done_b.empty());
    ASSERT_EQ(b->post_recv(1, 2, rx_small.data(), rx_small.size(), 20), ODL_OK);
    ASSERT_EQ(a->post_send(1, 2, small.data(), small.size(), 2), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size(), 1u);
    EXPECT_EQ(done_b[0].ctx, 20u);
    EXPECT_EQ(done_b[0].status, ODL_OK);
    EXPECT_EQ(rx_small, small);
    // And the buffered message is still whole.
    ASSERT_EQ(b->post_recv(0, 1, rx_big.data(), rx_big.size(), 10), ODL_OK);
    pump();
    ASSERT_EQ(done_b.size(), 2u);
    EXPECT_EQ(done_b[1].ctx, 10u);
    EXPECT_EQ(rx_big, big);
    EXPECT_EQ(done_a.size(), 2u);
    EXPECT_LE(a->link_credit().max_outstanding, kLinkWindow);
}

TEST_F(LinkCredit, BothSidesSendingAtOnceFinish) {
    // Each side's data waits on credit the other returns in control frames,
    // which no link window holds back.
    make(config(kLinkWindow), config(kLinkWindow));
    std::vector<std::vector<unsigned char>> txa, txb, rxa, rxb;
    for (uint32_t s = 0; s < 4; ++s) {
        txa.push_back(pattern(30 * ODL_FRAME_MAX_PAYLOAD + s, s));
        txb.push_back(pattern(25 * ODL_FRAME_MAX_PAYLOAD + s, s + 10));
        rxa.emplace_back(txb[s].size());
        rxb.emplace_back(txa[s].size());
    }
    for (uint32_t s = 0; s < 4; ++s) {
        ASSERT_EQ(a->post_recv(s, 7, rxa[s].data(), rxa[s].size(), 100 + s), ODL_OK);
        ASSERT_EQ(b->post_recv(s, 7, rxb[s].data(), rxb[s].size(), 100 + s), ODL_OK);
        ASSERT_EQ(a->post_send(s, 7, txa[s].data(), txa[s].size(), s), ODL_OK);
        ASSERT_EQ(b->post_send(s, 7, txb[s].data(), txb[s].size(), s), ODL_OK);
    }
    pump();
    ASSERT_EQ(done_a.size(), 8u);
    ASSERT_EQ(done_b.size(), 8u);
    for (const auto& c : done_a) EXPECT_EQ(c.status, ODL_OK);
    for (const auto& c : done_b) EXPECT_EQ(c.status, ODL_OK);
    EXPECT_EQ(rxa, txb);
    EXPECT_EQ(rxb, txa);
    EXPECT_EQ(a->link_credit().max_outstanding, kLinkWindow);
    EXPECT_EQ(b->link_credit().max_outstanding, kLinkWindow);
}

TEST_F(LinkCredit, OnlyTheSideThatSetAWindowIsProtected) {
    // a asks for a link limit, b does not: b obeys a's, a sends freely.
    make(config(kLinkWindow), config(0));
    EXPECT_EQ(b->link_credit().peer_window, kLinkWindow);
    EXPECT_EQ(a->link_credit().peer_window, 0u);
    std::vector<unsigned char> t1 = pattern(30 * ODL_FRAME_MAX_PAYLOAD, 1), t2 = pattern(30 * ODL_FRAME_MAX_PAYLOAD, 2);
    std::vector<unsigned char> r1(t1.size()), r2(t2.size());
    ASSERT_EQ(a->post_recv(0, 1, r1.data(), r1.size(), 1), ODL_OK);
    ASSERT_EQ(b->post_recv(0, 1, r2.data(), r2.size(), 2), ODL_OK);
    ASSERT_EQ(b->post_send(0, 1, t1.data(), t1.size(), 1), ODL_OK);
    ASSERT_EQ(a->post_send(0, 1, t2.data(), t2.size(), 2), ODL_OK);
    pump();
    EXPECT_EQ(r1, t1);
    EXPECT_EQ(r2, t2);
    EXPECT_EQ(b->link_credit().max_outstanding, kLinkWindow);
    EXPECT_GT(a->link_credit().max_outstanding, kLinkWindow);
    EXPECT_EQ(a->link_credit().returns_sent > 0, true);
    EXPECT_EQ(b->link_credit().returns_sent, 0u);
}

/// Frames from a hand-driven peer.
using odl::test::peer_frame;

std::vector<unsigned char> hello(uint16_t minor, uint32_t features, uint32_t link_window) {
    return odl::test::hello_frame(odl::test::peer_hello(features, minor, link_window));
}

std::vector<unsigned char> data(uint16_t stream, uint32_t seq) {
    odl_frame_info fi{};
    fi.type = ODL_FRAME_DATA;
    fi.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM;
    fi.stream = stream;
    fi.seq = seq;
    return peer_frame(fi);
}

/// Engine b alone; the test plays side 0 by hand.
struct HandPeer : ::testing::Test {
    mem_link_pair links;
    std::unique_ptr<engine> b;
    std::vector<odl_completion> done;

    void start(const open_config& cb, std::vector<unsigned char> peer_hello) {
        links.state->q[0].capacity = links.state->q[1].capacity = 1024;
        b = std::make_unique<engine>(std::move(links.b), cb);
        links.inject(0, std::move(peer_hello));
        poll(10);
        ASSERT_EQ(b->link_state(), uint32_t(ODL_LINK_UP)) << b->failure();
    }
    void poll(int rounds) {
        for (int i = 0; i < rounds; ++i) {
            odl_completion c[16];
            const size_t n = b->poll(c, 16);
            done.insert(done.end(), c, c + n);
        }
    }
    auto& from_b() { return links.state->q[1].frames; }
};

TEST_F(HandPeer, PeerWithoutTheFeatureIsNotLimitedAndGetsNoLinkCredit) {
    // A 1.0 peer: no ODL_FEAT_LINK_CREDIT, link_window 0. It ignores our
    // window, so exceeding it is no error, and it would refuse LINK_CREDIT.
    start(config(kLinkWindow), hello(0, ODL_FEAT_CSUM, 0));
    ASSERT_EQ(from_b().size(), 1u);  // b's HELLO, which does state the window
    odl_hello h;
    std::memcpy(&h, from_b().front().data() + ODL_FRAME_HDR_BYTES, sizeof(h));
    EXPECT_EQ(odl_le32(h.link_window), kLinkWindow);
    EXPECT_TRUE(odl_le32(h.features) & ODL_FEAT_LINK_CREDIT);
    EXPECT_EQ(odl_le16(h.version_minor), ODL_PROTO_VERSION_MINOR);
    std::vector<unsigned char> rx(4);
    for (uint32_t i = 0; i < 5 * kLinkWindow; ++i) {
        ASSERT_EQ(b->post_recv(1, 0, rx.data(), rx.size(), i), ODL_OK);
        links.inject(0, data(1, i));
    }
    poll(50);
    EXPECT_EQ(b->error_status(), ODL_OK) << b->failure();
    EXPECT_EQ(done.size(), 5 * kLinkWindow);
    EXPECT_EQ(frames_of(from_b(), ODL_FRAME_LINK_CREDIT), 0u);
    EXPECT_EQ(b->link_credit().returns_sent, 0u);
}

TEST_F(HandPeer, RefusesAPeerThatIgnoresLinkCredit) {
    // The peer claims the feature yet sends a whole window and one more
    // frame with no LINK_CREDIT from us in between (stream windows allow it).
    start(config(kLinkWindow), hello(ODL_PROTO_VERSION_MINOR, ODL_FEAT_LINK_CREDIT, 0));
    from_b().clear();
    std::vector<unsigned char> rx(4);
    for (uint32_t i = 0; i <= kLinkWindow; ++i) {
        ASSERT_EQ(b->post_recv(uint32_t(i % 4), 0, rx.data(), rx.size(), i), ODL_OK);
        links.inject(0, data(uint16_t(i % 4), i / 4));
    }
    // One poll takes all of them before any credit can leave.
    poll(1);
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
    EXPECT_NE(b->failure().find("beyond its link credit"), std::string::npos) << b->failure();
}

TEST_F(HandPeer, ReturnsLinkCreditInBatchesWithoutReceivesPosted) {
    // No receive is posted, so no stream credit comes back, yet link credit
    // does: the transport's buffers are free.
    start(config(kLinkWindow), hello(ODL_PROTO_VERSION_MINOR, ODL_FEAT_LINK_CREDIT, 0));
    from_b().clear();
    for (uint32_t i = 0; i < kLinkWindow; ++i) links.inject(0, data(uint16_t(i % 4), i / 4));
    poll(3);
    EXPECT_EQ(b->error_status(), ODL_OK) << b->failure();
    uint32_t last = 0;
    size_t n = 0;
    for (const auto& f : from_b()) {
        odl_frame_info fi{};
        ASSERT_EQ(odl_frame_decode(f.data(), f.size(), 4, &fi), ODL_FRAME_OK);
        EXPECT_NE(fi.type, ODL_FRAME_CREDIT) << "stream credit for unreceived messages";
        if (fi.type == ODL_FRAME_LINK_CREDIT) {
            ++n;
            last = fi.credit;
        }
    }
    EXPECT_GE(n, 1u);
    EXPECT_EQ(last, kLinkWindow);
}

TEST_F(HandPeer, RefusesLinkCreditForFramesNeverSent) {
    start(config(0), hello(ODL_PROTO_VERSION_MINOR, ODL_FEAT_LINK_CREDIT, kLinkWindow));
    EXPECT_EQ(b->link_credit().peer_window, kLinkWindow);
    odl_frame_info fi{};
    fi.type = ODL_FRAME_LINK_CREDIT;
    fi.flags = ODL_FRAME_F_CREDIT;
    fi.credit = 1;
    links.inject(0, peer_frame(fi));
    poll(3);
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
    EXPECT_NE(b->failure().find("link credit 1 beyond"), std::string::npos) << b->failure();
}

TEST_F(HandPeer, LinkCreditFromAPeerWithoutAWindowIsRefused) {
    start(config(kLinkWindow), hello(ODL_PROTO_VERSION_MINOR, ODL_FEAT_LINK_CREDIT, 0));
    odl_frame_info fi{};
    fi.type = ODL_FRAME_LINK_CREDIT;
    fi.flags = ODL_FRAME_F_CREDIT;
    links.inject(0, peer_frame(fi));
    poll(3);
    EXPECT_EQ(b->error_status(), ODL_ERR_PROTO);
}

TEST_F(HandPeer, SenderStopsAtThePeersLinkWindowUntilCreditComes) {
    start(config(0), hello(ODL_PROTO_VERSION_MINOR, ODL_FEAT_LINK_CREDIT, kLinkWindow));
    from_b().clear();
    std::vector<unsigned char> tx(4);
    for (uint32_t i = 0; i < 3 * kLinkWindow; ++i) ASSERT_EQ(b->post_send(i % 4, 0, tx.data(), tx.size(), i), ODL_OK);
    poll(5);
    EXPECT_EQ(frames_of(from_b(), ODL_FRAME_DATA), kLinkWindow);
    EXPECT_GT(b->link_credit().stalls, 0u);
    odl_frame_info fi{};
    fi.type = ODL_FRAME_LINK_CREDIT;
    fi.flags = ODL_FRAME_F_CREDIT;
    fi.credit = 3;  // three frames back: exactly three more may go
    links.inject(0, peer_frame(fi));
    poll(5);
    EXPECT_EQ(frames_of(from_b(), ODL_FRAME_DATA), kLinkWindow + 3);
    EXPECT_EQ(b->error_status(), ODL_OK) << b->failure();
}

}  // namespace
