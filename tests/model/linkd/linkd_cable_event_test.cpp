// SPDX-License-Identifier: MIT
// Cable events on odl-linkd's model (control commands "cable retrain",
// "cable degrade GEN LANES", "cable ber RATE"): applied to the modelled
// cable, refused with the reason when malformed or impossible, recorded
// for replay; the "nhi" view shows the cable afterwards, "stats" its counters.
#include <gtest/gtest.h>

#include <sstream>
#include <systemc>

#include "odl/model/linkd/model_backend_sc.h"
#include "odl/model/linkd/recorder.h"
#include "mem_bus.h"

namespace odl::model::linkd {
namespace {

using testing::mem_bus;

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

TEST(LinkdCableEvents, AppliedRefusedAndRecorded) {
    sc_backend_config cfg;
    cfg.link.gen = generation::gen4;
    cfg.link.lanes = 2;
    sc_backend model(cfg);
    std::ostringstream rec;
    recording_backend m(model, rec);
    std::uint64_t now = 0;
    const auto step = [&](std::uint64_t ps) { m.advance_to(now += ps); };

    // Before both hosts are attached the cable has not trained.
    EXPECT_EQ(m.cable_event(0, "retrain"), "the cable is unplugged");
    mem_bus a, b;
    m.attach(0, &a);
    m.attach(1, &b);
    step(1'000'000'000);  // 1 ms: trained
    EXPECT_NE(first_line(m.describe()).find("link up tb5 x2, ber 0"), std::string::npos) << m.describe();

    EXPECT_EQ(m.cable_event(0, "degrade gen3 1"), "");
    EXPECT_NE(first_line(m.describe()).find("link training tb4 x1"), std::string::npos) << m.describe();
    step(1'000'000'000);
    EXPECT_NE(first_line(m.describe()).find("link up tb4 x1"), std::string::npos) << m.describe();
    EXPECT_EQ(m.cable_event(0, "ber 1e-9"), "");
    EXPECT_NE(first_line(m.describe()).find("ber 1e-09"), std::string::npos) << m.describe();
    EXPECT_EQ(m.cable_event(0, "retrain"), "");
    EXPECT_NE(first_line(m.describe()).find("link training tb4 x1"), std::string::npos) << m.describe();
    step(1'000'000'000);
    EXPECT_NE(first_line(m.describe()).find("link up tb4 x1"), std::string::npos) << m.describe();

    // Bad input: the reason, and the cable as it was.
    const std::pair<const char*, const char*> bad[] = {
        {"degrade gen9 1", "unknown generation 'gen9'"},
        {"degrade gen3 3", "lanes"},
        {"degrade gen3", "usage: degrade GEN LANES"},
        {"degrade gen3 1 now", "usage: degrade GEN LANES"},
        {"ber x", "expected a number from 0 to 1e-3"},
        {"ber 0.5", "expected a number from 0 to 1e-3"},
        {"ber -1e-9", "expected a number from 0 to 1e-3"},
        {"ber", "usage: ber RATE"},
        {"retrain now", "retrain takes no arguments"},
        {"frobnicate", "unknown cable event 'frobnicate'"},
    };
    for (const auto& [spec, says] : bad) {
        const std::string why = m.cable_event(0, spec);
        EXPECT_NE(why.find(says), std::string::npos) << spec << ": " << why;
    }
    EXPECT_NE(first_line(m.describe()).find("link up tb4 x1, ber 1e-09"), std::string::npos) << m.describe();

    // The cable's counters, as "cable [N] stats" answers: every counter named
    // once; no cable 1 in a two-host model.
    const std::string st = m.cable_stats(0);
    for (const char* k : {"frames_sent ", "frames_delivered ", "frames_lost_in_flight ", "frames_refused_down ",
                          "errors_corrected ", "packets_damaged ", "frames_damaged ", "frames_tapped "})
        EXPECT_NE(st.find(std::string(k)), std::string::npos) << k << " in " << st;
    EXPECT_EQ(m.cable_stats(1), "");

    // Recorded for replay: the applied events only, in order.
    const std::string r = rec.str();
    const auto d = r.find(" - E degrade gen3 1\n"), e = r.find(" - E ber 1e-9\n"), t = r.find(" - E retrain\n");
    ASSERT_NE(d, std::string::npos) << r;
    ASSERT_NE(e, std::string::npos) << r;
    ASSERT_NE(t, std::string::npos) << r;
    EXPECT_LT(d, e);
    EXPECT_LT(e, t);
    EXPECT_EQ(r.find("gen9"), std::string::npos) << r;
    EXPECT_EQ(r.find(" - E retrain\n", t + 1), std::string::npos) << "a refused retrain was recorded";
}

}  // namespace
}  // namespace odl::model::linkd

// libsystemc may own main() and call sc_main(); run the tests either way.
extern "C" int sc_main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
