// SPDX-License-Identifier: MIT
// Scenario replay on the model: builds the system, drives events and
// workloads, checks assertions.
#include "odl/model/scenario/runner.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include <fmt/format.h>

#include "odl/model/scenario/system.h"

namespace odl::model {

using sc_core::sc_time;
using sc_core::SC_MS;
using sc_core::SC_US;

double percentile(std::vector<double> v, double p) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    const double rank = std::ceil(p / 100.0 * static_cast<double>(v.size()));
    const std::size_t i = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
    return v[std::min(i, v.size() - 1)];
}

namespace {

constexpr std::uint32_t k_tag_shift = 24;  // tag = workload << 24 | sequence

/// Per-run state shared by the workload drivers.
struct replay {
    const scenario& s;
    system_model& sys;
    std::vector<workload_result>& res;
    sc_time pingpong_timeout;
    /// Message handlers per (host, workload).
    std::vector<std::vector<std::function<void(unsigned port, std::uint32_t seq, std::uint64_t)>>> rx;

    unsigned port_to(unsigned from, unsigned to) const {
        for (const auto& c : s.cables) {
            if (c.host_a == from && c.host_b == to) return c.port_a;
            if (c.host_b == from && c.host_a == to) return c.port_b;
        }
        return 0;
    }
    void send(unsigned host, unsigned to, unsigned w, std::uint32_t seq, std::uint64_t bytes) {
        ++res[w].messages_sent;
        sys.hosts[host].drv->send(port_to(host, to), bytes, (w << k_tag_shift) | seq);
    }
    sc_time now() const { return scheduler::now(); }
};

void start_pingpong(replay& r, unsigned w) {
    const scenario_workload& wl = r.s.workloads[w];
    const unsigned a = wl.hosts[0], b = wl.hosts[1];
    struct state {
        unsigned iter = 0;
        sc_time sent;
    };
    auto st = std::make_shared<state>();
    auto next = std::make_shared<std::function<void()>>();
    *next = [&r, w, a, b, st, next, count = wl.count, size = wl.size] {
        if (st->iter >= count) {
            r.res[w].completed = true;
            return;
        }
        const unsigned it = st->iter;
        st->sent = r.now();
        r.send(a, b, w, it, size);
        // A lost ping or pong must not stop the run: give up after a timeout.
        const sc_time limit = r.pingpong_timeout + sc_time(8.0 * static_cast<double>(size), sc_core::SC_NS);
        r.sys.sched.after(limit, [&r, w, st, next, it] {
            if (st->iter != it) return;
            ++r.res[w].messages_lost;
            ++st->iter;
            (*next)();
        });
    };
    r.rx[b][w] = [&r, w, a, b, size = wl.size](unsigned, std::uint32_t seq, std::uint64_t) {
        r.send(b, a, w, seq, size);
    };
    r.rx[a][w] = [&r, w, st, next](unsigned, std::uint32_t seq, std::uint64_t) {
        if (seq != st->iter) return;  // a late pong after a timeout
        ++r.res[w].messages_received;
        r.res[w].latency_us.push_back((r.now() - st->sent).to_seconds() * 1e6 / 2);
        ++st->iter;
        (*next)();
    };
    (*next)();
}

struct stream_state {
    sc_time start, last;
    std::uint64_t bytes = 0;
    std::uint64_t want = 0;  ///< messages, both directions for bidir
};

/// Queues every message at once; bidir runs two of these on one state, so
/// its rate is the sum of both directions.
void start_stream(replay& r, unsigned w, unsigned from, unsigned to,
                  const std::shared_ptr<stream_state>& st) {
    const scenario_workload& wl = r.s.workloads[w];
    st->start = r.now();
    st->want += wl.count;
    r.rx[to][w] = [&r, w, st](unsigned, std::uint32_t, std::uint64_t bytes) {
        st->bytes += bytes;
        st->last = r.now();
        workload_result& res = r.res[w];
        res.gbps = static_cast<double>(st->bytes) * 8 / (st->last - st->start).to_seconds() / 1e9;
        if (++res.messages_received == st->want) res.completed = true;
    };
    for (unsigned i = 0; i < wl.count; ++i) r.send(from, to, w, i, wl.size);
}

/// Ring collectives as NCCL runs them: all-reduce is a reduce-scatter and an
/// all-gather, 2 (n - 1) steps of size / n; all-gather is n - 1 such steps
/// (size: the gathered output). busbw as nccl-tests computes it.
void start_ring(replay& r, unsigned w) {
    const scenario_workload& wl = r.s.workloads[w];
    const unsigned n = static_cast<unsigned>(wl.hosts.size());
    const bool reduce = wl.kind == workload_kind::allreduce;
    const unsigned steps = reduce ? 2 * (n - 1) : n - 1;
    const double bus_factor = (reduce ? 2.0 : 1.0) * (n - 1) / n;
    const std::uint64_t chunk = (wl.size + n - 1) / n;
    struct state {
        std::vector<unsigned> step;      // per ring position: steps received
        unsigned done = 0, iter = 0;
        sc_time started;
    };
    auto st = std::make_shared<state>();
    auto begin = std::make_shared<std::function<void()>>();
    *begin = [&r, w, n, st, chunk, hosts = wl.hosts] {
        st->step.assign(n, 0);
        st->done = 0;
        st->started = r.now();
        for (unsigned i = 0; i < n; ++i) r.send(hosts[i], hosts[(i + 1) % n], w, 0, chunk);
    };
    for (unsigned i = 0; i < n; ++i) {
        const unsigned host = wl.hosts[i], right = wl.hosts[(i + 1) % n];
        r.rx[host][w] = [&r, w, i, host, right, steps, chunk, st, begin, count = wl.count,
                         size = wl.size, n, bus_factor](unsigned, std::uint32_t, std::uint64_t) {
            workload_result& res = r.res[w];
            ++res.messages_received;
            const unsigned s = ++st->step[i];
            if (s < steps) {
                r.send(host, right, w, s, chunk);  // forward the reduced chunk
                return;
            }
            if (++st->done < n) return;
            const double us = (r.now() - st->started).to_seconds() * 1e6;
            res.latency_us.push_back(us);
            res.time_us = percentile(res.latency_us, 50);
            const double algbw = static_cast<double>(size) * 8 / (res.time_us * 1e3);
            res.busbw_gbps = algbw * bus_factor;
            if (++st->iter >= count) {
                res.completed = true;
                return;
            }
            (*begin)();
        };
    }
    (*begin)();
}

void apply_event(replay& r, const scenario_event& e, const std::shared_ptr<std::vector<sc_time>>& downs) {
    cable* c = e.kind == event_kind::host_reset ? nullptr : r.sys.cables[e.cable].get();
    switch (e.kind) {
    case event_kind::plug: c->plug(); break;
    case event_kind::unplug:
        downs->push_back(r.now());
        c->unplug();
        break;
    case event_kind::retrain:
        downs->push_back(r.now());
        c->retrain();
        break;
    case event_kind::degrade:
        downs->push_back(r.now());
        c->degrade(e.gen, e.lanes);
        break;
    case event_kind::ber:
        r.sys.log.event(c->name(), fmt::format("ber {:g}", e.ber));
        c->set_ber(e.ber);
        break;
    case event_kind::host_reset: {
        auto& h = r.sys.hosts[e.host];
        r.sys.log.event(h.name, "host reset");
        h.dev->reset();
        r.sys.sched.after(e.down, [&h] { h.drv->restart(nullptr); });
        break;
    }
    }
}

}  // namespace

