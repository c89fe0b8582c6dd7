// SPDX-License-Identifier: MIT
// USB4 host router: router and adapter config spaces, path (HopID) tables,
// control-packet handling (ring 0), hot-plug events, inter-domain
// forwarding of PDF 6/7 with route rewriting, HopID routing of data frames
// with credit-based flow control, and a per-hop latency.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <systemc>

#include "odl/model/cable/cable.h"
#include "odl/model/core/frame.h"
#include "odl/model/core/scheduler.h"
#include "odl/model/core/trace.h"
#include "odl/wire/usb4_ctl.h"

namespace odl::model {

/// The NHI as its router sees it (implemented by odl::model::nhi).
class router_client {
public:
    virtual ~router_client() = default;
    /// A control packet for RX ring 0 (bytes include the CRC, eof = PDF).
    virtual void router_ctl_to_host(frame_ptr f) = 0;
    /// A data frame for RX ring @ring.
    virtual void router_frame_to_host(unsigned ring, frame_ptr f) = 0;
    /// Credits: can RX ring @ring take one more frame? Reserves it if so.
    virtual bool router_reserve_rx(unsigned ring) = 0;
    /// A reserved frame for @ring died in flight.
    virtual void router_release_rx(unsigned ring) = 0;
    /// Credits came back from a peer: stalled TX rings may retry.
    virtual void router_credits_returned() = 0;
};

struct router_config {
    unsigned lane_ports = 1;               ///< USB4 ports (one lane 0 adapter each)
    /// Adapter numbers between two ports' lane 0 adapters: 1 numbers them
    /// 1..lane_ports; 2 leaves an unimplemented adapter after each, as real
    /// routers' lane 1 adapters sit there, so Linux does not take two ports
    /// for the two lanes of one (tb_switch_default_link_ports()).
    unsigned lane_stride = 1;
    std::uint64_t uid = 1;                 ///< ROUTER_CS_7/8, unique per host
    sc_core::sc_time hop_latency = sc_core::sc_time(150, sc_core::SC_NS);
    unsigned max_hopid = 15;               ///< per adapter, in and out
    unsigned dma_credits = 14;             ///< TB_DMA_CREDITS per path
};

struct router_stats {
    std::uint64_t ctl_requests = 0;
    std::uint64_t ctl_errors_sent = 0;
    std::uint64_t ctl_bad_crc = 0;         ///< dropped, as USB4 routers do
    std::uint64_t ctl_malformed = 0;       ///< dropped: not a whole dword
    std::uint64_t xdomain_forwarded = 0;
    std::uint64_t events_sent = 0;
    std::uint64_t frames_routed = 0;
    std::uint64_t frames_no_path = 0;      ///< dropped: path entry disabled
};

/// One host router. Adapter 0 is the control adapter, 1..lane_ports are
/// lane 0 adapters of USB4 ports, lane_ports+1 is the NHI adapter.
class router : public sc_core::sc_module {
public:
    router(sc_core::sc_module_name name, scheduler& sched, trace_log& log,
           const router_config& cfg);
    ~router() override;
    router(const router&) = delete;
    router& operator=(const router&) = delete;

    void attach_nhi(router_client* nhi) { m_nhi = nhi; }
    /// Called when the connection manager acknowledges a hot-plug event
    /// (PDF 3, code PLUG_ACK: Linux's tb_cfg_ack_plug()), with the adapter
    /// and whether it was an unplug: when the host noticed.
    void on_plug_ack(std::function<void(unsigned adapter, bool unplug)> fn) { m_plug_ack = std::move(fn); }
    /// Connects lane adapter @adapter to @end of @c.
    void connect(unsigned adapter, cable& c, int end);

    /// NHI TX ring 0 sent a control packet.
    void from_host_ctl(frame_ptr f);
    /// Where a frame from NHI TX ring @ring goes; adapter 0 (the router's
    /// control adapter, never a lane) when the path is disabled. Not a
    /// std::optional: its flag byte, stored and read back as part of a word,
    /// stalled every frame's route (store forwarding).
    struct data_route {
        unsigned adapter = 0;
        std::uint16_t hop = 0;
        explicit operator bool() const { return adapter != 0; }
    };
    data_route tx_route(unsigned ring) const;
    enum class tx_credit { stall, reserved, not_needed };
    /// Reserves a credit at the far end for TX ring @ring.
    tx_credit reserve_tx(unsigned ring);
    /// NHI TX ring @ring sends @f (after reserve_tx; f->reserved says
    /// whether it holds a credit). False: dropped.
    bool from_host_frame(unsigned ring, frame_ptr f);
    /// The NHI freed RX descriptors: return credits to whoever sends to it.
    void rx_credits_available();

