// SPDX-License-Identifier: MIT
// odl-linkd's SystemC backend: wires the model's NHIs, routers and cable
// and adapts them to linkd's host_bus / nhi_port seam.
#include "odl/model/linkd/model_backend_sc.h"

#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include <string>

#include <tlm_utils/simple_initiator_socket.h>

namespace odl::model::linkd {

/// host_memory that forwards to the host's QEMU (fails while detached).
class bus_memory final : public host_memory {
public:
    bool dma_read(std::uint64_t addr, void* dst, std::size_t len) override {
        return bus && bus->dma_read(addr, dst, len);
    }
    bool dma_write(std::uint64_t addr, const void* src, std::size_t len) override {
        return bus && bus->dma_write(addr, src, len);
    }
    host_bus* bus = nullptr;
};

/// 32-bit register file access widened to linkd's 1/2/4/8-byte accesses.
class nhi_adapter final : public nhi_port {
public:
    explicit nhi_adapter(odl::model::nhi& n) : m_nhi(n) {}
    std::uint64_t mmio_read(std::uint64_t offset, unsigned size) override {
        const auto base = static_cast<std::uint32_t>(offset & ~std::uint64_t{3});
        std::uint64_t v = m_nhi.mmio_read(base);
        if (size == 8) v |= std::uint64_t{m_nhi.mmio_read(base + 4)} << 32;
        v >>= (offset & 3) * 8;
        return size >= 8 ? v : v & ((std::uint64_t{1} << (size * 8)) - 1);
    }
    void mmio_write(std::uint64_t offset, unsigned size, std::uint64_t value) override {
        const auto base = static_cast<std::uint32_t>(offset & ~std::uint64_t{3});
        if (size == 8) {
            m_nhi.mmio_write(base, static_cast<std::uint32_t>(value));
            m_nhi.mmio_write(base + 4, static_cast<std::uint32_t>(value >> 32));
        } else if (size == 4) {
            m_nhi.mmio_write(base, static_cast<std::uint32_t>(value));
        } else {
            // Sub-dword writes: read-modify-write, as a byte-enabled TLP would.
            const unsigned shift = static_cast<unsigned>(offset & 3) * 8;
            const std::uint32_t mask = (size == 1 ? 0xffu : 0xffffu) << shift;
            const std::uint32_t old = m_nhi.mmio_read(base);
            m_nhi.mmio_write(base, (old & ~mask) |
                                       ((static_cast<std::uint32_t>(value) << shift) & mask));
        }
    }
    void reset() override { m_nhi.reset(); }
    void devctrl(std::uint16_t, bool) override {}

private:
    odl::model::nhi& m_nhi;
};

/// linkd calls nhi::mmio_read/write directly; SystemC still insists that
/// the NHI's TLM bar0 socket is bound, so an idle initiator binds it.
struct bar0_binder : sc_core::sc_module {
    explicit bar0_binder(sc_core::sc_module_name n) : sc_core::sc_module(n) {}
    tlm_utils::simple_initiator_socket<bar0_binder> sock;
};

struct sc_backend::host {
    host(unsigned i, scheduler& sched, trace_log& log, const irq_unit_options& irq)
        : rt(fmt::format("router{}", i).c_str(), sched, log, router_cfg(i)),
          nhi(fmt::format("nhi{}", i).c_str(), sched, log, rt, mem, nhi_cfg(i, irq)),
          binder(fmt::format("bar0_binder{}", i).c_str()),
          port(nhi) {
        binder.sock.bind(nhi.bar0);
    }
    static nhi_config nhi_cfg(unsigned i, const irq_unit_options& irq) {
        nhi_config c;
        c.irq = irq;
        // One wave file per host: FILE.fst -> FILE-a.fst, FILE-b.fst.
        if (!c.irq.trace_fst.empty()) {
            std::string stem = c.irq.trace_fst;
            if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".fst") == 0) stem.resize(stem.size() - 4);
            c.irq.trace_fst = fmt::format("{}-{}.fst", stem, i == 0 ? 'a' : 'b');
        }
        return c;
    }
    static router_config router_cfg(unsigned i) {
        router_config c;
        c.uid = 0x0d1c000000000100ull + i;  // unique per host
        return c;
    }
    bus_memory mem;
    router rt;
    odl::model::nhi nhi;
    bar0_binder binder;
    nhi_adapter port;
};

sc_backend::sc_backend(const sc_backend_config& cfg)
    : m_cfg(cfg),
      m_log(cfg.trace),
      m_sched("sched"),
      m_cable("cable", m_sched, m_log, cfg.link, link_physics{},
              sc_core::sc_time(100, sc_core::SC_US), cfg.seed) {
    for (unsigned i = 0; i < 2; i++) {
        m_hosts.push_back(std::make_unique<host>(i, m_sched, m_log, cfg.irq));
        m_hosts[i]->rt.connect(1, m_cable, static_cast<int>(i));
        auto* h = m_hosts[i].get();
        h->nhi.on_irq([h](unsigned vector) {
            if (h->mem.bus) h->mem.bus->raise_irq(vector);
        });
    }
}

