// SPDX-License-Identifier: MIT
// Host timing noise: scheduling and wake-up jitter, cache and TLB misses on
// the copy path. Each term is a seeded, heavy-tailed delay added to a cost
// the driver model already pays; with every term zero the model is exact
// (p99 = p50), as it was before noise existed.
#pragma once

#include <cstdint>
#include <random>

#include <systemc>

namespace odl::model {

/// One noise source: with @probability per event, a log-normal delay
/// described by its median and its 99th percentile (two numbers a
/// measurement gives directly). probability 0 = off.
struct noise_term {
    double probability = 0;
    sc_core::sc_time median = sc_core::SC_ZERO_TIME;
    sc_core::sc_time p99 = sc_core::SC_ZERO_TIME;
    bool active() const { return probability > 0 && median > sc_core::SC_ZERO_TIME; }
};

/// The noise of one host platform (docs/model.md, "Noise").
struct host_noise {
    noise_term wake;   ///< each interrupt: MSI to a running handler
    noise_term sched;  ///< each received message: the reader is scheduled late
    noise_term copy;   ///< each received frame: cache and TLB misses
};

/// A seeded generator of noise delays. The 64-bit Mersenne twister is
/// specified exactly by the standard, and the normal deviate is made here
/// (std::normal_distribution is not), so a seed gives the same delays with
/// every standard library.
class noise_source {
public:
    explicit noise_source(std::uint64_t seed) : m_rng(seed) {}
    /// The delay @t adds to one event (zero when @t is off or does not fire).
    /// Inline for the common off term: a call per received frame otherwise.
    sc_core::sc_time sample(const noise_term& t) {
        if (!t.active()) return sc_core::SC_ZERO_TIME;
        return draw(t);
    }

private:
    sc_core::sc_time draw(const noise_term& t);
    /// In (0, 1): 53 random bits, never 0 (log() in draw()) and never 1.
    /// Inline: three per draw.
    double uniform() { return (static_cast<double>(m_rng() >> 11) + 0.5) * 0x1.0p-53; }
    /// A term's median in seconds and its sigma, kept for the last term
    /// drawn with each (median, p99): a log and two conversions less a draw.
    struct shape {
        std::uint64_t median = 0, p99 = 0;  ///< sc_time values; 0: unused
        double median_s = 0, sigma = 0;
    };
    const shape& shape_of(const noise_term& t);
    std::mt19937_64 m_rng;
    shape m_shapes[4];  ///< a platform has three terms
    unsigned m_next_shape = 0;
};

}  // namespace odl::model
