// SPDX-License-Identifier: MIT
// The host view as JSON, as `odl link --json` prints it and odl-daemon's
// status page reads it: one definition for both.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "host_view.h"

namespace odl::host {

/// {kernel, module_loaded, knobs, peers: [{xdomain, peer, tx, rx, rated,
/// below_rating, devices: [{device, state, counters, ...}]}]}; each peer is
/// held to @expect when given, else to its port's rating.
nlohmann::json link_json(const host_view& v, const std::optional<port_rating>& expect = std::nullopt);

/// The odl_tb5 parameters that shape a link ("poll=0 irq_throttle_us=8 ...").
std::string link_knobs(const host_view& v);

}  // namespace odl::host
