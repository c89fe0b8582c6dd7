// SPDX-License-Identifier: MIT
// The objects NCCL holds as opaque pointers: listen, send and receive comms,
// requests and memory registrations. Each starts with a magic so a stale or
// foreign pointer is refused instead of followed further.
#pragma once

#include <cstdint>
#include <vector>

#include "nccl/types.h"
#include "odl/odl.h"

namespace odl::plugin {

class link;
struct comm;

constexpr int kMaxRecvs = 8;  ///< buffers per grouped receive (3 bits of a completion ctx)

enum : uint32_t {
    kListenMagic = 0x4c53544eu,
    kSendMagic = 0x53454e44u,
    kRecvMagic = 0x52454356u,
    kReqMagic = 0x52455155u,
    kMrMagic = 0x4d524547u,
    kDeadMagic = 0xdeaddeadu,
};

/// One isend or (grouped) irecv. Aligned so the low 4 bits of its address
/// are free to carry the buffer index in a libodl completion ctx.
struct alignas(16) request {
    uint32_t magic = 0;  ///< kReqMagic while NCCL owns it
    bool in_use = false;
    bool is_send = false;
    int n = 0;                  ///< buffers
    int pending = 0;            ///< libodl operations not yet completed
    int status = ODL_OK;        ///< first error among the buffers
    uint64_t sizes[kMaxRecvs] = {};
    comm* owner = nullptr;
};

struct alignas(16) comm {
    uint32_t magic;
    link* ln;
    uint32_t stream;             ///< libodl stream carrying this connection
    uint32_t gen;                ///< 7-bit generation, in every tag (see tag_for)
    std::vector<request> reqs;   ///< fixed pool: the request limit
    int posted = 0;              ///< libodl operations still outstanding
    int status = ODL_OK;         ///< sticky error of the connection
    bool closed = false;         ///< NCCL closed it; freed once @posted is 0
    unsigned char hello[24] = {};  ///< CONNECT message (send comms), must outlive its send
};

struct alignas(16) listen_comm {
    uint32_t magic = kListenMagic;
    uint64_t id;   ///< random; names this listener in the peer's CONNECT
    int dev;
};

struct mem_reg {
    uint32_t magic = kMrMagic;
    comm* owner;
    odl_mr* mr;  ///< NULL when libodl refused (optional on loopback)
};

/// libodl tag of NCCL tag @tag on a connection of generation @gen. The
/// generation keeps a stale receive from a closed connection on the same
/// stream from matching a newer connection's messages.
inline uint32_t tag_for(uint32_t gen, int tag) { return (gen & 0x7fu) << 24 | (uint32_t(tag) & 0xffffffu); }

}  // namespace odl::plugin
