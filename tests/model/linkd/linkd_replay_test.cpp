// SPDX-License-Identifier: MIT
// Replays recorded Linux access sequences (thunderbolt.ko + thunderbolt_net
// in two VMs: probe, host router enumeration, XDomain discovery, login,
// ping) against a fresh SystemC model behind linkd's seam, and checks that
// every register read, DMA and interrupt comes out exactly as recorded.
// Recorded with `ODL_LINKD_ARGS="--record FILE" odl vm up` (gen3 x2 cable).
// Built once per interrupt unit (ODL_LINKD_IRQ): the C++ twin, and the RTL
// block in lock step with it (a difference throws irq_divergence).
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <fmt/format.h>
#include <systemc>

#include "odl/model/linkd/model_backend_sc.h"
#include "odl/model/linkd/recorder.h"

#ifndef ODL_LINKD_TRACE
#error "ODL_LINKD_TRACE must name the recording"
#endif
#ifndef ODL_LINKD_IRQ
#error "ODL_LINKD_IRQ must name the interrupt unit (model, rtl, lockstep)"
#endif

namespace odl::model::linkd {
namespace {

TEST(LinkdReplay, ModelAnswersLinuxAsRecorded) {
    std::ifstream in(ODL_LINKD_TRACE);
    ASSERT_TRUE(in) << ODL_LINKD_TRACE;
    sc_backend_config cfg;
    cfg.link.gen = generation::gen3;
    cfg.link.lanes = 2;
    const auto irq = parse_irq_impl(ODL_LINKD_IRQ);
    ASSERT_TRUE(irq) << ODL_LINKD_IRQ;
    cfg.irq.impl = *irq;
    sc_backend model(cfg);
    replay_report rep;
    ASSERT_TRUE(replay(model, in, rep)) << (rep.mismatches.empty() ? "" : rep.mismatches[0]);
    for (const auto& m : rep.mismatches) ADD_FAILURE() << m;
    EXPECT_EQ(rep.mismatch_count, 0u);
    // The recording must have exercised the interesting parts.
    EXPECT_GT(rep.mmio_reads_checked, 20u);
    EXPECT_GT(rep.dma_checked, 500u);
    EXPECT_GT(rep.irqs_checked, 100u);
    // What the control command "nhi" shows: both hosts' counters (the
    // frames of the recorded session) and interrupt registers. The guests
    // stopped their rings at shutdown, so no ring is listed as on.
    const std::string d = model.describe();
    for (unsigned h = 0; h < 2; ++h) {
        const std::string tag = fmt::format("host {} frames tx ", h);
        const auto at = d.find(tag);
        ASSERT_NE(at, std::string::npos) << tag << " not in:\n" << d;
        EXPECT_GT(std::stoul(d.substr(at + tag.size())), 100u) << d;
        EXPECT_NE(d.find(fmt::format("host {} interrupt unit {}: status ", h, ODL_LINKD_IRQ)), std::string::npos) << d;
    }
    EXPECT_EQ(d.find(": on size"), std::string::npos) << d;
}

}  // namespace
}  // namespace odl::model::linkd

// libsystemc may own main() and call sc_main(); run the tests either way.
extern "C" int sc_main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
