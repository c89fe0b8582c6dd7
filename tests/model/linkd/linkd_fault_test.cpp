// SPDX-License-Identifier: MIT
// odl-linkd fault injection (odl/model/linkd/fault.h): the spec grammar and
// its refusals, LOGIN / LOGIN_RESP rewrites on real encoded control packets
// (CRC valid afterwards, the field changed, every other byte unchanged,
// count / skip / from respected, foreign packets untouched), every data
// mode on real encoded frames, the control commands, and the cable tap
// (drop returns the receive credit, duplicate delivers twice).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <tuple>
#include <systemc>
#include <vector>

#include "odl/model/cable/cable.h"
#include "odl/model/linkd/fault.h"
#include "odl/model/router/ctl_packet.h"
#include "odl/wire/frame.h"
#include "odl/wire/frame_codec.h"
#include "odl/wire/tb5_login.h"
#include "odl/wire/usb4_ctl.h"

namespace odl::model::linkd {
namespace {

std::vector<std::uint32_t> struct_dwords(const void* p, std::size_t n) {
    std::vector<std::uint32_t> dw(n / 4);
    std::memcpy(dw.data(), p, n);  // x86: CPU order, as Linux hands them to tb_ctl
    return dw;
}

void fill_hdr(odl_xd_hdr& h, std::uint32_t type, std::size_t size, const std::uint8_t* uuid) {
    h.route_hi = 0;
    h.route_lo = 1;
    h.length_sn = static_cast<std::uint32_t>((size - 12) / 4);
    std::memcpy(h.uuid, uuid, 16);
    for (int i = 0; i < 16; ++i) {
        h.initiator_uuid[i] = static_cast<std::uint8_t>(0xa0 + i);
        h.target_uuid[i] = static_cast<std::uint8_t>(0xb0 + i);
    }
    h.type = type;
    h.command_id = 7;
}

/// An odl_tb5 LOGIN as the module sends it (rings=1: the 1.0 form).
odl_xd_login login_req() {
    odl_xd_login l{};
    fill_hdr(l.hdr, ODL_XD_LOGIN, sizeof(l), odl_service_uuid);
    l.version_major = ODL_XD_VERSION_MAJOR;
    l.version_minor = ODL_XD_VERSION_MINOR;
    l.features = ODL_XD_FEAT_CREDITS;
    l.ring_size = 256;
    l.frame_bytes = ODL_FRAME_MAX_BYTES;
    l.transmit_path = 8;
    return l;
}

odl_xd_login_resp login_resp() {
    odl_xd_login_resp r{};
    fill_hdr(r.hdr, ODL_XD_LOGIN_RESP, sizeof(r), odl_service_uuid);
    r.status = ODL_XD_ST_OK;
    r.version_major = ODL_XD_VERSION_MAJOR;
    r.version_minor = ODL_XD_VERSION_MINOR;
    r.features = ODL_XD_FEAT_CREDITS;
    r.ring_size = 256;
    r.frame_bytes = ODL_FRAME_MAX_BYTES;
    return r;
}

template <class T>
frame ctl_frame(const T& pkt, std::uint8_t pdf = ODL_USB4_PDF_XDOMAIN_RESP) {
    frame f;
    f.bytes = ctl::encode(struct_dwords(&pkt, sizeof(pkt)));
    f.len = static_cast<std::uint32_t>(f.bytes.size());
    f.control = true;
    f.eof = pdf;
    return f;
}

template <class T>
T decode_as(const frame& f, bool* crc_ok) {
    auto dw = ctl::decode(f.bytes, crc_ok);
    T out{};
    EXPECT_TRUE(dw.has_value());
    if (dw && dw->size() * 4 == sizeof(T)) std::memcpy(&out, dw->data(), sizeof(T));
    return out;
}

/// A DATA frame of @payload bytes (middle of a message unless it is short).
frame data_frame(std::uint32_t payload, std::uint32_t seq = 5) {
    frame f;
    f.bytes.resize(ODL_FRAME_HDR_BYTES + payload);
    odl_frame_info fi{};
    fi.type = ODL_FRAME_DATA;
    fi.flags = payload == ODL_FRAME_MAX_PAYLOAD ? 0 : ODL_FRAME_F_EOM;
    fi.stream = 0;
    fi.len = payload;
    fi.seq = seq;
    fi.tag = 3;
    fi.msg_len = 10 * ODL_FRAME_MAX_PAYLOAD;
    fi.offset = fi.msg_len - payload;
    if (fi.flags == 0) fi.offset = ODL_FRAME_MAX_PAYLOAD;
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(f.bytes.data()), &fi);
    for (std::uint32_t i = 0; i < payload; ++i)
        f.bytes[ODL_FRAME_HDR_BYTES + i] = static_cast<std::uint8_t>(i * 7 + 1);
    f.len = static_cast<std::uint32_t>(f.bytes.size());
    f.sof = ODL_XD_PDF_SOF;
    f.eof = ODL_XD_PDF_EOF;
    f.hop = 8;
    return f;
}

/// A CREDIT frame (header only) on stream 0.
frame credit_frame() {
    frame f = data_frame(0);
    odl_frame_info fi{};
    fi.type = ODL_FRAME_CREDIT;
    fi.flags = ODL_FRAME_F_CREDIT;
    fi.credit = 9;
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(f.bytes.data()), &fi);
    return f;
}

odl_frame_err decode_err(const frame& f) {
    odl_frame_info fi{};
    return odl_frame_decode(f.bytes.data(), f.bytes.size(), ODL_MAX_STREAMS, &fi);
}

fault_spec parse_ok(const std::string& s) {
    std::string err;
    auto spec = parse_fault(s, err);
    EXPECT_TRUE(spec.has_value()) << s << ": " << err;
    return spec ? *spec : fault_spec{};
}

