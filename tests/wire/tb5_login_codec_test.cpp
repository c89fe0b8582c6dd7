// SPDX-License-Identifier: MIT
// Tests for include/odl/wire/tb5_login_codec.h, the checks odl_tb5.ko runs
// on a peer's XDomain service packets: what is ours, what is well formed,
// which LOGIN and LOGIN_RESP terms are accepted.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "odl/wire/frame.h"
#include "odl/wire/tb5_login_codec.h"

namespace {

const __u8 kLocal[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
const __u8 kRemote[16] = {9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9};
const __u8 kService[16] = ODL_XD_SERVICE_UUID_BYTES;
const odl_xd_ids kIds{0x301, kLocal, kRemote};

template <typename T>
T packet(__u32 type) {
    T p{};
    p.hdr.route_hi = 0x80000000u;  // bit 63: set on packets to the host's side
    p.hdr.route_lo = 0x301;
    p.hdr.length_sn = ((sizeof(T) - 12) / 4) | (2u << ODL_XD_SN_SHIFT);
    std::memcpy(p.hdr.uuid, kService, 16);
    std::memcpy(p.hdr.initiator_uuid, kRemote, 16);
    std::memcpy(p.hdr.target_uuid, kLocal, 16);
    p.hdr.type = type;
    p.hdr.command_id = 7;
    return p;
}

struct bare {
    odl_xd_hdr hdr;
};

odl_xd_login login(unsigned rings) {
    auto l = packet<odl_xd_login>(ODL_XD_LOGIN);
    l.version_major = ODL_XD_VERSION_MAJOR;
    l.version_minor = ODL_XD_VERSION_MINOR;
    l.features = ODL_XD_FEAT_CREDITS | (rings > 1 ? ODL_XD_FEAT_RINGS : 0);
    l.ring_size = 256;
    l.frame_bytes = ODL_FRAME_MAX_BYTES;
    if (rings > 1) l.rings = rings;
    for (unsigned i = 0; i < rings; i++) odl_xd_login_set_path(&l, i, 8 + 2 * i);
    return l;
}

template <typename T>
odl_xd_verdict classify(const T& p, size_t size = sizeof(T), __u32* sn = nullptr) {
    odl_xd_hdr hdr;
    __u32 s = 0;
    const auto v = odl_xd_classify(&p, size, &kIds, &hdr, &s);
    if (sn) *sn = s;
    return v;
}

__u32 check(const odl_xd_login& l, unsigned* rings = nullptr) {
    unsigned r = 0;
    const __u32 st = odl_xd_login_check(&l, 63, ODL_FRAME_MAX_BYTES, &r);
    if (rings) *rings = r;
    return st;
}

TEST(LoginCodec, RequestsOfTheRightSizeFromThePeerAreOurs) {
    __u32 sn = 0;
    EXPECT_EQ(classify(login(4), sizeof(odl_xd_login), &sn), ODL_XD_REQUEST);
    EXPECT_EQ(sn, 2u);
    EXPECT_EQ(classify(packet<odl_xd_port>(ODL_XD_PORT)), ODL_XD_REQUEST);
    EXPECT_EQ(classify(packet<bare>(ODL_XD_LOGOUT)), ODL_XD_REQUEST);
    EXPECT_EQ(classify(packet<bare>(ODL_XD_PING)), ODL_XD_REQUEST);
    EXPECT_EQ(classify(packet<odl_xd_login_resp>(ODL_XD_LOGIN_RESP)), ODL_XD_ANSWER);
    EXPECT_EQ(classify(packet<odl_xd_status>(ODL_XD_STATUS)), ODL_XD_ANSWER);
}

TEST(LoginCodec, OtherPeersAndServicesAreLeftAlone) {
    auto l = login(1);
    EXPECT_EQ(classify(l, sizeof(odl_xd_hdr) - 4), ODL_XD_FOREIGN);
    l.hdr.route_lo = 0x1;
    EXPECT_EQ(classify(l), ODL_XD_FOREIGN);
    l = login(1);
    l.hdr.uuid[15] ^= 1;
    EXPECT_EQ(classify(l), ODL_XD_FOREIGN);
    l = login(1);
    l.hdr.initiator_uuid[0] ^= 1;
    EXPECT_EQ(classify(l), ODL_XD_FOREIGN);
    l = login(1);
    l.hdr.target_uuid[3] ^= 1;
    EXPECT_EQ(classify(l), ODL_XD_FOREIGN);
}

TEST(LoginCodec, OursOfNoKnownShapeIsMalformed) {
    auto l = login(1);
    l.hdr.length_sn += 1;  // length says one dword more
    EXPECT_EQ(classify(l), ODL_XD_MALFORMED);
    EXPECT_EQ(classify(login(1), sizeof(odl_xd_login) - 2), ODL_XD_MALFORMED);  // not whole dwords
    auto p = packet<odl_xd_port>(ODL_XD_LOGIN);  // a LOGIN the size of a PORT
    EXPECT_EQ(classify(p), ODL_XD_MALFORMED);
    auto u = packet<bare>(42);
    EXPECT_EQ(classify(u), ODL_XD_MALFORMED);
}

TEST(LoginCodec, WellFormedLoginsPass) {
    for (unsigned n = 1; n <= ODL_XD_RINGS_MAX; n++) {
        unsigned rings = 0;
        const auto l = login(n);
        EXPECT_EQ(check(l, &rings), __u32(ODL_XD_ST_OK)) << n;
        EXPECT_EQ(rings, n);
        for (unsigned i = 0; i < n; i++) EXPECT_EQ(odl_xd_login_path(&l, i), 8 + 2 * i);
    }
    auto l = login(4);
    EXPECT_EQ(l.transmit_path_ext[0], 10u | 12u << 16);
    EXPECT_EQ(l.transmit_path_ext[1], 14u);
}

TEST(LoginCodec, BadLoginTermsAreRefused) {
    auto l = login(2);
    l.version_major = 2;
    EXPECT_EQ(check(l), __u32(ODL_XD_ST_VERSION));
    struct mutation {
        const char* what;
        void (*apply)(odl_xd_login&);
    };
    const mutation bad[] = {
        {"5 rings", [](odl_xd_login& x) { x.rings = 5; }},
        {"0 rings with the feature", [](odl_xd_login& x) { x.rings = 0; }},
        {"rings without the feature", [](odl_xd_login& x) { x.features &= ~ODL_XD_FEAT_RINGS; }},
        {"a HopID used twice", [](odl_xd_login& x) { x.transmit_path_ext[0] = 8; }},
        {"a HopID below 8", [](odl_xd_login& x) { x.transmit_path = 7; }},
        {"a HopID above the maximum", [](odl_xd_login& x) { x.transmit_path = 64; }},
        {"bits past the last ring", [](odl_xd_login& x) { x.transmit_path_ext[1] = 20; }},
        {"stray high bits", [](odl_xd_login& x) { x.transmit_path_ext[1] = 1u << 16; }},
        {"no credits", [](odl_xd_login& x) { x.features &= ~ODL_XD_FEAT_CREDITS; }},
        {"another frame size", [](odl_xd_login& x) { x.frame_bytes = 2048; }},
        {"ring size not a power of two", [](odl_xd_login& x) { x.ring_size = 100; }},
        {"ring size too small", [](odl_xd_login& x) { x.ring_size = 32; }},
        {"ring size too large", [](odl_xd_login& x) { x.ring_size = 32768; }},
    };
    for (const auto& m : bad) {
        l = login(2);
        m.apply(l);
        EXPECT_EQ(check(l), __u32(ODL_XD_ST_INVAL)) << m.what;
    }
    l = login(1);
    l.rings = 1;  // one ring: the 1.0 form, rings fields reserved
    EXPECT_EQ(check(l), __u32(ODL_XD_ST_INVAL));
}

odl_xd_login_resp resp(unsigned rings) {
    auto r = packet<odl_xd_login_resp>(ODL_XD_LOGIN_RESP);
    r.status = ODL_XD_ST_OK;
    r.version_major = ODL_XD_VERSION_MAJOR;
    r.version_minor = ODL_XD_VERSION_MINOR;
    r.features = ODL_XD_FEAT_CREDITS | (rings ? ODL_XD_FEAT_RINGS : 0);
    r.rings = rings;
    r.frame_bytes = ODL_FRAME_MAX_BYTES;
    return r;
}

odl_xd_resp_verdict judge(const odl_xd_login_resp& r, unsigned offer) {
    return odl_xd_login_resp_check(&r, offer, ODL_FRAME_MAX_BYTES);
}

TEST(LoginCodec, LoginResponses) {
    EXPECT_EQ(judge(resp(0), 1), ODL_XD_RESP_OK);
    EXPECT_EQ(judge(resp(3), 4), ODL_XD_RESP_OK);
    EXPECT_EQ(judge(resp(3), 1), ODL_XD_RESP_MALFORMED);  // a count we did not ask for
    EXPECT_EQ(judge(resp(5), 4), ODL_XD_RESP_MALFORMED);
    auto r = resp(0);
    r.reserved[1] = 1;
    EXPECT_EQ(judge(r, 1), ODL_XD_RESP_MALFORMED);
    r = resp(0);
    r.status = ODL_XD_ST_VERSION;
    EXPECT_EQ(judge(r, 1), ODL_XD_RESP_REFUSED);
    r.status = ODL_XD_ST_INVAL;
    r.version_minor = 0;  // a 1.0 peer refusing our rings fields
    EXPECT_EQ(judge(r, 2), ODL_XD_RESP_ONE_RING);
    EXPECT_EQ(judge(r, 1), ODL_XD_RESP_REFUSED);
    r = resp(0);
    r.frame_bytes = 1024;
    EXPECT_EQ(judge(r, 1), ODL_XD_RESP_MALFORMED);
}

TEST(LoginCodec, AnswersMatchTheRequest) {
    const auto r = resp(0);
    EXPECT_TRUE(odl_xd_answers(&r.hdr, sizeof(r), ODL_XD_LOGIN_RESP, 7, &kIds));
    EXPECT_FALSE(odl_xd_answers(&r.hdr, sizeof(r), ODL_XD_LOGIN_RESP, 8, &kIds));
    EXPECT_FALSE(odl_xd_answers(&r.hdr, sizeof(r), ODL_XD_STATUS, 7, &kIds));
    EXPECT_FALSE(odl_xd_answers(&r.hdr, sizeof(odl_xd_status), ODL_XD_LOGIN_RESP, 7, &kIds));
}

TEST(LoginCodec, PortNotices) {
    auto p = packet<odl_xd_port>(ODL_XD_PORT);
    p.open = 1;
    EXPECT_EQ(odl_xd_port_check(&p), __u32(ODL_XD_ST_OK));
    p.open = 2;
    EXPECT_EQ(odl_xd_port_check(&p), __u32(ODL_XD_ST_INVAL));
}

}  // namespace
