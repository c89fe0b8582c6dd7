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

// A server's HELLO: it always says how many links it models and gives a window.
odl_sim_hello server_hello(uint8_t end, uint8_t link, uint32_t links) {
    odl_sim_hello h = hello(end);
    h.link = link;
    h.links = odl_cpu_le32(links);
    h.window = odl_cpu_le32(ODL_SIM_WINDOW);
    return h;
}

const char* check(const std::vector<unsigned char>& b, odl_sim_side from) {
    return odl_sim_check(b.data(), b.size(), from);
}

TEST(SimCodec, WellFormedMessagesPass) {
    auto h = hello(ODL_SIM_END_ANY);
    EXPECT_EQ(check(msg(ODL_SIM_HELLO, sizeof(h), 0, &h), ODL_SIM_SIDE_CLIENT), nullptr);
    auto s = server_hello(1, 0, 1);
    EXPECT_EQ(check(msg(ODL_SIM_HELLO, sizeof(s), 0, &s), ODL_SIM_SIDE_SERVER), nullptr);
    auto second = server_hello(0, 1, 2);  // link 1 of two
    EXPECT_EQ(check(msg(ODL_SIM_HELLO, sizeof(second), 0, &second), ODL_SIM_SIDE_SERVER), nullptr);
    // A refusal names no end; the link asked for may be one it lacks.
    auto refusal = server_hello(ODL_SIM_END_ANY, 5, 2);
    EXPECT_EQ(check(msg(ODL_SIM_HELLO, sizeof(refusal), 0, &refusal), ODL_SIM_SIDE_SERVER), nullptr);
    auto link3 = hello(0);
    link3.link = 3;
    EXPECT_EQ(check(msg(ODL_SIM_HELLO, sizeof(link3), 0, &link3), ODL_SIM_SIDE_CLIENT), nullptr);
    EXPECT_EQ(check(msg(ODL_SIM_WAKE, 0), ODL_SIM_SIDE_CLIENT), nullptr);
    EXPECT_EQ(check(msg(ODL_SIM_WAKE, 0), ODL_SIM_SIDE_SERVER), nullptr);  // a sleeping client is woken
    EXPECT_EQ(check(msg(ODL_SIM_LINK, 0, ODL_SIM_LINK_ALL), ODL_SIM_SIDE_SERVER), nullptr);
    EXPECT_EQ(check(msg(ODL_SIM_BYE, 0), ODL_SIM_SIDE_CLIENT), nullptr);
    EXPECT_EQ(check(msg(ODL_SIM_PEER, 0, 3), ODL_SIM_SIDE_SERVER), nullptr);
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
    auto old = hello(0);
    old.version = odl_cpu_le16(7);
    auto no_end = server_hello(2, 0, 1);
    auto no_links = server_hello(0, 0, 0);
    auto past_links = server_hello(1, 2, 2);
    auto no_window = server_hello(0, 0, 1);
    no_window.window = 0;
    auto client_links = hello(0);
    client_links.links = odl_cpu_le32(1);
    const std::vector<bad> cases = {
        {short_hdr, ODL_SIM_SIDE_CLIENT, "shorter than a message header"},
        {wrong_len, ODL_SIM_SIDE_CLIENT, "does not match"},
        {flags, ODL_SIM_SIDE_CLIENT, "flags"},
        {msg(ODL_SIM_HELLO, sizeof(h) - 4, 0, &h), ODL_SIM_SIDE_CLIENT, "wrong length"},
        {msg(ODL_SIM_HELLO, sizeof(magic), 0, &magic), ODL_SIM_SIDE_CLIENT, "magic"},
        {msg(ODL_SIM_HELLO, sizeof(version), 0, &version), ODL_SIM_SIDE_CLIENT, "version"},
        // Version 7's shorter HELLO: named for its version, not its length.
        {msg(ODL_SIM_HELLO, 64, 0, &old), ODL_SIM_SIDE_CLIENT, "another protocol version"},
        {msg(ODL_SIM_HELLO, 5, 0, &h), ODL_SIM_SIDE_CLIENT, "wrong length"},
        {msg(ODL_SIM_HELLO, sizeof(no_end), 0, &no_end), ODL_SIM_SIDE_SERVER, "names no end"},
        {msg(ODL_SIM_HELLO, sizeof(no_links), 0, &no_links), ODL_SIM_SIDE_SERVER, "models no link"},
        {msg(ODL_SIM_HELLO, sizeof(past_links), 0, &past_links), ODL_SIM_SIDE_SERVER, "does not model"},
        {msg(ODL_SIM_HELLO, sizeof(no_window), 0, &no_window), ODL_SIM_SIDE_SERVER, "gives no window"},
        {msg(ODL_SIM_HELLO, sizeof(client_links), 0, &client_links), ODL_SIM_SIDE_CLIENT, "link count"},
        {msg(ODL_SIM_WAKE, 4), ODL_SIM_SIDE_CLIENT, "WAKE with a payload"},
        {msg(2, 64), ODL_SIM_SIDE_CLIENT, "unknown message type"},  // version 1's FRAME
        {msg(ODL_SIM_LINK, 0, 1), ODL_SIM_SIDE_CLIENT, "LINK from a client"},
        {msg(ODL_SIM_LINK, 0, 4), ODL_SIM_SIDE_SERVER, "unknown state bits"},
        {msg(ODL_SIM_BYE, 8), ODL_SIM_SIDE_SERVER, "BYE with a payload"},
        {msg(ODL_SIM_PEER, 0, 1), ODL_SIM_SIDE_CLIENT, "PEER from a client"},
        {msg(ODL_SIM_PEER, 0, 0), ODL_SIM_SIDE_SERVER, "no region name"},
        {msg(ODL_SIM_PEER, 8, 1), ODL_SIM_SIDE_SERVER, "PEER with a payload"},
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
    odl_sim_slot* slots = odl_sim_slots(shm);
    EXPECT_EQ(reinterpret_cast<unsigned char*>(odl_sim_descs(shm)) - mem.data(),
              ptrdiff_t(sizeof(odl_sim_shm) + ODL_SIM_SLOTS * sizeof(odl_sim_slot)));
    EXPECT_EQ(reinterpret_cast<unsigned char*>(odl_sim_descs(shm) + ODL_SIM_SLOTS) - mem.data(),
              ptrdiff_t(ODL_SIM_SHM_BYTES));
    odl_sim_slot* slot = nullptr;
    EXPECT_EQ(odl_sim_ring_next(&shm->to_server, slots, 0, &slot), ODL_SIM_RING_NONE);
    uint64_t head = 0;
    for (; head < ODL_SIM_SLOTS; ++head) {
        ASSERT_EQ(odl_sim_ring_room(&shm->to_server, slots, head, &slot), ODL_SIM_RING_OK);
        slot->len = uint32_t(ODL_FRAME_HDR_BYTES + head % 64);
        odl_sim_store(&shm->to_server.head, head + 1);
    }
    EXPECT_EQ(odl_sim_ring_room(&shm->to_server, slots, head, &slot), ODL_SIM_RING_NONE);
    EXPECT_EQ(odl_sim_ring_filled(&shm->to_server, 0), int64_t(ODL_SIM_SLOTS));
    EXPECT_EQ(odl_sim_ring_filled(&shm->to_server, 5), int64_t(ODL_SIM_SLOTS - 5));
    EXPECT_EQ(odl_sim_ring_filled(&shm->to_server, ODL_SIM_SLOTS), 0);
    uint64_t tail = 0;
    ASSERT_EQ(odl_sim_ring_next(&shm->to_server, slots, tail, &slot), ODL_SIM_RING_OK);
    EXPECT_EQ(odl_sim_slot_len(slot), ODL_FRAME_HDR_BYTES);
    odl_sim_store(&shm->to_server.tail, ++tail);
    EXPECT_EQ(odl_sim_ring_room(&shm->to_server, slots, head, &slot), ODL_SIM_RING_OK);
    EXPECT_EQ(slot, &slots[0]);  // wrapped around
    // Impossible indices: a head more than a ring ahead, a tail ahead of the head.
    shm->to_server.head = tail + ODL_SIM_SLOTS + 1;
    EXPECT_EQ(odl_sim_ring_next(&shm->to_server, slots, tail, &slot), ODL_SIM_RING_CORRUPT);
    EXPECT_EQ(odl_sim_ring_filled(&shm->to_server, tail), -1);
    EXPECT_EQ(odl_sim_ring_filled(&shm->to_server, tail + ODL_SIM_SLOTS + 2), -1);  // the tail ahead of the head
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
    shm->version = 2;  // frames copied into the client's ring, not read from the sender's
    EXPECT_NE(odl_sim_shm_check(shm), nullptr);
}

// Descriptors come from the server; each field is read once and checked
// before the client reads the sender's slot.
TEST(SimRings, DescriptorsAreCheckedBeforeUse) {
    odl_sim_desc d{}, out{};
    d.len = 100;
    d.slot = ODL_SIM_SLOTS - 1;
    d.stamp_ns = 42;
    d.region = 7;
    d.handed_ns = 40;
    ASSERT_EQ(odl_sim_desc_take(&d, &out), nullptr);
    EXPECT_EQ(out.len, 100u);
    EXPECT_EQ(out.slot, ODL_SIM_SLOTS - 1);
    EXPECT_EQ(out.stamp_ns, 42u);
    EXPECT_EQ(out.region, 7u);
    EXPECT_EQ(out.handed_ns, 40u);
    struct bad {
        odl_sim_desc d;
        const char* want;
    };
    auto with = [&d](auto change) {
        odl_sim_desc x = d;
        change(x);
        return x;
    };
    const std::vector<bad> cases = {
        {with([](odl_sim_desc& x) { x.len = ODL_FRAME_HDR_BYTES - 1; }), "impossible frame length"},
        {with([](odl_sim_desc& x) { x.len = ODL_FRAME_MAX_BYTES + 1; }), "impossible frame length"},
        {with([](odl_sim_desc& x) { x.slot = ODL_SIM_SLOTS; }), "outside the sender's ring"},
        {with([](odl_sim_desc& x) { x.region = 0; }), "no ring memory"},
        {with([](odl_sim_desc& x) { x.handed_ns = 0; }), "without its hand-over time"},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const char* why = odl_sim_desc_take(&cases[i].d, &out);
        ASSERT_NE(why, nullptr) << "case " << i << " passed";
        EXPECT_NE(std::string(why).find(cases[i].want), std::string::npos) << "case " << i << ": " << why;
    }
    // The descriptor ring's indices are checked like the frame ring's.
    std::vector<unsigned char> mem(ODL_SIM_SHM_BYTES);
    auto* shm = reinterpret_cast<odl_sim_shm*>(mem.data());
    odl_sim_shm_init(shm);
    EXPECT_EQ(odl_sim_ring_can_take(&shm->to_client, 0), ODL_SIM_RING_NONE);
    shm->to_client.head = ODL_SIM_SLOTS;
    EXPECT_EQ(odl_sim_ring_can_take(&shm->to_client, 0), ODL_SIM_RING_OK);
    EXPECT_EQ(odl_sim_ring_can_put(&shm->to_client, ODL_SIM_SLOTS), ODL_SIM_RING_NONE);
    shm->to_client.head = ODL_SIM_SLOTS + 1;
    EXPECT_EQ(odl_sim_ring_can_take(&shm->to_client, 0), ODL_SIM_RING_CORRUPT);
    shm->to_client.tail = 5;
    EXPECT_EQ(odl_sim_ring_can_put(&shm->to_client, 4), ODL_SIM_RING_CORRUPT);
    // What a producer that caches the tail reads: the free entries, or -1.
    EXPECT_EQ(odl_sim_ring_free(&shm->to_client, 4), -1);
    EXPECT_EQ(odl_sim_ring_free(&shm->to_client, 5), int64_t(ODL_SIM_SLOTS));
    EXPECT_EQ(odl_sim_ring_free(&shm->to_client, 5 + ODL_SIM_SLOTS - 3), 3);
    EXPECT_EQ(odl_sim_ring_free(&shm->to_client, 5 + ODL_SIM_SLOTS), 0);
    EXPECT_EQ(odl_sim_ring_free(&shm->to_client, 6 + ODL_SIM_SLOTS), -1);
}

TEST(SimCodec, TakingTheSleepFlagClearsItOnlyWhenSet) {
    __u32 flag = 0;
    EXPECT_FALSE(odl_sim_take_flag(&flag));
    EXPECT_EQ(flag, 0u);
    flag = 1;
    EXPECT_TRUE(odl_sim_take_flag(&flag));
    EXPECT_EQ(flag, 0u);
    EXPECT_FALSE(odl_sim_take_flag(&flag));
}

}  // namespace
