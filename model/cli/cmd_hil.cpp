// SPDX-License-Identifier: MIT
// `odl hil compare|calibrate` (reached through `odl hil ...`): a HIL run
// against the model. Both measure first (odl run --on <inventory>, --repeat
// times: the median is used) unless given the results folders of earlier runs.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "odl_cli_checks.h"
#include "hil_calibrate.h"
#include "hil_compare.h"
#include "results_dir.h"
#include "hil_predict.h"
#include "hil_results.h"
#include "model_commands.h"
#include "odl/hil/inventory.h"
#include "odl/model/scenario/runner.h"
#include "run_hosts.h"

namespace odl::cli {
namespace {

namespace fs = std::filesystem;
namespace hm = hil_model;
namespace m = odl::model;

struct hil_model_opts {
    std::string scenario, inventory, pair, calibration, out, profile, base;
    std::vector<std::string> results;
    unsigned repeat = 1;
    double time_scale = 1000;  ///< as odl hil run: wall seconds per simulated second
    bool json = false;
    hm::tolerances tol;
};

/// "odl: hil <what>: <msg>" and exit @rc.
[[noreturn]] void fail(const char* what, const std::string& msg, int rc = 2) {
    std::fprintf(stderr, "odl: hil %s: %s\n", what, msg.c_str());
    std::exit(rc);
}

/// Measures (runs the scenario on the pair, --repeat times) unless
/// --results names runs; returns the results folders.
std::vector<std::string> measure(const char* what, const hil_model_opts& o, const std::string& run_out) {
    if (!o.results.empty()) return o.results;
    std::vector<std::string> dirs;
    for (unsigned i = 1; i <= o.repeat; ++i) {
        hosts_run_opts h;
        h.file = o.scenario;
        h.inventory = o.inventory;
        h.pair = o.pair;
        h.out = o.repeat == 1 ? run_out : fmt::format("{}/run-{}", run_out, i);
        h.print_report = false;
        h.settings.stream_cap_mib = k_hosts_stream_cap_mib;
        h.settings.time_scale = o.time_scale;
        std::fprintf(stderr, "odl: hil %s: measuring (%u of %u): odl run %s --on %s\n", what, i, o.repeat,
                     o.scenario.c_str(), o.inventory.c_str());
        const int rc = run_on_hosts(h);
        // 1: an assertion failed, which says nothing against the measurement.
        if (rc != 0 && rc != 1) fail(what, fmt::format("the run on the pair failed (status {})", rc), rc);
        dirs.push_back(h.out);
    }
    return dirs;
}

struct loaded {
    m::scenario s;
    odl::hil::inventory inv;
    const odl::hil::pair* p = nullptr;
};

loaded load(const char* what, const hil_model_opts& o) {
    loaded l;
    try {
        l.s = m::load_scenario(o.scenario);
        l.inv = odl::hil::load_inventory(o.inventory);
        l.p = &l.inv.select(o.pair);
    } catch (const std::exception& e) {
        fail(what, e.what());
    }
    if (l.s.cables.empty()) fail(what, fmt::format("{}: no cable", o.scenario));
    return l;
}

std::string default_run_dir(const odl::hil::pair& p, const std::string& scenario, const char* what) {
    const std::string base = results_base();
    const std::time_t t = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::gmtime(&t));
    return fmt::format("{}/runs/hil/{}/{}/{}-{}-{}", base, p.profile, p.name, scenario, what, stamp);
}

/// The runs in @dirs, checked against the scenario and pair; their median
/// when there are several.
hm::measured_run read_measured(const char* what, const std::vector<std::string>& dirs, const m::scenario& s,
                               const odl::hil::pair& p, const std::string& median_dir) {
    std::vector<hm::measured_run> runs;
    for (const auto& dir : dirs) {
        hm::measured_run r;
        try {
            r = hm::load_measured(dir);
        } catch (const std::exception& e) {
            fail(what, e.what());
        }
        if (r.scenario != s.name)
            fail(what, fmt::format("{} holds a run of scenario {}, not {}", dir, r.scenario, s.name));
        if (r.pair != p.name)
            std::fprintf(stderr, "odl: hil %s: note: %s was measured on pair %s, the inventory names %s\n", what,
                         dir.c_str(), r.pair.c_str(), p.name.c_str());
        runs.push_back(std::move(r));
    }
    try {
        return runs.size() == 1 ? runs.front() : hm::median_of(runs, median_dir);
    } catch (const std::exception& e) {
        fail(what, e.what());
    }
}

m::calibration read_calibration(const char* what, const std::string& path) {
    try {
        return m::load_calibration(path);
    } catch (const std::exception& e) {
        fail(what, e.what());
    }
}

std::string calibration_path(const hil_model_opts& o, const m::scenario& s) {
    if (!o.calibration.empty()) return o.calibration;
    return s.calibration.empty() ? m::default_calibration_path() : s.calibration;
}

int run_compare(const hil_model_opts& o) {
    const char* what = "compare";
    const loaded l = load(what, o);
    const std::string cal_path = calibration_path(o, l.s);
    const m::calibration cal = read_calibration(what, cal_path);
    const std::string profile = o.profile.empty() ? l.p->profile : o.profile;
    try {
        cal.get(profile);
    } catch (const std::exception& e) {
        fail(what, fmt::format("{}: {} (calibrate one with odl hil calibrate, then pass --calibration)", cal_path,
                               e.what()));
    }
    const std::string run_dir = o.out.empty() ? default_run_dir(*l.p, l.s.name, what) : o.out;
    const auto dirs = measure(what, o, run_dir);
    const hm::measured_run measured = read_measured(what, dirs, l.s, *l.p, dirs.size() == 1 ? dirs[0] : run_dir);
    const std::string dir = measured.dir;
    const m::link_config cable = hm::cable_of(l.p->expect, l.s.cables[0].cfg.length_m);
    std::vector<hm::predicted_workload> pred;
    try {
        pred = hm::predict(l.s, cal, profile, cable, measured);
    } catch (const std::exception& e) {
        fail(what, e.what());
    }
    hm::comparison c = hm::compare(measured, pred, o.tol);
    c.profile = profile;
    c.calibration = cal_path;
    c.cable = fmt::format("{} {} m", l.p->expect, cable.length_m);
    const std::string out = o.out.empty() ? dir : o.out;
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) fail(what, fmt::format("cannot create {}: {}", out, ec.message()));
    try {
        hm::plot_latency(c, measured, pred, out);
    } catch (const std::exception& e) {
        fail(what, e.what());
    }
    const auto put = [&](const std::string& name, const std::string& body) {
        std::ofstream f(out + "/" + name, std::ios::binary);
        f << body;
        if (!f) fail(what, fmt::format("cannot write {}/{}", out, name));
    };
    put("compare.json", c.to_json().dump(2) + "\n");
    put("compare.txt", c.to_text());
    if (o.json)
        fmt::print("{}\n", c.to_json().dump(2));
    else
        fmt::print("{}", c.to_text());
    std::fprintf(stderr, "odl: hil compare: wrote %s/compare.json, compare.txt\n", out.c_str());
    return c.passed() ? 0 : 1;
}

