// SPDX-License-Identifier: MIT
// Host driver model: Linux-like ring and path programming plus CPU costs.
#include "odl/model/host/driver.h"

#include "odl/model/core/ring_index.h"

#include <algorithm>

#include <fmt/format.h>

#include "odl/model/router/ctl_packet.h"
#include "odl/wire/frame.h"
#include "odl/wire/nhi_regs.h"
#include "odl/wire/usb4_ctl.h"

namespace odl::model {

using sc_core::sc_time;
using sc_core::SC_PS;
using sc_core::SC_MS;

namespace {
constexpr std::uint32_t k_desc = sizeof(odl_nhi_ring_desc);
constexpr std::uint32_t k_posted = (ODL_NHI_DESC_F_POSTED | ODL_NHI_DESC_F_INTERRUPT)
                                   << ODL_NHI_DESC_FLAGS_SHIFT;
constexpr unsigned k_pdf_frame_start = 1;  // thunderbolt_net uses the same PDFs
constexpr unsigned k_pdf_frame_end = 2;
const sc_time k_ctl_timeout(100, SC_MS);    // Linux TB_TIMEOUT
constexpr unsigned k_ctl_tries = 4;         // seq 0..3
}  // namespace

host_driver::host_driver(sc_core::sc_module_name name, scheduler& sched, trace_log& log, nhi& dev,
                         local_memory& mem, const host_costs& costs, unsigned lane_ports,
                         std::uint64_t noise_seed)
    : sc_module(name), bus("bus"), m_sched(sched), m_doorbell_lane(sched.make_lane()),
      m_cpu_lane(sched.make_lane()), m_log(log), m_nhi(dev), m_mem(mem), m_costs(costs),
      m_noise(noise_seed), m_ports(lane_ports) {
    m_tx.resize(m_ports + 1);
    m_rx.resize(m_ports + 1);
    m_txq.resize(m_ports + 1);
    m_txq_frames.assign(m_ports + 1, 0);
    m_rxmsg.resize(m_ports + 1);
    m_link_up.assign(m_ports + 1, false);
    m_tx_seq.assign(m_ports + 1, 0);
    m_nhi.on_irq([this](unsigned v) { irq(v); });
    // The driver's own stores use cpu_write(), so this sees only the NHI's DMA.
    m_mem.on_write([this](std::uint64_t addr, std::size_t) { mem_written(addr); });
}

sc_time host_driver::cpu(sc_time cost) {
    const sc_time start = std::max(scheduler::now(), m_cpu_free);
    m_cpu_free = start + cost;
    return m_cpu_free;
}

void host_driver::mmio(tlm::tlm_command cmd, std::uint32_t off, std::uint32_t* v) {
    const auto access = [&](tlm::tlm_generic_payload& gp) {
        sc_time delay = sc_core::SC_ZERO_TIME;
        gp.set_command(cmd);
        gp.set_address(off);
        gp.set_data_ptr(reinterpret_cast<unsigned char*>(v));
        gp.set_data_length(4);
        gp.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        bus->b_transport(gp, delay);
    };
    if (m_gp_busy) {  // a nested access gets its own payload
        tlm::tlm_generic_payload local;
        access(local);
        return;
    }
    // One payload object is reused for every BAR0 access.
    m_gp_busy = true;
    access(m_gp);
    m_gp_busy = false;
}

std::uint32_t host_driver::mmio_read(std::uint32_t off) {
    std::uint32_t v = 0;
    mmio(tlm::TLM_READ_COMMAND, off, &v);
    return v;
}

void host_driver::mmio_write(std::uint32_t off, std::uint32_t v) {
    mmio(tlm::TLM_WRITE_COMMAND, off, &v);
}

void host_driver::doorbell_at(sc_time t, std::uint32_t off, std::uint32_t v) {
    const std::uint64_t gen = m_generation;
    m_sched.at_lane(m_doorbell_lane, t, [this, off, v, gen] {
        if (gen == m_generation) mmio_write(off, v);  // not after a reboot
    });
}

void host_driver::ring_alloc(sw_ring& r, unsigned size, std::uint32_t buf_bytes) {
    r.size = size;
    r.head = r.tail = 0;
    r.desc = m_mem.alloc(std::size_t{size} * k_desc, 64);
    r.desc_bytes = std::uint64_t{size} * k_desc;
    const std::uint64_t bufs = m_mem.alloc(std::size_t{size} * buf_bytes, 4096);
    r.buf.resize(size);
    for (unsigned i = 0; i < size; ++i) r.buf[i] = bufs + std::uint64_t{i} * buf_bytes;
}

void host_driver::start_ring(bool tx, unsigned h, sw_ring& r, std::uint32_t flags,
                             std::uint32_t pdf, std::uint32_t frame_size, unsigned vector) {
    const std::uint32_t base =
        (tx ? ODL_NHI_TX_RING_BASE : ODL_NHI_RX_RING_BASE) + h * ODL_NHI_RING_STRIDE;
    const std::uint32_t opts =
        (tx ? ODL_NHI_TX_OPTS_BASE : ODL_NHI_RX_OPTS_BASE) + h * ODL_NHI_OPTS_STRIDE;
    // Linux tb_ring_start() order: base, size, options +4, options +0.
    mmio_write(base + ODL_NHI_RING_ADDR_LO, static_cast<std::uint32_t>(r.desc));
    mmio_write(base + ODL_NHI_RING_ADDR_HI, static_cast<std::uint32_t>(r.desc >> 32));
    mmio_write(base + ODL_NHI_RING_SIZE,
                     r.size | (tx ? 0u : frame_size << ODL_NHI_RING_FRAME_SHIFT));
    mmio_write(opts + ODL_NHI_OPTS_PDF, pdf);
    mmio_write(opts + ODL_NHI_OPTS_FLAGS, flags);
    if (!m_costs.interrupts) return;
    const unsigned idx = tx ? h : m_nhi.hop_count() + h;
    const std::uint32_t ivr_off = ODL_NHI_REG_IVR_BASE + (idx / 8) * 4;
    const unsigned shift = (idx % 8) * ODL_NHI_IVR_BITS;
    std::uint32_t v = mmio_read(ivr_off);
    mmio_write(ivr_off, (v & ~(0xfu << shift)) | (vector << shift));
    const std::uint32_t en_off = ODL_NHI_REG_INT_ENABLE_BASE + (idx / 32) * 4;
    mmio_write(en_off, mmio_read(en_off) | (1u << (idx % 32)));
}

void host_driver::post_rx(unsigned h, sw_ring& r, unsigned slot) {
    (void)h;
    odl_nhi_ring_desc d{};
    d.phys = odl_cpu_le64(r.buf[slot]);
    d.len_flags = odl_cpu_le32(k_posted);
    m_mem.cpu_write(r.desc + std::uint64_t{slot} * k_desc, &d, k_desc);
}

void host_driver::restart(std::function<void()> ready) {
    ++m_generation;
    m_dirty = ~std::uint64_t{0};
    for (auto& r : m_tx) r = sw_ring{};
    for (auto& r : m_rx) r = sw_ring{};
    for (auto& q : m_txq) q.clear();
    std::fill(m_txq_frames.begin(), m_txq_frames.end(), 0);
    for (auto& m : m_rxmsg) m = rx_msg{};
    m_ctl.clear();
    m_ctl_busy = false;
    m_ready = false;
    m_log.event(name(), "restart");
    start(std::move(ready));
}

void host_driver::start(std::function<void()> ready) {
    mmio_write(ODL_NHI_REG_DMA_MISC,
                     mmio_read(ODL_NHI_REG_DMA_MISC) | ODL_NHI_DMA_MISC_DISABLE_AUTO_CLEAR);
    for (unsigned v = 0; v < ODL_NHI_MSIX_VECTORS; ++v)
        mmio_write(ODL_NHI_REG_THROTTLE_BASE + 4 * v, m_costs.throttle);
    ring_alloc(m_tx[0], ctl_ring_size, ODL_NHI_RAW_FRAME_BYTES);
    ring_alloc(m_rx[0], ctl_ring_size, ODL_NHI_RAW_FRAME_BYTES);
    const std::uint32_t raw = ODL_NHI_RING_FLAG_ENABLE | ODL_NHI_RING_FLAG_RAW;
    start_ring(true, 0, m_tx[0], raw, 0, 0, 0);
    start_ring(false, 0, m_rx[0], raw, 0xffffffffu, ODL_NHI_RAW_FRAME_BYTES, 1);
    for (unsigned s = 0; s + 1 < ctl_ring_size; ++s) post_rx(0, m_rx[0], s);
    m_rx[0].head = ctl_ring_size - 1;
    mmio_write(ODL_NHI_RX_RING_BASE + ODL_NHI_RING_INDEX, m_rx[0].head);

    // Ports one after another, then report ready.
    auto chain = std::make_shared<std::function<void(unsigned)>>();
    *chain = [this, chain, ready = std::move(ready)](unsigned port) {
        if (port > m_ports) {
            m_ready = true;
            m_log.event(name(), "ready");
            if (ready) ready();
            return;
        }
        setup_port(port, [chain, port] { (*chain)(port + 1); });
    };
    (*chain)(1);
}

void host_driver::setup_port(unsigned p, std::function<void()> next) {
    const unsigned nhi_adp = m_ports + 1;
    auto on_err = [this, p](const char* what) {
        m_log.warn(name(), fmt::format("port {} setup: {} failed", p, what));
    };
    // 1. Enable hot-plug events (clear DHP), like usb4_port_hotplug_enable().
    ctl_request(ctl::read_request(0, ODL_USB4_SPACE_PORT, p, ODL_ADP_CS_5, 1),
                ODL_USB4_PDF_READ, [=](const std::vector<std::uint32_t>& r, bool err) {
        if (err || r.size() < 4) on_err("read ADP_CS_5");
        const std::uint32_t v = r.size() >= 4 ? r[3] & ~ODL_ADP_CS_5_DHP : 0x3fff;
        ctl_request(ctl::write_request(0, ODL_USB4_SPACE_PORT, p, ODL_ADP_CS_5, {v}),
                    ODL_USB4_PDF_WRITE, [=](const std::vector<std::uint32_t>&, bool err2) {
            if (err2) on_err("write ADP_CS_5");
            // 2. DMA TX path: NHI adapter entry [ring p] -> lane p, HopID 8.
            const std::uint32_t tx0 = data_hop | (p << ODL_HOP0_OUT_PORT_SHIFT) | ODL_HOP0_ENABLE;
            const std::uint32_t tx1 = 1u | (5u << 8) | ODL_HOP1_EFC;
            ctl_request(ctl::write_request(0, ODL_USB4_SPACE_HOPS, nhi_adp, 2 * p, {tx0, tx1}),
                        ODL_USB4_PDF_WRITE, [=](const std::vector<std::uint32_t>&, bool err3) {
                if (err3) on_err("TX path");
                // 3. DMA RX path: lane p entry [HopID 8] -> NHI adapter, ring p.
                const std::uint32_t rx0 = p | (nhi_adp << ODL_HOP0_OUT_PORT_SHIFT) |
                                          (14u << ODL_HOP0_CREDITS_SHIFT) | ODL_HOP0_ENABLE;
                const std::uint32_t rx1 = 1u | (5u << 8) | ODL_HOP1_IFC;
                ctl_request(
                    ctl::write_request(0, ODL_USB4_SPACE_HOPS, p, 2 * data_hop, {rx0, rx1}),
                    ODL_USB4_PDF_WRITE, [=](const std::vector<std::uint32_t>&, bool err4) {
                    if (err4) on_err("RX path");
                    // 4. Link state (tb_wait_for_port()).
                    ctl_request(
                        ctl::read_request(0, ODL_USB4_SPACE_PORT, p, ODL_LANE_CAP + 1, 1),
                        ODL_USB4_PDF_READ, [=](const std::vector<std::uint32_t>& r5, bool err5) {
                        if (!err5 && r5.size() >= 4) {
                            const unsigned st = (r5[3] >> ODL_LANE_ADP_CS_1_STATE_SHIFT) & 0xfu;
                            m_link_up[p] = st == ODL_LANE_CL0;
                        }
                        // 5. Data rings (thunderbolt_net style: frame mode, E2E on RX).
                        ring_alloc(m_tx[p], data_ring_size, ODL_NHI_FRAME_MAX_BYTES);
                        ring_alloc(m_rx[p], data_ring_size, ODL_NHI_FRAME_MAX_BYTES);
                        start_ring(true, p, m_tx[p], ODL_NHI_RING_FLAG_ENABLE, 0, 0, 2 * p);
                        start_ring(false, p, m_rx[p],
                                   ODL_NHI_RING_FLAG_ENABLE | ODL_NHI_RING_FLAG_E2E |
                                       (p << ODL_NHI_RX_E2E_HOP_SHIFT),
                                   (1u << (16 + k_pdf_frame_start)) | (1u << k_pdf_frame_end), 0,
                                   2 * p + 1);
                        for (unsigned s = 0; s + 1 < data_ring_size; ++s) post_rx(p, m_rx[p], s);
                        m_rx[p].head = data_ring_size - 1;
                        mmio_write(ODL_NHI_RX_RING_BASE + p * ODL_NHI_RING_STRIDE +
                                             ODL_NHI_RING_INDEX,
                                         m_rx[p].head);
                        next();
                    });
                });
            });
        });
    });
}

// ---------------------------------------------------------------- control

void host_driver::ctl_request(std::vector<std::uint32_t> dw, std::uint8_t pdf,
                              std::function<void(const std::vector<std::uint32_t>&, bool)> cb) {
    m_ctl.push_back(ctl_req{std::move(dw), pdf, std::move(cb), 0, 0});
    ++m_stats.ctl_requests;
    ctl_kick();
}

void host_driver::ctl_kick() {
    if (m_ctl_busy || m_ctl.empty()) return;
    m_ctl_busy = true;
    ctl_send(m_ctl.front());
}

void host_driver::ctl_send(ctl_req& q) {
    q.id = ++m_ctl_ids;
    if (q.tries > 0) ++m_stats.ctl_retries;
    if (q.dw.size() >= 3) {
        q.dw[2] = (q.dw[2] & ~(ODL_USB4_ADDR_SEQ_MASK << ODL_USB4_ADDR_SEQ_SHIFT)) |
                  ((q.tries & ODL_USB4_ADDR_SEQ_MASK) << ODL_USB4_ADDR_SEQ_SHIFT);
    }
    ++q.tries;
    const auto bytes = ctl::encode(q.dw);
    sw_ring& r = m_tx[0];
    reap_tx(0);
    if (wrap_index(r.head + 1, r.size) == r.tail) {
        m_log.warn(name(), "control TX ring full");
    } else {
        m_mem.cpu_write(r.buf[r.head], bytes.data(), bytes.size());
        odl_nhi_ring_desc d{};
        d.phys = odl_cpu_le64(r.buf[r.head]);
        d.len_flags = odl_cpu_le32(static_cast<std::uint32_t>(bytes.size()) |
                                   (std::uint32_t{q.pdf} << ODL_NHI_DESC_EOF_SHIFT) |
                                   (std::uint32_t{q.pdf} << ODL_NHI_DESC_SOF_SHIFT) | k_posted);
        m_mem.cpu_write(r.desc + std::uint64_t{r.head} * k_desc, &d, k_desc);
        r.head = wrap_index(r.head + 1, r.size);
        doorbell_at(cpu(m_costs.post) + m_costs.mmio, ODL_NHI_TX_RING_BASE + ODL_NHI_RING_INDEX,
                    r.head << ODL_NHI_RING_PROD_SHIFT);
    }
    const std::uint64_t id = q.id;
    m_sched.after(k_ctl_timeout, [this, id] {
        if (!m_ctl_busy || m_ctl.empty() || m_ctl.front().id != id) return;
        if (m_ctl.front().tries < k_ctl_tries) {
            ctl_send(m_ctl.front());
            return;
        }
        ctl_req q2 = std::move(m_ctl.front());
        m_ctl.pop_front();
        m_ctl_busy = false;
        ++m_stats.ctl_errors;
        m_log.warn(name(), "control request timed out");
        q2.cb({}, true);
        ctl_kick();
    });
}

void host_driver::ctl_received(std::vector<std::uint8_t> bytes, unsigned pdf) {
    bool crc_ok = false;
    auto dw = ctl::decode(bytes, &crc_ok);
    if (!dw || !crc_ok) {
        m_log.warn(name(), "RX: checksum mismatch, dropping packet");
        return;
    }
    if (pdf == ODL_USB4_PDF_EVENT && dw->size() >= 3) {
        const unsigned port = (*dw)[2] & ODL_USB4_EVENT_PORT_MASK;
        const bool unplug = ((*dw)[2] & ODL_USB4_EVENT_UNPLUG) != 0;
        m_log.event(name(), fmt::format("event port={} {}", port, unplug ? "unplug" : "plug"));
        // Ack at once, like tb_handle_event(); no response is expected.
        sw_ring& r = m_tx[0];
        reap_tx(0);
        if (wrap_index(r.head + 1, r.size) != r.tail) {
            const auto ack = ctl::encode(ctl::plug_ack(ctl::route_of(*dw), port, unplug));
            m_mem.cpu_write(r.buf[r.head], ack.data(), ack.size());
            odl_nhi_ring_desc d{};
            d.phys = odl_cpu_le64(r.buf[r.head]);
            d.len_flags = odl_cpu_le32(static_cast<std::uint32_t>(ack.size()) |
                                       (ODL_USB4_PDF_ERROR << ODL_NHI_DESC_EOF_SHIFT) |
                                       (ODL_USB4_PDF_ERROR << ODL_NHI_DESC_SOF_SHIFT) | k_posted);
            m_mem.cpu_write(r.desc + std::uint64_t{r.head} * k_desc, &d, k_desc);
            r.head = wrap_index(r.head + 1, r.size);
            doorbell_at(cpu(m_costs.post) + m_costs.mmio,
                        ODL_NHI_TX_RING_BASE + ODL_NHI_RING_INDEX,
                        r.head << ODL_NHI_RING_PROD_SHIFT);
        }
        if (port >= 1 && port <= m_ports) {
            m_link_up[port] = !unplug;
            if (m_on_link) m_on_link(port, !unplug);
        }
        return;
    }
    if (pdf == ODL_USB4_PDF_XDOMAIN_REQ || pdf == ODL_USB4_PDF_XDOMAIN_RESP) {
        m_log.event(name(), fmt::format("xdomain pdf={} dwords={}", pdf, dw->size()));
        return;
    }
    if (!m_ctl_busy || m_ctl.empty()) return;
    ctl_req& q = m_ctl.front();
    const bool err = pdf == ODL_USB4_PDF_ERROR;
    if (!err && pdf != q.pdf) return;
    ctl_req done = std::move(q);
    m_ctl.pop_front();
    m_ctl_busy = false;
    if (err) ++m_stats.ctl_errors;
    done.cb(*dw, err);
    ctl_kick();
}

// ---------------------------------------------------------------- data

std::uint64_t host_driver::tx_backlog(unsigned port) const {
    const sw_ring& r = m_tx[port];
    const unsigned in_ring = r.size ? wrap_index(r.head + r.size - r.tail, r.size) : 0;
    return m_txq_frames[port] + in_ring;
}

sc_time host_driver::copy_cost(std::uint64_t bytes) {
    if (bytes != m_copy.bytes || m_costs.copy_gbps != m_copy.gbps)
        m_copy = {bytes, m_costs.copy_gbps, sc_time(8000.0 * double(bytes) / m_costs.copy_gbps, SC_PS)};
    return m_copy.cost;
}

void host_driver::send(unsigned port, std::uint64_t bytes, std::uint32_t tag) {
    ++m_stats.messages_sent;
    m_txq[port].push_back(tx_msg{bytes, 0, tag});
    // A message of 0 bytes is one frame, as every other message's last.
    m_txq_frames[port] += std::max<std::uint64_t>(1, (bytes + ODL_FRAME_MAX_PAYLOAD - 1) / ODL_FRAME_MAX_PAYLOAD);
    pump_tx(port);
}

void host_driver::send_frame(unsigned port, std::uint32_t payload, std::uint32_t tag, bool som, bool eom) {
    if (som) ++m_stats.messages_sent;
    m_txq[port].push_back(tx_msg{payload, 0, tag, true, som, eom});
    ++m_txq_frames[port];
    pump_tx(port);
}

bool host_driver::next_frame(tx_msg& m, tx_item* it) {
    if (m.single) {
        *it = tx_item{static_cast<std::uint32_t>(m.bytes + ODL_FRAME_HDR_BYTES), m.tag, m.bytes, 0, m.som, m.eom};
        return true;
    }
    const std::uint64_t n = std::min<std::uint64_t>(ODL_FRAME_MAX_PAYLOAD, m.bytes - m.next);
    const bool last = m.next + n == m.bytes;
    *it = tx_item{static_cast<std::uint32_t>(n + ODL_FRAME_HDR_BYTES), m.tag, m.bytes, m.next, m.next == 0, last};
    m.next += n;
    return last;
}

void host_driver::pump_tx(unsigned port) {
    sw_ring& r = m_tx[port];
    auto& q = m_txq[port];
    if (r.size == 0) return;
    while (!q.empty() && wrap_index(r.head + 1, r.size) != r.tail) {
        tx_item it;
        if (next_frame(q.front(), &it)) q.pop_front();
        --m_txq_frames[port];
        sc_time cost = m_costs.post_frame + (it.som ? m_costs.post : sc_core::SC_ZERO_TIME);
        if (m_costs.copy_gbps > 0) cost += copy_cost(it.len - ODL_FRAME_HDR_BYTES);
        const sc_time t = cpu(cost);
        odl_frame_hdr h{};
        h.type = ODL_FRAME_DATA;
        h.flags = (it.som ? ODL_FRAME_F_SOM : 0) | (it.eom ? ODL_FRAME_F_EOM : 0);
        h.len = odl_cpu_le16(static_cast<std::uint16_t>(it.len - ODL_FRAME_HDR_BYTES));
        h.seq = odl_cpu_le32(m_tx_seq[port]++);
        h.tag = odl_cpu_le32(it.tag);
        h.msg_len = odl_cpu_le32(static_cast<std::uint32_t>(it.msg_len));
        h.offset = odl_cpu_le32(static_cast<std::uint32_t>(it.offset));
        odl_nhi_ring_desc d{};
        d.phys = odl_cpu_le64(r.buf[r.head]);
        const std::uint32_t len = it.len == ODL_NHI_FRAME_MAX_BYTES ? 0 : it.len;
        d.len_flags = odl_cpu_le32(len | (k_pdf_frame_end << ODL_NHI_DESC_EOF_SHIFT) |
                                   (k_pdf_frame_start << ODL_NHI_DESC_SOF_SHIFT) | k_posted);
        m_mem.cpu_write(r.buf[r.head], &h, sizeof h);
        m_mem.cpu_write(r.desc + std::uint64_t{r.head} * k_desc, &d, k_desc);
        r.head = wrap_index(r.head + 1, r.size);
        ++m_stats.frames_sent;
        doorbell_at(t + m_costs.mmio, ODL_NHI_TX_RING_BASE + port * ODL_NHI_RING_STRIDE +
                                          ODL_NHI_RING_INDEX,
                    r.head << ODL_NHI_RING_PROD_SHIFT);
    }
}

void host_driver::reap_tx(unsigned h) {
    sw_ring& r = m_tx[h];
    std::uint32_t w = 0;
    bool any = false;
    while (r.size && r.tail != r.head && completed(r, r.tail, &w)) {
        r.tail = wrap_index(r.tail + 1, r.size);
        if (h != 0) cpu(m_costs.completion_frame);
        any = true;
    }
    if (any && h != 0) pump_tx(h);
}

void host_driver::reap_rx(unsigned h) {
    sw_ring& r = m_rx[h];
    std::uint32_t w = 0;
    bool any = false;
    while (r.size && completed(r, r.tail, &w)) {
        std::uint32_t len = w & ODL_NHI_DESC_LEN_MASK;
        const std::uint32_t flags = w >> ODL_NHI_DESC_FLAGS_SHIFT;
        const unsigned pdf = (w >> ODL_NHI_DESC_EOF_SHIFT) & ODL_NHI_DESC_PDF_MASK;
        const std::uint64_t buf = r.buf[r.tail];
        if (h == 0) {
            std::vector<std::uint8_t> bytes(len);
            m_mem.dma_read(buf, bytes.data(), len);
            const std::uint64_t gen = m_generation;
            m_sched.at(cpu(m_costs.completion), [this, b = std::move(bytes), pdf, gen]() mutable {
                if (gen == m_generation) ctl_received(std::move(b), pdf);
            });
        } else {
            if (len == 0) len = ODL_NHI_FRAME_MAX_BYTES;
            odl_frame_hdr fh{};
            m_mem.dma_read(buf, &fh, sizeof fh);
            sc_time cost = m_costs.completion_frame + m_noise.sample(m_costs.noise.copy);
            if (fh.flags & ODL_FRAME_F_EOM)
                cost += m_costs.completion + m_noise.sample(m_costs.noise.sched);
            if (m_costs.copy_gbps > 0) cost += copy_cost(len - ODL_FRAME_HDR_BYTES);
            const bool bad = (flags & (ODL_NHI_DESC_F_CRC_ERROR | ODL_NHI_DESC_F_BUFFER_OVERRUN)) != 0;
            ++m_stats.frames_received;
            if (bad) ++m_stats.frames_crc_error;
            const sc_time t = cpu(cost);
            if (m_on_frame) {
                // Frame by frame (send_frame()): the caller assembles messages.
                if (!bad) {
                    if (fh.flags & ODL_FRAME_F_EOM) ++m_stats.messages_received;
                    m_on_frame(h, odl_le32(fh.tag), t);
                }
            } else {
                rx_msg& m = m_rxmsg[h];
                const std::uint32_t tag = odl_le32(fh.tag);
                const std::uint64_t mlen = odl_le32(fh.msg_len);
                const std::uint64_t off = odl_le32(fh.offset);
                if ((fh.flags & ODL_FRAME_F_SOM) || !m.active) {
                    if (m.active) ++m_stats.messages_lost;
                    m = rx_msg{true, !(fh.flags & ODL_FRAME_F_SOM), tag, mlen, off};
                } else if (tag != m.tag || off != m.got) {
                    m.damaged = true;
                }
                m.got = off + odl_le16(fh.len);
                m.damaged = m.damaged || bad;
                if (fh.flags & ODL_FRAME_F_EOM) {
                    m.active = false;
                    if (!m.damaged && m.got == m.len) {
                        ++m_stats.messages_received;
                        const unsigned port = h;
                        m_sched.at_lane(m_cpu_lane, t, [this, port, tag, mlen] {
                            if (m_on_msg) m_on_msg(port, tag, mlen);
                        });
                    } else {
                        ++m_stats.messages_lost;
                    }
                }
            }
        }
        // Give a buffer back: post into the free slot, the reaped one becomes free.
        post_rx(h, r, r.head);
        r.head = wrap_index(r.head + 1, r.size);
        r.tail = wrap_index(r.tail + 1, r.size);
        any = true;
    }
    if (any) {
        doorbell_at(cpu(m_costs.post_frame) + m_costs.mmio,
                    ODL_NHI_RX_RING_BASE + h * ODL_NHI_RING_STRIDE + ODL_NHI_RING_INDEX, r.head);
    }
}

void host_driver::reap_all() {
    // Only rings the NHI wrote back to since their last poll can hold new
    // completions; reaping a clean ring would find nothing and do nothing.
    for (unsigned h = 0; h <= m_ports; ++h) {
        if (take_dirty(h, false)) reap_rx(h);
        if (take_dirty(h, true)) reap_tx(h);
    }
}

void host_driver::irq(unsigned vector) {
    ++m_stats.interrupts;
    const unsigned h = vector / 2;
    const bool rx = vector % 2;
    m_sched.after(m_costs.irq_latency + m_noise.sample(m_costs.noise.wake), [this, h, rx] {
        // ring_msix(): clear the status bit, then service the ring.
        const unsigned idx = rx ? m_nhi.hop_count() + h : h;
        mmio_write(ODL_NHI_REG_INT_CLEAR + (idx / 32) * 4, 1u << (idx % 32));
        if (h > m_ports) return;
        if (rx)
            reap_rx(h);
        else
            reap_tx(h);
    });
}

void host_driver::mem_written(std::uint64_t addr) {
    if (m_costs.interrupts) return;
    // One compare per ring: below desc the difference wraps to a huge value.
    const auto in = [addr](const sw_ring& r) { return addr - r.desc < r.desc_bytes; };
    bool ours = false;
    for (unsigned h = 0; h <= m_ports && !ours; ++h) {
        if (in(m_tx[h])) {
            m_dirty |= ring_bit(h, true);
            ours = true;
        } else if (in(m_rx[h])) {
            m_dirty |= ring_bit(h, false);
            ours = true;
        }
    }
    if (!ours || m_poll_pending) return;
    // The busy-poll loop notices the write-back at its next iteration.
    m_poll_pending = true;
    sc_time t = scheduler::now();
    const auto period = m_costs.poll_period.value();
    if (period > 0) {
        const auto now = t.value();
        t = sc_time::from_value((now + period - 1) / period * period);
    }
    m_sched.at(t, [this] {
        m_poll_pending = false;
        reap_all();
    });
}

}  // namespace odl::model
