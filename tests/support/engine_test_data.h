// SPDX-License-Identifier: MIT
// What the frame engine's tests build their engines and messages from.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend.h"

namespace odl::test {

/// An engine's terms for a test: @streams, a @window of frames per stream,
/// a @link_window of data frames for all streams (0: none).
inline open_config engine_config(std::uint32_t streams = 4, std::uint32_t window = 64, std::uint32_t link_window = 0) {
    open_config c;
    c.backend = "test";
    c.num_streams = streams;
    c.window_frames = window;
    c.link_window_frames = link_window;
    c.max_msg_bytes = 64ull << 20;
    c.node_name = "node";
    return c;
}

/// @n bytes that depend on their position and on @seed, so a byte out of
/// place, or another message's, shows.
inline std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
    std::vector<unsigned char> v;
    v.reserve(n);
    for (std::size_t i = 0; i < n; ++i) v.push_back(static_cast<unsigned char>(i * 31 + seed * 17 + (i >> 8)));
    return v;
}

}  // namespace odl::test
