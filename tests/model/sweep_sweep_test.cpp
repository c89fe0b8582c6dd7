// SPDX-License-Identifier: MIT
// Sweeps: shape of the results and physical orderings (the calibration
// points: sweep_fit_test.cpp).
#include <gtest/gtest.h>

#include <algorithm>

#include "odl/model/sweep/sweep.h"

namespace odl::model {
namespace {

calibration cal() { return load_calibration(default_calibration_path()); }

TEST(Sweep, CsvHasOneRowPerPoint) {
    sweep_spec s;
    s.generations = {"tb4", "tb5"};
    s.sizes = {64, 1 << 20};
    s.modes = {"poll"};
    s.iterations = 20;
    const auto pts = run_sweep(s, cal(), nullptr);
    ASSERT_EQ(pts.size(), 4u);
    const std::string csv = to_csv(pts);
    EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
    // TB5 (80G, but PCIe-capped) still beats TB4 on 1 MiB; small messages are
    // dominated by host costs, so latency is close.
    EXPECT_GT(pts[3].gbps, pts[1].gbps * 1.05);
    EXPECT_LT(pts[2].p50_us, pts[0].p50_us * 1.05);
    EXPECT_GT(pts[1].p50_us, pts[0].p50_us) << "1 MiB takes longer than 64 B";
}

TEST(Sweep, InterruptsCostMoreThanPollingAndThrottleSetsAFloor) {
    const auto c = cal();
    const sweep_point poll = run_point("tb5", "intel-tb5-discrete", false, 0, 2, 64, 20, c);
    const sweep_point irq = run_point("tb5", "intel-tb5-discrete", true, 0, 2, 64, 20, c);
    const sweep_point thr = run_point("tb5", "intel-tb5-discrete", true, 128, 2, 64, 20, c);
    EXPECT_GT(irq.p50_us, poll.p50_us + 4);
    EXPECT_NEAR(2 * thr.p50_us, 128, 2) << "RTT pinned to the 128 us throttle";
}

TEST(Sweep, RejectsImpossibleSpecsWithTheReason) {
    sweep_spec s;
    s.generations = {"tb9"};
    EXPECT_THROW(check_sweep(s, cal()), std::runtime_error);
    s = sweep_spec{};
    s.hosts = {1};
    EXPECT_THROW(check_sweep(s, cal()), std::runtime_error);
}

}  // namespace
}  // namespace odl::model
