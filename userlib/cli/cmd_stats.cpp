// SPDX-License-Identifier: MIT
// `odl stats`: shows the NCCL plugin's per-process statistics files from the
// runtime directory (live and finished processes), as a table or JSON.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "odl/wire/nccl_stats.h"
#include "commands.h"

namespace odl::cli {
namespace {

using odl::plugin::stat_load;
using odl::plugin::stats_file;

struct stats_options {
    std::string dir;
    bool json = false;
    bool clean = false;
};

const char* state_name(uint32_t s) {
    static const char* names[] = {"connecting", "up", "peer-closed", "lost"};
    return s < 4 ? names[s] : "?";
}

/// Reads one file through a shared mapping; false if it is not a stats file.
bool read_stats(const std::string& path, stats_file& out) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    void* p = mmap(nullptr, sizeof(stats_file), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return false;
    const auto* f = static_cast<const stats_file*>(p);
    const bool ok = __atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) == odl::plugin::kStatsMagic &&
                    f->version == odl::plugin::kStatsVersion && f->nlinks <= odl::plugin::kStatsMaxLinks;
    if (ok) std::memcpy(&out, f, sizeof(out));  // counters: each read whole (8-byte aligned)
    munmap(p, sizeof(stats_file));
    return ok;
}

int run_stats(const stats_options& opt) {
    const std::string dir = opt.dir.empty() ? odl::plugin::stats_dir() : opt.dir;
    nlohmann::json procs = nlohmann::json::array();
    if (DIR* d = opendir(dir.c_str())) {
        while (dirent* e = readdir(d)) {
            const std::string name = e->d_name;
            if (name.rfind("nccl-net-", 0) != 0 || name.size() < 7 || name.substr(name.size() - 6) != ".stats")
                continue;
            stats_file f{};
            if (!read_stats(dir + "/" + name, f)) continue;
            const bool alive = kill(pid_t(f.pid), 0) == 0 || errno == EPERM;
            if (opt.clean && !alive) {
                unlink((dir + "/" + name).c_str());
                continue;
            }
            nlohmann::json links = nlohmann::json::array();
            for (uint32_t i = 0; i < f.nlinks; ++i) {
                const auto& l = f.links[i];
                links.push_back({{"name", std::string(l.name, strnlen(l.name, sizeof(l.name)))},
                                 {"peer", std::string(l.peer, strnlen(l.peer, sizeof(l.peer)))},
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
                             {"process", std::string(f.process, strnlen(f.process, sizeof(f.process)))},
                             {"links", links}});
        }
        closedir(d);
    }
    if (opt.json) {
        fmt::print("{}\n", nlohmann::json{{"dir", dir}, {"processes", procs}}.dump(1));
        return 0;
    }
    if (procs.empty()) {
        fmt::print("no NCCL plugin statistics in {}\n", dir);
        return 0;
    }
    fmt::print("{:>8} {:<6} {:<10} {:<11} {:>5} {:>5} {:>8} {:>12} {:>14} {:>12} {:>14} {:>6}\n", "pid", "alive",
               "link", "state", "send", "recv", "inflight", "tx msgs", "tx bytes", "rx msgs", "rx bytes", "errors");
    for (const auto& p : procs)
        for (const auto& l : p["links"])
            fmt::print("{:>8} {:<6} {:<10} {:<11} {:>5} {:>5} {:>8} {:>12} {:>14} {:>12} {:>14} {:>6}\n",
                       p["pid"].get<uint32_t>(), p["alive"].get<bool>() ? "yes" : "no",
                       l["name"].get<std::string>(), l["link_state"].get<std::string>(),
                       l["send_comms"].get<uint64_t>(), l["recv_comms"].get<uint64_t>(),
                       l["inflight"].get<uint64_t>(), l["tx_msgs"].get<uint64_t>(), l["tx_bytes"].get<uint64_t>(),
                       l["rx_msgs"].get<uint64_t>(), l["rx_bytes"].get<uint64_t>(), l["errors"].get<uint64_t>());
    return 0;
}

}  // namespace

void add_stats_command(CLI::App& app) {
    auto opt = std::make_shared<stats_options>();
    auto* cmd = app.add_subcommand("stats", "Show the NCCL plugin's statistics (per process and link)");
    cmd->add_option("--dir", opt->dir, "Runtime directory (default: $ODL_RUNTIME_DIR, $XDG_RUNTIME_DIR/odl, /tmp/odl-UID)");
    cmd->add_flag("--json", opt->json, "JSON instead of a table");
    cmd->add_flag("--clean", opt->clean, "Remove the files of processes that have exited");
    cmd->callback([opt] { std::exit(run_stats(*opt)); });
}

}  // namespace odl::cli
