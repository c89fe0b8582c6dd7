// SPDX-License-Identifier: MIT
// The seam between odl-linkd (sockets, protocol) and whatever model it
// serves: one NHI per host, DMA and interrupts back through the host's QEMU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace odl::model::linkd {

/// odl-linkd's host routers leave an unimplemented adapter after each USB4
/// port's lane adapter (router_config::lane_stride), so that Linux does not
/// take two ports for the two lanes of one. Port P (from 1, in cable order)
/// is then lane adapter 1 + 2 (P - 1): Linux's XDomain "0-<adapter>".
constexpr unsigned lane_stride = 2;
constexpr unsigned lane_adapter_of_port(unsigned port) { return 1 + (port - 1) * lane_stride; }

/// What the model may ask of a connected host (its QEMU device). Calls are
/// synchronous: linkd waits for the completion, serving nothing else of
/// that host meanwhile. All return false when the host is gone or refused.
class host_bus {
public:
    virtual ~host_bus() = default;
    /// Reads @len bytes (<= 4096) of guest memory at bus address @addr.
    virtual bool dma_read(std::uint64_t addr, void* buf, std::size_t len) = 0;
    /// Writes @len bytes (<= 4096) to guest memory at bus address @addr.
    virtual bool dma_write(std::uint64_t addr, const void* buf,
                           std::size_t len) = 0;
    /// Raises MSI-X vector @vector (QEMU owns masking and pending bits).
    virtual void raise_irq(unsigned vector) = 0;
};

/// PCI identity and sizes of one emulated NHI (sent as DEV_INFO).
struct device_info {
    std::uint16_t vendor_id = 0x1af4;
    std::uint16_t device_id = 0x10f0;
    std::uint32_t class_code = 0x0c0340;  ///< USB4 host interface
    std::uint8_t revision = 1;
    std::uint8_t msix_vectors = 16;
    std::uint16_t hop_count = 16;
    std::uint32_t bar0_bytes = 0x40000;
};

/// One host's NHI as linkd drives it. Offsets are BAR0-relative and already
/// range-checked (offset + size <= bar0_bytes, size 1/2/4/8).
class nhi_port {
public:
    virtual ~nhi_port() = default;
    virtual std::uint64_t mmio_read(std::uint64_t offset, unsigned size) = 0;
    virtual void mmio_write(std::uint64_t offset, unsigned size,
                            std::uint64_t value) = 0;
    /// Device reset (machine reset or FLR): back to power-on state.
    virtual void reset() = 0;
    /// PCI command register / MSI-X state changed (bus master, enable).
    virtual void devctrl(std::uint16_t command, bool msix_enabled) = 0;
};

/// The whole model as linkd sees it.
class model_backend {
public:
    virtual ~model_backend() = default;
    virtual unsigned host_count() const = 0;
    virtual device_info info(unsigned host) const = 0;
    virtual nhi_port& nhi(unsigned host) = 0;
    /// Host @host's QEMU connected (@bus valid until detach) or went away
    /// (@bus null). A host that goes away is an unplug for its peers.
    virtual void attach(unsigned host, host_bus* bus) = 0;
    /// Runs the model up to simulated time @now_ps (wall-clock paced in
    /// free-running mode).
    virtual void advance_to(std::uint64_t now_ps) = 0;
    /// Time of the next pending model event, ps; UINT64_MAX when idle.
    virtual std::uint64_t next_event_ps() const = 0;
    /// Cables in this model (numbered from 0); 0 when it has none.
    virtual unsigned cable_count() const { return 0; }
    /// Scenario event: plug (true) or pull (false) cable @cable. Returns
    /// false when this model has no such cable.
    virtual bool set_cable(unsigned /*cable*/, bool /*plugged*/) { return false; }
    /// Scenario event on cable @cable, as the control socket spells it:
    /// "retrain", "degrade GEN LANES" (gen2, gen3/tb4, gen4/tb5; 1 or 2
    /// lanes), "ber RATE" (0 to 1e-3). Returns "" when applied, else why not.
    virtual std::string cable_event(unsigned /*cable*/, const std::string& /*spec*/) {
        return "this model has no cable";
    }
    /// Cable @cable's counters as "name value" pairs separated by spaces
    /// (frames_sent, frames_delivered, frames_damaged, ...: the model's
    /// cable_stats); "" when this model keeps none (control "cable [N] stats").
    virtual std::string cable_stats(unsigned /*cable*/) const { return ""; }
    /// Host at the far end of @host's first cable whose link is up, else -1
    /// (sent to the device as LINK_STATE when it changes).
    virtual int link_peer(unsigned /*host*/) const { return -1; }
    /// What the model's NHIs hold now (rings, credits, interrupts), one
    /// line per item; "" when this model has no such state. For "where is
    /// my frame?" questions (control command "nhi").
    virtual std::string describe() const { return ""; }
};

}  // namespace odl::model::linkd
