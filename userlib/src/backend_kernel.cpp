// SPDX-License-Identifier: MIT
// The kernel backend: devices are /dev/odl_tb5_N from the odl_tb5 module.
// Enumeration works today; the data path arrives with the kernel module.
#include <dirent.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "backend.h"
#include "error.h"

namespace odl {

std::vector<uint32_t> kernel_device_indices() {
    std::vector<uint32_t> out;
    DIR* d = opendir("/dev");
    if (!d) return out;
    while (dirent* e = readdir(d)) {
        unsigned idx = 0;
        char tail = 0;
        if (std::sscanf(e->d_name, "odl_tb5_%u%c", &idx, &tail) == 1) out.push_back(idx);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

std::unique_ptr<backend> open_kernel_backend(const open_config& cfg) {
    const auto have = kernel_device_indices();
    if (std::find(have.begin(), have.end(), cfg.index) == have.end()) {
        if (have.empty())
            throw error(ODL_ERR_NO_DEVICE,
                        fmt::format("no kernel device {} (have: none; is the odl_tb5 module loaded and a peer connected?)", cfg.index));
        throw error(ODL_ERR_NO_DEVICE,
                    fmt::format("no kernel device {} (have: {})", cfg.index, fmt::join(have, ", ")));
    }
    throw error(ODL_ERR_NOT_SUPPORTED,
                fmt::format("/dev/odl_tb5_{} exists, but this libodl has no kernel data path yet", cfg.index));
}

}  // namespace odl
