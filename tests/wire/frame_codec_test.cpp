// SPDX-License-Identifier: MIT
// Tests for include/odl/wire/frame_codec.h: round trips and every refusal.
#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

#include "odl/wire/frame_codec.h"

namespace {

odl_frame_info data_info(uint32_t msg_len, uint32_t offset, uint16_t len, uint8_t flags) {
    odl_frame_info fi{};
    fi.type = ODL_FRAME_DATA;
    fi.flags = flags;
    fi.stream = 1;
    fi.len = len;
    fi.seq = 7;
    fi.tag = 0xabcd;
    fi.msg_len = msg_len;
    fi.offset = offset;
    return fi;
}

std::vector<unsigned char> encode(const odl_frame_info& fi) {
    std::vector<unsigned char> b(ODL_FRAME_HDR_BYTES + fi.len, 0x5a);
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(b.data()), &fi);
    return b;
}

enum odl_frame_err decode(const std::vector<unsigned char>& b, unsigned streams = 4) {
    odl_frame_info out{};
    return odl_frame_decode(b.data(), b.size(), streams, &out);
}

TEST(FrameCodec, RoundTripsEveryField) {
    odl_frame_info in = data_info(ODL_FRAME_MAX_PAYLOAD + 5, ODL_FRAME_MAX_PAYLOAD, 5, ODL_FRAME_F_EOM | ODL_FRAME_F_CSUM | ODL_FRAME_F_CREDIT);
    in.credit = 0xfffffff0;
    in.csum = 0x12345678;
    auto b = encode(in);
    odl_frame_info out{};
    ASSERT_EQ(odl_frame_decode(b.data(), b.size(), 4, &out), ODL_FRAME_OK);
    EXPECT_EQ(std::memcmp(&in, &out, sizeof(in)), 0);
}

TEST(FrameCodec, HeaderIsLittleEndianOnTheWire) {
    auto b = encode(data_info(0x01020304, 0, 0, ODL_FRAME_F_SOM));
    // msg_len sits at byte 16.
    EXPECT_EQ(b[16], 0x04);
    EXPECT_EQ(b[19], 0x01);
}

TEST(FrameCodec, RejectsBufferShorterThanHeader) {
    auto b = encode(data_info(0, 0, 0, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM));
    b.resize(ODL_FRAME_HDR_BYTES - 1);
    EXPECT_EQ(decode(b), ODL_FRAME_ERR_SHORT);
}

TEST(FrameCodec, RejectsLengthBeyondBuffer) {
    auto b = encode(data_info(100, 0, 100, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM));
    b.resize(b.size() - 1);
    EXPECT_EQ(decode(b), ODL_FRAME_ERR_LEN);
}

TEST(FrameCodec, RejectsLengthBeyondFrame) {
    auto fi = data_info(ODL_FRAME_MAX_PAYLOAD + 1, 0, 0, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM);
    auto b = encode(fi);
    const uint16_t big = ODL_FRAME_MAX_PAYLOAD + 1;
    std::memcpy(b.data() + 4, &big, 2);
    b.resize(ODL_FRAME_HDR_BYTES + big);
    EXPECT_EQ(decode(b), ODL_FRAME_ERR_LEN);
}

TEST(FrameCodec, RejectsUnknownTypeAndFlags) {
    auto fi = data_info(0, 0, 0, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM);
    fi.type = 0x3f;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_TYPE);
    fi.type = ODL_FRAME_DATA;
    fi.flags |= 0x80;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
}

TEST(FrameCodec, RejectsNonZeroReserved) {
    auto b = encode(data_info(0, 0, 0, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM));
    b[6] = 1;
    EXPECT_EQ(decode(b), ODL_FRAME_ERR_RESERVED);
}

TEST(FrameCodec, RejectsStreamNotNegotiated) {
    auto fi = data_info(0, 0, 0, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM);
    fi.stream = 4;
    EXPECT_EQ(decode(encode(fi), 4), ODL_FRAME_ERR_STREAM);
    EXPECT_EQ(decode(encode(fi), 5), ODL_FRAME_OK);
}

TEST(FrameCodec, RejectsInconsistentRanges) {
    // Payload past the end of the message.
    EXPECT_EQ(decode(encode(data_info(10, 8, 5, ODL_FRAME_F_EOM))), ODL_FRAME_ERR_RANGE);
    // First frame not at offset 0.
    EXPECT_EQ(decode(encode(data_info(ODL_FRAME_MAX_PAYLOAD * 2, ODL_FRAME_MAX_PAYLOAD, ODL_FRAME_MAX_PAYLOAD, ODL_FRAME_F_SOM))),
              ODL_FRAME_ERR_RANGE);
    // Last frame that does not reach the end.
    EXPECT_EQ(decode(encode(data_info(100, 0, 50, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM))), ODL_FRAME_ERR_RANGE);
    // A short frame in the middle of a message.
    EXPECT_EQ(decode(encode(data_info(ODL_FRAME_MAX_PAYLOAD * 3, 0, 100, ODL_FRAME_F_SOM))), ODL_FRAME_ERR_RANGE);
    // Offset + len overflowing 32 bits must not wrap into range.
    EXPECT_EQ(decode(encode(data_info(0xffffffff, 0xfffffff0, 0x20, ODL_FRAME_F_EOM))), ODL_FRAME_ERR_RANGE);
}

