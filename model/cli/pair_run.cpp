// SPDX-License-Identifier: MIT
// The shared half of `odl run --on vm|<inventory>`: signals, shell helpers,
// the timeline runner and the report files (pair_run.h).
#include "pair_run.h"

#include "odl/model/linkd/backend.h"
#include "odl/model/scenario/runner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "pair_collective.h"
#include "plugin_collective.h"

namespace odl::cli::pair {

using clk = std::chrono::steady_clock;

namespace {

volatile std::sig_atomic_t g_interrupted = 0;
extern "C" void on_signal(int) { g_interrupted = 1; }

std::string g_where = "vm";

}  // namespace

void set_where(const std::string& where) { g_where = where; }
void progress(const std::string& s) { fmt::print(stderr, "odl: run: {}: {}\n", g_where, s); }

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

std::string sq(const std::string& s) {
    std::string r = "'";
    for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return r + "'";
}

/// Runs @cmd with /bin/sh, stdout (and stderr if @merge) captured.
sh_result sh(const std::string& cmd, bool merge) {
    std::fflush(stdout);
    std::fflush(stderr);
    sh_result r;
    FILE* p = popen((cmd + (merge ? " 2>&1" : "")).c_str(), "r");
    if (!p) throw target_error("cannot run " + cmd);
    char buf[4096];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = pclose(p);
    r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return r;
}


void check_interrupt() {
    if (g_interrupted) throw interrupted();
}

signal_guard::signal_guard() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
    sigaction(SIGHUP, &sa, &old_hup_);
}

signal_guard::~signal_guard() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGHUP, &old_hup_, nullptr);
}

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

namespace {

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

}  // namespace

std::string last_line(const std::string& s) {
    std::string t = s;
    while (!t.empty() && (t.back() == '\n' || t.back() == '\r')) t.pop_back();
    const auto p = t.rfind('\n');
    return p == std::string::npos ? t : t.substr(p + 1);
}


void target::mark_kernel_log(unsigned host) {
    const auto r = exec(host, "dmesg | wc -l", 30);
    log_mark_[host % max_hosts] = r.rc == 0 ? std::strtoull(last_line(r.out).c_str(), nullptr, 10) : 0;
}

std::string target::kernel_log_problems(unsigned host) {
    const auto r = exec(host, fmt::format("dmesg | tail -n +{} | grep -v 'module verification failed' | "
                                          "grep -E 'WARNING:|BUG:|Oops|Call Trace'",
                                          log_mark_[host % max_hosts] + 1),
                        60);
    return r.rc == 0 ? r.out : "";
}

std::string target::kernel_log_since_mark(unsigned host) {
    return exec(host, fmt::format("dmesg | tail -n +{}", log_mark_[host % max_hosts] + 1), 60).out;
}

std::string target::logged_in_command(unsigned host) const { return logged_in_command_of(device(host)); }

std::string target::logged_in_command_of(int dev) {
    // The module's own view (kmod/sysfs.c): logged in once "connected".
    return fmt::format("grep -qE '^(connected|session)$' /sys/class/odl_tb5/odl_tb5_{}/state", dev);
}

bool target::wait_in(unsigned host, int secs, const std::string& cmd) {
    const double end = clock_s() + secs;
    while (clock_s() < end) {
        check_interrupt();
        if (exec(host, cmd, 30).rc == 0) return true;
        pause(1);
    }
    return false;
}

double target::clock_s() { return std::chrono::duration<double>(clk::now().time_since_epoch()).count(); }

void target::pause(double s) {
    const double end = clock_s() + s;
    // In slices, so that Ctrl-C is noticed within 0.1 s.
    for (double left = s; left > 0; left = end - clock_s()) {
        check_interrupt();
        std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.1, left)));
    }
}

std::string target::run_tag() const { return std::to_string(getpid()); }

namespace {

class runner {
public:
    runner(const vm_run_opts& o, const m::scenario& s, target& tb, report& rep)
        : o_(o), s_(s), tb_(tb), rep_(rep) {}

