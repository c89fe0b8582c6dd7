// SPDX-License-Identifier: MIT
#include "results_dir.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

std::string results_base() {
    if (const char* b = std::getenv("ODL_BUILD_DIR"); b && *b) return b;
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    const fs::path build = fs::weakly_canonical(ODL_BINARY_DIR_DEFAULT, ec);
    if (!self.empty() && !build.empty()) {
        // Inside the build tree: self's path starts with build's.
        const auto [b, s] = std::mismatch(build.begin(), build.end(), self.begin(), self.end());
        if (b == build.end()) return ODL_BINARY_DIR_DEFAULT;
    }
    return (fs::current_path(ec) / "odl-results").string();
}
