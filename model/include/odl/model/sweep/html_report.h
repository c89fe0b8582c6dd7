// SPDX-License-Identifier: MIT
// `odl model report`: TB4 / TB5 / TB5-asymmetric side by side for one
// platform, as one self-contained HTML page (charts inline as SVG) and the
// same numbers as JSON.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "odl/model/sweep/sweep.h"

namespace odl::model {

/// One ring collective over @hosts hosts of one generation.
struct collective_row {
    std::string generation, kind;  ///< kind: allreduce or allgather
    unsigned hosts = 2;
    std::uint64_t size = 0;
    double time_us = 0, busbw_gbps = 0;
};

/// The largest collective run_collectives() takes.
constexpr std::uint64_t k_max_collective_bytes = 4ull << 30;
/// Throws naming the first generation, host count or size run_collectives()
/// would refuse (so a report can say so before its sweep runs).
void check_collectives(const std::vector<std::string>& generations, const std::vector<unsigned>& hosts,
                       const std::vector<std::uint64_t>& sizes);
/// Runs every (generation x kind x hosts x size) collective on rings of the
/// platform's hosts; @progress(done, total) after each.
std::vector<collective_row> run_collectives(const std::vector<std::string>& generations,
                                            const std::string& platform, bool interrupts,
                                            const std::vector<unsigned>& hosts,
                                            const std::vector<std::uint64_t>& sizes,
                                            const calibration& cal,
                                            const std::function<void(std::size_t, std::size_t)>& progress);

struct report_data {
    std::string platform, mode, calibration_path, command;
    unsigned iterations = 0;
    std::uint64_t histogram_size = 0;  ///< the size whose latency histograms are drawn
    std::vector<sweep_point> points;   ///< generations x sizes
    std::vector<collective_row> collectives;
};

/// The latency percentiles the report gives: p50, p90, p99, p99.9 of a
/// point's one-way samples.
std::vector<std::pair<std::string, double>> latency_percentiles(const sweep_point& p);

nlohmann::json report_json(const report_data& d);
/// The collectives as a markdown section (empty when there are none): what a
/// ring of N hosts takes per collective and its bus bandwidth, size by size.
std::string collectives_markdown(const std::vector<collective_row>& rows);

/// The charts of the report: (file stem, SVG document) pairs.
std::vector<std::pair<std::string, std::string>> report_charts(const report_data& d);

/// The page: every table and the charts inline.
std::string report_html(const report_data& d,
                        const std::vector<std::pair<std::string, std::string>>& charts);

}  // namespace odl::model
