// SPDX-License-Identifier: MIT
// Option checks shared by the command-line tools (odl, odl-model): one
// definition of what a timeout, interval or time scale may be.
#pragma once

#include <cmath>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

namespace odl::cli {

/// The longest wait an option takes, in seconds: about three years ("until
/// stopped", as odl-daemon asks of its servers), far from overflowing a
/// 64-bit count of nanoseconds.
constexpr double k_max_wait_s = 1e8;
/// The largest time scale (wall seconds per simulated second) of a scenario
/// replayed on VMs or hosts.
constexpr double k_max_time_scale = 100000;

/// A number in [@lo, @hi] for an option such as a timeout in seconds. Unlike
/// CLI::Range it refuses nan and inf (every comparison with nan is false, so
/// CLI::Range lets it through, and a timeout of nan seconds waited forever).
inline CLI::Validator finite_in(double lo, double hi) {
    const std::string range = fmt::format("a number from {} to {}", lo, hi);
    return CLI::Validator(
        [lo, hi, range](std::string& in) -> std::string {
            double v = 0;
            size_t used = 0;
            try {
                v = std::stod(in, &used);
            } catch (const std::exception&) {
                used = 0;
            }
            if (used == 0 || used != in.size() || !std::isfinite(v) || v < lo || v > hi)
                return fmt::format("'{}' is not {}", in, range);
            return {};
        },
        fmt::format("[{} - {}]", lo, hi));
}

/// A seed: a whole number below 10^18, digits only. Sizes of the option
/// (uint64, long long) differ between the tools; CLI11 took "-1" into a
/// uint64 as 2^64 - 1, and a long long's -5 read as "no seed given".
inline CLI::Validator seed_number() {
    return CLI::Validator(
        [](std::string& in) -> std::string {
            if (in.empty() || in.size() > 18 || in.find_first_not_of("0123456789") != std::string::npos)
                return fmt::format("'{}' is not a whole number below 10^18", in);
            return {};
        },
        "0..10^18-1");
}

/// A bus for odl-daemon and odl-tray: system, session, or a D-Bus address
/// (TRANSPORT:KEY=VALUE,...). Anything else used to reach sd-bus and come
/// back as "Connection refused" or "No medium found".
inline CLI::Validator dbus_bus() {
    return CLI::Validator(
        [](std::string& in) -> std::string {
            if (in == "system" || in == "session") return {};
            const auto colon = in.find(':');
            if (colon != std::string::npos && colon > 0 && in.find('=', colon) != std::string::npos) return {};
            return fmt::format("'{}' is not system, session or a D-Bus address (such as unix:path=/run/dbus/"
                               "system_bus_socket)",
                               in);
        },
        "system|session|ADDRESS");
}

}  // namespace odl::cli
