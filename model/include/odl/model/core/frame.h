// SPDX-License-Identifier: MIT
// What moves between NHI, router and cable: one NHI frame (frame-level
// model; USB4 transport packetisation is accounted analytically).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace odl::model {

/// One frame in flight: a data frame (frame-mode ring) or a control packet
/// (raw ring 0, bytes include the big-endian CRC).
struct frame {
    std::vector<std::uint8_t> bytes;  ///< empty in timing-only runs
    std::uint32_t len = 0;            ///< bytes on the ring, 1..4096
    std::uint8_t sof = 0;             ///< SOF PDF
    std::uint8_t eof = 0;             ///< EOF PDF (control: packet type)
    std::uint16_t hop = 0;            ///< HopID on the current link / ring
    bool control = false;             ///< HopID 0 control packet
    bool crc_error = false;           ///< damaged on the link, not corrected
    bool reserved = false;            ///< holds a receive credit at the far end
    std::uint64_t id = 0;             ///< for traces
};
/// Gives a released frame back to the pool (frame.cpp).
struct frame_recycle {
    void operator()(frame* f) const;
};
/// A frame has one owner at a time (NHI, router, cable, in-flight list): a
/// unique pointer with no reference count, released into the pool.
using frame_ptr = std::unique_ptr<frame, frame_recycle>;

/// A fresh (all-default) frame from a per-thread pool: released frames are
/// recycled and `bytes` keeps its capacity, so the per-frame path allocates
/// nothing in steady state.
frame_ptr make_frame();

}  // namespace odl::model
