// SPDX-License-Identifier: MIT
// `odl run <scenario> --on <inventory.yaml>` (also `odl hil run`): the
// scenario replayed on a HIL pair over SSH with the real stack, as the
// testbed replays it (pair_run.h): odl perf with odl_tb5 between the hosts,
// host-reset as a module reload, cable events only through the inventory's
// cable_command (otherwise skipped and reported), ber/degrade/retrain not
// applied. The results folder describes itself: the report (JSON, text,
// JUnit XML) with each host's OS, kernel, build, module and IOMMU mode, and
// per host the link and module counters before and after and the kernel
// log written during the run.
#include "run_hosts.h"

#include "results_dir.h"

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "odl/hil/facts.h"
#include "odl/hil/inventory.h"
#include "odl/hil/process.h"
#include "odl/hil/ssh.h"
#include "odl/model/scenario/scenario.h"
#include "pair_run.h"

namespace odl::cli {
namespace {

namespace m = odl::model;
namespace fs = std::filesystem;
using clk = std::chrono::steady_clock;
using nlohmann::json;
using pair::check_interrupt;
using pair::last_line;
using pair::progress;
using pair::sh_result;
using pair::target_error;
using pair::refuse;

class hosts_target : public pair::target {
public:
    hosts_target(const hil::pair& p, const std::string& sockets, bool plugin_collectives)
        : pair_(p), a_(p.a, sockets), b_(p.b, sockets), plugin_collectives_(plugin_collectives) {}

    void connect() {
        for (auto* s : {&a_, &b_}) {
            check_interrupt();
            if (const std::string why = s->connect(); !why.empty())
                throw target_error(fmt::format("host {}: not reachable over SSH: {}", s->label(), why));
        }
    }
    std::string name(unsigned host) const override { return session(host).label(); }
    sh_result exec(unsigned host, const std::string& cmd, int timeout_s) override {
        check_interrupt();
        const auto& s = session(host);
        const hil::process_result r = s.run(cmd, timeout_s);
        check_interrupt();
        // A vanished host ends the run, naming it; a failing command is
        // the caller's to judge.
        if (const std::string why = hil::ssh_failure_reason(r); !why.empty())
            throw target_error(fmt::format("host {}: {}", s.label(), why));
        return {r.timed_out ? 124 : r.status, r.out + r.err};
    }
    int device(unsigned host) const override { return session(host).target().device; }
    void load_driver() override {
        for (unsigned h = 0; h < 2; ++h) {
            const auto r = exec(h, sudo(h) + "modprobe odl_tb5", 60);
            if (r.rc != 0)
                throw target_error(fmt::format("modprobe odl_tb5 on host {}: {} (deployed? `odl hil deploy`)", name(h),
                                               last_line(r.out)));
        }
    }
    std::string link_seen() override {
        const auto r = exec(0, "odl link --json", 60);
        try {
            const json j = json::parse(r.out.substr(r.out.find('{')));
            for (const auto& p : j.at("peers")) {
                const auto& tx = p.at("tx");
                return fmt::format("{} x{} ({} Gb/s)", tx.value("generation", "?"), tx.value("lanes", 0),
                                   tx.value("gbps", 0));
            }
        } catch (const std::exception&) {
        }
        return "";
    }
    bool can_cable() const override { return !pair_.cable_command.empty(); }
    std::string no_cable_reason() const override {
        return "the inventory names no cable_command (a controllable switch) for this pair";
    }
    void cable(unsigned /*index*/, const std::string& action) override {  // a pair: one cable
        check_interrupt();
        const auto r = hil::run_process({"sh", "-c", pair_.cable_command + " " + hil::shell_quote(action)}, 120);
        if (r.status != 0)
            throw target_error(fmt::format("cable_command {} failed (exit {}): {}", action, r.status,
                                           last_line(r.out + r.err)));
    }
    bool can_reset() const override { return true; }
    void reset(unsigned host, double off_s) override {
        const auto r = exec(host, fmt::format("{0}rmmod odl_tb5 && sleep {1:.3f} && {0}modprobe odl_tb5", sudo(host), off_s),
                            120 + static_cast<int>(off_s));
        if (r.rc != 0) throw target_error(fmt::format("reloading odl_tb5 on host {}: {}", name(host), last_line(r.out)));
    }
    std::string no_event_reason() const override {
        return "real hosts: the link's error rate, width and training are the hardware's, not ours to set";
    }
    std::string rendezvous_address() const override { return pair_.a.address; }
    bool plugin_collectives() const override { return plugin_collectives_; }
    /// The odl-nccl-plugin package's, in the host's library folder.
    std::string plugin_collective_program() const override { return "/usr/lib/*/odl/odl-plugin-collective"; }

    /// The host's self-description for the results: OS, kernel, build,
    /// module, IOMMU mode (the facts `odl hil check` reads).
    json describe(unsigned host) {
        check_interrupt();
        const auto& s = session(host);
        hil::host_facts f;
        hil::read_facts(s, 60, &f);
        if (f.reach.empty()) hil::run_doctor(s, pair_.expect, 120, &f);
        if (!f.reach.empty()) throw target_error(fmt::format("host {}: {}", s.label(), f.reach));
        return {{"target", s.label()},
                {"os", f.os},
                {"kernel", f.kernel},
                {"secure_boot", f.secure_boot},
                {"odl", f.odl_build},
                {"odl_tb5", f.module_version + " " + f.module_src},
                {"iommu", f.iommu.empty() ? "unknown (odl doctor gave no IOMMU line)" : f.iommu}};
    }
    std::string sudo(unsigned host) const { return hil::privileged(session(host).target()); }

private:
    const hil::ssh_session& session(unsigned host) const { return host == 0 ? a_ : b_; }

