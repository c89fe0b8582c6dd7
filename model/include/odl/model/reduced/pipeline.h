// SPDX-License-Identifier: MIT
// The reduced model of one link for odl-linkd --sim --sim-timing pipeline:
// each direction is one FIFO stage (a frame's time at the bottleneck and its
// latency, both by payload length and message marks) whose parameters are
// fitted to the full model of the same hosts and cable. The server runs it
// itself, with no scheduler action per frame instead of about a dozen, at the
// price of what a single stage cannot show (docs/sim.md, "Pipeline timing").
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include <systemc>

#include "odl/model/scenario/system.h"

namespace odl::model {

/// One direction's stage, measured on the full model at a few payload
/// lengths and interpolated linearly between them (the bottleneck is the
/// host's costs for small frames and the wire's for large ones: a kink no
/// single line fits). Times in ns; lengths are payload bytes.
struct pipeline_direction {
    std::vector<double> len;     ///< ascending, first 0, last the largest payload
    std::vector<double> lat_ns;  ///< a one-frame message sent alone: its latency
    std::vector<double> svc_ns;  ///< a middle frame's time at the bottleneck
    /// What a message's first and last frame add to the bottleneck (its own
    /// costs), on top of a middle frame's.
    double msg_ns = 0;
    /// The receiver's wake-up (interrupt completion; 0 when it polls), part
    /// of lat_ns: every frame raises an interrupt whose handler runs this
    /// long after it and reaps what has arrived, so only a frame that finds
    /// no handler on its way waits for it whole.
    double wake_ns = 0;
    double lat_at(double bytes) const;
    double svc_at(double bytes) const;
};

struct pipeline_params {
    pipeline_direction dir[2];  ///< [0] A -> B, [1] B -> A
    /// "A->B lat ... svc ...; B->A ...": for logs.
    std::string summary() const;
};

/// One frame put into a model at @at (absolute) from end @from.
struct pipeline_post {
    int from = 0;
    sc_core::sc_time at;
    std::uint32_t payload = 0;
    bool som = true, eom = true;
};

/// What the full model does with @posts on the hosts and cable of @hosts
/// and @cable (both hosts' NHIs copy only headers, as odl-linkd --sim's do):
/// each post's delivery time relative to the model's ready time, or a
/// negative time for a frame it never delivered. Posts are relative to the
/// ready time too.
std::vector<double> full_model_due_ns(const std::vector<host_spec>& hosts, const cable_spec& cable,
                                      const link_calibration& link, std::uint64_t seed,
                                      const std::vector<pipeline_post>& posts);

/// The lane adapter (port) the cable is on, on both hosts of a two-host
/// system: what full_model_due_ns() and odl-linkd --sim send on.
inline constexpr unsigned pipeline_lane_port = 1;

/// Fits both directions' stages to the full model (single frames alone for
/// latency, back-to-back streams for the bottleneck, at 9 payload lengths
/// from 0 to the largest).

pipeline_params fit_pipeline(const std::vector<host_spec>& hosts, const cable_spec& cable,
                             const link_calibration& link, std::uint64_t seed);

/// The reduced model's arithmetic: each direction's bottleneck and order.
class pipeline_state {
public:
    explicit pipeline_state(const pipeline_params& p) : m_p(p) {}
    /// The due time of a frame from end @from put in at @now (not before
    /// the frames put in before it); @left, if given, gets the time it
    /// leaves the bottleneck (never after the due time; in order too).
    sc_core::sc_time due(int from, const sc_core::sc_time& now, std::uint32_t payload, bool som, bool eom,
                         sc_core::sc_time* left = nullptr);
    /// Frames put in from now on take @p's times (the cable retrained into
    /// another generation or width); those already in keep theirs, and the
    /// order holds across the change.
    void set_params(const pipeline_params& p) { m_p = p; }

private:
    pipeline_params m_p;
    sc_core::sc_time m_free[2];  ///< the bottleneck is free from then on
    sc_core::sc_time m_last[2];  ///< the last frame's due time (order)
    sc_core::sc_time m_left[2];  ///< the last frame's leaving time (order)
    sc_core::sc_time m_base[2];  ///< the last frame's arrival before the wake-up
    std::deque<sc_core::sc_time> m_handlers[2];  ///< handler times still to come
};

/// The reduced model's due times for @posts (posts in time order; relative,
/// as full_model_due_ns()).
std::vector<double> pipeline_due_ns(const pipeline_params& p, const std::vector<pipeline_post>& posts);

/// One workload on both models.
struct pipeline_check_row {
    std::string what;
    double full = 0, reduced = 0;
    double error() const { return full != 0 ? (reduced - full) / full : 0; }
};

struct pipeline_check {
    std::vector<pipeline_check_row> rows;
    /// The row whose relative error is largest.
    const pipeline_check_row& worst() const;
};

/// Both models on workloads the fit did not use: messages of 64 B, 4000 B,
/// 64 KiB and 1 MiB sent alone each way (median one-way time, ns), and a
/// stream of 1 MiB messages one way and both ways at once (Gb/s). @seed
/// should differ from the fit's, so the full model's host noise does too.
pipeline_check check_pipeline(const std::vector<host_spec>& hosts, const cable_spec& cable,
                              const link_calibration& link, std::uint64_t seed, const pipeline_params& p);

}  // namespace odl::model
