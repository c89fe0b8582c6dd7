// SPDX-License-Identifier: MIT
// Timing parameters of one host platform (NHI DMA side and driver/CPU side)
// and of the link; loaded from the calibration file with their provenance.
#pragma once

#include <map>
#include <string>

#include <systemc>

#include "odl/model/cable/link_config.h"
#include "odl/model/host/noise.h"
#include "odl/model/nhi/nhi.h"

namespace odl::model {

/// Driver and CPU costs of a host (what the Linux driver + library spend).
struct host_costs {
    sc_core::sc_time post = sc_core::sc_time(200, sc_core::SC_NS);  ///< per message: API call, first doorbell
    sc_core::sc_time post_frame = sc_core::sc_time(30, sc_core::SC_NS);  ///< per frame: descriptor + doorbell
    sc_core::sc_time mmio = sc_core::sc_time(150, sc_core::SC_NS);  ///< posted MMIO reaches device
    sc_core::sc_time completion = sc_core::sc_time(100, sc_core::SC_NS);  ///< per received message
    sc_core::sc_time completion_frame = sc_core::sc_time(30, sc_core::SC_NS);  ///< per completed frame
    sc_core::sc_time irq_latency = sc_core::sc_time(5, sc_core::SC_US);  ///< MSI to handler, wake-up
    sc_core::sc_time poll_period = sc_core::sc_time(100, sc_core::SC_NS);  ///< busy-poll loop
    double copy_gbps = 0.0;      ///< bounce copy rate; 0 = zero copy
    unsigned throttle = 0;       ///< REG_INT_THROTTLING_RATE value, 256 ns units
    bool interrupts = false;     ///< false = busy polling
    host_noise noise;            ///< jitter on top of the costs above (all off: exact)
};

/// One platform profile: a named parameter set from the calibration file.
struct platform {
    std::string name;
    std::string description;
    nhi_timing nhi;
    host_costs host;
    /// parameter name -> provenance ("S: spec ...", "M: measured ...", "F: fitted ...").
    std::map<std::string, std::string> provenance;
};

/// Link-level and router constants shared by all platforms.
struct link_calibration {
    link_physics physics;
    sc_core::sc_time router_hop = sc_core::sc_time(150, sc_core::SC_NS);
    sc_core::sc_time link_train = sc_core::sc_time(100, sc_core::SC_US);
    unsigned dma_credits = 14;
    std::map<std::string, std::string> provenance;
};

/// The whole calibration file.
struct calibration {
    std::string path;
    link_calibration link;
    std::map<std::string, platform> platforms;
    /// Returns the profile or throws std::runtime_error naming those that exist.
    const platform& get(const std::string& name) const;
};

/// Loads a calibration YAML file. Throws std::runtime_error with
/// "file:line: expected ..." on malformed input.
calibration load_calibration(const std::string& path);
/// The model's own data file @name (default.yaml, points.yaml): the copy
/// the odl-model package installs beside the running program
/// (<prefix>/share/odl/model/, for <prefix>/bin/<program>) when there is
/// one, else the source tree's (model/calibration/), for programs run from
/// their build tree.
std::string model_data_path(const std::string& name);
/// The shipped calibration file (model_data_path("default.yaml")).
std::string default_calibration_path();

}  // namespace odl::model
