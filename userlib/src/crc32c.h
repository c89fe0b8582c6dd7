// SPDX-License-Identifier: MIT
// CRC32C (Castagnoli) of frame payloads: SSE4.2 when the CPU has it, Boost.CRC otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace odl {

/// CRC32C of @len bytes at @data (initial value and final xor 0xffffffff).
uint32_t crc32c(const void* data, size_t len);
/// The portable Boost.CRC path, exposed so tests can compare both.
uint32_t crc32c_portable(const void* data, size_t len);

}  // namespace odl
