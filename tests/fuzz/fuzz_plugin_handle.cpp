// SPDX-License-Identifier: MIT
// The NCCL plugin's connection handle (plugin/handle.h): 128 bytes that NCCL
// carries from the listener on another host to connect(). Input: the first
// 8 bytes are the connector's clock, the rest the handle (zero-padded).
// Beyond the sanitizers: an accepted handle names a listener, its identity
// is a terminated, non-empty string, and its progress is not from the
// future; what write_handle() makes of its fields reads back the same.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "handle.h"

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::uint64_t now = 0;
    std::memcpy(&now, data, size < sizeof(now) ? size : sizeof(now));
    unsigned char buf[NCCL_NET_HANDLE_MAXSIZE] = {};
    if (size > sizeof(now))
        std::memcpy(buf, data + sizeof(now), std::min(size - sizeof(now), sizeof(buf)));
    odl::plugin::handle hd;
    if (odl::plugin::read_handle(buf, now, hd)) return 0;
    require(hd.listen_id != 0 && hd.reserved == 0);
    const std::size_t n = strnlen(hd.identity, sizeof(hd.identity));
    require(n > 0 && n < sizeof(hd.identity));
    require(hd.connect_start_ns <= now && (hd.tries || !hd.connect_start_ns));
    unsigned char again[NCCL_NET_HANDLE_MAXSIZE];
    odl::plugin::write_handle(again, hd.listen_id, hd.listen_dev, hd.identity);
    odl::plugin::save_connect_state(again, hd);
    odl::plugin::handle back;
    require(odl::plugin::read_handle(again, now, back) == nullptr);
    require(std::memcmp(&back, buf, offsetof(odl::plugin::handle, identity)) == 0);
    require(std::strcmp(back.identity, hd.identity) == 0);
    return 0;
}
