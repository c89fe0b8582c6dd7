// SPDX-License-Identifier: MIT
// The odl-linkd socket protocol's validator (include/odl/wire/linkd_codec.h),
// which odl-linkd runs on every datagram from a QEMU device and the device
// on every datagram from odl-linkd. Beyond the sanitizers: an accepted
// message's payload length matches the datagram, its type may come from
// that side, and the copy it returns is the datagram's header.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "odl/wire/linkd_codec.h"

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    for (auto side : {ODL_LINKD_SIDE_DEV, ODL_LINKD_SIDE_MODEL}) {
        odl_linkd_msg m;
        const odl_linkd_err e = odl_linkd_check(data, size, side, &m);
        require(e < ODL_LINKD_ERR_COUNT);
        require(std::strcmp(odl_linkd_err_name(e), "unknown") != 0);
        if (e != ODL_LINKD_OK) continue;
        require(size >= ODL_LINKD_MSG_BYTES);
        require(std::memcmp(&m, data, sizeof(m)) == 0);
        require(std::size_t(ODL_LINKD_MSG_BYTES) + odl_le32(m.hdr.payload_len) == size);
        require(odl_le32(m.hdr.payload_len) <= ODL_LINKD_MAX_PAYLOAD);
        require(odl_linkd_type_from(odl_le16(m.hdr.type), side));
        require(m.hdr.flags == 0);
    }
    return 0;
}