// ODL_FRAME_F_SPLIT is the odl_tb5 transport's: plain decode refuses it, the
// module's option takes it on DATA only, with the payload not inline.
TEST(FrameCodec, SplitHeaderOnlyWithTheTransportOption) {
    odl_frame_info fi = data_info(100, 0, 100, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM | ODL_FRAME_F_SPLIT);
    std::vector<unsigned char> hdr(ODL_FRAME_HDR_BYTES);
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(hdr.data()), &fi);
    odl_frame_info out{};
    EXPECT_EQ(odl_frame_decode(hdr.data(), hdr.size(), 4, &out), ODL_FRAME_ERR_LEN);  // payload missing
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);  // inline payload: still an unknown flag
    ASSERT_EQ(odl_frame_decode_opt(hdr.data(), hdr.size(), 4, ODL_FRAME_DEC_SPLIT, &out), ODL_FRAME_OK);
    EXPECT_EQ(out.len, 100);
    EXPECT_EQ(out.flags, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM | ODL_FRAME_F_SPLIT);
    // The DATA range rules still apply to the announced payload.
    fi = data_info(100, 0, 50, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM | ODL_FRAME_F_SPLIT);
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(hdr.data()), &fi);
    EXPECT_EQ(odl_frame_decode_opt(hdr.data(), hdr.size(), 4, ODL_FRAME_DEC_SPLIT, &out), ODL_FRAME_ERR_RANGE);
    fi = data_info(100, 0, 100, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM | ODL_FRAME_F_SPLIT);
    fi.stream = 4;
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(hdr.data()), &fi);
    EXPECT_EQ(odl_frame_decode_opt(hdr.data(), hdr.size(), 4, ODL_FRAME_DEC_SPLIT, &out), ODL_FRAME_ERR_STREAM);
    fi = data_info(5000, 0, ODL_FRAME_MAX_PAYLOAD + 1, ODL_FRAME_F_SOM | ODL_FRAME_F_SPLIT);
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(hdr.data()), &fi);
    EXPECT_EQ(odl_frame_decode_opt(hdr.data(), hdr.size(), 4, ODL_FRAME_DEC_SPLIT, &out), ODL_FRAME_ERR_LEN);
    // Only DATA may be split.
    fi = data_info(24, 0, 24, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM | ODL_FRAME_F_SPLIT);
    fi.type = ODL_FRAME_RNDV;
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(hdr.data()), &fi);
    EXPECT_EQ(odl_frame_decode_opt(hdr.data(), hdr.size(), 4, ODL_FRAME_DEC_SPLIT, &out), ODL_FRAME_ERR_LEN);
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
    // A header cut short, and an unknown option.
    EXPECT_EQ(odl_frame_decode_opt(hdr.data(), ODL_FRAME_HDR_BYTES - 1, 4, ODL_FRAME_DEC_SPLIT, &out), ODL_FRAME_ERR_SHORT);
    const auto whole = encode(data_info(10, 0, 10, ODL_FRAME_F_SOM | ODL_FRAME_F_EOM));
    EXPECT_EQ(odl_frame_decode_opt(whole.data(), whole.size(), 4, ODL_FRAME_DEC_SPLIT, &out), ODL_FRAME_OK);
    EXPECT_EQ(odl_frame_decode_opt(whole.data(), whole.size(), 4, 2u, &out), ODL_FRAME_ERR_FLAGS);
}

TEST(FrameCodec, ControlFramesHaveFixedShapes) {
    odl_frame_info fi{};
    fi.type = ODL_FRAME_GOODBYE;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_OK);
    fi.len = 1;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
    fi = {};
    fi.type = ODL_FRAME_CREDIT;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);  // CREDIT without F_CREDIT
    fi.flags = ODL_FRAME_F_CREDIT;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_OK);
    fi = {};
    fi.type = ODL_FRAME_HELLO;
    fi.len = 10;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_LEN);
}

TEST(FrameCodec, LinkCreditIsAStreamZeroControlFrame) {
    odl_frame_info fi{};
    fi.type = ODL_FRAME_LINK_CREDIT;
    fi.flags = ODL_FRAME_F_CREDIT;
    fi.credit = 0xfffffff0u;
    odl_frame_info out{};
    auto buf = encode(fi);
    ASSERT_EQ(odl_frame_decode(buf.data(), buf.size(), 4, &out), ODL_FRAME_OK);
    EXPECT_EQ(out.credit, 0xfffffff0u);
    EXPECT_EQ(out.type, ODL_FRAME_LINK_CREDIT);
    fi.flags = 0;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);  // without F_CREDIT
    fi.flags = ODL_FRAME_F_CREDIT | ODL_FRAME_F_SOM;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
    fi.flags = ODL_FRAME_F_CREDIT;
    fi.stream = 1;  // link-wide: stream 0 only, even when stream 1 exists
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
    fi.stream = 0;
    fi.len = 4;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
}

