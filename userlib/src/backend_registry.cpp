// SPDX-License-Identifier: MIT
// Backend lookup by name, with errors that list what exists.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend.h"
#include "error.h"
#include "link_loopback.h"

namespace odl {

std::unique_ptr<backend> open_loopback_backend(const open_config& cfg);
std::unique_ptr<backend> open_kernel_backend(const open_config& cfg);
std::vector<uint32_t> kernel_device_indices();

namespace {
constexpr const char* kNames = "loopback, kernel";

[[noreturn]] void unknown(const std::string& name) {
    if (name == "sim")
        throw error(ODL_ERR_NO_BACKEND, "backend 'sim' needs the model server (odl-linkd), which this build lacks (have: " +
                                            std::string(kNames) + ")");
    throw error(ODL_ERR_NO_BACKEND, fmt::format("unknown backend '{}' (have: {})", name, kNames));
}
}  // namespace

const char* backend_names() { return kNames; }

uint32_t device_count(const std::string& name) {
    if (name == "loopback") return kLoopbackDevices;
    if (name == "kernel") return uint32_t(kernel_device_indices().size());
    unknown(name);
}

std::unique_ptr<backend> open_backend(const open_config& cfg) {
    if (cfg.backend == "loopback") return open_loopback_backend(cfg);
    if (cfg.backend == "kernel") return open_kernel_backend(cfg);
    unknown(cfg.backend);
}

}  // namespace odl
