// SPDX-License-Identifier: MIT
// The keys `odl pair` made: one JSON file per paired peer (mode 0600, in a
// 0700 folder), found by the pair id a HELLO names.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "crypto.h"

namespace odl::files {

using pair_id = std::array<uint8_t, 16>;

/// One pairing, as both hosts store it (each with its own names).
struct pair_record {
    pair_id id{};
    key32 key{};
    std::string peer_name;   ///< what the peer called itself
    std::string local_name;  ///< what this host told it
    std::string created;     ///< UTC, ISO 8601
};

/// A key folder or file that cannot be used, in words with its path.
struct pair_store_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Where keys live: $ODL_KEYS_DIR, else /etc/odl/pairs for root, else
/// $XDG_CONFIG_HOME/odl/pairs (~/.config/odl/pairs).
std::string default_keys_dir();

class pair_store {
public:
    explicit pair_store(std::string dir) : m_dir(std::move(dir)) {}
    const std::string& dir() const { return m_dir; }

    /// Writes @r (temporary file, fsync, rename); makes the folder 0700.
    /// Returns the file's path.
    std::string save(const pair_record& r) const;
    /// Every readable record; a malformed file is an error naming it.
    std::vector<pair_record> all() const;
    std::optional<pair_record> find(const pair_id& id) const;
    /// The record to use as a client: the one whose peer is @peer_name, or
    /// the only one when @peer_name is empty; else an error that lists them.
    pair_record choose(const std::string& peer_name) const;

private:
    std::string m_dir;
};

}  // namespace odl::files
