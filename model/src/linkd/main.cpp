// SPDX-License-Identifier: MIT
// odl-linkd: the model server the QEMU odl-usb4-nhi devices connect to.
#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <utility>

#include "odl/model/linkd/recorder.h"
#include "odl_cli_checks.h"
#include "odl/model/linkd/server.h"
#include "stub_model.h"
#ifdef ODL_LINKD_HAVE_MODEL
#include <systemc>

#include "odl/model/linkd/fault.h"
#include "odl/model/linkd/model_backend_sc.h"
#include "odl/model/linkd/sim_links.h"
#include "odl/model/reduced/pipeline.h"
#include "odl/model/linkd/sim_options.h"
#include "odl/model/linkd/sim_server.h"
#include "odl/model/scenario/scenario.h"
// sc_elab_and_sim() sets the kernel up and calls sc_main(); our own main()
// runs first so SystemC's banner stays off stderr (quiet when healthy), as
// sim_session does for the other model programs.
#define ODL_LINKD_MAIN sc_main
int main(int argc, char** argv) {
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
#else
#define ODL_LINKD_MAIN main
#endif

namespace {
odl::model::linkd::server* g_server = nullptr;
#ifdef ODL_LINKD_HAVE_MODEL
odl::model::linkd::sim_server* g_sim = nullptr;
std::atomic<bool> g_sim_router_stop{false};  ///< --links N: the router's loop
#endif
void on_signal(int) {
    if (g_server) g_server->stop();
#ifdef ODL_LINKD_HAVE_MODEL
    if (g_sim) g_sim->stop();
    g_sim_router_stop.store(true);
#endif
}
void on_signals() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
}

#ifdef ODL_LINKD_HAVE_MODEL
using odl::model::linkd::sim_options;

// --sim: libodl's sim backend instead of QEMU devices (docs/sim.md).
int run_sim(const odl::model::linkd::server_config& srv, const sim_options& o, const std::string& gen,
            unsigned lanes) {
    using timing = decltype(odl::model::linkd::sim_server_config::timing);
    try {
        std::string note;
        std::vector<odl::model::linkd::sim_server_config> links =
            odl::model::linkd::sim_link_configs(o, gen, lanes, &note);
        if (!note.empty()) fmt::print(stderr, "odl-linkd: {}\n", note);
        for (auto& c : links) {
            c.socket_path = srv.socket_path;
            c.control_path = srv.control_path;
            c.verbose = srv.verbose;
        }
        const timing asked = links[0].timing;
        if (links.size() > 1) {
            // Bad input stops here, before any process starts: unknown
            // profiles, impossible cables.
            for (const auto& c : links) {
                try {
                    odl::model::linkd::check(c);
                } catch (const std::exception& e) {
                    throw std::runtime_error(fmt::format("link {}: {}", c.link_index, e.what()));
                }
            }
            // The links differ only in their seeds: one fit says whether
            // the reduced model holds for all of them (and auto picks one
            // timing for all).
            if (asked == timing::pipeline) (void)odl::model::linkd::fit_checked_pipeline(links[0]);
            if (asked == timing::automatic) {
                std::string why;
                const timing t = odl::model::linkd::auto_pipeline(links[0], &why) ? timing::pipeline : timing::event;
                if (t == timing::event)
                    fmt::print(stderr, "odl-linkd: sim: the full model (--sim-timing event): {}\n", why);
                for (auto& c : links) c.timing = t;
            }
            odl::model::linkd::sim_links_config lc;
            lc.socket_path = srv.socket_path;
            lc.control_path = srv.control_path;
            lc.verbose = srv.verbose;
            lc.links = std::move(links);
            on_signals();
            return odl::model::linkd::run_sim_links(std::move(lc), g_sim_router_stop,
                                                    [](odl::model::linkd::sim_server* s) { g_sim = s; });
        }
        odl::model::linkd::sim_server sim(std::move(links[0]));
        std::string err;
        if (!sim.listen(err)) {
            fmt::print(stderr, "odl-linkd: {}\n", err);
            return 1;
        }
        g_sim = &sim;
        on_signals();
        if (sim.rate_mbps(0) == sim.rate_mbps(1))
            fmt::print(stderr, "odl-linkd: serving the sim backend on {} ({}, {} Mb/s each way, wall-clock paced)\n",
                       srv.socket_path, sim.describe(), sim.rate_mbps(0));
        else
            fmt::print(stderr,
                       "odl-linkd: serving the sim backend on {} ({}, {} Mb/s A to B, {} Mb/s B to A, wall-clock "
                       "paced)\n",
                       srv.socket_path, sim.describe(), sim.rate_mbps(0), sim.rate_mbps(1));
        sim.run();
        g_sim = nullptr;
        const auto& st = sim.stats();
        if (srv.verbose)
            fmt::print(stderr, "odl-linkd: sim: frames A->B {} (lost {}), B->A {} (lost {})\n", st.frames_in[0],
                       st.frames_lost[0], st.frames_in[1], st.frames_lost[1]);
        if (srv.verbose) fmt::print(stderr, "odl-linkd: sim: {}\n", sim.profile().summary());
        return 0;
    } catch (const std::exception& e) {
        fmt::print(stderr, "odl-linkd: {}\n", e.what());
        return 1;
    }
}
#endif
}  // namespace