std::size_t bytes_differing(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                            std::size_t from, std::size_t to) {
    std::size_t n = 0;
    for (std::size_t i = from; i < to && i < a.size() && i < b.size(); ++i) n += a[i] != b[i];
    return n;
}

std::uint32_t le_u16(const std::uint8_t* p) { return p[0] | (std::uint32_t{p[1]} << 8); }

std::string fmt_len(std::uint32_t from, std::uint32_t to) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "len %#x -> %#x", from, to);
    return buf;
}

struct injector_with_log {
    std::vector<std::string> lines;
    fault_injector inj{[this](const std::string& l) { lines.push_back(l); }};
};

// ------------------------------------------------------------------ grammar

TEST(FaultSpec, ParsesEveryTargetAndKey) {
    auto s = parse_ok("login:rings=5,features=3,count=2,skip=1,from=A");
    EXPECT_EQ(s.target, fault_target::login);
    ASSERT_EQ(s.assigns.size(), 2u);
    EXPECT_EQ(s.assigns[0].field, "rings");
    EXPECT_EQ(s.assigns[0].dword, offsetof(odl_xd_login, rings) / 4);
    EXPECT_EQ(s.assigns[0].value, 5u);
    EXPECT_EQ(s.count, 2u);
    EXPECT_EQ(s.skip, 1u);
    EXPECT_EQ(s.from, 0);
    auto v = parse_ok("login:version_minor=0x7");
    ASSERT_EQ(v.assigns.size(), 1u);
    EXPECT_EQ(v.assigns[0].shift, 16u);
    EXPECT_EQ(v.assigns[0].mask, 0xffffu);
    auto r = parse_ok("login_resp:reserved1=1,from=B");
    EXPECT_EQ(r.target, fault_target::login_resp);
    EXPECT_EQ(r.assigns[0].dword, offsetof(odl_xd_login_resp, reserved) / 4 + 1);
    EXPECT_EQ(r.from, 1);
    auto d = parse_ok("data:flip,bits=3,seed=9,every=4,count=10,frames=all");
    EXPECT_EQ(d.target, fault_target::data);
    EXPECT_EQ(d.mode, data_mode::flip);
    EXPECT_EQ(d.bits, 3u);
    EXPECT_EQ(d.seed, 9u);
    EXPECT_EQ(d.every, 4u);
    EXPECT_EQ(d.count, 10u);
    EXPECT_TRUE(d.all_frames);
    EXPECT_EQ(parse_ok("data:len,value=4000").value.value_or(0), 4000u);
    EXPECT_EQ(parse_ok("data:truncate").mode, data_mode::truncate);
    auto l = parse_ok("logout:drop,skip=1,every=2,count=3,from=B");
    EXPECT_EQ(l.target, fault_target::logout);
    EXPECT_EQ(l.skip, 1u);
    EXPECT_EQ(l.every, 2u);
    EXPECT_EQ(l.count, 3u);
    EXPECT_EQ(l.from, 1);
}

TEST(FaultSpec, RefusesBadSpecsNamingTheProblem) {
    const std::pair<const char*, const char*> bad[] = {
        {"", "no ':'"},
        {"login", "no ':'"},
        {"bogus:x=1", "unknown target 'bogus'"},
        {"login:", "empty item"},
        {"login:count=2", "no FIELD=VALUE"},
        {"login:nosuch=1", "unknown login field 'nosuch'"},
        {"login:rings=abc", "rings=abc: not a number"},
        {"login:rings=-1", "not a number"},
        {"login:version_major=0x10000", "does not fit 2 bytes"},
        {"login:rings=0x100000000", "does not fit 4 bytes"},
        {"login:rings=1,rings=2", "'rings' given twice"},
        {"login:rings=1,count=0", "count=0: want 1.."},
        {"login:rings=1,count=1000001", "count=1000001"},
        {"login:rings=1,every=0", "every=0"},
        {"login:rings=1,from=C", "from=C: want A or B"},
        {"login:rings=1,seed=3", "unknown login field 'seed'"},
        {"login_resp:transmit_path=1", "unknown login_resp field 'transmit_path'"},
        {"data:", "unknown data mode ''"},
        {"data:explode", "unknown data mode 'explode'"},
        {"data:len,value=0x10000", "value=0x10000: want 0..65535"},
        {"data:drop,value=1", "value= does not apply to data:drop"},
        {"data:truncate,value=0", "want 1..4095"},
        {"data:len,bits=2", "bits= is for data:flip"},
        {"data:flip,bits=0", "bits=0"},
        {"data:flip,bits=257", "bits=257"},
        {"data:len,frames=some", "frames=some: want data or all"},
        {"login:rings=1,frames=all", "frames= is for data faults"},
        {"data:len,count", "'count' is not KEY=VALUE"},
        {"data:len,,count=1", "empty item"},
        {"data:len,nosuch=1", "unknown key 'nosuch'"},
        {"logout:", "unknown logout mode ''"},
        {"logout:rewrite", "unknown logout mode 'rewrite'"},
        {"logout:drop,seed=2", "unknown key 'seed' (have: count, skip, every, from)"},
        {"logout:drop,status=1", "unknown key 'status'"},
    };
    for (const auto& [spec, why] : bad) {
        std::string err;
        EXPECT_FALSE(parse_fault(spec, err).has_value()) << spec;
        EXPECT_NE(err.find(why), std::string::npos) << spec << " -> " << err;
        EXPECT_NE(err.find("bad fault"), std::string::npos) << err;
    }
}

// ------------------------------------------------------------------ logout