int run_calibrate(const hil_model_opts& o) {
    const char* what = "calibrate";
    const loaded l = load(what, o);
    const std::string cal_path = calibration_path(o, l.s);
    const m::calibration cal = read_calibration(what, cal_path);
    const std::string name = o.profile.empty() ? l.p->profile : o.profile;
    std::string base = o.base;
    if (base.empty()) {
        // The pair's own profile when the file has it, else the scenario's hosts'.
        base = cal.platforms.count(name) ? name : l.s.hosts.at(0).platform;
        if (base.empty()) base = "intel-tb5-discrete";
        if (base != name)
            std::fprintf(stderr, "odl: hil calibrate: %s is not in %s: starting from %s (--base chooses)\n",
                         name.c_str(), cal_path.c_str(), base.c_str());
    }
    try {
        cal.get(base);
    } catch (const std::exception& e) {
        fail(what, fmt::format("--base: {}: {}", cal_path, e.what()));
    }
    const std::string run_dir = default_run_dir(*l.p, l.s.name, what);
    const auto dirs = measure(what, o, run_dir);
    const hm::measured_run measured = read_measured(what, dirs, l.s, *l.p, dirs.size() == 1 ? dirs[0] : run_dir);
    const std::string dir = measured.dir;
    const m::link_config cable = hm::cable_of(l.p->expect, l.s.cables[0].cfg.length_m);
    std::fprintf(stderr, "odl: hil calibrate: fitting %s (from %s) to %s\n", name.c_str(), base.c_str(),
                 dir.c_str());
    hm::fit_result fr;
    try {
        fr = hm::fit_profile(l.s, cal, base, name, cable, measured);
    } catch (const std::exception& e) {
        fail(what, e.what());
    }
    m::calibration with = cal;
    with.platforms[name] = fr.profile;
    const auto pred = hm::predict(l.s, with, name, cable, measured);
    hm::comparison c = hm::compare(measured, pred, o.tol);
    c.profile = name;
    c.calibration = o.out;
    c.cable = fmt::format("{} {} m", l.p->expect, cable.length_m);
    const std::string header = fmt::format(
        "OdinLink model calibration written by odl hil calibrate: profile {} fitted\n"
        "to pair {} ({}) running scenario {} at {}, starting from {} of {}.\n"
        "Fitted (F): post and completion (x {:.4g}), frame_overhead; the rest is the base's.",
        name, measured.pair, measured.hosts, measured.scenario, measured.date, base, cal_path, fr.message_scale);
    {
        std::ofstream f(o.out, std::ios::binary);
        f << hm::calibration_yaml(cal, fr.profile, header);
        if (!f) fail(what, fmt::format("cannot write {}", o.out));
    }
    // The file must load as the model will load it.
    try {
        m::load_calibration(o.out).get(name);
    } catch (const std::exception& e) {
        fail(what, fmt::format("wrote {} but it does not load: {}", o.out, e.what()), 1);
    }
    fmt::print("profile {} fitted to {} ({}): post and completion x {:.4g} of {}, frame_overhead {:.1f} ns\n", name,
               measured.pair, measured.scenario, fr.message_scale, base,
               fr.profile.nhi.frame_overhead.to_seconds() * 1e9);
    fmt::print("{}", c.to_text());
    for (const auto& n : fr.notes) fmt::print("  not fitted: {}\n", n);
    fmt::print("wrote {} (use it: odl hil compare SCENARIO INVENTORY --calibration {})\n", o.out, o.out);
    return fr.latency_fitted || fr.bandwidth_fitted ? 0 : 1;
}