run_result run_scenario(const scenario& s, const run_options& opt) {
    const calibration cal =
        load_calibration(s.calibration.empty() ? default_calibration_path() : s.calibration);
    return run_scenario(s, cal, opt);
}

run_result run_scenario(const scenario& s, const calibration& cal, const run_options& opt) {
    std::vector<host_spec> hs;
    for (const auto& h : s.hosts) {
        host_spec spec;
        spec.name = h.name;
        spec.plat = cal.get(opt.platform_override.empty() ? h.platform : opt.platform_override);
        if (h.interrupts) spec.plat.host.interrupts = *h.interrupts;
        if (h.throttle) spec.plat.host.throttle = *h.throttle;
        spec.ports = std::max(1u, h.ports);
        spec.copy_limit = std::max<std::uint32_t>(opt.copy_limit, 32);
        spec.irq.impl = opt.nhi_override ? *opt.nhi_override : h.nhi;
        hs.push_back(spec);
    }
    std::vector<cable_spec> cs;
    for (const auto& c : s.cables) {
        cable_spec spec;
        spec.host_a = c.host_a;
        spec.port_a = c.port_a;
        spec.host_b = c.host_b;
        spec.port_b = c.port_b;
        spec.cfg = c.cfg;
        spec.plugged = c.plugged;
        cs.push_back(spec);
    }
    run_result out;
    out.name = s.name;
    out.seed = s.seed;
    {
        system_model sys(hs, cs, cal.link, s.seed, opt.trace_frames);
        std::vector<workload_result> res(s.workloads.size());
        for (std::size_t i = 0; i < res.size(); ++i) {
            res[i].name = s.workloads[i].name;
            res[i].kind = s.workloads[i].kind;
            res[i].size = s.workloads[i].size;
            res[i].count = s.workloads[i].count;
        }
        replay r{s, sys, res, opt.pingpong_timeout, {}};
        r.rx.assign(s.hosts.size(),
                    std::vector<std::function<void(unsigned, std::uint32_t, std::uint64_t)>>(
                        s.workloads.size()));
        auto downs = std::make_shared<std::vector<sc_time>>();
        auto notices = std::make_shared<std::vector<sc_time>>();
        for (unsigned h = 0; h < sys.hosts.size(); ++h) {
            sys.hosts[h].drv->on_message([&r, h](unsigned port, std::uint32_t tag, std::uint64_t bytes) {
                const unsigned w = tag >> k_tag_shift;
                if (w < r.rx[h].size() && r.rx[h][w]) r.rx[h][w](port, tag & 0xffffffu, bytes);
            });
            sys.hosts[h].drv->on_link([notices](unsigned, bool up) {
                if (!up) notices->push_back(scheduler::now());
            });
        }
        for (const auto& e : s.events)
            sys.sched.at(e.at, [&r, &e, downs] { apply_event(r, e, downs); });
        sys.start([&] {
            for (unsigned w = 0; w < s.workloads.size(); ++w) {
                const scenario_workload& wl = s.workloads[w];
                sys.sched.after(wl.start, [&r, w, &wl] {
                    switch (wl.kind) {
                    case workload_kind::pingpong: start_pingpong(r, w); break;
                    case workload_kind::stream:
                        start_stream(r, w, wl.hosts[0], wl.hosts[1], std::make_shared<stream_state>());
                        break;
                    case workload_kind::bidir: {
                        auto st = std::make_shared<stream_state>();
                        start_stream(r, w, wl.hosts[0], wl.hosts[1], st);
                        start_stream(r, w, wl.hosts[1], wl.hosts[0], st);
                        break;
                    }
                    case workload_kind::allreduce:
                    case workload_kind::allgather: start_ring(r, w); break;
                    }
                });
            }
        });
        sys.run_until(s.duration);

        // Results.
        std::uint64_t lost = 0, damaged = 0;
        for (auto& w : res) {
            if (w.kind == workload_kind::stream || w.kind == workload_kind::bidir)
                w.messages_lost = w.messages_sent - w.messages_received;
            if (w.kind == workload_kind::pingpong) {
                w.p50_us = percentile(w.latency_us, 50);
                w.p90_us = percentile(w.latency_us, 90);
                w.p99_us = percentile(w.latency_us, 99);
                w.p999_us = percentile(w.latency_us, 99.9);
                w.max_us = percentile(w.latency_us, 100);
                double sum = 0;
                for (double v : w.latency_us) sum += v;
                w.mean_us = w.latency_us.empty() ? 0 : sum / static_cast<double>(w.latency_us.size());
            }
        }
        for (auto& h : sys.hosts) lost += h.drv->stats().messages_lost;
        for (const auto& t : *downs) {
            auto it = std::lower_bound(notices->begin(), notices->end(), t);
            out.link_down_noticed_us.push_back(it == notices->end() ? -1.0
                                                                    : (*it - t).to_seconds() * 1e6);
        }
        nlohmann::json counters;
        for (std::size_t i = 0; i < sys.cables.size(); ++i) {
            const auto& st = sys.cables[i]->stats();
            damaged += st.frames_damaged;
            counters["cables"].push_back({{"frames_sent", st.frames_sent},
                                          {"frames_delivered", st.frames_delivered},
                                          {"frames_lost_in_flight", st.frames_lost_in_flight},
                                          {"frames_refused_down", st.frames_refused_down},
                                          {"errors_corrected", st.errors_corrected},
                                          {"packets_damaged", st.packets_damaged},
                                          {"frames_damaged", st.frames_damaged}});
        }
        for (auto& h : sys.hosts) {
            const auto& d = h.drv->stats();
            const auto& n = h.dev->stats();
            counters["hosts"][h.name] = {{"frames_sent", d.frames_sent},
                                         {"frames_received", d.frames_received},
                                         {"frames_crc_error", d.frames_crc_error},
                                         {"messages_lost", d.messages_lost},
                                         {"interrupts", d.interrupts},
                                         {"ctl_requests", d.ctl_requests},
                                         {"ctl_errors", d.ctl_errors},
                                         {"tx_stalls", n.tx_stalls},
                                         {"rx_dropped", n.rx_dropped}};
        }
        counters["messages_lost"] = lost;
        counters["frames_damaged"] = damaged;
        out.counters = counters;
        out.workloads = std::move(res);
        out.warnings = sys.log.warnings();
        out.trace = sys.log.text();
        out.events = sys.sched.events_run();
        out.simulated_us = sc_core::sc_time_stamp().to_seconds() * 1e6;
    }
    for (const auto& a : s.assertions) {
        assertion_result ar;
        ar.value = out.metric(a.workload, a.metric);
        const bool measured = out.measured(a.workload, a.metric);
        ar.passed = measured && (!a.max || ar.value <= *a.max) && (!a.min || ar.value >= *a.min);
        std::string bound;
        if (a.min) bound += fmt::format(">= {:g}", *a.min);
        if (a.max) bound += fmt::format("{}<= {:g}", bound.empty() ? "" : " and ", *a.max);
        ar.text = measured ? fmt::format("{}{}{} {} (got {:g})", a.workload, a.workload.empty() ? "" : ".",
                                         a.metric, bound, ar.value)
                           : fmt::format("{}.{} {} (no measurement: nothing of the workload arrived)",
                                         a.workload, a.metric, bound);
        out.assertions.push_back(ar);
    }
    return out;
}

