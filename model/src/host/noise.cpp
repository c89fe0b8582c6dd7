// SPDX-License-Identifier: MIT
// Seeded log-normal delays for the host noise terms.
#include "odl/model/host/noise.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace odl::model {

namespace {
// The standard normal's 99th percentile: p99 = median * exp(k_z99 * sigma).
constexpr double k_z99 = 2.3263478740408408;
constexpr double k_two_pi = 6.283185307179586;
}  // namespace

const noise_source::shape& noise_source::shape_of(const noise_term& t) {
    const std::uint64_t med = t.median.value(), p = t.p99.value();
    for (const shape& s : m_shapes) {
        if (s.median == med && s.p99 == p) return s;
    }
    shape& s = m_shapes[m_next_shape++ % std::size(m_shapes)];
    s.median = med;  // never 0: draw() runs for active terms only
    s.p99 = p;
    s.median_s = t.median.to_seconds();
    s.sigma = std::log(std::max(t.p99.to_seconds(), s.median_s) / s.median_s) / k_z99;
    return s;
}

sc_core::sc_time noise_source::draw(const noise_term& t) {
    // Draw the same number of values whether or not the event fires, so that
    // changing one term's probability does not reshuffle the others' delays.
    const double fire = uniform();
    const double u1 = uniform(), u2 = uniform();
    if (fire >= t.probability) return sc_core::SC_ZERO_TIME;
    const shape& s = shape_of(t);
    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(k_two_pi * u2);  // Box-Muller
    return sc_core::sc_time(s.median_s * std::exp(s.sigma * z), sc_core::SC_SEC);
}

}  // namespace odl::model
