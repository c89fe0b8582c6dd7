// SPDX-License-Identifier: MIT
// Hostile guest against the real model behind linkd's seam: garbage control
// packets on TX ring 0 (bad CRC, route, length, PDF), random BAR0 writes and
// reads of every size, DMA to unbacked memory (random ring bases). Nothing may crash, and after a device reset
// the NHI and its router answer a well-formed request again.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <systemc>

#include "mem_bus.h"
#include "odl/model/linkd/model_backend_sc.h"
#include "odl/model/nhi/host_memory.h"
#include "odl/wire/nhi_regs.h"

namespace odl::model::linkd {
namespace {

/// Guest memory of one fake host; DMA outside allocations fails.
using testing::mem_bus;

constexpr unsigned ring_size = 16;
constexpr std::uint32_t desc_posted_irq = (ODL_NHI_DESC_F_POSTED | ODL_NHI_DESC_F_INTERRUPT)
                                          << ODL_NHI_DESC_FLAGS_SHIFT;

class Hostile {
public:
    Hostile() : model(config()) {
        model.attach(0, &a);
        model.attach(1, &b);
        step(1'000'000'000);  // 1 ms: the cable trains
    }
    static sc_backend_config config() {
        sc_backend_config c;
        c.link.gen = generation::gen3;
        c.link.lanes = 2;
        return c;
    }
    void step(std::uint64_t ps) {
        now += ps;
        model.advance_to(now);
    }
    void w(std::uint32_t off, std::uint32_t v) { model.nhi(0).mmio_write(off, 4, v); }
    std::uint32_t r(std::uint32_t off) {
        return static_cast<std::uint32_t>(model.nhi(0).mmio_read(off, 4));
    }
    /// Ring 0 both ways, raw mode, as tb_ctl_start() programs it.
    void start_ring0() {
        tx = a.mem.alloc(ring_size * 16);
        rx = a.mem.alloc(ring_size * 16);
        w(ODL_NHI_REG_DMA_MISC, ODL_NHI_DMA_MISC_DISABLE_AUTO_CLEAR);
        w(ODL_NHI_TX_RING_BASE + 0, static_cast<std::uint32_t>(tx));
        w(ODL_NHI_TX_RING_BASE + 4, static_cast<std::uint32_t>(tx >> 32));
        w(ODL_NHI_TX_RING_BASE + 12, ring_size);
        w(ODL_NHI_TX_OPTS_BASE + 4, 0);
        w(ODL_NHI_TX_OPTS_BASE, ODL_NHI_RING_FLAG_ENABLE | ODL_NHI_RING_FLAG_RAW);
        w(ODL_NHI_RX_RING_BASE + 0, static_cast<std::uint32_t>(rx));
        w(ODL_NHI_RX_RING_BASE + 4, static_cast<std::uint32_t>(rx >> 32));
        w(ODL_NHI_RX_RING_BASE + 12, ring_size | (ODL_NHI_RAW_FRAME_BYTES << 16));
        w(ODL_NHI_RX_OPTS_BASE + 4, 0xffffffffu);
        w(ODL_NHI_RX_OPTS_BASE, ODL_NHI_RING_FLAG_ENABLE | ODL_NHI_RING_FLAG_RAW);
        w(ODL_NHI_REG_INT_ENABLE_BASE, 1u | (1u << ODL_NHI_HOP_COUNT));
        for (unsigned i = 0; i < ring_size; i++) {
            odl_nhi_ring_desc d{};
            d.phys = odl_cpu_le64(a.mem.alloc(ODL_NHI_RAW_FRAME_BYTES));
            d.len_flags = odl_cpu_le32(ODL_NHI_DESC_F_INTERRUPT << ODL_NHI_DESC_FLAGS_SHIFT);
            a.mem.dma_write(rx + i * 16, &d, 16);
        }
        w(ODL_NHI_RX_RING_BASE + 8, ring_size - 1);
        tx_head = 0;
    }
    /// Posts @len bytes at @pkt on TX ring 0 with the given PDFs.
    void post(const std::uint8_t* pkt, std::uint32_t len, unsigned sof, unsigned eof) {
        const std::uint64_t buf = a.mem.alloc(4096);
        a.mem.dma_write(buf, pkt, std::min<std::uint32_t>(len, 4096));
        odl_nhi_ring_desc d{};
        d.phys = odl_cpu_le64(buf);
        d.len_flags = odl_cpu_le32((len & ODL_NHI_DESC_LEN_MASK) |
                                   ((eof & 15u) << ODL_NHI_DESC_EOF_SHIFT) |
                                   ((sof & 15u) << ODL_NHI_DESC_SOF_SHIFT) | desc_posted_irq);
        a.mem.dma_write(tx + tx_head * 16, &d, 16);
        tx_head = (tx_head + 1) % ring_size;
        w(ODL_NHI_TX_RING_BASE + 8, tx_head << ODL_NHI_RING_PROD_SHIFT);
    }
    unsigned rx_completed() {
        unsigned n = 0;
        for (unsigned i = 0; i < ring_size; i++) {
            odl_nhi_ring_desc d{};
            a.mem.dma_read(rx + i * 16, &d, 16);
            if ((odl_le32(d.len_flags) >> ODL_NHI_DESC_FLAGS_SHIFT) & ODL_NHI_DESC_F_COMPLETED)
                n++;
        }
        return n;
    }

    mem_bus a, b;
    sc_backend model;
    std::uint64_t now = 0;
    std::uint64_t tx = 0, rx = 0;
    unsigned tx_head = 0;
};

TEST(LinkdHostile, GarbageLeavesModelWorking) {
    Hostile h;
    std::mt19937 rng(20261122);
    h.start_ring0();
    std::uint8_t pkt[4096];
    for (int i = 0; i < 3000; i++) {
        const std::uint32_t len = rng() % 320;  // raw buffers are 256 bytes
        for (std::uint32_t k = 0; k < len; k++) pkt[k] = static_cast<std::uint8_t>(rng());
        if (i % 3 == 0 && len >= 12) {
            // A plausible read request header (route 0) with a wrong CRC.
            std::memset(pkt, 0, 8);
            pkt[8] = 0x04;
            pkt[10] = 0x20;
        }
        h.post(pkt, len, rng() % 16, rng() % 16);
        h.step(2'000'000);  // 2 us
        if (i % 40 == 0) {
            // Random register traffic anywhere in BAR0, any size.
            for (int k = 0; k < 20; k++) {
                const unsigned sizes[] = {1, 2, 4, 8};
                const unsigned sz = sizes[rng() % 4];
                const std::uint64_t off = (rng() % (ODL_NHI_BAR0_SIZE / sz)) * sz;
                if (rng() % 2)
                    h.model.nhi(0).mmio_write(off, sz, (std::uint64_t{rng()} << 32) | rng());
                else
                    (void)h.model.nhi(0).mmio_read(off, sz);
            }
            h.step(10'000'000);
            h.start_ring0();  // what a recovering driver would do
        }
    }
    h.step(1'000'000'000);

    // Power-on state again, and a well-formed request gets its answer.
    h.model.nhi(0).reset();
    EXPECT_EQ(h.r(ODL_NHI_REG_CAPS) & ODL_NHI_CAPS_HC_MASK, ODL_NHI_HOP_COUNT);
    h.start_ring0();
    const std::uint8_t read_req[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0x04, 0, 0x20, 0,
                                       0x2f, 0xc9, 0x67, 0xac};
    h.post(read_req, sizeof(read_req), 1, 1);
    h.step(1'000'000'000);
    EXPECT_GE(h.rx_completed(), 1u) << "no answer to a valid read request after the garbage";
}

}  // namespace
}  // namespace odl::model::linkd

// libsystemc may own main() and call sc_main(); run the tests either way.
extern "C" int sc_main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    return RUN_ALL_TESTS();
}