    std::string vm(unsigned host) const { return tb_.name(host); }
    bool many() const { return tb_.host_count() > 2; }
    /// @host's address on its cable to @peer: a pair uses 10.99.0.1 / .2 on
    /// thunderbolt0; with more hosts each cable N is 10.99.N+1.0/24.
    std::string ip(unsigned host, unsigned peer) const {
        if (!many()) return host == 0 ? "10.99.0.1" : "10.99.0.2";
        return fmt::format("10.99.{}.{}", cable_between(s_, host, peer) + 1, host + 1);
    }
    /// The odl_tb5 device of @host on its cable to @peer (-1: none yet).
    int dev(unsigned host, unsigned peer) {
        if (!many()) return tb_.device(host);
        const unsigned p = port_between(s_, host, peer);
        const auto r = tb_.exec(host, fmt::format("for d in /sys/class/odl_tb5/odl_tb5_*; do case $(readlink -f $d/device) "
                                                  "in */0-{0}/0-{0}.*) echo ${{d##*_}}; exit 0 ;; esac; done; exit 1",
                                                  p),
                                30);
        return r.rc == 0 ? std::atoi(last_line(r.out).c_str()) : -1;
    }
    /// Gives @host's thunderbolt_net interface on its cable to @peer its address.
    void address(unsigned host, unsigned peer) {
        tb_.exec(host, fmt::format("for n in /sys/class/net/thunderbolt*; do case $(readlink -f $n/device) in "
                                   "*/0-{0}.0) d=${{n##*/}}; ip addr show dev $d | grep -q '{1}/' || ip addr add "
                                   "{1}/24 dev $d; ip link set $d up ;; esac; done",
                                   port_between(s_, host, peer), ip(host, peer)),
                 30);
    }
    /// Many hosts: every plugged cable carries traffic (ping over
    /// thunderbolt_net, or both ends' odl_tb5 logged in).
    bool wait_links_many(int secs) {
        const double end = tb_.clock_s() + secs;
        for (std::size_t c = 0; c < s_.cables.size(); ++c) {
            if (!plugged_[c]) continue;
            const unsigned a = s_.cables[c].host_a, b = s_.cables[c].host_b;
            for (bool up = false; !up;) {
                if (tb_.clock_s() >= end) return false;
                check_interrupt();
                if (o_.driver == "tbnet") {
                    address(a, b);
                    address(b, a);
                    up = tb_.exec(a, "ping -c 1 -W 2 " + ip(b, a), 30).rc == 0;
                } else {
                    const int da = dev(a, b), db = dev(b, a);
                    up = da >= 0 && db >= 0 && tb_.exec(a, target::logged_in_command_of(da), 30).rc == 0 &&
                         tb_.exec(b, target::logged_in_command_of(db), 30).rc == 0;
                }
                if (!up) tb_.pause(1);
            }
        }
        return true;
    }

    /// Waits until the link carries traffic again (after up or a plug).
    bool wait_link(int secs) {
        if (many()) return wait_links_many(secs);
        if (o_.driver == "tbnet") {
            // thunderbolt0 comes back as a new interface after a replug: address it each round.
            const double end = tb_.clock_s() + secs;
            while (tb_.clock_s() < end) {
                for (unsigned h = 0; h < 2; ++h)
                    tb_.exec(h, fmt::format("ip link show thunderbolt0 >/dev/null 2>&1 && {{ ip addr show dev "
                                                "thunderbolt0 | grep -q '{0}/' || ip addr add {0}/24 dev thunderbolt0; "
                                                "ip link set thunderbolt0 up; }}",
                                                ip(h, 1 - h)),
                             30);
                if (tb_.exec(0, "ping -c 1 -W 2 " + ip(1, 0), 30).rc == 0) return true;
                tb_.pause(1);
            }
            return false;
        }
        for (unsigned h = 0; h < 2; ++h)
            if (!tb_.wait_in(h, secs, tb_.logged_in_command(h))) return false;
        return true;
    }

    /// Waits for the link after a plug or host reset (@after empty) or a
    /// retrain or degrade (@after names it: the report then says what Linux
    /// reports for the link).
    void link_back(const std::string& after) {
        progress(after.empty() ? "waiting for the link" : "waiting for the link after the " + after);
        const bool back = wait_link(120);
        if (!back) progress("link not back within 120 s; running anyway");
        if (!after.empty())
            note_applied(fmt::format("after the {}: {}", after,
                                               back ? "Linux reports " + tb_.link_seen() : "the link did not come back"));
    }

