// SPDX-License-Identifier: MIT
// `odl run <scenario.yaml> [--on model]`: replays a scenario and reports.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "odl_cli_checks.h"
#include "model_commands.h"
#include "results_dir.h"
#include "run_hosts.h"
#include "run_vm.h"
#include "odl/model/scenario/runner.h"

namespace odl::cli {
namespace {

struct run_opts {
    std::string file;
    std::string on = "model";
    std::string out;
    bool json = false;
    bool frame_trace = true;
    long long seed = -1;
    std::string pair;
    std::string nhi_impl;
    vm_run_opts vm;
    /// The --vm-* options given: each applies to some targets only, and a
    /// target that would ignore one refuses it (the model ran without them).
    std::vector<std::string> vm_given;
};



[[noreturn]] void die(const std::string& msg, int rc = 2) {
    std::fprintf(stderr, "odl: run: %s\n", msg.c_str());
    std::exit(rc);
}

/// Dies naming the first of @names that was given: @target would not use it.
void vm_only(const run_opts& o, std::initializer_list<const char*> names, const char* target) {
    for (const char* n : names)
        if (std::find(o.vm_given.begin(), o.vm_given.end(), n) != o.vm_given.end())
            die(fmt::format("{}: {} would not use it", n, target));
}

std::string default_out(const std::string& name) { return results_base() + "/runs/" + name; }

int run(const run_opts& o) {
    if (o.on == "vm") {
        vm_run_opts v = o.vm;
        v.file = o.file;
        v.out = o.out;
        v.json = o.json;
        v.nhi_impl = o.nhi_impl;
        if (v.collectives == "nccl")
            die("--collectives nccl: the guests have no GPU; on vm collectives run through odl-plugin-collective");
        if (o.seed >= 0 && !v.deterministic)
            std::fprintf(stderr, "odl: run: --seed has no effect on vm without --deterministic\n");
        v.seed = o.seed;
        return run_on_vm(v);
    }
    if (o.on != "model") {
        // Anything else names a HIL inventory (docs/hil.md).
        std::error_code ec;
        if (!std::filesystem::is_regular_file(o.on, ec))
            die(fmt::format("--on {}: expected model, vm or a HIL inventory file ({})", o.on,
                            std::filesystem::is_directory(o.on, ec) ? "this is a folder" : "no such file"));
        vm_only(o, {"--vm-kernel", "--vm-driver", "--vm-ping-cap", "--vm-stream-cap-mib"}, "real hosts");
        if (!o.nhi_impl.empty()) die("--nhi-impl is for the model and the VMs: real hosts have their own NHI");
        if (o.vm.deterministic) die("--deterministic is for --on vm: real hosts keep their own time");
        hosts_run_opts h;
        h.file = o.file;
        h.inventory = o.on;
        h.pair = o.pair;
        h.out = o.out;
        h.json = o.json;
        h.settings = o.vm;
        h.settings.stream_cap_mib = k_hosts_stream_cap_mib;
        if (o.seed >= 0)
            std::fprintf(stderr, "odl: run: --seed has no effect on real hosts (no bit-error generator there)\n");
        return run_on_hosts(h);
    }
    if (o.vm.deterministic) die("--deterministic is for --on vm (the model is deterministic already)");
    vm_only(o, {"--vm-kernel", "--vm-driver", "--vm-time-scale", "--vm-ping-cap", "--vm-stream-cap-mib"}, "the model");
    if (!o.pair.empty()) die("--pair is for --on <inventory.yaml>");
    if (!o.vm.collectives.empty()) die("--collectives is for --on vm or --on <inventory.yaml>: the model has its own");
    namespace m = odl::model;
    m::scenario s;
    try {
        s = m::load_scenario(o.file);
    } catch (const std::exception& e) {
        die(e.what());
    }
    if (o.seed >= 0) s.seed = static_cast<std::uint64_t>(o.seed);
    const std::string out = o.out.empty() ? default_out(s.name) : o.out;
    // Before the run, as on vm and hosts: a folder that cannot be made should
    // not cost the whole run first.
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) die(fmt::format("cannot create {}: {}", out, ec.message()));
    fmt::print(stderr, "odl: run: {} on the model: {} hosts, {} cables, {} events, {:.3f} ms\n",
               s.name, s.hosts.size(), s.cables.size(), s.events.size(),
               s.duration.to_seconds() * 1e3);
    const auto t0 = std::chrono::steady_clock::now();
    m::run_result r;
    try {
        m::run_options ro;
        ro.trace_frames = o.frame_trace;
        if (!o.nhi_impl.empty()) ro.nhi_override = m::parse_irq_impl(o.nhi_impl);
        r = m::run_scenario(s, ro);
    } catch (const std::exception& e) {
        die(e.what());
    }
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const auto put = [&](const std::string& name, const std::string& body) {
        std::ofstream f(out + "/" + name, std::ios::binary);
        f << body;
        if (!f) die(fmt::format("cannot write {}/{}", out, name));
    };
    put("report.json", r.to_json().dump(2) + "\n");
    put("report.txt", r.to_text());
    put("trace.txt", r.trace);
    fmt::print(stderr, "odl: run: {:.2f} s wall, {} model events; wrote {}/report.json, trace.txt\n",
               wall, r.events, out);
    if (o.json)
        fmt::print("{}\n", r.to_json().dump(2));
    else
        fmt::print("{}", r.to_text());
    return r.passed() ? 0 : 1;
}

}  // namespace

