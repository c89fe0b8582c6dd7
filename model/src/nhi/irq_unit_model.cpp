// SPDX-License-Identifier: MIT
#include "irq_unit_model.h"

#include <algorithm>
#include <iterator>

#include "odl/wire/nhi_regs.h"

namespace odl::model {

namespace {
// The throttle unit, as the register map defines it (256 ns).
constexpr std::uint64_t k_throttle_unit_ps = std::uint64_t{ODL_NHI_THROTTLE_UNIT_NS} * 1000;
std::uint32_t word_of(std::uint64_t w, unsigned k) { return static_cast<std::uint32_t>(w >> (32 * k)); }
void set_word(std::uint64_t& w, unsigned k, std::uint32_t v) {
    w = (w & ~(std::uint64_t{0xffffffffu} << (32 * k))) | (std::uint64_t{v} << (32 * k));
}
}  // namespace

void irq_unit_model::reset(unsigned hop_count) {
    m_hc = std::min(hop_count, max_hop_count);
    m_status = m_enable = 0;
    std::fill(std::begin(m_ivr), std::end(m_ivr), 0u);
    std::fill(std::begin(m_throttle), std::end(m_throttle), std::uint16_t{0});
    std::fill(std::begin(m_pending), std::end(m_pending), false);
    std::fill(std::begin(m_cause), std::end(m_cause), false);
    std::fill(std::begin(m_fired_once), std::end(m_fired_once), false);
    std::fill(std::begin(m_last_ps), std::end(m_last_ps), std::uint64_t{0});
    map_vectors();
}

void irq_unit_model::map_vectors() {
    std::fill(std::begin(m_vector_mask), std::end(m_vector_mask), std::uint64_t{0});
    for (unsigned i = 0; i < 2 * m_hc; ++i) m_vector_mask[ivr(i)] |= std::uint64_t{1} << i;
}

std::uint32_t irq_unit_model::read(std::uint8_t reg, bool auto_clear, std::uint64_t /*now_ps*/) {
    if (reg < irq_reg::status + 2) {
        const unsigned k = reg - irq_reg::status;
        const std::uint32_t v = word_of(m_status, k);
        if (auto_clear) set_word(m_status, k, 0);
        return v;
    }
    if (reg >= irq_reg::enable && reg < irq_reg::enable + 2) return word_of(m_enable, reg - irq_reg::enable);
    if (reg >= irq_reg::ivr && reg < irq_reg::ivr + ivr_words) return m_ivr[reg - irq_reg::ivr];
    if (reg >= irq_reg::throttle && reg < irq_reg::throttle + vectors) return m_throttle[reg - irq_reg::throttle];
    if (reg >= irq_reg::vstate && reg < irq_reg::vstate + vectors) {
        const unsigned v = reg - irq_reg::vstate;
        return (m_pending[v] ? 1u : 0u) | (m_cause[v] ? 2u : 0u) | (m_fired_once[v] ? 4u : 0u);
    }
    if (reg >= irq_reg::last_fire && reg < irq_reg::last_fire + 2 * vectors) {
        const unsigned k = reg - irq_reg::last_fire;
        return word_of(m_last_ps[k / 2], k % 2);
    }
    return 0;  // write-only or unused
}

std::uint32_t irq_unit_model::write(std::uint8_t reg, std::uint32_t v, std::uint64_t /*now_ps*/) {
    if (reg >= irq_reg::status_clear && reg < irq_reg::status_clear + 2) {
        const unsigned k = reg - irq_reg::status_clear;
        set_word(m_status, k, word_of(m_status, k) & ~v);
    } else if (reg >= irq_reg::enable && reg < irq_reg::enable + 2) {
        const unsigned k = reg - irq_reg::enable;
        const std::uint32_t rising = v & ~word_of(m_enable, k);
        set_word(m_enable, k, v);
        return rising;
    } else if (reg >= irq_reg::enable_clear && reg < irq_reg::enable_clear + 2) {
        const unsigned k = reg - irq_reg::enable_clear;
        set_word(m_enable, k, word_of(m_enable, k) & ~v);
    } else if (reg >= irq_reg::ivr && reg < irq_reg::ivr + ivr_words) {
        m_ivr[reg - irq_reg::ivr] = v;
        map_vectors();
    } else if (reg >= irq_reg::throttle && reg < irq_reg::throttle + vectors) {
        m_throttle[reg - irq_reg::throttle] = static_cast<std::uint16_t>(v);
    }
    return 0;  // read-only and unused words ignore writes
}

irq_schedule irq_unit_model::schedule(unsigned v, std::uint64_t now_ps) {
    if (m_pending[v]) return {};
    m_pending[v] = true;
    // Throttle: at least throttle * 256 ns between two messages on a vector.
    std::uint64_t t = now_ps;
    if (m_fired_once[v]) t = std::max(t, m_last_ps[v] + m_throttle[v] * k_throttle_unit_ps);
    return {true, v, t};
}

irq_schedule irq_unit_model::raise(unsigned index, std::uint64_t now_ps) {
    if (index >= 64) return {};
    m_status |= std::uint64_t{1} << index;
    if (ring_index(index)) m_cause[ivr(index)] = true;
    return evaluate(index, now_ps);
}

irq_schedule irq_unit_model::evaluate(unsigned index, std::uint64_t now_ps) {
    // Overflow bits have no enable.
    if (!ring_index(index) || !bit(m_status, index) || !bit(m_enable, index)) return {};
    return schedule(ivr(index), now_ps);
}

bool irq_unit_model::fire(unsigned v, std::uint64_t now_ps) {
    if (v >= vectors) return false;
    m_pending[v] = false;
    const std::uint64_t mine = m_vector_mask[v] & m_enable;  // unmasked causes of @v
    // A cause that arrived since the last message is delivered even if its
    // status bit was cleared meanwhile: the driver clears status at the
    // start of its handler with a posted write, which may reach us after a
    // completion that its ring walk had already missed. Dropping the message
    // then strands that frame for good; an extra message costs one empty walk.
    if (!mine || (!(m_status & mine) && !m_cause[v])) return false;  // masked, or nothing new
    m_cause[v] = false;
    m_last_ps[v] = now_ps;
    m_fired_once[v] = true;
    return true;
}

}  // namespace odl::model
