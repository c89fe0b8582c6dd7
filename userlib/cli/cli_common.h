// SPDX-License-Identifier: MIT
// Helpers every `odl` subcommand uses: defined once, so that the commands'
// files can share a translation unit (the unity build).
#pragma once

#include <string>

#include <CLI/CLI.hpp>

namespace odl::cli {

/// "odl: <cmd>: <msg>" on stderr, then exit(@code).
[[noreturn]] void die(const std::string& cmd, const std::string& msg, int code = 1);
/// The environment variable @name, or @fallback when it is unset or empty.
std::string env_or(const char* name, const std::string& fallback);
/// A number in [@lo, @hi] for an option such as a timeout in seconds. Unlike
/// CLI::Range it refuses nan and inf (every comparison with nan is false, so
/// CLI::Range lets it through, and a timeout of nan seconds waited forever).
CLI::Validator finite_in(double lo, double hi);
/// The longest wait an option takes, in seconds: about three years ("until
/// stopped", as odl-daemon asks of its servers), far from overflowing a
/// 64-bit count of nanoseconds.
constexpr double k_max_wait_s = 1e8;

}  // namespace odl::cli
