// SPDX-License-Identifier: MIT
// TEST DOUBLE, not the model: a register-file-only NHI per host so the
// odl-linkd plumbing (protocol, several hosts, unplug on disconnect) can be
// built and tested before, and independently of, the SystemC NHI. It keeps
// BAR0 registers with the access semantics Linux relies on at probe time
// (REG_CAPS, write-1-to-clear status/enable) and processes no rings.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "odl/model/linkd/backend.h"

namespace odl::model::linkd {

class stub_nhi final : public nhi_port {
public:
    std::uint64_t mmio_read(std::uint64_t offset, unsigned size) override;
    void mmio_write(std::uint64_t offset, unsigned size, std::uint64_t value) override;
    void reset() override { m_regs.clear(); }
    void devctrl(std::uint16_t command, bool msix_enabled) override {
        m_command = command;
        m_msix = msix_enabled;
    }
    std::uint16_t command() const { return m_command; }

private:
    std::uint32_t read32(std::uint32_t off);
    void write32(std::uint32_t off, std::uint32_t val);
    std::map<std::uint32_t, std::uint32_t> m_regs;
    std::uint16_t m_command = 0;
    bool m_msix = false;
};

class stub_model final : public model_backend {
public:
    explicit stub_model(unsigned hosts) : m_nhi(hosts), m_bus(hosts, nullptr) {}
    unsigned host_count() const override { return static_cast<unsigned>(m_nhi.size()); }
    device_info info(unsigned) const override { return {}; }
    nhi_port& nhi(unsigned host) override { return m_nhi.at(host); }
    void attach(unsigned host, host_bus* bus) override {
        m_bus.at(host) = bus;
        if (!bus) m_nhi.at(host).reset();
    }
    void advance_to(std::uint64_t now_ps) override { m_now = now_ps; }
    std::uint64_t next_event_ps() const override { return UINT64_MAX; }
    host_bus* bus(unsigned host) const { return m_bus.at(host); }

private:
    std::vector<stub_nhi> m_nhi;
    std::vector<host_bus*> m_bus;
    std::uint64_t m_now = 0;
};

}  // namespace odl::model::linkd
