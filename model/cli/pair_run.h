// SPDX-License-Identifier: MIT
// What `odl run --on vm` and `odl run --on <inventory>` share: the report,
// the target a run drives (the testbed's two guests, or a HIL pair over
// SSH), and the runner that replays a scenario's timeline on it.
#pragma once

#include <csignal>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "odl/model/scenario/scenario.h"
#include "run_vm.h"

namespace odl::cli::pair {

namespace m = odl::model;
using nlohmann::json;

struct interrupted : std::runtime_error {
    interrupted() : std::runtime_error("interrupted") {}
};
/// The target failed (testbed down, host unreachable): ends the run.
struct target_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Throws interrupted once SIGINT, SIGTERM or SIGHUP arrived (signal_guard).
void check_interrupt();
/// Catches SIGINT, SIGTERM and SIGHUP for its lifetime (check_interrupt).
class signal_guard {
public:
    signal_guard();
    ~signal_guard();
    signal_guard(const signal_guard&) = delete;
    signal_guard& operator=(const signal_guard&) = delete;

private:
    struct sigaction old_int_ {}, old_term_ {}, old_hup_ {};
};

/// "odl: run: <where>: <s>" on stderr; set_where() names the target kind.
void set_where(const std::string& where);
void progress(const std::string& s);

std::string env_or(const char* name, const std::string& fallback);
/// 's' quoted for /bin/sh.
std::string sq(const std::string& s);

struct sh_result {
    int rc = -1;
    std::string out;
};
/// Runs @cmd with /bin/sh, stdout (and stderr if @merge) captured.
sh_result sh(const std::string& cmd, bool merge = true);

const char* gen_arg(m::generation g);
std::string event_name(m::event_kind k);
std::string last_line(const std::string& s);

struct wl_result {
    std::string name;
    m::workload_kind kind{};
    std::uint64_t size = 0;
    unsigned count = 0;
    std::string how;  ///< the command that measured it
    bool run = false;
    bool completed = false;
    std::string error;
    std::optional<double> p50, p99, mean, max, gbps;  ///< collectives: gbps is the bus bandwidth
    std::optional<double> time_us;  ///< collectives: the median call
    std::vector<double> cdf;  ///< one-way us at 0, 1, ..., 100 % (odl perf's cdf_us), when measured
    std::optional<std::uint64_t> sent, received, lost;
    double started_s = 0, wall_s = 0;
};

struct report {
    std::string on = "vm";  ///< "vm", or "hosts <pair>"
    std::string scenario, file, kernel, driver, cable, link_seen;
    double time_scale = 0;
    std::vector<std::string> applied, not_applied;
    std::vector<wl_result> workloads;
    struct assertion {
        std::string text, status, why;
        std::optional<double> value;
    };
    std::vector<assertion> assertions;
    std::optional<bool> kernel_logs_clean;
    /// Frames the modelled cables delivered damaged over the run (the
    /// testbed's odl-linkd counts them; nothing does on a real cable).
    std::optional<std::uint64_t> frames_damaged;
    /// Per cable pull, µs until the first host acknowledged the unplug event
    /// (-1: none did), as odl-linkd saw it; nullopt where nothing watches.
    std::optional<std::vector<double>> link_down_noticed_us;
    std::string error;  ///< the target failed (testbed, SSH)
    json extra;         ///< what the target says of itself (HIL: the hosts), under "hosts"
    double wall_s = 0;

    unsigned count(const char* st) const {
        return unsigned(std::count_if(assertions.begin(), assertions.end(),
                                      [&](const assertion& a) { return a.status == st; }));
    }
    bool workloads_ok() const {
        return std::all_of(workloads.begin(), workloads.end(),
                           [](const wl_result& w) { return !w.run || w.completed; });
    }
    bool passed() const { return error.empty() && count("FAIL") == 0 && workloads_ok(); }

