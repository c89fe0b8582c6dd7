// SPDX-License-Identifier: MIT
// The file service's message checks (include/odl/wire/files_codec.h): every
// path rule, every type's shape, direction and sequence numbers.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "odl/wire/files_codec.h"

namespace {

std::vector<uint8_t> msg(uint16_t type, const std::vector<uint8_t>& payload, uint64_t seq, uint32_t flags = 0) {
    odl_files_hdr h{};
    h.magic = odl_cpu_le32(ODL_FILES_MAGIC);
    h.version = odl_cpu_le16(ODL_FILES_VERSION);
    h.type = odl_cpu_le16(type);
    h.len = odl_cpu_le32(uint32_t(payload.size()));
    h.flags = odl_cpu_le32(flags);
    h.seq = odl_cpu_le64(seq);
    std::vector<uint8_t> out(sizeof(h) + payload.size() + ODL_FILES_TAG_BYTES);
    std::memcpy(out.data(), &h, sizeof(h));
    if (!payload.empty()) std::memcpy(out.data() + sizeof(h), payload.data(), payload.size());
    return out;
}

template <typename T>
std::vector<uint8_t> bytes(const T& t, const std::string& tail = "") {
    std::vector<uint8_t> v(sizeof(T) + tail.size());
    std::memcpy(v.data(), &t, sizeof(T));
    if (!tail.empty()) std::memcpy(v.data() + sizeof(T), tail.data(), tail.size());
    return v;
}

const char* check(const std::vector<uint8_t>& m, odl_files_side from, uint64_t seq = 1,
                  uint32_t chunk = ODL_FILES_CHUNK_DEFAULT) {
    return odl_files_check(m.data(), m.size(), from, seq, chunk, nullptr);
}

std::vector<uint8_t> put(const std::string& path, uint32_t mode = 0644, uint64_t size = 10) {
    odl_files_put p{odl_cpu_le64(size), 0, odl_cpu_le32(mode), odl_cpu_le32(uint32_t(path.size()))};
    return bytes(p, path);
}

TEST(FilesCodec, Paths) {
    auto ok = [](const std::string& p) { return odl_files_path_check(p.data(), p.size(), 0) == nullptr; };
    EXPECT_TRUE(ok("a"));
    EXPECT_TRUE(ok("a/b.c/..d"));
    EXPECT_TRUE(ok("...")) << "three dots is a name";
    EXPECT_FALSE(ok(""));
    EXPECT_TRUE(odl_files_path_check("", 0, 1) == nullptr) << "LIST of the root";
    EXPECT_FALSE(ok("/etc/passwd"));
    EXPECT_FALSE(ok(".."));
    EXPECT_FALSE(ok("a/../../b"));
    EXPECT_FALSE(ok("a/./b"));
    EXPECT_FALSE(ok("a//b"));
    EXPECT_FALSE(ok("a/"));
    EXPECT_FALSE(ok(std::string("a\0b", 3)));
    EXPECT_TRUE(ok(std::string(255, 'x')));
    EXPECT_FALSE(ok(std::string(256, 'x')));
    std::string long_path;
    while (long_path.size() < 4100) long_path += "abcdefg/";
    EXPECT_FALSE(ok(long_path.substr(0, 4097)));
}

TEST(FilesCodec, HeaderRules) {
    const auto good = msg(ODL_FILES_PUT, put("f"), 1);
    EXPECT_EQ(check(good, ODL_FILES_FROM_CLIENT), nullptr);
    EXPECT_NE(check(good, ODL_FILES_FROM_SERVER), nullptr) << "PUT comes from the client only";
    EXPECT_NE(check(good, ODL_FILES_FROM_CLIENT, 2), nullptr) << "a replayed (old) sequence number";
    EXPECT_NE(check(good, ODL_FILES_FROM_CLIENT, 0), nullptr) << "a skipped one";
    auto bad = good;
    bad[0] ^= 1;
    EXPECT_NE(check(bad, ODL_FILES_FROM_CLIENT), nullptr) << "magic";
    bad = good;
    bad[4] = 2;
    EXPECT_NE(check(bad, ODL_FILES_FROM_CLIENT), nullptr) << "version";
    bad = good;
    bad.pop_back();
    EXPECT_NE(check(bad, ODL_FILES_FROM_CLIENT), nullptr) << "length";
    bad = good;
    bad[24] = 1;
    EXPECT_NE(check(bad, ODL_FILES_FROM_CLIENT), nullptr) << "reserved";
    EXPECT_NE(check(msg(ODL_FILES_PUT, put("f"), 1, ODL_FILES_LAST), ODL_FILES_FROM_CLIENT), nullptr) << "flags";
    EXPECT_NE(check(msg(99, {}, 1), ODL_FILES_FROM_CLIENT), nullptr) << "unknown type";
    EXPECT_NE(check(std::vector<uint8_t>(47), ODL_FILES_FROM_CLIENT), nullptr) << "too short";
    // PAIR carries sequence number 0 whatever is due.
    EXPECT_EQ(check(msg(ODL_FILES_PAIR, std::vector<uint8_t>(96), 0), ODL_FILES_FROM_SERVER, 7), nullptr);
    EXPECT_NE(check(msg(ODL_FILES_PAIR, std::vector<uint8_t>(96), 7), ODL_FILES_FROM_SERVER, 7), nullptr);
}

TEST(FilesCodec, Payloads) {
    const auto C = ODL_FILES_FROM_CLIENT;
    const auto S = ODL_FILES_FROM_SERVER;
    EXPECT_NE(check(msg(ODL_FILES_PUT, put("../x"), 1), C), nullptr);
    EXPECT_NE(check(msg(ODL_FILES_PUT, put("/x"), 1), C), nullptr);
    EXPECT_NE(check(msg(ODL_FILES_PUT, put("x", 010000), 1), C), nullptr) << "mode";
    auto p = put("abc");
    p[20] = 2;  // path_len says 2, 3 bytes follow
    EXPECT_NE(check(msg(ODL_FILES_PUT, p, 1), C), nullptr);

    odl_files_hello h{};
    h.chunk = odl_cpu_le32(1u << 20);
    EXPECT_EQ(check(msg(ODL_FILES_HELLO, bytes(h), 1), C), nullptr);
    h.chunk = odl_cpu_le32(3u << 19);
    EXPECT_NE(check(msg(ODL_FILES_HELLO, bytes(h), 1), C), nullptr) << "not a power of two";
    h.chunk = odl_cpu_le32(8u << 20);
    EXPECT_NE(check(msg(ODL_FILES_HELLO, bytes(h), 1), C), nullptr) << "over 4 MiB";

    std::vector<uint8_t> data(8 + 4096);
    EXPECT_EQ(check(msg(ODL_FILES_DATA, data, 1), S, 1, 4096), nullptr);
    data.push_back(0);
    EXPECT_NE(check(msg(ODL_FILES_DATA, data, 1), S, 1, 4096), nullptr) << "over the session's chunk";
    EXPECT_NE(check(msg(ODL_FILES_DATA, std::vector<uint8_t>(8), 1), S), nullptr) << "no bytes";

    EXPECT_EQ(check(msg(ODL_FILES_END, std::vector<uint8_t>(32), 1), C), nullptr);
    EXPECT_NE(check(msg(ODL_FILES_END, std::vector<uint8_t>(31), 1), C), nullptr);
    EXPECT_EQ(check(msg(ODL_FILES_READY, std::vector<uint8_t>(8), 1), C), nullptr) << "READY goes both ways";
    EXPECT_NE(check(msg(ODL_FILES_DONE, std::vector<uint8_t>(8), 1), C), nullptr) << "DONE from the server only";
    EXPECT_NE(check(msg(ODL_FILES_BYE, std::vector<uint8_t>(1), 1), C), nullptr);

    odl_files_path lp{0, 0};
    EXPECT_EQ(check(msg(ODL_FILES_LIST, bytes(lp), 1), C), nullptr) << "LIST of the served folder";
    EXPECT_NE(check(msg(ODL_FILES_GET, bytes(lp), 1), C), nullptr) << "GET needs a path";
    lp.mode = odl_cpu_le32(0755);
    lp.path_len = odl_cpu_le32(1);
    EXPECT_EQ(check(msg(ODL_FILES_MKDIR, bytes(lp, "d"), 1), C), nullptr);
    EXPECT_NE(check(msg(ODL_FILES_GET, bytes(lp, "d"), 1), C), nullptr) << "a mode on GET";
    lp.mode = 0;
    EXPECT_EQ(check(msg(ODL_FILES_REMOVE, bytes(lp, "d"), 1), C), nullptr);
    EXPECT_NE(check(msg(ODL_FILES_REMOVE, bytes(lp, "d"), 1), S), nullptr) << "REMOVE from the client only";
    lp.path_len = 0;
    EXPECT_NE(check(msg(ODL_FILES_REMOVE, bytes(lp), 1), C), nullptr) << "REMOVE needs a path";

    odl_files_error e{odl_cpu_le32(ODL_FILES_E_IO), odl_cpu_le32(4)};
    EXPECT_EQ(check(msg(ODL_FILES_ERROR, bytes(e, "full"), 1), S), nullptr);
    EXPECT_NE(check(msg(ODL_FILES_ERROR, bytes(e, "ful"), 1), S), nullptr);
    e.text_len = odl_cpu_le32(600);
    EXPECT_NE(check(msg(ODL_FILES_ERROR, bytes(e, std::string(600, 'x')), 1), S), nullptr) << "text over 512";
}

std::vector<uint8_t> entry(uint16_t kind, const std::string& path, uint64_t size = 0) {
    odl_files_entry en{odl_cpu_le64(size), 0, odl_cpu_le32(0644), odl_cpu_le16(kind),
                       odl_cpu_le16(uint16_t(path.size()))};
    return bytes(en, path);
}

TEST(FilesCodec, Entries) {
    auto list = [](uint32_t count, const std::vector<std::vector<uint8_t>>& es) {
        odl_files_entries h{odl_cpu_le32(count), 0};
        auto v = bytes(h);
        for (const auto& e : es) v.insert(v.end(), e.begin(), e.end());
        return msg(ODL_FILES_ENTRIES, v, 1, ODL_FILES_LAST);
    };
    const auto S = ODL_FILES_FROM_SERVER;
    EXPECT_EQ(check(list(0, {}), S), nullptr);
    EXPECT_EQ(check(list(2, {entry(ODL_FILES_DIR, "d"), entry(ODL_FILES_FILE, "d/f", 5)}), S), nullptr);
    EXPECT_NE(check(list(3, {entry(ODL_FILES_DIR, "d"), entry(ODL_FILES_FILE, "d/f")}), S), nullptr) << "count";
    EXPECT_NE(check(list(1, {entry(ODL_FILES_DIR, "d"), entry(ODL_FILES_FILE, "f")}), S), nullptr) << "trailing";
    EXPECT_NE(check(list(1, {entry(ODL_FILES_FILE, "../f")}), S), nullptr) << "path";
    EXPECT_NE(check(list(1, {entry(3, "f")}), S), nullptr) << "kind";
    EXPECT_NE(check(list(1, {entry(ODL_FILES_DIR, "d", 7)}), S), nullptr) << "directory with a size";
    EXPECT_NE(check(list(2000, {}), S), nullptr) << "over 1024 entries";
}

}  // namespace