    const hil::pair& pair_;
    hil::ssh_session a_, b_;
    bool plugin_collectives_;
};

/// Now, UTC: 20261125-120000 for folder names, ISO 8601 for reports.
std::string timestamp(bool iso = false) {
    const std::time_t t = std::time(nullptr);
    char buf[32];
    if (iso)
        std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
    else
        std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::gmtime(&t));
    return buf;
}

}  // namespace

int run_on_hosts(const hosts_run_opts& o) {
    m::scenario s;
    hil::inventory inv;
    try {
        s = m::load_scenario(o.file);
        inv = hil::load_inventory(o.inventory);
    } catch (const std::exception& e) {
        fmt::print(stderr, "odl: run: {}\n", e.what());
        return 2;
    }
    const hil::pair* p = nullptr;
    try {
        p = &inv.select(o.pair);
    } catch (const std::exception& e) {
        refuse("hosts", e.what());
    }
    if (const std::string why = pair::pair_shape_error(s, "a HIL pair has two"); !why.empty()) refuse("hosts", why);

    const std::string build = results_base();
    // Named after the hardware: profile, then pair, then scenario and time.
    const std::string out = o.out.empty()
                                ? fmt::format("{}/runs/hil/{}/{}/{}-{}", build, p->profile, p->name, s.name, timestamp())
                                : o.out;
    std::error_code ec;
    fs::create_directories(out, ec);
    if (ec) refuse("hosts", fmt::format("cannot create {}: {}", out, ec.message()));
    const std::string outd = fs::absolute(out).string();

    pair::report rep;
    rep.on = "hosts " + p->name;
    rep.scenario = s.name;
    rep.file = o.file;
    rep.driver = "odl_tb5 (odl perf --backend kernel)";
    rep.cable = fmt::format("{} x{} (scenario); {} expected (inventory)", pair::gen_arg(s.cables[0].cfg.gen),
                            s.cables[0].cfg.lanes, p->expect);
    rep.time_scale = o.settings.time_scale;
    for (const auto& h : s.hosts)
        rep.not_applied.push_back(fmt::format("host {}: platform {} (the hardware is what it is)", h.name,
                                              h.platform.empty() ? "default" : h.platform));
    rep.not_applied.push_back("workloads run one after another, never concurrently");
    pair::add_workloads(s, rep);
    pair::set_where("hosts");
    pair::signal_guard signals;

    progress(fmt::format("{} on pair {} ({}): {} events, {} workloads, {} assertions; results in {}", s.name, p->name,
                         p->profile, s.events.size(), s.workloads.size(), s.assertions.size(), outd));
    const auto t0 = clk::now();
    int rc = 0;
    json hosts = json::object();
    hosts["inventory"] = fs::absolute(o.inventory).string();
    hosts["pair"] = p->name;
    hosts["profile"] = p->profile;
    hosts["expect"] = p->expect;
    hosts["measured_at"] = timestamp(true);  // calibrations name it
    {
        hil::control_dir sockets;
        hosts_target tb(*p, sockets.path(), o.settings.collectives == "plugin");
        const auto put = [&](const std::string& name, const std::string& body) {
            std::ofstream f(outd + "/" + name, std::ios::binary);
            f << body;
        };
        try {
            tb.connect();
            for (unsigned h = 0; h < 2; ++h) {
                const std::string role = h == 0 ? "a" : "b";
                hosts[role] = tb.describe(h);
                put(role + ".link-before.json", tb.exec(h, "odl link --json", 60).out);
            }
            rep.kernel = hosts["a"].value("kernel", "?");
            pair::replay(o.settings, s, tb, rep);
            for (unsigned h = 0; h < 2; ++h) {
                const std::string role = h == 0 ? "a" : "b";
                put(role + ".link-after.json", tb.exec(h, "odl link --json", 60).out);
                put(role + ".kernel-log.txt", tb.kernel_log_since_mark(h));
            }
        } catch (const pair::interrupted&) {
            rep.error = "interrupted";
            rc = 130;
        } catch (const std::exception& e) {
            rep.error = e.what();
            rc = 3;
        }
        // Nothing of ours is left on the hosts: the perf servers end with
        // their clients (bounded by --connect-timeout), the SSH masters here.
    }
    if (!rep.error.empty()) progress("run ended: " + rep.error);
    rep.extra = hosts;
    rep.wall_s = std::chrono::duration<double>(clk::now() - t0).count();
    pair::fill_unevaluated(s, rep);
    progress(fmt::format("{:.1f} s wall; writing {}/report.json, report.txt, junit.xml", rep.wall_s, outd));
    pair::write_report(rep, outd, o.json, o.print_report);
    if (rc) return rc;
    return rep.passed() ? 0 : 1;
}

}  // namespace odl::cli
