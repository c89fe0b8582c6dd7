// SPDX-License-Identifier: MIT
// The interrupt unit's behavioural twin (C++), the reference the RTL block
// model/rtl/odl_nhi_irq.sv is checked against.
#pragma once

#include <cstdint>

#include "odl/model/nhi/irq_unit.h"

namespace odl::model {

class irq_unit_model final : public irq_unit {
public:
    irq_unit_model() { reset(2); }
    void reset(unsigned hop_count) override;
    std::uint32_t read(std::uint8_t reg, bool auto_clear, std::uint64_t now_ps) override;
    std::uint32_t write(std::uint8_t reg, std::uint32_t v, std::uint64_t now_ps) override;
    irq_schedule raise(unsigned index, std::uint64_t now_ps) override;
    irq_schedule evaluate(unsigned index, std::uint64_t now_ps) override;
    bool fire(unsigned vector, std::uint64_t now_ps) override;

private:
    static constexpr unsigned ivr_words = (2 * max_hop_count + 7) / 8;
    bool ring_index(unsigned i) const { return i < 2 * m_hc; }
    unsigned ivr(unsigned i) const { return (m_ivr[i / 8] >> ((i % 8) * 4)) & 0xfu; }
    bool bit(std::uint64_t w, unsigned i) const { return (w >> i) & 1u; }
    irq_schedule schedule(unsigned vector, std::uint64_t now_ps);
    void map_vectors();

    unsigned m_hc = 2;
    std::uint64_t m_status = 0, m_enable = 0;
    std::uint32_t m_ivr[ivr_words] = {};
    /// Per vector, the ring indices IVR maps to it: fire() asks per message.
    std::uint64_t m_vector_mask[vectors] = {};
    std::uint16_t m_throttle[vectors] = {};
    bool m_pending[vectors] = {};
    bool m_cause[vectors] = {};  ///< a cause arrived since the last message
    bool m_fired_once[vectors] = {};
    std::uint64_t m_last_ps[vectors] = {};
};

}  // namespace odl::model
