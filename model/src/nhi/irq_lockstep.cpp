// SPDX-License-Identifier: MIT
#include "irq_lockstep.h"

#include <algorithm>

#include <fmt/format.h>

namespace odl::model {

namespace {
std::string schedule_str(const irq_schedule& s) {
    return s.due ? fmt::format("message on vector {} at {} ps", s.vector, s.at_ps) : "no message";
}
}  // namespace

irq_unit_lockstep::irq_unit_lockstep(std::unique_ptr<irq_unit> twin, std::unique_ptr<irq_unit> rtl)
    : m_twin(std::move(twin)), m_rtl(std::move(rtl)) {}

std::string irq_unit_lockstep::str(const op_rec& r) {
    std::string s;
    switch (r.kind) {
    case op_rec::reset: s = fmt::format("reset hop_count {}", r.a); break;
    case op_rec::read: s = fmt::format("read word {:#04x}{} at {} ps", r.a, r.b ? " (auto-clear)" : "", r.now_ps); break;
    case op_rec::write: s = fmt::format("write word {:#04x} = {:#010x} at {} ps", r.a, r.b, r.now_ps); break;
    case op_rec::raise: s = fmt::format("raise index {} at {} ps", r.a, r.now_ps); break;
    case op_rec::evaluate: s = fmt::format("evaluate index {} at {} ps", r.a, r.now_ps); break;
    case op_rec::fire: s = fmt::format("fire vector {} at {} ps", r.a, r.now_ps); break;
    }
    return fmt::format("#{} {}", r.n, s);
}

void irq_unit_lockstep::note(op_rec::kind_t k, std::uint32_t a, std::uint32_t b, std::uint64_t now_ps) {
    ++m_ops;
    m_recent[m_ops % k_recent] = op_rec{k, a, b, now_ps, m_ops};
}

void irq_unit_lockstep::diverged(const std::string& twin, const std::string& rtl) {
    const std::size_t shown = static_cast<std::size_t>(std::min<std::uint64_t>(m_ops, k_recent));
    std::string r = fmt::format("interrupt unit: the RTL block and its C++ twin differ at operation {}: {}\n"
                                "  C++ twin: {}\n  RTL:      {}\n  operations before it (last {}):\n",
                                m_ops, str(m_recent[m_ops % k_recent]), twin, rtl, shown);
    for (std::uint64_t n = m_ops + 1 - shown; n <= m_ops; ++n) r += "    " + str(m_recent[n % k_recent]) + "\n";
    r += "  registers (C++ twin | RTL):\n";
    const auto row = [&](const char* name, std::uint8_t reg) {
        r += fmt::format("    {:<13} {:#010x} | {:#010x}\n", name, m_twin->read(reg, false, 0),
                         m_rtl->read(reg, false, 0));
    };
    row("status[0]", irq_reg::status);
    row("status[1]", irq_reg::status + 1);
    row("enable[0]", irq_reg::enable);
    row("enable[1]", irq_reg::enable + 1);
    for (unsigned v = 0; v < vectors; ++v) {
        const std::uint32_t a = m_twin->read(irq_reg::vstate + v, false, 0);
        const std::uint32_t b = m_rtl->read(irq_reg::vstate + v, false, 0);
        if (a || b)
            r += fmt::format("    vector {:<6} pending/cause/fired {}{}{} | {}{}{}\n", v, a & 1, (a >> 1) & 1,
                             (a >> 2) & 1, b & 1, (b >> 1) & 1, (b >> 2) & 1);
    }
    throw irq_divergence(r);
}

void irq_unit_lockstep::reset(unsigned hop_count) {
    note(op_rec::reset, hop_count, 0, 0);
    m_twin->reset(hop_count);
    m_rtl->reset(hop_count);
}

std::uint32_t irq_unit_lockstep::read(std::uint8_t reg, bool auto_clear, std::uint64_t now_ps) {
    note(op_rec::read, reg, auto_clear ? 1 : 0, now_ps);
    const std::uint32_t a = m_twin->read(reg, auto_clear, now_ps);
    const std::uint32_t b = m_rtl->read(reg, auto_clear, now_ps);
    if (a != b) diverged(fmt::format("{:#010x}", a), fmt::format("{:#010x}", b));
    return a;
}

std::uint32_t irq_unit_lockstep::write(std::uint8_t reg, std::uint32_t v, std::uint64_t now_ps) {
    note(op_rec::write, reg, v, now_ps);
    const std::uint32_t a = m_twin->write(reg, v, now_ps);
    const std::uint32_t b = m_rtl->write(reg, v, now_ps);
    if (a != b) diverged(fmt::format("rising {:#010x}", a), fmt::format("rising {:#010x}", b));
    return a;
}

irq_schedule irq_unit_lockstep::both(op_rec::kind_t k, unsigned index, std::uint64_t now_ps) {
    note(k, index, 0, now_ps);
    const bool raise = k == op_rec::raise;
    const irq_schedule a = raise ? m_twin->raise(index, now_ps) : m_twin->evaluate(index, now_ps);
    const irq_schedule b = raise ? m_rtl->raise(index, now_ps) : m_rtl->evaluate(index, now_ps);
    if (!(a == b)) diverged(schedule_str(a), schedule_str(b));
    return a;
}

irq_schedule irq_unit_lockstep::raise(unsigned index, std::uint64_t now_ps) { return both(op_rec::raise, index, now_ps); }

irq_schedule irq_unit_lockstep::evaluate(unsigned index, std::uint64_t now_ps) {
    return both(op_rec::evaluate, index, now_ps);
}

bool irq_unit_lockstep::fire(unsigned vector, std::uint64_t now_ps) {
    note(op_rec::fire, vector, 0, now_ps);
    const bool a = m_twin->fire(vector, now_ps);
    const bool b = m_rtl->fire(vector, now_ps);
    if (a != b) diverged(a ? "message out" : "no message", b ? "message out" : "no message");
    return a;
}

}  // namespace odl::model
