// SPDX-License-Identifier: MIT
// `odl doctor`: walks the stack bottom-up over a host_view and names the
// first broken layer with its fix. One exit code per outcome (docs/doctor.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "host_view.h"

namespace odl::cli {

// The host's view, read by odl::host (userlib/host).
using host::below_rating;
using host::read_host_view;
using host::host_view;
using host::lane_speed;
using host::odl_device;
using host::port_rating;
using host::xdomain;

/// Exit codes: 0 healthy; 10..29 the first broken layer (a failure stops the
/// walk); 30.. a warning (the walk went on and nothing failed).
enum class doctor_code : int {
    healthy = 0,
    no_usb4_kernel = 10,
    no_nhi = 11,
    nhi_unbound = 12,
    no_peer = 13,
    module_not_loaded = 14,
    peer_no_service = 15,
    service_unbound = 16,
    abi_mismatch = 17,
    device_inaccessible = 18,
    not_logged_in = 19,
    ping_failed = 20,
    plugin_missing = 21,
    module_unsigned = 22,
    link_degraded = 30,
    nccl_fallback = 31,
};

enum class check_status { ok, info, warn, fail, not_checked };

struct finding {
    std::string layer;
    check_status status = check_status::ok;
    std::string summary;
    std::vector<std::string> details;
    std::string fix;
    int code = 0;  ///< doctor_code for warn/fail
};

struct doctor_options {
    /// Expected rating ("gen4x2", "gen3", ...) instead of the port's own
    /// (debugfs); nullopt: the port's.
    std::optional<std::string> expect;
    bool nccl = true;  ///< check the NCCL plugin and environment
    /// Where the plugin may be installed, named in the fix when NCCL cannot
    /// find it.
    std::vector<std::string> plugin_hints;
};

struct doctor_report {
    std::vector<finding> findings;
    int exit_code = 0;
    std::string first_broken;  ///< layer, "" when nothing failed
};

/// Parses "gen4x2", "gen3x1", "gen4" (2 lanes): a port rating. nullopt on
/// anything else.
std::optional<port_rating> parse_expect(const std::string& s);
/// What --expect takes, for the error both doctor and link print.
inline constexpr const char* kExpectUsage = "want genN or genNxL (N 2..4, L 1 or 2), e.g. gen4x2";

/// Runs every check on @v. The NCCL checks read the process environment and
/// try to load the plugin as NCCL would.
doctor_report run_doctor(const host_view& v, const doctor_options& opt);

const char* status_name(check_status s);

}  // namespace odl::cli
