// SPDX-License-Identifier: MIT
// The connection handle: what listen() writes into NCCL's 128-byte buffer
// and the peer's connect() reads back after NCCL carried it across its
// bootstrap network (so it is bytes from another host, checked before use).
// connect() also keeps its progress in it: NCCL passes the same buffer on
// every retry.
#pragma once

#include <cstdint>
#include <string>

#include "nccl/types.h"

namespace odl::plugin {

struct handle {
    uint32_t magic;
    uint16_t version;
    uint16_t reserved;          ///< zero
    uint64_t listen_id;         ///< names the listener in CONNECT; never 0
    int32_t listen_dev;         ///< listener's device (a hint only)
    uint32_t tries;             ///< connector: calls so far
    uint64_t connect_start_ns;  ///< connector: CLOCK_MONOTONIC of its first call
    char identity[64];          ///< listener's process, as its links' peers see it
};
static_assert(sizeof(handle) <= NCCL_NET_HANDLE_MAXSIZE, "handle must fit NCCL's 128 bytes");

/// Writes a listener's handle into NCCL's buffer, all 128 bytes.
void write_handle(void* buf, uint64_t listen_id, int32_t dev, const std::string& identity);

/// Reads the handle in @buf (at @now_ns, the connector's clock) into @out:
/// nullptr if it is a listener's handle as write_handle() made it, with
/// connect progress no later than @now_ns, else why not.
const char* read_handle(const void* buf, uint64_t now_ns, handle& out);

/// Stores the connector's progress (tries, connect_start_ns) into @buf.
void save_connect_state(void* buf, const handle& hd);

}  // namespace odl::plugin
