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
    EXPECT_EQ(check(msg(ODL_SIM_WAKE, 0), ODL_SIM_SIDE_CLIENT), nullptr);
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
    auto wrong_len = msg(ODL_SIM_BYE, 0);
    wrong_len.push_back(0);
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
        {msg(ODL_SIM_WAKE, 0), ODL_SIM_SIDE_SERVER, "WAKE from the server"},
        {msg(ODL_SIM_WAKE, 4), ODL_SIM_SIDE_CLIENT, "WAKE with a payload"},
        {msg(2, 64), ODL_SIM_SIDE_CLIENT, "unknown message type"},  // version 1's FRAME
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

// The rings, as both sides use them: full, empty, and an index from the
// other side that cannot be (the server must survive a hostile client).
TEST(SimRings, ProducerAndConsumerAndImpossibleIndices) {
    std::vector<unsigned char> mem(ODL_SIM_SHM_BYTES);
    auto* shm = reinterpret_cast<odl_sim_shm*>(mem.data());
    odl_sim_shm_init(shm);
    ASSERT_EQ(odl_sim_shm_check(shm), nullptr);
    odl_sim_slot* slots = odl_sim_slots(shm, 0);
    EXPECT_EQ(reinterpret_cast<unsigned char*>(odl_sim_slots(shm, 1)) - mem.data(),
              ptrdiff_t(sizeof(odl_sim_shm) + ODL_SIM_SLOTS * sizeof(odl_sim_slot)));
    odl_sim_slot* slot = nullptr;
    EXPECT_EQ(odl_sim_ring_next(&shm->to_server, slots, 0, &slot), ODL_SIM_RING_NONE);
    uint64_t head = 0;
    for (; head < ODL_SIM_SLOTS; ++head) {
        ASSERT_EQ(odl_sim_ring_room(&shm->to_server, slots, head, &slot), ODL_SIM_RING_OK);
        slot->len = uint32_t(ODL_FRAME_HDR_BYTES + head % 64);
        odl_sim_store(&shm->to_server.head, head + 1);
    }
    EXPECT_EQ(odl_sim_ring_room(&shm->to_server, slots, head, &slot), ODL_SIM_RING_NONE);
    uint64_t tail = 0;
    ASSERT_EQ(odl_sim_ring_next(&shm->to_server, slots, tail, &slot), ODL_SIM_RING_OK);
    EXPECT_EQ(odl_sim_slot_len(slot), ODL_FRAME_HDR_BYTES);
    odl_sim_store(&shm->to_server.tail, ++tail);
    EXPECT_EQ(odl_sim_ring_room(&shm->to_server, slots, head, &slot), ODL_SIM_RING_OK);
    EXPECT_EQ(slot, &slots[0]);  // wrapped around
    // Impossible indices: a head more than a ring ahead, a tail ahead of the head.
    shm->to_server.head = tail + ODL_SIM_SLOTS + 1;
    EXPECT_EQ(odl_sim_ring_next(&shm->to_server, slots, tail, &slot), ODL_SIM_RING_CORRUPT);
    shm->to_server.tail = head + 1;
    EXPECT_EQ(odl_sim_ring_room(&shm->to_server, slots, head, &slot), ODL_SIM_RING_CORRUPT);
    // Impossible lengths read as 0.
    slots[3].len = ODL_FRAME_HDR_BYTES - 1;
    EXPECT_EQ(odl_sim_slot_len(&slots[3]), 0u);
    slots[3].len = ODL_FRAME_MAX_BYTES + 1;
    EXPECT_EQ(odl_sim_slot_len(&slots[3]), 0u);
    slots[3].len = ODL_FRAME_MAX_BYTES;
    EXPECT_EQ(odl_sim_slot_len(&slots[3]), ODL_FRAME_MAX_BYTES);
    // A region of another version or slot count is refused.
    shm->slots = ODL_SIM_SLOTS / 2;
    EXPECT_NE(odl_sim_shm_check(shm), nullptr);
    odl_sim_shm_init(shm);
    shm->version = 1;
    EXPECT_NE(odl_sim_shm_check(shm), nullptr);
}

}  // namespace
