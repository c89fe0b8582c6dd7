// SPDX-License-Identifier: MIT
// Cable model: frame-level serialisation, propagation, errors, link states.
#include "odl/model/cable/cable.h"

#include "odl/model/cable/bit_errors.h"

#include <algorithm>

#include <fmt/format.h>

namespace odl::model {

using sc_core::sc_time;
using sc_core::SC_PS;

cable::cable(sc_core::sc_module_name name, scheduler& sched, trace_log& log,
             const link_config& cfg, const link_physics& phys, sc_time retrain_time,
             std::uint64_t seed)
    : sc_module(name), m_sched(sched), m_log(log), m_cfg(cfg), m_phys(phys),
      m_retrain(retrain_time), m_rng(seed) {}

bool cable::send(int from, frame_ptr f) {
    if (m_state == link_state::unplugged) {
        ++m_stats.frames_refused_down;
        if (f->reserved && m_end[1 - from]) m_end[1 - from]->link_frame_lost(f);
        return false;
    }
    if (m_tap) {
        switch (m_tap(from, *f)) {
        case tap_verdict::pass: break;
        case tap_verdict::drop:
            // Lost on the wire: the far end's receive credit comes back.
            ++m_stats.frames_tapped;
            if (f->reserved && m_end[1 - from]) m_end[1 - from]->link_frame_lost(f);
            return true;
        case tap_verdict::duplicate: {
            ++m_stats.frames_tapped;
            auto copy = make_frame();
            *copy = *f;
            copy->reserved = false;  // holds no receive credit of its own
            transmit(from, std::move(f));
            transmit(from, std::move(copy));
            return true;
        }
        }
    }
    transmit(from, std::move(f));
    return true;
}

void cable::transmit(int from, frame_ptr f) {
    const int to = 1 - from;
    const sc_time now = scheduler::now();
    const sc_time start = std::max({now, m_busy[from], m_ready});
    if (m_ser_len[from] != f->len) {
        m_ser_len[from] = f->len;
        m_ser[from] = sc_time(static_cast<double>(serialise_ps(m_cfg, m_phys, from, f->len)), SC_PS);
    }
    if (!m_prop_valid) {
        m_prop = sc_time(static_cast<double>(propagation_ps(m_cfg, m_phys)), SC_PS);
        m_prop_valid = true;
    }
    const sc_time ser = m_ser[from];
    const sc_time prop = m_prop;
    m_busy[from] = start + ser;
    ++m_stats.frames_sent;
    if (m_ber > 0.0 && damage(from, f)) f->crc_error = true;
    in_flight x{start + ser + prop, m_sched.reserve_seq(), m_epoch, std::move(f)};
    if (m_head[to]) {
        m_flight[to].push_back(std::move(x));
    } else {
        m_head[to] = true;
        schedule_arrival(to, std::move(x), true);
    }
}

void cable::schedule_arrival(int to, in_flight x, bool chained) {
    const std::uint64_t chain = chained ? m_chain : ~std::uint64_t{0};
    const sc_time t = x.t;
    const std::uint64_t seq = x.seq;
    m_sched.at_seq(t, seq, [this, to, chain, epoch = x.epoch, f = std::move(x.f)]() mutable {
        arrive(to, epoch, std::move(f));
        if (chain != m_chain) return;
        if (m_flight[to].empty()) {
            m_head[to] = false;
            return;
        }
        in_flight n = std::move(m_flight[to].front());
        m_flight[to].pop_front();
        schedule_arrival(to, std::move(n), true);
    });
}

void cable::arrive(int to, std::uint64_t epoch, frame_ptr f) {
    if (epoch != m_epoch) {
        ++m_stats.frames_lost_in_flight;
        if (m_log.per_frame()) m_log.event(name(), fmt::format("lost id={} hop={}", f->id, f->hop));
        if (m_end[to]) m_end[to]->link_frame_lost(f);
        return;
    }
    ++m_stats.frames_delivered;
    if (f->crc_error) ++m_stats.frames_damaged;
    if (m_end[to]) m_end[to]->link_frame_arrived(std::move(f));
}

void cable::flush_flight() {
    ++m_chain;
    for (int to = 0; to < 2; ++to) {
        while (!m_flight[to].empty()) {
            in_flight x = std::move(m_flight[to].front());
            m_flight[to].pop_front();
            schedule_arrival(to, std::move(x), false);
        }
        m_head[to] = false;
    }
}

bool cable::damage(int from, const frame_ptr& f) {
    (void)from;
    const frame_errors e = draw_frame_errors(m_cfg.gen, m_ber, f->len, m_rng);
    m_stats.errors_corrected += e.corrected;
    m_stats.packets_damaged += e.packets_damaged;
    return e.damaged();
}

void cable::return_credits(int from) {
    const int to = 1 - from;
    if (!m_prop_valid) {
        m_prop = sc_time(static_cast<double>(propagation_ps(m_cfg, m_phys)), SC_PS);
        m_prop_valid = true;
    }
    m_sched.after(m_prop, [this, to] {
        if (m_end[to]) m_end[to]->link_credits_returned();
    });
}

void cable::go_down(link_state s) {
    const bool was_up = m_state == link_state::up;
    m_state = s;
    ++m_epoch;
    flush_flight();
    const sc_time now = scheduler::now();
    m_busy[0] = m_busy[1] = now;
    if (was_up) {
        for (auto* ep : m_end)
            if (ep) ep->link_state_changed(false);
    }
}

void cable::schedule_up() {
    m_ready = scheduler::now() + m_retrain;
    const std::uint64_t epoch = m_epoch;
    m_sched.at(m_ready, [this, epoch] {
        if (epoch != m_epoch || m_state != link_state::training) return;
        m_state = link_state::up;
        m_log.event(name(), fmt::format("up {} lanes={}{}", to_string(m_cfg.gen), m_cfg.lanes,
                                        m_cfg.asymmetric ? " asymmetric" : ""));
        for (auto* ep : m_end)
            if (ep) ep->link_state_changed(true);
    });
}

void cable::plug() {
    if (m_state != link_state::unplugged) return;
    m_log.event(name(), "plug");
    m_state = link_state::training;
    ++m_epoch;
    flush_flight();
    schedule_up();
}

void cable::unplug() {
    if (m_state == link_state::unplugged) return;
    m_log.event(name(), "unplug");
    go_down(link_state::unplugged);
}

void cable::retrain() {
    if (m_state == link_state::unplugged) return;
    m_log.event(name(), "retrain");
    go_down(link_state::training);
    schedule_up();
}

void cable::degrade(generation gen, unsigned lanes) {
    m_cfg = degraded(m_cfg, gen, lanes);
    m_ser_len[0] = m_ser_len[1] = 0;  // rates changed
    m_prop_valid = false;
    m_log.event(name(), fmt::format("degrade {} lanes={}", to_string(gen), lanes));
    retrain();
}

}  // namespace odl::model
