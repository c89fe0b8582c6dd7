// SPDX-License-Identifier: MIT
// The process's statistics file: created and mapped on first init, kept
// after exit so `odl stats` can still show a finished run.
#pragma once

#include <string>

#include "odl/wire/nccl_stats.h"

namespace odl::plugin {

class stats_mapping {
public:
    stats_mapping() = default;
    ~stats_mapping() { close(); }
    stats_mapping(const stats_mapping&) = delete;
    stats_mapping& operator=(const stats_mapping&) = delete;

    /// Creates (or truncates) the file and maps it; false with @why on failure.
    bool open(const std::string& process, std::string& why);
    void close();
    /// Drops a mapping inherited across fork() without touching the file.
    void abandon();
    /// The mapped file, or a private dummy when it could not be created, so
    /// callers never check.
    stats_file& file() { return m_file ? *m_file : m_dummy; }
    const std::string& path() const { return m_path; }

private:
    stats_file* m_file = nullptr;
    stats_file m_dummy{};
    std::string m_path;
};

}  // namespace odl::plugin
