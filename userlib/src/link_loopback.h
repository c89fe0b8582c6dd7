// SPDX-License-Identifier: MIT
// The loopback link: two endpoints on one machine joined by shared memory,
// either two processes (rendezvous on an abstract unix socket) or one process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "link.h"

namespace odl {

/// Loopback device indices are 0..kLoopbackDevices-1: each names one link
/// between exactly two endpoints.
constexpr uint32_t kLoopbackDevices = 64;
/// Frame slots per direction (a power of two), like an NHI ring's size.
constexpr uint32_t kLoopbackSlots = 512;
/// Data frames the sender keeps queued ahead of the receiver: enough to keep
/// the receiving core busy, few enough that another stream's frame waits
/// behind at most this many (64 x 4 KiB).
constexpr uint32_t kLoopbackQueueLimit = 64;

/// Messages of at least this many bytes go by single-copy rendezvous (the
/// receiver reads them from the sender with process_vm_readv) instead of
/// being copied into the ring and out again. Not lower: each one costs a
/// round trip, holds its stream until answered, and process_vm_readv pins
/// every page (on the 2-core EPYC dev VM it copied 1 MiB at 5.5 GB/s where
/// memcpy did 14.8; see docs/userlib.md).
constexpr uint64_t kLoopbackRndvMinBytes = 256 * 1024;

/// The rendezvous threshold in force: 0 (off) with ODL_LOOPBACK_RNDV=0,
/// ODL_LOOPBACK_RNDV_MIN bytes when set, else kLoopbackRndvMinBytes.
uint64_t loopback_rndv_min_bytes();

/// Pid of a loopback link's peer in this process's pid namespace (our own
/// for an in-process pair); 0 if @l is not a connected loopback link.
uint32_t loopback_peer_pid(const link& l);

/// Opens loopback device @index: joins a waiting peer, or waits for one.
/// The link reports `connecting` until the peer arrives. Throws odl::error.
std::unique_ptr<link> open_loopback_link(uint32_t index);

/// Two links joined to each other, for two endpoints in one process.
std::pair<std::unique_ptr<link>, std::unique_ptr<link>> open_loopback_pair();

/// Abstract socket name of loopback device @index (per user, and per
/// ODL_LOOPBACK_NAMESPACE when set, so concurrent test runs stay apart).
std::string loopback_socket_name(uint32_t index);

}  // namespace odl
