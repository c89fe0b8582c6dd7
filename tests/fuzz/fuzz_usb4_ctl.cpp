// SPDX-License-Identifier: MIT
// The USB4 control packet codec (model/src/router/ctl_packet.cpp), which the
// host router model runs on every packet the guest's thunderbolt.ko sends.
// A packet with a good CRC decodes to dwords that encode back to the same
// bytes; anything else is refused, never read past.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "odl/model/router/ctl_packet.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::vector<std::uint8_t> bytes(data, data + size);
    bool crc_ok = false;
    const auto dw = odl::model::ctl::decode(bytes, &crc_ok);
    if (!dw) return 0;
    if (size % 4 != 0 || dw->size() + 1 != size / 4) std::abort();
    if (crc_ok && odl::model::ctl::encode(*dw) != bytes) std::abort();
    if (dw->size() >= 2) (void)odl::model::ctl::route_of(*dw);
    return 0;
}
