// SPDX-License-Identifier: MIT
// The NHI's interrupt unit: interrupt status, enable, vector map (IVR) and
// per-vector throttle registers, and when a vector's MSI-X message goes out.
// Two implementations behind this interface: the C++ twin (irq_unit.cpp)
// and the SystemVerilog block model/rtl/odl_nhi_irq.sv through Verilator;
// a third runs both in lock step and stops at the first difference.
// Register words and operations: docs/rtl.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace odl::model {

enum class irq_impl { model, rtl, lockstep };
std::optional<irq_impl> parse_irq_impl(std::string_view s);
const char* to_string(irq_impl i);

/// The unit's register words; the NHI maps its BAR0 registers onto them.
namespace irq_reg {
constexpr std::uint8_t status = 0x00;        ///< 2 words, read (clears when auto_clear)
constexpr std::uint8_t status_clear = 0x02;  ///< 2 words, write 1 to clear
constexpr std::uint8_t enable = 0x04;        ///< 2 words, read/write
constexpr std::uint8_t enable_clear = 0x06;  ///< 2 words, write 1 to clear
constexpr std::uint8_t ivr = 0x08;           ///< 6 words, 4 bits per index
constexpr std::uint8_t throttle = 0x10;      ///< 16 words, 256 ns units (16 bits)
constexpr std::uint8_t vstate = 0x20;        ///< 16 words, read-only: pending, cause, fired once
constexpr std::uint8_t last_fire = 0x30;     ///< 32 words, read-only: last message (ps), lo, hi
}  // namespace irq_reg

// Times are picoseconds: sc_time::value() at SystemC's default resolution
// (1 ps), which the model keeps.

/// A message to schedule: fire(vector) at at_ps.
struct irq_schedule {
    bool due = false;
    unsigned vector = 0;
    std::uint64_t at_ps = 0;
    bool operator==(const irq_schedule& o) const {
        return due == o.due && (!due || (vector == o.vector && at_ps == o.at_ps));
    }
};

class irq_unit {
public:
    static constexpr unsigned max_hop_count = 21;
    static constexpr unsigned vectors = 16;

    virtual ~irq_unit() = default;
    /// Everything cleared; rings 0..hop_count-1 each way.
    virtual void reset(unsigned hop_count) = 0;
    /// A register word; reading status with auto_clear clears it.
    virtual std::uint32_t read(std::uint8_t reg, bool auto_clear, std::uint64_t now_ps) = 0;
    /// Writes a register word; for an enable word, returns the bits that rose.
    virtual std::uint32_t write(std::uint8_t reg, std::uint32_t v, std::uint64_t now_ps) = 0;
    /// A cause for interrupt index (TX ring h: h, RX ring h: HC + h,
    /// RX overflow: 2 HC): status set, a message scheduled if due.
    virtual irq_schedule raise(unsigned index, std::uint64_t now_ps) = 0;
    /// An index's enable rose: a message scheduled if its status is set.
    virtual irq_schedule evaluate(unsigned index, std::uint64_t now_ps) = 0;
    /// A scheduled message's time came: true if it goes out.
    virtual bool fire(unsigned vector, std::uint64_t now_ps) = 0;
};

/// The first difference between the RTL block and its C++ twin.
class irq_divergence : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// trace_fst: where the RTL block writes its waves (rtl and lockstep only;
/// empty: none), for simulated times in [trace_from_ps, trace_to_ps].
struct irq_unit_options {
    irq_impl impl = irq_impl::model;
    std::string trace_fst;
    std::uint64_t trace_from_ps = 0;
    std::uint64_t trace_to_ps = ~std::uint64_t{0};
};
std::unique_ptr<irq_unit> make_irq_unit(const irq_unit_options& o);

}  // namespace odl::model
