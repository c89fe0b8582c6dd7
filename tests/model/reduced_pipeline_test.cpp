// SPDX-License-Identifier: MIT
// The reduced link model (odl-linkd --sim-timing pipeline): its arithmetic,
// and its check against the full model it is fitted to (check_pipeline():
// messages of 64 B to 1 MiB sent alone each way, streams one way and both
// ways, workloads the fit does not use). On the shipped profiles every row
// must agree within 5 %, the sim backend's goal against the model, polled
// or woken by interrupts; on a profile whose costs one stage per direction
// cannot carry (linux-tbnet: a 128 us interrupt throttle, one host CPU for
// both directions) the check must say so (docs/sim.md, "Pipeline timing").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "odl/model/reduced/pipeline.h"
#include "odl/wire/frame.h"

namespace odl::model {
namespace {

const calibration& shipped() {
    static const calibration c = load_calibration(default_calibration_path());
    return c;
}

struct setup {
    const char* name;
    const char* profile;
    generation gen;
    bool asym;
    bool fits;  ///< the check must pass (else it must refuse)
};

const setup k_setups[] = {
    {"tb4", "intel-tb5-discrete", generation::gen3, false, true},
    {"tb5", "intel-tb5-discrete", generation::gen4, false, true},
    {"tb5_asym", "intel-tb5-discrete", generation::gen4, true, true},
    {"apple_tb5", "apple-tb5", generation::gen4, false, true},
    {"strix_irq", "amd-strix-40g", generation::gen3, false, true},
    {"ms_s1", "ms-s1-80g", generation::gen4, false, true},
    {"tbnet", "linux-tbnet", generation::gen3, false, false},
};

std::vector<host_spec> hosts_of(const setup& s) {
    std::vector<host_spec> hs(2);
    hs[0].name = "a";
    hs[1].name = "b";
    hs[0].plat = hs[1].plat = shipped().get(s.profile);
    return hs;
}

cable_spec cable_of(const setup& s) {
    cable_spec c;
    c.cfg.gen = s.gen;
    c.cfg.lanes = s.asym ? 3 : 2;
    c.cfg.asymmetric = s.asym;
    return c;
}

class PipelineCheck : public ::testing::TestWithParam<setup> {};

TEST_P(PipelineCheck, AgreesWithTheFullModelOrSaysItDoesNot) {
    const setup& s = GetParam();
    const auto hs = hosts_of(s);
    const auto cab = cable_of(s);
    const pipeline_params p = fit_pipeline(hs, cab, shipped().link, 1);
    std::printf("%s: %s\n", s.name, p.summary().c_str());
    const pipeline_check c = check_pipeline(hs, cab, shipped().link, 7, p);
    ASSERT_EQ(c.rows.size(), 11u);
    for (const auto& r : c.rows) {
        std::printf("  %-52s full %10.1f  pipeline %10.1f  %+7.2f %%\n", r.what.c_str(), r.full, r.reduced,
                    100 * r.error());
        EXPECT_GT(r.full, 0) << r.what;
        EXPECT_GT(r.reduced, 0) << r.what;
        if (s.fits) {
            EXPECT_LE(std::abs(r.error()), 0.05) << s.name << ": " << r.what;
        }
    }
    if (!s.fits) {
        EXPECT_GT(std::abs(c.worst().error()), 0.05)
            << s.name << ": the check no longer sees what a single stage misses: " << c.worst().what;
    }
}

INSTANTIATE_TEST_SUITE_P(Cables, PipelineCheck, ::testing::ValuesIn(k_setups),
                         [](const ::testing::TestParamInfo<setup>& pi) { return std::string(pi.param.name); });

// The check compares like with like: parameters fitted to another cable
// (TB4 for a TB5 link) must fail it.
TEST(PipelineCheck, ParametersOfAnotherCableFail) {
    const setup tb4 = k_setups[0], tb5 = k_setups[1];
    const pipeline_params p4 = fit_pipeline(hosts_of(tb4), cable_of(tb4), shipped().link, 1);
    const pipeline_check c = check_pipeline(hosts_of(tb5), cable_of(tb5), shipped().link, 7, p4);
    EXPECT_GT(std::abs(c.worst().error()), 0.05) << c.worst().what;
}

pipeline_params flat(double lat, double svc, double msg) {
    pipeline_params p;
    for (auto& d : p.dir) {
        d.len = {0, double(ODL_FRAME_MAX_PAYLOAD)};
        d.lat_ns = {lat, lat + 1000};
        d.svc_ns = {svc, svc + 400};
        d.msg_ns = msg;
    }
    return p;
}

sc_core::sc_time at_ns(double v) { return sc_core::sc_time(v, sc_core::SC_NS); }

TEST(PipelineState, AloneALatencyInABurstTheBottleneckAndNeverOutOfOrder) {
    pipeline_state st(flat(3000, 200, 100));
    // A one-frame message alone: its latency, interpolated by length; it
    // leaves the bottleneck after its time there (and its message's costs).
    sc_core::sc_time left;
    EXPECT_EQ(st.due(0, at_ns(0), 0, true, true, &left), at_ns(3000));
    EXPECT_EQ(left, at_ns(300));
    EXPECT_EQ(st.due(0, at_ns(100000), ODL_FRAME_MAX_PAYLOAD / 2, true, true), at_ns(103500));
    // Three frames of one message at once: each starts when the one before
    // has left the bottleneck (first: svc + half the message cost).
    sc_core::sc_time la, lb;
    const auto a = st.due(1, at_ns(200000), 0, true, false, &la);
    const auto b = st.due(1, at_ns(200000), 0, false, false, &lb);
    const auto c = st.due(1, at_ns(200000), 0, false, true);
    EXPECT_EQ(la, at_ns(200000 + 250));
    EXPECT_EQ(lb, at_ns(200000 + 250 + 200));
    EXPECT_EQ(a, at_ns(200000 + 3000 - 50));
    EXPECT_EQ(b, at_ns(200000 + 250 + 3000 - 100));
    EXPECT_EQ(c, at_ns(200000 + 250 + 200 + 3000 - 50));
    // The other direction's bottleneck is its own.
    EXPECT_EQ(st.due(0, at_ns(200000), 0, true, true), at_ns(203000));
    // A short frame right behind a long one is not delivered before it,
    // nor handed over before it.
    sc_core::sc_time lbig, lsmall;
    const auto big = st.due(0, at_ns(300000), ODL_FRAME_MAX_PAYLOAD, false, false, &lbig);
    const auto small = st.due(0, at_ns(300000), 0, false, false, &lsmall);
    EXPECT_GE(small, big);
    EXPECT_GE(lsmall, lbig);
    EXPECT_LE(lsmall, small);
    // A bottleneck slower than the latency (a long queue): never handed
    // over after it is due.
    pipeline_state slow(flat(100, 5000, 0));
    sc_core::sc_time l1;
    const auto d1 = slow.due(0, at_ns(0), 0, false, false, &l1);
    EXPECT_EQ(d1, at_ns(100));
    EXPECT_EQ(l1, d1);
}

TEST(PipelineState, AWakeUpIsWaitedForOnlyByFramesThatFindNoHandlerComing) {
    pipeline_params p = flat(3000, 200, 0);
    p.dir[0].wake_ns = 2000;
    pipeline_state st(p);
    // A burst: frame k arrives at 1000 + 200 k; frame 0's handler runs at
    // 3000 and reaps frames 0..10; from frame 11 on (arriving at 3200)
    // each finds the handler of an earlier frame due as it arrives.
    std::vector<sc_core::sc_time> due;
    for (int k = 0; k < 16; ++k) due.push_back(st.due(0, at_ns(0), 0, false, false));
    for (int k = 0; k <= 10; ++k) EXPECT_EQ(due[std::size_t(k)], at_ns(3000)) << k;
    for (int k = 11; k < 16; ++k) EXPECT_EQ(due[std::size_t(k)], at_ns(1000 + 200 * k)) << k;
    // Alone again, long after: the whole wake-up.
    EXPECT_EQ(st.due(0, at_ns(100000), 0, false, false), at_ns(103000));
    // The other direction polls: no wake-up, its latency as it is.
    EXPECT_EQ(st.due(1, at_ns(0), 0, false, false), at_ns(3000));
}

TEST(PipelineState, NewParametersTakeFramesPutInAfterThemInOrder) {
    // A slow cable's stage, then (a degrade the other way round, or any
    // change) a faster one while frames are queued.
    pipeline_state st(flat(3000, 1000, 0));
    const auto first = st.due(0, at_ns(0), 0, false, false);
    const auto second = st.due(0, at_ns(0), 0, false, false);
    EXPECT_EQ(first, at_ns(3000));
    EXPECT_EQ(second, at_ns(4000));
    st.set_params(flat(500, 100, 0));
    // Queued behind the slow frames: starts when they have left (2000),
    // then takes the new times, and is never due before them.
    sc_core::sc_time left;
    const auto third = st.due(0, at_ns(0), 0, false, false, &left);
    EXPECT_EQ(third, at_ns(4000));
    EXPECT_EQ(left, at_ns(2100));
    // Alone, later: the new stage whole.
    EXPECT_EQ(st.due(0, at_ns(100000), 0, false, false), at_ns(100500));
}

TEST(PipelineState, PostsOutOfOrderAreRefused) {
    std::vector<pipeline_post> posts(2);
    posts[0].at = at_ns(10);
    EXPECT_THROW(pipeline_due_ns(flat(1, 1, 0), posts), std::invalid_argument);
    posts[1].at = at_ns(20);
    posts[1].from = 2;
    EXPECT_THROW(pipeline_due_ns(flat(1, 1, 0), posts), std::invalid_argument);
}

}  // namespace
}  // namespace odl::model
