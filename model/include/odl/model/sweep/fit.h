// SPDX-License-Identifier: MIT
// Fits the calibration file's F parameters to the fit points, by command
// (`odl model fit`), never by hand.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "odl/model/sweep/calibration_points.h"

namespace odl::model {

struct fitted_param {
    std::string platform, param;
    double before_ns = 0, after_ns = 0;
};

/// One set of fit points that determine the same parameters on the same
/// platforms: those parameters take one common value, the least-squares
/// fit (relative errors) over the group's points.
struct fit_group {
    std::vector<std::string> params, platforms;
    std::vector<std::size_t> points;  ///< indexes into the points file
};

std::vector<fit_group> fit_groups(const calibration_points& pts);

struct fit_result {
    calibration cal;
    std::vector<fitted_param> params;
    /// Groups left without a point (leave-one-out): their parameters kept.
    std::vector<std::string> unfitted;
};

/// Fits every group (in file order, repeated until no value moves by a
/// nanosecond) starting from @start; values are whole nanoseconds. With
/// @leave_out, that point is not used. Throws when a fitted parameter's
/// provenance does not say F (fitted).
fit_result fit_calibration(const calibration& start, const calibration_points& pts,
                           std::optional<std::size_t> leave_out = std::nullopt);

/// @yaml (the calibration file's text) with the fitted values written in
/// place: only the `value:` (or the noise term's field) of each fitted
/// parameter changes, comments and provenance stay. Throws if a parameter's
/// line cannot be found.
std::string write_fitted(const std::string& yaml, const std::vector<fitted_param>& params);

}  // namespace odl::model