    json to_json() const {
        json j{{"scenario", scenario}, {"file", file}, {"on", on}, {"kernel", kernel}, {"driver", driver},
               {"cable", cable}, {"link_seen_by_linux", link_seen}, {"time_scale_wall_s_per_sim_s", time_scale},
               {"wall_s", wall_s}, {"passed", passed()}, {"events_applied", applied},
               {"not_applied_on_" + on_key(), not_applied}};
        const auto opt = [](const auto& o) { return o ? json(*o) : json(nullptr); };
        j["workloads"] = json::array();
        for (const auto& w : workloads) {
            json o{{"name", w.name}, {"type", std::string(m::to_string(w.kind))}, {"size_bytes", w.size},
                   {"count", w.count}, {"run", w.run}, {"measured_with", w.how}, {"completed", w.completed},
                   {"messages_sent", opt(w.sent)}, {"messages_received", opt(w.received)},
                   {"messages_lost", opt(w.lost)}, {"started_s", w.started_s}, {"wall_s", w.wall_s}};
            if (w.kind == m::workload_kind::pingpong)
                o["one_way_us"] = {{"p50", opt(w.p50)}, {"p99", opt(w.p99)}, {"mean", opt(w.mean)},
                                   {"max", opt(w.max)}};
            if (!w.cdf.empty()) o["one_way_us"]["cdf"] = w.cdf;
            else if (m::is_collective(w.kind)) {
                o["time_us"] = opt(w.time_us);
                o["busbw_gbps"] = opt(w.gbps);
            } else
                o["gbps"] = opt(w.gbps);
            if (!w.error.empty()) o["error"] = w.error;
            j["workloads"].push_back(o);
        }
        j["assertions"] = json::array();
        for (const auto& a : assertions) {
            json o{{"assertion", a.text}, {"status", a.status}, {"value", opt(a.value)},
                   {"passed", a.status == "PASS"}};
            if (!a.why.empty()) o["reason"] = a.why;
            j["assertions"].push_back(o);
        }
        j["kernel_logs_clean"] = opt(kernel_logs_clean);
        j["frames_damaged"] = frames_damaged ? json(*frames_damaged) : json();
        j["link_down_noticed_us"] = link_down_noticed_us ? json(*link_down_noticed_us) : json();
        if (!extra.is_null()) j["hosts"] = extra;
        if (!error.empty()) j["error"] = error;
        return j;
    }

    std::string on_key() const { return on == "vm" ? "vm" : "hosts"; }
    /// JUnit XML for any CI system: one test case per workload and assertion.
    std::string to_junit() const;

