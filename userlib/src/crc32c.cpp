// SPDX-License-Identifier: MIT
// CRC32C: the hardware instruction where present, Boost.CRC as the reference.
#include "crc32c.h"

#include <cstring>

#include <boost/crc.hpp>

namespace odl {
namespace {

using crc32c_boost = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const void* data, size_t len) {
    auto* p = static_cast<const unsigned char*>(data);
    uint64_t crc = 0xFFFFFFFFu;
    while (len >= 8) {
        uint64_t v;
        std::memcpy(&v, p, 8);
        crc = __builtin_ia32_crc32di(crc, v);
        p += 8;
        len -= 8;
    }
    auto c = static_cast<uint32_t>(crc);
    while (len--) c = __builtin_ia32_crc32qi(c, *p++);
    return c ^ 0xFFFFFFFFu;
}

bool have_sse42() {
    static const bool have = __builtin_cpu_supports("sse4.2");
    return have;
}
#endif

}  // namespace

uint32_t crc32c_portable(const void* data, size_t len) {
    crc32c_boost crc;
    crc.process_bytes(data, len);
    return crc.checksum();
}

uint32_t crc32c(const void* data, size_t len) {
#if defined(__x86_64__)
    if (have_sse42()) return crc32c_sse42(data, len);
#endif
    return crc32c_portable(data, len);
}

}  // namespace odl
