// SPDX-License-Identifier: MIT
// The serving side of the file service (`odl files serve DIR`): one paired
// client's session at a time over a libodl device, everything it touches
// beneath the served folder.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "channel.h"
#include "pair_store.h"
#include "safe_dir.h"

namespace odl::files {

struct server_counters {
    uint64_t sessions = 0;
    uint64_t refused = 0;          ///< sessions ended by a bad HELLO or message
    uint64_t files_in = 0, files_out = 0;
    uint64_t bytes_in = 0, bytes_out = 0;
    uint64_t hash_mismatches = 0;  ///< files whose SHA-256 did not match (dropped)
    uint64_t errors = 0;           ///< requests answered with ERROR
    uint64_t removed = 0;          ///< files moved into the trash
};

class file_server {
public:
    using log_fn = std::function<void(const std::string&)>;
    /// Serves the folder @root (an open directory) to peers in @keys.
    file_server(int root, pair_store keys, log_fn log, uint32_t max_chunk = ODL_FILES_CHUNK_MAX);

    /// One session on @dev: until BYE, link loss, a broken protocol or @stop.
    /// Never throws for what the peer does; logs it and returns. @first: the
    /// session's first message, when the caller already received it.
    void serve(odl::device& dev, const std::atomic<bool>* stop, std::string_view first = {});

    const server_counters& counters() const { return m_counters; }

private:
    void handle(channel& ch, const message& m);
    void put(channel& ch, const message& m);
    void get(channel& ch, const message& m);
    void list(channel& ch, const message& m);
    void mkdir(channel& ch, const message& m);
    void remove(channel& ch, const message& m);

    int m_root;
    pair_store m_keys;
    log_fn m_log;
    uint32_t m_max_chunk;
    server_counters m_counters;
};

/// A path error's protocol code and words for errno @err.
odl_files_err path_error_code(int err);

}  // namespace odl::files
