// SPDX-License-Identifier: MIT
// `odl run <scenario> --on vm`: the scenario replayed in the two-VM testbed.
//
// The testbed (qemu-device/testbed.sh) has exactly two TCG guests on one
// modelled cable, so: two hosts, one cable, symmetric tb3/gen2/gen3/gen4 with
// 1 or 2 lanes. Plug/unplug events are sent to odl-linkd at their scenario
// times scaled to wall time (--vm-time-scale, default 1 ms simulated = 1 s);
// other event kinds and per-host platform settings are listed as "not applied
// on vm". Workloads run one after another in start order: pingpong and stream
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

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "odl/model/scenario/scenario.h"

namespace odl::cli {
namespace {

namespace m = odl::model;
using nlohmann::json;
using clk = std::chrono::steady_clock;

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_signal(int) { g_interrupted = 1; }

struct interrupted : std::runtime_error {
    interrupted() : std::runtime_error("interrupted") {}
};
struct testbed_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void check_interrupt() {
    if (g_interrupted) throw interrupted();
}

void progress(const std::string& s) { fmt::print(stderr, "odl: run: vm: {}\n", s); }

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

std::string sq(const std::string& s) {
    std::string r = "'";
    for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return r + "'";
}

struct sh_result {
    int rc = -1;
    std::string out;
};

/// Runs @cmd with /bin/sh, stdout (and stderr if @merge) captured.
sh_result sh(const std::string& cmd, bool merge = true) {
    std::fflush(stdout);
    std::fflush(stderr);
    sh_result r;
    FILE* p = popen((cmd + (merge ? " 2>&1" : "")).c_str(), "r");
    if (!p) throw testbed_error("cannot run " + cmd);
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = pclose(p);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return r;
}

class testbed {
public:
    explicit testbed(std::string script) : script_(std::move(script)) {}
    ~testbed() { down(); }
    void up(const std::string& kernel, const std::string& gen, unsigned lanes) {
        up_ = true;  // a half-started testbed is torn down as well
        const auto r = sh(fmt::format("{} up --kernel {} --gen {} --lanes {} --timeout 240 >&2", sq(script_),
                                      kernel, gen, lanes),
                          false);
        check_interrupt();
        if (r.rc != 0) throw testbed_error(fmt::format("testbed up failed (status {})", r.rc));
    }
    sh_result exec(const std::string& vm, const std::string& cmd, int timeout_s = 60) {
        check_interrupt();
        auto r = sh(fmt::format("ODL_VM_EXEC_TIMEOUT={} {} exec {} {}", timeout_s, sq(script_), vm, sq(cmd)));
        check_interrupt();
        return r;
    }
    /// Polls @cmd in @vm until it succeeds, at most @secs seconds.
    bool wait_in(const std::string& vm, int secs, const std::string& cmd) {
        const auto end = clk::now() + std::chrono::seconds(secs);
        while (clk::now() < end) {
            if (exec(vm, cmd, 30).rc == 0) return true;
            std::this_thread::sleep_for(std::chrono::seconds(1));
        }
        return false;
    }
    void cable(const std::string& action) {
        check_interrupt();
        const auto r = sh(fmt::format("{} cable {}", sq(script_), action));
        if (r.rc != 0) throw testbed_error("cable " + action + " failed: " + r.out);
    }
    void down() {
        if (!up_) return;
        up_ = false;
        progress("tearing the testbed down");
        sh(fmt::format("{} down >&2", sq(script_)), false);
    }

private:
    std::string script_;
    bool up_ = false;
};

struct wl_result {
    std::string name;
    m::workload_kind kind{};
    std::uint64_t size = 0;
    unsigned count = 0;
    std::string how;  ///< the command that measured it
    bool run = false;
    bool completed = false;
    std::string error;
    std::optional<double> p50, p99, mean, max, gbps;
    std::optional<std::uint64_t> sent, received, lost;
    double started_s = 0, wall_s = 0;
};

struct report {
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
    std::string error;  ///< testbed failure
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
        json j{{"scenario", scenario}, {"file", file}, {"on", "vm"}, {"kernel", kernel}, {"driver", driver},
               {"cable", cable}, {"link_seen_by_linux", link_seen}, {"time_scale_wall_s_per_sim_s", time_scale},
               {"wall_s", wall_s}, {"passed", passed()}, {"events_applied", applied},
               {"not_applied_on_vm", not_applied}};
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
            else
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
        if (!error.empty()) j["error"] = error;
        return j;
    }

