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
#include "plugin_stats.h"

namespace odl::cli {
namespace {

struct stats_options {
    std::string dir;
    bool json = false;
    bool clean = false;
};


int run_stats(const stats_options& opt) {
    const std::string dir = opt.dir.empty() ? odl::plugin::stats_dir() : opt.dir;
    nlohmann::json skipped = nlohmann::json::array();
    const nlohmann::json procs = odl::host::plugin_stats(dir, opt.clean, &skipped);
    if (opt.json) {
        fmt::print("{}\n", nlohmann::json{{"dir", dir}, {"processes", procs}, {"skipped", skipped}}.dump(1));
        return 0;
    }
    // Named, not dropped: a file of another release or a damaged one.
    for (const auto& k : skipped)
        fmt::print(stderr, "odl: stats: skipped {}: {}\n", k["file"].get<std::string>(), k["why"].get<std::string>());
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
    cmd->add_option("--dir", opt->dir, "Runtime directory (default: $ODL_RUNTIME_DIR, $XDG_RUNTIME_DIR/odl, /tmp/odl-UID)")
        ->check(CLI::ExistingDirectory);  // a typo showed an empty table
    cmd->add_flag("--json", opt->json, "JSON instead of a table");
    cmd->add_flag("--clean", opt->clean, "Remove the files of processes that have exited");
    cmd->callback([opt] { std::exit(run_stats(*opt)); });
}

}  // namespace odl::cli
