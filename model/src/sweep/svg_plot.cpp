// SPDX-License-Identifier: MIT
// Minimal SVG chart writer.
#include "odl/model/sweep/svg_plot.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace odl::model::svg {

namespace {
const char* const k_colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr int k_left = 70, k_right = 190, k_top = 40, k_bottom = 55;
}  // namespace

double axis::map(double v) const {
    double a = lo, b = hi, x = v;
    if (log) {
        a = std::log10(lo);
        b = std::log10(hi);
        x = std::log10(std::max(v, lo));
    }
    if (b == a) return px0;
    return px0 + (x - a) / (b - a) * (px1 - px0);
}

std::vector<double> axis::ticks() const {
    std::vector<double> t;
    if (log) {
        for (double d = std::pow(10.0, std::floor(std::log10(lo))); d <= hi * 1.0001; d *= 10)
            if (d >= lo * 0.9999) t.push_back(d);
        return t;
    }
    const double span = hi - lo;
    const double raw = span / 5;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    double step = mag;
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * mag) {
            step = m * mag;
            break;
        }
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
    return t;
}

axis fit_axis(const std::vector<double>& values, bool log, double px0, double px1) {
    axis a;
    a.log = log;
    a.px0 = px0;
    a.px1 = px1;
    double lo = 0, hi = 0;
    bool any = false;
    for (double v : values) {
        if (!std::isfinite(v) || (log && v <= 0)) continue;
        lo = any ? std::min(lo, v) : v;
        hi = any ? std::max(hi, v) : v;
        any = true;
    }
    if (!any) {
        lo = log ? 1 : 0;
        hi = log ? 10 : 1;
    }
    if (log) {
        a.lo = std::pow(10.0, std::floor(std::log10(lo)));
        a.hi = std::pow(10.0, std::ceil(std::log10(hi)));
        if (a.hi <= a.lo) a.hi = a.lo * 10;
    } else {
        a.lo = std::min(0.0, lo);
        a.hi = hi > a.lo ? hi * 1.05 : a.lo + 1;
    }
    return a;
}

std::string escape(const std::string& s) {
    std::string o;
    for (char ch : s) {
        switch (ch) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        default: o += ch;
        }
    }
    return o;
}

std::string tick_label(double v) {
    const double a = std::fabs(v);
    if (a >= 1024 && std::fmod(a, 1024) == 0) {
        if (std::fmod(a, 1024.0 * 1024) == 0) return fmt::format("{:g}M", v / (1024.0 * 1024));
        return fmt::format("{:g}K", v / 1024);
    }
    if (a >= 1e5) {
        const double e = std::floor(std::log10(a));
        return fmt::format("{:g}e{:g}", v / std::pow(10.0, e), e);
    }
    return fmt::format("{:g}", v);
}

static std::string frame(const std::string& title, const std::string& xlabel,
                         const std::string& ylabel, const axis& x, const axis& y, int w, int h) {
    std::string s = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
        "viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" font-size=\"12\">\n"
        "<rect width=\"{0}\" height=\"{1}\" fill=\"white\"/>\n"
        "<text x=\"{2}\" y=\"22\" font-size=\"15\" text-anchor=\"middle\">{3}</text>\n",
        w, h, w / 2, escape(title));
    const double x0 = x.px0, x1 = x.px1, y0 = y.px0, y1 = y.px1;
    s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                     "fill=\"none\" stroke=\"black\"/>\n",
                     x0, y1, x1 - x0, y0 - y1);
    for (double t : x.ticks()) {
        const double px = x.map(t);
        s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
                         "stroke=\"#ddd\"/><text x=\"{0:.1f}\" y=\"{3:.1f}\" "
                         "text-anchor=\"middle\">{4}</text>\n",
                         px, y0, y1, y0 + 16, escape(tick_label(t)));
    }
    for (double t : y.ticks()) {
        const double py = y.map(t);
        s += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" "
                         "stroke=\"#ddd\"/><text x=\"{3:.1f}\" y=\"{4:.1f}\" "
                         "text-anchor=\"end\">{5}</text>\n",
                         x0, py, x1, x0 - 6, py + 4, escape(tick_label(t)));
    }
    s += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n",
                     (x0 + x1) / 2, h - 12, escape(xlabel));
    s += fmt::format("<text x=\"16\" y=\"{:.1f}\" text-anchor=\"middle\" "
                     "transform=\"rotate(-90 16 {:.1f})\">{}</text>\n",
                     (y0 + y1) / 2, (y0 + y1) / 2, escape(ylabel));
    return s;
}

std::string line_chart(const chart& c, int w, int h) {
    std::vector<double> xs, ys;
    for (const auto& l : c.lines)
        for (const auto& p : l.points) {
            xs.push_back(p.first);
            ys.push_back(p.second);
        }
    const axis x = fit_axis(xs, c.logx, k_left, w - k_right);
    const axis y = fit_axis(ys, c.logy, h - k_bottom, k_top);
    std::string s = frame(c.title, c.xlabel, c.ylabel, x, y, w, h);
    for (std::size_t i = 0; i < c.lines.size(); ++i) {
        const auto& l = c.lines[i];
        const char* col = k_colours[i % (sizeof k_colours / sizeof k_colours[0])];
        std::string pts;
        for (const auto& p : l.points) {
            // A log axis cannot show 0 (e.g. a point that produced no sample).
            if ((c.logx && p.first <= 0) || (c.logy && p.second <= 0)) continue;
            pts += fmt::format("{}{:.1f},{:.1f}", pts.empty() ? "" : " ", x.map(p.first),
                               y.map(p.second));
        }
        s += fmt::format("<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"{}\"/>\n",
                         col, pts);
        const int ly = k_top + 10 + static_cast<int>(i) * 18;
        s += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"{3}\" "
                         "stroke-width=\"2\"/><text x=\"{4}\" y=\"{5}\">{6}</text>\n",
                         w - k_right + 12, ly, w - k_right + 36, col, w - k_right + 42, ly + 4,
                         escape(l.label));
    }
    return s + "</svg>\n";
}

std::string histogram(const std::string& title, const std::string& xlabel,
                      const std::vector<double>& samples, int bins, int w, int h) {
    double lo = samples.empty() ? 0 : *std::min_element(samples.begin(), samples.end());
    double hi = samples.empty() ? 1 : *std::max_element(samples.begin(), samples.end());
    if (hi <= lo) hi = lo + 1;
    std::vector<double> count(static_cast<std::size_t>(bins), 0);
    for (double v : samples) {
        auto b = static_cast<std::size_t>((v - lo) / (hi - lo) * bins);
        count[std::min(b, count.size() - 1)] += 1;
    }
    axis x;
    x.lo = lo;
    x.hi = hi;
    x.px0 = k_left;
    x.px1 = w - k_right;
    const axis y = fit_axis(count, false, h - k_bottom, k_top);
    std::string s = frame(title, xlabel, "samples", x, y, w, h);
    const double bw = (x.px1 - x.px0) / bins;
    for (int i = 0; i < bins; ++i) {
        const double top = y.map(count[static_cast<std::size_t>(i)]);
        s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
                         "fill=\"#1f77b4\"/>\n",
                         x.px0 + i * bw, top, std::max(bw - 1, 1.0), y.px0 - top);
    }
    return s + "</svg>\n";
}

}  // namespace odl::model::svg
