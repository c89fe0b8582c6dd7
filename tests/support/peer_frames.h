// SPDX-License-Identifier: MIT
// Frames as a hand-driven (or hostile) peer sends them, for the engine
// tests and the engine's fuzz target: one way to build each.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "odl/wire/frame_codec.h"

namespace odl::test {

/// A frame: @fi's header, then @fi.len bytes of @payload (zeros if none).
inline std::vector<unsigned char> peer_frame(const odl_frame_info& fi, const void* payload = nullptr) {
    std::vector<unsigned char> b(ODL_FRAME_HDR_BYTES + fi.len);
    odl_frame_encode(reinterpret_cast<odl_frame_hdr*>(b.data()), &fi);
    if (fi.len && payload) std::memcpy(b.data() + ODL_FRAME_HDR_BYTES, payload, fi.len);
    return b;
}

/// A peer's HELLO payload: 4 streams, 64 frames of window by default.
inline odl_hello peer_hello(std::uint32_t features, std::uint16_t minor = ODL_PROTO_VERSION_MINOR,
                            std::uint32_t link_window = 0, std::uint64_t max_msg_bytes = 1u << 20,
                            std::uint16_t streams = 4, std::uint32_t window = 64) {
    odl_hello h{};
    h.magic = odl_cpu_le32(ODL_FRAME_MAGIC);
    h.version_major = odl_cpu_le16(ODL_PROTO_VERSION_MAJOR);
    h.version_minor = odl_cpu_le16(minor);
    h.features = odl_cpu_le32(features);
    h.max_payload = odl_cpu_le16(ODL_FRAME_MAX_PAYLOAD);
    h.streams = odl_cpu_le16(streams);
    h.window = odl_cpu_le32(window);
    h.link_window = odl_cpu_le32(link_window);
    h.max_msg_bytes = odl_cpu_le64(max_msg_bytes);
    return h;
}

/// The HELLO frame carrying @h.
inline std::vector<unsigned char> hello_frame(const odl_hello& h) {
    odl_frame_info fi{};
    fi.type = ODL_FRAME_HELLO;
    fi.len = sizeof(h);
    return peer_frame(fi, &h);
}

}  // namespace odl::test
