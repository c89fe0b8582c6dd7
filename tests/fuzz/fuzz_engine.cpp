// SPDX-License-Identifier: MIT
// libodl's engine (userlib/src/engine.cpp) against a hostile peer: the
// fuzzer is the other end of an in-memory link. After a HELLO it sends
// frames (as given, or with the sequence number the engine expects next,
// so that the input gets past the sequence check into reassembly, credits
// and rendezvous handling) while the engine has receives and sends posted;
// with retransmission negotiated too (ACK, NAK, PROBE, gaps and resends).
// Every receive buffer is exactly its capacity, so a write past it is an
// AddressSanitizer report; a completion must name a posted operation.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "engine.h"
#include "mem_link.h"
#include "peer_frames.h"
#include "odl/odl.h"
#include "odl/wire/frame_codec.h"

namespace {

void require(bool ok) {
    if (!ok) std::abort();
}

struct reader {
    const std::uint8_t* p;
    std::size_t n;
    std::uint8_t u8() { return n ? (--n, *p++) : 0; }
    std::uint16_t u16() { return std::uint16_t(u8() | (u8() << 8)); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    reader in{data, size};
    const std::uint8_t setup = in.u8();
    const std::uint32_t streams = 1 + (setup & 3);
    std::uint32_t features = 0;
    if (setup & 4) features |= ODL_FEAT_CSUM;
    if (setup & 8) features |= ODL_FEAT_LINK_CREDIT;
    // A link that may lose frames: retransmission (ACK, NAK, PROBE, resends).
    if (setup & 32) features |= ODL_FEAT_RETX;

    // Buffers outlive the engine: it may hold any of them until destroyed.
    std::deque<std::vector<unsigned char>> buffers;
    std::map<std::uint64_t, std::uint64_t> posted;  // ctx -> capacity (receives) or length (sends)
    odl::test::mem_link_pair links;
    auto state = links.state;
    state->lossy[0] = (setup & 32) != 0;
    odl::open_config cfg;
    cfg.backend = "fuzz";
    cfg.num_streams = 4;
    cfg.window_frames = 16;
    cfg.link_window_frames = (setup & 16) ? 32 : 0;
    cfg.max_msg_bytes = 1u << 20;
    cfg.max_posted = 64;
    cfg.node_name = "fuzz";
    {
        odl::engine e(std::move(links.a), cfg);
        state->q[1].frames.push_back(
            odl::test::hello_frame(odl::test::peer_hello(features, ODL_PROTO_VERSION_MINOR, 0, 1u << 20, std::uint16_t(streams), 16)));
        std::uint32_t next_seq[ODL_MAX_STREAMS] = {};
        std::uint64_t ctx = 1;
        auto pump = [&] {
            for (int i = 0; i < 8; ++i) {
                odl_completion c[16];
                const std::size_t k = e.poll(c, 16);
                for (std::size_t j = 0; j < k; ++j) {
                    auto it = posted.find(c[j].ctx);
                    require(it != posted.end());  // only what was posted completes, once
                    posted.erase(it);
                }
                state->q[0].frames.clear();  // what the engine sent: consumed
                if (k == 0) break;
            }
        };
        pump();
        for (int records = 0; in.n > 0 && records < 256; ++records) {
            const std::uint8_t op = in.u8();
            switch (op & 3) {
            case 0:
            case 1: {  // a frame, as given (0) or with the expected sequence number (1)
                const std::size_t len = std::min<std::size_t>(in.u16() % (ODL_FRAME_MAX_BYTES + 64), in.n);
                std::vector<unsigned char> f(in.p, in.p + len);
                in.p += len;
                in.n -= len;
                if ((op & 3) == 1 && f.size() >= ODL_FRAME_HDR_BYTES) {
                    auto* h = reinterpret_cast<odl_frame_hdr*>(f.data());
                    if (h->type == ODL_FRAME_DATA || h->type == ODL_FRAME_RNDV)
                        h->seq = odl_cpu_le32(next_seq[odl_le16(h->stream) % ODL_MAX_STREAMS]++);
                }
                state->q[1].frames.push_back(std::move(f));
                break;
            }
            case 2: {  // a receive, its buffer exactly its capacity
                const std::uint32_t stream = in.u8() % 4, tag = in.u8();
                const std::uint64_t cap = in.u16() % 20000;
                buffers.emplace_back(cap);
                if (e.post_recv(stream, tag, buffers.back().data(), cap, ctx) == ODL_OK) posted[ctx] = cap;
                ++ctx;
                break;
            }
            case 3: {  // a send
                const std::uint32_t stream = in.u8() % 4, tag = in.u8();
                const std::uint64_t len = in.u16() % 20000;
                buffers.emplace_back(len, 0x5a);
                if (e.post_send(stream, tag, buffers.back().data(), len, ctx) == ODL_OK) posted[ctx] = len;
                ++ctx;
                break;
            }
            }
            pump();
        }
        odl_stats st{};
        st.struct_size = sizeof(st);
        e.stats(st);
        odl_dev_info info{};
        info.struct_size = sizeof(info);
        e.query(info);
    }
    return 0;
}