#ifdef ODL_LINKD_HAVE_MODEL
/// --topology for @hosts hosts into host pairs; why not on bad input.
std::optional<std::string> parse_topology(const std::string& t, unsigned hosts,
                                          std::vector<std::pair<unsigned, unsigned>>& out) {
    out.clear();
    if (hosts < 2 || hosts > 4) return fmt::format("the model backend serves 2 to 4 hosts, not {}", hosts);
    if (hosts == 2 && (t == "line" || t == "ring" || t == "star")) {
        out = {{0, 1}};
        return std::nullopt;
    }
    if (t == "line" || t == "ring") {
        for (unsigned i = 0; i + 1 < hosts; ++i) out.emplace_back(i, i + 1);
        if (t == "ring") out.emplace_back(hosts - 1, 0);
        return std::nullopt;
    }
    if (t == "star") {
        for (unsigned i = 1; i < hosts; ++i) out.emplace_back(0, i);
        return std::nullopt;
    }
    // getline drops a trailing empty field: "0-1," read as "0-1".
    if (t.empty() || t.back() == ',') return fmt::format("'{}' ends without a host pair", t);
    std::istringstream in(t);
    std::string pair;
    while (std::getline(in, pair, ',')) {
        unsigned a = 0, b = 0;
        char dash = 0, extra = 0;
        if (std::sscanf(pair.c_str(), "%u%c%u%c", &a, &dash, &b, &extra) != 3 || dash != '-')
            return fmt::format("'{}' is not a host pair like 0-1 (or line, ring, star)", pair);
        out.emplace_back(a, b);
    }
    if (out.empty()) return std::string("no cables");
    odl::model::linkd::sc_backend_config c;
    c.hosts = hosts;
    c.cables = out;
    return odl::model::linkd::sc_backend::check(c);
}
#endif