sc_backend::~sc_backend() = default;

device_info sc_backend::info(unsigned) const {
    device_info d;
    d.hop_count = static_cast<std::uint16_t>(m_hosts[0]->nhi.hop_count());
    return d;
}

nhi_port& sc_backend::nhi(unsigned h) { return m_hosts.at(h)->port; }

void sc_backend::attach(unsigned h, host_bus* bus) {
    auto& hs = *m_hosts.at(h);
    hs.mem.bus = bus;
    if (!bus) hs.nhi.reset();  // a gone QEMU: power-on state for the next
    update_cable();
}

std::string sc_backend::describe() const {
    const link_config& c = m_cable.config();
    const link_state st = m_cable.state();
    std::string out = fmt::format("model time {:.3f} us, cable {}, link {} {} x{}{}, ber {:g}\n",
                                  scheduler::now().to_seconds() * 1e6, m_cable_plugged ? "plugged" : "pulled",
                                  st == link_state::up ? "up" : st == link_state::training ? "training" : "down",
                                  to_string(c.gen), c.lanes, c.asymmetric ? " asymmetric" : "", m_cable.ber());
    for (unsigned h = 0; h < m_hosts.size(); ++h) {
        std::string d = m_hosts[h]->nhi.describe();
        for (std::size_t b = 0, e; b < d.size(); b = e + 1) {
            e = d.find('\n', b);
            if (e == std::string::npos) e = d.size();
            out += fmt::format("host {} {}\n", h, d.substr(b, e - b));
        }
    }
    return out;
}

std::string sc_backend::cable_event(const std::string& spec) {
    std::istringstream in(spec);
    std::string what, extra;
    in >> what;
    if (what == "retrain") {
        if (in >> extra) return "retrain takes no arguments";
        if (m_cable.state() == link_state::unplugged) return "the cable is unplugged";
        m_cable.retrain();
        return "";
    }
    if (what == "degrade") {
        std::string g;
        unsigned lanes = 0;
        if (!(in >> g >> lanes) || (in >> extra)) return "usage: degrade GEN LANES (e.g. degrade gen3 1)";
        const auto gen = parse_generation(g);
        if (!gen) return fmt::format("unknown generation '{}' (gen2, gen3 or tb4, gen4 or tb5)", g);
        link_config c = m_cable.config();
        c.gen = *gen;
        c.lanes = lanes;
        if (*gen != generation::gen4) c.asymmetric = false;
        if (const auto why = validate(c)) return *why;
        if (m_cable.state() == link_state::unplugged) return "the cable is unplugged";
        m_cable.degrade(*gen, lanes);
        return "";
    }
    if (what == "ber") {
        std::string r;
        if (!(in >> r) || (in >> extra)) return "usage: ber RATE (e.g. ber 1e-9)";
        char* end = nullptr;
        const double ber = std::strtod(r.c_str(), &end);
        if (end == r.c_str() || *end || !(ber >= 0 && ber <= 1e-3))
            return fmt::format("bit error rate '{}': expected a number from 0 to 1e-3", r);
        m_cable.set_ber(ber);
        m_log.event(m_cable.name(), fmt::format("ber {:g}", ber));
        return "";
    }
    return fmt::format("unknown cable event '{}' (retrain, degrade GEN LANES, ber RATE)", what);
}

bool sc_backend::set_cable(bool plugged) {
    m_cable_plugged = plugged;
    update_cable();
    return true;
}

// The link trains only while the cable is in and both hosts are powered.
void sc_backend::update_cable() {
    const bool want = m_cable_plugged && m_hosts[0]->mem.bus && m_hosts[1]->mem.bus;
    const bool have = m_cable.state() != link_state::unplugged;
    if (want && !have)
        m_cable.plug();
    else if (!want && have)
        m_cable.unplug();
}

void sc_backend::advance_to(std::uint64_t now_ps) {
    const sc_core::sc_time target(static_cast<double>(now_ps), sc_core::SC_PS);
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    if (target > now) sc_core::sc_start(target - now);
}

std::uint64_t sc_backend::next_event_ps() const {
    if (!sc_core::sc_pending_activity()) return UINT64_MAX;
    const sc_core::sc_time next = sc_core::sc_time_stamp() + sc_core::sc_time_to_pending_activity();
    return static_cast<std::uint64_t>(next.to_seconds() * 1e12);
}

}  // namespace odl::model::linkd
