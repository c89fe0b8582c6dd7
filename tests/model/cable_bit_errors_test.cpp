// SPDX-License-Identifier: MIT
// Bit errors per frame (cable/bit_errors.h), against the closed form: a
// Poisson number of errors over the wire bits, spread evenly over the
// frame's transport packets; Gen4's RS-FEC corrects a packet hit once.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "odl/model/cable/bit_errors.h"

namespace odl::model {
namespace {

constexpr std::uint32_t k_frame = 4096 + 32;  // a full OdinLink frame
constexpr int k_draws = 40000;

struct tally {
    double damaged = 0, corrected = 0;  // per frame
};

tally draw(generation gen, double ber, std::uint64_t seed = 7) {
    std::mt19937_64 rng(seed);
    tally t;
    for (int i = 0; i < k_draws; ++i) {
        const frame_errors e = draw_frame_errors(gen, ber, k_frame, rng);
        t.damaged += e.damaged() ? 1 : 0;
        t.corrected += e.corrected;
    }
    t.damaged /= k_draws;
    t.corrected /= k_draws;
    return t;
}

double lambda_of(double ber) { return ber * 8.0 * static_cast<double>(wire_bytes(k_frame)); }
double sigma(double p) { return std::sqrt(p * (1 - p) / k_draws); }

TEST(BitErrors, WithoutFecAnyErrorDamagesTheFrame) {
    const double ber = 1e-5;
    const double p = 1 - std::exp(-lambda_of(ber));  // about 0.29
    const tally t = draw(generation::gen3, ber);
    EXPECT_NEAR(t.damaged, p, 4 * sigma(p));
    EXPECT_EQ(t.corrected, 0.0) << "no FEC below Gen4";
}

TEST(BitErrors, Gen4FecLosesOnlyPacketsHitTwice) {
    const double ber = 1e-5;
    const double packets = std::ceil(double(k_frame) / transport_payload_bytes);
    const double mu = lambda_of(ber) / packets;  // errors per packet
    const double clean_or_fixed = std::exp(-mu) * (1 + mu);
    const double p = 1 - std::pow(clean_or_fixed, packets);  // some packet hit twice or more
    const tally t = draw(generation::gen4, ber);
    EXPECT_NEAR(t.damaged, p, 4 * sigma(p));
    // Packets hit exactly once, per frame: packets x mu e^-mu.
    const double once = packets * mu * std::exp(-mu);
    EXPECT_NEAR(t.corrected, once, 0.03 * once);
    EXPECT_LT(t.damaged, 0.1 * draw(generation::gen3, ber).damaged) << "FEC must save most frames";
}

TEST(BitErrors, RareErrorsRarelyDamage) {
    EXPECT_EQ(draw(generation::gen3, 1e-15).damaged, 0.0);
}

TEST(BitErrors, SameSeedSameErrors) {
    std::mt19937_64 a(3), b(3);
    for (int i = 0; i < 2000; ++i) {
        const frame_errors x = draw_frame_errors(generation::gen4, 3e-5, k_frame, a);
        const frame_errors y = draw_frame_errors(generation::gen4, 3e-5, k_frame, b);
        ASSERT_EQ(x.corrected, y.corrected) << "draw " << i;
        ASSERT_EQ(x.packets_damaged, y.packets_damaged) << "draw " << i;
    }
}

}  // namespace
}  // namespace odl::model