/// Checks and takes the deterministic mode's options; why not on bad input.
std::optional<std::string> deterministic_options(odl::model::linkd::server_config& cfg, std::uint64_t quantum_ns,
                                                 std::uint64_t max_window_ns, const std::vector<std::string>& events) {
    if (!cfg.deterministic) return std::nullopt;
    // Zero would be a window that never ends a turn: no progress at all.
    if (quantum_ns == 0) return std::string("--quantum-ns 0: the window must be at least 1 ns (a link latency of zero cannot be simulated conservatively)");
    if (quantum_ns > 1000000000 || max_window_ns < quantum_ns || max_window_ns > 1000000000)
        return fmt::format("--quantum-ns {} / --max-window-ns {}: expected 1 <= quantum <= longest window <= 1 s",
                           quantum_ns, max_window_ns);
    cfg.quantum_ps = quantum_ns * 1000;
    cfg.quantum_max_ps = max_window_ns * 1000;
    for (const auto& e : events) {
        const std::size_t colon = e.find(':');
        char* end = nullptr;
        const std::string t = e.substr(0, colon);
        const unsigned long long ns = std::strtoull(t.c_str(), &end, 10);
        if (colon == std::string::npos || t.empty() || *end || t[0] == '-' || ns > 3600ull * 1000000000)
            return fmt::format("--event '{}': expected TIME_NS:EVENT, TIME_NS a whole number of ns up to an hour", e);
        if (const std::string what = e.substr(colon + 1); !odl::model::linkd::known_cable_event(what))
            return fmt::format("--event '{}': unknown event '{}' (plug, unplug, retrain, degrade GEN LANES, ber RATE)",
                               e, odl::model::linkd::cable_event_word(what));
        cfg.timed_events.emplace_back(ns * 1000, "cable " + e.substr(colon + 1));
    }
    return std::nullopt;
}