void common(CLI::App* c, hil_model_opts& o) {
    c->add_option("scenario", o.scenario, "scenario file, e.g. scenarios/quickstart.yaml")->required();
    c->add_option("inventory", o.inventory, "the inventory (docs/hil.md)")->required();
    c->add_option("--pair", o.pair, "which pair (default: the only one)");
    c->add_option("--results", o.results,
                  "use these odl hil run results folders instead of measuring now (several: their median)")
        ->check(CLI::ExistingDirectory);
    c->add_option("--repeat", o.repeat, "measure this many times and use the median per metric (default 1)")
        ->check(CLI::Range(1u, 50u));
    c->add_option("--time-scale", o.time_scale,
                  "measuring: wall seconds per simulated second for workload start times (default 1000, as "
                  "odl hil run; workloads never overlap)")
        ->check(odl::cli::finite_in(0, odl::cli::k_max_time_scale));
    c->add_option("--tolerance-latency", o.tol.latency, "percent, p50 one-way latency (default 10)")
        ->check(odl::cli::finite_in(0, 1000));  // CLI::Range let nan through
    c->add_option("--tolerance-tail", o.tol.tail, "percent, p99 one-way latency (default: shown, not judged)")
        ->check(odl::cli::finite_in(0, 1000));  // CLI::Range let nan through
    c->add_option("--tolerance-bandwidth", o.tol.bandwidth, "percent, stream Gb/s (default 5)")
        ->check(odl::cli::finite_in(0, 1000));  // CLI::Range let nan through
}

}  // namespace

void add_hil_model_command(CLI::App& app) {
    auto o = std::make_shared<hil_model_opts>();
    auto* hil = app.add_subcommand("hil", "a HIL pair's runs against the model: compare, calibrate");
    hil->require_subcommand(1);

    auto* cmp = hil->add_subcommand("compare", "measured vs predicted per metric, with tolerances and latency plots");
    common(cmp, *o);
    cmp->add_option("--calibration", o->calibration, "calibration file (default: the scenario's, else the shipped one)")
        ->check(CLI::ExistingFile);
    cmp->add_option("--profile", o->profile, "model profile (default: the pair's profile in the inventory)");
    cmp->add_option("--out", o->out, "folder for compare.json/.txt and plots (default: the run's results folder)")
        ->check(odl::cli::non_empty());
    cmp->add_flag("--json", o->json, "print compare.json on stdout");
    cmp->callback([o] { std::exit(run_compare(*o)); });

    auto* cal = hil->add_subcommand("calibrate",
                                    "fit a profile's per-message and per-frame costs to a run; write a calibration file");
    common(cal, *o);
    cal->add_option("--out", o->out, "the calibration file to write")->required();
    cal->add_option("--calibration", o->calibration, "the calibration file to start from (default: the shipped one)")
        ->check(CLI::ExistingFile);
    cal->add_option("--base", o->base, "profile to start from (default: the pair's, else the scenario's hosts')");
    cal->add_option("--profile", o->profile, "name of the fitted profile (default: the pair's profile)");
    cal->callback([o] { std::exit(run_calibrate(*o)); });
}

}  // namespace odl::cli
