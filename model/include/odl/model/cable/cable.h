// SPDX-License-Identifier: MIT
// The cable between two router lane adapters: serialisation per direction,
// propagation, bit errors with what USB4 does about them, plug/unplug,
// degradation and retraining.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <random>
#include <string>

#include <systemc>

#include "odl/model/cable/link_config.h"
#include "odl/model/core/frame.h"
#include "odl/model/core/scheduler.h"
#include "odl/model/core/trace.h"

namespace odl::model {

/// What a router lane adapter sees of its cable.
class link_endpoint {
public:
    virtual ~link_endpoint() = default;
    /// A frame or control packet arrived (crc_error set if damaged).
    virtual void link_frame_arrived(frame_ptr f) = 0;
    /// A frame sent towards this end was lost in flight (unplug, retrain).
    virtual void link_frame_lost(const frame_ptr& f) = 0;
    /// The link went up (CL0) or down (unplugged / training).
    virtual void link_state_changed(bool up) = 0;
    /// Credit check for a frame the far end wants to send on @hop: true
    /// reserves a receive slot (E2E / path credits), false means stall.
    virtual bool link_reserve(std::uint16_t hop) = 0;
    /// The far end returned credits: stalled senders may retry.
    virtual void link_credits_returned() = 0;
};

enum class link_state { unplugged, training, up };

/// What a frame tap (fault injection, odl-linkd --fault) decides for a frame.
enum class tap_verdict { pass, drop, duplicate };
/// Sees (and may rewrite) every frame entering the cable at end @from.
using frame_tap = std::function<tap_verdict(int from, frame& f)>;

/// Link statistics, per cable.
struct cable_stats {
    std::uint64_t frames_sent = 0;
    std::uint64_t frames_delivered = 0;
    std::uint64_t frames_lost_in_flight = 0;  ///< unplug / retrain
    std::uint64_t frames_refused_down = 0;    ///< offered while unplugged
    std::uint64_t errors_corrected = 0;       ///< Gen4 RS-FEC fixed them
    std::uint64_t packets_damaged = 0;        ///< uncorrectable transport packets
    std::uint64_t frames_damaged = 0;         ///< delivered with a CRC error
    std::uint64_t frames_tapped = 0;          ///< dropped or duplicated by the tap
};

/// A point-to-point USB4 link. Starts unplugged; plug() trains it.
class cable : public sc_core::sc_module {
public:
    cable(sc_core::sc_module_name name, scheduler& sched, trace_log& log,
          const link_config& cfg, const link_physics& phys, sc_core::sc_time retrain_time,
          std::uint64_t seed);
    cable(const cable&) = delete;
    cable& operator=(const cable&) = delete;

    /// Connects end 0 or 1 to a router lane adapter (not owned).
    void attach(int end, link_endpoint* ep) { m_end[end] = ep; }

    /// Transmits from @from. Returns false (frame dropped) if the link is
    /// unplugged; while training the frame waits for CL0.
    bool send(int from, frame_ptr f);
    /// Asks the far end of @from for a receive credit on @hop.
    bool reserve(int from, std::uint16_t hop) {
        return up() && m_end[1 - from] && m_end[1 - from]->link_reserve(hop);
    }
    /// End @from returns credits; they reach the other end after propagation.
    void return_credits(int from);
    /// Earliest time the serialiser from @from is free again.
    sc_core::sc_time tx_free(int from) const { return m_busy[from]; }

    void plug();
    void unplug();
    /// Link recovery: in-flight frames are lost, CL0 again after the retrain time.
    void retrain();
    /// Lane-width / speed degradation, applied through a retrain.
    void degrade(generation gen, unsigned lanes);
    /// Bit-error rate before FEC (0 = none).
    void set_ber(double ber) { m_ber = ber; }
    double ber() const { return m_ber; }
    /// Installs (or with an empty function removes) a tap that sees every
    /// frame send() accepts: a hostile cable. No tap: one branch per frame.
    void set_tap(frame_tap tap) { m_tap = std::move(tap); }

    link_state state() const { return m_state; }
    bool up() const { return m_state == link_state::up; }
    const link_config& config() const { return m_cfg; }
    const link_physics& physics() const { return m_phys; }
    const cable_stats& stats() const { return m_stats; }

private:
    /// A frame on the wire towards one end. Arrivals in one direction and
    /// one link epoch are in time order, so each direction keeps one
    /// scheduler action (the head) and a FIFO; the sequence number reserved
    /// at send time keeps ties ordered as with one action per frame.
    struct in_flight {
        sc_core::sc_time t;
        std::uint64_t seq;
        std::uint64_t epoch;
        frame_ptr f;
    };
    /// send() after the tap: serialise and schedule the arrival.
    void transmit(int from, frame_ptr f);
    void schedule_arrival(int to, in_flight x, bool chained);
    void arrive(int to, std::uint64_t epoch, frame_ptr f);
    /// In-flight frames of a dying epoch become one action each (later
    /// frames may arrive before them).
    void flush_flight();
    void go_down(link_state s);
    void schedule_up();
    /// Applies bit errors to @f; returns true when it arrives damaged.
    bool damage(int from, const frame_ptr& f);

    scheduler& m_sched;
    trace_log& m_log;
    link_config m_cfg;
    link_physics m_phys;
    sc_core::sc_time m_retrain;
    std::mt19937_64 m_rng;
    link_endpoint* m_end[2] = {nullptr, nullptr};
    link_state m_state = link_state::unplugged;
    std::uint64_t m_epoch = 0;  ///< bumped whenever in-flight frames die
    sc_core::sc_time m_busy[2];
    sc_core::sc_time m_ready;   ///< CL0 reached (or will be) at this time
    double m_ber = 0.0;
    cable_stats m_stats;
    frame_tap m_tap;
    std::deque<in_flight> m_flight[2];  ///< index: receiving end, head excluded
    bool m_head[2] = {false, false};    ///< a chained arrival is scheduled
    std::uint64_t m_chain = 0;          ///< bumped by flush_flight()
    /// Serialisation time of the last frame length per direction and the
    /// propagation delay (recomputed when the configuration changes).
    std::uint32_t m_ser_len[2] = {0, 0};
    sc_core::sc_time m_ser[2];
    sc_core::sc_time m_prop;
    bool m_prop_valid = false;
};

}  // namespace odl::model