int ODL_LINKD_MAIN(int argc, char** argv) {
    CLI::App app{"odl-linkd: OdinLink model server for QEMU odl-usb4-nhi devices"};
    odl::model::linkd::server_config cfg;
    unsigned hosts = 2;
#ifdef ODL_LINKD_HAVE_MODEL
    std::string backend = "model";
#else
    std::string backend = "stub";
#endif
    app.add_option("-s,--socket", cfg.socket_path, "unix socket path to listen on")->required();
    app.add_option("-c,--control", cfg.control_path,
                   "unix socket for scenario commands (cable plug|unplug, status)");
    app.add_option("-n,--hosts", hosts, "number of hosts (NHIs) served")->check(CLI::Range(1, 16));
    app.add_option("--backend", backend,
                   "model behind the sockets: 'model' (SystemC NHI, router, cable) or "
                   "'stub' (register-file test double, no rings)")
        ->check(CLI::IsMember({"model", "stub"}));
    std::string gen = "gen3";
    unsigned lanes = 2;
    app.add_option("--gen", gen, "cable generation (model backend)")
        ->check(CLI::IsMember({"tb3", "gen2", "gen3", "gen4"}));
    app.add_option("--lanes", lanes, "lanes per direction (model backend)")->check(CLI::Range(1, 2));
    std::string topology;
    auto* topo_opt = app.add_option("--topology", topology,
                                    "model backend, 3 or 4 hosts: how the cables join them: 'line' (0-1, 1-2, "
                                    "2-3), 'ring' (line plus last-0) or 'star' (0 to each other host), or a list "
                                    "of host pairs '0-1,1-2' (default: ring; 2 hosts: one cable)");
    std::string record;
    app.add_option("--record", record,
                   "write every MMIO, DMA and IRQ at the model seam to this file (for replay tests)");
    std::string windows;
    auto* windows_opt = app.add_option("--windows", windows,
                                       "--deterministic: write one line per turn to this file (the windows granted, "
                                       "where each host stopped, what moved), to find where two runs part");
    bool no_shared_ram = false;
    app.add_flag("--no-shared-ram", no_shared_ram,
                 "refuse guest RAM offered by the devices: every DMA is a message round trip "
                 "(slower; for comparison)");
    std::vector<std::string> faults;
    app.add_option("--fault", faults,
                   "hostile peer (model backend, repeatable): rewrite odl_tb5 LOGINs or damage "
                   "DMA frames or split pairs on the cable; each injection is logged. SPEC: "
                   "login:FIELD=VALUE[,FIELD=VALUE...][,count=N][,skip=M][,every=K][,from=A|B] | "
                   "login_resp:FIELD=VALUE[,...] (same keys) | "
                   "data:MODE[,count=N][,skip=M][,every=K][,seed=S][,value=V][,bits=B]"
                   "[,frames=data|all][,from=A|B] with MODE flip|payload|type|flags|stream|len|"
                   "reserved|seq|msg_len|offset|truncate|drop|duplicate | "
                   "split:MODE[,count=N][,skip=M][,every=K][,value=V][,from=A|B] with MODE "
                   "drop-header|drop-raw|len|raw-pdf (odl_tb5 split pairs) (docs/vm.md). Also at run "
                   "time on --control: 'fault add SPEC', 'fault clear', 'fault status'");
    app.add_flag("-v,--verbose", cfg.verbose, "log connection details");
    // Defaults: server_config's.
    std::uint64_t quantum_ns = cfg.quantum_ps / 1000, max_window_ns = cfg.quantum_max_ps / 1000;
    std::vector<std::string> events;
    app.add_flag("--deterministic", cfg.deterministic,
                 "serve QEMUs run with -icount and odl-usb4-nhi deterministic=on: the hosts take turns in "
                 "windows of simulated time, so the same run gives the same result every time (docs/vm.md)");
    auto* quantum_opt = app.add_option("--quantum-ns", quantum_ns,
                                       "--deterministic: window while anything moves, ns of simulated time "
                                       "(default 1000; no longer than the link's latency)");
    auto* window_max_opt = app.add_option("--max-window-ns", max_window_ns,
                                          "--deterministic: longest window while everything is idle (default 1000000)");
    auto* event_opt = app.add_option("--event", events,
                                     "--deterministic, repeatable: TIME_NS:EVENT, a cable event at that simulated "
                                     "time: [N] plug|unplug|retrain|degrade GEN LANES|ber RATE (cable N, default 0)");
#ifdef ODL_LINKD_HAVE_MODEL
    std::string nhi_impl = "model", rtl_trace, rtl_window;
    auto* impl_opt = app.add_option("--nhi-impl", nhi_impl,
                                    "model backend: the NHIs' interrupt unit: model (C++), rtl (the Verilated "
                                    "SystemVerilog block, model/rtl) or lockstep (both, stopping at the first "
                                    "difference) (docs/rtl.md)")
                         ->check(CLI::IsMember({"model", "rtl", "lockstep"}));
    auto* trace_opt = app.add_option("--rtl-trace", rtl_trace,
                                     "with --nhi-impl rtl|lockstep: waves of the RTL block, FILE-a.fst and "
                                     "FILE-b.fst for the two hosts (GTKWave)");
    auto* window_opt = app.add_option("--rtl-trace-window", rtl_window,
                                      "with --rtl-trace: FROM:TO, microseconds of simulated time (default: all)");
    sim_options sim;
    bool sim_on = false;
    app.add_flag("--sim", sim_on,
                 "serve libodl's sim backend (two program ends on the modelled cable) instead of QEMU "
                 "devices; the cable defaults to gen4 x2 (TB5)");
    const auto h = odl::model::linkd::add_sim_options(app, sim);
    auto* gen_opt = app.get_option("--gen");
#endif
    odl::cli::decimal_integers(app);
    CLI11_PARSE(app, argc, argv);
    if (!cfg.control_path.empty() && cfg.control_path == cfg.socket_path) {
        fmt::print(stderr, "odl-linkd: --socket and --control are the same path '{}': give each its own\n",
                   cfg.socket_path);
        return 2;
    }
#ifdef ODL_LINKD_HAVE_MODEL
    if (sim_on) {
        if (!faults.empty() || !record.empty() || backend != "model") {
            fmt::print(stderr, "odl-linkd: --sim takes neither --fault, --record nor --backend\n");
            return 1;
        }
        if (gen_opt->count() == 0) gen = "gen4";
        if (const auto why = odl::model::linkd::scenario_conflict(sim, h, {gen_opt, app.get_option("--lanes")})) {
            fmt::print(stderr, "odl-linkd: {}\n", *why);
            return 1;
        }
        if (impl_opt->count() > 0 || trace_opt->count() > 0) {
            fmt::print(stderr, "odl-linkd: --nhi-impl and --rtl-trace are for the model backend (not --sim)\n");
            return 1;
        }
        return run_sim(cfg, sim, gen, lanes);
    }
    for (auto* o : {h.profile, h.calibration, h.length, h.scenario, h.spin, h.links, h.lookahead, h.timing})
        if (o->count() > 0) {
            fmt::print(stderr, "odl-linkd: {} needs --sim\n", o->get_name());
            return 1;
        }
    if (h.seed->count() > 0 && !cfg.deterministic) {
        fmt::print(stderr, "odl-linkd: --seed needs --sim or --deterministic\n");
        return 1;
    }
#endif
    if (const auto why = deterministic_options(cfg, quantum_ns, max_window_ns, events)) {
        fmt::print(stderr, "odl-linkd: {}\n", *why);
        return 1;
    }
    for (auto* o : {quantum_opt, window_max_opt, event_opt, windows_opt})
        if (o->count() > 0 && !cfg.deterministic) {
            fmt::print(stderr, "odl-linkd: {} needs --deterministic\n", o->get_name());
            return 1;
        }
    cfg.shared_ram = !no_shared_ram;
#ifdef ODL_LINKD_HAVE_MODEL
    // Each injection is one line on stderr (the testbed's linkd.log).
    odl::model::linkd::fault_injector injector(
        [](const std::string& line) { fmt::print(stderr, "odl-linkd: {}\n", line); });
    for (const auto& f : faults) {
        std::string err;
        auto spec = odl::model::linkd::parse_fault(f, err);
        if (!spec) {
            fmt::print(stderr, "odl-linkd: {}\n", err);
            return 1;
        }
        injector.add(std::move(*spec));
    }
#endif

    std::unique_ptr<odl::model::linkd::model_backend> model;
    std::string unit;  ///< the NHIs' interrupt unit, for the start line
    if (backend == "stub") {
#ifdef ODL_LINKD_HAVE_MODEL
        if (impl_opt->count() > 0 || trace_opt->count() > 0) {
            fmt::print(stderr, "odl-linkd: --nhi-impl and --rtl-trace need the model backend\n");
            return 1;
        }
#endif
        if (!faults.empty()) {
            fmt::print(stderr, "odl-linkd: --fault needs the model backend (it acts on the cable)\n");
            return 1;
        }
        model = std::make_unique<odl::model::linkd::stub_model>(hosts);
    } else {
#ifdef ODL_LINKD_HAVE_MODEL
        odl::model::linkd::sc_backend_config sc;
        sc.hosts = hosts;
        sc.seed = sim.seed;
        if (hosts < 2 || hosts > 4) {  // said as --hosts, not as the --topology nobody gave
            fmt::print(stderr, "odl-linkd: --hosts {}: the model backend serves 2 to 4 hosts\n", hosts);
            return 1;
        }
        if (const auto why = parse_topology(topo_opt->count() ? topology : std::string("ring"), hosts, sc.cables)) {
            fmt::print(stderr, "odl-linkd: --topology {}: {}\n", topology, *why);
            return 1;
        }
        if (hosts > 2 && (!record.empty() || !faults.empty() || sim.asymmetric)) {
            // Recordings, fault specs (from=A|B) and the asymmetric cable's
            // fast end speak of one cable between two hosts.
            fmt::print(stderr, "odl-linkd: --record, --fault and --asymmetric need 2 hosts\n");
            return 1;
        }
        sc.link.gen = gen == "tb3"    ? odl::model::generation::tb3
                      : gen == "gen2" ? odl::model::generation::gen2
                      : gen == "gen3" ? odl::model::generation::gen3
                                      : odl::model::generation::gen4;
        sc.link.lanes = lanes;
        sc.link.asymmetric = sim.asymmetric;  // host 0 (A) transmits on 3 lanes
        sc.irq.impl = *odl::model::parse_irq_impl(nhi_impl);
        if (!rtl_trace.empty()) {
            if (sc.irq.impl == odl::model::irq_impl::model) {
                fmt::print(stderr, "odl-linkd: --rtl-trace needs --nhi-impl rtl or lockstep\n");
                return 1;
            }
            sc.irq.trace_fst = rtl_trace;
        } else if (window_opt->count() > 0) {
            fmt::print(stderr, "odl-linkd: --rtl-trace-window needs --rtl-trace\n");
            return 1;
        }
        if (!rtl_window.empty()) {
            double from_us = 0, to_us = 0;
            char colon = 0, extra = 0;
            if (std::sscanf(rtl_window.c_str(), "%lf%c%lf%c", &from_us, &colon, &to_us, &extra) != 3 || colon != ':' ||
                !(from_us >= 0) || !(to_us > from_us) || to_us > 1.8e13) {
                fmt::print(stderr, "odl-linkd: --rtl-trace-window {}: expected FROM:TO in microseconds, FROM < TO\n",
                           rtl_window);
                return 1;
            }
            sc.irq.trace_from_ps = static_cast<std::uint64_t>(from_us * 1e6);
            sc.irq.trace_to_ps = static_cast<std::uint64_t>(to_us * 1e6);
        }
        if (auto why = odl::model::validate(sc.link)) {
            fmt::print(stderr, "odl-linkd: bad cable: {}\n", *why);
            return 1;
        }
        std::unique_ptr<odl::model::linkd::sc_backend> sc_model;
        try {
            sc_model = std::make_unique<odl::model::linkd::sc_backend>(sc);
        } catch (const std::exception& e) {
            fmt::print(stderr, "odl-linkd: {}\n", e.what());
            return 1;
        }
        unit = odl::model::to_string(sc.irq.impl);
        // The cable gets the tap only while a spec is armed: no faults, no
        // per-frame cost. The control socket may arm or clear them later.
        auto retap = [&injector, m = sc_model.get()] {
            if (injector.armed())
                m->set_tap([&injector](int from, odl::model::frame& f) {
                    return injector.apply(from, f);
                });
            else
                m->set_tap({});
        };
        retap();
        cfg.fault_command = [&injector, retap](const std::string& cmd) {
            std::string reply = injector.command(cmd);
            retap();
            return reply;
        };
        model = std::move(sc_model);
#else
        fmt::print(stderr, "odl-linkd: built without the SystemC model\n");
        return 1;
#endif
    }
    std::ofstream record_out;
    std::unique_ptr<odl::model::linkd::recording_backend> recorder;
    if (!record.empty()) {
        record_out.open(record);
        if (!record_out) {
            fmt::print(stderr, "odl-linkd: cannot write {}\n", record);
            return 1;
        }
        recorder = std::make_unique<odl::model::linkd::recording_backend>(*model, record_out);
    }
    std::ofstream windows_out;
    if (!windows.empty()) {
        windows_out.open(windows);
        if (!windows_out) {
            fmt::print(stderr, "odl-linkd: cannot write {}\n", windows);
            return 1;
        }
        cfg.windows = &windows_out;
    }
    odl::model::linkd::server srv(cfg, recorder ? static_cast<odl::model::linkd::model_backend&>(*recorder)
                                                : *model);
    std::string err;
    if (!srv.listen(err)) {
        fmt::print(stderr, "odl-linkd: {}\n", err);
        return 1;
    }
    g_server = &srv;
    on_signals();
    fmt::print(stderr, "odl-linkd: serving {} hosts on {} (backend {}, {} {} x{}{}, {})\n",
               hosts, cfg.socket_path, backend, model->cable_count() > 1 ? fmt::format("{} cables", model->cable_count()) : "cable", gen, lanes,
               unit.empty() || unit == "model" ? std::string() : ", interrupt unit " + unit,
               cfg.deterministic ? "deterministic" : "free-running");
    try {
        srv.run();
    } catch (const std::exception& e) {
        // --nhi-impl lockstep: the RTL block and its twin differed (the
        // report names the operation); anything else the model threw.
        fmt::print(stderr, "odl-linkd: {}\n", e.what());
        return 3;
    }
    fmt::print(stderr, "odl-linkd: stopped\n");
    return 0;
}
