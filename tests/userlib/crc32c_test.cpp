// SPDX-License-Identifier: MIT
// Tests for userlib/src/crc32c.cpp: the fast path agrees with Boost.CRC.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "crc32c.h"

TEST(Crc32c, MatchesTheStandardCheckValue) {
    // CRC-32C check value from the Castagnoli catalogue entry.
    EXPECT_EQ(odl::crc32c("123456789", 9), 0xE3069283u);
    EXPECT_EQ(odl::crc32c_portable("123456789", 9), 0xE3069283u);
}

TEST(Crc32c, FastPathAgreesWithBoostAtEveryLengthAndAlignment) {
    std::vector<unsigned char> buf(4200);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<unsigned char>(i * 7 + 3);
    for (size_t off = 0; off < 8; ++off)
        for (size_t len : {0u, 1u, 7u, 8u, 9u, 63u, 64u, 4064u, 4096u})
            EXPECT_EQ(odl::crc32c(buf.data() + off, len), odl::crc32c_portable(buf.data() + off, len))
                << "offset " << off << " length " << len;
}

TEST(Crc32c, DetectsASingleFlippedBit) {
    std::vector<unsigned char> buf(4064, 0x11);
    const uint32_t good = odl::crc32c(buf.data(), buf.size());
    buf[2000] ^= 0x04;
    EXPECT_NE(odl::crc32c(buf.data(), buf.size()), good);
}
