// SPDX-License-Identifier: MIT
// The odl_tb5 XDomain service packet checks (include/odl/wire/tb5_login_codec.h),
// which the kernel module runs on every packet a peer sends on the control
// channel. Input: one byte choosing the receiver (the ring count it offered,
// its highest HopID), then the packet. Beyond the sanitizers: a request is
// exactly its type's size; an accepted LOGIN's rings and HopIDs obey the
// protocol and encode back to the same words; an accepted LOGIN_RESP has
// usable terms.
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "odl/wire/frame.h"
#include "odl/wire/tb5_login_codec.h"

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

// The peer the seeds (make_seeds.py) address: route 1, these UUIDs.
constexpr std::uint64_t kRoute = 1;
constexpr std::uint8_t kLocal[16] = {0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11,
                                     0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x11};
constexpr std::uint8_t kRemote[16] = {0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22,
                                      0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22, 0x22};

void check_login(const odl_xd_login& req, std::uint32_t max_hopid) {
    unsigned rings = 0;
    const std::uint32_t st = odl_xd_login_check(&req, max_hopid, ODL_FRAME_MAX_BYTES, &rings);
    require(st == ODL_XD_ST_OK || st == ODL_XD_ST_VERSION || st == ODL_XD_ST_INVAL);
    require((st == ODL_XD_ST_VERSION) == (req.version_major != ODL_XD_VERSION_MAJOR));
    if (st != ODL_XD_ST_OK) return;
    require(rings >= 1 && rings <= ODL_XD_RINGS_MAX);
    require((req.features & ODL_XD_FEAT_RINGS) || rings == 1);
    require(req.frame_bytes == ODL_FRAME_MAX_BYTES && (req.features & ODL_XD_FEAT_CREDITS));
    require(odl_xd_is_power_of_2(req.ring_size) && req.ring_size >= ODL_XD_RING_SIZE_MIN &&
            req.ring_size <= ODL_XD_RING_SIZE_MAX);
    odl_xd_login again{};
    for (unsigned i = 0; i < rings; i++) {
        const std::uint32_t p = odl_xd_login_path(&req, i);
        require(p >= ODL_XD_MIN_HOPID && p <= max_hopid);
        for (unsigned j = 0; j < i; j++) require(p != odl_xd_login_path(&req, j));
        odl_xd_login_set_path(&again, i, p);
    }
    require(again.transmit_path == req.transmit_path);
    require(std::memcmp(again.transmit_path_ext, req.transmit_path_ext, sizeof(again.transmit_path_ext)) == 0);
}

void check_resp(const odl_xd_login_resp& r, unsigned offer) {
    switch (odl_xd_login_resp_check(&r, offer, ODL_FRAME_MAX_BYTES)) {
    case ODL_XD_RESP_OK:
        require(r.status == ODL_XD_ST_OK && !r.reserved[0] && !r.reserved[1]);
        require(r.version_major == ODL_XD_VERSION_MAJOR && r.frame_bytes == ODL_FRAME_MAX_BYTES);
        require(r.features & ODL_XD_FEAT_CREDITS);
        if (offer > 1 && (r.features & ODL_XD_FEAT_RINGS))
            require(r.rings >= 1 && r.rings <= ODL_XD_RINGS_MAX);
        else
            require(r.rings == 0);
        break;
    case ODL_XD_RESP_ONE_RING:
        require(offer > 1 && r.status == ODL_XD_ST_INVAL && r.version_minor == 0);
        break;
    case ODL_XD_RESP_REFUSED:
        require(r.status != ODL_XD_ST_OK);
        break;
    case ODL_XD_RESP_MALFORMED:
        break;
    default:
        require(false);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const unsigned offer = 1 + (data[0] & 3);
    const std::uint32_t max_hopid = (data[0] & 4) ? 11 : 63;  // few HopIDs, or thunderbolt.ko's many
    data++;
    size--;
    const odl_xd_ids ids{kRoute, kLocal, kRemote};
    odl_xd_hdr hdr;
    std::uint32_t sn = 99;
    const odl_xd_verdict v = odl_xd_classify(data, size, &ids, &hdr, &sn);
    if (size < sizeof(odl_xd_hdr)) {
        require(v == ODL_XD_FOREIGN);
        return 0;
    }
    if (v != ODL_XD_FOREIGN) {
        require(std::memcmp(&hdr, data, sizeof(hdr)) == 0);
        require(((std::uint64_t(hdr.route_hi) << 32 | hdr.route_lo) & ~(1ull << 63)) == kRoute);
        require(odl_xd_is_service(hdr.uuid) && !std::memcmp(hdr.initiator_uuid, kRemote, 16) &&
                !std::memcmp(hdr.target_uuid, kLocal, 16));
        require(sn <= 3);
    }
    if (v == ODL_XD_REQUEST) {
        require(size == odl_xd_request_size(hdr.type) && size % 4 == 0);
        require((hdr.length_sn & ODL_XD_LENGTH_MASK) == (size - 12) / 4);
        if (hdr.type == ODL_XD_LOGIN) {
            odl_xd_login req;
            std::memcpy(&req, data, sizeof(req));
            check_login(req, max_hopid);
        } else if (hdr.type == ODL_XD_PORT) {
            odl_xd_port port;
            std::memcpy(&port, data, sizeof(port));
            require((odl_xd_port_check(&port) == ODL_XD_ST_OK) == (port.open <= 1));
        }
    }
    if (v == ODL_XD_ANSWER) require(hdr.type == ODL_XD_LOGIN_RESP || hdr.type == ODL_XD_STATUS);
    // The same bytes as the answer to a LOGIN we sent with command id 7.
    if (size >= sizeof(odl_xd_login_resp)) {
        odl_xd_login_resp r;
        std::memcpy(&r, data, sizeof(r));
        if (odl_xd_answers(&r.hdr, sizeof(r), ODL_XD_LOGIN_RESP, 7, &ids)) {
            require(r.hdr.type == ODL_XD_LOGIN_RESP && r.hdr.command_id == 7);
            check_resp(r, offer);
        }
    }
    return 0;
}
