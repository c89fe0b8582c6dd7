// SPDX-License-Identifier: MIT
// `odl doctor [--json]`: the first broken layer of this host's stack, with
// the fix; the exit status names the outcome (doctor.h, docs/doctor.md).
#include <cstdlib>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "doctor.h"
#include "host_view.h"

namespace odl::cli {
namespace {

struct doctor_cli_options {
    bool json = false;
    std::string expect;
    bool no_nccl = false;
    std::string root;
};

/// Where the NCCL plugin of this build or of the package may be.
std::vector<std::string> plugin_hints() {
    std::vector<std::string> h;
    if (const char* p = std::getenv("ODL_PLUGIN_HINT")) h.emplace_back(p);
    h.emplace_back(ODL_PLUGIN_INSTALLED_PATH);
    h.emplace_back(std::string(ODL_BINARY_DIR_DEFAULT) + "/lib/libnccl-net-odl.so");
    return h;
}

int run(const doctor_cli_options& o) {
    doctor_options opt;
    if (!o.expect.empty()) {
        if (!parse_expect(o.expect)) {
            fmt::print(stderr, "odl: doctor: --expect '{}': {}\n", o.expect, kExpectUsage);
            return 2;
        }
        opt.expect = o.expect;
    }
    opt.nccl = !o.no_nccl;
    opt.plugin_hints = plugin_hints();
    const host_view v = read_host_view(o.root);
    const doctor_report r = run_doctor(v, opt);
    if (o.json) {
        nlohmann::json checks = nlohmann::json::array();
        for (const auto& f : r.findings)
            checks.push_back({{"layer", f.layer}, {"status", status_name(f.status)}, {"summary", f.summary},
                              {"details", f.details}, {"fix", f.fix}, {"code", f.code}});
        nlohmann::json out{{"exit_code", r.exit_code},
                           {"healthy", r.exit_code == 0},
                           {"first_broken", r.first_broken.empty() ? nlohmann::json() : nlohmann::json(r.first_broken)},
                           {"kernel", v.kernel_release},
                           {"checks", checks}};
        fmt::print("{}\n", out.dump(1));
        return r.exit_code;
    }
    std::string unchecked;
    for (const auto& f : r.findings) {
        if (f.status == check_status::not_checked && f.summary.empty()) {
            unchecked += (unchecked.empty() ? "" : ", ") + f.layer;
            continue;
        }
        const char* tag = f.status == check_status::fail          ? "FAIL"
                          : f.status == check_status::not_checked ? "--"
                                                                  : status_name(f.status);
        fmt::print("{:<5} {:<8} {}\n", tag, f.layer, f.summary);
        for (const auto& d : f.details) fmt::print("{:<14} {}\n", "", d);
        if (!f.fix.empty()) fmt::print("{:<14} fix: {}\n", "", f.fix);
    }
    if (!unchecked.empty()) fmt::print("{:<5} {:<8} not checked (a layer below is broken): {}\n", "--", "", unchecked);
    if (!r.first_broken.empty())
        fmt::print("odl doctor: first broken layer: {} (exit {})\n", r.first_broken, r.exit_code);
    else if (r.exit_code)
        fmt::print("odl doctor: working, with a warning (exit {})\n", r.exit_code);
    else
        fmt::print("odl doctor: healthy\n");
    return r.exit_code;
}

}  // namespace

void add_doctor_command(CLI::App& app) {
    auto o = std::make_shared<doctor_cli_options>();
    auto* cmd = app.add_subcommand("doctor", "Check this host's stack bottom-up and name the first broken layer");
    cmd->add_flag("--json", o->json, "JSON instead of text");
    cmd->add_option("--expect", o->expect,
                    "The link rating to hold the link to (genN or genNxL, e.g. gen4x2) instead of the port's own "
                    "(read from debugfs, root only)");
    cmd->add_flag("--no-nccl", o->no_nccl, "Skip the NCCL plugin and environment checks");
    cmd->add_option("--root", o->root, "Read /sys, /dev and /proc under this directory (a saved or made-up tree)")
        ->check(CLI::ExistingDirectory);  // a missing one read as a host without USB4
    cmd->callback([o] { std::exit(run(*o)); });
}

}  // namespace odl::cli