void add_run_command(CLI::App& app) {
    auto o = std::make_shared<run_opts>();
    auto* cmd = app.add_subcommand("run", "replay a scenario (YAML) and report");
    cmd->add_option("scenario", o->file, "scenario file, e.g. scenarios/quickstart.yaml")->required();
    cmd->add_option("--on", o->on,
                    "where to replay: model, vm (the two-VM testbed) or a HIL inventory (hosts.yaml, docs/hil.md)");
    cmd->add_option("--pair", o->pair, "--on <inventory>: which pair (default: the only one)");
    cmd->add_option("--out", o->out, "folder for report.json, report.txt, trace.txt")
        ->check(odl::cli::non_empty());
    cmd->add_option("--seed", o->seed, "override the scenario's seed")
        ->check(odl::cli::seed_number());
    cmd->add_flag("--json", o->json, "print the JSON report on stdout");
    cmd->add_option("--nhi-impl", o->nhi_impl,
                    "every host's NHI interrupt unit: model (C++), rtl (the Verilated SystemVerilog block) or "
                    "lockstep (both, stopping at the first difference); default: each host's 'nhi:'")
        ->check(CLI::IsMember({"model", "rtl", "lockstep"}));
    cmd->add_flag("!--no-frame-trace", o->frame_trace, "trace only link/ring events, not every frame");
    cmd->add_option("--vm-kernel", o->vm.kernel, "--on vm: guest kernel series")
        ->check(CLI::IsMember({"6.12", "6.1"}));
    cmd->add_option("--vm-driver", o->vm.driver,
                    "--on vm: odl_tb5 (odl perf --backend kernel) or tbnet (ping/iperf3 over thunderbolt0)")
        ->check(CLI::IsMember({"odl_tb5", "tbnet"}));
    cmd->add_option("--vm-time-scale", o->vm.time_scale,
                    "--on vm or an inventory: wall seconds per simulated second for event/workload times "
                    "(default 1000)")
        ->check(odl::cli::finite_in(0, odl::cli::k_max_time_scale));
    cmd->add_flag("--deterministic", o->vm.deterministic,
                  "--on vm: the same run every time (instruction-counting QEMUs, odl-linkd granting simulated time; "
                  "--vm-time-scale then counts simulated seconds; --seed seeds the guests and the cable)");
    cmd->add_option("--vm-ping-cap", o->vm.ping_cap, "--on vm, tbnet: at most this many pings per pingpong")
        ->check(CLI::Range(1u, 100000u));
    cmd->add_option("--vm-stream-cap-mib", o->vm.stream_cap_mib, "--on vm: at most this many MiB per stream")
        ->check(CLI::Range(1u, 65536u));
    cmd->add_option("--collectives", o->vm.collectives,
                    "--on an inventory: a scenario's collectives as NCCL jobs (nccl, default: GPUs needed) or through "
                    "odl-plugin-collective on host memory (plugin); on vm always plugin")
        ->check(CLI::IsMember({"nccl", "plugin"}));
    cmd->callback([o, cmd] {
        for (const char* n : {"--vm-kernel", "--vm-driver", "--vm-time-scale", "--vm-ping-cap", "--vm-stream-cap-mib"})
            if (cmd->get_option(n)->count() > 0) o->vm_given.emplace_back(n);
        std::exit(run(*o));
    });
}

}  // namespace odl::cli
