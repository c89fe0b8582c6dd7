// SPDX-License-Identifier: MIT
// The sim backend's protocol (include/odl/wire/sim_codec.h): the control
// datagrams odl-linkd --sim and libodl check, and the shared rings, whose
// indices and slot lengths come from the other process. The input sets a
// region's header, one ring's indices and slot lengths; the ring calls must
// hand out only slots inside the region and never a length above a frame,
// and a descriptor that passes its check must point inside the sender's slots.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "odl/wire/sim_codec.h"

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

std::uint64_t take64(const std::uint8_t*& p, std::size_t& n) {
    std::uint64_t v = 0;
    const std::size_t k = n < 8 ? n : 8;
    std::memcpy(&v, p, k);
    p += k;
    n -= k;
    return v;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    for (auto side : {ODL_SIM_SIDE_CLIENT, ODL_SIM_SIDE_SERVER}) {
        const char* why = odl_sim_check(data, size, side);
        if (why) continue;
        odl_sim_hdr h;
        require(size >= sizeof(h));
        std::memcpy(&h, data, sizeof(h));
        require(odl_le32(h.len) == size - sizeof(h));
        require(odl_le16(h.flags) == 0);
    }

    // A region as the other process might leave it.
    static std::vector<unsigned char> region(ODL_SIM_SHM_BYTES);
    auto* shm = reinterpret_cast<odl_sim_shm*>(region.data());
    odl_sim_shm_init(shm);
    const std::uint8_t* p = data;
    std::size_t n = size;
    const std::uint64_t own = take64(p, n);  // this side's count
    shm->to_server.head = take64(p, n);
    shm->to_server.tail = take64(p, n);
    if (n >= 4) std::memcpy(&shm->magic, p, 4);  // sometimes a broken header
    if (odl_sim_shm_check(shm)) return 0;
    odl_sim_slot* slots = odl_sim_slots(shm);
    const auto* lo = reinterpret_cast<const unsigned char*>(slots);
    const auto* hi = region.data() + region.size();
    // Slot lengths the other side wrote, at the slots the indices point to.
    for (unsigned i = 0; i < ODL_SIM_SLOTS && n >= 4; ++i, p += 4, n -= 4)
        std::memcpy(&slots[(own + i) % ODL_SIM_SLOTS].len, p, 4);
    for (unsigned i = 0; i < 4; ++i) {
        odl_sim_slot* slot = nullptr;
        if (odl_sim_ring_next(&shm->to_server, slots, own + i, &slot) == ODL_SIM_RING_OK) {
            const auto* s = reinterpret_cast<const unsigned char*>(slot);
            require(s >= lo && s + sizeof(*slot) <= hi);
            const std::uint32_t len = odl_sim_slot_len(slot);
            require(len <= ODL_FRAME_MAX_BYTES);
        }
        slot = nullptr;
        if (odl_sim_ring_room(&shm->to_server, slots, own + i, &slot) == ODL_SIM_RING_OK) {
            const auto* s = reinterpret_cast<const unsigned char*>(slot);
            require(s >= lo && s + sizeof(*slot) <= hi);
        }
    }
    // Descriptors as the server might write them: a usable one names a slot
    // inside the sender's ring and a frame length a slot holds.
    for (unsigned i = 0; i < 4 && n >= sizeof(odl_sim_desc); ++i, p += sizeof(odl_sim_desc), n -= sizeof(odl_sim_desc)) {
        odl_sim_desc* d = odl_sim_descs(shm) + (own + i) % ODL_SIM_SLOTS;
        std::memcpy(d, p, sizeof(*d));
        odl_sim_desc out;
        if (odl_sim_desc_take(d, &out)) continue;
        const auto* s = reinterpret_cast<const unsigned char*>(&slots[out.slot]);
        require(s >= lo && s + sizeof(odl_sim_slot) <= reinterpret_cast<const unsigned char*>(odl_sim_descs(shm)));
        require(out.len >= ODL_FRAME_HDR_BYTES && out.len <= sizeof(slots[out.slot].data));
        require(out.region != 0);
    }
    return 0;
}