    std::string to_text() const {
        std::string t = fmt::format("scenario {} on {} (Linux {}, {}, cable {}; Linux sees {}): {:.1f} s wall\n",
                                    scenario, on, kernel, driver, cable, link_seen.empty() ? "-" : link_seen, wall_s);
        const auto num = [](const std::optional<double>& v, const char* f) {
            return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
        };
        for (const auto& w : workloads) {
            t += fmt::format("  {:<16} {:<9} {:>9} B x{:<6} ", w.name, m::to_string(w.kind), w.size, w.count);
            if (!w.run) {
                t += "not run on " + on + (w.error.empty() ? "" : ": " + w.error) + "\n";
                continue;
            }
            if (w.kind == m::workload_kind::pingpong)
                t += fmt::format("one-way p50 {} us  p99 {} us  max {} us", num(w.p50, "{:.2f}"),
                                 num(w.p99, "{:.2f}"), num(w.max, "{:.2f}"));
            else if (m::is_collective(w.kind))
                t += fmt::format("{} us per call, busbw {} Gb/s", num(w.time_us, "{:.1f}"), num(w.gbps, "{:.4f}"));
            else
                t += fmt::format("{} Gb/s", num(w.gbps, "{:.4f}"));
            t += fmt::format("  ({}{})  [{}]\n",
                             !w.lost       ? std::string("loss not measured")
                             : w.received ? fmt::format("{} received, {} lost", *w.received, *w.lost)
                                          : "results checked exactly",
                             w.completed ? "" : ", NOT completed: " + w.error, w.how);
        }
        for (const auto& e : applied) t += "  applied: " + e + "\n";
        for (const auto& e : not_applied) t += "  not applied on " + on + ": " + e + "\n";
        if (kernel_logs_clean)
            t += fmt::format("  kernel logs: {}\n",
                             *kernel_logs_clean ? "clean" : "WARNING/BUG/Oops found (see the console logs)");
        if (frames_damaged) t += fmt::format("  frames delivered damaged by the modelled cables: {}\n", *frames_damaged);
        if (link_down_noticed_us && !link_down_noticed_us->empty())
            t += fmt::format("  unplug noticed (first host's hot-plug ACK) after: {} us\n",
                             fmt::join(*link_down_noticed_us, ", "));
        for (const auto& a : assertions)
            t += fmt::format("  [{}] {}{}\n", a.status, a.text, a.why.empty() ? "" : " — " + a.why);
        if (!error.empty()) t += "  error: " + error + "\n";
        t += fmt::format("assertions: {} passed, {} failed, {} not evaluated\n", count("PASS"), count("FAIL"),
                         count("NOT EVALUATED"));
        return t;
    }
};


/// The hosts a run drives: a pair, or on the testbed up to four. Host 0 is
/// the scenario's first host.
class target {
public:
    virtual ~target() = default;
    static constexpr unsigned max_hosts = 4;
    virtual unsigned host_count() const { return 2; }
    /// "A" / "B" on the testbed, "a (root@h port 22)" on a HIL pair.
    virtual std::string name(unsigned host) const = 0;
    /// Runs @cmd with the host's shell, stderr merged into out.
    virtual sh_result exec(unsigned host, const std::string& cmd, int timeout_s = 60) = 0;
    /// N of /dev/odl_tb5_N cabled to the other host.
    virtual int device(unsigned host) const = 0;
    /// Makes odl_tb5 loaded on both hosts (throws target_error).
    virtual void load_driver() = 0;
    /// Linux's view of the trained link, one line ("" when unknown).
    virtual std::string link_seen() = 0;
    /// Cable events: possible at all, and why not when not.
    virtual bool can_cable() const = 0;
    virtual std::string no_cable_reason() const = 0;
    /// Plugs or pulls cable @index (the scenario's numbering).
    virtual void cable(unsigned index, const std::string& action) = 0;
    /// ber, degrade and retrain applied to the link (the testbed's modelled
    /// cable); no_event_reason() says why not where they cannot be.
    virtual bool can_link_events() const { return false; }
    virtual void link_event(const m::scenario_event& /*e*/) {}
    /// host-reset: an odl_tb5 reload on a HIL host, a power cycle of a VM;
    /// the host stays off (module out, VM powered off) for @off_s seconds,
    /// the event's `down` scaled to wall time.
    virtual bool can_reset() const { return false; }
    virtual std::string reset_means() const { return "an odl_tb5 reload"; }
    virtual void reset(unsigned /*host*/, double /*off_s*/) {}
    /// Why ber/degrade/retrain (and host-reset without can_reset) are not applied.
    virtual std::string no_event_reason() const = 0;
    /// One rank of a NCCL collective on @host: the command (environment,
    /// program) that the rank's arguments follow (pair_collective.h).
    virtual std::string nccl_rank_command(unsigned host) const;
    /// Where host 1 reaches host 0 for NCCL's rendezvous, never over the
    /// link under test ("" = nowhere).
    virtual std::string rendezvous_address() const { return ""; }
    /// Collectives run as odl-plugin-collective ranks on the scenario's hosts
    /// (plugin_collective.h: the plugin's net API on host memory, two hosts
    /// or more) instead of NCCL jobs on a pair.
    virtual bool plugin_collectives() const { return false; }
    /// Where odl-plugin-collective is installed on the hosts: a path, or a
    /// glob of the target's own (not quoted; the first match is used).
    virtual std::string plugin_collective_program() const { return ""; }
    /// What the modelled cables counted so far: frames delivered damaged,
    /// all cables summed (the scenario metric frames_damaged), and for each
    /// pull, retrain or degrade, µs until the first host's connection
    /// manager acknowledged the unplug event (-1: none has).
    struct cable_counts {
        std::uint64_t frames_damaged = 0;
        std::vector<double> link_down_noticed_us;
    };
    /// nullopt where no model counts them (a real cable).
    virtual std::optional<cable_counts> modelled_cables() { return std::nullopt; }
    /// Remembers where the kernel log stands now; kernel_log_problems()
    /// reads only what came after.
    virtual void mark_kernel_log(unsigned host);
    /// WARNING/BUG/Oops/Call Trace lines in the kernel log since the mark.
    virtual std::string kernel_log_problems(unsigned host);
    /// The whole kernel log since the mark.
    std::string kernel_log_since_mark(unsigned host);
    /// The command that succeeds once the host's odl_tb5 is logged in.
    std::string logged_in_command(unsigned host) const;
    /// The same for /dev/odl_tb5_@dev.
    static std::string logged_in_command_of(int dev);

