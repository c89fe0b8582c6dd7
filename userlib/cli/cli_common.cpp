// SPDX-License-Identifier: MIT
#include "cli_common.h"

#include <cstdio>
#include <cstdlib>

namespace odl::cli {

void die(const std::string& cmd, const std::string& msg, int code) {
    std::fprintf(stderr, "odl: %s: %s\n", cmd.c_str(), msg.c_str());
    std::exit(code);
}

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

}  // namespace odl::cli
