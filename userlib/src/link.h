// SPDX-License-Identifier: MIT
// A frame transport between two endpoints: what the frame engine needs from
// a backend that carries whole frames (loopback today, the model server next).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace odl {

enum class link_state {
    connecting,  ///< transport not yet joined to the peer
    up,          ///< frames flow
    lost,        ///< the peer vanished or the transport failed
};

/// A received frame as it sits in the transport; valid until rx_release().
struct rx_frame {
    const unsigned char* data = nullptr;
    size_t len = 0;  ///< bytes received; 0 if the transport saw a bad length
    /// A timed transport (the sim backend's model) may hand a frame over
    /// before it is due: what the frame completes is the program's at this
    /// time (CLOCK_MONOTONIC ns), not before. 0: at once.
    uint64_t due_ns = 0;
};

class link {
public:
    virtual ~link() = default;

    /// Room for one frame of up to ODL_FRAME_MAX_BYTES, or nullptr when full.
    virtual unsigned char* tx_reserve() = 0;
    /// Queues @bytes written at the last tx_reserve() pointer (with several
    /// reserved, tx_reserve_at(): at the oldest of them).
    virtual void tx_commit(size_t bytes) = 0;
    /// How many frames the engine may hold reserved at once, to be filled
    /// by another thread and committed in order (tx_reserve_at()). 1: one at
    /// a time, as tx_reserve() gives.
    virtual unsigned tx_depth() const { return 1; }
    /// Room for the frame @ahead places after the next one tx_commit()
    /// queues (0: that one, as tx_reserve()), or nullptr when full. The
    /// engine asks for @ahead = 0, 1, 2, ... in turn, never skipping one;
    /// asking again for the same place gives the same room.
    virtual unsigned char* tx_reserve_at(unsigned ahead) { return ahead == 0 ? tx_reserve() : nullptr; }
    /// True when the transport times frames by when the program asked for
    /// them (the sim backend's model), so the engine says when via tx_asked().
    virtual bool timed() const { return false; }
    /// The next tx_commit() carries the first frame of a message the program
    /// asked to send at @ns (CLOCK_MONOTONIC): the modelled host's cost of a
    /// send stands for the library's work on it since then.
    virtual void tx_asked(uint64_t ns) { (void)ns; }
    /// A receive completion held until @due_ns (a timed transport's frame)
    /// went to the program: the next send it asks for may be its answer.
    virtual void rx_delivered(uint64_t due_ns) { (void)due_ns; }
    /// True when enough data frames wait in the transport that queueing
    /// more would only add latency for other streams (a byte queue limit).
    /// Control frames ignore it.
    virtual bool tx_busy() { return false; }
    /// Sends everything committed (end of a burst). Transports that send at
    /// commit time need not override it.
    virtual void tx_flush() {}
    /// The next received frame; data == nullptr when none is waiting.
    virtual rx_frame rx_peek() = 0;
    /// Frees the oldest frame peeked at and not yet freed.
    virtual void rx_release() = 0;
    /// How many received frames the engine may hold unfreed at once, their
    /// payloads copied out by another thread and freed in order
    /// (rx_peek_at()). 1: one at a time, as rx_peek() gives.
    virtual unsigned rx_depth() const { return 1; }
    /// The frame @ahead places after the next one rx_release() frees (0:
    /// that one, as rx_peek()); data == nullptr when none is waiting. The
    /// engine asks for @ahead = 0, 1, 2, ... in turn, never skipping one.
    virtual rx_frame rx_peek_at(unsigned ahead) { return ahead == 0 ? rx_peek() : rx_frame{}; }
    /// Returns freed frames to the sender (end of a burst).
    virtual void rx_flush() {}
    /// Advances connection setup and checks the peer's liveness. Called when
    /// idle; must be cheap when nothing changed.
    virtual link_state progress() = 0;
    /// Why the link is lost, in words (empty while healthy).
    virtual std::string failure() const = 0;
    /// Device name for reports, e.g. "loopback3".
    virtual std::string name() const = 0;
    /// Nominal rate in Mb/s, 0 when not meaningful (shared memory).
    virtual uint32_t rate_mbps() const { return 0; }
    /// True when frames may vanish in transit (a damaged frame the NHI
    /// drops, a link that retrains): the engine then offers retransmission
    /// (ODL_FEAT_RETX). Shared memory never loses a frame.
    virtual bool lossy() const { return false; }
};

}  // namespace odl
