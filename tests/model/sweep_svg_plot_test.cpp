// SPDX-License-Identifier: MIT
// SVG chart writer: axis mapping, ticks, escaping, one polyline per series.
#include <gtest/gtest.h>

#include <regex>

#include "odl/model/sweep/svg_plot.h"

namespace odl::model::svg {
namespace {

TEST(SvgAxis, LinearAndLogMapping) {
    axis a;
    a.lo = 0;
    a.hi = 10;
    a.px0 = 100;
    a.px1 = 200;
    EXPECT_DOUBLE_EQ(a.map(0), 100);
    EXPECT_DOUBLE_EQ(a.map(2.5), 125);
    a.log = true;
    a.lo = 1;
    a.hi = 1000;
    EXPECT_NEAR(a.map(10), 100 + 100.0 / 3, 1e-9);
    EXPECT_EQ(a.ticks(), (std::vector<double>{1, 10, 100, 1000}));
}

TEST(SvgAxis, FitCoversValuesWithRoundBounds) {
    const axis l = fit_axis({64, 3000, 16777216}, true, 0, 1);
    EXPECT_DOUBLE_EQ(l.lo, 10);
    EXPECT_DOUBLE_EQ(l.hi, 1e8);
    const axis lin = fit_axis({3, 47}, false, 0, 1);
    EXPECT_DOUBLE_EQ(lin.lo, 0);
    EXPECT_GE(lin.hi, 47);
    for (double t : lin.ticks()) EXPECT_LE(t, lin.hi);
}

TEST(SvgChart, OnePolylinePerSeriesAndEscapedText) {
    chart c;
    c.title = "latency <TB4 & TB5>";
    c.logx = true;
    c.lines = {{"tb4", {{64, 3}, {4096, 5}}}, {"tb5", {{64, 2}, {4096, 3}}},
               {"tb5 \"asym\"", {{64, 2}}}};
    const std::string s = line_chart(c);
    const std::regex poly("<polyline");
    EXPECT_EQ(std::distance(std::sregex_iterator(s.begin(), s.end(), poly), std::sregex_iterator()), 3);
    EXPECT_NE(s.find("latency &lt;TB4 &amp; TB5&gt;"), std::string::npos);
    EXPECT_NE(s.find("tb5 &quot;asym&quot;"), std::string::npos);
    EXPECT_EQ(s.find("<TB4"), std::string::npos);
    EXPECT_EQ(s.rfind("</svg>\n"), s.size() - 7);
}

TEST(SvgHistogram, BarsSumToSampleCount) {
    const std::string s = histogram("h", "us", {1, 1, 2, 3, 3, 3}, 3);
    const std::regex bar("<rect x=\"[0-9.]+\" y=\"[0-9.]+\" width=\"[0-9.]+\" height=\"([0-9.]+)\" fill=\"#1f77b4\"");
    int bars = 0;
    for (auto it = std::sregex_iterator(s.begin(), s.end(), bar); it != std::sregex_iterator(); ++it) ++bars;
    EXPECT_EQ(bars, 3);
    EXPECT_EQ(tick_label(4096), "4K");
    EXPECT_EQ(tick_label(1048576), "1M");
}

}  // namespace
}  // namespace odl::model::svg
