// SPDX-License-Identifier: MIT
// The published measurements the model is judged against
// (model/calibration/points.yaml): each a fit point or a validate point.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "odl/model/host/platform.h"

namespace odl::model {

struct calibration_point_spec {
    std::string name, what, source, platform, generation, mode, metric, note;
    double throttle_us = -1;  ///< -1: the platform's own throttle
    std::uint64_t size = 64;
    double published = 0, tolerance = 0.1;
    bool fit = false;                     ///< role: fit (else validate)
    std::vector<std::string> fits;        ///< parameters a fit point determines
    std::vector<std::string> share_with;  ///< platforms that take the fitted values too
    unsigned line = 0;                    ///< in the points file
};

struct calibration_points {
    std::string path;
    std::vector<calibration_point_spec> points;
    std::vector<std::string> not_modelled;  ///< published numbers left out, with why
};

/// Loads and checks a points file against @cal (platforms and parameters
/// must exist). Throws std::runtime_error "file:line: expected ...".
calibration_points load_points(const std::string& path, const calibration& cal);
/// The shipped calibration points (model_data_path("points.yaml")).
std::string default_points_path();

/// Runs the model for one point: the value comparable with `published`.
double evaluate_point(const calibration_point_spec& p, const calibration& cal);
/// The unit `published` is in, for tables ("us one-way", "us RTT", "Gb/s").
std::string point_unit(const calibration_point_spec& p);

/// A fittable time parameter of a platform by name ("post",
/// "irq_latency", "noise.sched.p99", ...); throws naming those that exist.
sc_core::sc_time& time_param(platform& p, const std::string& name);
const sc_core::sc_time& time_param(const platform& p, const std::string& name);

}  // namespace odl::model
