// SPDX-License-Identifier: MIT
// `odl run <scenario> --on vm`: the scenario replayed in the two-VM testbed.
//
// The testbed (qemu-device/testbed.sh) has exactly two TCG guests on one
// modelled cable, so: two hosts, one cable, tb3/gen2/gen3/gen4 with 1 or 2
// lanes, or Gen4 asymmetric (3 lanes from the first host, 1 back). Cable
// events (plug, unplug, retrain, degrade, ber) are sent to odl-linkd's
// control socket at their scenario times scaled to wall time
// (--vm-time-scale, default 1 ms simulated = 1 s); host-reset powers that VM
// off and on (testbed.sh reset); a host's completion mode and throttle become
// odl_tb5 module parameters, its platform is "not applied on vm". Workloads
// run one after another in start order: pingpong and stream
// through `odl perf --backend kernel` (odl_tb5.ko in the guests) or through
// ping / iperf3 over thunderbolt0 (thunderbolt_net). Assertions whose metric
// the VM path cannot measure are "not evaluated". The testbed is always torn
// down, also on errors and on Ctrl-C.
#include "run_vm.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "odl/model/scenario/scenario.h"
#include "pair_run.h"

namespace odl::cli {
namespace {

namespace m = odl::model;
using clk = std::chrono::steady_clock;
using pair::check_interrupt;
using pair::event_name;
using pair::gen_arg;
using pair::interrupted;
using pair::last_line;
using pair::progress;
using pair::report;
using pair::sh;
using pair::sh_result;
using pair::sq;
using pair::target_error;
using pair::env_or;
using pair::gen_arg;
using pair::refuse;

/// What a guest's odl_tb5 is told of its scenario host (module parameters).
struct module_settings {
    std::optional<bool> poll;
    std::optional<unsigned> throttle_us;
    std::string args() const {
        return (poll ? fmt::format(" poll={}", *poll ? 1 : 0) : "") +
               (throttle_us ? fmt::format(" irq_throttle_us={}", *throttle_us) : "");
    }
};

/// Where the guest extras put the NCCL plugin and odl-plugin-collective
/// (beside each other: the program loads the plugin from its own folder).
constexpr const char* k_guest_plugin = "/usr/lib/odl/libnccl-net-odl.so";
constexpr const char* k_guest_collective = "/usr/lib/odl/odl-plugin-collective";

class testbed : public pair::target {
public:
    testbed(std::string script, unsigned hosts, unsigned cables)
        : script_(std::move(script)), hosts_(hosts), cables_(cables), settings_(hosts) {}
    ~testbed() override { down(); }
    unsigned host_count() const override { return hosts_; }
    /// @topology: odl-linkd's host pairs ("0-1,1-2,...") for more than two hosts.
    /// @seed >= 0: a deterministic run with that seed.
    void up(const std::string& kernel, const std::string& gen, unsigned lanes, bool asymmetric,
            const std::string& topology, long long seed) {
        up_ = true;  // a half-started testbed is torn down as well
        deterministic_ = seed >= 0;
        const std::string many = hosts_ > 2 ? fmt::format(" --hosts {} --topology {}", hosts_, topology) : "";
        const std::string det = deterministic_ ? fmt::format(" --deterministic --seed {}", seed) : "";
        // A deterministic boot runs about four times slower than a free one.
        const unsigned timeout = (hosts_ > 2 ? 360 : 240) * (deterministic_ ? 3 : 1);
        // This process owns the testbed: should it be killed before its
        // destructor runs, the testbed's watchdog takes the guests down.
        const auto r = sh(fmt::format("ODL_TESTBED_OWNER={} {} up --kernel {} --gen {} --lanes {}{}{}{} --timeout {} >&2",
                                      getpid(), sq(script_), kernel, gen, lanes, asymmetric ? " --asymmetric" : "",
                                      many, det, timeout),
                          false);
        check_interrupt();
        if (r.rc != 0) throw target_error(fmt::format("testbed up failed (status {})", r.rc));
    }
    std::string name(unsigned host) const override { return std::string(1, char('A' + host)); }
    sh_result exec(unsigned host, const std::string& cmd, int timeout_s) override {
        check_interrupt();
        auto r = sh(fmt::format("ODL_VM_EXEC_TIMEOUT={} {} exec {} {}", timeout_s, sq(script_), name(host), sq(cmd)));
        check_interrupt();
        return r;
    }
    int device(unsigned) const override { return 0; }
    bool plugin_collectives() const override { return true; }
    /// odl-linkd's counters of every cable ("cable N stats"), one query each.
    std::optional<cable_counts> modelled_cables() override {
        cable_counts sum;
        for (unsigned i = 0; i < cables_; ++i) {
            const auto r = sh(fmt::format("{} ctl {}", sq(script_), sq(fmt::format("cable {} stats", i))));
            std::istringstream in(r.out);
            std::string ok;
            if (r.rc != 0 || !(in >> ok) || ok != "ok") return std::nullopt;
            bool damaged = false, noticed = false;
            for (std::string k, v; in >> k >> v;) {
                if (k == "frames_damaged") {
                    sum.frames_damaged += std::strtoull(v.c_str(), nullptr, 10);
                    damaged = true;
                } else if (k == "link_down_noticed_us") {
                    std::istringstream list(v);
                    for (std::string x; std::getline(list, x, ',');)
                        if (x != "-") sum.link_down_noticed_us.push_back(std::strtod(x.c_str(), nullptr));
                    noticed = true;
                }
            }
            if (!damaged || !noticed) return std::nullopt;
        }
        return sum;
    }
    std::string plugin_collective_program() const override { return k_guest_collective; }
    void set_module_settings(const std::vector<module_settings>& m) { settings_ = m; }
    void load_driver() override {
        driver_loaded_ = true;
        for (unsigned h = 0; h < hosts_; ++h) insmod(h);
    }
    std::string link_seen() override {
        const auto sp = exec(0, "cd /sys/bus/thunderbolt/devices/0-1 && echo \"$(cat tx_speed) per lane x $(cat tx_lanes) lanes\"", 60);
        return sp.rc == 0 ? last_line(sp.out) : "";
    }
    bool can_cable() const override { return true; }
    std::string no_cable_reason() const override { return ""; }
    void cable(unsigned index, const std::string& action) override {
        check_interrupt();
        const std::string which = index ? fmt::format("{} ", index) : "";
        const auto r = sh(fmt::format("{} cable {}{}", sq(script_), which, action));
        if (r.rc != 0) throw target_error("cable " + which + action + " failed: " + r.out);
    }
    /// Inserts odl_tb5 with the host's settings and reads them back from
    /// sysfs (a bool parameter reads Y or N).
    void insmod(unsigned h) {
        const module_settings& m = settings_.at(h);
        const auto r = exec(h, "insmod /lib/modules/odl_tb5.ko" + m.args(), 60);
        if (r.rc != 0) throw target_error(fmt::format("insmod odl_tb5 in VM {}: {}", name(h), r.out));
        const auto check = [&](const char* p, const std::string& want) {
            const auto c = exec(h, std::string("cat /sys/module/odl_tb5/parameters/") + p, 30);
            if (c.rc != 0 || last_line(c.out) != want)
                throw target_error(fmt::format("odl_tb5 in VM {}: {} reads {}, not {}", name(h), p, last_line(c.out), want));
        };
        if (m.poll) check("poll", *m.poll ? "Y" : "N");
        if (m.throttle_us) check("irq_throttle_us", std::to_string(*m.throttle_us));
    }
    std::string reset_means() const override {
        return driver_loaded_ ? "a power cycle of the VM, odl_tb5 loaded again" : "a power cycle of the VM";
    }
    void reset(unsigned host, double off_s) override {
        check_interrupt();
        const auto r = sh(fmt::format("{} reset {} --off {:.3f} >&2", sq(script_), name(host), off_s), false);
        check_interrupt();
        if (r.rc != 0) throw target_error(fmt::format("reset of VM {} failed (status {})", name(host), r.rc));
        kernel_log_restarted(host);
        if (driver_loaded_) insmod(host);
    }
    bool can_link_events() const override { return true; }
    void link_event(const m::scenario_event& e) override {
        check_interrupt();
        std::string spec;
        switch (e.kind) {
        case m::event_kind::retrain: spec = "retrain"; break;
        case m::event_kind::degrade: spec = fmt::format("degrade {} {}", gen_arg(e.gen), e.lanes); break;
        case m::event_kind::ber: spec = fmt::format("ber {:g}", e.ber); break;
        default: throw target_error("not a link event: " + event_name(e.kind));
        }
        if (e.cable) spec = fmt::format("{} {}", e.cable, spec);
        const auto r = sh(fmt::format("{} ctl {}", sq(script_), sq("cable " + spec)));
        if (r.rc != 0) throw target_error(fmt::format("cable {} failed: {}", spec, last_line(r.out)));
    }
    std::string no_event_reason() const override { return "not an event the testbed applies"; }
    // A deterministic run's clock is odl-linkd's model time, which moves
    // only while a request runs: a pause is an advance, and ber events are
    // handed to odl-linkd ahead, each at its model time.
    double clock_s() override {
        if (!deterministic_) return target::clock_s();
        const auto r = sh(fmt::format("{} ctl time", sq(script_)));
        std::istringstream in(r.out);
        std::string ok;
        double ns = -1;
        if (r.rc != 0 || !(in >> ok >> ns) || ok != "ok" || ns < 0)
            throw target_error("odl-linkd's time: " + last_line(r.out));
        return ns / 1e9;
    }
    void pause(double s) override {
        if (!deterministic_) return target::pause(s);
        const auto ns = static_cast<unsigned long long>(s * 1e9);
        if (ns == 0) return;
        check_interrupt();
        // The wall bound: a simulated second costs a few wall ones here.
        const auto r = sh(fmt::format("ODL_CTL_TIMEOUT={:.0f} {} ctl 'advance {}'", 120 + 30 * s, sq(script_), ns));
        check_interrupt();
        if (r.rc != 0) throw target_error("odl-linkd's advance: " + last_line(r.out));
    }
    std::string clock_name() const override { return deterministic_ ? "simulated" : "wall"; }
    bool schedule_link_event(const m::scenario_event& e, double at_s) override {
        if (!deterministic_ || e.kind != m::event_kind::ber) return false;
        if (at_s <= clock_s()) {  // due now: the run stands, so this is its time
            link_event(e);
            return true;
        }
        const std::string spec = fmt::format("at {} cable {} ber {:g}", static_cast<unsigned long long>(at_s * 1e9),
                                             e.cable, e.ber);
        const auto r = sh(fmt::format("{} ctl {}", sq(script_), sq(spec)));
        if (r.rc != 0) throw target_error(fmt::format("{} failed: {}", spec, last_line(r.out)));
        return true;
    }
    std::string run_tag() const override { return deterministic_ ? "det" : target::run_tag(); }
    bool can_reset() const override { return !deterministic_; }
    void down() {
        if (!up_) return;
        up_ = false;
        progress("tearing the testbed down");
        sh(fmt::format("{} down >&2", sq(script_)), false);
    }

private:
    std::string script_;
    unsigned hosts_;
    unsigned cables_;
    bool up_ = false;
    bool deterministic_ = false;
    bool driver_loaded_ = false;  ///< odl_tb5 inserted: again after a reset
    std::vector<module_settings> settings_;
};

/// Why @s cannot run on three or four VMs ("" when it can): odl-linkd gives
/// every cable one generation and width, and no cable is asymmetric.
std::string many_shape_error(const m::scenario& s) {
    if (s.hosts.size() > pair::target::max_hosts)
        return fmt::format("{} has {} hosts; the testbed boots at most {} VMs. Replay it with --on model.", s.name,
                           s.hosts.size(), pair::target::max_hosts);
    const auto& c0 = s.cables[0].cfg;
    for (std::size_t i = 0; i < s.cables.size(); ++i) {
        const auto& c = s.cables[i].cfg;
        if (c.asymmetric) return fmt::format("cable {}: an asymmetric cable needs a scenario of two hosts", i);
        if (c.gen != c0.gen || c.lanes != c0.lanes)
            return fmt::format("cable {} is {} x{}, cable 0 {} x{}: odl-linkd models every cable of a testbed alike", i,
                               gen_arg(c.gen), c.lanes, gen_arg(c0.gen), c0.lanes);
    }
    // (A workload's two hosts share a cable: the scenario's own check.)
    return "";
}

}  // namespace

int run_on_vm(const vm_run_opts& o) {
    m::scenario s;
    try {
        s = m::load_scenario(o.file);
    } catch (const std::exception& e) {
        fmt::print(stderr, "odl: run: {}\n", e.what());
        return 2;
    }
    if (o.driver != "odl_tb5" && o.driver != "tbnet") refuse("vm", "--vm-driver must be odl_tb5 or tbnet");
    if (o.kernel != "6.12" && o.kernel != "6.1") refuse("vm", "--vm-kernel must be 6.12 or 6.1");
    if (!(o.time_scale >= 0)) refuse("vm", "--vm-time-scale must be >= 0");
    // What the testbed can emulate: two guests and one cable, or up to four
    // guests whose cables are alike.
    const bool many = s.hosts.size() > 2;
    if (const std::string why = many ? many_shape_error(s)
                                     : pair::pair_shape_error(s, "the testbed joins two VMs (A, B) with one");
        !why.empty())
        refuse("vm", why);
    const auto& c = s.cables[0];
    // fast_end 0 is the cable's first host (host_a).
    if (c.cfg.asymmetric && (c.cfg.fast_end == 0 ? c.host_a : c.host_b) != 0)
        refuse("vm", "the testbed's asymmetric cable transmits on 3 lanes from A (the scenario's first host); "
                     "list the host on the fast end first");
    if (!c.cfg.asymmetric && (c.cfg.lanes < 1 || c.cfg.lanes > 2))
        refuse("vm", fmt::format("{} lanes: the testbed does 1 or 2", c.cfg.lanes));
    if (o.deterministic)
        for (const auto& e : s.events)
            if (e.kind == m::event_kind::host_reset)
                refuse("vm", fmt::format("host-reset at {:g} ms: not in a deterministic run (a restarted VM's clock "
                                         "would start again at 0); run it without --deterministic",
                                         e.at.to_seconds() * 1e3));
    if (o.deterministic && (o.seed < -1 || o.seed > 999999999999999999LL))
        refuse("vm", "--seed must be a whole number below 10^18");
    if (c.cfg.gen == m::generation::gen4 && o.kernel == "6.1")
        refuse("vm", "a tb5/Gen4 cable needs --vm-kernel 6.12: Linux 6.1 does not decode Gen4 and reports 10 Gb/s");

    // Collectives run as odl-plugin-collective ranks around the workload's
    // hosts (the parser has checked that neighbours share a cable).
    const bool collectives = std::any_of(s.workloads.begin(), s.workloads.end(),
                                         [](const m::scenario_workload& w) { return m::is_collective(w.kind); });
    const std::string src = env_or("ODL_SOURCE_DIR", ODL_SOURCE_DIR_DEFAULT);
    const std::string build = env_or("ODL_BUILD_DIR", ODL_BINARY_DIR_DEFAULT);
    // The plugin and its collective program go into the guests with odl_tb5.
    std::string plugin_extras;
    if (collectives && o.driver == "odl_tb5") {
        for (const auto& [file, guest] : {std::pair<std::string, const char*>{build + "/lib/libnccl-net-odl.so", k_guest_plugin},
                                          {build + "/lib/odl-plugin-collective", k_guest_collective}}) {
            if (!std::filesystem::exists(file))
                refuse("vm", fmt::format("the scenario's collectives need {} (build the plugin: cmake --build {})", file, build));
            plugin_extras += " " + sq(file + ":" + guest);
        }
    }
    const std::string out = o.out.empty() ? build + "/runs/" + s.name + "-vm" : o.out;
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) refuse("vm", fmt::format("cannot create {}: {}", out, ec.message()));
    const std::string outd = std::filesystem::absolute(out).string();
    if (!std::getenv("ODL_VM_DIR")) setenv("ODL_VM_DIR", (outd + "/vm").c_str(), 1);
    if (!std::getenv("ODL_LINKD")) setenv("ODL_LINKD", (build + "/model/src/linkd/odl-linkd").c_str(), 1);
    // The interrupt unit (C++, RTL or both): odl-linkd runs one kind for both hosts.
    {
        std::string impl = o.nhi_impl;
        if (impl.empty()) {
            for (const auto& h : s.hosts)
                if (h.nhi != s.hosts[0].nhi)
                    refuse("vm", "odl-linkd runs one kind of interrupt unit for all hosts: give every host the same 'nhi:'");
            impl = m::to_string(s.hosts[0].nhi);
        }
        if (impl != "model") {
            const char* prev = std::getenv("ODL_LINKD_ARGS");
            const std::string args = (prev && *prev ? std::string(prev) + " " : std::string()) + "--nhi-impl " + impl;
            setenv("ODL_LINKD_ARGS", args.c_str(), 1);
        }
    }

