// SPDX-License-Identifier: MIT
// The logger NCCL installed, kept in one atomic so every thread sees it.
#include "log.h"

#include <atomic>

namespace odl::plugin {
namespace {
std::atomic<ncclDebugLogger_t> g_logger{nullptr};
}

void set_logger(ncclDebugLogger_t fn) {
    if (fn) g_logger.store(fn, std::memory_order_release);
}
ncclDebugLogger_t logger() { return g_logger.load(std::memory_order_acquire); }

}  // namespace odl::plugin
