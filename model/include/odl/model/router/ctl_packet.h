// SPDX-License-Identifier: MIT
// Control packet codec: big-endian dwords plus big-endian CRC-32C, and
// builders for the packets a host router sends and receives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "odl/wire/usb4_ctl.h"

namespace odl::model::ctl {

/// CRC-32C (Castagnoli), reflected, init and final XOR 0xffffffff.
std::uint32_t crc32c(const std::uint8_t* p, std::size_t n);

/// CPU-order dwords -> wire bytes (big-endian) followed by the BE CRC.
std::vector<std::uint8_t> encode(const std::vector<std::uint32_t>& dwords);

/// Wire bytes -> CPU-order dwords (CRC excluded). nullopt if the length is
/// not a positive multiple of 4 or the packet has no room for a CRC.
std::optional<std::vector<std::uint32_t>> decode(const std::vector<std::uint8_t>& bytes,
                                                 bool* crc_ok);

/// 64-bit route string of a packet (bit 63 = the router bit, masked off).
std::uint64_t route_of(const std::vector<std::uint32_t>& dw);
/// Header dwords for @route; @from_router sets bit 31 of dword 0.
void put_route(std::vector<std::uint32_t>& dw, std::uint64_t route, bool from_router);

/// Address dword of READ / WRITE packets.
std::uint32_t addr(odl_usb4_space space, unsigned port, unsigned offset, unsigned len,
                   unsigned seq);

/// Builders (CPU-order dwords; pass to encode()).
std::vector<std::uint32_t> read_request(std::uint64_t route, odl_usb4_space space,
                                        unsigned port, unsigned offset, unsigned len,
                                        unsigned seq = 0);
std::vector<std::uint32_t> write_request(std::uint64_t route, odl_usb4_space space,
                                         unsigned port, unsigned offset,
                                         const std::vector<std::uint32_t>& data,
                                         unsigned seq = 0);
std::vector<std::uint32_t> error_packet(std::uint64_t route, odl_usb4_err code, unsigned port);
std::vector<std::uint32_t> event_packet(std::uint64_t route, unsigned port, bool unplug);
std::vector<std::uint32_t> plug_ack(std::uint64_t route, unsigned port, bool unplug);

}  // namespace odl::model::ctl
