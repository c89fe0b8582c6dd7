// SPDX-License-Identifier: MIT
#include "cli_common.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

namespace odl::cli {

void die(const std::string& cmd, const std::string& msg, int code) {
    std::fprintf(stderr, "odl: %s: %s\n", cmd.c_str(), msg.c_str());
    std::exit(code);
}

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

CLI::Validator finite_in(double lo, double hi) {
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

}  // namespace odl::cli
