// SPDX-License-Identifier: MIT
// Tail latency from the noise terms, and the fit: it reproduces the
// committed parameters, recovers a parameter knocked off its value, refuses
// to fit what is not marked fitted, and writes values without touching the
// rest of the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "odl/model/sweep/fit.h"
#include "odl/model/sweep/sweep.h"

namespace odl::model {
namespace {

using sc_core::sc_time;
using sc_core::SC_NS;

calibration cal() { return load_calibration(default_calibration_path()); }
calibration_points points(const calibration& c) { return load_points(default_points_path(), c); }

std::string read(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

struct tmp_file {
    std::string path;
    explicit tmp_file(const std::string& name, const std::string& body)
        : path(::testing::TempDir() + "odl-fit-test-" + std::to_string(getpid()) + "-" + name) {
        std::ofstream(path) << body;
    }
    ~tmp_file() { std::remove(path.c_str()); }
};

std::vector<double> pingpong(const calibration& c, const std::string& plat, bool irq, std::uint64_t seed) {
    scenario s = point_scenario("tb4", plat, irq, 0, 2);
    s.seed = seed;
    scenario_workload w;
    w.name = "pp";
    w.kind = workload_kind::pingpong;
    w.hosts = {0, 1};
    w.size = 64;
    w.count = 1000;
    s.workloads = {w};
    run_options o;
    o.trace_frames = false;
    return run_scenario(s, c, o).workloads[0].latency_us;
}

TEST(Noise, TailAboveMedianWithNoiseAndEqualWithout) {
    calibration c = cal();
    const auto noisy = pingpong(c, "amd-strix-40g", true, 1);
    EXPECT_GT(percentile(noisy, 99), percentile(noisy, 50) * 1.1);
    EXPECT_GT(percentile(noisy, 99.9), percentile(noisy, 99));
    c.platforms.at("amd-strix-40g").host.noise = host_noise{};
    const auto exact = pingpong(c, "amd-strix-40g", true, 1);
    EXPECT_DOUBLE_EQ(percentile(exact, 99), percentile(exact, 50));
    EXPECT_LT(percentile(exact, 50), percentile(noisy, 50)) << "the wake noise adds to every interrupt";
}

TEST(Noise, SameSeedSameSamplesOtherSeedOthers) {
    const calibration c = cal();
    const auto a = pingpong(c, "amd-strix-40g", true, 7);
    EXPECT_EQ(a, pingpong(c, "amd-strix-40g", true, 7));
    EXPECT_NE(a, pingpong(c, "amd-strix-40g", true, 8));
}

TEST(Noise, LogNormalTermHasItsMedianAndP99) {
    noise_source src(42);
    noise_term t{1.0, sc_time(1000, SC_NS), sc_time(5000, SC_NS)};
    std::vector<double> v;
    for (int i = 0; i < 200000; ++i) v.push_back(src.sample(t).to_seconds() * 1e9);
    EXPECT_NEAR(percentile(v, 50), 1000, 20);
    EXPECT_NEAR(percentile(v, 99), 5000, 250);
    noise_term rare{0.01, sc_time(1000, SC_NS), sc_time(1000, SC_NS)};
    unsigned fired = 0;
    for (int i = 0; i < 100000; ++i) fired += src.sample(rare) > sc_core::SC_ZERO_TIME;
    EXPECT_NEAR(fired, 1000, 150);
    EXPECT_EQ(src.sample(noise_term{}), sc_core::SC_ZERO_TIME);
}

TEST(Fit, ReproducesTheCommittedParameters) {
    const calibration c = cal();
    const fit_result r = fit_calibration(c, points(c));
    ASSERT_GE(r.params.size(), 10u);
    for (const auto& f : r.params)
        EXPECT_NEAR(f.after_ns, f.before_ns, 0.5)
            << f.platform << " " << f.param << ": run ./odl model fit --write";
    EXPECT_TRUE(r.unfitted.empty());
}

TEST(Fit, RecoversAParameterKnockedOffItsValue) {
    const calibration good = cal();
    calibration bad = good;
    bad.platforms.at("amd-strix-40g").host.post = sc_time(3000, SC_NS);
    bad.platforms.at("amd-strix-40g").host.completion = sc_time(100, SC_NS);
    bad.platforms.at("intel-tb5-discrete").nhi.frame_overhead = sc_time(900, SC_NS);
    const fit_result r = fit_calibration(bad, points(good));
    EXPECT_NEAR(r.cal.get("amd-strix-40g").host.post.to_seconds() * 1e9,
                good.get("amd-strix-40g").host.post.to_seconds() * 1e9, 1.0);
    EXPECT_NEAR(r.cal.get("ms-s1-80g").host.completion.to_seconds() * 1e9,
                good.get("amd-strix-40g").host.completion.to_seconds() * 1e9, 1.0)
        << "share_with: the MS-S1 takes the Strix Halo host costs";
    EXPECT_NEAR(r.cal.get("intel-tb5-discrete").nhi.frame_overhead.to_seconds() * 1e9,
                good.get("intel-tb5-discrete").nhi.frame_overhead.to_seconds() * 1e9, 1.0);
}

TEST(Fit, LeavingOutTheOnlyPointOfAGroupKeepsItsParameters) {
    const calibration c = cal();
    const auto pts = points(c);
    std::size_t bw = pts.points.size();
    for (std::size_t i = 0; i < pts.points.size(); ++i)
        if (pts.points[i].name == "barlow-ridge-bw") bw = i;
    ASSERT_LT(bw, pts.points.size());
    const fit_result r = fit_calibration(c, pts, bw);
    ASSERT_EQ(r.unfitted.size(), 1u);
    EXPECT_NE(r.unfitted[0].find("frame_overhead"), std::string::npos) << r.unfitted[0];
}

TEST(Fit, RefusesToFitAParameterNotMarkedFitted) {
    const calibration c = cal();
    const tmp_file f("pts.yaml",
                     "points:\n"
                     "  - {name: x, what: x, source: x, platform: apple-tb5, generation: tb5, mode: poll,\n"
                     "     size: 64, metric: one_way_mean, published: 4, tolerance: 0.1, role: fit,\n"
                     "     fits: [mmio]}\n");
    const auto pts = load_points(f.path, c);
    try {
        fit_calibration(c, pts);
        FAIL() << "fitted mmio, whose provenance says A";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("mmio"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("F:"), std::string::npos) << e.what();
    }
}

TEST(Fit, WritesOnlyTheFittedValues) {
    const std::string text = read(default_calibration_path());
    const std::string out = write_fitted(
        text, {{"amd-strix-40g", "irq_latency", 4772, 4321}, {"apple-tb5", "noise.sched.p99", 2300, 2468}});
    const tmp_file f("cal.yaml", out);
    const calibration c = load_calibration(f.path);
    EXPECT_EQ(c.get("amd-strix-40g").host.irq_latency, sc_time(4321, SC_NS));
    EXPECT_EQ(c.get("apple-tb5").host.noise.sched.p99, sc_time(2468, SC_NS));
    EXPECT_EQ(c.get("ms-s1-80g").host.irq_latency, cal().get("ms-s1-80g").host.irq_latency)
        << "another platform's line with the same key is left alone";
    // Everything else, comments included, is the same text.
    std::size_t diff = 0;
    std::istringstream a(text), b(out);
    for (std::string la, lb; std::getline(a, la) && std::getline(b, lb);) diff += la != lb;
    EXPECT_EQ(diff, 2u);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), std::count(out.begin(), out.end(), '\n'));
    EXPECT_THROW(write_fitted(text, {{"no-such", "post", 1, 2}}), std::runtime_error);
}

TEST(Points, MalformedPointsAreRefusedWithTheLine) {
    const calibration c = cal();
    const std::string head = "points:\n  - name: p\n    what: w\n    source: s\n";
    const std::string tail = "    generation: tb5\n    mode: poll\n    size: 64\n    metric: one_way_mean\n"
                             "    published: 4\n    tolerance: 0.1\n";
    const struct {
        std::string body, want;
    } cases[] = {
        {head + "    platform: no-such\n" + tail + "    role: validate\n", "unknown platform 'no-such'"},
        {head + "    platform: apple-tb5\n" + tail + "    role: guess\n", "expected role fit or validate"},
        {head + "    platform: apple-tb5\n" + tail + "    role: fit\n", "expected 'fits:'"},
        {head + "    platform: apple-tb5\n" + tail + "    role: validate\n    fits: [post]\n", "fits nothing"},
        {head + "    platform: apple-tb5\n" + tail + "    role: fit\n    fits: [warp]\n", "'warp' is not a fittable parameter"},
        {head + "    platform: apple-tb5\n" + tail + "    role: validate\n    colour: red\n", "colour"},
        {head + "    platform: apple-tb5\n" + tail, "expected 'role:' in each point"},
    };
    for (const auto& k : cases) {
        const tmp_file f("bad.yaml", k.body);
        try {
            load_points(f.path, c);
            ADD_FAILURE() << "loaded: " << k.body;
        } catch (const std::runtime_error& e) {
            const std::string m = e.what();
            EXPECT_NE(m.find(f.path + ":"), std::string::npos) << m;
            EXPECT_NE(m.find(k.want), std::string::npos) << m;
        }
    }
    const tmp_file metric("metric.yaml", head + "    platform: apple-tb5\n" +
                                              "    generation: tb5\n    mode: poll\n    size: 64\n"
                                              "    metric: p999\n    published: 4\n    tolerance: 0.1\n"
                                              "    role: validate\n");
    EXPECT_THROW(load_points(metric.path, c), std::runtime_error);
}

TEST(Calibration, FitPointsWithinToleranceAndEveryPointReported) {
    const calibration c = cal();
    const auto pts = points(c);
    const auto res = run_calibration(c, pts);
    ASSERT_EQ(res.size(), pts.points.size());
    unsigned fit = 0, validate = 0;
    for (const auto& p : res) {
        (p.fit ? fit : validate)++;
        if (p.fit) {
            EXPECT_TRUE(p.within()) << p.name << ": model " << p.model << " vs " << p.published;
        }
    }
    EXPECT_GE(validate, 5u) << "predictions, not only fits";
    EXPECT_GE(fit, 5u);
    const auto loo = leave_one_out(c, pts);
    EXPECT_EQ(loo.size(), fit);
    const std::string md = calibration_markdown(res, loo, c, pts, "cmd");
    EXPECT_NE(md.find("Generated by `cmd`"), std::string::npos);
    EXPECT_NE(md.find("## Validate points"), std::string::npos);
    EXPECT_NE(md.find("## Leave-one-out"), std::string::npos);
    EXPECT_NE(md.find("`ms-s1-80g` | 0 | **prediction**"), std::string::npos) << md;
    for (const auto& p : res) EXPECT_NE(md.find("`" + p.name + "`"), std::string::npos) << p.name;
}

}  // namespace
}  // namespace odl::model
