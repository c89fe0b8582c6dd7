// SPDX-License-Identifier: MIT
// Scenario replay: the shipped scenarios pass, runs are deterministic, and
// seeds matter where randomness is used.
#include <gtest/gtest.h>

#include <string>

#include "odl/model/scenario/runner.h"

namespace odl::model {
namespace {

std::string scenario_path(const std::string& name) {
    return std::string(ODL_MODEL_SOURCE_DIR) + "/scenarios/" + name + ".yaml";
}

TEST(ScenarioRunner, SameScenarioAndSeedGiveIdenticalTrace) {
    const scenario s = load_scenario(scenario_path("ber-storm"));
    const run_result a = run_scenario(s);
    const run_result b = run_scenario(s);
    ASSERT_GT(a.trace.size(), 1000u);
    EXPECT_TRUE(a.trace == b.trace) << "trace differs between two runs";
    EXPECT_EQ(a.to_json().dump(), b.to_json().dump());
}

TEST(ScenarioRunner, AnotherSeedGivesAnotherTrace) {
    scenario s = load_scenario(scenario_path("ber-storm"));
    const run_result a = run_scenario(s);
    s.seed += 1;
    const run_result b = run_scenario(s);
    EXPECT_TRUE(a.trace != b.trace) << "bit errors must follow the seed";
}

class ShippedScenario : public ::testing::TestWithParam<const char*> {};

TEST_P(ShippedScenario, PassesItsAssertions) {
    const scenario s = load_scenario(scenario_path(GetParam()));
    run_options o;
    o.trace_frames = false;
    const run_result r = run_scenario(s, o);
    EXPECT_TRUE(r.passed()) << r.to_text();
    EXPECT_FALSE(r.assertions.empty());
    for (const auto& w : r.workloads) EXPECT_GT(w.messages_received, 0u) << w.name;
}

INSTANTIATE_TEST_SUITE_P(All, ShippedScenario,
                         ::testing::Values("quickstart", "unplug-replug-under-load", "ber-storm",
                                           "lane-degrade", "four-host-ring-allreduce"));

TEST(ScenarioRunner, AllGatherTakesAboutHalfAnAllReduceWithTheSameBusBandwidth) {
    scenario s = load_scenario(scenario_path("four-host-ring-allreduce"));
    s.workloads.resize(1);
    s.assertions.clear();
    scenario_workload g = s.workloads[0];
    g.name = "allgather";
    g.kind = workload_kind::allgather;
    g.start = sc_core::sc_time(50, sc_core::SC_MS);
    s.workloads.push_back(g);
    run_options o;
    o.trace_frames = false;
    const run_result r = run_scenario(s, o);
    const auto& ar = r.workloads[0];
    const auto& ag = r.workloads[1];
    ASSERT_TRUE(ar.completed && ag.completed);
    // 3 steps instead of 6 of the same 4 MiB chunks: half the time, and
    // busbw's factor (N-1)/N instead of 2(N-1)/N gives the same bus rate.
    EXPECT_NEAR(ag.time_us / ar.time_us, 0.5, 0.05) << ag.time_us << " vs " << ar.time_us;
    EXPECT_NEAR(ag.busbw_gbps / ar.busbw_gbps, 1.0, 0.1);
    EXPECT_EQ(ag.messages_received, 3u * 4 * 3) << "3 iterations x 4 hosts x 3 steps";
    EXPECT_NE(r.to_text().find("per all-gather"), std::string::npos);
}

TEST(ScenarioRunner, FailingAssertionIsReported) {
    scenario s = load_scenario(scenario_path("quickstart"));
    s.assertions[0].max = 0.001;  // p99 below a nanosecond: impossible
    run_options o;
    o.trace_frames = false;
    const run_result r = run_scenario(s, o);
    EXPECT_FALSE(r.passed());
    EXPECT_FALSE(r.assertions[0].passed);
    EXPECT_NE(r.to_text().find("[FAIL]"), std::string::npos);
}

/// A workload cut off by the end of the run before anything of it arrived
/// has no latency to judge: its assertion fails, where 0 us passed every max.
TEST(ScenarioRunner, AssertionOnNothingMeasuredFails) {
    scenario s = load_scenario(scenario_path("quickstart"));
    ASSERT_FALSE(s.workloads.empty());
    scenario_workload& w = s.workloads[0];
    ASSERT_EQ(w.kind, workload_kind::pingpong);
    w.start = s.duration - sc_core::sc_time(1, sc_core::SC_NS);  // ends before a reply can come
    s.assertions = {scenario_assertion{w.name, "p99_us", 1e9, std::nullopt, ""}};
    run_options o;
    o.trace_frames = false;
    const run_result r = run_scenario(s, o);
    ASSERT_EQ(r.assertions.size(), 1u);
    EXPECT_FALSE(r.assertions[0].passed);
    EXPECT_NE(r.assertions[0].text.find("no measurement"), std::string::npos) << r.assertions[0].text;
}

TEST(ScenarioRunner, HostResetDropsFramesToThatHostAndItsDriverRestarts) {
    // Reset host b in the middle of the 64 MiB stream (12 ms .. ~26 ms).
    scenario s = load_scenario(scenario_path("quickstart"));
    s.duration = sc_core::sc_time(60, sc_core::SC_MS);
    run_options o;
    o.trace_frames = false;
    const run_result clean = run_scenario(s, o);
    scenario_event e;
    e.at = sc_core::sc_time(16, sc_core::SC_MS);
    e.kind = event_kind::host_reset;
    e.host = 1;
    e.down = sc_core::sc_time(2, sc_core::SC_MS);
    s.events.push_back(e);
    const run_result r = run_scenario(s, o);
    const run_result again = run_scenario(s, o);
    EXPECT_TRUE(r.trace == again.trace) << "host reset must be deterministic";
    EXPECT_NE(r.trace.find("host reset"), std::string::npos) << "no host reset in the trace";
    const auto bulk = [](const run_result& x) {
        for (const auto& w : x.workloads)
            if (w.name == "bulk") return w;
        return workload_result{};
    };
    ASSERT_EQ(bulk(clean).messages_lost, 0u);
    ASSERT_EQ(bulk(clean).messages_received, 64u);
    // Frames in flight to b and sent while its NHI is down are lost ...
    EXPECT_GT(bulk(r).messages_lost, 0u) << r.to_text();
    // ... and b receives again once its driver restarted.
    EXPECT_GT(bulk(r).messages_received, 0u) << r.to_text();
    EXPECT_EQ(bulk(r).messages_received + bulk(r).messages_lost, 64u) << r.to_text();
    // The ping-pong that ended before the reset is untouched.
    EXPECT_EQ(r.workloads[0].messages_lost, 0u);
    EXPECT_EQ(r.workloads[0].p99_us, clean.workloads[0].p99_us);
}

}  // namespace
}  // namespace odl::model
