// SPDX-License-Identifier: MIT
// Minimal SVG charts (line chart with linear/log axes, histogram), so plots
// need no gnuplot.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace odl::model::svg {

/// One axis: data range [lo, hi] mapped to pixels [px0, px1].
struct axis {
    double lo = 0, hi = 1;
    bool log = false;
    double px0 = 0, px1 = 1;
    double map(double v) const;
    /// Tick values: powers of ten (log) or about 5 round steps (linear).
    std::vector<double> ticks() const;
};

/// Covers @values with round bounds (log: whole decades; linear: from 0).
axis fit_axis(const std::vector<double>& values, bool log, double px0, double px1);

struct series {
    std::string label;
    std::vector<std::pair<double, double>> points;  ///< (x, y)
};

struct chart {
    std::string title, xlabel, ylabel;
    bool logx = false, logy = false;
    std::vector<series> lines;
};

/// A self-contained SVG document: one polyline and legend entry per series.
std::string line_chart(const chart& c, int width = 760, int height = 460);
/// Histogram of @samples in @bins equal bins.
std::string histogram(const std::string& title, const std::string& xlabel,
                      const std::vector<double>& samples, int bins = 40, int width = 760,
                      int height = 460);
/// Escapes &, <, >, " for SVG text.
std::string escape(const std::string& s);
/// Formats a tick label: 64, 1K, 4M for sizes; short decimals otherwise.
std::string tick_label(double v);

}  // namespace odl::model::svg
