// SPDX-License-Identifier: MIT
#include "irq_unit_rtl.h"

#include <algorithm>
#include <stdexcept>

#include "Vodl_nhi_irq.h"
#include "verilated.h"
#include "verilated_fst_c.h"

namespace odl::model {

namespace {
// Operation codes of odl_nhi_irq (OP_*).
enum : unsigned { op_reset = 1, op_read = 2, op_write = 3, op_raise = 4, op_eval = 5, op_fire = 6 };
}  // namespace

struct irq_unit_rtl::impl {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<Vodl_nhi_irq> top;
    std::unique_ptr<VerilatedFstC> fst;
    std::uint64_t from_ps = 0, to_ps = 0;
    std::uint64_t next_ts = 0;  ///< waves: the next free picosecond
};

irq_unit_rtl::irq_unit_rtl(const irq_unit_options& o) : m(std::make_unique<impl>()) {
    m->ctx = std::make_unique<VerilatedContext>();
    if (!o.trace_fst.empty()) m->ctx->traceEverOn(true);
    m->top = std::make_unique<Vodl_nhi_irq>(m->ctx.get(), "odl_nhi_irq");
    if (!o.trace_fst.empty()) {
        m->fst = std::make_unique<VerilatedFstC>();
        m->top->trace(m->fst.get(), 99);
        m->fst->open(o.trace_fst.c_str());
        if (!m->fst->isOpen()) throw std::runtime_error("cannot write RTL waves to " + o.trace_fst);
        m->from_ps = o.trace_from_ps;
        m->to_ps = o.trace_to_ps;
    }
    m->top->clk = 0;
    m->top->req = 0;
    m->top->eval();
    reset(2);
}

irq_unit_rtl::~irq_unit_rtl() {
    if (m->fst) m->fst->close();
    m->top->final();
}

void irq_unit_rtl::cycle(const op_in& in) {
    Vodl_nhi_irq& t = *m->top;
    t.req = 1;
    t.op = in.op & 7u;
    t.addr = in.addr & 0xffu;
    t.wdata = in.wdata;
    t.index = in.index & 63u;
    t.vec = in.vector & 15u;
    t.now_ps = in.now_ps;
    t.auto_clear = in.auto_clear;
    t.hop_count = in.hop_count & 31u;
    // One rising edge per operation (the clock stays high until the next).
    // Waves: each operation is drawn at its simulated time; operations at
    // the same picosecond are drawn two picoseconds apart.
    const bool draw = m->fst && in.now_ps >= m->from_ps && in.now_ps <= m->to_ps;
    const std::uint64_t ts = std::max(in.now_ps, m->next_ts);
    t.clk = 0;
    t.eval();
    if (draw) m->fst->dump(ts);
    t.clk = 1;
    t.eval();
    if (draw) {
        m->fst->dump(ts + 1);
        m->next_ts = ts + 2;
    }
    ++m_cycles;
}

void irq_unit_rtl::reset(unsigned hop_count) {
    op_in in;
    in.op = op_reset;
    in.hop_count = std::min(hop_count, max_hop_count);
    cycle(in);
}

std::uint32_t irq_unit_rtl::read(std::uint8_t reg, bool auto_clear, std::uint64_t now_ps) {
    op_in in;
    in.op = op_read;
    in.addr = reg;
    in.auto_clear = auto_clear;
    in.now_ps = now_ps;
    cycle(in);
    return m->top->rdata;
}

std::uint32_t irq_unit_rtl::write(std::uint8_t reg, std::uint32_t v, std::uint64_t now_ps) {
    op_in in;
    in.op = op_write;
    in.addr = reg;
    in.wdata = v;
    in.now_ps = now_ps;
    cycle(in);
    return m->top->rdata;
}

irq_schedule irq_unit_rtl::index_op(unsigned op, unsigned index, std::uint64_t now_ps) {
    if (index >= 64) return {};
    op_in in;
    in.op = op;
    in.index = index;
    in.now_ps = now_ps;
    cycle(in);
    const Vodl_nhi_irq& t = *m->top;
    if (!t.sched) return {};
    return {true, static_cast<unsigned>(t.sched_vector), static_cast<std::uint64_t>(t.sched_at_ps)};
}

irq_schedule irq_unit_rtl::raise(unsigned index, std::uint64_t now_ps) { return index_op(op_raise, index, now_ps); }

irq_schedule irq_unit_rtl::evaluate(unsigned index, std::uint64_t now_ps) { return index_op(op_eval, index, now_ps); }

bool irq_unit_rtl::fire(unsigned vector, std::uint64_t now_ps) {
    if (vector >= vectors) return false;
    op_in in;
    in.op = op_fire;
    in.vector = vector;
    in.now_ps = now_ps;
    cycle(in);
    return m->top->fired;
}

bool irq_unit_rtl::write_coverage(const std::string& path) const {
#ifdef ODL_RTL_COVERAGE
    m->ctx->coveragep()->write(path.c_str());
    return true;
#else
    (void)path;
    return false;
#endif
}

}  // namespace odl::model
