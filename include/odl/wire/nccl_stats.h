// SPDX-License-Identifier: MIT
// Layout of the NCCL/RCCL plugin's statistics file (one per process, mapped
// shared under the runtime directory) and where it lives. Written by the
// plugin, read by `odl stats`; this header is the one definition of both.
// C++ and userspace only, unlike the other wire headers.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

namespace odl::plugin {

constexpr uint32_t kStatsMagic = 0x5354444fu;  // "ODST"
constexpr uint32_t kStatsVersion = 1;
constexpr uint32_t kStatsMaxLinks = 16;

/// Counters of one link. Fields are written with relaxed atomic stores by
/// the plugin and read the same way, so a reader sees each value whole.
struct stats_link {
    char name[32];           ///< e.g. "loopback0"
    char peer[64];           ///< peer process identity, once the link is up
    uint32_t link_state;     ///< enum odl_link_state
    uint32_t closing_comms;  ///< closed comms whose operations are still finishing
    uint64_t send_comms;     ///< open send comms
    uint64_t recv_comms;     ///< open receive comms
    uint64_t inflight;       ///< requests posted and not yet tested done
    uint64_t tx_msgs;        ///< isends completed
    uint64_t tx_bytes;
    uint64_t rx_msgs;        ///< receive buffers filled
    uint64_t rx_bytes;
    uint64_t errors;         ///< requests completed with an error
    uint64_t odl_tx_frames;  ///< libodl counters, refreshed while polling
    uint64_t odl_rx_frames;
    uint64_t odl_credit_stalls;
    uint64_t odl_link_full_stalls;
    uint64_t odl_rx_unexpected_msgs;
};

struct stats_file {
    uint32_t magic;
    uint32_t version;
    uint32_t pid;
    uint32_t nlinks;
    uint64_t start_unix_ns;
    uint64_t update_unix_ns;
    char process[64];        ///< this process's identity as peers see it
    stats_link links[kStatsMaxLinks];
};

/// $ODL_RUNTIME_DIR, else $XDG_RUNTIME_DIR/odl, else /tmp/odl-<uid>.
inline std::string stats_dir() {
    if (const char* d = std::getenv("ODL_RUNTIME_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x && *x) return std::string(x) + "/odl";
    return "/tmp/odl-" + std::to_string(getuid());
}

/// The plugin's file name for process @pid.
inline std::string stats_file_name(long pid) { return "nccl-net-" + std::to_string(pid) + ".stats"; }

/// Copies @src into @dst[@size], truncating, always NUL-terminated.
inline void copy_str(char* dst, size_t size, const std::string& src) {
    const size_t n = src.size() < size - 1 ? src.size() : size - 1;
    src.copy(dst, n);
    dst[n] = '\0';
}

template <class T>
inline void stat_store(T& field, T v) { __atomic_store_n(&field, v, __ATOMIC_RELAXED); }
template <class T>
inline T stat_load(const T& field) { return __atomic_load_n(&field, __ATOMIC_RELAXED); }
template <class T>
inline void stat_add(T& field, T v) { __atomic_fetch_add(&field, v, __ATOMIC_RELAXED); }

}  // namespace odl::plugin
