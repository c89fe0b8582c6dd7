// SPDX-License-Identifier: MIT
// NHI model (Linux nhi.c / nhi_regs.h, shared/research/usb4-emulation.md
// sections 2-3): register file, rings, DMA, interrupts.
#include "odl/model/nhi/nhi.h"

#include "odl/model/core/ring_index.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

namespace odl::model {

using sc_core::sc_time;
using sc_core::SC_PS;
using sc_core::SC_ZERO_TIME;

namespace {
constexpr std::uint32_t k_desc_bytes = sizeof(odl_nhi_ring_desc);

/// The interrupt unit's word for a BAR0 offset within a block at @base.
std::uint8_t word(std::uint32_t off, std::uint32_t base) { return static_cast<std::uint8_t>((off - base) / 4); }

std::uint32_t desc_word(std::uint32_t len, unsigned eof, unsigned sof, std::uint32_t flags) {
    return (len & ODL_NHI_DESC_LEN_MASK) | ((eof & 0xfu) << ODL_NHI_DESC_EOF_SHIFT) |
           ((sof & 0xfu) << ODL_NHI_DESC_SOF_SHIFT) | (flags << ODL_NHI_DESC_FLAGS_SHIFT);
}
}  // namespace

nhi::nhi(sc_core::sc_module_name name, scheduler& sched, trace_log& log, router& rt,
         host_memory& mem, const nhi_config& cfg)
    : sc_module(name), bar0("bar0"), m_sched(sched), m_log(log), m_router(rt), m_mem(mem),
      m_cfg(cfg), m_iu(make_irq_unit(cfg.irq)) {
    if (m_cfg.hop_count < 2 || m_cfg.hop_count > irq_unit::max_hop_count) m_cfg.hop_count = ODL_NHI_HOP_COUNT;
    bar0.register_b_transport(this, &nhi::b_transport);
    m_router.attach_nhi(this);
    reset();
}

void nhi::reset() {
    const unsigned hc = m_cfg.hop_count;
    for (auto& r : m_tx) ++r.epoch;
    for (auto& r : m_rx) ++r.epoch;
    // Fresh rings built in place: they own frames, so they are not copied.
    m_tx = std::vector<ring>(hc);
    m_rx = std::vector<ring>(hc);
    m_iu->reset(hc);
    m_tx_stalled = 0;
    m_dma_misc = 0;
    m_model_err = 0;
}

void nhi::b_transport(tlm::tlm_generic_payload& gp, sc_time& delay) {
    (void)delay;
    if (gp.get_data_length() != 4 || gp.get_address() >= ODL_NHI_BAR0_SIZE) {
        gp.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return;
    }
    const auto off = static_cast<std::uint32_t>(gp.get_address());
    std::uint32_t v = 0;
    if (gp.is_read()) {
        v = mmio_read(off);
        std::memcpy(gp.get_data_ptr(), &v, 4);
    } else if (gp.is_write()) {
        std::memcpy(&v, gp.get_data_ptr(), 4);
        mmio_write(off, v);
    }
    gp.set_response_status(tlm::TLM_OK_RESPONSE);
}

void nhi::misuse(std::uint32_t bit_mask, const std::string& what) {
    m_model_err |= bit_mask;
    ++m_stats.misuse;
    m_log.warn(name(), what);
}

// ---------------------------------------------------------------- registers

std::uint32_t nhi::mmio_read(std::uint32_t off) {
    const unsigned hc = m_cfg.hop_count;
    if (off % 4) {
        misuse(ODL_NHI_ERR_UNALIGNED, fmt::format("unaligned read at {:#x}", off));
        return 0;
    }
    if (off < ODL_NHI_TX_RING_BASE + hc * ODL_NHI_RING_STRIDE ||
        (off >= ODL_NHI_RX_RING_BASE && off < ODL_NHI_RX_RING_BASE + hc * ODL_NHI_RING_STRIDE)) {
        const bool tx = off < ODL_NHI_RX_RING_BASE;
        const std::uint32_t rel = off - (tx ? ODL_NHI_TX_RING_BASE : ODL_NHI_RX_RING_BASE);
        const ring& r = (tx ? m_tx : m_rx)[rel / ODL_NHI_RING_STRIDE];
        switch (rel % ODL_NHI_RING_STRIDE) {
        case ODL_NHI_RING_ADDR_LO: return static_cast<std::uint32_t>(r.base);
        case ODL_NHI_RING_ADDR_HI: return static_cast<std::uint32_t>(r.base >> 32);
        case ODL_NHI_RING_INDEX:
            return tx ? (r.sw << 16) | r.hw : (r.hw << 16) | r.sw;
        default: return r.size | (tx ? 0u : r.frame_size << ODL_NHI_RING_FRAME_SHIFT);
        }
    }
    for (int tx = 1; tx >= 0; --tx) {
        const std::uint32_t base = tx ? ODL_NHI_TX_OPTS_BASE : ODL_NHI_RX_OPTS_BASE;
        if (off >= base && off < base + hc * ODL_NHI_OPTS_STRIDE) {
            const std::uint32_t rel = off - base;
            const ring& r = (tx ? m_tx : m_rx)[rel / ODL_NHI_OPTS_STRIDE];
            if (rel % ODL_NHI_OPTS_STRIDE == ODL_NHI_OPTS_FLAGS) return r.flags;
            if (rel % ODL_NHI_OPTS_STRIDE == ODL_NHI_OPTS_PDF) return r.pdf_masks;
            return 0;
        }
    }
    const auto in = [](std::uint32_t o, std::uint32_t base, std::size_t n) {
        return o >= base && o < base + 4 * n;
    };
    const auto now = scheduler::now().value();
    if (in(off, ODL_NHI_REG_NOTIFY_BASE, ODL_NHI_NOTIFY_REGS(hc)))
        // Without DISABLE_AUTO_CLEAR (single-MSI mode) the status clears on read.
        return m_iu->read(irq_reg::status + word(off, ODL_NHI_REG_NOTIFY_BASE),
                          !(m_dma_misc & ODL_NHI_DMA_MISC_DISABLE_AUTO_CLEAR), now);
    if (in(off, ODL_NHI_REG_INT_ENABLE_BASE, ODL_NHI_ENABLE_REGS(hc)))
        return m_iu->read(irq_reg::enable + word(off, ODL_NHI_REG_INT_ENABLE_BASE), false, now);
    if (in(off, ODL_NHI_REG_THROTTLE_BASE, ODL_NHI_MSIX_VECTORS))
        return m_iu->read(irq_reg::throttle + word(off, ODL_NHI_REG_THROTTLE_BASE), false, now);
    if (in(off, ODL_NHI_REG_IVR_BASE, ODL_NHI_IVR_REGS(hc)))
        return m_iu->read(irq_reg::ivr + word(off, ODL_NHI_REG_IVR_BASE), false, now);
    switch (off) {
    case ODL_NHI_REG_CAPS: return hc;  // version 0: Linux does no host reset
    case ODL_NHI_REG_DMA_MISC: return m_dma_misc;
    case ODL_NHI_REG_RESET: return 0;
    case ODL_NHI_REG_MODEL_ERR: return m_model_err;
    case ODL_NHI_REG_INT_CLEAR:
    case ODL_NHI_REG_INT_CLEAR + 4:
    case ODL_NHI_REG_INT_MASK_CLEAR: return 0;  // write-only
    default: break;
    }
    misuse(ODL_NHI_ERR_UNKNOWN_REG, fmt::format("read of unknown register {:#x}", off));
    return 0;
}

void nhi::mmio_write(std::uint32_t off, std::uint32_t v) {
    const unsigned hc = m_cfg.hop_count;
    if (off % 4) {
        misuse(ODL_NHI_ERR_UNALIGNED, fmt::format("unaligned write at {:#x}", off));
        return;
    }
    if (off < ODL_NHI_TX_RING_BASE + hc * ODL_NHI_RING_STRIDE) {
        write_ring(true, off / ODL_NHI_RING_STRIDE, off % ODL_NHI_RING_STRIDE, v);
        return;
    }
    if (off >= ODL_NHI_RX_RING_BASE && off < ODL_NHI_RX_RING_BASE + hc * ODL_NHI_RING_STRIDE) {
        const std::uint32_t rel = off - ODL_NHI_RX_RING_BASE;
        write_ring(false, rel / ODL_NHI_RING_STRIDE, rel % ODL_NHI_RING_STRIDE, v);
        return;
    }
    for (int tx = 1; tx >= 0; --tx) {
        const std::uint32_t base = tx ? ODL_NHI_TX_OPTS_BASE : ODL_NHI_RX_OPTS_BASE;
        if (off >= base && off < base + hc * ODL_NHI_OPTS_STRIDE) {
            const std::uint32_t rel = off - base;
            write_opts(tx != 0, rel / ODL_NHI_OPTS_STRIDE, rel % ODL_NHI_OPTS_STRIDE, v);
            return;
        }
    }
    const auto in = [](std::uint32_t o, std::uint32_t base, std::size_t n) {
        return o >= base && o < base + 4 * n;
    };
    const auto now = scheduler::now().value();
    if (in(off, ODL_NHI_REG_INT_CLEAR, ODL_NHI_NOTIFY_REGS(hc))) {
        m_iu->write(irq_reg::status_clear + word(off, ODL_NHI_REG_INT_CLEAR), v, now);
        return;
    }
    if (in(off, ODL_NHI_REG_NOTIFY_BASE, ODL_NHI_NOTIFY_REGS(hc))) {
        misuse(ODL_NHI_ERR_RO_WRITE, fmt::format("write to status register {:#x}", off));
        return;
    }
    if (in(off, ODL_NHI_REG_INT_MASK_CLEAR, ODL_NHI_ENABLE_REGS(hc))) {
        m_iu->write(irq_reg::enable_clear + word(off, ODL_NHI_REG_INT_MASK_CLEAR), v, now);
        return;
    }
    if (in(off, ODL_NHI_REG_INT_ENABLE_BASE, ODL_NHI_ENABLE_REGS(hc))) {
        const unsigned r = word(off, ODL_NHI_REG_INT_ENABLE_BASE);
        const std::uint32_t rising = m_iu->write(irq_reg::enable + r, v, now);
        // Re-fire when a ring is unmasked with work pending (NAPI unmask).
        for (unsigned b = 0; b < 32; ++b)
            if ((rising >> b) & 1u) evaluate(r * 32 + b);
        return;
    }
    if (in(off, ODL_NHI_REG_THROTTLE_BASE, ODL_NHI_MSIX_VECTORS)) {
        m_iu->write(irq_reg::throttle + word(off, ODL_NHI_REG_THROTTLE_BASE), v & ODL_NHI_THROTTLE_MASK, now);
        return;
    }
    if (in(off, ODL_NHI_REG_IVR_BASE, ODL_NHI_IVR_REGS(hc))) {
        m_iu->write(irq_reg::ivr + word(off, ODL_NHI_REG_IVR_BASE), v, now);
        return;
    }
    switch (off) {
    case ODL_NHI_REG_DMA_MISC: m_dma_misc = v; return;
    case ODL_NHI_REG_RESET:
        if (v & ODL_NHI_RESET_HRR) {
            m_log.event(name(), "host router reset");
            reset();  // completes at once: HRR reads back 0
        }
        return;
    case ODL_NHI_REG_MODEL_ERR: m_model_err &= ~v; return;
    case ODL_NHI_REG_CAPS:
        misuse(ODL_NHI_ERR_RO_WRITE, "write to read-only REG_CAPS");
        return;
    default: break;
    }
    misuse(ODL_NHI_ERR_UNKNOWN_REG, fmt::format("write {:#x} to unknown register {:#x}", v, off));
}

void nhi::write_ring(bool tx, unsigned h, unsigned reg, std::uint32_t v) {
    ring& r = (tx ? m_tx : m_rx)[h];
    switch (reg) {
    case ODL_NHI_RING_ADDR_LO: r.base = (r.base & ~0xffffffffull) | v; return;
    case ODL_NHI_RING_ADDR_HI: r.base = (r.base & 0xffffffffull) | (std::uint64_t{v} << 32); return;
    case ODL_NHI_RING_SIZE:
        r.size = v & ODL_NHI_RING_SIZE_MASK;
        if (!tx) r.frame_size = v >> ODL_NHI_RING_FRAME_SHIFT;
        return;
    default: break;
    }
    // Index register: only the software-owned half is taken; the driver
    // writes zeros into the hardware half, which must be ignored.
    const std::uint32_t idx = tx ? v >> ODL_NHI_RING_PROD_SHIFT : v & ODL_NHI_RING_CONS_MASK;
    if (!r.enabled()) {
        if (idx != 0)
            misuse(ODL_NHI_ERR_DOORBELL,
                   fmt::format("{} ring {} doorbell {} while stopped", tx ? "TX" : "RX", h, idx));
        r.sw = 0;
        return;
    }
    if (idx >= r.size) {
        misuse(ODL_NHI_ERR_DOORBELL, fmt::format("{} ring {} doorbell {} beyond size {}",
                                                 tx ? "TX" : "RX", h, idx, r.size));
        return;
    }
    r.sw = idx;
    if (tx) {
        tx_kick(h);
    } else {
        rx_drain(h);
        m_router.rx_credits_available();
    }
}

void nhi::write_opts(bool tx, unsigned h, unsigned reg, std::uint32_t v) {
    ring& r = (tx ? m_tx : m_rx)[h];
    if (reg == ODL_NHI_OPTS_PDF) {
        r.pdf_masks = v;
        return;
    }
    if (reg != ODL_NHI_OPTS_FLAGS) {
        misuse(ODL_NHI_ERR_UNKNOWN_REG,
               fmt::format("{} ring {} options +{:#x} does not exist", tx ? "TX" : "RX", h, reg));
        return;
    }
    start_stop(tx, h, v);
}

void nhi::start_stop(bool tx, unsigned h, std::uint32_t nf) {
    ring& r = (tx ? m_tx : m_rx)[h];
    const bool was = r.enabled();
    const bool now_on = (nf & ODL_NHI_RING_FLAG_ENABLE) != 0;
    if (now_on && !was && (r.size == 0 || r.base == 0)) {
        misuse(ODL_NHI_ERR_RING_CONFIG, fmt::format("{} ring {} enabled with size {} base {:#x}",
                                                    tx ? "TX" : "RX", h, r.size, r.base));
        return;
    }
    r.flags = nf;
    if (now_on == was) return;  // E2E bits rewritten on a running ring
    ++r.epoch;                  // abandon in-flight work, no write-back
    r.hw = r.sw = 0;
    r.issue_pending = r.stalled = false;
    if (tx) m_tx_stalled &= ~(1u << h);
    if (!tx) {
        m_stats.rx_dropped += r.pending.size();
        r.pending.clear();
        r.inflight = 0;
    }
    m_log.event(name(), fmt::format("{} ring {} {}", tx ? "TX" : "RX", h, now_on ? "start" : "stop"));
}

// ---------------------------------------------------------------- DMA

void nhi::tx_kick(unsigned h) {
    ring& r = m_tx[h];
    if (!r.enabled() || r.issue_pending || r.stalled || r.hw == r.sw) return;
    const sc_time now = scheduler::now();
    if (m_rd_free > now) {
        r.issue_pending = true;
        const std::uint64_t epoch = r.epoch;
        m_sched.at(m_rd_free, [this, h, epoch] {
            if (m_tx[h].epoch != epoch) return;
            m_tx[h].issue_pending = false;
            tx_issue(h);
        });
        return;
    }
    tx_issue(h);
}

void nhi::tx_issue(unsigned h) {
    ring& r = m_tx[h];
    if (!r.enabled() || r.hw == r.sw) return;
    bool reserved = false;
    if (h != 0) {
        const auto c = m_router.reserve_tx(h);
        if (c == router::tx_credit::stall) {
            r.stalled = true;
            m_tx_stalled |= 1u << h;
            ++m_stats.tx_stalls;
            return;
        }
        reserved = c == router::tx_credit::reserved;
    }
    const std::uint32_t idx = r.hw;
    odl_nhi_ring_desc d{};
    if (!m_mem.dma_read(r.base + std::uint64_t{idx} * k_desc_bytes, &d, k_desc_bytes)) {
        misuse(ODL_NHI_ERR_DMA, fmt::format("TX ring {} descriptor {} fetch failed", h, idx));
        r.flags &= ~ODL_NHI_RING_FLAG_ENABLE;  // the ring halts
        return;
    }
    const std::uint32_t w = odl_le32(d.len_flags);
    auto f = make_frame();
    f->len = w & ODL_NHI_DESC_LEN_MASK;
    if (f->len == 0) f->len = ODL_NHI_FRAME_MAX_BYTES;
    f->eof = (w >> ODL_NHI_DESC_EOF_SHIFT) & ODL_NHI_DESC_PDF_MASK;
    f->sof = (w >> ODL_NHI_DESC_SOF_SHIFT) & ODL_NHI_DESC_PDF_MASK;
    f->control = h == 0;
    f->reserved = reserved;
    f->id = ++m_frame_ids;
    const std::uint32_t n = f->control ? f->len : std::min(f->len, m_cfg.copy_limit);
    if (n > 0) {
        f->bytes.resize(n);
        if (!m_mem.dma_read(odl_le64(d.phys), f->bytes.data(), n)) {
            misuse(ODL_NHI_ERR_DMA, fmt::format("TX ring {} buffer read at {:#x} failed", h,
                                                odl_le64(d.phys)));
            f->bytes.assign(n, 0);
        }
    }
    const sc_time occupancy = dma_time(f->len) + (f->control ? SC_ZERO_TIME
                                                              : m_cfg.timing.frame_overhead);
    const sc_time now = scheduler::now();
    m_rd_free = now + occupancy;
    r.hw = wrap_index(r.hw + 1, r.size);
    // Descriptor fetch and payload fetch are two read round trips; the
    // engine issues the next descriptor after this one's occupancy.
    const sc_time ready = now + 2 * m_cfg.timing.pcie_rtt + occupancy;
    const std::uint64_t epoch = r.epoch;
    const std::uint32_t flags = (w >> ODL_NHI_DESC_FLAGS_SHIFT) & 0xfffu;
    m_sched.at(ready, [this, h, epoch, idx, flags, f = std::move(f)]() mutable {
        tx_done(h, epoch, idx, flags, std::move(f));
    });
    if (r.hw != r.sw) tx_kick(h);
}

void nhi::tx_done(unsigned h, std::uint64_t epoch, std::uint32_t idx, std::uint32_t desc_flags,
                  frame_ptr f) {
    ring& r = m_tx[h];
    if (r.epoch != epoch) return;
    ++m_stats.tx_frames;
    if (m_log.per_frame()) m_log.event(name(), fmt::format("tx ring={} idx={} len={} id={}", h, idx, f->len, f->id));
    if (h == 0) {
        m_router.from_host_ctl(std::move(f));
    } else if (!m_router.from_host_frame(h, std::move(f))) {
        ++m_stats.tx_dropped;  // still completed, so the ring never stalls
    }
    // Completion write-back lands after a posted write.
    const std::uint64_t base = r.base;
    m_sched.after(m_cfg.timing.pcie_write, [this, h, epoch, idx, desc_flags, base] {
        if (m_tx[h].epoch != epoch) return;
        const std::uint64_t a = base + std::uint64_t{idx} * k_desc_bytes + 8;
        std::uint32_t w = 0;
        m_mem.dma_read(a, &w, 4);
        w = odl_le32(w) | (ODL_NHI_DESC_F_COMPLETED << ODL_NHI_DESC_FLAGS_SHIFT);
        const std::uint32_t le = odl_cpu_le32(w);
        if (!m_mem.dma_write(a, &le, 4))
            misuse(ODL_NHI_ERR_DMA, fmt::format("TX ring {} write-back failed", h));
        if (desc_flags & ODL_NHI_DESC_F_INTERRUPT) raise(h);
    });
}

void nhi::router_credits_returned() {
    // Stalled rings in ascending order. Kicking ring h never changes
    // another ring's stall state, so a snapshot of the mask is enough.
    for (std::uint32_t todo = m_tx_stalled; todo != 0; todo &= todo - 1) {
        const auto h = static_cast<unsigned>(__builtin_ctz(todo));
        m_tx[h].stalled = false;
        m_tx_stalled &= ~(1u << h);
        tx_kick(h);
    }
}

bool nhi::router_reserve_rx(unsigned h) {
    if (h >= m_rx.size() || !m_rx[h].enabled()) return true;  // dropped on arrival
    ring& r = m_rx[h];
    const std::uint32_t free = wrap_index(r.sw + r.size - r.hw, r.size);
    const std::uint64_t used = r.inflight + r.pending.size();
    if (used >= std::uint64_t{free} + m_cfg.rx_hold_frames) return false;
    ++r.inflight;
    return true;
}

void nhi::router_release_rx(unsigned h) {
    if (h < m_rx.size() && m_rx[h].inflight > 0) --m_rx[h].inflight;
}

void nhi::router_ctl_to_host(frame_ptr f) {
    ring& r = m_rx[0];
    if (!r.enabled() || r.pending.size() >= 64) {
        ++m_stats.rx_dropped;
        m_log.event(name(), fmt::format("control packet pdf={} dropped: RX ring 0 {}", f->eof,
                                        r.enabled() ? "full" : "stopped"));
        if (r.enabled()) {
            m_model_err |= ODL_NHI_ERR_RX_OVERFLOW;
            raise(2 * m_cfg.hop_count);
        }
        return;
    }
    r.pending.push_back(std::move(f));
    rx_drain(0);
}

void nhi::router_frame_to_host(unsigned h, frame_ptr f) {
    if (h >= m_rx.size() || !m_rx[h].enabled()) {
        ++m_stats.rx_dropped;
        if (m_log.per_frame()) m_log.event(name(), fmt::format("rx ring={} stopped: frame dropped", h));
        return;
    }
    ring& r = m_rx[h];
    if (f->reserved && r.inflight > 0) --r.inflight;
    r.pending.push_back(std::move(f));
    rx_drain(h);
}

void nhi::rx_drain(unsigned h) {
    ring& r = m_rx[h];
    while (r.enabled() && !r.pending.empty() && r.hw != r.sw) {
        frame_ptr f = std::move(r.pending.front());
        r.pending.pop_front();
        const std::uint32_t idx = r.hw;
        r.hw = wrap_index(r.hw + 1, r.size);
        // RX descriptors are prefetched when posted, so only the payload
        // write and the descriptor write-back are on the path.
        const sc_time start = std::max(scheduler::now(), m_wr_free);
        m_wr_free = start + dma_time(f->len);
        const std::uint64_t epoch = r.epoch;
        m_sched.at(m_wr_free + m_cfg.timing.pcie_write,
                   [this, h, epoch, idx, f = std::move(f)]() mutable {
                       rx_complete(h, epoch, idx, std::move(f));
                   });
    }
}

void nhi::rx_complete(unsigned h, std::uint64_t epoch, std::uint32_t idx, frame_ptr f) {
    ring& r = m_rx[h];
    if (r.epoch != epoch) return;
    const std::uint64_t da = r.base + std::uint64_t{idx} * k_desc_bytes;
    odl_nhi_ring_desc d{};
    if (!m_mem.dma_read(da, &d, k_desc_bytes)) {
        misuse(ODL_NHI_ERR_DMA, fmt::format("RX ring {} descriptor {} fetch failed", h, idx));
        return;
    }
    const std::uint32_t cap = r.raw() ? ODL_NHI_RAW_FRAME_BYTES
                                      : (r.frame_size ? r.frame_size : ODL_NHI_FRAME_MAX_BYTES);
    std::uint32_t flags = ODL_NHI_DESC_F_COMPLETED;
    std::uint32_t len = f->len;
    if (len > cap) {
        len = cap;
        flags |= ODL_NHI_DESC_F_BUFFER_OVERRUN;
    }
    if (f->crc_error) flags |= ODL_NHI_DESC_F_CRC_ERROR;
    const std::uint32_t posted = odl_le32(d.len_flags) >> ODL_NHI_DESC_FLAGS_SHIFT;
    flags |= posted & ODL_NHI_DESC_F_INTERRUPT;
    if (!f->bytes.empty() &&
        !m_mem.dma_write(odl_le64(d.phys), f->bytes.data(), std::min<std::size_t>(len, f->bytes.size())))
        misuse(ODL_NHI_ERR_DMA, fmt::format("RX ring {} buffer write at {:#x} failed", h,
                                            odl_le64(d.phys)));
    // Control packets: SOF must be 0 and EOF carries the PDF.
    const unsigned sof = f->control ? 0u : f->sof;
    d.len_flags = odl_cpu_le32(desc_word(len == ODL_NHI_FRAME_MAX_BYTES ? 0 : len, f->eof, sof,
                                         flags));
    m_mem.dma_write(da + 8, &d.len_flags, 4);
    ++m_stats.rx_frames;
    if (m_log.per_frame()) m_log.event(name(), fmt::format("rx ring={} idx={} len={} flags={:#x} id={}", h, idx, len,
                                    flags, f->id));
    if (posted & ODL_NHI_DESC_F_INTERRUPT) raise(m_cfg.hop_count + h);
}

// ---------------------------------------------------------------- interrupts

void nhi::raise(unsigned index) { schedule(m_iu->raise(index, scheduler::now().value())); }

void nhi::evaluate(unsigned index) { schedule(m_iu->evaluate(index, scheduler::now().value())); }

void nhi::schedule(const irq_schedule& s) {
    if (!s.due) return;
    const unsigned v = s.vector;
    m_sched.at(sc_time::from_value(s.at_ps), [this, v] { fire(v); });
}

void nhi::fire(unsigned v) {
    if (!m_iu->fire(v, scheduler::now().value())) return;  // masked, or nothing new
    ++m_stats.irqs;
    if (m_log.per_frame()) m_log.event(name(), fmt::format("msix vector={}", v));
    if (m_irq) m_irq(v);
}

std::string nhi::describe() const {
    std::string out = fmt::format("frames tx {} rx {} rx_dropped {} tx_dropped {} tx_stalls {} irqs {} misuse {}\n",
                                  m_stats.tx_frames, m_stats.rx_frames, m_stats.rx_dropped, m_stats.tx_dropped,
                                  m_stats.tx_stalls, m_stats.irqs, m_stats.misuse);
    for (int tx = 1; tx >= 0; --tx) {
        const auto& rings = tx ? m_tx : m_rx;
        for (unsigned h = 0; h < rings.size(); ++h) {
            const ring& r = rings[h];
            if (!r.enabled() && r.size == 0) continue;
            out += fmt::format("{} ring {}: {} size {} hw {} sw {} flags {:#x}", tx ? "tx" : "rx", h,
                               r.enabled() ? "on" : "off", r.size, r.hw, r.sw, r.flags);
            if (tx)
                out += fmt::format(" issue_pending {} stalled {}", r.issue_pending, r.stalled);
            else
                out += fmt::format(" waiting {} credits_out {}", r.pending.size(), r.inflight);
            out += "\n";
        }
    }
    // Side-effect-free reads (no auto-clear) of the interrupt unit.
    std::string st, en;
    const unsigned hc = m_cfg.hop_count;
    for (unsigned i = 0; i < ODL_NHI_NOTIFY_REGS(hc); ++i)
        st += fmt::format(" {:#010x}", m_iu->read(irq_reg::status + i, false, 0));
    for (unsigned i = 0; i < ODL_NHI_ENABLE_REGS(hc); ++i)
        en += fmt::format(" {:#010x}", m_iu->read(irq_reg::enable + i, false, 0));
    out += fmt::format("interrupt unit {}: status{} enable{} dma_misc {:#x}\n", to_string(m_cfg.irq.impl), st, en,
                       m_dma_misc);
    for (unsigned v = 0; v < ODL_NHI_MSIX_VECTORS; ++v) {
        const std::uint32_t vs = m_iu->read(irq_reg::vstate + v, false, 0);
        if (!(vs & 5u)) continue;  // neither pending nor ever fired
        const std::uint64_t last = m_iu->read(irq_reg::last_fire + 2 * v, false, 0) |
                                   std::uint64_t{m_iu->read(irq_reg::last_fire + 2 * v + 1, false, 0)} << 32;
        out += fmt::format("vector {}: fire pending {} cause {} last fired at {:.3f} us throttle {}\n", v,
                           (vs & 1u) != 0, (vs & 2u) != 0, static_cast<double>(last) * 1e-6,
                           m_iu->read(irq_reg::throttle + v, false, 0));
    }
    return out;
}

}  // namespace odl::model
