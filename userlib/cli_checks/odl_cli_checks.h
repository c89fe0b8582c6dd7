// SPDX-License-Identifier: MIT
// Option checks shared by the command-line tools (odl, odl-model): one
// definition of what a timeout, interval, time scale or byte size may be.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <optional>
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

/// Whole-number options take decimal digits (and a leading '-' where the
/// type is signed), nothing else. CLI11 reads integers with base 0 and
/// takes a sign into an unsigned type: "-n 010" ran 8 samples, "0x10" 16,
/// and "--max-msgs -1" 2^64 - 1. Applied to every INT/UINT option of @app
/// and its subcommands, after they are all defined; a transform, since it
/// drops leading zeros (CLI's check() would discard the change).
inline void decimal_integers(CLI::App& app) {
    for (CLI::Option* o : app.get_options()) {
        const std::string t = o->get_type_name();
        if (t != "INT" && t != "UINT") continue;
        const bool sign = t == "INT";
        o->transform(CLI::Validator(
            [sign](std::string& in) -> std::string {
                const std::size_t d = sign && !in.empty() && in[0] == '-' ? 1 : 0;
                if (in.size() == d || in.find_first_not_of("0123456789", d) != std::string::npos)
                    return fmt::format("'{}' is not a whole number in decimal digits", in);
                // Leading zeros go, or the conversion after this reads octal.
                const std::size_t nz = std::min(in.find_first_not_of('0', d), in.size() - 1);
                in.erase(d, nz - d);
                return {};
            },
            ""));
    }
    for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) decimal_integers(*sub);
}

/// A path option given explicitly: "--out ''" fell back to the default
/// folder without a word.
inline CLI::Validator non_empty() {
    return CLI::Validator(
        [](std::string& in) -> std::string { return in.empty() ? "an empty path" : std::string(); }, "PATH");
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

/// A byte count as the tools' size options take it: digits, an optional
/// fraction, and an optional unit B, K/KiB, M/MiB or G/GiB (powers of 1024),
/// making a whole number of bytes: "64", "4K", "1MiB", "1.5KiB". Nothing
/// else: no sign, spaces, exponent, inf or nan. Empty when @in is not one,
/// or is above 2^63 bytes. (The tools each parsed their own: a "-5" wrapped
/// to 2^64 - 5, "17179869184G" shifted past 64 bits to 0, "inf" passed.)
inline std::optional<std::uint64_t> byte_size(const std::string& in) {
    std::size_t i = 0;
    std::uint64_t whole = 0;
    for (; i < in.size() && in[i] >= '0' && in[i] <= '9'; ++i) {
        if (whole > (UINT64_C(1) << 63) / 10) return std::nullopt;
        whole = whole * 10 + static_cast<unsigned>(in[i] - '0');
    }
    if (i == 0) return std::nullopt;
    std::uint64_t frac = 0, frac_div = 1;
    if (i < in.size() && in[i] == '.') {
        const std::size_t start = ++i;
        for (; i < in.size() && in[i] >= '0' && in[i] <= '9'; ++i) {
            if (i - start >= 9) return std::nullopt;  // finer than any unit's byte
            frac = frac * 10 + static_cast<unsigned>(in[i] - '0');
            frac_div *= 10;
        }
        if (i == start) return std::nullopt;
    }
    const std::string unit = in.substr(i);
    unsigned shift = 0;
    if (unit.empty() || unit == "B") shift = 0;
    else if (unit == "K" || unit == "KiB") shift = 10;
    else if (unit == "M" || unit == "MiB") shift = 20;
    else if (unit == "G" || unit == "GiB") shift = 30;
    else return std::nullopt;
    if (whole > ((UINT64_C(1) << 63) >> shift)) return std::nullopt;
    // frac / frac_div of 2^shift bytes: whole bytes only.
    const std::uint64_t part = frac << shift;  // below 10^9 * 2^30: no overflow
    if (part % frac_div != 0) return std::nullopt;
    const std::uint64_t bytes = (whole << shift) + part / frac_div;
    if (bytes > (UINT64_C(1) << 63)) return std::nullopt;
    return bytes;
}

}  // namespace odl::cli
