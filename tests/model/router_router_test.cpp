// SPDX-License-Identifier: MIT
// Host router: control packets (good, bad CRC, bad route, bad length),
// config spaces, router operations, hot-plug events, XDomain forwarding.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

#include "model_fixture.h"
#include "odl/model/router/ctl_packet.h"
#include "odl/model/router/router.h"

namespace odl::model {
namespace {

using sc_core::sc_time;
using sc_core::SC_US;

/// Captures what a router hands to its NHI.
struct fake_nhi : router_client {
    std::vector<frame_ptr> ctl;
    void router_ctl_to_host(frame_ptr f) override { ctl.push_back(std::move(f)); }
    void router_frame_to_host(unsigned, frame_ptr) override {}
    bool router_reserve_rx(unsigned) override { return true; }
    void router_release_rx(unsigned) override {}
    void router_credits_returned() override {}
};

router_config RouterTest_cfg(std::uint64_t uid) {
    router_config c;
    c.uid = uid;
    return c;
}

class RouterTest : public ::testing::Test {
protected:
    RouterTest()
        : sched("sched"), a("a", sched, log, cfg(1)), b("b", sched, log, cfg(2)),
          link("cable", sched, log, link_config{}, link_physics{}, sc_time(10, SC_US), 1) {
        a.attach_nhi(&na);
        b.attach_nhi(&nb);
        a.connect(1, link, 0);
        b.connect(1, link, 1);
    }
    static router_config cfg(std::uint64_t uid) {
        router_config c;
        c.uid = uid;
        return c;
    }
    /// Sends @dw (pdf) from A's CM and runs 1 ms; returns A's answers.
    std::vector<frame_ptr> send(const std::vector<std::uint32_t>& dw, std::uint8_t pdf,
                                bool break_crc = false) {
        auto f = make_frame();
        f->bytes = ctl::encode(dw);
        if (break_crc) f->bytes.back() ^= 0x01;
        f->len = static_cast<std::uint32_t>(f->bytes.size());
        f->eof = f->sof = pdf;
        f->control = true;
        na.ctl.clear();
        a.from_host_ctl(std::move(f));
        run(sc_time(1000, SC_US));
        return std::move(na.ctl);
    }
    void run(sc_time d) { sc_core::sc_start(d); }
    static std::vector<std::uint32_t> dwords(const frame_ptr& f) {
        bool ok = false;
        auto dw = ctl::decode(f->bytes, &ok);
        EXPECT_TRUE(ok) << "CRC of a router packet";
        return dw ? *dw : std::vector<std::uint32_t>{};
    }
    static unsigned err_code(const frame_ptr& f) { return dwords(f).at(2) & 0xff; }

