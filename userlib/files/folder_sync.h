// SPDX-License-Identifier: MIT
// `odl sync`: a local folder and a folder of the peer's kept the same, both
// ways. Each pass lists both sides and compares every file with the
// version both had after the last pass (kept in LOCAL/.odl-sync/): what
// changed on one side is copied to the other; a file changed on both keeps
// both copies (the peer's under a conflict name, on both hosts); a file
// removed on one side is moved into the other side's .odl-trash/, unless it
// changed there (then it comes back). Nothing is overwritten unseen or
// deleted outright.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "client.h"

namespace odl::files {

struct sync_report {
    uint64_t passes = 0;
    uint64_t pushed = 0, pulled = 0;
    uint64_t trashed_here = 0, trashed_there = 0;
    uint64_t conflicts = 0;
};

class folder_sync {
public:
    using note_fn = std::function<void(const std::string&)>;
    /// @local: an existing folder; @remote: a folder of the peer's ("": all
    /// it serves); @peer: its name, for conflict copies.
    folder_sync(file_client& client, std::string local, std::string remote, std::string peer, note_fn note);

    /// One pass over both sides; returns the number of actions taken.
    uint64_t pass();
    const sync_report& report() const { return m_report; }

private:
    struct version {
        uint64_t size = 0, mtime_ns = 0;
        bool operator==(const version& o) const { return size == o.size && mtime_ns == o.mtime_ns; }
        bool operator!=(const version& o) const { return !(*this == o); }
    };
    void scan_local(std::map<std::string, version>& files, std::set<std::string>& dirs) const;
    void load_state();
    void save_state() const;
    std::string remote_path(const std::string& rel) const;
    void trash_local(const std::string& rel);
    std::string conflict_name(const std::string& rel) const;

    file_client& m_client;
    std::string m_local, m_remote, m_peer;
    note_fn m_note;
    std::map<std::string, version> m_base;  ///< both sides' version after the last pass
    sync_report m_report;
};

}  // namespace odl::files
