// SPDX-License-Identifier: MIT
// `odl hil check|deploy|run`: a pair of hosts over SSH (hil/, docs/hil.md).
// run replays a scenario, so it is odl-model's `run --on <inventory>`;
// compare and calibrate are odl-model's own `hil` commands.
#include <memory>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "cli_common.h"
#include "commands.h"
#include "odl/hil/hil.h"
#include "odl/hil/inventory.h"

namespace odl::cli {
namespace {

struct hil_options {
    std::string inventory;
    std::string scenario;
    std::string run_pair, run_out;
    bool run_json = false;
    double run_time_scale = -1;  ///< < 0: odl run's default
    std::string run_collectives;  ///< "" (odl run's default), nccl or plugin
    odl::hil::check_options check;
    odl::hil::deploy_options deploy;
};

/// Loads the inventory and runs @fn; bad input is one line and exit 2.
template <typename Fn>
void run_with_inventory(const std::string& path, Fn fn) {
    int rc = 0;
    try {
        const auto inv = odl::hil::load_inventory(path);
        rc = fn(inv);
    } catch (const std::exception& e) {
        fmt::print(stderr, "odl: hil: {}\n", e.what());
        rc = odl::hil::kUsage;
    }
    std::exit(rc);
}

}  // namespace

void add_hil_command(CLI::App& app) {
    auto o = std::make_shared<hil_options>();
    auto* hil = app.add_subcommand("hil", "Hardware in the loop: a pair of hosts over SSH (inventory.yaml)");
    hil->require_subcommand(1);

    auto* check = hil->add_subcommand(
        "check", "Reachability, OS, kernel, IOMMU, Secure Boot, build and odl doctor on both hosts");
    check->add_option("inventory", o->inventory, "the inventory (docs/hil.md)")->required();
    check->add_option("--pair", o->check.pair, "which pair (default: the only one)");
    check->add_flag("--json", o->check.json, "JSON instead of the table");
    check->add_option("--timeout", o->check.timeout_s, "seconds per remote command (default 60)")
        ->check(CLI::Range(1, 3600));
    check->callback([o] { run_with_inventory(o->inventory, [&](const auto& inv) { return run_check(inv, o->check); }); });

    auto* deploy = hil->add_subcommand(
        "deploy", "Install this build's packages on both hosts (DKMS builds the module there), load it, "
                  "check both run the same build");
    deploy->add_option("inventory", o->inventory, "the inventory (docs/hil.md)")->required();
    deploy->add_option("--pair", o->deploy.pair, "which pair (default: the only one)");
    deploy->add_option("--debs", o->deploy.debs_dir, "take the .deb files from this folder (default: odl package)")
        ->check(CLI::ExistingDirectory);
    deploy->add_flag("--plugin", o->deploy.plugin, "also install the NCCL/RCCL plugin package");
    deploy->add_option("--timeout", o->deploy.install_timeout_s,
                       "seconds for each host's install, DKMS build included (default 1200)")
        ->check(CLI::Range(10, 7200));
    deploy->add_option("--settle", o->deploy.settle_s,
                       "seconds to wait for the two modules to log in after the reload (default 60; 0: don't wait)")
        ->check(CLI::Range(0, 3600));
    deploy->callback([o] {
        const std::string self = self_exe();
        o->deploy.odl_self = self.empty() ? "odl" : self;
        run_with_inventory(o->inventory, [&](const auto& inv) { return run_deploy(inv, o->deploy); });
    });

    auto* run = hil->add_subcommand(
        "run", "Replay a scenario on the pair with the real stack; results folder with JSON and JUnit XML "
               "(= odl run SCENARIO --on INVENTORY)");
    run->add_option("scenario", o->scenario, "scenario file, e.g. scenarios/quickstart.yaml")->required();
    run->add_option("inventory", o->inventory, "the inventory (docs/hil.md)")->required();
    run->add_option("--pair", o->run_pair, "which pair (default: the only one)");
    run->add_option("--out", o->run_out, "results folder (default: <build>/runs/hil/<profile>/<pair>/...)")
        ->check(odl::cli::non_empty());
    run->add_flag("--json", o->run_json, "print the JSON report on stdout");
    run->add_option("--collectives", o->run_collectives,
                    "a scenario's collectives as NCCL jobs (nccl, default: a GPU and PyTorch on each host) or "
                    "through odl-plugin-collective on host memory (plugin: no GPU needed, not NCCL)")
        ->check(CLI::IsMember({"nccl", "plugin"}));
    run->add_option("--time-scale", o->run_time_scale,
                    "wall seconds per simulated second for event and workload start times (default 1000)")
        ->check(finite_in(0, k_max_time_scale));
    run->callback([o] {
        // Read here first, so a wrong inventory (or the two words swapped) is
        // named as check and deploy name it, not as an `odl run --on` value.
        try {
            (void)odl::hil::load_inventory(o->inventory);
        } catch (const std::exception& e) {
            fmt::print(stderr, "odl: hil: {}\n", e.what());
            std::exit(odl::hil::kUsage);
        }
        std::vector<std::string> words{"run", o->scenario, "--on", o->inventory};
        if (!o->run_pair.empty()) words.insert(words.end(), {"--pair", o->run_pair});
        if (!o->run_out.empty()) words.insert(words.end(), {"--out", o->run_out});
        if (o->run_json) words.push_back("--json");
        if (!o->run_collectives.empty()) words.insert(words.end(), {"--collectives", o->run_collectives});
        if (o->run_time_scale >= 0) words.insert(words.end(), {"--vm-time-scale", fmt::format("{}", o->run_time_scale)});
        std::exit(exec_model(words));
    });

    // Listed for `odl hil --help` only: forward_to_model() hands these to
    // odl-model before CLI11 parses anything (they run the model).
    hil->add_subcommand("compare", "Measured vs the model per metric with tolerances and latency plots (runs odl-model)");
    hil->add_subcommand("calibrate", "Fit a model profile to a run on the pair; write a calibration file (runs odl-model)");
}

}  // namespace odl::cli
