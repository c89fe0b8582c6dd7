// SPDX-License-Identifier: MIT
// The perf suite's engine: client and server run the same phases over libodl;
// the client describes each phase to the server in a control message.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "odl/odl.h"

namespace odl::perf {

/// A failed run: peer loss, corruption, stall. The message is user-facing.
class perf_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Stream layout shared by both ends.
constexpr uint32_t kCtrlStream = 0;   ///< phase descriptions and reports
constexpr uint32_t kPingStream = 1;   ///< ping-pong
constexpr uint32_t kBulkStream = 2;   ///< first bulk stream
constexpr uint32_t kMaxBulkStreams = 32;
/// Messages in flight per bulk stream: what a server accepts from a client.
constexpr uint32_t kMaxDepth = 4096;
constexpr uint32_t kPerfStreams = kBulkStream + kMaxBulkStreams;
/// Tag of the client's phase descriptions on kCtrlStream: a session's first
/// message carries it, which tells a server that also serves files apart.
constexpr uint32_t kTagPhase = 0xC0DE0001;
constexpr uint64_t kCtrlCap = 1 << 20;  ///< largest control message

/// What the user asked for.
struct options {
    std::string test;              ///< bandwidth, latency, jitter, latency-load, mimo
    std::vector<uint64_t> sizes;   ///< message sizes, bytes
    uint64_t bytes = 256ull << 20; ///< bandwidth: bytes per size (and direction)
    uint64_t max_msgs = 200000;    ///< bandwidth: cap on messages per size
    uint64_t iterations = 10000;   ///< latency/jitter: measured round trips
    uint64_t warmup = 1000;        ///< latency/jitter: unmeasured round trips
    bool bidir = false;            ///< bandwidth: both directions at once
    uint32_t streams = 4;          ///< mimo: concurrent bulk streams
    uint32_t depth = 32;           ///< messages in flight per bulk stream
    double interval_us = 100.0;    ///< jitter: gap between pings
    uint64_t load_size = 1 << 20;  ///< latency-load: bulk message size
    uint64_t stall_timeout_ms = 5000; ///< no progress this long: fail
    bool verify = true;            ///< check every received payload byte (both ends)
};

/// Progress callback: a one-line status for stderr.
using progress_fn = std::function<void(const std::string&)>;

/// Runs @opt against the server at the other end of @dev; returns results.
nlohmann::json run_client(odl_dev* dev, const options& opt, const progress_fn& progress);

/// Serves one client session on @dev until it says goodbye. Throws perf_error.
/// @first: the session's first phase description, when the caller already
/// received it (a server that dispatches by the first message).
void run_server(odl_dev* dev, uint64_t stall_timeout_ms, const nlohmann::json* first = nullptr);
/// A control message's JSON; throws perf_error for a malformed one.
nlohmann::json parse_ctrl(const char* buf, size_t len);

/// Fills @buf with the verification pattern of message @seq (any length).
void fill_pattern(unsigned char* buf, uint64_t len, uint64_t seq);
/// True if @buf holds exactly the pattern of message @seq.
bool check_pattern(const unsigned char* buf, uint64_t len, uint64_t seq);

}  // namespace odl::perf