    sim_session session;
    scheduler sched;
    trace_log log;
    fake_nhi na, nb;
    router a, b;
    cable link;
};

TEST(CtlPacket, MatchesLinuxWorkedExample) {
    // usb4-emulation.md 4.6: read request, route 0, router space, offset 0, length 1.
    const auto bytes = ctl::encode(ctl::read_request(0, ODL_USB4_SPACE_SWITCH, 0, 0, 1));
    const std::vector<std::uint8_t> want = {0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0x00, 0x20, 0x00,
                                            0x2f, 0xc9, 0x67, 0xac};
    EXPECT_EQ(bytes, want);
    const auto plug = ctl::encode(ctl::event_packet(0, 1, false));
    EXPECT_EQ(plug.back(), 0xc6);  // 10 45 f6 c6
    const std::uint8_t check[] = {'1', '2', '3', '4', '5', '6', '7', '8', '9'};
    EXPECT_EQ(ctl::crc32c(check, 9), 0xE3069283u);
}

TEST_F(RouterTest, ReadsRouterConfigSpace) {
    const auto r = send(ctl::read_request(0, ODL_USB4_SPACE_SWITCH, 0, 0, 9, 2), ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0]->eof, ODL_USB4_PDF_READ);
    EXPECT_EQ(r[0]->sof, 0);
    const auto dw = dwords(r[0]);
    ASSERT_EQ(dw.size(), 3u + 9u) << "exactly 12 + 4*length bytes";
    EXPECT_TRUE(dw[0] & ODL_USB4_HDR0_ROUTER);
    EXPECT_EQ((dw[2] >> ODL_USB4_ADDR_SEQ_SHIFT) & 3u, 2u) << "seq echoed";
    EXPECT_EQ(dw[3 + ODL_ROUTER_CS_4] >> 24, ODL_USB4_VERSION_1_0);
    EXPECT_EQ(dw[3 + ODL_ROUTER_CS_7], 1u) << "UID";
    std::uint32_t uid_b = 0;
    ASSERT_TRUE(b.cs_read(ODL_USB4_SPACE_SWITCH, 0, ODL_ROUTER_CS_7, &uid_b));
    EXPECT_NE(uid_b, dw[3 + ODL_ROUTER_CS_7]);
}

TEST_F(RouterTest, WriteAnswersExactlyTwelveBytesAndKeepsReadOnlyBits) {
    std::uint32_t before = 0;
    ASSERT_TRUE(a.cs_read(ODL_USB4_SPACE_SWITCH, 0, ODL_ROUTER_CS_1, &before));
    const auto r = send(ctl::write_request(0, ODL_USB4_SPACE_SWITCH, 0, ODL_ROUTER_CS_1,
                                           {0xffffffffu, 0, 0x80000000u}),
                        ODL_USB4_PDF_WRITE);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(dwords(r[0]).size(), 3u);
    std::uint32_t after = 0, v3 = 0;
    a.cs_read(ODL_USB4_SPACE_SWITCH, 0, ODL_ROUTER_CS_1, &after);
    a.cs_read(ODL_USB4_SPACE_SWITCH, 0, ODL_ROUTER_CS_3, &v3);
    EXPECT_EQ(after & ODL_ROUTER_CS_1_RO_MASK, before & ODL_ROUTER_CS_1_RO_MASK);
    EXPECT_EQ(v3, ODL_ROUTER_CS_3_V);
}

TEST_F(RouterTest, BadCrcIsDroppedWithoutAnswer) {
    const auto r = send(ctl::read_request(0, ODL_USB4_SPACE_SWITCH, 0, 0, 1), ODL_USB4_PDF_READ, true);
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(a.stats().ctl_bad_crc, 1u);
    EXPECT_EQ(log.warnings().size(), 1u);
}

TEST_F(RouterTest, BadRouteGetsErrAdp) {
    const auto r = send(ctl::read_request(5, ODL_USB4_SPACE_SWITCH, 0, 0, 1), ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(r[0]->eof, ODL_USB4_PDF_ERROR);
    EXPECT_EQ(err_code(r[0]), ODL_USB4_ERR_ADP);
    EXPECT_EQ(ctl::route_of(dwords(r[0])), 5u);
}

TEST_F(RouterTest, ReadAcrossCableGetsErrConnThenErrNua) {
    // Unplugged: ERR_CONN; linked to another host: ERR_NUA (XDomain found).
    auto r = send(ctl::read_request(1, ODL_USB4_SPACE_SWITCH, 0, 0, 1), ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(err_code(r[0]), ODL_USB4_ERR_CONN);
    link.plug();
    run(sc_time(50, SC_US));
    r = send(ctl::read_request(1, ODL_USB4_SPACE_SWITCH, 0, 0, 1), ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(err_code(r[0]), ODL_USB4_ERR_NUA);
    EXPECT_EQ((dwords(r[0])[2] >> ODL_USB4_ERR_PORT_SHIFT) & 0x3f, 1u);
}

TEST_F(RouterTest, BadLengthGetsErrLen) {
    auto dw = ctl::read_request(0, ODL_USB4_SPACE_SWITCH, 0, 0, 1);
    dw.push_back(0);  // a read request with a stray data dword
    auto r = send(dw, ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(err_code(r[0]), ODL_USB4_ERR_LEN);
    r = send(ctl::read_request(0, ODL_USB4_SPACE_SWITCH, 0, 0, 61), ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(err_code(r[0]), ODL_USB4_ERR_LEN);
}

TEST_F(RouterTest, MissingAdapterOrOffsetGetsErrAddr) {
    auto r = send(ctl::read_request(0, ODL_USB4_SPACE_PORT, 7, 0, 8), ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(err_code(r[0]), ODL_USB4_ERR_ADDR);
    r = send(ctl::read_request(0, ODL_USB4_SPACE_SWITCH, 0, 0x50, 4), ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(err_code(r[0]), ODL_USB4_ERR_ADDR);
}

TEST_F(RouterTest, RouterOperationsAnswerNotSupportedAtOnce) {
    send(ctl::write_request(0, ODL_USB4_SPACE_SWITCH, 0, ODL_ROUTER_CS_26,
                            {0x33u | ODL_ROUTER_CS_26_OV}),
         ODL_USB4_PDF_WRITE);
    std::uint32_t v = 0;
    a.cs_read(ODL_USB4_SPACE_SWITCH, 0, ODL_ROUTER_CS_26, &v);
    EXPECT_EQ(v, 0x33u | ODL_ROUTER_CS_26_ONS);
}

TEST_F(RouterTest, PathEntriesStoreAndPendingReadsZero) {
    send(ctl::write_request(0, ODL_USB4_SPACE_HOPS, 1, 16, {0x80000000u | 2u, 0xffffffffu}),
         ODL_USB4_PDF_WRITE);
    std::uint32_t d1 = 0;
    a.cs_read(ODL_USB4_SPACE_HOPS, 1, 17, &d1);
    EXPECT_EQ(d1 & ODL_HOP1_PENDING, 0u);
    EXPECT_EQ(d1 & ODL_HOP1_IFC, ODL_HOP1_IFC);
}

TEST_F(RouterTest, PlugAcknowledgementsAreReportedWithAdapterAndKind) {
    std::vector<std::pair<unsigned, bool>> acks;
    a.on_plug_ack([&](unsigned adapter, bool unplug) { acks.emplace_back(adapter, unplug); });
    // Linux's tb_cfg_ack_plug(): an unplug ACK for adapter 1, a plug ACK for 3.
    EXPECT_TRUE(send(ctl::plug_ack(0, 1, true), ODL_USB4_PDF_ERROR).empty()) << "an ACK gets no answer";
    send(ctl::plug_ack(0, 3, false), ODL_USB4_PDF_ERROR);
    // Other error-type packets are not acknowledgements.
    auto other = ctl::plug_ack(0, 1, true);
    other[2] = (other[2] & ~ODL_USB4_ERR_CODE_MASK) | ODL_USB4_ERR_CONN;
    send(other, ODL_USB4_PDF_ERROR);
    const std::vector<std::pair<unsigned, bool>> want{{1, true}, {3, false}};
    EXPECT_EQ(acks, want);
}

TEST_F(RouterTest, HotPlugEventsOnlyAfterDhpCleared) {
    link.plug();
    run(sc_time(50, SC_US));
    EXPECT_TRUE(na.ctl.empty()) << "DHP=1 at reset";
    std::uint32_t v = 0;
    a.cs_read(ODL_USB4_SPACE_PORT, 1, ODL_ADP_CS_5, &v);
    a.cs_write(ODL_USB4_SPACE_PORT, 1, ODL_ADP_CS_5, v & ~ODL_ADP_CS_5_DHP);
    link.unplug();
    run(sc_time(5, SC_US));
    ASSERT_EQ(na.ctl.size(), 1u);
    EXPECT_EQ(na.ctl[0]->eof, ODL_USB4_PDF_EVENT);
    // usb4-emulation.md 4.6: unplug event for adapter 1, exact bytes.
    const std::vector<std::uint8_t> want = {0x80, 0, 0, 0, 0, 0, 0, 0, 0x80, 0, 0, 0x01,
                                            0x42, 0xe5, 0x3f, 0xf9};
    EXPECT_EQ(na.ctl[0]->bytes, want);
    std::uint32_t cs1 = 0;
    a.cs_read(ODL_USB4_SPACE_PORT, 1, ODL_LANE_CAP + 1, &cs1);
    EXPECT_EQ((cs1 >> ODL_LANE_ADP_CS_1_STATE_SHIFT) & 0xf, unsigned{ODL_LANE_UNPLUGGED});
}

TEST_F(RouterTest, XDomainPacketIsForwardedWithRouteRewritten) {
    link.plug();
    run(sc_time(50, SC_US));
    std::vector<std::uint32_t> dw;
    ctl::put_route(dw, 1, false);                 // A's route to its XDomain port
    dw.push_back(5);                              // length_sn: 5 dwords follow
    for (std::uint32_t i = 0; i < 5; ++i) dw.push_back(0x11111111u * (i + 1));
    const auto r = send(dw, ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_TRUE(r.empty()) << "nothing back to A";
    ASSERT_EQ(nb.ctl.size(), 1u);
    EXPECT_EQ(nb.ctl[0]->eof, ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_EQ(nb.ctl[0]->sof, 0);
    const auto got = dwords(nb.ctl[0]);  // CRC recomputed
    ASSERT_EQ(got.size(), dw.size());
    EXPECT_EQ(got[0], ODL_USB4_HDR0_ROUTER) << "bit 63 set";
    EXPECT_EQ(got[1], 1u) << "B's ingress adapter";
    for (std::size_t i = 2; i < dw.size(); ++i) EXPECT_EQ(got[i], dw[i]);
    EXPECT_EQ(a.stats().xdomain_forwarded, 1u);
}

TEST_F(RouterTest, PortResetDropsAndRetrainsLink) {
    link.plug();
    run(sc_time(50, SC_US));
    ASSERT_TRUE(a.lane_up(1));
    a.cs_write(ODL_USB4_SPACE_PORT, 1, ODL_PORT_CAP + ODL_PORT_CS_19, ODL_PORT_CS_19_DPR);
    EXPECT_FALSE(a.lane_up(1));
    EXPECT_FALSE(b.lane_up(1));
    run(sc_time(50, SC_US));
    EXPECT_TRUE(a.lane_up(1));
}


// Two USB4 ports with an unimplemented adapter between their lane adapters
// (lane_stride 2, odl-linkd with 3 or 4 hosts): Linux must not pair them
// as the two lanes of one port, must find each port's XDomain by its own
// route, and must read "not implemented" where lane 1 would be.
TEST(RouterTwoPorts, LaneAdaptersOneThreeNhiFourAndEachPortItsOwnLink) {
    sim_session session;
    scheduler sched("sched");
    trace_log log;
    router_config c;
    c.lane_ports = 2;
    c.lane_stride = 2;
    c.uid = 10;
    fake_nhi nm, n1, n3;
    router mid("mid", sched, log, c), left("left", sched, log, RouterTest_cfg(11)),
        right("right", sched, log, RouterTest_cfg(12));
    mid.attach_nhi(&nm);
    left.attach_nhi(&n1);
    right.attach_nhi(&n3);
    EXPECT_EQ(mid.nhi_adapter(), 4u);
    EXPECT_EQ(mid.lane_adapter(1), 1u);
    EXPECT_EQ(mid.lane_adapter(2), 3u);
    EXPECT_FALSE(mid.is_lane(2));
    cable l1("c1", sched, log, link_config{}, link_physics{}, sc_time(10, SC_US), 1);
    cable l3("c3", sched, log, link_config{}, link_physics{}, sc_time(10, SC_US), 2);
    EXPECT_THROW(mid.connect(2, l1, 0), std::invalid_argument);
    mid.connect(1, l1, 0);
    left.connect(1, l1, 1);
    mid.connect(3, l3, 0);
    right.connect(1, l3, 1);

    std::uint32_t v = 0;
    ASSERT_TRUE(mid.cs_read(ODL_USB4_SPACE_SWITCH, 0, ODL_ROUTER_CS_1, &v));
    EXPECT_EQ((v >> 8) & 0x3f, 4u) << "max port number";
    EXPECT_FALSE(mid.cs_read(ODL_USB4_SPACE_PORT, 2, ODL_ADP_CS_2, &v)) << "adapter 2 is not implemented";
    EXPECT_FALSE(mid.cs_read(ODL_USB4_SPACE_HOPS, 2, 0, &v));
    ASSERT_TRUE(mid.cs_read(ODL_USB4_SPACE_PORT, 3, ODL_ADP_CS_2, &v));
    EXPECT_EQ(v & 0xffffff, static_cast<std::uint32_t>(ODL_ADP_TYPE_LANE));
    ASSERT_TRUE(mid.cs_read(ODL_USB4_SPACE_PORT, 4, ODL_ADP_CS_2, &v));
    EXPECT_EQ(v & 0xffffff, static_cast<std::uint32_t>(ODL_ADP_TYPE_NHI));

    // A CM's read of adapter 2's port space: ERR_ADDR (Linux: "not implemented").
    auto ask = [&](const std::vector<std::uint32_t>& dw, std::uint8_t pdf) {
        auto f = make_frame();
        f->bytes = ctl::encode(dw);
        f->len = static_cast<std::uint32_t>(f->bytes.size());
        f->eof = f->sof = pdf;
        f->control = true;
        nm.ctl.clear();
        mid.from_host_ctl(std::move(f));
        sc_core::sc_start(sc_time(1000, SC_US));
        return std::move(nm.ctl);
    };
    auto code = [](const frame_ptr& f) {
        bool ok = false;
        return ctl::decode(f->bytes, &ok)->at(2) & 0xff;
    };
    auto r = ask(ctl::read_request(0, ODL_USB4_SPACE_PORT, 2, 0, 8), ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(code(r[0]), static_cast<unsigned>(ODL_USB4_ERR_ADDR));
    r = ask(ctl::read_request(2, ODL_USB4_SPACE_SWITCH, 0, 0, 1), ODL_USB4_PDF_READ);
    ASSERT_EQ(r.size(), 1u);
    EXPECT_EQ(code(r[0]), static_cast<unsigned>(ODL_USB4_ERR_ADP)) << "route 2 leads nowhere";

    // Each port trains with its own cable and finds another domain there.
    l1.plug();
    l3.plug();
    sc_core::sc_start(sc_time(50, SC_US));
    EXPECT_TRUE(mid.lane_up(1));
    EXPECT_TRUE(mid.lane_up(3));
    EXPECT_FALSE(mid.lane_up(2));
    for (unsigned port : {1u, 3u}) {
        r = ask(ctl::read_request(port, ODL_USB4_SPACE_SWITCH, 0, 0, 1), ODL_USB4_PDF_READ);
        ASSERT_EQ(r.size(), 1u);
        EXPECT_EQ(code(r[0]), static_cast<unsigned>(ODL_USB4_ERR_NUA)) << "port " << port;
    }
    // An XDomain packet to route 3 reaches the right-hand host only.
    std::vector<std::uint32_t> dw;
    ctl::put_route(dw, 3, false);
    dw.push_back(2);
    dw.push_back(0xabcd0001u);
    dw.push_back(0xabcd0002u);
    n1.ctl.clear();
    n3.ctl.clear();
    r = ask(dw, ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_TRUE(r.empty());
    EXPECT_TRUE(n1.ctl.empty()) << "the left host got right's packet";
    ASSERT_EQ(n3.ctl.size(), 1u);
    // Unplugging port 3's cable leaves port 1 up.
    l3.unplug();
    sc_core::sc_start(sc_time(50, SC_US));
    EXPECT_TRUE(mid.lane_up(1));
    EXPECT_FALSE(mid.lane_up(3));
}

}  // namespace
}  // namespace odl::model
