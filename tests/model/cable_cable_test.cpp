// SPDX-License-Identifier: MIT
// Cable timing end to end: one frame against the closed-form formula, the
// bandwidth plateau per generation, and unplug in the middle of a transfer.
#include <gtest/gtest.h>

#include <cmath>

#include "model_fixture.h"
#include "odl/wire/frame.h"

namespace odl::model {
namespace {

using namespace odl::model::testing;
using sc_core::sc_time;
using sc_core::SC_NS;
using sc_core::SC_US;
using sc_core::SC_MS;

TEST(CableTiming, SingleFrameMatchesClosedForm) {
    const platform p = plain_platform();
    link_config cfg;  // TB5, 2 lanes, 1 m
    cfg.length_m = 2.0;
    auto sys = two_hosts(p, p, cfg);
    const std::uint64_t msg = 64;
    sc_time sent, got;
    sys->hosts[1].drv->on_message([&](unsigned, std::uint32_t, std::uint64_t bytes) {
        EXPECT_EQ(bytes, msg);
        got = scheduler::now();
    });
    sys->start([&] {
        sys->sched.after(sc_time(10, SC_US), [&] {
            sent = scheduler::now();
            sys->hosts[0].drv->send(1, msg, 7);
        });
    });
    sys->run_until(sc_time(1, SC_MS));
    ASSERT_GT(got, sent);

    // Closed form, step by step (docs/model.md "one frame"):
    const std::uint32_t frame = static_cast<std::uint32_t>(msg) + ODL_FRAME_HDR_BYTES;
    const link_calibration l = plain_link();
    const double dma = 8000.0 * frame / p.nhi.pcie_gbps;  // ps
    double t = sent.to_seconds() * 1e12;
    t += (p.host.post + p.host.post_frame + p.host.mmio).to_seconds() * 1e12;  // doorbell at NHI
    t += 2 * p.nhi.pcie_rtt.to_seconds() * 1e12 + dma +
         p.nhi.frame_overhead.to_seconds() * 1e12;                  // descriptor + payload read
    t += l.router_hop.to_seconds() * 1e12;                          // router A
    t += static_cast<double>(serialise_ps(cfg, l.physics, 0, frame));
    t += static_cast<double>(propagation_ps(cfg, l.physics));
    t += l.router_hop.to_seconds() * 1e12;                          // router B
    t += dma + p.nhi.pcie_write.to_seconds() * 1e12;                // payload + write-back
    const double period = p.host.poll_period.to_seconds() * 1e12;
    t = std::ceil(t / period - 1e-9) * period;                      // next poll
    t += (p.host.completion_frame + p.host.completion).to_seconds() * 1e12;
    EXPECT_NEAR(got.to_seconds() * 1e12, t, 2.0);
    // Sanity of the formula inputs: 2 m of cable is 10 ns, 100 wire bytes.
    EXPECT_EQ(propagation_ps(cfg, l.physics), 10000u);
    EXPECT_EQ(wire_bytes(frame), frame + 4u);
}

struct plateau_case {
    const char* gen;
    unsigned lanes;
    bool asym;
};

class CablePlateau : public ::testing::TestWithParam<plateau_case> {};

TEST_P(CablePlateau, StreamReachesAnalyticPayloadRate) {
    platform p = plain_platform();
    p.nhi.pcie_gbps = 0;  // unlimited: the link is the bottleneck
    p.nhi.frame_overhead = sc_core::SC_ZERO_TIME;
    p.host.post = p.host.completion = sc_core::SC_ZERO_TIME;
    p.host.post_frame = p.host.completion_frame = sc_core::SC_ZERO_TIME;
    link_config cfg;
    cfg.gen = *parse_generation(GetParam().gen);
    cfg.lanes = GetParam().lanes;
    cfg.asymmetric = GetParam().asym;
    ASSERT_FALSE(validate(cfg).has_value());
    auto sys = two_hosts(p, p, cfg, 1, false);
    const unsigned n = 1500, first = 200, last = 1400;
    std::vector<sc_time> at;
    sys->hosts[1].drv->on_message(
        [&](unsigned, std::uint32_t, std::uint64_t) { at.push_back(scheduler::now()); });
    sys->start([&] {
        for (unsigned i = 0; i < n; ++i) sys->hosts[0].drv->send(1, ODL_FRAME_MAX_PAYLOAD, i);
    });
    sys->run_until(sc_time(10, SC_MS));
    ASSERT_EQ(at.size(), n);
    const double secs = (at[last] - at[first]).to_seconds();
    const double gbps = (last - first) * 4096.0 * 8 / secs / 1e9;
    const double want = payload_gbps(cfg, plain_link().physics, 0, 4096);
    EXPECT_NEAR(gbps, want, want * 0.01) << GetParam().gen;
    // Independent check of the analytic rate: lanes x lane rate x 256/260.
    const double lane = cfg.gen == generation::gen4 ? 25.6 * 11 / 7 * 0.98 : 20.0;
    const unsigned lanes = cfg.asymmetric ? 3 : cfg.lanes;
    EXPECT_NEAR(want, lanes * lane * 4096.0 / (4096 + 16 * 4), 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Generations, CablePlateau,
                         ::testing::Values(plateau_case{"tb3", 2, false},
                                           plateau_case{"tb4", 2, false},
                                           plateau_case{"tb4", 1, false},
                                           plateau_case{"tb5", 2, false},
                                           plateau_case{"tb5", 3, true}));

TEST(CableUnplug, MidTransferLosesInFlightAndNeverStallsSender) {
    const platform p = plain_platform();
    auto sys = two_hosts(p, p, link_config{});
    unsigned received = 0, after_replug = 0;
    std::vector<std::pair<unsigned, bool>> seen_a, seen_b;
    sc_time down_noticed_b;
    const sc_time unplug_at(300, SC_US), replug_at(600, SC_US);
    sys->hosts[1].drv->on_message([&](unsigned, std::uint32_t tag, std::uint64_t) {
        ++received;
        if (tag >= 100000) ++after_replug;
    });
    sys->hosts[0].drv->on_link([&](unsigned port, bool up) { seen_a.emplace_back(port, up); });
    sys->hosts[1].drv->on_link([&](unsigned port, bool up) {
        seen_b.emplace_back(port, up);
        if (!up) down_noticed_b = scheduler::now();
    });
    sys->start([&] {
        // Enough to still be streaming at the unplug.
        for (unsigned i = 0; i < 200; ++i) sys->hosts[0].drv->send(1, 64 * 1024, i);
    });
    std::uint64_t sent_at_unplug = 0, backlog_at_unplug = 0;
    sys->sched.at(unplug_at, [&] {
        sent_at_unplug = sys->hosts[0].drv->stats().frames_sent;
        backlog_at_unplug = sys->hosts[0].drv->tx_backlog(1);
        seen_a.clear();
        seen_b.clear();
        sys->cables[0]->unplug();
    });
    sys->sched.at(replug_at, [&] {
        // TX descriptors kept completing (frames dropped, not stalled).
        EXPECT_GT(sys->hosts[0].drv->stats().frames_sent, sent_at_unplug + 100);
        EXPECT_LT(sys->hosts[0].drv->tx_backlog(1), backlog_at_unplug);
        sys->cables[0]->plug();
    });
    sys->sched.at(replug_at + sc_time(200, SC_US),
                  [&] { for (unsigned i = 0; i < 10; ++i) sys->hosts[0].drv->send(1, 4096, 100000 + i); });
    sys->run_until(sc_time(5, SC_MS));

    const auto& cs = sys->cables[0]->stats();
    EXPECT_GT(cs.frames_lost_in_flight + cs.frames_refused_down, 0u);
    EXPECT_LT(received, 200u + 10u);
    EXPECT_GT(backlog_at_unplug, 0u) << "still streaming at the unplug";
    EXPECT_EQ(after_replug, 10u) << "traffic resumes after replug";
    EXPECT_GE(sys->hosts[1].drv->stats().messages_lost, 1u);
    // Both connection managers saw unplug then plug on port 1.
    ASSERT_GE(seen_a.size(), 2u);
    ASSERT_GE(seen_b.size(), 2u);
    EXPECT_EQ(seen_a[0], std::make_pair(1u, false));
    EXPECT_EQ(seen_a[1], std::make_pair(1u, true));
    EXPECT_EQ(seen_b[0], std::make_pair(1u, false));
    EXPECT_LT((down_noticed_b - unplug_at).to_seconds(), 20e-6);
}

}  // namespace
}  // namespace odl::model
