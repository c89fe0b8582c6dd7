// SPDX-License-Identifier: MIT
#include "odl/model/linkd/sim_options.h"

#include <stdexcept>

#include <fmt/format.h>

#include "odl_cli_checks.h"
#include "odl/model/scenario/scenario.h"

namespace odl::model::linkd {

sim_option_handles add_sim_options(CLI::App& app, sim_options& o) {
    sim_option_handles h{};
    h.profile = app.add_option("--profile", o.profile, "--sim: host platform profile (default intel-tb5-discrete)");
    h.calibration = app.add_option("--calibration", o.calibration,
                                   "--sim: calibration file with the profile (default: the shipped one)")
                        ->check(CLI::ExistingFile);
    h.asymmetric =
        app.add_flag("--asymmetric", o.asymmetric, "gen4 with 3 lanes A->B, 1 back (with --gen gen4 --lanes 2)");
    h.length = app.add_option("--length", o.length_m, "--sim: cable length, m (default 1)")->check(CLI::Range(0.0, 50.0));
    h.seed = app.add_option("--seed", o.seed, "--sim: bit-error randomness")->check(odl::cli::seed_number());
    h.scenario = app.add_option("--scenario", o.scenario,
                                "--sim: take the two hosts' profiles, the cable and its events (plug, unplug, ber, "
                                "degrade, retrain) from this scenario file")
                     ->check(CLI::ExistingFile);
    h.links = app.add_option("--links", o.links,
                             "--sim: modelled links (sim devices 0 .. N-1), each its own cable between its "
                             "own two hosts, each run by a process of its own (default 1)")
                  ->check(CLI::Range(1, 256));
    h.lookahead = app.add_option("--lookahead", o.lookahead_ns,
                                 "--sim: while frames are in flight, run the model up to this many ns ahead of the "
                                 "wall clock to the next delivery; the receiving program takes the frame when it is "
                                 "due (default 20000; 0: hand frames over once due)")
                      ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1'000'000}));
    h.spin = app.add_option("--spin", o.spin,
                            "--sim: between busy turns, spin instead of a system call (auto: with 4 or more "
                            "CPUs, 3 more for each further link; docs/sim.md)")
                 ->check(CLI::IsMember({"auto", "on", "off"}));
    h.timing = app.add_option("--sim-timing", o.timing,
                              "--sim: event (the full model, every action), pipeline (a reduced model fitted "
                              "to the full one at start, no action per frame, refused where it is more than 5 % "
                              "off) or auto (pipeline where it fits, else event; the default; docs/sim.md)")
                   ->check(CLI::IsMember({"auto", "event", "pipeline"}));
    return h;
}

std::optional<std::string> scenario_conflict(const sim_options& o, const sim_option_handles& h,
                                             const std::vector<const CLI::Option*>& cable) {
    if (o.scenario.empty()) return std::nullopt;
    std::vector<const CLI::Option*> set = {h.profile, h.asymmetric, h.length, h.seed, h.links};
    set.insert(set.end(), cable.begin(), cable.end());
    for (const auto* opt : set)
        if (opt->count() > 0) return fmt::format("--scenario sets the cable and profiles: drop {}", opt->get_name());
    return std::nullopt;
}

std::vector<sim_server_config> sim_link_configs(const sim_options& o, const std::string& gen, unsigned lanes,
                                                std::string* note) {
    sim_server_config cfg;
    cfg.profile = o.profile;
    cfg.seed = o.seed;
    cfg.spin = o.spin == "on" ? 1 : o.spin == "off" ? 0 : -1;
    cfg.lookahead_ns = o.lookahead_ns;
    using timing = decltype(sim_server_config::timing);
    cfg.timing = o.timing == "pipeline" ? timing::pipeline : o.timing == "event" ? timing::event : timing::automatic;
    const auto g = parse_generation(gen);
    if (!g) throw std::runtime_error(fmt::format("unknown cable generation '{}'", gen));
    cfg.link.gen = *g;
    cfg.link.lanes = lanes;
    cfg.link.asymmetric = o.asymmetric;
    cfg.link.length_m = o.length_m;
    std::string cal_path = o.calibration;
    if (!o.scenario.empty()) {
        // The scenario's two hosts, its cable and its cable events; its
        // workloads are the programs' to run.
        const auto sc = load_scenario(o.scenario);
        if (sc.hosts.size() != 2 || sc.cables.size() != 1)
            throw std::runtime_error(fmt::format("{}: the sim backend models two hosts and one cable (this "
                                                 "scenario has {} and {})",
                                                 o.scenario, sc.hosts.size(), sc.cables.size()));
        // What the sim server cannot apply is refused, not dropped: a
        // scenario whose cable starts unplugged ran plugged, and a host's
        // completion or throttle override ran as its platform.
        for (const auto& h : sc.hosts) {
            const char* what = h.interrupts ? "completion" : h.throttle ? "throttle" : h.nhi != irq_impl::model ? "nhi" : nullptr;
            if (what)
                throw std::runtime_error(fmt::format("{}: host '{}': the sim backend takes a host's platform only, not "
                                                     "its '{}' override (make it a platform of the calibration file)",
                                                     o.scenario, h.name, what));
        }
        if (!sc.cables[0].plugged)
            throw std::runtime_error(fmt::format("{}: the sim backend starts with the cable plugged ('plugged: false' "
                                                 "is not applied; unplug it with an event at 0)", o.scenario));
        cfg.profile = sc.hosts[0].platform;
        cfg.profile_b = sc.hosts[1].platform;
        cfg.link = sc.cables[0].cfg;
        cfg.seed = sc.seed;
        cfg.events = sc.events;
        cfg.scenario_name = sc.name;
        if (cal_path.empty()) cal_path = sc.calibration;
        if (!sc.workloads.empty() && note)
            *note = fmt::format("sim: {}: its {} workload(s) are not run here: the programs are the workloads",
                                o.scenario, sc.workloads.size());
    }
    const auto cal = load_calibration(cal_path.empty() ? default_calibration_path() : cal_path);
    std::vector<sim_server_config> links(o.links, cfg);  // one per sim device
    for (std::size_t k = 0; k < links.size(); ++k) {
        auto& c = links[k];
        c.cal = cal;
        c.link_index = unsigned(k);
        c.links = unsigned(links.size());
        c.seed = cfg.seed + k;  // the links' bit errors are independent
    }
    return links;
}

}  // namespace odl::model::linkd
