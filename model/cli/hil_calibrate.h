// SPDX-License-Identifier: MIT
// `odl hil calibrate`: fits a platform profile's per-message and per-frame
// costs to a HIL run and writes a calibration file with the new profile.
#pragma once

#include <string>
#include <vector>

#include "hil_predict.h"
#include "hil_results.h"
#include "odl/model/host/platform.h"

namespace odl::cli::hil_model {

struct fit_result {
    m::platform profile;       ///< the fitted profile (named, with provenance)
    std::string base;          ///< the profile it started from
    double message_scale = 1;  ///< post and completion, times the base's
    bool latency_fitted = false, bandwidth_fitted = false;
    std::vector<std::string> notes;  ///< what could not be fitted and why
};

/// Fits, starting from @base of @cal and naming the result @name:
///  - post and completion (scaled together, their ratio kept) so that the
///    model's one-way p50 of the measured ping-pongs matches (mean log error 0);
///  - frame_overhead (the NHI's per-frame DMA cost) so that the model's
///    Gb/s of the measured streams matches.
/// The two interact (a 64 B message is one frame), so they are fitted in
/// turn until both settle. Every other parameter stays the base's.
fit_result fit_profile(const m::scenario& s, const m::calibration& cal, const std::string& base,
                       const std::string& name, const m::link_config& cable, const measured_run& measured);

/// A calibration file: @cal's link section and platforms with @fitted added
/// (or replacing the profile of the same name), in default.yaml's format.
std::string calibration_yaml(const m::calibration& cal, const m::platform& fitted, const std::string& header);

}  // namespace odl::cli::hil_model
