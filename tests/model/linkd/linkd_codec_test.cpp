// SPDX-License-Identifier: MIT
// include/odl/wire/linkd_codec.h: message building and validation.
#include "odl/wire/linkd_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

std::vector<std::uint8_t> bytes(const struct odl_linkd_msg& m, std::size_t payload = 0) {
    std::vector<std::uint8_t> b(sizeof(m) + payload, 0xab);
    std::memcpy(b.data(), &m, sizeof(m));
    return b;
}

enum odl_linkd_err check(const std::vector<std::uint8_t>& b, enum odl_linkd_side from) {
    struct odl_linkd_msg out;
    return odl_linkd_check(b.data(), b.size(), from, &out);
}

struct odl_linkd_msg mmio(unsigned type, unsigned size) {
    struct odl_linkd_msg m;
    odl_linkd_msg_init(&m, type, 7, 1000, 3);
    m.body.mmio.size = static_cast<__u8>(size);
    m.body.mmio.offset = odl_cpu_le64(0x39640);
    return m;
}

TEST(LinkdCodec, MessagesAreSixtyFourBytes) {
    EXPECT_EQ(sizeof(struct odl_linkd_msg), 64u);
    EXPECT_EQ(sizeof(struct odl_linkd_hdr), 32u);
    EXPECT_EQ(offsetof(struct odl_linkd_msg, body), 32u);
}

TEST(LinkdCodec, InitFillsHeaderLittleEndian) {
    struct odl_linkd_msg m;
    odl_linkd_msg_init(&m, ODL_LINKD_MMIO_READ, 0x0102030405060708ull, 42, 9);
    const auto* b = reinterpret_cast<const std::uint8_t*>(&m);
    EXPECT_EQ(b[0], ODL_LINKD_MMIO_READ);
    EXPECT_EQ(b[8], 0x08);  // seq, low byte first
    EXPECT_EQ(b[15], 0x01);
    EXPECT_EQ(odl_le64(m.hdr.ts_ps), 42u);
    EXPECT_EQ(odl_le64(m.hdr.tag), 9u);
}

TEST(LinkdCodec, AcceptsValidHello) {
    struct odl_linkd_msg m;
    odl_linkd_hello_init(&m, 0, 0, 1, ODL_LINKD_MODE_FREE, 1234);
    struct odl_linkd_msg out;
    auto b = bytes(m);
    ASSERT_EQ(odl_linkd_check(b.data(), b.size(), ODL_LINKD_SIDE_DEV, &out), ODL_LINKD_OK);
    EXPECT_EQ(odl_le32(out.body.hello.host_id), 1u);
    EXPECT_EQ(check(b, ODL_LINKD_SIDE_MODEL), ODL_LINKD_OK);  // both ways
}

