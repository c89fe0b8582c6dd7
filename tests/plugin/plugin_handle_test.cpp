// SPDX-License-Identifier: MIT
// The connection handle (plugin/handle.h): what listen() writes reads back
// whole; connect() keeps its progress in it; bytes that are not a
// listener's handle are refused with the reason.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "handle.h"

namespace {

using odl::plugin::handle;
using odl::plugin::read_handle;

struct buf {
    unsigned char b[NCCL_NET_HANDLE_MAXSIZE];
    buf() { std::memset(b, 0xA5, sizeof(b)); }  // listen() must write every byte
};

TEST(PluginHandle, WhatListenWritesReadsBack) {
    buf h;
    odl::plugin::write_handle(h.b, 0x1234567890ull, 3, "hostA/4242");
    for (size_t i = sizeof(handle); i < sizeof(h.b); i++) ASSERT_EQ(h.b[i], 0) << i;
    handle hd;
    ASSERT_EQ(read_handle(h.b, 1000, hd), nullptr);
    EXPECT_EQ(hd.listen_id, 0x1234567890ull);
    EXPECT_EQ(hd.listen_dev, 3);
    EXPECT_STREQ(hd.identity, "hostA/4242");
    EXPECT_EQ(hd.tries, 0u);

    hd.tries = 2;
    hd.connect_start_ns = 900;
    hd.listen_id = 1;  // connect() only stores its progress
    odl::plugin::save_connect_state(h.b, hd);
    handle again;
    ASSERT_EQ(read_handle(h.b, 1000, again), nullptr);
    EXPECT_EQ(again.tries, 2u);
    EXPECT_EQ(again.connect_start_ns, 900u);
    EXPECT_EQ(again.listen_id, 0x1234567890ull);
    EXPECT_STREQ(read_handle(h.b, 899, again), "connect progress from the future");
}

TEST(PluginHandle, ALongIdentityIsCutAndTerminated) {
    buf h;
    odl::plugin::write_handle(h.b, 7, 0, std::string(200, 'x'));
    handle hd;
    ASSERT_EQ(read_handle(h.b, 0, hd), nullptr);
    EXPECT_EQ(std::strlen(hd.identity), sizeof(hd.identity) - 1);
}

TEST(PluginHandle, ForeignBytesAreRefusedWithTheReason) {
    struct mutation {
        const char* why;
        void (*apply)(handle&);
    };
    const mutation bad[] = {
        {"not an ODL handle", [](handle& x) { x.magic ^= 1; }},
        {"an ODL handle of another version", [](handle& x) { x.version = 2; }},
        {"reserved bits set", [](handle& x) { x.reserved = 1; }},
        {"no listener id", [](handle& x) { x.listen_id = 0; }},
        {"listener identity not terminated", [](handle& x) { std::memset(x.identity, 'y', sizeof(x.identity)); }},
        {"no listener identity", [](handle& x) { x.identity[0] = 0; }},
        {"connect progress without a try", [](handle& x) { x.connect_start_ns = 5; }},
    };
    for (const auto& m : bad) {
        buf h;
        odl::plugin::write_handle(h.b, 9, 0, "peer");
        handle hd;
        std::memcpy(&hd, h.b, sizeof(hd));
        m.apply(hd);
        std::memcpy(h.b, &hd, sizeof(hd));
        const char* why = read_handle(h.b, 100, hd);
        ASSERT_NE(why, nullptr) << m.why;
        EXPECT_STREQ(why, m.why);
    }
    const unsigned char zero[NCCL_NET_HANDLE_MAXSIZE] = {};
    handle hd;
    EXPECT_STREQ(read_handle(zero, 0, hd), "not an ODL handle");
}

}  // namespace
