// SPDX-License-Identifier: MIT
// The frame decoder (include/odl/wire/frame_codec.h), which every endpoint
// and the kernel module run on a peer's bytes. Beyond the sanitizers: an
// accepted frame's header encodes back to the same bytes, its payload lies
// inside the buffer, and its fields obey the rules the decoder promises.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>

#include "odl/wire/frame_codec.h"

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

void check(const std::uint8_t* data, std::size_t size, unsigned streams, unsigned opts) {
    odl_frame_info info;
    if (odl_frame_decode_opt(data, size, streams, opts, &info) != ODL_FRAME_OK) return;
    require(size >= sizeof(odl_frame_hdr));
    odl_frame_hdr again;
    odl_frame_encode(&again, &info);
    require(std::memcmp(&again, data, sizeof(again)) == 0);
    const bool split = (opts & ODL_FRAME_DEC_SPLIT) && info.type == ODL_FRAME_DATA && (info.flags & ODL_FRAME_F_SPLIT);
    require(info.len <= ODL_FRAME_MAX_PAYLOAD);
    require(split || sizeof(odl_frame_hdr) + info.len <= size);
    if (info.type == ODL_FRAME_DATA) {
        require(info.stream < streams);
        require(std::uint64_t(info.offset) + info.len <= info.msg_len);
        require(!(info.flags & ODL_FRAME_F_SOM) || info.offset == 0);
        require(!(info.flags & ODL_FRAME_F_EOM) || info.offset + info.len == info.msg_len);
    }
    if (info.type == ODL_FRAME_HELLO) {
        odl_hello h;
        require(info.len == sizeof(h));
        std::memcpy(&h, data + sizeof(odl_frame_hdr), sizeof(h));
        if (odl_hello_check(&h) == ODL_FRAME_OK) {
            require(odl_le16(h.streams) >= 1 && odl_le16(h.streams) <= ODL_MAX_STREAMS);
            require(odl_le32(h.window) >= 1 && odl_le32(h.window) <= ODL_MAX_WINDOW_FRAMES);
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    for (unsigned streams : {1u, 4u, ODL_MAX_STREAMS})
        for (unsigned opts : {0u, unsigned(ODL_FRAME_DEC_SPLIT)}) check(data, size, streams, opts);
    // Unknown option bits refuse every frame.
    odl_frame_info info;
    require(size < sizeof(odl_frame_hdr) ||
            odl_frame_decode_opt(data, size, ODL_MAX_STREAMS, ~0u, &info) != ODL_FRAME_OK);
    return 0;
}
