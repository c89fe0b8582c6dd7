// SPDX-License-Identifier: MIT
// Control packet codec (Linux ctl.c: tb_ctl_tx(), tb_crc(), tb_ctl_rx_callback()).
#include "odl/model/router/ctl_packet.h"

#include <boost/crc.hpp>

namespace odl::model::ctl {

std::uint32_t crc32c(const std::uint8_t* p, std::size_t n) {
    boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true> crc;
    crc.process_bytes(p, n);
    return crc.checksum();
}

static void put_be32(std::uint8_t* p, std::uint32_t v) {
    p[0] = static_cast<std::uint8_t>(v >> 24);
    p[1] = static_cast<std::uint8_t>(v >> 16);
    p[2] = static_cast<std::uint8_t>(v >> 8);
    p[3] = static_cast<std::uint8_t>(v);
}

static std::uint32_t get_be32(const std::uint8_t* p) {
    return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) |
           (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

std::vector<std::uint8_t> encode(const std::vector<std::uint32_t>& dwords) {
    std::vector<std::uint8_t> out(dwords.size() * 4 + ODL_USB4_CTL_CRC_BYTES);
    for (std::size_t i = 0; i < dwords.size(); ++i) put_be32(&out[i * 4], dwords[i]);
    put_be32(&out[dwords.size() * 4], crc32c(out.data(), dwords.size() * 4));
    return out;
}

std::optional<std::vector<std::uint32_t>> decode(const std::vector<std::uint8_t>& bytes,
                                                 bool* crc_ok) {
    if (bytes.size() < 8 || bytes.size() % 4 != 0) return std::nullopt;
    const std::size_t n = bytes.size() - ODL_USB4_CTL_CRC_BYTES;
    if (crc_ok) *crc_ok = crc32c(bytes.data(), n) == get_be32(&bytes[n]);
    std::vector<std::uint32_t> dw(n / 4);
    for (std::size_t i = 0; i < dw.size(); ++i) dw[i] = get_be32(&bytes[i * 4]);
    return dw;
}

std::uint64_t route_of(const std::vector<std::uint32_t>& dw) {
    if (dw.size() < 2) return 0;
    return (std::uint64_t{dw[0] & ODL_USB4_HDR0_ROUTE_HI_MASK} << 32) | dw[1];
}

void put_route(std::vector<std::uint32_t>& dw, std::uint64_t route, bool from_router) {
    if (dw.size() < 2) dw.resize(2);
    dw[0] = static_cast<std::uint32_t>(route >> 32) & ODL_USB4_HDR0_ROUTE_HI_MASK;
    if (from_router) dw[0] |= ODL_USB4_HDR0_ROUTER;
    dw[1] = static_cast<std::uint32_t>(route);
}

std::uint32_t addr(odl_usb4_space space, unsigned port, unsigned offset, unsigned len,
                   unsigned seq) {
    return (offset & ODL_USB4_ADDR_OFFSET_MASK) |
           ((len & ODL_USB4_ADDR_LEN_MASK) << ODL_USB4_ADDR_LEN_SHIFT) |
           ((port & ODL_USB4_ADDR_PORT_MASK) << ODL_USB4_ADDR_PORT_SHIFT) |
           ((static_cast<unsigned>(space) & ODL_USB4_ADDR_SPACE_MASK)
            << ODL_USB4_ADDR_SPACE_SHIFT) |
           ((seq & ODL_USB4_ADDR_SEQ_MASK) << ODL_USB4_ADDR_SEQ_SHIFT);
}

std::vector<std::uint32_t> read_request(std::uint64_t route, odl_usb4_space space,
                                        unsigned port, unsigned offset, unsigned len,
                                        unsigned seq) {
    std::vector<std::uint32_t> dw;
    put_route(dw, route, false);
    dw.push_back(addr(space, port, offset, len, seq));
    return dw;
}

std::vector<std::uint32_t> write_request(std::uint64_t route, odl_usb4_space space,
                                         unsigned port, unsigned offset,
                                         const std::vector<std::uint32_t>& data, unsigned seq) {
    std::vector<std::uint32_t> dw;
    put_route(dw, route, false);
    dw.push_back(addr(space, port, offset, static_cast<unsigned>(data.size()), seq));
    dw.insert(dw.end(), data.begin(), data.end());
    return dw;
}

std::vector<std::uint32_t> error_packet(std::uint64_t route, odl_usb4_err code, unsigned port) {
    std::vector<std::uint32_t> dw;
    put_route(dw, route, true);
    dw.push_back((static_cast<std::uint32_t>(code) & ODL_USB4_ERR_CODE_MASK) |
                 ((port & ODL_USB4_ERR_PORT_MASK) << ODL_USB4_ERR_PORT_SHIFT));
    return dw;
}

std::vector<std::uint32_t> event_packet(std::uint64_t route, unsigned port, bool unplug) {
    std::vector<std::uint32_t> dw;
    put_route(dw, route, true);
    dw.push_back((port & ODL_USB4_EVENT_PORT_MASK) | (unplug ? ODL_USB4_EVENT_UNPLUG : 0u));
    return dw;
}

std::vector<std::uint32_t> plug_ack(std::uint64_t route, unsigned port, bool unplug) {
    std::vector<std::uint32_t> dw;
    put_route(dw, route, false);
    dw.push_back(ODL_USB4_ERR_PLUG_ACK |
                 ((port & ODL_USB4_ERR_PORT_MASK) << ODL_USB4_ERR_PORT_SHIFT) |
                 ((unplug ? ODL_USB4_PG_UNPLUG : ODL_USB4_PG_PLUG) << ODL_USB4_ERR_PG_SHIFT));
    return dw;
}

}  // namespace odl::model::ctl