    std::string to_text() const {
        std::string t = fmt::format("scenario {} on vm (Linux {}, {}, cable {}; Linux sees {}): {:.1f} s wall\n",
                                    scenario, kernel, driver, cable, link_seen.empty() ? "-" : link_seen, wall_s);
        const auto num = [](const std::optional<double>& v, const char* f) {
            return v ? fmt::format(fmt::runtime(f), *v) : std::string("-");
        };
        for (const auto& w : workloads) {
            t += fmt::format("  {:<16} {:<9} {:>9} B x{:<6} ", w.name, m::to_string(w.kind), w.size, w.count);
            if (!w.run) {
                t += std::string("not run on vm") + (w.error.empty() ? "" : ": " + w.error) + "\n";
                continue;
            }
            if (w.kind == m::workload_kind::pingpong)
                t += fmt::format("one-way p50 {} us  p99 {} us  max {} us", num(w.p50, "{:.2f}"),
                                 num(w.p99, "{:.2f}"), num(w.max, "{:.2f}"));
            else
                t += fmt::format("{} Gb/s", num(w.gbps, "{:.4f}"));
            t += fmt::format("  ({}{})  [{}]\n",
                             w.lost ? fmt::format("{} received, {} lost", w.received.value_or(0), *w.lost)
                                    : std::string("loss not measured"),
                             w.completed ? "" : ", NOT completed: " + w.error, w.how);
        }
        for (const auto& e : applied) t += "  applied: " + e + "\n";
        for (const auto& e : not_applied) t += "  not applied on vm: " + e + "\n";
        if (kernel_logs_clean)
            t += fmt::format("  guest kernel logs: {}\n",
                             *kernel_logs_clean ? "clean" : "WARNING/BUG/Oops found (see the console logs)");
        for (const auto& a : assertions)
            t += fmt::format("  [{}] {}{}\n", a.status, a.text, a.why.empty() ? "" : " — " + a.why);
        if (!error.empty()) t += "  testbed error: " + error + "\n";
        t += fmt::format("assertions: {} passed, {} failed, {} not evaluated\n", count("PASS"), count("FAIL"),
                         count("NOT EVALUATED"));
        return t;
    }
};

const char* gen_arg(m::generation g) {
    switch (g) {
    case m::generation::tb3: return "tb3";
    case m::generation::gen2: return "gen2";
    case m::generation::gen3: return "gen3";
    case m::generation::gen4: return "gen4";
    }
    return "?";
}

std::string event_name(m::event_kind k) {
    switch (k) {
    case m::event_kind::plug: return "plug";
    case m::event_kind::unplug: return "unplug";
    case m::event_kind::ber: return "ber";
    case m::event_kind::degrade: return "degrade";
    case m::event_kind::retrain: return "retrain";
    case m::event_kind::host_reset: return "host-reset";
    }
    return "?";
}

/// Nearest-rank percentile, as the model computes it.
double pct(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    std::size_t i = std::size_t(std::ceil(p / 100.0 * double(v.size())));
    return v[std::min(v.size() - 1, i ? i - 1 : 0)];
}

std::optional<json> first_json(const std::string& s) {
    const auto b = s.find('{');
    const auto e = s.rfind('}');
    if (b == std::string::npos || e == std::string::npos || e < b) return std::nullopt;
    try {
        return json::parse(s.substr(b, e - b + 1));
    } catch (...) {
        return std::nullopt;
    }
}

std::string last_line(const std::string& s) {
    std::string t = s;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    const auto p = t.rfind('\n');
    return p == std::string::npos ? t : t.substr(p + 1);
}

class vm_runner {
public:
    vm_runner(const vm_run_opts& o, const m::scenario& s, testbed& tb, report& rep)
        : o_(o), s_(s), tb_(tb), rep_(rep) {}

    const char* vm(unsigned host) const { return host == 0 ? "A" : "B"; }
    std::string ip(unsigned host) const { return host == 0 ? "10.99.0.1" : "10.99.0.2"; }

