// SPDX-License-Identifier: MIT
// Host driver model for standalone runs: programs the NHI through its BAR0
// registers and the router through control packets the way Linux does, and
// moves OdinLink frames with explicit CPU costs (doorbell, completions,
// interrupt latency and throttle, polling period, copies).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "odl/model/core/scheduler.h"
#include "odl/model/core/trace.h"
#include "odl/model/host/platform.h"
#include "odl/model/nhi/host_memory.h"
#include "odl/model/nhi/nhi.h"

namespace odl::model {

struct driver_stats {
    std::uint64_t frames_sent = 0;
    std::uint64_t frames_received = 0;
    std::uint64_t frames_crc_error = 0;
    std::uint64_t messages_sent = 0;
    std::uint64_t messages_received = 0;
    std::uint64_t messages_lost = 0;   ///< incomplete or damaged at the receiver
    std::uint64_t ctl_requests = 0;
    std::uint64_t ctl_errors = 0;
    std::uint64_t ctl_retries = 0;
    std::uint64_t interrupts = 0;
};

class host_driver : public sc_core::sc_module {
public:
    /// A whole message arrived on lane port @port.
    using msg_fn = std::function<void(unsigned port, std::uint32_t tag, std::uint64_t bytes)>;
    /// A data frame was reaped on lane port @port; its completion handling
    /// ends at @due (see on_frame()).
    using frame_fn = std::function<void(unsigned port, std::uint32_t tag, sc_core::sc_time due)>;
    /// The CM noticed a hot-plug event for lane port @port.
    using link_fn = std::function<void(unsigned port, bool up)>;

    host_driver(sc_core::sc_module_name name, scheduler& sched, trace_log& log, nhi& dev,
                local_memory& mem, const host_costs& costs, unsigned lane_ports,
                std::uint64_t noise_seed = 1);
    host_driver(const host_driver&) = delete;
    host_driver& operator=(const host_driver&) = delete;

    /// MMIO to the NHI's BAR0 (bind to nhi::bar0).
    tlm_utils::simple_initiator_socket<host_driver> bus;

    /// Rings, hot-plug, paths (HopID 8 on each lane to ring = port), data
    /// rings; @ready runs once all of it is programmed.
    void start(std::function<void()> ready);
    /// Host reboot: forget every ring and queue (the NHI was reset), then start again.
    void restart(std::function<void()> ready);
    /// Queues a message of @bytes on lane port @port (ring = port).
    void send(unsigned port, std::uint64_t bytes, std::uint32_t tag);
    void on_message(msg_fn fn) { m_on_msg = std::move(fn); }
    /// One frame of a message that reaches the driver a frame at a time (the
    /// sim backend: a program's frames enter the model as it sends them).
    /// The message's own costs are charged at @som (post) and @eom
    /// (completion, scheduling noise), once per message as send() does.
    void send_frame(unsigned port, std::uint32_t payload, std::uint32_t tag, bool som, bool eom);
    /// Set, every undamaged data frame is reported as it is reaped, with the
    /// time its completion handling ends, instead of whole messages through
    /// on_message() (frames of one send_frame() message carry tags of their
    /// own). No action per frame: the caller holds the frame until @due.
    void on_frame(frame_fn fn) { m_on_frame = std::move(fn); }
    void on_link(link_fn fn) { m_on_link = std::move(fn); }
    bool link_up(unsigned port) const { return m_link_up.at(port); }
    bool ready() const { return m_ready; }
    /// Frames queued or in the TX ring on @port.
    std::uint64_t tx_backlog(unsigned port) const;

    /// A control request: @cb(response dwords, error?) once answered.
    void ctl_request(std::vector<std::uint32_t> dw, std::uint8_t pdf,
                     std::function<void(const std::vector<std::uint32_t>&, bool)> cb);

    const driver_stats& stats() const { return m_stats; }
    const host_costs& costs() const { return m_costs; }

    static constexpr unsigned data_ring_size = 256;
    static constexpr unsigned ctl_ring_size = 10;
    static constexpr unsigned data_hop = 8;  ///< HopID both hosts send on

private:
    /// One frame to post.
    struct tx_item {
        std::uint32_t len;  ///< frame bytes incl. the 32-byte header
        std::uint32_t tag;
        std::uint64_t msg_len, offset;
        bool som, eom;
    };
    /// A queued message, cut into frames as they are posted: a stream of
    /// many large messages queued at once held a tx_item per frame (a 3 GiB
    /// x 1000 stream took 18 GB before the first frame moved).
    struct tx_msg {
        std::uint64_t bytes;       ///< message length (send()), or the frame's payload (send_frame())
        std::uint64_t next = 0;    ///< offset of the next frame to post
        std::uint32_t tag;
        bool single = false;       ///< one frame of send_frame(): som/eom as given
        bool som = true, eom = true;
    };
    /// The next frame of @m, advancing it; true when it was the message's last.
    static bool next_frame(tx_msg& m, tx_item* it);
    struct sw_ring {
        std::uint64_t desc = 0;                ///< descriptor array address
        std::uint64_t desc_bytes = 0;          ///< its length (0: not allocated)
        std::vector<std::uint64_t> buf;        ///< one buffer per slot
        unsigned size = 0, head = 0, tail = 0; ///< head: next to post; tail: oldest
    };
    struct rx_msg {
        bool active = false, damaged = false;
        std::uint32_t tag = 0;
        std::uint64_t len = 0, got = 0;
    };
    struct ctl_req {
        std::vector<std::uint32_t> dw;
        std::uint8_t pdf;
        std::function<void(const std::vector<std::uint32_t>&, bool)> cb;
        unsigned tries = 0;
        std::uint64_t id = 0;
    };