    report rep;
    rep.on = "vm";
    rep.scenario = s.name;
    rep.file = o.file;
    rep.kernel = o.kernel;
    rep.driver = o.driver == "tbnet" ? "thunderbolt_net (ping, iperf3)" : "odl_tb5 (odl perf --backend kernel)";
    std::string topology;
    for (const auto& k : s.cables) topology += fmt::format("{}{}-{}", topology.empty() ? "" : ",", k.host_a, k.host_b);
    rep.cable = c.cfg.asymmetric ? std::string("gen4 asymmetric (3 lanes A->B, 1 back)")
                                 : fmt::format("{} x{}", gen_arg(c.cfg.gen), c.cfg.lanes);
    if (many) rep.cable = fmt::format("{} cables {} ({})", s.cables.size(), rep.cable, topology);
    rep.time_scale = o.time_scale;
    if (o.deterministic)
        rep.applied.push_back(fmt::format("deterministic: seed {}; times on the guests' simulated clock",
                                          o.seed >= 0 ? o.seed : static_cast<long long>(s.seed)));
    std::vector<module_settings> settings(s.hosts.size());
    const bool kmod = o.driver == "odl_tb5";
    for (unsigned i = 0; i < s.hosts.size(); ++i) {
        const auto& h = s.hosts[i];
        // What the guest's odl_tb5 can be told: its Rx mode and its rings'
        // interrupt throttle (module parameters poll, irq_throttle_us).
        std::string what, left;
        if (h.interrupts) {
            (kmod ? what : left) += *h.interrupts ? ", completion interrupt" : ", completion poll";
            if (kmod) settings[i].poll = !*h.interrupts;
        }
        if (h.throttle) {
            const unsigned us = (*h.throttle * 256 + 500) / 1000;  // 256 ns steps to whole µs
            if (kmod && us <= 1000) {
                what += fmt::format(", throttle {} us", us);
                settings[i].throttle_us = us;
            } else {
                left += fmt::format(", throttle {} us{}", us, us > 1000 ? " (odl_tb5 takes at most 1000)" : "");
            }
        }
        if (!what.empty())
            rep.applied.push_back(
                fmt::format("host {}: {} (odl_tb5 module parameters:{})", h.name, what.substr(2), settings[i].args()));
        rep.not_applied.push_back(fmt::format("host {}: platform {}{} (the guests are Linux on TCG)", h.name,
                                              h.platform.empty() ? "default" : h.platform, left));
    }
    rep.not_applied.push_back(fmt::format("cable length {:g} m (odl-linkd models its default)", c.cfg.length_m));
    rep.not_applied.push_back("workloads run one after another, never concurrently");
    pair::add_workloads(s, rep);
    pair::set_where("vm");
    pair::signal_guard signals;

