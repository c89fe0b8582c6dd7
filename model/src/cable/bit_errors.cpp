// SPDX-License-Identifier: MIT
// Bit errors in one frame: Poisson errors over its wire bits, by transport packet.
#include "odl/model/cable/bit_errors.h"

#include <algorithm>
#include <cmath>

namespace odl::model {

frame_errors draw_frame_errors(generation gen, double ber, std::uint32_t frame_bytes, std::mt19937_64& rng) {
    const double bits = 8.0 * static_cast<double>(wire_bytes(frame_bytes));
    const double lambda = ber * bits;
    // The number of errors: inverse transform of the Poisson CDF (at most 64).
    const double u = unit_uniform(rng);
    double p = std::exp(-lambda);
    double cdf = p;
    unsigned k = 0;
    while (u > cdf && k < 64) {
        ++k;
        p *= lambda / k;
        cdf += p;
    }
    frame_errors out;
    if (k == 0) return out;
    const std::uint64_t packets = (frame_bytes + transport_payload_bytes - 1) / transport_payload_bytes;
    std::uint64_t hit[64];
    for (unsigned i = 0; i < k; ++i)
        hit[i] = static_cast<std::uint64_t>(unit_uniform(rng) * static_cast<double>(packets));
    std::sort(hit, hit + k);
    for (unsigned i = 0; i < k;) {
        unsigned j = i;
        while (j < k && hit[j] == hit[i]) ++j;
        if (gen == generation::gen4 && j - i == 1)
            ++out.corrected;
        else
            ++out.packets_damaged;
        i = j;
    }
    return out;
}

}  // namespace odl::model