TEST(FrameCodec, RndvIsOneWholeMessageFrame) {
    odl_frame_info fi{};
    fi.type = ODL_FRAME_RNDV;
    fi.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM;
    fi.stream = 3;
    fi.msg_len = 1u << 20;  // the message, not the frame
    fi.len = sizeof(odl_rndv);
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_OK);
    fi.flags |= ODL_FRAME_F_CREDIT;  // piggybacked stream credit is fine
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_OK);
    fi.flags = ODL_FRAME_F_SOM;  // must be whole
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
    fi.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM | ODL_FRAME_F_CSUM;  // never checksummed
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
    fi.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM;
    fi.len = sizeof(odl_rndv) - 1;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_LEN);
    fi.len = sizeof(odl_rndv);
    fi.offset = 4064;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_RANGE);
    fi.offset = 0;
    EXPECT_EQ(decode(encode(fi), 3), ODL_FRAME_ERR_STREAM);
}

TEST(FrameCodec, RndvDoneCarriesItsPayloadOnAStream) {
    odl_frame_info fi{};
    fi.type = ODL_FRAME_RNDV_DONE;
    fi.stream = 2;
    fi.len = sizeof(odl_rndv_done);
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_OK);
    EXPECT_EQ(decode(encode(fi), 2), ODL_FRAME_ERR_STREAM);
    fi.flags = ODL_FRAME_F_CREDIT;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
    fi.flags = 0;
    fi.len = 0;
    EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_LEN);
}

TEST(FrameCodec, RndvSplitAndWroteCarryTheirPayloadOnAStream) {
    for (auto [type, size] : {std::pair<int, size_t>{ODL_FRAME_RNDV_SPLIT, sizeof(odl_rndv_split)},
                              std::pair<int, size_t>{ODL_FRAME_RNDV_WROTE, sizeof(odl_rndv_wrote)}}) {
        SCOPED_TRACE(type);
        odl_frame_info fi{};
        fi.type = uint8_t(type);
        fi.stream = 2;
        fi.len = uint16_t(size);
        EXPECT_EQ(decode(encode(fi)), ODL_FRAME_OK);
        EXPECT_EQ(decode(encode(fi), 2), ODL_FRAME_ERR_STREAM);
        fi.flags = ODL_FRAME_F_CREDIT;
        EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_FLAGS);
        fi.flags = 0;
        fi.len = uint16_t(size - 8);
        EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_LEN);
        fi.len = uint16_t(size + 8);
        EXPECT_EQ(decode(encode(fi)), ODL_FRAME_ERR_LEN);
    }
}

odl_hello good_hello() {
    odl_hello h{};
    h.magic = odl_cpu_le32(ODL_FRAME_MAGIC);
    h.version_major = odl_cpu_le16(ODL_PROTO_VERSION_MAJOR);
    h.max_payload = odl_cpu_le16(ODL_FRAME_MAX_PAYLOAD);
    h.streams = odl_cpu_le16(4);
    h.window = odl_cpu_le32(256);
    return h;
}

TEST(FrameCodec, HelloCheckRefusesForeignPeers) {
    odl_hello h = good_hello();
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_OK);
    h.magic = 0;
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_ERR_HELLO);
    h = good_hello();
    h.version_major = odl_cpu_le16(ODL_PROTO_VERSION_MAJOR + 1);
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_ERR_HELLO);
    h = good_hello();
    h.streams = odl_cpu_le16(ODL_MAX_STREAMS + 1);
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_ERR_HELLO);
    h = good_hello();
    h.window = 0;
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_ERR_HELLO);
    h = good_hello();
    h.reserved1 = 1;
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_ERR_HELLO);
}

TEST(FrameCodec, HelloLinkWindowNeedsTheFeatureAndALimit) {
    odl_hello h = good_hello();
    h.link_window = odl_cpu_le32(1023);
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_ERR_HELLO);  // as a 1.0 peer sees it
    h.features = odl_cpu_le32(ODL_FEAT_LINK_CREDIT);
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_OK);
    h.link_window = odl_cpu_le32(ODL_MAX_LINK_WINDOW_FRAMES);
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_OK);
    h.link_window = odl_cpu_le32(ODL_MAX_LINK_WINDOW_FRAMES + 1);
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_ERR_HELLO);
    h.link_window = 0;  // the feature without a limit: fine
    EXPECT_EQ(odl_hello_check(&h), ODL_FRAME_OK);
}

TEST(FrameCodec, MessageFrameCount) {
    EXPECT_EQ(odl_msg_frames(0), 1u);
    EXPECT_EQ(odl_msg_frames(1), 1u);
    EXPECT_EQ(odl_msg_frames(ODL_FRAME_MAX_PAYLOAD), 1u);
    EXPECT_EQ(odl_msg_frames(ODL_FRAME_MAX_PAYLOAD + 1), 2u);
}

}  // namespace
