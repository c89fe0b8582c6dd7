// SPDX-License-Identifier: MIT
// The objects NCCL holds as opaque pointers: listen, send and receive comms,
// requests and memory registrations. Each starts with a magic so a stale or
// foreign pointer is refused instead of followed further.
//
// Ownership across threads: NCCL's threads fill a request and hand it to the
// link's progress thread through its queue (request::node); from then on
// only the progress thread touches libodl and the request's completion
// fields, and it publishes the end through request::pending (release). A
// comm NCCL closed is freed by the progress thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
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

/// A unit of work for a link's progress thread (intrusive queue node).
struct op {
    enum kind_t : uint8_t { kSend, kRecv, kConnect, kClose, kCall, kDrop };
    op* next = nullptr;
    kind_t kind = kSend;
    void* obj = nullptr;  ///< the request, comm or call_op this node belongs to
};

/// A call run on the progress thread (the one thread that may use the
/// libodl device), e.g. odl_reg_mr. The caller waits for @done.
struct call_op : op {
    std::function<void()> fn;
    std::atomic<bool> done{false};
};

/// Drop what arrives for a connection nobody receives on (heap-allocated;
/// the progress thread frees it).
struct drop_op : op {
    uint32_t stream = 0;
    uint32_t gen = 0;
};

/// One isend or (grouped) irecv. Aligned so the low 4 bits of its address
/// are free to carry the buffer index in a libodl completion ctx.
struct alignas(16) request {
    op node;                    ///< queue node; kind kSend or kRecv
    // NCCL's side.
    uint32_t magic = 0;         ///< kReqMagic while NCCL owns it
    bool in_use = false;
    bool is_send = false;
    int n = 0;                  ///< buffers
    comm* owner = nullptr;
    void* data[kMaxRecvs] = {};
    size_t cap[kMaxRecvs] = {};
    uint32_t tag[kMaxRecvs] = {};
    odl_mr* mr[kMaxRecvs] = {};
    // Written by the progress thread before it lowers @pending.
    std::atomic<int> pending{0};  ///< buffers not yet completed; 0: done (acquire)
    int status = ODL_OK;          ///< first error among the buffers
    uint64_t sizes[kMaxRecvs] = {};
    uint8_t live = 0;             ///< progress thread: buffers posted to libodl, not completed

    request() = default;
    /// Only for std::vector's sizing of a fresh pool: a new request, nothing copied.
    request(request&&) noexcept : request() {}

    /// Back to a fresh request (what take_request hands out).
    void reset(comm* c) {
        node = op{};
        node.obj = this;
        magic = kReqMagic;
        in_use = true;
        is_send = false;
        n = 0;
        owner = c;
        pending.store(0, std::memory_order_relaxed);
        status = ODL_OK;
        for (auto& s : sizes) s = 0;
    }
};

struct alignas(16) comm {
    uint32_t magic;
    link* ln;
    uint32_t stream;             ///< libodl stream carrying this connection
    uint32_t gen;                ///< 7-bit generation, in every tag (see tag_for)
    std::vector<request> reqs;   ///< fixed pool: the request limit
    size_t next_req = 0;         ///< NCCL's side: where take_request looks first
    std::atomic<int> status{ODL_OK};  ///< sticky error of the connection (set by the progress thread)
    // Progress thread only.
    int posted = 0;              ///< libodl operations still outstanding
    bool closed = false;         ///< NCCL closed it; freed once @posted is 0
    bool hello_live = false;     ///< CONNECT send outstanding
    bool is_send = false;
    op hello_node;               ///< kConnect (send comms)
    op close_node;               ///< kClose
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
constexpr uint32_t kGenTagMask = 0x7fu << 24;  ///< the generation's bits of a libodl tag

}  // namespace odl::plugin
