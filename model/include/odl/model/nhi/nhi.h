// SPDX-License-Identifier: MIT
// USB4 host interface (NHI): the BAR0 register file Linux thunderbolt.ko
// programs (include/odl/wire/nhi_regs.h), TX/RX rings with descriptor fetch
// and write-back, frame DMA through host_memory, E2E credits, in-order
// completion, and MSI-X with IVR mapping, throttling and re-fire on unmask.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <functional>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "odl/model/core/frame.h"
#include "odl/model/core/scheduler.h"
#include "odl/model/core/trace.h"
#include "odl/model/nhi/host_memory.h"
#include "odl/model/nhi/irq_unit.h"
#include "odl/model/router/router.h"
#include "odl/wire/nhi_regs.h"

namespace odl::model {

/// PCIe-side costs of the NHI's DMA engine.
struct nhi_timing {
    sc_core::sc_time pcie_rtt = sc_core::sc_time(800, sc_core::SC_NS);   ///< DMA read round trip
    sc_core::sc_time pcie_write = sc_core::sc_time(400, sc_core::SC_NS); ///< posted write lands
    double pcie_gbps = 0.0;                ///< DMA payload cap per direction; 0 = none
    sc_core::sc_time frame_overhead = sc_core::SC_ZERO_TIME;  ///< per TX frame, engine busy
};

struct nhi_config {
    unsigned hop_count = ODL_NHI_HOP_COUNT;  ///< rings 0..HC-1 (REG_CAPS 9:0)
    nhi_timing timing;
    /// Bytes moved per data frame; the rest is timing only (sweeps and the
    /// benchmark keep just the 32-byte OdinLink frame header).
    std::uint32_t copy_limit = ODL_NHI_FRAME_MAX_BYTES;
    unsigned rx_hold_frames = 1;  ///< frames buffered when no RX descriptor is free
    /// The interrupt unit: C++ twin, RTL block, or both in lock step.
    irq_unit_options irq;
};

struct nhi_stats {
    std::uint64_t tx_frames = 0;
    std::uint64_t rx_frames = 0;
    std::uint64_t rx_dropped = 0;      ///< ring disabled or control overflow
    std::uint64_t tx_dropped = 0;      ///< no path / link down (still completed)
    std::uint64_t tx_stalls = 0;       ///< waited for credits
    std::uint64_t irqs = 0;
    std::uint64_t misuse = 0;          ///< guest register misuse warnings
};

class nhi : public sc_core::sc_module, public router_client {
public:
    /// MSI-X message for a vector (0..15).
    using irq_fn = std::function<void(unsigned vector)>;

    nhi(sc_core::sc_module_name name, scheduler& sched, trace_log& log, router& rt,
        host_memory& mem, const nhi_config& cfg);
    nhi(const nhi&) = delete;
    nhi& operator=(const nhi&) = delete;

    /// BAR0 as a TLM target (32-bit accesses, loosely timed).
    tlm_utils::simple_target_socket<nhi> bar0;

    /// 32-bit BAR0 access: the entry point for odl-linkd and the host model.
    std::uint32_t mmio_read(std::uint32_t offset);
    void mmio_write(std::uint32_t offset, std::uint32_t value);
    void on_irq(irq_fn fn) { m_irq = std::move(fn); }
    /// Power-on state: every register 0 except REG_CAPS, rings stopped.
    void reset();

    const nhi_stats& stats() const { return m_stats; }
    /// Rings in use (indices, credits, frames waiting), interrupt status,
    /// enable and pending bits and the counters, one line each.
    std::string describe() const;
    unsigned hop_count() const { return m_cfg.hop_count; }
    const nhi_config& config() const { return m_cfg; }

    // router_client
    void router_ctl_to_host(frame_ptr f) override;
    void router_frame_to_host(unsigned ring, frame_ptr f) override;
    bool router_reserve_rx(unsigned ring) override;
    void router_release_rx(unsigned ring) override;
    void router_credits_returned() override;

private:
    struct ring {
        std::uint64_t base = 0;
        std::uint32_t size = 0;
        std::uint32_t frame_size = 0;  ///< RX only, 0 = 4096
        std::uint32_t sw = 0;          ///< TX producer / RX consumer (doorbell)
        std::uint32_t hw = 0;          ///< next descriptor the NHI uses
        std::uint32_t flags = 0;       ///< options +0
        std::uint32_t pdf_masks = 0;   ///< options +4
        std::uint64_t epoch = 0;       ///< bumped at stop: abandon in-flight work
        bool issue_pending = false;    ///< TX: next descriptor scheduled
        bool stalled = false;          ///< TX: waiting for credits
        std::deque<frame_ptr> pending; ///< RX: waiting for a descriptor
        unsigned inflight = 0;         ///< RX: credits handed out
        bool enabled() const { return (flags & ODL_NHI_RING_FLAG_ENABLE) != 0; }
        bool raw() const { return (flags & ODL_NHI_RING_FLAG_RAW) != 0; }
    };

    void b_transport(tlm::tlm_generic_payload& gp, sc_core::sc_time& delay);
    void misuse(std::uint32_t bit, const std::string& what);
    void write_ring(bool tx, unsigned h, unsigned reg, std::uint32_t v);
    void write_opts(bool tx, unsigned h, unsigned reg, std::uint32_t v);
    void start_stop(bool tx, unsigned h, std::uint32_t new_flags);
    void tx_kick(unsigned h);
    void tx_issue(unsigned h);
    void tx_done(unsigned h, std::uint64_t epoch, std::uint32_t idx, std::uint32_t desc_flags,
                 frame_ptr f);
    void rx_drain(unsigned h);
    void rx_complete(unsigned h, std::uint64_t epoch, std::uint32_t idx, frame_ptr f);
    /// The PCIe transfer time of @bytes. The last size's is kept: frames
    /// come in runs of one size, and SystemC's sc_time from a double (twice
    /// a frame) showed in profiles.
    sc_core::sc_time dma_time(std::uint32_t bytes) const {
        const double gbps = m_cfg.timing.pcie_gbps;
        if (gbps <= 0.0) return sc_core::SC_ZERO_TIME;
        if (bytes != m_dma_memo.bytes || gbps != m_dma_memo.gbps)
            m_dma_memo = {bytes, gbps, sc_core::sc_time(8000.0 * bytes / gbps, sc_core::SC_PS)};
        return m_dma_memo.time;
    }
    void raise(unsigned index);
    void evaluate(unsigned index);
    void schedule(const irq_schedule& s);
    void fire(unsigned vector);

    scheduler& m_sched;
    trace_log& m_log;
    router& m_router;
    host_memory& m_mem;
    nhi_config m_cfg;
    irq_fn m_irq;
    std::vector<ring> m_tx, m_rx;
    std::uint32_t m_tx_stalled = 0;  ///< bit h: m_tx[h].stalled (hop_count <= 21)
    std::unique_ptr<irq_unit> m_iu;  ///< interrupt status, enable, IVR, throttle
    std::uint32_t m_dma_misc = 0;
    std::uint32_t m_model_err = 0;
    sc_core::sc_time m_rd_free, m_wr_free;  ///< DMA read / write engines
    std::uint64_t m_frame_ids = 0;
    nhi_stats m_stats;
    struct dma_memo {
        std::uint32_t bytes = 0;
        double gbps = 0;
        sc_core::sc_time time;
    };
    mutable dma_memo m_dma_memo;  ///< dma_time()'s last size
};

}  // namespace odl::model
