// SPDX-License-Identifier: MIT
// Helpers every `odl` subcommand uses: defined once, so that the commands'
// files can share a translation unit (the unity build).
#pragma once

#include <string>

#include "odl_cli_checks.h"

namespace odl::cli {

/// "odl: <cmd>: <msg>" on stderr, then exit(@code).
[[noreturn]] void die(const std::string& cmd, const std::string& msg, int code = 1);
/// The environment variable @name, or @fallback when it is unset or empty.
std::string env_or(const char* name, const std::string& fallback);

}  // namespace odl::cli