    /// Waits until the link carries traffic again (after up or a plug).
    bool wait_link(int secs) {
        if (o_.driver == "tbnet") {
            // thunderbolt0 comes back as a new interface after a replug: address it each round.
            const auto end = clk::now() + std::chrono::seconds(secs);
            while (clk::now() < end) {
                for (unsigned h = 0; h < 2; ++h)
                    tb_.exec(vm(h), fmt::format("ip link show thunderbolt0 >/dev/null 2>&1 && {{ ip addr show dev "
                                                "thunderbolt0 | grep -q '{0}/' || ip addr add {0}/24 dev thunderbolt0; "
                                                "ip link set thunderbolt0 up; }}",
                                                ip(h)),
                             30);
                if (tb_.exec("A", "ping -c 1 -W 2 " + ip(1), 30).rc == 0) return true;
                std::this_thread::sleep_for(std::chrono::seconds(1));
            }
            return false;
        }
        for (unsigned h = 0; h < 2; ++h)
            if (!tb_.wait_in(vm(h), secs, "odl_tb5_ioctl /dev/odl_tb5_0 0 | grep -q 'INFO state 2'")) return false;
        return true;
    }

    void run_workload(const m::scenario_workload& w, wl_result& r) {
        r.run = true;
        const unsigned from = w.hosts.at(0), to = w.hosts.at(1);
        const auto t0 = clk::now();
        if (w.kind == m::workload_kind::pingpong)
            o_.driver == "tbnet" ? ping_tbnet(w, r, from, to) : perf(w, r, from, to, "latency");
        else
            o_.driver == "tbnet" ? stream_tbnet(w, r, from, to) : perf(w, r, from, to, "bandwidth");
        r.wall_s = std::chrono::duration<double>(clk::now() - t0).count();
    }

    void ping_tbnet(const m::scenario_workload& w, wl_result& r, unsigned from, unsigned to) {
        const unsigned n = std::min<unsigned>(w.count, o_.ping_cap);
        const std::uint64_t size = std::min<std::uint64_t>(w.size, 65000);
        r.count = n;
        r.how = fmt::format("ping -A -c {} -s {} ({} -> {}, thunderbolt_net)", n, size, vm(from), vm(to));
        if (n < w.count) rep_.not_applied.push_back(fmt::format("{}: {} of {} iterations (--vm-ping-cap)", w.name, n, w.count));
        if (size < w.size) rep_.not_applied.push_back(fmt::format("{}: ping payload capped at {} B", w.name, size));
        const auto res = tb_.exec(vm(from), fmt::format("ping -A -c {} -s {} -W 3 -w {} {}", n, size, n * 3 + 5, ip(to)),
                                  n * 3 + 30);
        std::vector<double> us;
        std::istringstream in(res.out);
        for (std::string line; std::getline(in, line);) {
            const auto p = line.find("time=");
            if (p == std::string::npos) continue;
            double ms = std::strtod(line.c_str() + p + 5, nullptr);
            if (line.find(" us", p) != std::string::npos && line.find(" ms", p) == std::string::npos) ms /= 1000;
            us.push_back(ms * 1000 / 2);  // one-way = RTT / 2
        }
        r.sent = n;
        r.received = us.size();
        r.lost = n - us.size();
        if (!us.empty()) {
            r.p50 = pct(us, 50);
            r.p99 = pct(us, 99);
            r.max = *std::max_element(us.begin(), us.end());
            double sum = 0;
            for (double v : us) sum += v;
            r.mean = sum / double(us.size());
        }
        r.completed = us.size() == n;
        if (!r.completed) r.error = fmt::format("{} of {} pings unanswered: {}", n - us.size(), n, last_line(res.out));
    }