    progress(fmt::format("{}: {} hosts, cable {}, {} events, {} workloads, {} assertions; Linux {}, {}", s.name,
                         s.hosts.size(), rep.cable, s.events.size(), s.workloads.size(), s.assertions.size(),
                         o.kernel, rep.driver));
    const auto t0 = clk::now();
    int rc = 0;
    {
        testbed tb(src + "/qemu-device/testbed.sh", unsigned(s.hosts.size()), unsigned(s.cables.size()));
        try {
            if (o.driver == "odl_tb5") {
                progress("building odl_tb5.ko and the guest extras (kmod/guest-extra.sh)");
                const std::string extra = std::string(std::getenv("ODL_VM_DIR")) + ".extra";
                const auto r = sh(fmt::format("{} {} {} {}{}", sq(src + "/kmod/guest-extra.sh"), o.kernel, sq(extra),
                                              sq(build), plugin_extras));
                check_interrupt();
                if (r.rc != 0)
                    throw target_error("kmod/guest-extra.sh failed (odl_tb5 needs the kernel headers; "
                                        "--vm-driver tbnet runs without it): " + last_line(r.out));
                setenv("ODL_GUEST_EXTRA", extra.c_str(), 1);
            }
            tb.set_module_settings(settings);
            progress(fmt::format("starting the testbed (odl-linkd + {} QEMUs)", s.hosts.size()));
            tb.up(o.kernel, gen_arg(c.cfg.gen), c.cfg.asymmetric ? 2 : c.cfg.lanes, c.cfg.asymmetric, topology,
                  o.deterministic ? (o.seed >= 0 ? o.seed : static_cast<long long>(s.seed)) : -1);
            pair::replay(o, s, tb, rep);
        } catch (const interrupted&) {
            rep.error = "interrupted";
            rc = 130;
        } catch (const std::exception& e) {
            rep.error = e.what();
            rc = 3;
        }
        tb.down();
    }
    rep.wall_s = std::chrono::duration<double>(clk::now() - t0).count();
    pair::fill_unevaluated(s, rep);
    progress(fmt::format("{:.1f} s wall; writing {}/report.json, report.txt, junit.xml (guest logs in {})",
                         rep.wall_s, outd, std::getenv("ODL_VM_DIR")));
    pair::write_report(rep, outd, o.json);
    if (rc) return rc;
    return rep.passed() ? 0 : 1;
}

}  // namespace odl::cli
