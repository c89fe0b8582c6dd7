// SPDX-License-Identifier: MIT
// odl-linkd --sim's options and the server configuration they make: one
// definition for odl-linkd and the in-process model (sim_inproc.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "odl/model/linkd/sim_server.h"

namespace odl::model::linkd {

struct sim_options {
    std::string profile = "intel-tb5-discrete", calibration, scenario;
    bool asymmetric = false;
    double length_m = 1.0;
    std::uint64_t seed = 1;
    std::string spin = "auto";
    unsigned links = 1;
    std::uint64_t lookahead_ns = 20'000;
    std::string timing = "auto";
};

/// What add_sim_options() registered, to tell which were given.
struct sim_option_handles {
    CLI::Option *profile, *calibration, *asymmetric, *length, *seed, *scenario, *links, *lookahead, *spin, *timing;
};

/// Registers --profile, --calibration, --asymmetric, --length, --seed,
/// --scenario, --links, --lookahead, --spin and --sim-timing into @o.
sim_option_handles add_sim_options(CLI::App& app, sim_options& o);

/// --scenario sets the cable and the profiles: the error naming the first of
/// those given beside it (@cable: the --gen and --lanes options), if any.
std::optional<std::string> scenario_conflict(const sim_options& o, const sim_option_handles& h,
                                             const std::vector<const CLI::Option*>& cable);

/// One server configuration per link from @o on a @gen x @lanes cable (a
/// scenario's hosts, cable and events instead when it names one), the
/// calibration loaded. Throws std::runtime_error on bad input (the
/// scenario's or calibration's file:line, a scenario that is not two hosts
/// and one cable). A scenario's workloads are the programs': @note, if
/// given, gets a line saying they are not run.
std::vector<sim_server_config> sim_link_configs(const sim_options& o, const std::string& gen, unsigned lanes,
                                                std::string* note = nullptr);

}  // namespace odl::model::linkd
