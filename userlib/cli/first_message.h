// SPDX-License-Identifier: MIT
// One device, two services (`odl files serve DIR --answer-tests`): the
// session's first message on stream 0 says which one the peer's client
// wants. An `odl perf --client` opens with a phase description tagged
// perf::kTagPhase; an `odl cp` (or ls, sync, mount) with a file-service
// HELLO, tag 0. Both protocols stay as they are; only the server looks.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "odl/odl.hpp"

namespace odl::cli {

struct first_message {
    uint32_t tag = 0;
    std::string bytes;
};

/// Waits for the first message on stream 0 of @dev (at most @cap bytes).
/// Nothing when @stop rose or the link ended first (@why then says how the
/// link ended; empty when stopped). Throws std::runtime_error for a longer
/// message: neither service takes one.
std::optional<first_message> await_first(odl::device& dev, size_t cap, const std::atomic<bool>& stop,
                                         std::string& why);

}  // namespace odl::cli