    /// Polls @cmd on @host until it succeeds, at most @secs seconds.
    bool wait_in(unsigned host, int secs, const std::string& cmd);

    /// The run's clock, seconds: the wall clock, or in a deterministic run
    /// the guests' simulated time (waits and event times are then the same
    /// in every run).
    virtual double clock_s();
    /// Lets the run go on for @s seconds of its clock: a sleep, or (a
    /// deterministic run) an advance of the simulation.
    virtual void pause(double s);
    /// What clock_s() counts, for the report: "wall" or "simulated".
    virtual std::string clock_name() const { return "wall"; }
    /// A target that takes ber events ahead, at its clock's time @at_s,
    /// says true (the deterministic testbed); the others apply them as
    /// their time comes (link_event).
    virtual bool schedule_link_event(const m::scenario_event& /*e*/, double /*at_s*/) { return false; }
    /// A name for the run's files on the hosts (the runner's pid; fixed
    /// where a run must repeat byte for byte).
    virtual std::string run_tag() const;

protected:
    /// The host rebooted: its kernel log starts afresh, all of it is new.
    void kernel_log_restarted(unsigned host) { log_mark_[host % max_hosts] = 0; }

private:
    std::size_t log_mark_[max_hosts] = {};
};

/// "odl: run: --on <where>: <msg>" on stderr, exit 2 (bad input, nothing started).
[[noreturn]] void refuse(const std::string& where, const std::string& msg);

/// Lane adapter of @host's port whose cable leads to @peer, as odl-linkd
/// numbers them (the scenario's port_a / port_b through
/// linkd::lane_adapter_of_port: 1, 3, 5, ...); 0 when no cable joins them.
unsigned port_between(const m::scenario& s, unsigned host, unsigned peer);
/// Index of the cable between @a and @b, -1 when none.
int cable_between(const m::scenario& s, unsigned a, unsigned b);

/// Why @s cannot run on two hosts joined by one cable ("" when it can):
/// @what names them ("the testbed has exactly two VMs (A, B)", "a HIL pair has two").
std::string pair_shape_error(const m::scenario& s, const std::string& what);

/// Replays the scenario's timeline on @tb and fills @rep (workloads,
/// events applied or not, kernel logs, assertions).
void replay(const vm_run_opts& o, const m::scenario& s, target& tb, report& rep);

/// The report's skeleton before a run: its workloads, and "NOT EVALUATED"
/// assertions when the run ends early.
void add_workloads(const m::scenario& s, report& rep);
void fill_unevaluated(const m::scenario& s, report& rep);

/// Writes report.json, report.txt and junit.xml into @dir and prints the
/// report (text or JSON) on stdout unless @print is false.
void write_report(const report& rep, const std::string& dir, bool json_out, bool print = true);

}  // namespace odl::cli::pair
