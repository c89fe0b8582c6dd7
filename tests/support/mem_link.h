// SPDX-License-Identifier: MIT
// An in-memory frame link for engine tests: bounded queues joined pairwise,
// with hooks to inject raw bytes (garbage from a hostile peer) and to stall
// or cut the link.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "link.h"

namespace odl::test {

/// Shared state of one direction.
struct mem_queue {
    std::deque<std::vector<unsigned char>> frames;
    size_t capacity = 64;
};

struct mem_link_pair_state {
    /// Held by every link call: a test may poll each side on its own
    /// thread. A peeked frame stays valid (deque push_back keeps references).
    std::mutex lock;
    mem_queue q[2];  ///< q[i]: frames sent by side i
    bool cut = false;
    /// lossy[i]: side i's link reports lossy() (the engines then negotiate
    /// retransmission when both do).
    bool lossy[2] = {false, false};
    /// Called for every committed frame; true: the frame vanishes in transit.
    std::function<bool(int from, const std::vector<unsigned char>& frame)> drop;
    uint64_t dropped = 0;
    /// A timed link (as the sim backend's): when set, side i hands every
    /// frame over at once but says it is due at due_ns(i) (CLOCK_MONOTONIC),
    /// and asked[i] records each tx_asked() time side i was told.
    std::function<uint64_t(int to)> due_ns;
    std::vector<uint64_t> asked[2];
};

class mem_link final : public link {
public:
    mem_link(std::shared_ptr<mem_link_pair_state> st, int side) : m_st(std::move(st)), m_side(side) {}

    unsigned char* tx_reserve() override;
    void tx_commit(size_t bytes) override;
    rx_frame rx_peek() override;
    void rx_release() override;
    link_state progress() override {
        const std::lock_guard<std::mutex> hold(m_st->lock);
        return m_st->cut ? link_state::lost : link_state::up;
    }
    std::string failure() const override {
        const std::lock_guard<std::mutex> hold(m_st->lock);
        return m_st->cut ? "mem link cut" : "";
    }
    std::string name() const override { return "mem" + std::to_string(m_side); }
    bool lossy() const override { return m_st->lossy[m_side]; }
    bool timed() const override { return bool(m_st->due_ns); }
    void tx_asked(uint64_t ns) override { m_st->asked[m_side].push_back(ns); }

    /// Frames waiting for this side to read.
    size_t rx_pending() const { return m_st->q[1 - m_side].frames.size(); }

private:
    std::shared_ptr<mem_link_pair_state> m_st;
    int m_side;
    std::vector<unsigned char> m_tx_buf;
};

/// Two joined links; the state lets a test inject frames or cut the link.
struct mem_link_pair {
    std::shared_ptr<mem_link_pair_state> state = std::make_shared<mem_link_pair_state>();
    std::unique_ptr<mem_link> a = std::make_unique<mem_link>(state, 0);
    std::unique_ptr<mem_link> b = std::make_unique<mem_link>(state, 1);
    /// Queues raw bytes as if side @from had sent them.
    void inject(int from, std::vector<unsigned char> bytes) { state->q[from].frames.push_back(std::move(bytes)); }
};

}  // namespace odl::test
