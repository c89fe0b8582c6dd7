// SPDX-License-Identifier: MIT
// Least-squares fit of the F parameters to the fit points, one common value
// per group, by golden-section search (the model is monotonic in each).
#include "odl/model/sweep/fit.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace odl::model {

namespace {

using sc_core::sc_time;
using sc_core::SC_NS;

// Noise terms' provenance is kept per term ("noise.sched"), not per field.
std::string provenance_key(const std::string& param) {
    if (param.rfind("noise.", 0) == 0) return param.substr(0, param.rfind('.'));
    return param;
}

void set_all(calibration& cal, const fit_group& g, double ns) {
    for (const auto& pl : g.platforms)
        for (const auto& pa : g.params) time_param(cal.platforms.at(pl), pa) = sc_time(ns, SC_NS);
}

double cost(calibration& cal, const fit_group& g, const calibration_points& pts,
            std::optional<std::size_t> leave_out, double ns) {
    set_all(cal, g, ns);
    double sum = 0;
    for (std::size_t i : g.points) {
        if (leave_out && *leave_out == i) continue;
        const auto& p = pts.points[i];
        const double e = (evaluate_point(p, cal) - p.published) / p.published;
        sum += e * e;
    }
    return sum;
}

// A noise term's p99 may not go below its median.
double lower_bound_ns(const calibration& cal, const fit_group& g) {
    double lo = 0;
    for (const auto& pa : g.params) {
        if (pa.size() < 4 || pa.compare(pa.size() - 4, 4, ".p99") != 0) continue;
        const std::string med = pa.substr(0, pa.size() - 4) + ".median";
        for (const auto& pl : g.platforms) lo = std::max(lo, time_param(cal.get(pl), med).to_seconds() * 1e9);
    }
    return lo;
}

}  // namespace

std::vector<fit_group> fit_groups(const calibration_points& pts) {
    std::vector<fit_group> out;
    for (std::size_t i = 0; i < pts.points.size(); ++i) {
        const auto& p = pts.points[i];
        if (!p.fit) continue;
        std::vector<std::string> plats = {p.platform};
        plats.insert(plats.end(), p.share_with.begin(), p.share_with.end());
        auto it = std::find_if(out.begin(), out.end(), [&](const fit_group& g) {
            return g.params == p.fits && g.platforms == plats;
        });
        if (it == out.end()) {
            out.push_back({p.fits, plats, {}});
            it = out.end() - 1;
        }
        it->points.push_back(i);
    }
    return out;
}

fit_result fit_calibration(const calibration& start, const calibration_points& pts,
                           std::optional<std::size_t> leave_out) {
    fit_result r{start, {}, {}};
    const auto groups = fit_groups(pts);
    for (const auto& g : groups)
        for (const auto& pl : g.platforms)
            for (const auto& pa : g.params) {
                const auto& prov = start.get(pl).provenance;
                const auto it = prov.find(provenance_key(pa));
                if (it == prov.end() || it->second.rfind("F:", 0) != 0)
                    throw std::runtime_error(fmt::format(
                        "{}: points fit {} of platform '{}', but its provenance does not say "
                        "'F:' (fitted): mark it fitted in the calibration file, or fit something else",
                        pts.path, pa, pl));
            }
    std::vector<bool> active(groups.size());
    for (std::size_t k = 0; k < groups.size(); ++k) {
        active[k] = std::any_of(groups[k].points.begin(), groups[k].points.end(),
                                [&](std::size_t i) { return !leave_out || *leave_out != i; });
        if (!active[k])
            r.unfitted.push_back(fmt::format("{} of {}", fmt::join(groups[k].params, ", "),
                                             fmt::join(groups[k].platforms, ", ")));
    }
    // Groups interact (a polled-RTT fit moves what the interrupt fit sees):
    // sweep them until nothing moves, at most 6 times.
    for (int pass = 0; pass < 6; ++pass) {
        bool moved = false;
        for (std::size_t k = 0; k < groups.size(); ++k) {
            if (!active[k]) continue;
            const fit_group& g = groups[k];
            const double cur = time_param(r.cal.get(g.platforms[0]), g.params[0]).to_seconds() * 1e9;
            double lo = lower_bound_ns(r.cal, g);
            double hi = std::max({4 * cur, lo + 10000.0, 10000.0});
            // Golden section on [lo, hi]; 45 steps shrink 10 us below a picosecond.
            const double phi = (std::sqrt(5.0) - 1) / 2;
            double a = lo + (1 - phi) * (hi - lo), b = lo + phi * (hi - lo);
            double fa = cost(r.cal, g, pts, leave_out, a), fb = cost(r.cal, g, pts, leave_out, b);
            for (int step = 0; step < 45; ++step) {
                if (fa <= fb) {
                    hi = b;
                    b = a;
                    fb = fa;
                    a = lo + (1 - phi) * (hi - lo);
                    fa = cost(r.cal, g, pts, leave_out, a);
                } else {
                    lo = a;
                    a = b;
                    fa = fb;
                    b = lo + phi * (hi - lo);
                    fb = cost(r.cal, g, pts, leave_out, b);
                }
            }
            const double best = std::round((lo + hi) / 2);
            set_all(r.cal, g, best);
            if (std::fabs(best - cur) >= 1) moved = true;
        }
        if (!moved) break;
    }
    for (std::size_t k = 0; k < groups.size(); ++k) {
        if (!active[k]) continue;
        for (const auto& pl : groups[k].platforms)
            for (const auto& pa : groups[k].params)
                r.params.push_back({pl, pa, time_param(start.get(pl), pa).to_seconds() * 1e9,
                                    time_param(r.cal.get(pl), pa).to_seconds() * 1e9});
    }
    return r;
}

std::string write_fitted(const std::string& yaml, const std::vector<fitted_param>& params) {
    std::vector<std::string> lines;
    {
        std::istringstream in(yaml);
        std::string l;
        while (std::getline(in, l)) lines.push_back(l);
    }
    for (const auto& f : params) {
        // The platform's block: "  <name>:" under "platforms:".
        std::size_t i = 0;
        const std::string head = "  " + f.platform + ":";
        while (i < lines.size() && lines[i] != head) ++i;
        if (i == lines.size())
            throw std::runtime_error(fmt::format("platform '{}' not found in the calibration file", f.platform));
        const bool noise = f.param.rfind("noise.", 0) == 0;
        std::string key = f.param, field = "value";
        if (noise) {
            const auto dot = f.param.find('.', 6);
            key = f.param.substr(6, dot - 6);
            field = f.param.substr(dot + 1);
        }
        const std::string indent = noise ? "      " : "    ";
        const std::regex re("^(" + indent + key + R"(: \{.*?\b)" + field + R"(: )[^,}]+)");
        bool done = false;
        for (std::size_t j = i + 1; j < lines.size() && !done; ++j) {
            if (lines[j].rfind("  ", 0) != 0 || (lines[j].size() > 2 && lines[j][2] != ' ')) break;
            std::smatch m;
            if (std::regex_search(lines[j], m, re)) {
                lines[j] = m[1].str() + fmt::format("{}ns", static_cast<long long>(std::llround(f.after_ns))) +
                           lines[j].substr(m[0].length());
                done = true;
            }
        }
        if (!done)
            throw std::runtime_error(fmt::format("no '{}' line for {} of platform '{}' in the calibration file",
                                                 field, key, f.platform));
    }
    std::string out;
    for (const auto& l : lines) out += l + "\n";
    return out;
}

}  // namespace odl::model
