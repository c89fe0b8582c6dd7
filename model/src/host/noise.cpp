// SPDX-License-Identifier: MIT
// Seeded log-normal delays for the host noise terms.
#include "odl/model/host/noise.h"

#include <cmath>

namespace odl::model {

namespace {
// The standard normal's 99th percentile: p99 = median * exp(k_z99 * sigma).
constexpr double k_z99 = 2.3263478740408408;
constexpr double k_two_pi = 6.283185307179586;
}  // namespace

double noise_source::uniform() {
    // 53 random bits, never 0 (log() below) and never 1.
    return (static_cast<double>(m_rng() >> 11) + 0.5) * 0x1.0p-53;
}

sc_core::sc_time noise_source::draw(const noise_term& t) {
    // Draw the same number of values whether or not the event fires, so that
    // changing one term's probability does not reshuffle the others' delays.
    const double fire = uniform();
    const double u1 = uniform(), u2 = uniform();
    if (fire >= t.probability) return sc_core::SC_ZERO_TIME;
    const double median = t.median.to_seconds();
    const double p99 = std::max(t.p99.to_seconds(), median);
    const double sigma = std::log(p99 / median) / k_z99;
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(k_two_pi * u2);  // Box-Muller
    return sc_core::sc_time(median * std::exp(sigma * z), sc_core::SC_SEC);
}

}  // namespace odl::model
