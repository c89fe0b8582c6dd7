// SPDX-License-Identifier: MIT
// USB4 host router model (Linux: tb.c, switch.c, ctl.c, path.c as described
// in shared/research/usb4-emulation.md sections 4-8).
#include "odl/model/router/router.h"

#include <fmt/format.h>

#include <stdexcept>

#include "odl/model/router/ctl_packet.h"

namespace odl::model {

namespace {
constexpr std::uint32_t k_vendor = 0x4f44;  // neutral: no Linux quirk matches
constexpr std::uint32_t k_device = 0x0001;
constexpr unsigned k_router_cs_dwords = ODL_ROUTER_CAP_TMU + ODL_ROUTER_TMU_DWORDS;
constexpr unsigned k_lane_cs_dwords = ODL_PORT_CAP + ODL_PORT_CAP_DWORDS;
constexpr unsigned k_port_cs1 = ODL_PORT_CAP + ODL_PORT_CS_1;
constexpr unsigned k_port_cs19 = ODL_PORT_CAP + ODL_PORT_CS_19;
constexpr unsigned k_lane_cs1 = ODL_LANE_CAP + 1;
}  // namespace

/// Link endpoint of one lane adapter: forwards to the router.
struct router::lane_end : link_endpoint {
    router* r;
    unsigned adapter;
    lane_end(router* rr, unsigned a) : r(rr), adapter(a) {}
    void link_frame_arrived(frame_ptr f) override { r->lane_arrived(adapter, std::move(f)); }
    void link_frame_lost(const frame_ptr& f) override { r->lane_lost(adapter, f); }
    void link_state_changed(bool up) override { r->lane_state(adapter, up); }
    bool link_reserve(std::uint16_t hop) override { return r->far_reserve(adapter, hop); }
    void link_credits_returned() override {
        if (r->m_nhi) r->m_nhi->router_credits_returned();
    }
};

router::router(sc_core::sc_module_name name, scheduler& sched, trace_log& log,
               const router_config& cfg)
    : sc_module(name), m_sched(sched), m_log(log), m_cfg(cfg) {
    if (m_cfg.lane_ports > 7 || (m_cfg.lane_stride != 1 && m_cfg.lane_stride != 2))
        throw std::invalid_argument(fmt::format("{}: {} USB4 ports with lane stride {}", this->name(),
                                                m_cfg.lane_ports, m_cfg.lane_stride));
    init_spaces();
}

router::~router() = default;

void router::init_spaces() {
    const unsigned nhi = nhi_adapter();
    m_router_cs.assign(k_router_cs_dwords, 0);
    m_router_cs[ODL_ROUTER_CS_0] = k_vendor | (k_device << 16);
    m_router_cs[ODL_ROUTER_CS_1] = ODL_ROUTER_CAP_TMU | (nhi << 8) | (nhi << 14) | (1u << 24);
    m_router_cs[ODL_ROUTER_CS_4] = ODL_USB4_VERSION_1_0 << 24;
    m_router_cs[ODL_ROUTER_CS_7] = static_cast<std::uint32_t>(m_cfg.uid);
    m_router_cs[ODL_ROUTER_CS_8] = static_cast<std::uint32_t>(m_cfg.uid >> 32);
    // TMU capability, last in the list; UCAP set ("LowRes" works).
    m_router_cs[ODL_ROUTER_CAP_TMU] = (ODL_CAP_TMU << ODL_CAP_ID_SHIFT) | (1u << 30);

    m_adp.clear();
    m_adp.resize(nhi + 1);
    const std::uint32_t hop_fields = m_cfg.max_hopid | (m_cfg.max_hopid << 11);
    for (unsigned a = 1; a <= nhi; ++a) {
        adapter_state& s = m_adp[a];
        if (a != nhi && !is_lane(a)) continue;  // unimplemented: no spaces, ERR_ADDR
        const bool lane = a != nhi;
        s.type = lane ? ODL_ADP_TYPE_LANE : ODL_ADP_TYPE_NHI;
        s.cs.assign(lane ? k_lane_cs_dwords : ODL_ADP_HDR_DWORDS, 0);
        s.cs[ODL_ADP_CS_0] = k_vendor | (k_device << 16);
        s.cs[ODL_ADP_CS_1] = lane ? ODL_LANE_CAP : 0;
        s.cs[ODL_ADP_CS_2] = s.type;
        s.cs[ODL_ADP_CS_3] = a << 20;
        s.cs[ODL_ADP_CS_4] = 120u << 20;
        s.cs[ODL_ADP_CS_5] = hop_fields | (lane ? ODL_ADP_CS_5_DHP : 0u);
        s.hops.assign(2 * (m_cfg.max_hopid + 1), 0);
        s.routes.assign(m_cfg.max_hopid + 1, {});
        for (unsigned h = 0; h <= m_cfg.max_hopid; ++h) s.hops[2 * h + 1] = 0x7ffu << 12;
        if (lane) {
            // Gen2+Gen3(+Gen4 when cabled as such) speeds; single and dual width.
            s.cs[ODL_LANE_CAP] = ODL_PORT_CAP | (ODL_CAP_LANE << ODL_CAP_ID_SHIFT) |
                                 (0xEu << 16) | (0x3u << 20);
            s.cs[k_lane_cs1] = 0xC | (1u << 4);
            s.cs[ODL_PORT_CAP] = ODL_CAP_USB4_PORT << ODL_CAP_ID_SHIFT;
            set_hop(s, 0, 2u << ODL_HOP0_CREDITS_SHIFT);  // ctl_credits
            s.endpoint = std::make_unique<lane_end>(this, a);
        }
    }
}

void router::connect(unsigned adapter, cable& c, int end) {
    if (!is_lane(adapter))
        throw std::invalid_argument(fmt::format("{}: adapter {} is not a lane adapter", name(), adapter));
    adapter_state& s = m_adp[adapter];
    s.link = &c;
    s.end = end;
    c.attach(end, s.endpoint.get());
}

bool router::lane_up(unsigned adapter) const {
    if (!is_lane(adapter)) return false;
    const adapter_state& s = m_adp[adapter];
    return s.link && s.link->up();
}

std::uint32_t router::lane_cs1(unsigned adapter) const {
    const adapter_state& s = m_adp[adapter];
    std::uint32_t v = s.cs[k_lane_cs1] & 0xc000ffffu;
    std::uint32_t state = ODL_LANE_UNPLUGGED;
    if (s.link) {
        const link_config& c = s.link->config();
        switch (s.link->state()) {
        case link_state::up: state = ODL_LANE_CL0; break;
        case link_state::training: state = ODL_LANE_TRAINING; break;
        case link_state::unplugged: state = ODL_LANE_UNPLUGGED; break;
        }
        std::uint32_t width = c.lanes >= 2 ? 2u : 1u;
        if (c.asymmetric) width = (c.fast_end == s.end) ? 4u : 8u;
        if (state != ODL_LANE_UNPLUGGED) {
            v |= lane_speed_code(c.gen) << ODL_LANE_ADP_CS_1_SPEED_SHIFT;
            v |= width << ODL_LANE_ADP_CS_1_WIDTH_SHIFT;
        }
    }
    return v | (state << ODL_LANE_ADP_CS_1_STATE_SHIFT);
}

std::vector<std::uint32_t>* router::space_of(odl_usb4_space space, unsigned adapter) {
    return const_cast<std::vector<std::uint32_t>*>(
        static_cast<const router*>(this)->space_of(space, adapter));
}

const std::vector<std::uint32_t>* router::space_of(odl_usb4_space space,
                                                   unsigned adapter) const {
    switch (space) {
    case ODL_USB4_SPACE_SWITCH: return &m_router_cs;
    case ODL_USB4_SPACE_PORT:
        if (adapter == 0 || adapter >= m_adp.size() || m_adp[adapter].cs.empty()) return nullptr;
        return &m_adp[adapter].cs;
    case ODL_USB4_SPACE_HOPS:
        if (adapter == 0 || adapter >= m_adp.size() || m_adp[adapter].hops.empty()) return nullptr;
        return &m_adp[adapter].hops;
    default: return nullptr;
    }
}

std::uint32_t router::ro_mask(odl_usb4_space space, unsigned adapter, unsigned offset) const {
    if (space == ODL_USB4_SPACE_SWITCH) {
        switch (offset) {
        case ODL_ROUTER_CS_0:
        case ODL_ROUTER_CS_6:
        case ODL_ROUTER_CS_7:
        case ODL_ROUTER_CS_8: return 0xffffffffu;
        case ODL_ROUTER_CS_1: return ODL_ROUTER_CS_1_RO_MASK;
        case ODL_ROUTER_CS_4: return 0xff000000u;
        case ODL_ROUTER_CAP_TMU: return 0x0000ffffu;
        default: return 0;
        }
    }
    if (space == ODL_USB4_SPACE_HOPS) return (offset & 1) ? ODL_HOP1_PENDING : 0u;
    const bool lane = adapter != nhi_adapter();
    if (offset <= ODL_ADP_CS_3) return 0xffffffffu;
    if (offset == ODL_ADP_CS_4) return ~ODL_ADP_CS_4_LCK;
    if (offset == ODL_ADP_CS_5) return 0x003fffffu;
    if (lane && (offset == ODL_LANE_CAP || offset == ODL_PORT_CAP)) return 0xffffffffu;
    if (lane && offset == k_lane_cs1) return 0x3fff0000u;
    return 0;
}

bool router::cs_read(odl_usb4_space space, unsigned adapter, unsigned offset,
                     std::uint32_t* v) const {
    const auto* s = space_of(space, adapter);
    if (!s || offset >= s->size()) return false;
    if (space == ODL_USB4_SPACE_PORT && adapter != nhi_adapter() && offset == k_lane_cs1)
        *v = lane_cs1(adapter);
    else
        *v = (*s)[offset];
    return true;
}

void router::set_hop(adapter_state& s, unsigned offset, std::uint32_t v) {
    s.hops[offset] = v;
    if (offset % 2) return;
    adapter_state::hop_route& r = s.routes[offset / 2];
    const bool on = (v & ODL_HOP0_ENABLE) != 0;
    r.out = on ? static_cast<std::uint16_t>((v >> ODL_HOP0_OUT_PORT_SHIFT) & ODL_HOP0_OUT_PORT_MASK) : 0;
    r.next = static_cast<std::uint16_t>(v & ODL_HOP0_NEXT_HOP_MASK);
}

bool router::cs_write(odl_usb4_space space, unsigned adapter, unsigned offset,
                      std::uint32_t v) {
    auto* s = space_of(space, adapter);
    if (!s || offset >= s->size()) return false;
    const std::uint32_t ro = ro_mask(space, adapter, offset);
    const std::uint32_t old = (*s)[offset];
    if (space == ODL_USB4_SPACE_HOPS)
        set_hop(m_adp[adapter], offset, (old & ro) | (v & ~ro));
    else
        (*s)[offset] = (old & ro) | (v & ~ro);
    if (space == ODL_USB4_SPACE_PORT && adapter != nhi_adapter() && offset == k_port_cs19 &&
        !(old & ODL_PORT_CS_19_DPR) && (v & ODL_PORT_CS_19_DPR)) {
        // Downstream port reset: the link drops and retrains, so both CMs
        // see unplug then plug (Linux 6.12 tb_switch_reset()).
        if (m_adp[adapter].link) m_adp[adapter].link->retrain();
    }
    on_write(space, adapter, offset);
    return true;
}

void router::on_write(odl_usb4_space space, unsigned adapter, unsigned offset) {
    if (space == ODL_USB4_SPACE_SWITCH) {
        std::uint32_t& v = m_router_cs[offset];
        if (offset == ODL_ROUTER_CS_26 && (v & ODL_ROUTER_CS_26_OV)) {
            // Every router operation: "not supported", done at once.
            v = (v & ODL_ROUTER_CS_26_OPCODE_MASK) | ODL_ROUTER_CS_26_ONS;
        } else if (offset == ODL_ROUTER_CS_5) {
            m_router_cs[ODL_ROUTER_CS_6] = (m_router_cs[ODL_ROUTER_CS_6] & ~1u) | (v & 1u);
        }
        return;
    }
    if (space == ODL_USB4_SPACE_PORT && adapter != nhi_adapter() && offset == k_port_cs1) {
        std::uint32_t& v = m_adp[adapter].cs[offset];
        if (v & ODL_PORT_CS_1_PND) {
            const unsigned target = (v >> ODL_PORT_CS_1_TARGET_SHIFT) & 7u;
            v &= ~(ODL_PORT_CS_1_PND | ODL_PORT_CS_1_NR | ODL_PORT_CS_1_RC);
            if (target == 2) v |= ODL_PORT_CS_1_NR;  // no retimers
        }
    }
}

void router::answer(std::vector<std::uint32_t> dw, std::uint8_t pdf) {
    auto f = make_frame();
    f->bytes = ctl::encode(dw);
    f->len = static_cast<std::uint32_t>(f->bytes.size());
    f->control = true;
    f->eof = pdf;
    f->sof = 0;
    if (m_nhi) m_nhi->router_ctl_to_host(std::move(f));
}

void router::answer_error(std::uint64_t route, odl_usb4_err code, unsigned port) {
    ++m_stats.ctl_errors_sent;
    m_log.event(name(), fmt::format("ctl error code={} port={} route={:#x}",
                                    static_cast<unsigned>(code), port, route));
    answer(ctl::error_packet(route, code, port), ODL_USB4_PDF_ERROR);
}

void router::from_host_ctl(frame_ptr f) {
    m_sched.after(m_cfg.hop_latency, [this, f = std::move(f)]() mutable { handle_ctl(std::move(f)); });
}

void router::handle_ctl(frame_ptr f) {
    bool crc_ok = false;
    auto dw = ctl::decode(f->bytes, &crc_ok);
    if (!dw) {
        ++m_stats.ctl_malformed;
        m_log.warn(name(), fmt::format("control packet of {} bytes dropped", f->bytes.size()));
        return;
    }
    if (!crc_ok) {
        // USB4 routers discard control packets with a CRC error; the CM
        // retries after its timeout.
        ++m_stats.ctl_bad_crc;
        m_log.warn(name(), "control packet with bad CRC dropped");
        return;
    }
    const std::uint8_t pdf = f->eof;
    const std::uint64_t route = ctl::route_of(*dw);
    switch (pdf) {
    case ODL_USB4_PDF_ERROR:
    case ODL_USB4_PDF_NOTIFY_ACK:
        m_log.event(name(), fmt::format("ctl ack pdf={}", pdf));
        if (pdf == ODL_USB4_PDF_ERROR && dw->size() >= 3 && m_plug_ack &&
            ((*dw)[2] & ODL_USB4_ERR_CODE_MASK) == ODL_USB4_ERR_PLUG_ACK)
            m_plug_ack(((*dw)[2] >> ODL_USB4_ERR_PORT_SHIFT) & ODL_USB4_ERR_PORT_MASK,
                       ((*dw)[2] >> ODL_USB4_ERR_PG_SHIFT) == ODL_USB4_PG_UNPLUG);
        return;
    case ODL_USB4_PDF_XDOMAIN_REQ:
    case ODL_USB4_PDF_XDOMAIN_RESP: {
        const unsigned port = static_cast<unsigned>(route & 0xff);
        if (route == 0 || !is_lane(port)) {
            answer_error(route, ODL_USB4_ERR_ADP, port);
            return;
        }
        if (!lane_up(port)) {
            answer_error(route, ODL_USB4_ERR_CONN, port);
            return;
        }
        ++m_stats.xdomain_forwarded;
        auto out = make_frame();
        *out = *f;
        out->hop = 0;
        out->control = true;
        m_adp[port].link->send(m_adp[port].end, std::move(out));
        return;
    }
    case ODL_USB4_PDF_READ:
    case ODL_USB4_PDF_WRITE: handle_config(*dw, pdf, f->bytes.size() - 4); return;
    default:
        ++m_stats.ctl_malformed;
        m_log.warn(name(), fmt::format("control packet with PDF {} dropped", pdf));
        return;
    }
}

void router::handle_config(const std::vector<std::uint32_t>& dw, std::uint8_t pdf,
                           std::size_t bytes) {
    ++m_stats.ctl_requests;
    const std::uint64_t route = ctl::route_of(dw);
    if (route != 0) {
        const unsigned port = static_cast<unsigned>(route & 0xff);
        if (!is_lane(port))
            answer_error(route, ODL_USB4_ERR_ADP, port);  // nothing routable there
        else if (!lane_up(port))
            answer_error(route, ODL_USB4_ERR_CONN, port);
        else
            answer_error(route, ODL_USB4_ERR_NUA, port);  // the far side is another domain
        return;
    }
    if (dw.size() < 3) {
        answer_error(route, ODL_USB4_ERR_LEN, 0);
        return;
    }
    const std::uint32_t a = dw[2];
    const unsigned offset = a & ODL_USB4_ADDR_OFFSET_MASK;
    const unsigned len = (a >> ODL_USB4_ADDR_LEN_SHIFT) & ODL_USB4_ADDR_LEN_MASK;
    const unsigned port = (a >> ODL_USB4_ADDR_PORT_SHIFT) & ODL_USB4_ADDR_PORT_MASK;
    const auto space =
        static_cast<odl_usb4_space>((a >> ODL_USB4_ADDR_SPACE_SHIFT) & ODL_USB4_ADDR_SPACE_MASK);
    const unsigned seq = (a >> ODL_USB4_ADDR_SEQ_SHIFT) & ODL_USB4_ADDR_SEQ_MASK;
    const std::size_t want = pdf == ODL_USB4_PDF_READ ? 12 : 12 + 4 * std::size_t{len};
    if (len == 0 || len > ODL_USB4_CTL_MAX_RW_DWORDS || bytes != want ||
        (a & ODL_USB4_ADDR_ZERO_MASK)) {
        m_log.warn(name(), fmt::format("config request length {} dwords in {} bytes", len, bytes));
        answer_error(route, ODL_USB4_ERR_LEN, port);
        return;
    }
    const unsigned adapter = space == ODL_USB4_SPACE_SWITCH ? 0 : port;
    const auto* s = space_of(space, adapter);
    if (!s || offset + len > s->size()) {
        answer_error(route, ODL_USB4_ERR_ADDR, port);
        return;
    }
    std::vector<std::uint32_t> resp;
    ctl::put_route(resp, route, true);
    resp.push_back(ctl::addr(space, nhi_adapter(), offset, len, seq));
    if (pdf == ODL_USB4_PDF_READ) {
        for (unsigned i = 0; i < len; ++i) {
            std::uint32_t v = 0;
            cs_read(space, adapter, offset + i, &v);
            resp.push_back(v);
        }
    } else {
        for (unsigned i = 0; i < len; ++i) cs_write(space, adapter, offset + i, dw[3 + i]);
    }
    answer(std::move(resp), pdf);
}

void router::lane_state(unsigned adapter, bool up) {
    adapter_state& s = m_adp[adapter];
    if (up) s.cs[ODL_ADP_CS_4] |= ODL_ADP_CS_4_LCK;
    m_log.event(name(), fmt::format("adapter {} link {}", adapter, up ? "up" : "down"));
    if (!(s.cs[ODL_ADP_CS_5] & ODL_ADP_CS_5_DHP)) {
        ++m_stats.events_sent;
        m_sched.after(m_cfg.hop_latency, [this, adapter, up] {
            answer(ctl::event_packet(0, adapter, !up), ODL_USB4_PDF_EVENT);
        });
    }
    // Frames for a dead link are dropped (and completed) rather than stalled.
    if (m_nhi) m_nhi->router_credits_returned();
}

router::data_route router::tx_route(unsigned ring) const {
    if (ring > m_cfg.max_hopid) return {};
    const adapter_state::hop_route r = m_adp[nhi_adapter()].routes[ring];
    if (!is_lane(r.out)) return {};  // disabled entries have out 0
    return data_route{r.out, r.next};
}

router::tx_credit router::reserve_tx(unsigned ring) {
    const auto r = tx_route(ring);
    if (!r) return tx_credit::not_needed;
    adapter_state& s = m_adp[r.adapter];
    if (!s.link || !s.link->up()) return tx_credit::not_needed;
    return s.link->reserve(s.end, r.hop) ? tx_credit::reserved : tx_credit::stall;
}

bool router::from_host_frame(unsigned ring, frame_ptr f) {
    const auto r = tx_route(ring);
    if (!r) {
        ++m_stats.frames_no_path;
        return false;
    }
    adapter_state& s = m_adp[r.adapter];
    if (!s.link || s.link->state() == link_state::unplugged) {
        ++m_stats.frames_no_path;
        return false;
    }
    ++m_stats.frames_routed;
    f->hop = r.hop;
    f->control = false;
    cable* link = s.link;
    const int end = s.end;
    m_sched.after(m_cfg.hop_latency,
                  [link, end, f = std::move(f)]() mutable { link->send(end, std::move(f)); });
    return true;
}

bool router::far_reserve(unsigned adapter, std::uint16_t hop) {
    const adapter_state& s = m_adp[adapter];
    if (hop > m_cfg.max_hopid || !m_nhi) return true;
    const adapter_state::hop_route r = s.routes[hop];
    if (r.out != nhi_adapter()) return true;  // disabled or elsewhere: will be dropped
    if (m_nhi->router_reserve_rx(r.next)) return true;
    m_adp[adapter].refused = true;
    return false;
}

void router::rx_credits_available() {
    for (unsigned a = 1; a < nhi_adapter(); ++a) {
        adapter_state& s = m_adp[a];
        if (s.refused && s.link) {
            s.refused = false;
            s.link->return_credits(s.end);
        }
    }
}

void router::lane_lost(unsigned adapter, const frame_ptr& f) {
    if (f->control || !f->reserved || !m_nhi) return;
    const adapter_state& s = m_adp[adapter];
    if (f->hop > m_cfg.max_hopid) return;
    const std::uint32_t e = s.hops[2 * f->hop];
    if (e & ODL_HOP0_ENABLE) m_nhi->router_release_rx(e & ODL_HOP0_NEXT_HOP_MASK);
}

void router::lane_arrived(unsigned adapter, frame_ptr f) {
    if (f->control) {
        if (f->crc_error) {
            ++m_stats.ctl_bad_crc;
            return;
        }
        bool crc_ok = false;
        auto dw = ctl::decode(f->bytes, &crc_ok);
        if (!dw || !crc_ok ||
            (f->eof != ODL_USB4_PDF_XDOMAIN_REQ && f->eof != ODL_USB4_PDF_XDOMAIN_RESP)) {
            ++m_stats.ctl_malformed;
            return;
        }
        // Inter-domain packet: the route becomes our ingress adapter (bit 63
        // set), so the receiving CM finds its XDomain by route.
        ctl::put_route(*dw, adapter, true);
        const std::uint8_t pdf = f->eof;
        m_sched.after(m_cfg.hop_latency, [this, d = std::move(*dw), pdf]() mutable {
            answer(std::move(d), pdf);
        });
        return;
    }
    const adapter_state& s = m_adp[adapter];
    const adapter_state::hop_route r = f->hop <= m_cfg.max_hopid ? s.routes[f->hop] : adapter_state::hop_route{};
    if (r.out != nhi_adapter() || !m_nhi) {
        ++m_stats.frames_no_path;
        if (m_log.per_frame()) m_log.event(name(), fmt::format("no path hop={} on adapter {}", f->hop, adapter));
        return;
    }
    const unsigned ring = r.next;
    m_sched.after(m_cfg.hop_latency, [this, ring, f = std::move(f)]() mutable {
        m_nhi->router_frame_to_host(ring, std::move(f));
    });
}

}  // namespace odl::model
