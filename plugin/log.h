// SPDX-License-Identifier: MIT
// Logging for the plugin: only through the logFunction NCCL hands to init.
#pragma once

#include "nccl/types.h"

namespace odl::plugin {

/// Installs NCCL's logger (NULL: stay silent) and sends libodl's own
/// messages through it too. Safe from any thread.
void set_logger(ncclDebugLogger_t fn);
ncclDebugLogger_t logger();

}  // namespace odl::plugin

// printf-style, because NCCL's logger is printf-style.
#define ODL_LOG(level, ...)                                                                  \
    do {                                                                                     \
        if (auto odl_log_fn_ = ::odl::plugin::logger())                                     \
            odl_log_fn_(level, NCCL_NET_SUBSYS, __FILE__, __LINE__, __VA_ARGS__);           \
    } while (0)
#define ODL_WARN(...) ODL_LOG(NCCL_LOG_WARN, "NET/ODL : " __VA_ARGS__)
#define ODL_INFO(...) ODL_LOG(NCCL_LOG_INFO, "NET/ODL : " __VA_ARGS__)
#define ODL_TRACE(...) ODL_LOG(NCCL_LOG_TRACE, "NET/ODL : " __VA_ARGS__)
