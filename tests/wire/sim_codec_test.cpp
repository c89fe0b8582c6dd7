// SPDX-License-Identifier: MIT
// Tests for include/odl/wire/sim_codec.h: what each side accepts and refuses.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "odl/wire/sim_codec.h"

namespace {

std::vector<unsigned char> msg(unsigned type, uint32_t len, uint64_t arg = 0, const void* payload = nullptr) {
    std::vector<unsigned char> b(sizeof(odl_sim_hdr) + len, 0);
    odl_sim_hdr h;
    odl_sim_hdr_init(&h, type, len, 0, 123, arg);
    std::memcpy(b.data(), &h, sizeof(h));
    if (payload) std::memcpy(b.data() + sizeof(h), payload, len);
    return b;
}

odl_sim_hello hello(uint8_t end) {
    odl_sim_hello h{};
    h.magic = odl_cpu_le32(ODL_SIM_MAGIC);
    h.version = odl_cpu_le16(ODL_SIM_VERSION);
    h.end = end;
    return h;
}

const char* check(const std::vector<unsigned char>& b, odl_sim_side from) {
    return odl_sim_check(b.data(), b.size(), from);
}

TEST(SimCodec, WellFormedMessagesPass) {
    auto h = hello(ODL_SIM_END_ANY);
    EXPECT_EQ(check(msg(ODL_SIM_HELLO, sizeof(h), 0, &h), ODL_SIM_SIDE_CLIENT), nullptr);
    auto s = hello(1);
    EXPECT_EQ(check(msg(ODL_SIM_HELLO, sizeof(s), 0, &s), ODL_SIM_SIDE_SERVER), nullptr);
    EXPECT_EQ(check(msg(ODL_SIM_FRAME, ODL_FRAME_HDR_BYTES), ODL_SIM_SIDE_CLIENT), nullptr);
    EXPECT_EQ(check(msg(ODL_SIM_FRAME, ODL_SIM_MAX_FRAME), ODL_SIM_SIDE_SERVER), nullptr);
    EXPECT_EQ(check(msg(ODL_SIM_ACK, 0, ODL_SIM_WINDOW), ODL_SIM_SIDE_SERVER), nullptr);
    EXPECT_EQ(check(msg(ODL_SIM_LINK, 0, ODL_SIM_LINK_ALL), ODL_SIM_SIDE_SERVER), nullptr);
    EXPECT_EQ(check(msg(ODL_SIM_BYE, 0), ODL_SIM_SIDE_CLIENT), nullptr);
}

TEST(SimCodec, EveryRefusalHasAReason) {
    auto h = hello(0);
    struct bad {
        std::vector<unsigned char> b;
        odl_sim_side from;
        const char* want;
    };
    auto short_hdr = msg(ODL_SIM_BYE, 0);
    short_hdr.resize(sizeof(odl_sim_hdr) - 1);
    auto wrong_len = msg(ODL_SIM_FRAME, 64);
    wrong_len.pop_back();
    auto flags = msg(ODL_SIM_BYE, 0);
    flags[2] = 1;
    auto magic = hello(0);
    magic.magic = 0;
    auto version = hello(0);
    version.version = odl_cpu_le16(ODL_SIM_VERSION + 1);
    auto no_end = hello(ODL_SIM_END_ANY);
    const std::vector<bad> cases = {
        {short_hdr, ODL_SIM_SIDE_CLIENT, "shorter than a message header"},
        {wrong_len, ODL_SIM_SIDE_CLIENT, "does not match"},
        {flags, ODL_SIM_SIDE_CLIENT, "flags"},
        {msg(ODL_SIM_HELLO, sizeof(h) - 4, 0, &h), ODL_SIM_SIDE_CLIENT, "wrong length"},
        {msg(ODL_SIM_HELLO, sizeof(magic), 0, &magic), ODL_SIM_SIDE_CLIENT, "magic"},
        {msg(ODL_SIM_HELLO, sizeof(version), 0, &version), ODL_SIM_SIDE_CLIENT, "version"},
        {msg(ODL_SIM_HELLO, sizeof(no_end), 0, &no_end), ODL_SIM_SIDE_SERVER, "names no end"},
        {msg(ODL_SIM_FRAME, ODL_FRAME_HDR_BYTES - 1), ODL_SIM_SIDE_CLIENT, "FRAME"},
        {msg(ODL_SIM_FRAME, ODL_SIM_MAX_FRAME + 1), ODL_SIM_SIDE_CLIENT, "FRAME"},
        {msg(ODL_SIM_ACK, 0, 1), ODL_SIM_SIDE_CLIENT, "ACK from a client"},
        {msg(ODL_SIM_ACK, 0, 0), ODL_SIM_SIDE_SERVER, "count outside"},
        {msg(ODL_SIM_ACK, 0, ODL_SIM_WINDOW + 1), ODL_SIM_SIDE_SERVER, "count outside"},
        {msg(ODL_SIM_LINK, 0, 1), ODL_SIM_SIDE_CLIENT, "LINK from a client"},
        {msg(ODL_SIM_LINK, 0, 4), ODL_SIM_SIDE_SERVER, "unknown state bits"},
        {msg(ODL_SIM_BYE, 8), ODL_SIM_SIDE_SERVER, "BYE with a payload"},
        {msg(0, 0), ODL_SIM_SIDE_SERVER, "unknown message type"},
        {msg(99, 0), ODL_SIM_SIDE_CLIENT, "unknown message type"},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const char* why = check(cases[i].b, cases[i].from);
        ASSERT_NE(why, nullptr) << "case " << i << " passed";
        EXPECT_NE(std::string(why).find(cases[i].want), std::string::npos) << "case " << i << ": " << why;
    }
}

}  // namespace
