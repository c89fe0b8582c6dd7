// SPDX-License-Identifier: MIT
// The interrupt unit as RTL: model/rtl/odl_nhi_irq.sv, Verilated, behind
// the same interface as its C++ twin. One clock cycle per operation: the
// model's scheduler runs ahead of the SystemC kernel, so the block must
// answer within the call, and clocking it only when something happens
// keeps it as cheap as the twin's bookkeeping.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "odl/model/nhi/irq_unit.h"

namespace odl::model {

class irq_unit_rtl final : public irq_unit {
public:
    /// trace_fst: waves of operations in [from_ps, to_ps] (empty: none).
    explicit irq_unit_rtl(const irq_unit_options& o = {});
    ~irq_unit_rtl() override;
    irq_unit_rtl(const irq_unit_rtl&) = delete;
    irq_unit_rtl& operator=(const irq_unit_rtl&) = delete;

    void reset(unsigned hop_count) override;
    std::uint32_t read(std::uint8_t reg, bool auto_clear, std::uint64_t now_ps) override;
    std::uint32_t write(std::uint8_t reg, std::uint32_t v, std::uint64_t now_ps) override;
    irq_schedule raise(unsigned index, std::uint64_t now_ps) override;
    irq_schedule evaluate(unsigned index, std::uint64_t now_ps) override;
    bool fire(unsigned vector, std::uint64_t now_ps) override;

    /// Clock cycles run so far (one per operation).
    std::uint64_t cycles() const { return m_cycles; }
    /// Writes the block's coverage counters (Verilator's coverage.dat
    /// format) to path; false when the build has no coverage.
    bool write_coverage(const std::string& path) const;

private:
    struct impl;
    struct op_in {
        unsigned op = 0, addr = 0, index = 0, vector = 0, hop_count = 0;
        std::uint32_t wdata = 0;
        bool auto_clear = false;
        std::uint64_t now_ps = 0;
    };
    void cycle(const op_in& in);
    /// RAISE or EVAL: the schedule the block answers.
    irq_schedule index_op(unsigned op, unsigned index, std::uint64_t now_ps);

    std::unique_ptr<impl> m;
    std::uint64_t m_cycles = 0;
};

}  // namespace odl::model