    void stream_tbnet(const m::scenario_workload& w, wl_result& r, unsigned from, unsigned to) {
        const std::uint64_t want = w.size * w.count, cap = std::uint64_t(o_.stream_cap_mib) << 20;
        const std::uint64_t bytes = std::min(want, cap);
        const std::uint64_t len = std::min<std::uint64_t>(w.size, 1 << 20);
        const bool bidir = w.kind == m::workload_kind::bidir;
        r.how = fmt::format("iperf3 -c {} -n {} -l {}{} ({} -> {}, thunderbolt_net, TCP)", ip(to), bytes, len,
                            bidir ? " --bidir" : "", vm(from), vm(to));
        if (bytes < want)
            rep_.not_applied.push_back(fmt::format("{}: {} of {} bytes sent (--vm-stream-cap-mib)", w.name, bytes, want));
        tb_.exec(vm(to), "iperf3 -s -D -1 >/dev/null 2>&1");
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const auto res = tb_.exec(vm(from), fmt::format("iperf3 -c {} -n {} -l {}{} -J", ip(to), bytes, len,
                                                        bidir ? " --bidir" : ""),
                                  300);
        const auto j = first_json(res.out);
        if (res.rc != 0 || !j || !j->contains("end")) {
            r.error = fmt::format("iperf3 failed (status {}): {}", res.rc, last_line(res.out));
            return;
        }
        const auto& end = (*j)["end"];
        double bps = end.value("sum_received", json::object()).value("bits_per_second", 0.0);
        if (bidir) bps += end.value("sum_received_bidir_reverse", json::object()).value("bits_per_second", 0.0);
        r.gbps = bps / 1e9;
        r.completed = true;  // TCP: retransmitted, so message loss is not measured
    }

    void perf(const m::scenario_workload& w, wl_result& r, unsigned from, unsigned to, const char* test) {
        std::string args;
        if (w.kind == m::workload_kind::pingpong) {
            args = fmt::format("-s {} -n {} --warmup {}", w.size, w.count, std::max(1u, w.count / 10));
        } else {
            const std::uint64_t want = w.size * w.count, cap = std::uint64_t(o_.stream_cap_mib) << 20;
            const std::uint64_t bytes = std::max(w.size, std::min(want, cap));
            args = fmt::format("-s {} --bytes {}{}", w.size, bytes,
                               w.kind == m::workload_kind::bidir ? " --bidir" : "");
        }
        r.how = fmt::format("odl perf {} --backend kernel {} ({} -> {}, odl_tb5)", test, args, vm(from), vm(to));
        tb_.exec(vm(to), fmt::format("(odl perf {} --backend kernel --server -d 0 --connect-timeout 60 {} "
                                     ">/tmp/run-srv.log 2>&1; echo rc=$? >>/tmp/run-srv.log) &",
                                     test, args));
        std::this_thread::sleep_for(std::chrono::seconds(1));
        const auto res = tb_.exec(vm(from),
                                  fmt::format("odl perf {} --backend kernel --client 0 --connect-timeout 60 -q --json {}",
                                              test, args),
                                  540);
        tb_.wait_in(vm(to), 30, "grep -q '^rc=' /tmp/run-srv.log");
        const auto j = first_json(res.out);
        if (res.rc != 0 || !j || !j->contains("results") || (*j)["results"].empty()) {
            r.error = fmt::format("odl perf failed (status {}): {}", res.rc, last_line(res.out));
            return;
        }
        const auto& row = (*j)["results"][0];
        if (w.kind == m::workload_kind::pingpong) {
            r.p50 = row.value("p50_us", 0.0);
            r.p99 = row.value("p99_us", 0.0);
            r.mean = row.value("mean_us", 0.0);
            r.max = row.value("max_us", 0.0);
            r.sent = r.received = row.value("samples", std::uint64_t(0));
        } else {
            r.gbps = row.value("gbps", 0.0);
            r.sent = r.received = row.value("messages", std::uint64_t(0));
            // odl perf sends at least 16 messages per size: report what it really moved.
            const std::uint64_t want = w.size * w.count, moved = row.value("bytes", std::uint64_t(0));
            if (moved != want)
                rep_.not_applied.push_back(fmt::format("{}: {} bytes moved instead of {} (--vm-stream-cap-mib; "
                                                       "odl perf sends at least 16 messages)",
                                                       w.name, moved, want));
        }
        r.lost = 0;  // odl perf verifies every message and fails on a missing one
        r.completed = true;
    }

