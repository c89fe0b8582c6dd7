// SPDX-License-Identifier: MIT
// The logger NCCL installed, kept in one atomic so every thread sees it.
#include "log.h"

#include <atomic>

#include "odl/odl.h"

namespace odl::plugin {
namespace {
std::atomic<ncclDebugLogger_t> g_logger{nullptr};

// libodl's levels as NCCL's; NCCL_DEBUG then decides what is shown.
void from_libodl(void*, int level, const char* msg) {
    const ncclDebugLogLevel l = level <= ODL_LOG_WARN ? NCCL_LOG_WARN
                                : level == ODL_LOG_INFO ? NCCL_LOG_INFO
                                                        : NCCL_LOG_TRACE;
    if (auto fn = g_logger.load(std::memory_order_acquire))
        fn(l, NCCL_NET_SUBSYS, __FILE__, __LINE__, "NET/ODL : libodl: %s", msg);
}
}  // namespace

void set_logger(ncclDebugLogger_t fn) {
    if (!fn) return;
    g_logger.store(fn, std::memory_order_release);
    odl_set_log_fn(from_libodl, nullptr, ODL_LOG_DEBUG);
}
ncclDebugLogger_t logger() { return g_logger.load(std::memory_order_acquire); }

}  // namespace odl::plugin
