// SPDX-License-Identifier: MIT
// The reduced link model and its fit to the full model: see
// odl/model/reduced/pipeline.h and docs/sim.md ("Pipeline timing").
#include "odl/model/reduced/pipeline.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "odl/model/core/scheduler.h"
#include "odl/wire/frame.h"

namespace odl::model {

namespace {

sc_core::sc_time ns(double v) { return sc_core::sc_time(std::max(v, 0.0), sc_core::SC_NS); }

double median(std::vector<double> v) {
    if (v.empty()) throw std::runtime_error("pipeline fit: the full model delivered no frame");
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// @y at @x, linear between the points of @xs (clamped at the ends).
double interp(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
    if (xs.empty()) return 0;
    if (x <= xs.front()) return ys.front();
    if (x >= xs.back()) return ys.back();
    const auto it = std::upper_bound(xs.begin(), xs.end(), x);
    const std::size_t i = std::size_t(it - xs.begin());
    const double f = (x - xs[i - 1]) / (xs[i] - xs[i - 1]);
    return ys[i - 1] + f * (ys[i] - ys[i - 1]);
}

}  // namespace

double pipeline_direction::lat_at(double bytes) const { return interp(len, lat_ns, bytes); }

double pipeline_direction::svc_at(double bytes) const { return interp(len, svc_ns, bytes); }

std::string pipeline_params::summary() const {
    std::string s;
    for (int d = 0; d < 2; ++d) {
        const auto& p = dir[d];
        if (p.len.empty()) continue;
        const double big = p.len.back();
        s += fmt::format("{}{}: latency {:.0f}..{:.0f} ns, bottleneck {:.1f}..{:.1f} ns a frame ({:.0f}..{:.0f} B), "
                         "message +{:.1f} ns",
                         d ? "; " : "", d ? "B->A" : "A->B", p.lat_at(0), p.lat_at(big), p.svc_at(0),
                         p.svc_at(big), 0.0, big, p.msg_ns);
    }
    return s;
}

std::vector<double> full_model_due_ns(const std::vector<host_spec>& hosts, const cable_spec& cable,
                                      const link_calibration& link, std::uint64_t seed,
                                      const std::vector<pipeline_post>& posts) {
    if (hosts.size() != 2) throw std::invalid_argument("pipeline fit: two hosts, A and B");
    std::vector<host_spec> hs = hosts;
    for (auto& h : hs) h.copy_limit = ODL_FRAME_HDR_BYTES;  // as odl-linkd --sim's NHIs
    system_model sys(hs, {cable}, link, seed, false);
    std::vector<double> due(posts.size(), -1.0);
    sc_core::sc_time t0;
    for (unsigned h = 0; h < 2; ++h)
        sys.hosts[h].drv->on_frame([&](unsigned, std::uint32_t tag, const sc_core::sc_time& d) {
            if (tag < due.size()) due[tag] = (d - t0).to_seconds() * 1e9;
        });
    bool ready = false;
    sys.start([&ready] { ready = true; });
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    for (int i = 0; i < 1000 && !ready; ++i) sys.run_until(t += sc_core::sc_time(100, sc_core::SC_US));
    if (!ready) throw std::runtime_error("pipeline fit: the model's host drivers did not come up");
    t0 = t;
    sc_core::sc_time last = t0;
    for (std::size_t i = 0; i < posts.size(); ++i) {
        const pipeline_post& p = posts[i];
        if (p.from != 0 && p.from != 1) throw std::invalid_argument("pipeline post: from must be 0 or 1");
        auto& drv = *sys.hosts[unsigned(p.from)].drv;
        const auto tag = static_cast<std::uint32_t>(i);
        sys.sched.at(t0 + p.at, [&drv, p, tag] { drv.send_frame(pipeline_lane_port, p.payload, tag, p.som, p.eom); });
        last = std::max(last, t0 + p.at);
    }
    sys.run_until(last + sc_core::sc_time(100, sc_core::SC_MS));
    return due;
}

pipeline_params fit_pipeline(const std::vector<host_spec>& hosts, const cable_spec& cable,
                             const link_calibration& link, std::uint64_t seed) {
    // Per direction and length: single frames far apart (latency), then a
    // stream of one-frame messages and a stream of one long message, all
    // posted at once (the bottleneck's period, from the second half).
    constexpr unsigned k_alone = 16, k_stream = 400;
    std::vector<std::uint32_t> lens;  // 0 .. the largest payload, in 8 steps
    for (std::uint32_t i = 0; i <= 8; ++i) lens.push_back(ODL_FRAME_MAX_PAYLOAD * i / 8);
    const sc_core::sc_time apart(200, sc_core::SC_US), window(20, sc_core::SC_MS);
    struct probe {
        int dir;
        std::uint32_t len;
        int kind;  // 0 alone, 1 one-frame messages, 2 one message
        std::size_t first, count;
    };
    std::vector<pipeline_post> posts;
    std::vector<probe> probes;
    sc_core::sc_time at = sc_core::SC_ZERO_TIME;
    for (int d = 0; d < 2; ++d)
        for (std::uint32_t len : lens)
            for (int kind = 0; kind < 3; ++kind) {
                const unsigned n = kind == 0 ? k_alone : k_stream;
                probes.push_back({d, len, kind, posts.size(), n});
                for (unsigned i = 0; i < n; ++i) {
                    pipeline_post p;
                    p.from = d;
                    p.payload = len;
                    p.at = kind == 0 ? at + apart * double(i) : at;
                    if (kind == 2) {
                        p.som = i == 0;
                        p.eom = i + 1 == n;
                    }
                    posts.push_back(p);
                }
                at += kind == 0 ? apart * double(k_alone) : window;
            }
    const std::vector<double> due = full_model_due_ns(hosts, cable, link, seed, posts);
    pipeline_params out;
    for (int d = 0; d < 2; ++d) {
        auto& o = out.dir[d];
        double extra = 0;
        unsigned n_extra = 0;
        for (std::uint32_t len : lens) {
            double lat = 0, p11 = 0, p00 = 0;
            for (const probe& pr : probes) {
                if (pr.dir != d || pr.len != len) continue;
                std::vector<double> v;
                if (pr.kind == 0) {
                    for (std::size_t i = pr.first; i < pr.first + pr.count; ++i)
                        if (due[i] >= 0) v.push_back(due[i] - posts[i].at.to_seconds() * 1e9);
                    lat = median(v);
                } else {
                    // Steady state: the second half's mean gap (the middle
                    // frames only, for the long message). Not the median:
                    // a stream can come in bursts (the wire's credits).
                    const std::size_t a = pr.first + pr.count / 2, b = pr.first + pr.count - 2;
                    if (due[a] < 0 || due[b] < 0 || b <= a)
                        throw std::runtime_error("pipeline fit: the full model lost frames of a stream");
                    (pr.kind == 1 ? p11 : p00) = (due[b] - due[a]) / double(b - a);
                }
            }
            o.len.push_back(len);
            o.lat_ns.push_back(lat);
            o.svc_ns.push_back(p00);
            extra += p11 - p00;
            ++n_extra;
        }
        o.msg_ns = std::max(0.0, extra / double(n_extra));
        // The receiving host's wake-up, from its profile: the interrupt
        // latency and the median of its wake noise.
        const host_costs& rx = hosts[std::size_t(1 - d)].plat.host;
        if (rx.interrupts)
            o.wake_ns = (rx.irq_latency + (rx.noise.wake.probability >= 0.5 ? rx.noise.wake.median
                                                                               : sc_core::SC_ZERO_TIME))
                            .to_seconds() *
                        1e9;
    }
    return out;
}

sc_core::sc_time pipeline_state::due(int from, const sc_core::sc_time& now, std::uint32_t payload, bool som,
                                     bool eom, sc_core::sc_time* left) {
    const pipeline_direction& d = m_p.dir[from];
    const double len = payload;
    // A message's own costs, half at each end: on the bottleneck for its
    // first and last frame, off the latency of the frames between.
    const double marks = (som ? 0.5 : 0.0) + (eom ? 0.5 : 0.0);
    const sc_core::sc_time start = std::max(now, m_free[from]);
    m_free[from] = start + ns(d.svc_at(len) + marks * d.msg_ns);
    // Arrived, not yet reaped: the handler of the first frame (this one's
    // or an earlier one's) that runs after it reaps it.
    const sc_core::sc_time base =
        std::max(start + ns(d.lat_at(len) - (1.0 - marks) * d.msg_ns - d.wake_ns), m_base[from]);
    m_base[from] = base;
    auto& hs = m_handlers[from];
    hs.push_back(base + ns(d.wake_ns));
    while (hs.front() < base) hs.pop_front();
    const sc_core::sc_time due = std::max(hs.front(), m_last[from]);
    m_last[from] = due;
    m_left[from] = std::max(m_left[from], std::min(m_free[from], due));
    if (left) *left = m_left[from];
    return due;
}

std::vector<double> pipeline_due_ns(const pipeline_params& p, const std::vector<pipeline_post>& posts) {
    pipeline_state st(p);
    std::vector<double> due(posts.size());
    for (std::size_t i = 0; i < posts.size(); ++i) {
        const pipeline_post& q = posts[i];
        if (q.from != 0 && q.from != 1) throw std::invalid_argument("pipeline post: from must be 0 or 1");
        if (i && q.at < posts[i - 1].at) throw std::invalid_argument("pipeline posts: not in time order");
        due[i] = st.due(q.from, q.at, q.payload, q.som, q.eom).to_seconds() * 1e9;
    }
    return due;
}

namespace {

/// A message of @bytes from @from at @at: its frames, all put in at once.
std::size_t message(std::vector<pipeline_post>& out, int from, const sc_core::sc_time& at, std::uint64_t bytes) {
    const std::uint64_t n = std::max<std::uint64_t>(1, (bytes + ODL_FRAME_MAX_PAYLOAD - 1) / ODL_FRAME_MAX_PAYLOAD);
    for (std::uint64_t i = 0; i < n; ++i) {
        pipeline_post p;
        p.from = from;
        p.at = at;
        p.payload = std::uint32_t(std::min<std::uint64_t>(ODL_FRAME_MAX_PAYLOAD, bytes - i * ODL_FRAME_MAX_PAYLOAD));
        p.som = i == 0;
        p.eom = i + 1 == n;
        out.push_back(p);
    }
    return std::size_t(n);
}

/// Median one-way time of messages of @frames frames each, sent one at a
/// time: the last frame's due time minus the message's post time.
double one_way_ns(const std::vector<double>& due, const std::vector<pipeline_post>& posts, std::size_t frames) {
    std::vector<double> v;
    for (std::size_t i = 0; i + frames <= posts.size(); i += frames)
        if (due[i + frames - 1] >= 0) v.push_back(due[i + frames - 1] - posts[i].at.to_seconds() * 1e9);
    return v.empty() ? 0 : median(v);
}

/// Payload Gb/s of @from's frames between the first delivery and the last.
double gbps(const std::vector<double>& due, const std::vector<pipeline_post>& posts, int from) {
    double first = -1, last = -1, bytes = 0;
    for (std::size_t i = 0; i < posts.size(); ++i) {
        if (posts[i].from != from || due[i] < 0) continue;
        if (first < 0)
            first = due[i];
        else
            bytes += posts[i].payload;
        last = std::max(last, due[i]);
    }
    return last > first ? bytes * 8 / (last - first) : 0;
}

}  // namespace

const pipeline_check_row& pipeline_check::worst() const {
    if (rows.empty()) throw std::logic_error("pipeline check: no rows");
    return *std::max_element(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
        return std::abs(a.error()) < std::abs(b.error());
    });
}

pipeline_check check_pipeline(const std::vector<host_spec>& hosts, const cable_spec& cable,
                              const link_calibration& link, std::uint64_t seed, const pipeline_params& p) {
    pipeline_check out;
    const auto run = [&](const std::vector<pipeline_post>& posts, auto&& measure) {
        const auto full = full_model_due_ns(hosts, cable, link, seed, posts);
        const auto red = pipeline_due_ns(p, posts);
        measure(full, red);
    };
    for (int from = 0; from < 2; ++from)
        for (std::uint64_t bytes : {std::uint64_t{64}, std::uint64_t{4000}, std::uint64_t{65536}, std::uint64_t{1} << 20}) {
            std::vector<pipeline_post> posts;
            std::size_t frames = 0;
            for (int i = 0; i < 20; ++i) frames = message(posts, from, sc_core::sc_time(1000.0 * i, sc_core::SC_US), bytes);
            run(posts, [&](const auto& full, const auto& red) {
                out.rows.push_back({fmt::format("{} {} B message alone, one way (ns)", from ? "B->A" : "A->B", bytes),
                                    one_way_ns(full, posts, frames), one_way_ns(red, posts, frames)});
            });
        }
    // 4 MiB in 1 MiB messages put in at once: a stream, one way and both.
    for (int both = 0; both < 2; ++both) {
        std::vector<pipeline_post> posts;
        for (int from = 0; from < 1 + both; ++from)
            for (int m = 0; m < 4; ++m) message(posts, from, sc_core::SC_ZERO_TIME, std::uint64_t{1} << 20);
        run(posts, [&](const auto& full, const auto& red) {
            for (int from = 0; from < 1 + both; ++from)
                out.rows.push_back({fmt::format("{} stream of 1 MiB messages{} (Gb/s)", from ? "B->A" : "A->B",
                                                both ? ", both ways at once" : ""),
                                    gbps(full, posts, from), gbps(red, posts, from)});
        });
    }
    return out;
}

}  // namespace odl::model
