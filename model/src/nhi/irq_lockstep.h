// SPDX-License-Identifier: MIT
// Runs the interrupt unit's C++ twin and its RTL block on the same
// operations and throws irq_divergence at the first result that differs,
// with the operations that led there and both units' registers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "odl/model/nhi/irq_unit.h"

namespace odl::model {

class irq_unit_lockstep final : public irq_unit {
public:
    irq_unit_lockstep(std::unique_ptr<irq_unit> twin, std::unique_ptr<irq_unit> rtl);
    void reset(unsigned hop_count) override;
    std::uint32_t read(std::uint8_t reg, bool auto_clear, std::uint64_t now_ps) override;
    std::uint32_t write(std::uint8_t reg, std::uint32_t v, std::uint64_t now_ps) override;
    irq_schedule raise(unsigned index, std::uint64_t now_ps) override;
    irq_schedule evaluate(unsigned index, std::uint64_t now_ps) override;
    bool fire(unsigned vector, std::uint64_t now_ps) override;

    std::uint64_t operations() const { return m_ops; }

private:
    /// An operation as called, formatted only for a report.
    struct op_rec {
        enum kind_t : std::uint8_t { reset, read, write, raise, evaluate, fire } kind = reset;
        std::uint32_t a = 0, b = 0;  ///< register word / index / vector / hop count; value / auto_clear
        std::uint64_t now_ps = 0;
        std::uint64_t n = 0;         ///< its number
    };
    static std::string str(const op_rec& r);
    /// RAISE or EVAL on both units, compared.
    irq_schedule both(op_rec::kind_t k, unsigned index, std::uint64_t now_ps);
    void note(op_rec::kind_t k, std::uint32_t a, std::uint32_t b, std::uint64_t now_ps);
    [[noreturn]] void diverged(const std::string& twin, const std::string& rtl);

    std::unique_ptr<irq_unit> m_twin, m_rtl;
    static constexpr std::size_t k_recent = 8;
    op_rec m_recent[k_recent];  ///< the last operations (a ring), for the report
    std::uint64_t m_ops = 0;
};

}  // namespace odl::model
