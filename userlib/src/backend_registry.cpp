// SPDX-License-Identifier: MIT
// Backend lookup by name, with errors that list what exists.
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend.h"
#include "error.h"
#include "link_loopback.h"
#include "link_sim.h"

namespace odl {

std::unique_ptr<backend> open_loopback_backend(const open_config& cfg);
std::unique_ptr<backend> open_kernel_backend(const open_config& cfg);
std::unique_ptr<backend> open_sim_backend(const open_config& cfg);
std::vector<uint32_t> kernel_device_indices();

namespace {
constexpr const char* kNames = "loopback, sim, kernel";

[[noreturn]] void unknown(const std::string& name) {
    throw error(ODL_ERR_NO_BACKEND, fmt::format("unknown backend '{}' (have: {})", name, kNames));
}
}  // namespace

const char* backend_names() { return kNames; }

uint32_t device_count(const std::string& name) {
    if (name == "loopback") return kLoopbackDevices;
    if (name == "kernel") return uint32_t(kernel_device_indices().size());
    // One modelled link per server; whether one runs shows at open.
    if (name == "sim") return 1;
    unknown(name);
}

std::unique_ptr<backend> open_backend(const open_config& cfg) {
    if (cfg.backend == "loopback") return open_loopback_backend(cfg);
    if (cfg.backend == "kernel") return open_kernel_backend(cfg);
    if (cfg.backend == "sim") return open_sim_backend(cfg);
    unknown(cfg.backend);
}

}  // namespace odl