    void evaluate() {
        for (const auto& a : s_.assertions) {
            report::assertion ar;
            std::string bound;
            if (a.min) bound += fmt::format(">= {:g}", *a.min);
            if (a.max) bound += fmt::format("{}<= {:g}", bound.empty() ? "" : " and ", *a.max);
            const std::string base = fmt::format("{}{}{} {}", a.workload, a.workload.empty() ? "" : ".", a.metric, bound);
            std::optional<double> v;
            std::string why;
            if (a.workload.empty()) {
                if (a.metric == "messages_lost") {
                    double sum = 0;
                    for (const auto& w : rep_.workloads) {
                        if (!w.run || !w.lost) {
                            why = fmt::format("loss of workload {} not measured on vm", w.name);
                            break;
                        }
                        sum += double(*w.lost);
                    }
                    if (why.empty()) v = sum;
                } else {
                    why = fmt::format("scenario-wide {} is a model metric; the VM path does not measure it",
                                      a.metric);
                }
            } else {
                const auto it = std::find_if(rep_.workloads.begin(), rep_.workloads.end(),
                                             [&](const wl_result& w) { return w.name == a.workload; });
                if (it == rep_.workloads.end() || !it->run) {
                    why = "workload not run on vm";
                } else {
                    const auto& w = *it;
                    std::optional<double> x;
                    if (a.metric == "p50_us") x = w.p50;
                    else if (a.metric == "p99_us") x = w.p99;
                    else if (a.metric == "mean_us") x = w.mean;
                    else if (a.metric == "max_us") x = w.max;
                    else if (a.metric == "gbps") x = w.gbps;
                    else if (a.metric == "messages_lost" && w.lost) x = double(*w.lost);
                    else if (a.metric == "completed") x = w.completed ? 1 : 0;
                    if (x) v = x;
                    else why = fmt::format("{} not measured on vm by {}", a.metric, w.how);
                }
            }
            if (v) {
                const bool ok = (!a.min || *v >= *a.min) && (!a.max || *v <= *a.max);
                ar.status = ok ? "PASS" : "FAIL";
                ar.value = v;
                ar.text = fmt::format("{} (got {:g})", base, *v);
            } else {
                ar.status = "NOT EVALUATED";
                ar.text = base;
                ar.why = why;
            }
            if (!a.where.empty()) ar.text += " at " + a.where;
            rep_.assertions.push_back(ar);
        }
    }