TEST(FaultLogout, DropsOnlyTheLogoutsOfTheChosenHost) {
    injector_with_log t;
    t.inj.add(parse_ok("logout:drop,from=A,count=2"));
    odl_xd_hdr logout{};
    fill_hdr(logout, ODL_XD_LOGOUT, sizeof(logout), odl_service_uuid);
    odl_xd_hdr ping = logout;
    ping.type = ODL_XD_PING;
    odl_xd_hdr foreign = logout;
    foreign.uuid[0] ^= 1;
    frame f = ctl_frame(logout, ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_EQ(t.inj.apply(1, f), tap_verdict::pass) << "from=A dropped B's LOGOUT";
    frame p = ctl_frame(ping, ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_EQ(t.inj.apply(0, p), tap_verdict::pass) << "a PING is not a LOGOUT";
    frame o = ctl_frame(foreign, ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_EQ(t.inj.apply(0, o), tap_verdict::pass) << "another service's packet";
    frame l = ctl_frame(login_req(), ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_EQ(t.inj.apply(0, l), tap_verdict::pass) << "a LOGIN is not a LOGOUT";
    frame bad = ctl_frame(logout, ODL_USB4_PDF_XDOMAIN_REQ);
    bad.bytes.back() ^= 1;  // CRC no longer matches: not judged
    EXPECT_EQ(t.inj.apply(0, bad), tap_verdict::pass);
    EXPECT_EQ(t.inj.injected(), 0u);
    frame a1 = ctl_frame(logout, ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_EQ(t.inj.apply(0, a1), tap_verdict::drop);
    frame a2 = ctl_frame(logout, ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_EQ(t.inj.apply(0, a2), tap_verdict::drop);
    frame a3 = ctl_frame(logout, ODL_USB4_PDF_XDOMAIN_REQ);
    EXPECT_EQ(t.inj.apply(0, a3), tap_verdict::pass) << "count=2 exceeded";
    EXPECT_EQ(t.inj.injected(), 2u);
    ASSERT_EQ(t.lines.size(), 2u);
    EXPECT_NE(t.lines[0].find("A->B: LOGOUT dropped"), std::string::npos) << t.lines[0];
}

// ------------------------------------------------------------------ login

TEST(FaultLogin, RewritesFieldWithValidCrcAndNothingElse) {
    injector_with_log t;
    t.inj.add(parse_ok("login:rings=5,transmit_path_ext1=0x90000"));
    const odl_xd_login req = login_req();
    frame f = ctl_frame(req);
    const auto before = f.bytes;
    EXPECT_EQ(t.inj.apply(0, f), tap_verdict::pass);
    ASSERT_EQ(f.bytes.size(), before.size());
    bool crc_ok = false;
    odl_xd_login got = decode_as<odl_xd_login>(f, &crc_ok);
    EXPECT_TRUE(crc_ok) << "CRC not recomputed";
    EXPECT_EQ(got.rings, 5u);
    EXPECT_EQ(got.transmit_path_ext[1], 0x90000u);
    // Every other byte of the struct is what the sender wrote.
    odl_xd_login want = req;
    want.rings = 5;
    want.transmit_path_ext[1] = 0x90000;
    EXPECT_EQ(std::memcmp(&got, &want, sizeof(got)), 0);
    const std::size_t rings_at = offsetof(odl_xd_login, rings);
    EXPECT_EQ(bytes_differing(before, f.bytes, 0, rings_at), 0u);
    EXPECT_EQ(t.inj.injected(), 1u);
    ASSERT_EQ(t.lines.size(), 1u);
    EXPECT_NE(t.lines[0].find("A->B: LOGIN rings 0x0 -> 0x5"), std::string::npos) << t.lines[0];
    EXPECT_NE(t.lines[0].find("CRC recomputed"), std::string::npos);
}

TEST(FaultLogin, SixteenBitHalvesKeepTheirNeighbour) {
    fault_injector inj;
    inj.add(parse_ok("login:version_major=2"));
    frame f = ctl_frame(login_req());
    inj.apply(1, f);
    bool crc_ok = false;
    auto got = decode_as<odl_xd_login>(f, &crc_ok);
    EXPECT_TRUE(crc_ok);
    EXPECT_EQ(got.version_major, 2u);
    EXPECT_EQ(got.version_minor, ODL_XD_VERSION_MINOR);
}

TEST(FaultLogin, CountSkipAndDirectionAreRespected) {
    injector_with_log t;
    t.inj.add(parse_ok("login:transmit_path=2,count=2,skip=1,from=B"));
    auto rewritten = [&](int from) {
        frame f = ctl_frame(login_req());
        t.inj.apply(from, f);
        bool ok = false;
        return decode_as<odl_xd_login>(f, &ok).transmit_path == 2;
    };
    EXPECT_FALSE(rewritten(0)) << "from=B touched A's LOGIN";
    EXPECT_FALSE(rewritten(1)) << "skip=1: the first is let through";
    EXPECT_TRUE(rewritten(1));
    EXPECT_FALSE(rewritten(0));
    EXPECT_TRUE(t.inj.armed());
    EXPECT_TRUE(rewritten(1));
    EXPECT_FALSE(t.inj.armed());
    EXPECT_FALSE(rewritten(1)) << "count=2 exceeded";
    EXPECT_EQ(t.inj.injected(), 2u);
    EXPECT_EQ(t.lines.size(), 2u);
    EXPECT_NE(t.inj.status().find("done 2/2"), std::string::npos) << t.inj.status();
}

TEST(FaultLogin, LeavesOtherPacketsAlone) {
    fault_injector inj;
    inj.add(parse_ok("login:rings=5,count=100"));
    inj.add(parse_ok("login_resp:status=2,count=100"));
    // A LOGIN_RESP for a login spec and vice versa: only the matching one.
    frame resp = ctl_frame(login_resp());
    inj.apply(0, resp);
    bool ok = false;
    EXPECT_EQ(decode_as<odl_xd_login_resp>(resp, &ok).status, 2u);
    EXPECT_EQ(decode_as<odl_xd_login_resp>(resp, &ok).rings, 0u);
    // Another protocol's packet of the same size and type (ThunderboltIP's
    // LOGIN_RESPONSE is also 100 bytes): different UUID, untouched.
    const std::uint8_t other_uuid[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    odl_xd_login foreign = login_req();
    fill_hdr(foreign.hdr, ODL_XD_LOGIN, sizeof(foreign), other_uuid);
    frame f = ctl_frame(foreign);
    auto before = f.bytes;
    inj.apply(0, f);
    EXPECT_EQ(f.bytes, before);
    // A damaged packet (bad CRC) is not the injector's to judge.
    frame bad = ctl_frame(login_req());
    bad.bytes.back() ^= 1;
    before = bad.bytes;
    inj.apply(0, bad);
    EXPECT_EQ(bad.bytes, before);
    // A config read (not XDomain) and a data frame with LOGIN-like bytes.
    frame cfg = ctl_frame(login_req(), ODL_USB4_PDF_READ);
    before = cfg.bytes;
    inj.apply(0, cfg);
    EXPECT_EQ(cfg.bytes, before);
    frame data = ctl_frame(login_req());
    data.control = false;
    before = data.bytes;
    inj.apply(0, data);
    EXPECT_EQ(data.bytes, before);
    EXPECT_EQ(inj.injected(), 1u);
}

// ------------------------------------------------------------------ data

TEST(FaultData, FieldModesMakeTheCodecRefuseTheFrame) {
    const std::pair<const char*, odl_frame_err> cases[] = {
        {"data:len", ODL_FRAME_ERR_LEN},         {"data:stream", ODL_FRAME_ERR_STREAM},
        {"data:type", ODL_FRAME_ERR_TYPE},       {"data:flags", ODL_FRAME_ERR_FLAGS},
        {"data:reserved", ODL_FRAME_ERR_RESERVED}, {"data:msg_len", ODL_FRAME_ERR_RANGE},
        {"data:offset", ODL_FRAME_ERR_RANGE},
    };
    for (const auto& [spec, err] : cases) {
        fault_injector inj;
        inj.add(parse_ok(spec));
        frame f = data_frame(ODL_FRAME_MAX_PAYLOAD);
        ASSERT_EQ(decode_err(f), ODL_FRAME_OK);
        const auto before = f.bytes;
        EXPECT_EQ(inj.apply(0, f), tap_verdict::pass);
        EXPECT_EQ(decode_err(f), err) << spec;
        EXPECT_EQ(f.bytes.size(), before.size());
        EXPECT_GE(bytes_differing(before, f.bytes, 0, ODL_FRAME_HDR_BYTES), 1u) << spec;
        EXPECT_EQ(bytes_differing(before, f.bytes, ODL_FRAME_HDR_BYTES, before.size()), 0u)
            << spec << ": payload changed";
        EXPECT_EQ(inj.injected(), 1u);
    }
}

TEST(FaultData, ExplicitValueAndSeqPassTheCodec) {
    fault_injector inj;
    inj.add(parse_ok("data:stream,value=3"));
    frame f = data_frame(100);
    inj.apply(0, f);
    odl_frame_info fi{};
    ASSERT_EQ(odl_frame_decode(f.bytes.data(), f.bytes.size(), ODL_MAX_STREAMS, &fi), ODL_FRAME_OK);
    EXPECT_EQ(fi.stream, 3u);
    fault_injector seq;
    seq.add(parse_ok("data:seq"));
    frame g = data_frame(100, 41);
    seq.apply(1, g);
    ASSERT_EQ(odl_frame_decode(g.bytes.data(), g.bytes.size(), ODL_MAX_STREAMS, &fi), ODL_FRAME_OK);
    EXPECT_EQ(fi.seq, 1041u) << "seq: a gap only the receiving engine can see";
}

TEST(FaultData, FlipIsSeededAndTouchesOnlyTheHeader) {
    auto flipped = [](std::uint64_t seed) {
        fault_injector inj;
        inj.add(parse_ok("data:flip,bits=5,seed=" + std::to_string(seed)));
        frame f = data_frame(ODL_FRAME_MAX_PAYLOAD);
        const auto before = f.bytes;
        inj.apply(0, f);
        unsigned bits = 0;
        for (std::size_t i = 0; i < ODL_FRAME_HDR_BYTES; ++i)
            bits += static_cast<unsigned>(__builtin_popcount(before[i] ^ f.bytes[i]));
        EXPECT_EQ(bits, 5u);
        EXPECT_EQ(bytes_differing(before, f.bytes, ODL_FRAME_HDR_BYTES, before.size()), 0u);
        return f.bytes;
    };
    EXPECT_EQ(flipped(7), flipped(7)) << "same seed, different damage";
    EXPECT_NE(flipped(7), flipped(8));
}

TEST(FaultData, PayloadFlipLeavesHeaderAndChangesOneBit) {
    fault_injector inj;
    inj.add(parse_ok("data:payload"));
    frame f = data_frame(1000);
    const auto before = f.bytes;
    inj.apply(0, f);
    EXPECT_EQ(bytes_differing(before, f.bytes, 0, ODL_FRAME_HDR_BYTES), 0u);
    unsigned bits = 0;
    for (std::size_t i = 0; i < before.size(); ++i)
        bits += static_cast<unsigned>(__builtin_popcount(before[i] ^ f.bytes[i]));
    EXPECT_EQ(bits, 1u);
    EXPECT_EQ(decode_err(f), ODL_FRAME_OK);
}

TEST(FaultData, TruncateShortensTheFrame) {
    fault_injector inj;
    inj.add(parse_ok("data:truncate,value=100,count=2"));
    frame f = data_frame(ODL_FRAME_MAX_PAYLOAD);
    const auto before = f.bytes;
    inj.apply(0, f);
    EXPECT_EQ(f.len, 100u);
    ASSERT_EQ(f.bytes.size(), 100u);
    EXPECT_EQ(bytes_differing(before, f.bytes, 0, 100), 0u);
    EXPECT_EQ(decode_err(f), ODL_FRAME_ERR_LEN);
    // Frames no longer than the cut are not counted.
    frame small = data_frame(50);
    inj.apply(0, small);
    EXPECT_EQ(small.len, 82u);
    EXPECT_EQ(inj.injected(), 1u);
    fault_injector rnd;
    rnd.add(parse_ok("data:truncate,seed=3"));
    frame g = data_frame(ODL_FRAME_MAX_PAYLOAD);
    rnd.apply(0, g);
    EXPECT_GE(g.len, 1u);
    EXPECT_LT(g.len, ODL_FRAME_MAX_BYTES);
    EXPECT_EQ(g.bytes.size(), g.len);
}

TEST(FaultData, OnlyDataFramesUnlessAskedAndEverySkipCount) {
    injector_with_log t;
    t.inj.add(parse_ok("data:drop,skip=1,every=3,count=2,from=A"));
    frame credit = credit_frame();
    ASSERT_EQ(decode_err(credit), ODL_FRAME_OK);
    EXPECT_EQ(t.inj.apply(0, credit), tap_verdict::pass) << "frames=data: CREDIT dropped";
    std::vector<tap_verdict> got;
    for (int i = 0; i < 10; ++i) {
        frame f = data_frame(100, static_cast<std::uint32_t>(i));
        got.push_back(t.inj.apply(0, f));
        frame b = data_frame(100);
        EXPECT_EQ(t.inj.apply(1, b), tap_verdict::pass) << "from=A: B's frame dropped";
    }
    // Matching frames 0..9: skip 0, then 1, 4 (every 3), then spent.
    for (int i = 0; i < 10; ++i)
        EXPECT_EQ(got[i], (i == 1 || i == 4) ? tap_verdict::drop : tap_verdict::pass) << i;
    EXPECT_EQ(t.inj.injected(), 2u);
    ASSERT_EQ(t.lines.size(), 2u);
    EXPECT_NE(t.lines[1].find("seq 4"), std::string::npos) << t.lines[1];
    EXPECT_NE(t.lines[1].find("dropped"), std::string::npos);
    fault_injector all;
    all.add(parse_ok("data:duplicate,frames=all"));
    frame h2 = credit_frame();
    EXPECT_EQ(all.apply(0, h2), tap_verdict::duplicate);
    // Frames that are not whole valid OdinLink frames: another protocol's
    // PDFs, a header the codec refuses (thunderbolt_net's, say).
    fault_injector strict;
    strict.add(parse_ok("data:len,frames=all,count=5"));
    frame raw = data_frame(100);
    raw.sof = 3;
    EXPECT_EQ(strict.apply(0, raw), tap_verdict::pass);
    frame junk = data_frame(100);
    junk.bytes[2] = 0xff;  // stream 0xff..: refused by the codec
    const auto junk_before = junk.bytes;
    strict.apply(0, junk);
    EXPECT_EQ(junk.bytes, junk_before);
    EXPECT_EQ(strict.injected(), 0u);
    frame ctl = ctl_frame(login_req());
    fault_injector any;
    any.add(parse_ok("data:flip,frames=all"));
    auto before = ctl.bytes;
    EXPECT_EQ(any.apply(0, ctl), tap_verdict::pass);
    EXPECT_EQ(ctl.bytes, before) << "control packets are not data frames";
}

// ------------------------------------------------------------------ split

/// An odl_tb5 split pair as it enters the cable: the F_SPLIT DATA header
/// frame (exactly a header) and its raw payload frame, both on HopID @hop.
struct split_pair {
    frame hdr, raw;
};
split_pair make_split(std::uint32_t payload, std::uint32_t seq, std::uint16_t hop = 8) {
    split_pair p;
    p.hdr.bytes.resize(ODL_FRAME_HDR_BYTES);
    odl_frame_info fi{};
    fi.type = ODL_FRAME_DATA;
    fi.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM | ODL_FRAME_F_SPLIT;
    fi.len = payload;
    fi.seq = seq;
    fi.tag = 3;
    fi.msg_len = payload;
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(p.hdr.bytes.data()), &fi);
    p.hdr.len = ODL_FRAME_HDR_BYTES;
    p.hdr.sof = ODL_XD_PDF_SOF;
    p.hdr.eof = ODL_XD_PDF_EOF;
    p.hdr.hop = hop;
    p.raw.bytes.resize(payload);
    for (std::uint32_t i = 0; i < payload; ++i)
        p.raw.bytes[i] = static_cast<std::uint8_t>(i * 5 + seq);
    p.raw.len = payload;
    p.raw.sof = ODL_XD_PDF_RAW_SOF;
    p.raw.eof = ODL_XD_PDF_RAW_EOF;
    p.raw.hop = hop;
    return p;
}

odl_frame_err decode_split_hdr(const frame& f, odl_frame_info* fi) {
    return odl_frame_decode_opt(f.bytes.data(), f.bytes.size(), ODL_MAX_STREAMS,
                                ODL_FRAME_DEC_SPLIT, fi);
}

/// What happened to one pair: each frame's verdict and whether it changed.
struct pair_result {
    tap_verdict hdr_v, raw_v;
    bool hdr_changed, raw_changed;
};
pair_result send_pair(fault_injector& inj, int from, split_pair& p) {
    const frame h0 = p.hdr, r0 = p.raw;
    pair_result r{};
    r.hdr_v = inj.apply(from, p.hdr);
    r.raw_v = inj.apply(from, p.raw);
    r.hdr_changed = p.hdr.bytes != h0.bytes || p.hdr.len != h0.len || p.hdr.sof != h0.sof ||
                    p.hdr.eof != h0.eof;
    r.raw_changed = p.raw.bytes != r0.bytes || p.raw.len != r0.len || p.raw.sof != r0.sof ||
                    p.raw.eof != r0.eof;
    return r;
}

TEST(FaultSplit, GrammarAndRefusals) {
    auto s = parse_ok("split:drop-header,count=2,skip=1,every=3,from=B");
    EXPECT_EQ(s.target, fault_target::split);
    EXPECT_EQ(s.smode, split_mode::drop_header);
    EXPECT_EQ(s.count, 2u);
    EXPECT_EQ(s.skip, 1u);
    EXPECT_EQ(s.every, 3u);
    EXPECT_EQ(s.from, 1);
    EXPECT_EQ(parse_ok("split:drop-raw").smode, split_mode::drop_raw);
    EXPECT_EQ(parse_ok("split:raw-pdf").smode, split_mode::raw_pdf);
    auto l = parse_ok("split:len,value=0x7");
    EXPECT_EQ(l.smode, split_mode::len);
    EXPECT_EQ(l.value.value_or(0), 7u);
    const std::pair<const char*, const char*> bad[] = {
        {"split:", "unknown split mode ''"},
        {"split:drop", "unknown split mode 'drop'"},
        {"split:len,value=0x10000", "value=0x10000: want 0..65535 for split:len"},
        {"split:drop-raw,value=1", "value= does not apply to split:drop-raw"},
        {"split:raw-pdf,seed=2", "unknown key 'seed'"},
        {"split:len,bits=1", "unknown key 'bits'"},
        {"split:len,frames=all", "frames= is for data faults"},
        {"split:len,count=0", "count=0: want 1.."},
        {"split:len,from=C", "from=C: want A or B"},
        {"split:len,skip=x", "skip=x: not a number"},
        {"split", "no ':'"},
    };
    for (const auto& [spec, why] : bad) {
        std::string err;
        EXPECT_FALSE(parse_fault(spec, err).has_value()) << spec;
        EXPECT_NE(err.find(why), std::string::npos) << spec << " -> " << err;
    }
}

TEST(FaultSplit, PairIsEncodedAsTheModuleSendsIt) {
    // The helper's frames are what the injector must recognise: check them
    // against the codec, so the tests below cannot pass on bad fixtures.
    split_pair p = make_split(ODL_FRAME_MAX_PAYLOAD, 1);
    odl_frame_info fi{};
    ASSERT_EQ(decode_split_hdr(p.hdr, &fi), ODL_FRAME_OK);
    EXPECT_TRUE(fi.flags & ODL_FRAME_F_SPLIT);
    EXPECT_EQ(fi.len, ODL_FRAME_MAX_PAYLOAD);
    EXPECT_NE(decode_err(p.hdr), ODL_FRAME_OK) << "without DEC_SPLIT the header is refused";
}

TEST(FaultSplit, DropHeaderDropsOnlyTheHeaderAfterSkip) {
    injector_with_log t;
    t.inj.add(parse_ok("split:drop-header,skip=1,from=A"));
    std::vector<pair_result> got;
    for (std::uint32_t i = 0; i < 4; ++i) {
        split_pair p = make_split(100, i);
        got.push_back(send_pair(t.inj, 0, p));
        split_pair q = make_split(100, i);
        const pair_result b = send_pair(t.inj, 1, q);
        EXPECT_EQ(b.hdr_v, tap_verdict::pass) << "from=A: B's pair touched";
        EXPECT_FALSE(b.hdr_changed || b.raw_changed);
    }
    for (std::uint32_t i = 0; i < 4; ++i) {
        EXPECT_EQ(got[i].hdr_v, i == 1 ? tap_verdict::drop : tap_verdict::pass) << i;
        EXPECT_EQ(got[i].raw_v, tap_verdict::pass) << i;
        EXPECT_FALSE(got[i].hdr_changed || got[i].raw_changed) << i;
    }
    EXPECT_EQ(t.inj.injected(), 1u);
    ASSERT_EQ(t.lines.size(), 1u);
    EXPECT_NE(t.lines[0].find("A->B: split header stream 0 seq 1 len 100: header dropped"),
              std::string::npos)
        << t.lines[0];
}

TEST(FaultSplit, DropRawDropsTheRawFrameOnly) {
    injector_with_log t;
    t.inj.add(parse_ok("split:drop-raw,count=2,every=2"));
    std::vector<pair_result> got;
    for (std::uint32_t i = 0; i < 5; ++i) {
        split_pair p = make_split(64, i);
        got.push_back(send_pair(t.inj, 1, p));
    }
    // Matching raw frames 0..4: 0 and 2 (every 2), then spent.
    for (std::uint32_t i = 0; i < 5; ++i) {
        EXPECT_EQ(got[i].hdr_v, tap_verdict::pass) << i;
        EXPECT_EQ(got[i].raw_v, (i == 0 || i == 2) ? tap_verdict::drop : tap_verdict::pass) << i;
        EXPECT_FALSE(got[i].hdr_changed || got[i].raw_changed) << i;
    }
    ASSERT_EQ(t.lines.size(), 2u);
    EXPECT_NE(t.lines[1].find("B->A: split raw frame of 64 bytes on HopID 8: dropped"),
              std::string::npos)
        << t.lines[1];
    EXPECT_FALSE(t.inj.armed());
}

TEST(FaultSplit, LenChangesOnlyTheHeaderLen) {
    for (const auto& [spec, payload, want] :
         {std::tuple<const char*, std::uint32_t, std::uint32_t>{"split:len", ODL_FRAME_MAX_PAYLOAD,
                                                                ODL_FRAME_MAX_PAYLOAD - 1},
          {"split:len", 1, 2},
          {"split:len,value=9", 100, 9}}) {
        injector_with_log t;
        t.inj.add(parse_ok(spec));
        split_pair p = make_split(payload, 4);
        const auto hdr0 = p.hdr.bytes;
        const pair_result r = send_pair(t.inj, 0, p);
        EXPECT_EQ(r.hdr_v, tap_verdict::pass);
        EXPECT_FALSE(r.raw_changed) << spec;
        ASSERT_EQ(p.hdr.bytes.size(), ODL_FRAME_HDR_BYTES);
        EXPECT_EQ(le_u16(p.hdr.bytes.data() + offsetof(odl_frame_hdr, len)), want) << spec;
        // Nothing but len changed (and, by default, on this EOM header
        // msg_len by the same amount).
        const bool dflt = std::string(spec) == "split:len";
        const std::size_t lo = offsetof(odl_frame_hdr, len), mo = offsetof(odl_frame_hdr, msg_len);
        EXPECT_EQ(bytes_differing(hdr0, p.hdr.bytes, 0, lo), 0u);
        EXPECT_EQ(bytes_differing(hdr0, p.hdr.bytes, lo + 2, mo), 0u);
        EXPECT_EQ(bytes_differing(hdr0, p.hdr.bytes, mo + 4, ODL_FRAME_HDR_BYTES), 0u);
        odl_frame_info fi{};
        const odl_frame_err e = decode_split_hdr(p.hdr, &fi);
        if (dflt) {
            EXPECT_EQ(e, ODL_FRAME_OK) << spec << " " << payload;
            EXPECT_EQ(fi.msg_len, want) << spec;
        } else {
            EXPECT_EQ(bytes_differing(hdr0, p.hdr.bytes, mo, mo + 4), 0u);
            EXPECT_EQ(e, ODL_FRAME_ERR_RANGE) << "value= rewrites len alone";
        }
        ASSERT_EQ(t.lines.size(), 1u) << spec;
        EXPECT_NE(t.lines[0].find(fmt_len(payload, want)), std::string::npos) << t.lines[0];
    }
    // The default keeps the header valid for the codec: only the join can
    // see that it does not match its raw frame.
    fault_injector inj;
    inj.add(parse_ok("split:len"));
    split_pair p = make_split(500, 2);
    send_pair(inj, 0, p);
    odl_frame_info fi{};
    ASSERT_EQ(decode_split_hdr(p.hdr, &fi), ODL_FRAME_OK);
    EXPECT_EQ(fi.len, 499u);
    EXPECT_EQ(fi.msg_len, 499u);
    EXPECT_EQ(p.raw.len, 500u);
    // A header in the middle of a message (no EOM) keeps its msg_len.
    fault_injector mid;
    mid.add(parse_ok("split:len"));
    split_pair q = make_split(ODL_FRAME_MAX_PAYLOAD, 3);
    q.hdr.bytes[offsetof(odl_frame_hdr, flags)] &= static_cast<std::uint8_t>(~ODL_FRAME_F_EOM);
    q.hdr.bytes[offsetof(odl_frame_hdr, msg_len) + 1] = 0x40;  // msg_len += 0x4000
    const auto q0 = q.hdr.bytes;
    ASSERT_EQ(decode_split_hdr(q.hdr, &fi), ODL_FRAME_OK);
    send_pair(mid, 0, q);
    EXPECT_EQ(bytes_differing(q0, q.hdr.bytes, offsetof(odl_frame_hdr, msg_len),
                              offsetof(odl_frame_hdr, msg_len) + 4),
              0u);
    EXPECT_EQ(le_u16(q.hdr.bytes.data() + offsetof(odl_frame_hdr, len)), ODL_FRAME_MAX_PAYLOAD - 1);
}

TEST(FaultSplit, RawPdfGivesTheRawFrameWholeFramePdfs) {
    injector_with_log t;
    t.inj.add(parse_ok("split:raw-pdf,skip=2,count=1"));
    for (std::uint32_t i = 0; i < 4; ++i) {
        split_pair p = make_split(300, i);
        const auto raw0 = p.raw.bytes;
        const pair_result r = send_pair(t.inj, 0, p);
        EXPECT_FALSE(r.hdr_changed) << i;
        EXPECT_EQ(r.raw_v, tap_verdict::pass);
        EXPECT_EQ(p.raw.bytes, raw0) << "payload bytes must not change";
        EXPECT_EQ(p.raw.sof, i == 2 ? ODL_XD_PDF_SOF : ODL_XD_PDF_RAW_SOF) << i;
        EXPECT_EQ(p.raw.eof, i == 2 ? ODL_XD_PDF_EOF : ODL_XD_PDF_RAW_EOF) << i;
    }
    ASSERT_EQ(t.lines.size(), 1u);
    EXPECT_NE(t.lines[0].find("PDFs 3/4 -> 1/2"), std::string::npos) << t.lines[0];
}

TEST(FaultSplit, LeavesEverythingButSplitPairsAlone) {
    fault_injector inj;
    inj.add(parse_ok("split:drop-header,count=100"));
    inj.add(parse_ok("split:raw-pdf,count=100"));
    // Whole DATA frames, CREDIT frames and control packets: not split frames.
    frame d = data_frame(100);
    const auto d0 = d.bytes;
    EXPECT_EQ(inj.apply(0, d), tap_verdict::pass);
    EXPECT_EQ(d.bytes, d0);
    frame c = credit_frame();
    EXPECT_EQ(inj.apply(0, c), tap_verdict::pass);
    frame ctl = ctl_frame(login_req());
    const auto ctl0 = ctl.bytes;
    EXPECT_EQ(inj.apply(0, ctl), tap_verdict::pass);
    EXPECT_EQ(ctl.bytes, ctl0);
    // A raw frame with no header before it on its HopID, or after a header
    // on another HopID or from the other host, or after a whole frame.
    split_pair lone = make_split(50, 1);
    EXPECT_EQ(inj.apply(0, lone.raw), tap_verdict::pass);
    EXPECT_EQ(lone.raw.sof, ODL_XD_PDF_RAW_SOF);
    split_pair other = make_split(50, 2, 9);
    split_pair here = make_split(50, 3, 8);
    // Header on hop 8 dropped (spec 0); raw-pdf then sees no header there.
    EXPECT_EQ(inj.apply(0, here.hdr), tap_verdict::drop);
    EXPECT_EQ(inj.apply(0, other.raw), tap_verdict::pass);
    EXPECT_EQ(other.raw.sof, ODL_XD_PDF_RAW_SOF);
    fault_injector pdf;
    pdf.add(parse_ok("split:raw-pdf,count=100"));
    split_pair x = make_split(50, 4, 8);
    EXPECT_EQ(pdf.apply(0, x.hdr), tap_verdict::pass);
    EXPECT_EQ(pdf.apply(1, x.raw), tap_verdict::pass);  // other host: not its payload
    EXPECT_EQ(x.raw.sof, ODL_XD_PDF_RAW_SOF);
    split_pair y = make_split(50, 5, 8);
    EXPECT_EQ(pdf.apply(0, y.hdr), tap_verdict::pass);
    frame whole = data_frame(40);
    EXPECT_EQ(pdf.apply(0, whole), tap_verdict::pass);
    EXPECT_EQ(pdf.apply(0, y.raw), tap_verdict::pass);  // a whole frame came between
    EXPECT_EQ(y.raw.sof, ODL_XD_PDF_RAW_SOF);
    // A header frame that is longer than a header, or lacks F_SPLIT.
    fault_injector hdrs;
    hdrs.add(parse_ok("split:drop-header,count=100"));
    split_pair z = make_split(50, 6);
    z.hdr.bytes.push_back(0);
    z.hdr.len += 1;
    EXPECT_EQ(hdrs.apply(0, z.hdr), tap_verdict::pass);
    frame nosplit = data_frame(0);
    EXPECT_EQ(hdrs.apply(0, nosplit), tap_verdict::pass);
    EXPECT_EQ(pdf.injected(), 0u);
    EXPECT_EQ(hdrs.injected(), 0u);
    EXPECT_EQ(inj.injected(), 1u);
}

TEST(FaultCommand, AddStatusClearAndErrors) {
    fault_injector inj;
    EXPECT_FALSE(inj.armed());
    EXPECT_EQ(inj.command("add data:len,count=2"), "ok armed #0");
    EXPECT_TRUE(inj.armed());
    const std::string bad = inj.command("add data:nope");
    EXPECT_EQ(bad.rfind("error: bad fault 'data:nope': unknown data mode", 0), 0u) << bad;
    EXPECT_EQ(inj.command("status"), "ok injected 0 armed 1; #0 data:len,count=2 done 0/2");
    frame f = data_frame(100);
    inj.apply(0, f);
    EXPECT_EQ(inj.command("status"), "ok injected 1 armed 1; #0 data:len,count=2 done 1/2");
    EXPECT_EQ(inj.command("clear"), "ok cleared 1");
    EXPECT_FALSE(inj.armed());
    EXPECT_EQ(inj.command("status"), "ok injected 1 armed 0");
    EXPECT_EQ(inj.command("frobnicate").rfind("error: unknown fault command", 0), 0u);
}

// ------------------------------------------------------------------ cable tap

/// A cable end that records what reaches it.
struct sink final : odl::model::link_endpoint {
    void link_frame_arrived(frame_ptr f) override { got.push_back(std::move(f)); }
    void link_frame_lost(const frame_ptr& f) override { lost.push_back(*f); }
    void link_state_changed(bool u) override { up = u; }
    bool link_reserve(std::uint16_t) override { return true; }
    void link_credits_returned() override {}
    std::vector<frame_ptr> got;
    std::vector<odl::model::frame> lost;  ///< copies: the cable keeps ownership
    bool up = false;
};

TEST(FaultCable, TapDropsAndDuplicatesOnTheWire) {
    scheduler sched("sched");
    trace_log log(false);
    cable c("cable", sched, log, link_config{}, link_physics{}, sc_core::sc_time(1, sc_core::SC_US),
            1);
    sink a, b;
    c.attach(0, &a);
    c.attach(1, &b);
    c.plug();
    sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_MS));
    ASSERT_TRUE(c.up());
    fault_injector inj;
    inj.add(parse_ok("data:drop,from=A"));
    inj.add(parse_ok("data:duplicate,from=B"));
    c.set_tap([&inj](int from, frame& f) { return inj.apply(from, f); });
    auto send = [&](int from, std::uint32_t seq, bool reserved) {
        frame_ptr f = make_frame();
        *f = data_frame(100, seq);
        f->reserved = reserved;
        EXPECT_TRUE(c.send(from, std::move(f)));
    };
    send(0, 1, true);   // dropped: its receive credit must come back
    send(0, 2, false);  // through
    send(1, 3, true);   // duplicated
    send(1, 4, false);  // through
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
    ASSERT_EQ(b.got.size(), 1u);
    EXPECT_EQ(b.got[0]->bytes[8], 2u);  // seq, little-endian low byte
    ASSERT_EQ(b.lost.size(), 1u);
    EXPECT_TRUE(b.lost[0].reserved);
    ASSERT_EQ(a.got.size(), 3u);
    EXPECT_EQ(a.got[0]->bytes[8], 3u);
    EXPECT_EQ(a.got[1]->bytes[8], 3u);
    EXPECT_TRUE(a.got[0]->reserved);
    EXPECT_FALSE(a.got[1]->reserved) << "the copy must not hold a second credit";
    EXPECT_EQ(a.got[2]->bytes[8], 4u);
    EXPECT_EQ(c.stats().frames_tapped, 2u);
    // Tap removed: frames pass untouched, nothing counted.
    c.set_tap({});
    send(0, 5, false);
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
    ASSERT_EQ(b.got.size(), 2u);
    EXPECT_EQ(inj.injected(), 2u);
}

}  // namespace
}  // namespace odl::model::linkd

// libsystemc may own main() and call sc_main(); run the tests either way.
extern "C" int sc_main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
