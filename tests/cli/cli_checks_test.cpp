// SPDX-License-Identifier: MIT
// The byte sizes odl perf and odl model take (odl::cli::byte_size): what
// each accepts, and inputs each tool once took wrongly.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "odl_cli_checks.h"

namespace {

using odl::cli::byte_size;

TEST(ByteSize, WholeBytesWithBinaryUnits) {
    const std::vector<std::pair<std::string, std::uint64_t>> ok = {
        {"0", 0},           {"64", 64},       {"64B", 64},          {"4K", 4096},
        {"4KiB", 4096},     {"1M", 1 << 20},  {"1MiB", 1 << 20},    {"2G", UINT64_C(2) << 30},
        {"1.5KiB", 1536},   {"0.5K", 512},    {"1.25M", 1310720},   {"007", 7},
        {"8589934592G", UINT64_C(1) << 63},  // the largest: 2^33 GiB
    };
    for (const auto& [in, want] : ok) {
        const auto v = byte_size(in);
        ASSERT_TRUE(v.has_value()) << in;
        EXPECT_EQ(*v, want) << in;
    }
}

TEST(ByteSize, RefusesWhatIsNotOne) {
    for (const std::string in : {"", "-5", "+5", " 64", "64 ", "12Q", "4k", "4KB", "1e3", "inf", "nan", "0x10",
                                 "1.", ".5K", "1.5",       // 1.5 bytes
                                 "0.3K",                   // 307.2 bytes
                                 "1.0000000001M",          // finer than a byte, ten fraction digits
                                 "8589934593G",            // above 2^63 bytes
                                 "17179869184G",           // shifted past 64 bits: was read as 0
                                 "99999999999999999999",   // above 2^64
                                 "1,5K", "5K5"}) {
        EXPECT_FALSE(byte_size(in).has_value()) << "'" << in << "' = " << byte_size(in).value_or(0);
    }
}

}  // namespace
