// SPDX-License-Identifier: MIT
// What bit errors do to one frame on the wire: the one definition the cable
// model and odl-linkd's pipeline timing both draw from.
#pragma once

#include <cstdint>
#include <random>

#include "odl/model/cable/link_config.h"

namespace odl::model {

/// One frame's bit errors after what USB4 does about them.
struct frame_errors {
    unsigned corrected = 0;        ///< transport packets Gen4 RS-FEC fixed
    unsigned packets_damaged = 0;  ///< transport packets left damaged
    bool damaged() const { return packets_damaged > 0; }
};

/// A uniform draw in [0, 1) from 53 bits of @rng.
inline double unit_uniform(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

/// Draws the bit errors of a frame of @frame_bytes at raw bit error rate
/// @ber (> 0) on a @gen link: a Poisson number of errors over its wire bits,
/// each landing in one of its transport packets; Gen4's RS-FEC corrects a
/// packet with a single error, older generations (no FEC modelled) lose any
/// packet hit.
frame_errors draw_frame_errors(generation gen, double ber, std::uint32_t frame_bytes, std::mt19937_64& rng);

}  // namespace odl::model