    void run_workload(const m::scenario_workload& w, wl_result& r) {
        r.run = true;
        const unsigned from = w.hosts.at(0), to = w.hosts.at(1);
        const double t0 = tb_.clock_s();
        if (m::is_collective(w.kind) && tb_.plugin_collectives()) {
            run_plugin_collective(tb_, w, r, "/tmp/odl-run-collective-" + tb_.run_tag());
        } else if (m::is_collective(w.kind) && many()) {
            r.run = false;
            r.error = "NCCL collectives are mapped onto two hosts only";
        } else if (m::is_collective(w.kind)) {
            collective_opts co;
            co.rank1_files = "/tmp/odl-run-nccl-" + tb_.run_tag();
            run_collective(tb_, w, r, co);
        } else if (w.kind == m::workload_kind::pingpong)
            o_.driver == "tbnet" ? ping_tbnet(w, r, from, to) : perf(w, r, from, to, "latency");
        else
            o_.driver == "tbnet" ? stream_tbnet(w, r, from, to) : perf(w, r, from, to, "bandwidth");
        r.wall_s = tb_.clock_s() - t0;
    }

    void ping_tbnet(const m::scenario_workload& w, wl_result& r, unsigned from, unsigned to) {
        const unsigned n = std::min<unsigned>(w.count, o_.ping_cap);
        const std::uint64_t size = std::min<std::uint64_t>(w.size, 65000);
        r.count = n;
        r.how = fmt::format("ping -A -c {} -s {} ({} -> {}, thunderbolt_net)", n, size, vm(from), vm(to));
        if (n < w.count) rep_.not_applied.push_back(fmt::format("{}: {} of {} iterations (--vm-ping-cap)", w.name, n, w.count));
        if (size < w.size) rep_.not_applied.push_back(fmt::format("{}: ping payload capped at {} B", w.name, size));
        const auto res = tb_.exec(from, fmt::format("ping -A -c {} -s {} -W 3 -w {} {}", n, size, n * 3 + 5, ip(to, from)),
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
        r.how = fmt::format("iperf3 -c {} -n {} -l {}{} ({} -> {}, thunderbolt_net, TCP)", ip(to, from), bytes, len,
                            bidir ? " --bidir" : "", vm(from), vm(to));
        if (bytes < want)
            rep_.not_applied.push_back(fmt::format("{}: {} of {} bytes sent (--vm-stream-cap-mib)", w.name, bytes, want));
        tb_.exec(to, "iperf3 -s -D -1 >/dev/null 2>&1");
        tb_.pause(1);
        const auto res = tb_.exec(from, fmt::format("iperf3 -c {} -n {} -l {}{} -J", ip(to, from), bytes, len,
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
        // Detached from the exec's output: over SSH a background job that
        // holds the session's stdout keeps the command from returning.
        tb_.exec(to, fmt::format("(odl perf {} --backend kernel --server -d {} --connect-timeout 60 {} "
                                     ">/tmp/run-srv.log 2>&1; echo rc=$? >>/tmp/run-srv.log) </dev/null >/dev/null 2>&1 &",
                                     test, dev(to, from), args));
        tb_.pause(1);
        const auto res = tb_.exec(from,
                                  fmt::format("odl perf {} --backend kernel --client {} --connect-timeout 60 -q --json {}",
                                              test, dev(from, to), args),
                                  540);
        tb_.wait_in(to, 30, "grep -q '^rc=' /tmp/run-srv.log");
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
            if (row.contains("cdf_us") && row["cdf_us"].is_array())
                for (const auto& v : row["cdf_us"])
                    if (v.is_number()) r.cdf.push_back(v.get<double>());
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
            const std::string on = rep_.on_key();
            if (a.workload.empty()) {
                if (a.metric == "messages_lost") {
                    double sum = 0;
                    for (const auto& w : rep_.workloads) {
                        if (!w.run || !w.lost) {
                            why = fmt::format("loss of workload {} not measured on {}", w.name, on);
                            break;
                        }
                        sum += double(*w.lost);
                    }
                    if (why.empty()) v = sum;
                } else if (a.metric == "frames_damaged" && rep_.frames_damaged) {
                    v = double(*rep_.frames_damaged);
                } else if (a.metric == "frames_damaged") {
                    why = fmt::format("frames_damaged is counted by a modelled cable; the {} path has none", on);
                } else if (a.metric == "link_down_noticed_us" && rep_.link_down_noticed_us) {
                    v = m::worst_link_down_notice(*rep_.link_down_noticed_us);  // as the model takes it
                } else {
                    why = fmt::format("scenario-wide {} is a model metric; the {} path does not measure it",
                                      a.metric, on);
                }
            } else {
                const auto it = std::find_if(rep_.workloads.begin(), rep_.workloads.end(),
                                             [&](const wl_result& w) { return w.name == a.workload; });
                if (it == rep_.workloads.end() || !it->run) {
                    why = "workload not run on " + on;
                } else {
                    const auto& w = *it;
                    std::optional<double> x;
                    if (a.metric == "p50_us") x = w.p50;
                    else if (a.metric == "p99_us") x = w.p99;
                    else if (a.metric == "mean_us") x = w.mean;
                    else if (a.metric == "max_us") x = w.max;
                    else if (a.metric == "gbps" && !m::is_collective(w.kind)) x = w.gbps;
                    else if (a.metric == "busbw_gbps" && m::is_collective(w.kind)) x = w.gbps;
                    else if (a.metric == "time_us") x = w.time_us;
                    else if (a.metric == "messages_lost" && w.lost) x = double(*w.lost);
                    else if (a.metric == "completed") x = w.completed ? 1 : 0;
                    if (x) v = x;
                    else why = fmt::format("{} not measured on {} by {}", a.metric, on, w.how);
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
        plugged_.assign(s_.cables.size(), true);
        if (o_.driver == "odl_tb5") tb_.load_driver();
        for (unsigned h = 0; h < tb_.host_count(); ++h) tb_.mark_kernel_log(h);
        progress(fmt::format("waiting for the link ({})", o_.driver == "tbnet" ? "thunderbolt0, ping" : "odl_tb5 login"));
        if (!wait_link(120)) throw target_error("the link did not come up within 120 s");
        rep_.link_seen = tb_.link_seen();
        progress("link up (Linux reports " + rep_.link_seen + "); replaying the timeline");
        // Set while the link is to come back before the next workload: ""
        // after a plug or host reset, the event after a retrain or degrade.
        std::optional<std::string> link_pending;
        for (std::size_t i = 0; i < s_.cables.size(); ++i) {
            if (s_.cables[i].plugged) continue;
            if (!tb_.can_cable()) throw target_error("the scenario starts with the cable unplugged, and " +
                                                      tb_.no_cable_reason());
            tb_.cable(unsigned(i), "unplug");
            plugged_[i] = false;
            note_applied(fmt::format("cable {} unplugged at 0 (plugged: false)", i));
        }
        // One ordered timeline: events and workload starts, at their times.
        struct item {
            double at_s;
            int order;
            std::size_t idx;
            bool event;
        };
        std::vector<item> items;
        // Bit errors need no link to come back: where the target applies
        // them, a clock of their own applies each at its time, inside a
        // running workload too (libodl resends what they cost, TCP under
        // thunderbolt_net likewise). Every other event waits for the
        // workload before it, which it would end.
        std::vector<std::size_t> bers;
        for (std::size_t i = 0; i < s_.events.size(); ++i) {
            if (s_.events[i].kind == m::event_kind::ber && tb_.can_link_events())
                bers.push_back(i);
            else
                items.push_back({s_.events[i].at.to_seconds(), 0, i, true});
        }
        for (std::size_t i = 0; i < s_.workloads.size(); ++i)
            items.push_back({s_.workloads[i].start.to_seconds(), 1, i, false});
        std::stable_sort(items.begin(), items.end(), [](const item& a, const item& b) {
            return a.at_s != b.at_s ? a.at_s < b.at_s : a.order < b.order;
        });
        const double t0 = tb_.clock_s();
        const std::string clock_name = tb_.clock_name();
        // A target that takes them ahead gets the ber events now, each at
        // its time on the run's clock; the others' come from a thread.
        std::vector<std::size_t> ahead;
        for (const std::size_t i : bers) {
            const auto& e = s_.events[i];
            if (tb_.schedule_link_event(e, t0 + e.at.to_seconds() * o_.time_scale)) {
                note_applied(fmt::format("ber cable {} at {:g} ms ({:g}) ({} t={:.1f} s)", e.cable,
                                         e.at.to_seconds() * 1e3, e.ber, clock_name, e.at.to_seconds() * o_.time_scale));
                ahead.push_back(i);
            }
        }
        if (!ahead.empty()) bers.clear();
        ber_clock clock(*this, bers, t0);
        for (const auto& it : items) {
            const double target = it.at_s * o_.time_scale;
            for (double left = target - (tb_.clock_s() - t0); left > 0; left = target - (tb_.clock_s() - t0)) {
                check_interrupt();
                tb_.pause(left);
            }
            const double now = tb_.clock_s() - t0;
            if (it.event) {
                const auto& e = s_.events[it.idx];
                const std::string what =
                    e.kind == m::event_kind::host_reset
                        ? fmt::format("host-reset host {} at {:g} ms", s_.hosts.at(e.host).name, e.at.to_seconds() * 1e3)
                        : fmt::format("{} cable {} at {:g} ms", event_name(e.kind), e.cable, e.at.to_seconds() * 1e3);
                if ((e.kind == m::event_kind::plug || e.kind == m::event_kind::unplug) && !tb_.can_cable()) {
                    progress(fmt::format("t={:.1f} s: {} SKIPPED ({})", now, what, tb_.no_cable_reason()));
                    rep_.not_applied.push_back(what + ": skipped: " + tb_.no_cable_reason());
                } else if (e.kind == m::event_kind::host_reset && tb_.can_reset()) {
                    // The host stays off for its `down`, scaled like every time.
                    const double off_s = e.down.to_seconds() * o_.time_scale;
                    progress(fmt::format("t={:.1f} s: {} ({} on {}, off for {:.1f} s)", now, what, tb_.reset_means(),
                                         vm(e.host), off_s));
                    tb_.reset(e.host, off_s);
                    link_pending = "";
                    note_applied(fmt::format("{} as {}, off for {:.1f} s ({} t={:.1f} s)", what,
                                                       tb_.reset_means(), off_s, clock_name, now));
                } else if (e.kind == m::event_kind::plug || e.kind == m::event_kind::unplug) {
                    progress(fmt::format("t={:.1f} s: {}", now, what));
                    tb_.cable(e.cable, event_name(e.kind));
                    if (e.cable < plugged_.size()) plugged_[e.cable] = e.kind == m::event_kind::plug;
                    if (e.kind == m::event_kind::plug)
                        link_pending = "";
                    else
                        link_pending.reset();
                    note_applied(fmt::format("{} ({} t={:.1f} s)", what, clock_name, now));
                } else if (e.kind != m::event_kind::host_reset && tb_.can_link_events()) {
                    // Retrain or degrade (ber goes to the ber clock).
                    std::string full = what;
                    if (e.kind == m::event_kind::degrade)
                        full += fmt::format(" to {} x{}", m::to_string(e.gen), e.lanes);
                    progress(fmt::format("t={:.1f} s: {}", now, full));
                    tb_.link_event(e);
                    note_applied(fmt::format("{} ({} t={:.1f} s)", full, clock_name, now));
                    link_pending = full;
                } else {
                    progress(fmt::format("t={:.1f} s: {} NOT applied ({})", now, what, tb_.no_event_reason()));
                    rep_.not_applied.push_back(what + ": " + tb_.no_event_reason());
                }
                continue;
            }
            const auto& w = s_.workloads[it.idx];
            auto& r = rep_.workloads[it.idx];
            r.started_s = now;
            if (link_pending) {
                link_back(*link_pending);
                link_pending.reset();
                r.started_s = tb_.clock_s() - t0;
            }
            progress(fmt::format("t={:.1f} s: workload {} ({})", r.started_s, w.name, m::to_string(w.kind)));
            run_workload(w, r);
            progress(fmt::format("workload {} {} in {:.1f} s", w.name,
                                 !r.run         ? "SKIPPED: " + r.error
                                 : r.completed ? std::string("done")
                                               : "FAILED: " + r.error,
                                 r.wall_s));
        }
        // A retrain or degrade at the end: what Linux made of it.
        if (link_pending && !link_pending->empty()) link_back(*link_pending);
        clock.finish();
        // Kernel logs since the run began, as the vm tests check them.
        bool clean = true;
        for (unsigned h = 0; h < tb_.host_count(); ++h)
            if (!tb_.kernel_log_problems(h).empty()) clean = false;
        rep_.kernel_logs_clean = clean;
        if (const auto mc = tb_.modelled_cables()) {
            rep_.frames_damaged = mc->frames_damaged;
            rep_.link_down_noticed_us = mc->link_down_noticed_us;
        }
        evaluate();
    }

private:
    /// Applies the scenario's ber events at their (scaled) times on a
    /// thread of its own while the timeline runs workloads. finish() waits
    /// for the rest and passes on its failure; leaving the scope any other
    /// way stops it first.
    class ber_clock {
    public:
        ber_clock(runner& r, std::vector<std::size_t> events, double t0) {
            if (events.empty()) return;
            thread_ = std::thread([this, &r, events = std::move(events), t0] {
                try {
                    for (const std::size_t i : events) {
                        const auto& e = r.s_.events[i];
                        const double target = e.at.to_seconds() * r.o_.time_scale;
                        for (;;) {
                            const double now = r.tb_.clock_s() - t0;
                            if (now >= target) break;
                            if (stop_) return;
                            check_interrupt();
                            std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.02, target - now)));
                        }
                        const double now = r.tb_.clock_s() - t0;
                        const std::string what = fmt::format("ber cable {} at {:g} ms ({:g})", e.cable,
                                                             e.at.to_seconds() * 1e3, e.ber);
                        progress(fmt::format("t={:.1f} s: {}", now, what));
                        r.tb_.link_event(e);
                        r.note_applied(fmt::format("{} ({} t={:.1f} s)", what, r.tb_.clock_name(), now));
                    }
                } catch (...) {
                    error_ = std::current_exception();
                }
            });
        }
        ~ber_clock() {
            stop_ = true;
            if (thread_.joinable()) thread_.join();
        }
        ber_clock(const ber_clock&) = delete;
        ber_clock& operator=(const ber_clock&) = delete;
        void finish() {
            if (thread_.joinable()) thread_.join();
            if (error_) std::rethrow_exception(error_);
        }

    private:
        std::thread thread_;
        std::atomic<bool> stop_{false};
        std::exception_ptr error_;
    };

    /// The report's list of applied events, in the order they were applied
    /// (the ber clock adds to it from its thread).
    void note_applied(std::string s) {
        const std::lock_guard<std::mutex> lock(applied_mu_);
        rep_.applied.push_back(std::move(s));
    }

    const vm_run_opts& o_;
    const m::scenario& s_;
    target& tb_;
    report& rep_;
    std::vector<bool> plugged_;  ///< per cable, as the timeline left it
    std::mutex applied_mu_;
};


}  // namespace

unsigned port_between(const m::scenario& s, unsigned host, unsigned peer) {
    const int c = cable_between(s, host, peer);
    if (c < 0) return 0;
    const auto& k = s.cables[std::size_t(c)];
    return odl::model::linkd::lane_adapter_of_port(k.host_a == host ? k.port_a : k.port_b);
}

int cable_between(const m::scenario& s, unsigned a, unsigned b) {
    for (std::size_t i = 0; i < s.cables.size(); ++i) {
        const auto& c = s.cables[i];
        if ((c.host_a == a && c.host_b == b) || (c.host_a == b && c.host_b == a)) return int(i);
    }
    return -1;
}

void refuse(const std::string& where, const std::string& msg) {
    fmt::print(stderr, "odl: run: --on {}: {}\n", where, msg);
    std::exit(2);
}

std::string pair_shape_error(const m::scenario& s, const std::string& what) {
    if (s.hosts.size() != 2)
        return fmt::format("{} has {} hosts; {} on one cable. Replay it with --on model.", s.name, s.hosts.size(), what);
    if (s.cables.size() != 1) return fmt::format("{} has {} cables; {} on one cable", s.name, s.cables.size(), what);
    for (const auto& w : s.workloads)
        if (!m::is_collective(w.kind) && w.hosts.size() >= 2 && w.hosts[0] == w.hosts[1])
            return fmt::format("workload {}: from and to are the same host", w.name);
    return "";
}

void replay(const vm_run_opts& o, const m::scenario& s, target& tb, report& rep) { runner(o, s, tb, rep).run(); }

void add_workloads(const m::scenario& s, report& rep) {
    for (const auto& w : s.workloads) {
        wl_result r;
        r.name = w.name;
        r.kind = w.kind;
        r.size = w.size;
        r.count = w.count;
        rep.workloads.push_back(r);
    }
}

void fill_unevaluated(const m::scenario& s, report& rep) {
    if (rep.error.empty() || !rep.assertions.empty()) return;
    for (const auto& a : s.assertions)
        rep.assertions.push_back({fmt::format("{}{}{}", a.workload, a.workload.empty() ? "" : ".", a.metric),
                                  "NOT EVALUATED", "the run did not finish", std::nullopt});
}

namespace {

std::string xml_escape(const std::string& s) {
    std::string o;
    for (char c : s) {
        switch (c) {
        case '&': o += "&amp;"; break;
        case '<': o += "&lt;"; break;
        case '>': o += "&gt;"; break;
        case '"': o += "&quot;"; break;
        default:
            if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') o += ' ';
            else o += c;
        }
    }
    return o;
}

}  // namespace

std::string report::to_junit() const {
    struct tc {
        std::string name, failure, skipped;
        double time = 0;
    };
    std::vector<tc> cases;
    for (const auto& w : workloads) {
        tc c{"workload " + w.name, "", "", w.wall_s};
        if (!w.run) c.skipped = "not run on " + on + (w.error.empty() ? "" : ": " + w.error);
        else if (!w.completed) c.failure = w.error.empty() ? "did not complete" : w.error;
        cases.push_back(c);
    }
    for (const auto& a : assertions) {
        tc c{"assert " + a.text, "", "", 0};
        if (a.status == "FAIL") c.failure = a.text;
        else if (a.status != "PASS") c.skipped = a.why.empty() ? a.status : a.why;
        cases.push_back(c);
    }
    if (kernel_logs_clean) cases.push_back({"kernel logs clean", *kernel_logs_clean ? "" : "WARNING/BUG/Oops found", "", 0});
    if (!error.empty()) cases.push_back({"run", error, "", wall_s});
    unsigned failures = 0, skipped = 0;
    for (const auto& c : cases) {
        failures += !c.failure.empty();
        skipped += !c.skipped.empty();
    }
    std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    x += fmt::format("<testsuites><testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n",
                     xml_escape(scenario + " on " + on), cases.size(), failures, skipped, wall_s);
    x += fmt::format("<properties><property name=\"kernel\" value=\"{}\"/><property name=\"driver\" value=\"{}\"/>"
                     "<property name=\"link_seen\" value=\"{}\"/></properties>\n",
                     xml_escape(kernel), xml_escape(driver), xml_escape(link_seen));
    for (const auto& c : cases) {
        x += fmt::format("  <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"", xml_escape(scenario),
                         xml_escape(c.name), c.time);
        if (!c.failure.empty())
            x += fmt::format("><failure message=\"{}\"/></testcase>\n", xml_escape(c.failure));
        else if (!c.skipped.empty())
            x += fmt::format("><skipped message=\"{}\"/></testcase>\n", xml_escape(c.skipped));
        else
            x += "/>\n";
    }
    return x + "</testsuite></testsuites>\n";
}

void write_report(const report& rep, const std::string& dir, bool json_out, bool print) {
    const auto put = [&](const std::string& name, const std::string& body) {
        std::ofstream f(dir + "/" + name, std::ios::binary);
        f << body;
        if (!f) fmt::print(stderr, "odl: run: cannot write {}/{}\n", dir, name);
    };
    put("report.json", rep.to_json().dump(2) + "\n");
    put("report.txt", rep.to_text());
    put("junit.xml", rep.to_junit());
    if (!print) return;
    if (json_out)
        fmt::print("{}\n", rep.to_json().dump(2));
    else
        fmt::print("{}", rep.to_text());
}

}  // namespace odl::cli::pair
