// SPDX-License-Identifier: MIT
// Record what crosses linkd's model seam (MMIO from the guests, DMA and
// interrupts from the model) during a real two-VM run, and replay such a
// recording against a fresh model, checking that the model answers every
// read, DMA and interrupt exactly as it did. The recordings are "recorded
// Linux access sequences": thunderbolt.ko's own register traffic.
//
// Format, one event per line, fields separated by one space:
//   <sim ps> <host> R <offset hex> <size> <value hex>      MMIO read and its result
//   <sim ps> <host> W <offset hex> <size> <value hex>      MMIO write
//   <sim ps> <host> A 1|0                                  QEMU attached / gone
//   <sim ps> <host> X                                      device reset
//   <sim ps> <host> D <command hex> 0|1                    PCI command, MSI-X enable
//   <sim ps> <host> DR <addr hex> <len> <hex bytes>|-      model DMA read (- = failed)
//   <sim ps> <host> DW <addr hex> <len> <hex bytes> 1|0    model DMA write, success
//   <sim ps> <host> I <vector>                             model raised MSI-X
//   <sim ps> - C 1|0                                       cable plugged / pulled
//   <sim ps> - E <spec>                                    cable event (retrain, degrade G L, ber R)
// <sim ps> is the model time when the event happened.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "odl/model/linkd/backend.h"

namespace odl::model::linkd {

/// Decorator: forwards everything to @inner and writes it to @out.
class recording_backend final : public model_backend {
public:
    recording_backend(model_backend& inner, std::ostream& out);
    ~recording_backend() override;
    recording_backend(const recording_backend&) = delete;
    recording_backend& operator=(const recording_backend&) = delete;

    unsigned host_count() const override { return m_inner.host_count(); }
    device_info info(unsigned host) const override { return m_inner.info(host); }
    nhi_port& nhi(unsigned host) override;
    void attach(unsigned host, host_bus* bus) override;
    void advance_to(std::uint64_t now_ps) override;
    std::uint64_t next_event_ps() const override { return m_inner.next_event_ps(); }
    unsigned cable_count() const override { return m_inner.cable_count(); }
    bool set_cable(unsigned cable, bool plugged) override;
    int link_peer(unsigned host) const override { return m_inner.link_peer(host); }
    std::string describe() const override { return m_inner.describe(); }
    std::string cable_stats(unsigned cable) const override { return m_inner.cable_stats(cable); }
    std::string cable_event(unsigned cable, const std::string& spec) override;

private:
    class port;
    class bus;
    std::ostream& line(unsigned host);

    model_backend& m_inner;
    std::ostream& m_out;
    std::uint64_t m_now = 0;
    std::vector<std::unique_ptr<port>> m_ports;
    std::vector<std::unique_ptr<bus>> m_buses;
};

struct replay_report {
    std::uint64_t events = 0;
    std::uint64_t mmio_reads_checked = 0;
    std::uint64_t dma_checked = 0;
    std::uint64_t irqs_checked = 0;
    std::vector<std::string> mismatches;  ///< first few, human readable
    std::uint64_t mismatch_count = 0;
};

/// Replays a recording into @model (fresh, same configuration as recorded).
/// Returns false if the recording is malformed (reason in the report).
bool replay(model_backend& model, std::istream& in, replay_report& rep);

}  // namespace odl::model::linkd
