// SPDX-License-Identifier: MIT
// The file service's two clocks: a monotonic one for deadlines and waits,
// and UTC wall time for names and records (trash folders, conflict copies,
// pairings).
#pragma once

#include <chrono>
#include <cstdint>
#include <ctime>
#include <string>

namespace odl::files {

inline uint64_t now_ns() {
    return uint64_t(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
            .count());
}

inline std::tm utc_now() {
    const std::time_t t = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&t, &tm);
    return tm;
}

/// For names: 20261126T131500Z.
inline std::string utc_stamp() {
    const std::tm tm = utc_now();
    char buf[32];
    return std::string(buf, std::strftime(buf, sizeof(buf), "%Y%m%dT%H%M%SZ", &tm));
}

/// For records: 2026-11-26T13:15:00Z.
inline std::string utc_iso() {
    const std::tm tm = utc_now();
    char buf[32];
    return std::string(buf, std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm));
}

}  // namespace odl::files
