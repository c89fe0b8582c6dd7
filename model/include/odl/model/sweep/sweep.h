// SPDX-License-Identifier: MIT
// Latency modelling: sweeps over generation x message size x completion mode
// x throttle x hosts, CSV and SVG output, a TB4/TB5 comparison report and
// the calibration table.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "odl/model/host/platform.h"
#include "odl/model/scenario/runner.h"
#include "odl/model/scenario/scenario.h"
#include "odl/model/sweep/calibration_points.h"
#include "odl/model/sweep/svg_plot.h"

namespace odl::model {

struct sweep_spec {
    std::vector<std::string> generations = {"tb4", "tb5", "tb5-asym"};
    std::vector<std::uint64_t> sizes = {64, 256, 1024, 4096, 16384, 65536, 262144, 1048576,
                                        4194304};
    std::vector<std::string> modes = {"poll", "interrupt"};
    std::vector<double> throttle_us = {0};
    std::vector<unsigned> hosts = {2};
    std::string platform = "intel-tb5-discrete";
    unsigned iterations = 200;  ///< ping-pong round trips per point
};

struct sweep_point {
    std::string generation, mode, platform;
    double throttle_us = 0;
    unsigned hosts = 2;
    std::uint64_t size = 0;
    double p50_us = 0, p90_us = 0, p99_us = 0, p999_us = 0, mean_us = 0;  ///< one-way, RTT/2
    double gbps = 0;                              ///< one direction, stream
    double allreduce_us = 0, busbw_gbps = 0;      ///< hosts > 2: ring all-reduce
    std::vector<double> samples_us;
};

/// Rejects unknown generations/modes, empty lists, hosts < 2, with the reason.
void check_sweep(const sweep_spec& s, const calibration& cal);
/// Ping-pongs a point may ask for: the point runs 10 s of simulated time.
constexpr unsigned k_max_iterations = 1000000;

/// A two-host (or N-host ring) scenario for one sweep point; @gen is
/// "tb3", "tb4", "tb5" or "tb5-asym".
scenario point_scenario(const std::string& gen, const std::string& platform, bool interrupts,
                        double throttle_us, unsigned hosts);

/// Runs every point; @progress(done, total) after each.
std::vector<sweep_point> run_sweep(const sweep_spec& s, const calibration& cal,
                                   const std::function<void(std::size_t, std::size_t)>& progress);
/// One ping-pong workload (one-way latencies: RTT / 2) between two hosts.
workload_result run_pingpong(const std::string& gen, const std::string& platform, bool interrupts,
                             double throttle_us, std::uint64_t size, unsigned iterations,
                             const calibration& cal);
/// Stream bandwidth (Gb/s, one direction) between two hosts.
double run_stream(const std::string& gen, const std::string& platform, bool interrupts,
                  double throttle_us, std::uint64_t size, const calibration& cal);
/// A ring collective (allreduce, allgather) over @hosts hosts cabled in a
/// ring, 3 iterations.
workload_result run_collective(const std::string& gen, const std::string& platform, bool interrupts,
                               double throttle_us, unsigned hosts, workload_kind kind, std::uint64_t size,
                               const calibration& cal);
/// The axes every latency-vs-size and bandwidth-vs-size chart shares.
svg::chart latency_size_chart(const std::string& title);
svg::chart bandwidth_size_chart();
/// Ping-pong latency (one-way) and stream bandwidth of one point.
sweep_point run_point(const std::string& gen, const std::string& platform, bool interrupts,
                      double throttle_us, unsigned hosts, std::uint64_t size,
                      unsigned iterations, const calibration& cal);

std::string to_csv(const std::vector<sweep_point>& pts);
/// Writes latency_vs_size.svg, bandwidth_vs_size.svg, latency_histogram.svg
/// (and allreduce_vs_size.svg with hosts > 2) into @dir; returns the paths.
std::vector<std::string> write_plots(const std::vector<sweep_point>& pts, const std::string& dir);

/// Markdown comparing TB4, TB5 and TB5-asymmetric for one workload.
std::string compare_report(const std::vector<sweep_point>& pts, const std::string& title);

/// One calibration point: model value next to the published one.
struct calibration_point {
    std::string name, what, source, platform, unit, note;
    bool fit = false;  ///< a fit point (else validate)
    double published = 0, model = 0, tolerance = 0;  ///< tolerance: fraction
    bool within() const;
};
std::vector<calibration_point> run_calibration(const calibration& cal,
                                               const calibration_points& pts);

/// A fit point predicted by the model fitted without it.
struct leave_one_out_row {
    calibration_point point;   ///< model = the prediction (when there is one)
    bool predicted = false;    ///< false: nothing else determines its parameters
    std::string why;           ///< when not predicted
};
std::vector<leave_one_out_row> leave_one_out(const calibration& cal, const calibration_points& pts);

std::string calibration_markdown(const std::vector<calibration_point>& pts,
                                 const std::vector<leave_one_out_row>& loo,
                                 const calibration& cal, const calibration_points& points,
                                 const std::string& command);

}  // namespace odl::model