    /// Direct config-space access (tests, odl-linkd debug). false = no such
    /// space/adapter/offset.
    bool cs_read(odl_usb4_space space, unsigned adapter, unsigned offset, std::uint32_t* v) const;
    bool cs_write(odl_usb4_space space, unsigned adapter, unsigned offset, std::uint32_t v);

    unsigned nhi_adapter() const {
        return m_cfg.lane_ports ? (m_cfg.lane_ports - 1) * m_cfg.lane_stride + 2 : 1;
    }
    /// Adapter number of USB4 port @port (1-based): its lane 0 adapter.
    unsigned lane_adapter(unsigned port) const { return 1 + (port - 1) * m_cfg.lane_stride; }
    /// Whether @adapter is one of the lane 0 adapters.
    bool is_lane(unsigned adapter) const {
        // lane_stride is 1 or 2 (the constructor says so): a mask, not a
        // division, on every frame's route.
        return adapter > 0 && adapter < nhi_adapter() && ((adapter - 1) & (m_cfg.lane_stride - 1)) == 0;
    }
    const router_stats& stats() const { return m_stats; }
    bool lane_up(unsigned adapter) const;

private:
    struct lane_end;
    struct adapter_state {
        std::uint32_t type = 0;
        std::vector<std::uint32_t> cs;
        std::vector<std::uint32_t> hops;
        cable* link = nullptr;
        int end = 0;
        std::unique_ptr<lane_end> endpoint;
        bool refused = false;  ///< a far-end sender is stalled on our credits
        /// Dword 0 of each HopID's entry in `hops`, decoded: where a frame
        /// entering on that HopID leaves (out adapter 0 when the entry is
        /// disabled: adapter 0 is neither a lane nor the NHI's). Kept in
        /// step with `hops` by set_hop(), so a frame's route reads one word.
        struct hop_route {
            std::uint16_t out = 0;
            std::uint16_t next = 0;
        };
        std::vector<hop_route> routes;
    };
    /// Stores dword @offset of @s's hop table and its decoded route.
    static void set_hop(adapter_state& s, unsigned offset, std::uint32_t v);

    void init_spaces();
    void handle_ctl(frame_ptr f);
    void answer(std::vector<std::uint32_t> dw, std::uint8_t pdf);
    void answer_error(std::uint64_t route, odl_usb4_err code, unsigned port);
    void handle_config(const std::vector<std::uint32_t>& dw, std::uint8_t pdf,
                       std::size_t bytes);
    void on_write(odl_usb4_space space, unsigned adapter, unsigned offset);
    void lane_state(unsigned adapter, bool up);
    void lane_arrived(unsigned adapter, frame_ptr f);
    void lane_lost(unsigned adapter, const frame_ptr& f);
    /// Far-end side of a credit reservation arriving on lane @adapter.
    bool far_reserve(unsigned adapter, std::uint16_t hop);
    void far_release(unsigned adapter, std::uint16_t hop);
    router* peer(unsigned adapter, unsigned* peer_adapter) const;
    std::uint32_t lane_cs1(unsigned adapter) const;
    std::vector<std::uint32_t>* space_of(odl_usb4_space space, unsigned adapter);
    const std::vector<std::uint32_t>* space_of(odl_usb4_space space, unsigned adapter) const;
    std::uint32_t ro_mask(odl_usb4_space space, unsigned adapter, unsigned offset) const;

    scheduler& m_sched;
    trace_log& m_log;
    router_config m_cfg;
    router_client* m_nhi = nullptr;
    std::function<void(unsigned, bool)> m_plug_ack;
    std::vector<std::uint32_t> m_router_cs;
    std::vector<adapter_state> m_adp;
    router_stats m_stats;
};

}  // namespace odl::model
