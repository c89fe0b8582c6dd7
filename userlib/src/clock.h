// SPDX-License-Identifier: MIT
// Monotonic nanoseconds: the one clock libodl uses for timeouts and liveness.
#pragma once

#include <time.h>

#include <cstdint>

namespace odl {

inline uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

}  // namespace odl
