// SPDX-License-Identifier: MIT
// `odl vm up|down|exec VM CMD|console VM|reset VM [--off S]|cable [-n N] ACTION|status`: the
// two-VM testbed. The launcher itself is qemu-device/testbed.sh (it builds
// QEMU and the guest images when missing, starts odl-linkd and two TCG
// QEMUs, waits for readiness, tears everything down on failure or Ctrl-C);
// this command finds the pieces and hands over to it.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "cli_common.h"

namespace odl::cli {
namespace {

/// Replaces this process with testbed.sh so signals reach it directly.
[[noreturn]] void hand_over(const std::vector<std::string>& args) {
    const std::string src = env_or("ODL_SOURCE_DIR", ODL_SOURCE_DIR_DEFAULT);
    const std::string build = env_or("ODL_BUILD_DIR", ODL_BINARY_DIR_DEFAULT);
    const std::string script = src + "/qemu-device/testbed.sh";
    const std::string linkd = build + "/model/src/linkd/odl-linkd";
    if (!std::getenv("ODL_LINKD")) setenv("ODL_LINKD", linkd.c_str(), 1);
    std::vector<char*> argv;
    argv.push_back(const_cast<char*>(script.c_str()));
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    std::fflush(stdout);
    execv(script.c_str(), argv.data());
    fmt::print(stderr, "odl: vm: cannot run {}\n", script);
    std::exit(127);
}

}  // namespace

void add_vm_command(CLI::App& app) {
    auto* vm = app.add_subcommand("vm", "VM testbed: odl-linkd + two (to four) QEMUs joined by modelled cables");
    vm->require_subcommand(1);

    static std::string kernel = "6.12";
    static int timeout_s = 180;
    static std::string gen = "gen3";
    static int lanes = 2;
    static std::string cmd_file;
    auto* up = vm->add_subcommand("up", "build what is missing, start both VMs, wait until ready");
    up->add_option("--kernel", kernel, "guest kernel series")->check(CLI::IsMember({"6.12", "6.1"}));
    up->add_option("--timeout", timeout_s, "seconds to wait for each guest")->check(CLI::Range(10, 3600));
    up->add_option("--gen", gen, "modelled cable generation")
        ->check(CLI::IsMember({"tb3", "gen2", "gen3", "gen4"}));
    up->add_option("--lanes", lanes, "lanes per direction")->check(CLI::Range(1, 2));
    static bool asymmetric = false;
    up->add_flag("--asymmetric", asymmetric, "Gen4 x2 as 3 lanes A->B and 1 back (USB4 v2; --gen gen4)");
    static std::string iommu = "off";
    up->add_option("--iommu", iommu, "a virtual Intel IOMMU in front of the guests' PCI devices (docs/vm.md)")
        ->check(CLI::IsMember({"off", "translated", "pt"}));
    up->add_option("--cmd-file", cmd_file, "shell script every guest runs after loading the modules")
        ->check(CLI::ExistingFile);
    static int hosts = 2;
    static std::string topology = "ring";
    up->add_option("--hosts", hosts, "guests: 2 (A, B), 3 (C) or 4 (D)")->check(CLI::Range(2, 4));
    up->add_option("--topology", topology,
                   "3 or 4 hosts: the cables: ring, line, star (A to each other) or pairs like 0-1,1-2")
        ->check([](const std::string& t) {
            if (t == "ring" || t == "line" || t == "star") return std::string();
            for (char c : t)
                if (!(c == ',' || c == '-' || (c >= '0' && c <= '3')))
                    return std::string("ring, line, star or host pairs like 0-1,1-2");
            return std::string();
        });
    static bool deterministic = false;
    static std::uint64_t seed = 1;
    up->add_flag("--deterministic", deterministic,
                 "QEMU counts instructions and odl-linkd grants windows of simulated time: the same "
                 "run every time (docs/vm.md)");
    auto* seed_opt = up->add_option("--seed", seed, "--deterministic: the guests' random numbers and bit errors")
                         ->check(seed_number());
    up->callback([seed_opt] {
        if (seed_opt->count() > 0 && !deterministic) {
            fmt::print(stderr, "odl: vm up: --seed needs --deterministic\n");
            std::exit(2);
        }
        std::vector<std::string> args = {"up", "--kernel", kernel, "--timeout",
                                         std::to_string(timeout_s), "--gen", gen,
                                         "--lanes", std::to_string(lanes)};
        if (hosts != 2) {
            args.insert(args.end(), {"--hosts", std::to_string(hosts), "--topology", topology});
        }
        if (!cmd_file.empty()) {
            args.push_back("--cmd-file");
            args.push_back(cmd_file);
        }
        if (asymmetric) args.push_back("--asymmetric");
        if (deterministic) args.insert(args.end(), {"--deterministic", "--seed", std::to_string(seed)});
        if (iommu != "off") {
            args.push_back("--iommu");
            args.push_back(iommu);
        }
        hand_over(args);
    });

    vm->add_subcommand("down", "stop the VMs and odl-linkd (logs are kept)")->callback([] {
        hand_over({"down"});
    });
    vm->add_subcommand("status", "what runs")->callback([] { hand_over({"status"}); });

    // exec takes the rest of the line verbatim, options included.
    auto* ex = vm->add_subcommand("exec", "run a shell command in a guest: odl vm exec A|B|C|D CMD...");
    ex->prefix_command();
    ex->callback([ex] {
        auto rest = ex->remaining();
        if (rest.size() < 2) throw CLI::ValidationError("exec", "usage: odl vm exec A|B|C|D CMD...");
        std::vector<std::string> args = {"exec"};
        args.insert(args.end(), rest.begin(), rest.end());
        hand_over(args);
    });

    static std::string which;
    static bool follow = false;
    auto* con = vm->add_subcommand("console", "print a guest's serial console log");
    con->add_option("vm", which, "A, B, C or D")->required()->check(CLI::IsMember({"A", "B", "C", "D", "a", "b", "c", "d"}));
    con->add_flag("-f,--follow", follow, "keep following the log");
    con->callback([] {
        std::vector<std::string> args = {"console", which};
        if (follow) args.push_back("--follow");
        hand_over(args);
    });

    static std::string reset_which;
    auto* reset = vm->add_subcommand("reset", "host reset: power a guest off and on, wait until it is ready");
    reset->add_option("vm", reset_which, "A, B, C or D")
        ->required()
        ->check(CLI::IsMember({"A", "B", "C", "D", "a", "b", "c", "d"}));
    static double reset_off = 0;
    reset->add_option("--off", reset_off, "seconds the guest stays powered off")->check(CLI::Range(0.0, 3600.0));
    reset->callback([] {
        std::vector<std::string> args = {"reset", reset_which};
        if (reset_off > 0) args.insert(args.end(), {"--off", fmt::format("{:.3f}", reset_off)});
        hand_over(args);
    });

    static std::string action;
    static std::vector<std::string> cable_args;
    static int cable_index = 0;
    auto* cable = vm->add_subcommand("cable", "scenario event on a modelled cable");
    cable->add_option("-n,--cable", cable_index, "which cable (3 or 4 hosts; default 0)")->check(CLI::Range(0, 63));
    cable->add_option("action", action, "plug, unplug, retrain, degrade GEN LANES (gen2|gen3|gen4, 1|2), ber RATE")
        ->required()
        ->check(CLI::IsMember({"plug", "unplug", "retrain", "degrade", "ber"}));
    cable->add_option("args", cable_args, "degrade: GEN LANES; ber: RATE (0 to 1e-3)");
    cable->callback([] {
        const std::size_t want = action == "degrade" ? 2 : action == "ber" ? 1 : 0;
        if (cable_args.size() != want)
            throw CLI::ValidationError("cable " + action, want == 0 ? "takes no arguments"
                                                          : want == 1 ? "takes RATE (e.g. ber 1e-9)"
                                                                      : "takes GEN LANES (e.g. degrade gen3 1)");
        std::vector<std::string> args{"cable"};
        if (cable_index != 0) args.push_back(std::to_string(cable_index));
        args.push_back(action);
        args.insert(args.end(), cable_args.begin(), cable_args.end());
        hand_over(args);
    });
}

}  // namespace odl::cli
