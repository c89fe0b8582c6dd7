// SPDX-License-Identifier: MIT
// What `odl mount` shows: the peer's served folder (or a folder in it) as a
// read-only tree, listed over the link and refreshed when older than a TTL,
// each file fetched into a local cache on open (verified like odl cp) and
// read from there. No FUSE here: cmd_mount.cpp maps its calls onto this.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "client.h"

namespace odl::files {

class mount_view {
public:
    struct node {
        bool dir = false;
        uint64_t size = 0;
        uint64_t mtime_ns = 0;
        uint32_t mode = 0;
    };

    /// @remote_root: a folder of the peer's ("" = all it serves);
    /// @cache_dir: an existing folder for fetched files.
    mount_view(file_client& client, std::string remote_root, std::string cache_dir, uint64_t ttl_ns);

    /// The entry at @rel ("" = the root), nothing when there is none.
    std::optional<node> stat(const std::string& rel);
    /// Names in the folder @rel (empty when it is none).
    std::vector<std::string> children(const std::string& rel);
    /// The local copy of file @rel, fetched when the cache lacks this
    /// version; throws copy_error (link, refusal) or std::invalid_argument
    /// (no such file, a folder).
    std::string fetch(const std::string& rel);

    uint64_t fetches() const { return m_fetches; }
    uint64_t listings() const { return m_listings; }

private:
    void refresh();

    file_client& m_client;
    std::string m_root, m_cache;
    uint64_t m_ttl_ns;
    uint64_t m_listed_at = 0;
    bool m_listed = false;
    std::map<std::string, node> m_nodes;  ///< by path relative to the root
    uint64_t m_fetches = 0, m_listings = 0;
};

}  // namespace odl::files