bool run_result::passed() const {
    for (const auto& a : assertions)
        if (!a.passed) return false;
    return true;
}

double worst_link_down_notice(const std::vector<double>& noticed_us) {
    double worst = 0;
    for (double v : noticed_us) worst = v < 0 ? 1e30 : std::max(worst, v);
    return worst;
}

bool run_result::measured(const std::string& workload, const std::string& m) const {
    // A latency, rate or time of no sample read as 0 and passed every max.
    if (workload.empty() || m == "messages_lost" || m == "completed") return true;
    for (const auto& w : workloads) {
        if (w.name != workload) continue;
        return m == "gbps" ? w.messages_received > 0 : !w.latency_us.empty();
    }
    return false;
}

double run_result::metric(const std::string& workload, const std::string& m) const {
    if (workload.empty()) {
        if (m == "messages_lost") return counters.value("messages_lost", 0.0);
        if (m == "frames_damaged") return counters.value("frames_damaged", 0.0);
        if (m == "warnings") return static_cast<double>(warnings.size());
        if (m == "link_down_noticed_us") return worst_link_down_notice(link_down_noticed_us);
        return 0;
    }
    for (const auto& w : workloads) {
        if (w.name != workload) continue;
        if (m == "p50_us") return w.p50_us;
        if (m == "p90_us") return w.p90_us;
        if (m == "p99_us") return w.p99_us;
        if (m == "p999_us") return w.p999_us;
        if (m == "mean_us") return w.mean_us;
        if (m == "max_us") return w.max_us;
        if (m == "gbps") return w.gbps;
        if (m == "time_us") return w.time_us;
        if (m == "busbw_gbps") return w.busbw_gbps;
        if (m == "messages_lost") return static_cast<double>(w.messages_lost);
        if (m == "completed") return w.completed ? 1 : 0;
    }
    return 0;
}

}  // namespace odl::model
