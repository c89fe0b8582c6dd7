// SPDX-License-Identifier: MIT
#include "plugin_stats.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "odl/wire/nccl_stats.h"

namespace odl::host {

namespace {

using odl::plugin::stat_load;
using odl::plugin::stats_file;

const char* state_name(uint32_t s) {
    static const char* names[] = {"connecting", "up", "peer-closed", "lost"};
    return s < 4 ? names[s] : "?";
}

/// A name field as text: printable ASCII kept, anything else '?' (the
/// file is the plugin's process's to write, and JSON wants UTF-8).
std::string text(const char* p, size_t n) {
    std::string s(p, strnlen(p, n));
    for (char& c : s)
        if (c < 0x20 || c > 0x7e) c = '?';
    return s;
}

/// Reads one file; the reason it is not a stats file of this version, or
/// "" when @out holds one. odl-daemon reads other users' folders as root: a
/// link, a FIFO or a short file is skipped, never followed, waited on or
/// mapped past its end.
std::string read_stats(const std::string& path, stats_file& out) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return fmt::format("cannot open it: {}", std::strerror(errno));
    struct stat st {};
    std::string why;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (size_t(st.st_size) < sizeof(stats_file))
        why = fmt::format("{} bytes, short of the {} of a statistics file (a plugin starting?)", st.st_size,
                          sizeof(stats_file));
    else if (pread(fd, &out, sizeof(out), 0) != ssize_t(sizeof(out)))
        why = "cannot read it";
    close(fd);
    if (!why.empty()) return why;
    if (out.magic != odl::plugin::kStatsMagic) return "not a statistics file of the plugin (no magic number)";
    if (out.version != odl::plugin::kStatsVersion)
        return fmt::format("format version {}, this odl reads {} (a plugin of another release)", out.version,
                           odl::plugin::kStatsVersion);
    if (out.nlinks > odl::plugin::kStatsMaxLinks)
        return fmt::format("{} links, at most {} (damaged)", out.nlinks, odl::plugin::kStatsMaxLinks);
    return "";
}

}  // namespace

nlohmann::json plugin_stats(const std::string& dir, bool clean, nlohmann::json* skipped) {
    nlohmann::json procs = nlohmann::json::array();
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            const std::string name = e->d_name;
            if (name.rfind("nccl-net-", 0) != 0 || name.size() < 7 || name.substr(name.size() - 6) != ".stats")
                continue;
            stats_file f{};
            if (const std::string why = read_stats(dir + "/" + name, f); !why.empty()) {
                if (skipped) skipped->push_back({{"file", dir + "/" + name}, {"why", why}});
                continue;
            }
            const bool alive = kill(pid_t(f.pid), 0) == 0 || errno == EPERM;
            if (clean && !alive) {
                unlink((dir + "/" + name).c_str());
                continue;
            }
            nlohmann::json links = nlohmann::json::array();
            for (uint32_t i = 0; i < f.nlinks; ++i) {
                const auto& l = f.links[i];
                links.push_back({{"name", text(l.name, sizeof(l.name))},
                                 {"peer", text(l.peer, sizeof(l.peer))},
                                 {"link_state", state_name(stat_load(l.link_state))},
                                 {"send_comms", stat_load(l.send_comms)}, {"recv_comms", stat_load(l.recv_comms)},
                                 {"closing_comms", stat_load(l.closing_comms)},
                                 {"inflight", stat_load(l.inflight)}, {"tx_msgs", stat_load(l.tx_msgs)},
                                 {"tx_bytes", stat_load(l.tx_bytes)}, {"rx_msgs", stat_load(l.rx_msgs)},
                                 {"rx_bytes", stat_load(l.rx_bytes)}, {"errors", stat_load(l.errors)},
                                 {"odl_credit_stalls", stat_load(l.odl_credit_stalls)},
                                 {"odl_link_full_stalls", stat_load(l.odl_link_full_stalls)},
                                 {"odl_rx_unexpected_msgs", stat_load(l.odl_rx_unexpected_msgs)}});
            }
            procs.push_back({{"pid", f.pid}, {"alive", alive},
                             {"process", text(f.process, sizeof(f.process))},
                             {"links", links}});
        }
        closedir(d);
    }
    return procs;
}

nlohmann::json plugin_stats_of_host(const std::string& root, const std::vector<std::string>& extra_dirs,
                                    bool running_only) {
    std::vector<std::string> dirs;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(root + "/run/user", ec)) {
        const std::string uid = e.path().filename().string();
        if (!uid.empty() && uid.find_first_not_of("0123456789") == std::string::npos)
            dirs.push_back(e.path().string() + "/odl");
    }
    std::sort(dirs.begin(), dirs.end());
    dirs.insert(dirs.end(), extra_dirs.begin(), extra_dirs.end());
    nlohmann::json procs = nlohmann::json::array();
    for (const auto& d : dirs)
        for (auto& p : plugin_stats(d))
            if (!running_only || p.value("alive", false)) procs.push_back(std::move(p));
    return {{"dirs", dirs}, {"processes", procs}};
}

}  // namespace odl::host