TEST(LinkdCodec, RejectsBadMagicAndMajor) {
    struct odl_linkd_msg m;
    odl_linkd_hello_init(&m, 0, 0, 0, ODL_LINKD_MODE_FREE, 1);
    m.body.hello.magic = odl_cpu_le32(0xdeadbeef);
    EXPECT_EQ(check(bytes(m), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_HELLO);
    odl_linkd_hello_init(&m, 0, 0, 0, ODL_LINKD_MODE_FREE, 1);
    m.body.hello.version_major = odl_cpu_le16(ODL_LINKD_VERSION_MAJOR + 1);
    EXPECT_EQ(check(bytes(m), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_HELLO);
}

TEST(LinkdCodec, RejectsShortDatagram) {
    auto b = bytes(mmio(ODL_LINKD_MMIO_READ, 4));
    b.resize(63);
    EXPECT_EQ(check(b, ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_SHORT);
    b.clear();
    EXPECT_EQ(check(b, ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_SHORT);
}

TEST(LinkdCodec, RejectsTypeFromWrongSide) {
    EXPECT_EQ(check(bytes(mmio(ODL_LINKD_MMIO_READ, 4)), ODL_LINKD_SIDE_MODEL),
              ODL_LINKD_ERR_TYPE);
    EXPECT_EQ(check(bytes(mmio(ODL_LINKD_MMIO_READ_CPL, 4)), ODL_LINKD_SIDE_DEV),
              ODL_LINKD_ERR_TYPE);
    auto m = mmio(ODL_LINKD_MMIO_READ, 4);
    m.hdr.type = odl_cpu_le16(0x3f);
    EXPECT_EQ(check(bytes(m), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_TYPE);
}

TEST(LinkdCodec, RejectsFlagsAndReserved) {
    auto m = mmio(ODL_LINKD_MMIO_WRITE, 4);
    m.hdr.flags = odl_cpu_le16(1);
    EXPECT_EQ(check(bytes(m), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_FLAGS);
    m = mmio(ODL_LINKD_MMIO_WRITE, 4);
    m.body.mmio.reserved1 = odl_cpu_le64(1);
    EXPECT_EQ(check(bytes(m), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_RESERVED);
    m = mmio(ODL_LINKD_MMIO_READ, 4);
    m.body.mmio.data = odl_cpu_le64(5);  // a read carries no data
    EXPECT_EQ(check(bytes(m), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_RESERVED);
}

TEST(LinkdCodec, RejectsMmioSizes) {
    for (unsigned sz : {0u, 3u, 5u, 16u, 255u})
        EXPECT_EQ(check(bytes(mmio(ODL_LINKD_MMIO_READ, sz)), ODL_LINKD_SIDE_DEV),
                  ODL_LINKD_ERR_FIELD)
            << sz;
    for (unsigned sz : {1u, 2u, 4u, 8u})
        EXPECT_EQ(check(bytes(mmio(ODL_LINKD_MMIO_READ, sz)), ODL_LINKD_SIDE_DEV), ODL_LINKD_OK)
            << sz;
}

struct odl_linkd_msg mem_map(std::uint64_t addr, std::uint64_t len, std::uint64_t off) {
    struct odl_linkd_msg m;
    odl_linkd_msg_init(&m, ODL_LINKD_MEM_MAP, 1, 0, 0);
    m.body.mem_map.addr = odl_cpu_le64(addr);
    m.body.mem_map.len = odl_cpu_le64(len);
    m.body.mem_map.fd_offset = odl_cpu_le64(off);
    return m;
}

TEST(LinkdCodec, MemMapRangesAreChecked) {
    EXPECT_EQ(check(bytes(mem_map(0x100000, 0x1000000, 0x100000)), ODL_LINKD_SIDE_DEV),
              ODL_LINKD_OK);
    EXPECT_EQ(check(bytes(mem_map(0x100000, 0x1000, 0)), ODL_LINKD_SIDE_MODEL),
              ODL_LINKD_ERR_TYPE);  // only the device shares RAM
    EXPECT_EQ(check(bytes(mem_map(0x100000, 0, 0)), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_FIELD);
    EXPECT_EQ(check(bytes(mem_map(0x100800, 0x1000, 0)), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_FIELD);
    EXPECT_EQ(check(bytes(mem_map(0x100000, 0x1800, 0)), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_FIELD);
    EXPECT_EQ(check(bytes(mem_map(0x100000, 0x1000, 0x10)), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_FIELD);
    EXPECT_EQ(check(bytes(mem_map(0xfffffffffffff000ull, 0x2000, 0)), ODL_LINKD_SIDE_DEV),
              ODL_LINKD_ERR_FIELD);  // wraps
    EXPECT_EQ(check(bytes(mem_map(0, 0x2000, 0xfffffffffffff000ull)), ODL_LINKD_SIDE_DEV),
              ODL_LINKD_ERR_FIELD);
    auto m = mem_map(0x100000, 0x1000, 0);
    m.body.mem_map.reserved = odl_cpu_le64(1);
    EXPECT_EQ(check(bytes(m), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_RESERVED);
    EXPECT_EQ(check(bytes(mem_map(0x100000, 0x1000, 0), 16), ODL_LINKD_SIDE_DEV),
              ODL_LINKD_ERR_LEN);  // carries no payload
    EXPECT_STREQ(odl_linkd_type_name(ODL_LINKD_MEM_MAP), "mem_map");
}

TEST(LinkdCodec, DmaPayloadMustMatchLength) {
    struct odl_linkd_msg m;
    odl_linkd_msg_init(&m, ODL_LINKD_DMA_WRITE, 0, 0, 1);
    m.body.dma.addr = odl_cpu_le64(0x1000);
    m.body.dma.len = odl_cpu_le32(16);
    m.hdr.payload_len = odl_cpu_le32(16);
    EXPECT_EQ(check(bytes(m, 16), ODL_LINKD_SIDE_MODEL), ODL_LINKD_OK);
    EXPECT_EQ(check(bytes(m, 15), ODL_LINKD_SIDE_MODEL), ODL_LINKD_ERR_LEN);
    m.hdr.payload_len = odl_cpu_le32(8);
    EXPECT_EQ(check(bytes(m, 8), ODL_LINKD_SIDE_MODEL), ODL_LINKD_ERR_LEN);
    m.body.dma.len = odl_cpu_le32(ODL_LINKD_MAX_PAYLOAD + 1);
    m.hdr.payload_len = odl_cpu_le32(ODL_LINKD_MAX_PAYLOAD + 1);
    EXPECT_EQ(check(bytes(m, ODL_LINKD_MAX_PAYLOAD + 1), ODL_LINKD_SIDE_MODEL),
              ODL_LINKD_ERR_LEN);
    m.body.dma.len = 0;
    m.hdr.payload_len = 0;
    EXPECT_EQ(check(bytes(m), ODL_LINKD_SIDE_MODEL), ODL_LINKD_ERR_FIELD);
}

TEST(LinkdCodec, FailedDmaReadCompletionCarriesNoData) {
    struct odl_linkd_msg m;
    odl_linkd_msg_init(&m, ODL_LINKD_DMA_READ_CPL, 0, 0, 1);
    m.body.dma.len = odl_cpu_le32(64);
    m.body.dma.status = odl_cpu_le32(ODL_LINKD_ST_ERROR);
    EXPECT_EQ(check(bytes(m), ODL_LINKD_SIDE_DEV), ODL_LINKD_OK);
    m.hdr.payload_len = odl_cpu_le32(64);
    EXPECT_EQ(check(bytes(m, 64), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_LEN);
}

TEST(LinkdCodec, NonDmaTypesCarryNoPayload) {
    auto m = mmio(ODL_LINKD_MMIO_WRITE, 4);
    m.hdr.payload_len = odl_cpu_le32(4);
    EXPECT_EQ(check(bytes(m, 4), ODL_LINKD_SIDE_DEV), ODL_LINKD_ERR_LEN);
}

TEST(LinkdCodec, SurvivesRandomBytes) {
    // Any byte soup is either accepted as a well-formed message or refused.
    std::uint32_t x = 12345;
    std::vector<std::uint8_t> b;
    for (int i = 0; i < 20000; i++) {
        b.resize(x % 200);
        for (auto& c : b) {
            x = x * 1103515245u + 12345u;
            c = static_cast<std::uint8_t>(x >> 16);
        }
        if (b.size() >= 2) b[0] = static_cast<std::uint8_t>(0x40 + (x % 8));
        if (b.size() >= 4) b[2] = b[3] = 0;
        const auto e = check(b, ODL_LINKD_SIDE_DEV);
        EXPECT_LT(static_cast<int>(e), static_cast<int>(ODL_LINKD_ERR_COUNT));
    }
}

TEST(LinkdCodec, NamesEveryError) {
    for (int e = 0; e < ODL_LINKD_ERR_COUNT; e++)
        EXPECT_STRNE(odl_linkd_err_name(static_cast<enum odl_linkd_err>(e)), "unknown");
}

}  // namespace
