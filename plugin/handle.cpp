// SPDX-License-Identifier: MIT
#include "handle.h"

#include <cstring>

#include "odl/wire/nccl_stats.h"

namespace odl::plugin {
namespace {

constexpr uint32_t kHandleMagic = 0x484c444fu;  // "ODLH"
constexpr uint16_t kHandleVersion = 1;

}  // namespace

void write_handle(void* buf, uint64_t listen_id, int32_t dev, const std::string& identity) {
    handle hd{};
    hd.magic = kHandleMagic;
    hd.version = kHandleVersion;
    hd.listen_id = listen_id;
    hd.listen_dev = dev;
    copy_str(hd.identity, sizeof(hd.identity), identity);
    std::memset(buf, 0, NCCL_NET_HANDLE_MAXSIZE);
    std::memcpy(buf, &hd, sizeof(hd));
}

const char* read_handle(const void* buf, uint64_t now_ns, handle& out) {
    std::memcpy(&out, buf, sizeof(out));
    if (out.magic != kHandleMagic) return "not an ODL handle";
    if (out.version != kHandleVersion) return "an ODL handle of another version";
    if (out.reserved) return "reserved bits set";
    if (!out.listen_id) return "no listener id";
    if (!std::memchr(out.identity, 0, sizeof(out.identity))) return "listener identity not terminated";
    if (!out.identity[0]) return "no listener identity";
    if (out.tries == 0 && out.connect_start_ns) return "connect progress without a try";
    if (out.connect_start_ns > now_ns) return "connect progress from the future";
    return nullptr;
}

void save_connect_state(void* buf, const handle& hd) {
    handle cur;
    std::memcpy(&cur, buf, sizeof(cur));
    cur.tries = hd.tries;
    cur.connect_start_ns = hd.connect_start_ns;
    std::memcpy(buf, &cur, sizeof(cur));
}

}  // namespace odl::plugin