    void run() {
        const auto& c = s_.cables[0];
        if (o_.driver == "odl_tb5") {
            for (unsigned h = 0; h < 2; ++h) {
                const auto r = tb_.exec(vm(h), "insmod /lib/modules/odl_tb5.ko");
                if (r.rc != 0) throw testbed_error(fmt::format("insmod odl_tb5 in VM {}: {}", vm(h), r.out));
            }
        }
        progress(fmt::format("waiting for the link ({})", o_.driver == "tbnet" ? "thunderbolt0, ping" : "odl_tb5 login"));
        if (!wait_link(120)) throw testbed_error("the link did not come up within 120 s");
        const auto sp = tb_.exec("A", "cd /sys/bus/thunderbolt/devices/0-1 && echo \"$(cat tx_speed) per lane x $(cat tx_lanes) lanes\"");
        if (sp.rc == 0) rep_.link_seen = last_line(sp.out);
        progress("link up (Linux reports " + rep_.link_seen + "); replaying the timeline");
        bool link_pending = false;
        if (!c.plugged) {
            tb_.cable("unplug");
            rep_.applied.push_back("cable 0 unplugged at 0 (plugged: false)");
        }
        // One ordered timeline: events and workload starts, at their times.
        struct item {
            double at_s;
            int order;
            std::size_t idx;
            bool event;
        };
        std::vector<item> items;
        for (std::size_t i = 0; i < s_.events.size(); ++i)
            items.push_back({s_.events[i].at.to_seconds(), 0, i, true});
        for (std::size_t i = 0; i < s_.workloads.size(); ++i)
            items.push_back({s_.workloads[i].start.to_seconds(), 1, i, false});
        std::stable_sort(items.begin(), items.end(), [](const item& a, const item& b) {
            return a.at_s != b.at_s ? a.at_s < b.at_s : a.order < b.order;
        });
        const auto t0 = clk::now();
        for (const auto& it : items) {
            const double target = it.at_s * o_.time_scale;
            while (std::chrono::duration<double>(clk::now() - t0).count() < target) {
                check_interrupt();
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
            const double now = std::chrono::duration<double>(clk::now() - t0).count();
            if (it.event) {
                const auto& e = s_.events[it.idx];
                const std::string what = fmt::format("{} cable {} at {:g} ms", event_name(e.kind), e.cable,
                                                     e.at.to_seconds() * 1e3);
                if (e.kind == m::event_kind::plug || e.kind == m::event_kind::unplug) {
                    progress(fmt::format("t={:.1f} s: {}", now, what));
                    tb_.cable(event_name(e.kind));
                    link_pending = e.kind == m::event_kind::plug;
                    rep_.applied.push_back(fmt::format("{} (wall t={:.1f} s)", what, now));
                } else {
                    progress(fmt::format("t={:.1f} s: {} NOT applied (the testbed cannot emulate it)", now, what));
                    rep_.not_applied.push_back(what + ": odl-linkd's control socket only does cable plug/unplug");
                }
                continue;
            }
            const auto& w = s_.workloads[it.idx];
            auto& r = rep_.workloads[it.idx];
            r.started_s = now;
            if (link_pending) {
                progress("waiting for the link after the plug");
                if (!wait_link(120)) progress("link not back within 120 s; running anyway");
                link_pending = false;
                r.started_s = std::chrono::duration<double>(clk::now() - t0).count();
            }
            if (w.kind == m::workload_kind::allreduce) {
                r.error = "allreduce needs a ring of hosts";
                continue;
            }
            progress(fmt::format("t={:.1f} s: workload {} ({})", r.started_s, w.name, m::to_string(w.kind)));
            run_workload(w, r);
            progress(fmt::format("workload {} {} in {:.1f} s", w.name, r.completed ? "done" : "FAILED: " + r.error,
                                 r.wall_s));
        }
        // Guest kernel logs, as the vm tests check them.
        bool clean = true;
        for (unsigned h = 0; h < 2; ++h) {
            const auto r = tb_.exec(vm(h), "dmesg | grep -v 'module verification failed' | "
                                           "grep -E 'WARNING:|BUG:|Oops|Call Trace'");
            if (r.rc == 0) clean = false;
        }
        rep_.kernel_logs_clean = clean;
        evaluate();
    }

private:
    const vm_run_opts& o_;
    const m::scenario& s_;
    testbed& tb_;
    report& rep_;
};

[[noreturn]] void refuse(const std::string& msg) {
    fmt::print(stderr, "odl: run: --on vm: {}\n", msg);
    std::exit(2);
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
    if (o.driver != "odl_tb5" && o.driver != "tbnet") refuse("--vm-driver must be odl_tb5 or tbnet");
    if (o.kernel != "6.12" && o.kernel != "6.1") refuse("--vm-kernel must be 6.12 or 6.1");
    if (!(o.time_scale >= 0)) refuse("--vm-time-scale must be >= 0");
    // What the testbed can emulate: two guests, one symmetric cable.
    if (s.hosts.size() != 2)
        refuse(fmt::format("{} has {} hosts; the testbed has exactly two VMs (A, B) on one cable. "
                           "Replay it with --on model.",
                           s.name, s.hosts.size()));
    if (s.cables.size() != 1) refuse(fmt::format("{} has {} cables; the testbed has one", s.name, s.cables.size()));
    const auto& c = s.cables[0];
    if (c.cfg.asymmetric)
        refuse("asymmetric Gen4 (3 lanes one way) is not emulated by odl-linkd's testbed mode (--lanes 1|2)");
    if (c.cfg.lanes < 1 || c.cfg.lanes > 2) refuse(fmt::format("{} lanes: the testbed does 1 or 2", c.cfg.lanes));
    if (c.cfg.gen == m::generation::gen4 && o.kernel == "6.1")
        refuse("a tb5/Gen4 cable needs --vm-kernel 6.12: Linux 6.1 does not decode Gen4 and reports 10 Gb/s");
    for (const auto& w : s.workloads)
        if (w.kind != m::workload_kind::allreduce && w.hosts.size() >= 2 && w.hosts[0] == w.hosts[1])
            refuse(fmt::format("workload {}: from and to are the same host", w.name));

    const std::string src = env_or("ODL_SOURCE_DIR", ODL_SOURCE_DIR_DEFAULT);
    const std::string build = env_or("ODL_BUILD_DIR", ODL_BINARY_DIR_DEFAULT);
    const std::string out = o.out.empty() ? build + "/runs/" + s.name + "-vm" : o.out;
    std::error_code ec;
    std::filesystem::create_directories(out, ec);
    if (ec) refuse(fmt::format("cannot create {}: {}", out, ec.message()));
    const std::string outd = std::filesystem::absolute(out).string();
    if (!std::getenv("ODL_VM_DIR")) setenv("ODL_VM_DIR", (outd + "/vm").c_str(), 1);
    if (!std::getenv("ODL_LINKD")) setenv("ODL_LINKD", (build + "/model/src/linkd/odl-linkd").c_str(), 1);

    report rep;
    rep.scenario = s.name;
    rep.file = o.file;
    rep.kernel = o.kernel;
    rep.driver = o.driver == "tbnet" ? "thunderbolt_net (ping, iperf3)" : "odl_tb5 (odl perf --backend kernel)";
    rep.cable = fmt::format("{} x{}", gen_arg(c.cfg.gen), c.cfg.lanes);
    rep.time_scale = o.time_scale;
    for (const auto& h : s.hosts)
        rep.not_applied.push_back(fmt::format("host {}: platform {}{}{} (the guests are Linux on TCG)", h.name,
                                              h.platform.empty() ? "default" : h.platform,
                                              h.interrupts ? (*h.interrupts ? ", completion interrupt" : ", completion poll") : "",
                                              h.throttle ? fmt::format(", throttle {}", *h.throttle) : ""));
    rep.not_applied.push_back(fmt::format("cable length {:g} m (odl-linkd models its default)", c.cfg.length_m));
    rep.not_applied.push_back("workloads run one after another, never concurrently");
    for (const auto& w : s.workloads) {
        wl_result r;
        r.name = w.name;
        r.kind = w.kind;
        r.size = w.size;
        r.count = w.count;
        rep.workloads.push_back(r);
    }

    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    struct sigaction old_int {}, old_term {}, old_hup {};
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    sigaction(SIGHUP, &sa, &old_hup);

    progress(fmt::format("{}: 2 hosts, cable {}, {} events, {} workloads, {} assertions; Linux {}, {}", s.name,
                         rep.cable, s.events.size(), s.workloads.size(), s.assertions.size(), o.kernel, rep.driver));
    const auto t0 = clk::now();
    int rc = 0;
    {
        testbed tb(src + "/qemu-device/testbed.sh");
        try {
            if (o.driver == "odl_tb5") {
                progress("building odl_tb5.ko and the guest extras (kmod/guest-extra.sh)");
                const std::string extra = std::string(std::getenv("ODL_VM_DIR")) + ".extra";
                const auto r = sh(fmt::format("{} {} {} {}", sq(src + "/kmod/guest-extra.sh"), o.kernel, sq(extra),
                                              sq(build)));
                check_interrupt();
                if (r.rc != 0)
                    throw testbed_error("kmod/guest-extra.sh failed (odl_tb5 needs the kernel headers; "
                                        "--vm-driver tbnet runs without it): " + last_line(r.out));
                setenv("ODL_GUEST_EXTRA", extra.c_str(), 1);
            }
            progress("starting the testbed (odl-linkd + two QEMUs)");
            tb.up(o.kernel, gen_arg(c.cfg.gen), c.cfg.lanes);
            vm_runner(o, s, tb, rep).run();
        } catch (const interrupted&) {
            rep.error = "interrupted";
            rc = 130;
        } catch (const std::exception& e) {
            rep.error = e.what();
            rc = 3;
        }
        tb.down();
    }
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    sigaction(SIGHUP, &old_hup, nullptr);
    rep.wall_s = std::chrono::duration<double>(clk::now() - t0).count();
    if (!rep.error.empty() && rep.assertions.empty()) {
        for (const auto& a : s.assertions)
            rep.assertions.push_back({fmt::format("{}{}{}", a.workload, a.workload.empty() ? "" : ".", a.metric),
                                      "NOT EVALUATED", "the run did not finish", std::nullopt});
    }
    const auto put = [&](const std::string& name, const std::string& body) {
        std::ofstream f(outd + "/" + name, std::ios::binary);
        f << body;
    };
    put("report.json", rep.to_json().dump(2) + "\n");
    put("report.txt", rep.to_text());
    progress(fmt::format("{:.1f} s wall; wrote {}/report.json, report.txt (guest logs in {})", rep.wall_s, outd,
                         std::getenv("ODL_VM_DIR")));
    if (o.json)
        fmt::print("{}\n", rep.to_json().dump(2));
    else
        fmt::print("{}", rep.to_text());
    if (rc) return rc;
    return rep.passed() ? 0 : 1;
}

}  // namespace odl::cli