    void ring_alloc(sw_ring& r, unsigned size, std::uint32_t buf_bytes);
    void start_ring(bool tx, unsigned h, sw_ring& r, std::uint32_t flags, std::uint32_t pdf,
                    std::uint32_t frame_size, unsigned vector);
    void post_rx(unsigned h, sw_ring& r, unsigned slot);
    sc_core::sc_time cpu(sc_core::sc_time cost);
    std::uint32_t mmio_read(std::uint32_t off);
    void mmio(tlm::tlm_command cmd, std::uint32_t off, std::uint32_t* v);
    void mmio_write(std::uint32_t off, std::uint32_t v);
    void doorbell_at(sc_core::sc_time t, std::uint32_t off, std::uint32_t v);
    void pump_tx(unsigned port);
    void ctl_kick();
    void ctl_send(ctl_req& q);
    void ctl_received(std::vector<std::uint8_t> bytes, unsigned pdf);
    void setup_port(unsigned port, std::function<void()> next);
    void reap_all();
    void reap_tx(unsigned h);
    void reap_rx(unsigned h);
    void irq(unsigned vector);
    void mem_written(std::uint64_t addr);
    /// Reads descriptor @slot's length/flags word into @w; true if COMPLETED.
    bool completed(const sw_ring& r, unsigned slot, std::uint32_t* w) {
        std::uint32_t v = 0;
        m_mem.dma_read(r.desc + std::uint64_t{slot} * sizeof(odl_nhi_ring_desc) + 8, &v, 4);
        *w = odl_le32(v);
        return ((*w >> ODL_NHI_DESC_FLAGS_SHIFT) & ODL_NHI_DESC_F_COMPLETED) != 0;
    }

    scheduler& m_sched;
    /// Doorbells (CPU time + the MMIO write) and messages handed to the
    /// program (CPU time): each in time order, so each a scheduler lane.
    scheduler::lane_id m_doorbell_lane;
    scheduler::lane_id m_cpu_lane;
    trace_log& m_log;
    nhi& m_nhi;
    local_memory& m_mem;
    host_costs m_costs;
    /// The copy cost of the last payload size (frames come in runs of one
    /// size, and SystemC's sc_time from a double showed in profiles).
    struct copy_memo {
        std::uint64_t bytes = ~std::uint64_t{0};
        double gbps = 0;
        sc_core::sc_time cost;
    } m_copy;
    sc_core::sc_time copy_cost(std::uint64_t bytes);
    noise_source m_noise;
    unsigned m_ports;
    std::vector<sw_ring> m_tx, m_rx;          ///< index = ring
    std::vector<std::deque<tx_msg>> m_txq;    ///< index = port
    std::vector<std::uint64_t> m_txq_frames;  ///< frames m_txq[port] will make
    std::vector<rx_msg> m_rxmsg;              ///< index = port
    std::vector<bool> m_link_up;              ///< index = port
    std::vector<std::uint32_t> m_tx_seq;
    std::deque<ctl_req> m_ctl;
    bool m_ctl_busy = false;
    std::uint64_t m_ctl_ids = 0;
    sc_core::sc_time m_cpu_free;
    bool m_poll_pending = false;
    /// Rings the NHI wrote a descriptor of since they were last polled
    /// (one bit per ring and direction); all set when unknown (start,
    /// restart), so a poll never misses one.
    /// Rings 32 and up are not tracked: always polled.
    std::uint64_t m_dirty = ~std::uint64_t{0};
    static std::uint64_t ring_bit(unsigned h, bool tx) {
        return h < 32 ? std::uint64_t{1} << (2 * h + (tx ? 1 : 0)) : 0;
    }
    /// May ring @h hold new completions? Marks it clean for the next poll.
    bool take_dirty(unsigned h, bool tx) {
        if (h >= 32) return true;
        const std::uint64_t b = ring_bit(h, tx);
        if (!(m_dirty & b)) return false;
        m_dirty &= ~b;
        return true;
    }
    tlm::tlm_generic_payload m_gp;  ///< reused for BAR0 accesses
    bool m_gp_busy = false;
    bool m_ready = false;
    std::uint64_t m_generation = 0;  ///< bumped at restart: stale callbacks are ignored
    msg_fn m_on_msg;
    link_fn m_on_link;
    driver_stats m_stats;
    frame_fn m_on_frame;
};

}  // namespace odl::model
