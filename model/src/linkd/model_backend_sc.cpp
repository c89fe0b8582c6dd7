// SPDX-License-Identifier: MIT
// odl-linkd's SystemC backend: wires the model's NHIs, routers and cable
// and adapts them to linkd's host_bus / nhi_port seam.
#include "odl/model/linkd/model_backend_sc.h"

#include <cstdlib>
#include <stdexcept>
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
    host(unsigned i, unsigned ports, scheduler& sched, trace_log& log, const irq_unit_options& irq)
        : rt(fmt::format("router{}", i).c_str(), sched, log, router_cfg(i, ports)),
          nhi(fmt::format("nhi{}", i).c_str(), sched, log, rt, mem, nhi_cfg(i, irq)),
          binder(fmt::format("bar0_binder{}", i).c_str()),
          port(nhi) {
        binder.sock.bind(nhi.bar0);
    }
    static nhi_config nhi_cfg(unsigned i, const irq_unit_options& irq) {
        nhi_config c;
        c.irq = irq;
        // One wave file per host: FILE.fst -> FILE-a.fst, FILE-b.fst, ...
        if (!c.irq.trace_fst.empty()) {
            std::string stem = c.irq.trace_fst;
            if (stem.size() > 4 && stem.compare(stem.size() - 4, 4, ".fst") == 0) stem.resize(stem.size() - 4);
            c.irq.trace_fst = fmt::format("{}-{}.fst", stem, static_cast<char>('a' + i));
        }
        return c;
    }
    static router_config router_cfg(unsigned i, unsigned ports) {
        router_config c;
        c.uid = 0x0d1c000000000100ull + i;  // unique per host
        c.lane_ports = ports;
        c.lane_stride = lane_stride;  // Linux must see separate ports, not two lanes of one
        return c;
    }
    bus_memory mem;
    router rt;
    odl::model::nhi nhi;
    bar0_binder binder;
    nhi_adapter port;
    unsigned next_port = 1;  ///< the USB4 port the next cable takes
};

namespace {
std::vector<std::pair<unsigned, unsigned>> cable_list(const sc_backend_config& c) {
    if (c.cables.empty()) return {{0, 1}};
    return c.cables;
}
}  // namespace

std::optional<std::string> sc_backend::check(const sc_backend_config& c) {
    if (c.hosts < 2 || c.hosts > 4) return fmt::format("{} hosts: the model backend serves 2 to 4", c.hosts);
    std::vector<unsigned> degree(c.hosts, 0);
    const auto list = cable_list(c);
    for (std::size_t i = 0; i < list.size(); ++i) {
        const auto [a, b] = list[i];
        if (a >= c.hosts || b >= c.hosts)
            return fmt::format("cable {} joins host {} and host {}; the hosts are 0 to {}", i, a, b, c.hosts - 1);
        if (a == b) return fmt::format("cable {} joins host {} to itself", i, a);
        for (std::size_t j = 0; j < i; ++j)
            if ((list[j].first == a && list[j].second == b) || (list[j].first == b && list[j].second == a))
                return fmt::format("cables {} and {} both join hosts {} and {}", j, i, a, b);
        if (++degree[a] > 7 || ++degree[b] > 7) return fmt::format("cable {}: a host has at most 7 USB4 ports", i);
    }
    return std::nullopt;
}

namespace {
// Refuses before any SystemC module exists (none may be made mid-run).
const sc_backend_config& checked(const sc_backend_config& c) {
    if (auto why = sc_backend::check(c)) throw std::invalid_argument(*why);
    return c;
}
}  // namespace

sc_backend::sc_backend(const sc_backend_config& cfg)
    : m_cfg(checked(cfg)), m_log(cfg.trace), m_sched("sched") {
    const auto list = cable_list(cfg);
    std::vector<unsigned> degree(cfg.hosts, 0);
    for (std::size_t i = 0; i < list.size(); ++i) {
        cable_slot s;
        s.a = list[i].first;
        s.b = list[i].second;
        ++degree[s.a];
        ++degree[s.b];
        // Cable 0 keeps the name and seed a two-host testbed always had
        // (recordings name it); the others get their own bit-error streams.
        const std::string name = i == 0 ? std::string("cable") : fmt::format("cable{}", i);
        s.c = std::make_unique<cable>(name.c_str(), m_sched, m_log, cfg.link, link_physics{},
                                      sc_core::sc_time(100, sc_core::SC_US),
                                      cfg.seed + i * 0x9e3779b97f4a7c15ull);
        m_cables.push_back(std::move(s));
    }
    for (unsigned i = 0; i < cfg.hosts; i++) {
        m_hosts.push_back(std::make_unique<host>(i, degree[i], m_sched, m_log, cfg.irq));
        auto* h = m_hosts[i].get();
        h->nhi.on_irq([h](unsigned vector) {
            if (h->mem.bus) h->mem.bus->raise_irq(vector);
        });
    }
    for (auto& s : m_cables) {
        host& a = *m_hosts[s.a];
        host& b = *m_hosts[s.b];
        s.adp_a = a.rt.lane_adapter(a.next_port++);
        s.adp_b = b.rt.lane_adapter(b.next_port++);
        a.rt.connect(s.adp_a, *s.c, 0);
        b.rt.connect(s.adp_b, *s.c, 1);
    }
    for (unsigned i = 0; i < cfg.hosts; i++)
        m_hosts[i]->rt.on_plug_ack([this, i](unsigned adapter, bool unplug) { plug_acked(i, adapter, unplug); });
}

void sc_backend::plug_acked(unsigned h, unsigned adapter, bool unplug) {
    if (!unplug) return;
    for (auto& s : m_cables) {
        if (!((s.a == h && s.adp_a == adapter) || (s.b == h && s.adp_b == adapter))) continue;
        if (!s.downs.empty() && s.downs.back().noticed_ps == 0)
            s.downs.back().noticed_ps = std::max<std::uint64_t>(1, scheduler::now().value());
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
    for (auto& s : m_cables)
        if (s.a == h || s.b == h) update_cable(s);
}

int sc_backend::link_peer(unsigned h) const {
    for (const auto& s : m_cables)
        if (s.c->up() && (s.a == h || s.b == h)) return static_cast<int>(s.a == h ? s.b : s.a);
    return -1;
}

namespace {
std::string cable_line(const cable& c, bool plugged) {
    const link_config& cfg = c.config();
    const link_state st = c.state();
    return fmt::format("cable {}, link {} {} x{}{}, ber {:g}", plugged ? "plugged" : "pulled",
                       st == link_state::up ? "up" : st == link_state::training ? "training" : "down",
                       to_string(cfg.gen), cfg.lanes, cfg.asymmetric ? " asymmetric" : "", c.ber());
}
}  // namespace

std::string sc_backend::describe() const {
    // Line 1 is cable 0's, as it always was; more cables follow it.
    std::string out = fmt::format("model time {:.3f} us, {}\n", scheduler::now().to_seconds() * 1e6,
                                  cable_line(*m_cables[0].c, m_cables[0].plugged));
    for (std::size_t i = 1; i < m_cables.size(); ++i)
        out += fmt::format("cable {} (hosts {}-{}): {}\n", i, m_cables[i].a, m_cables[i].b,
                           cable_line(*m_cables[i].c, m_cables[i].plugged));
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

std::string sc_backend::cable_stats(unsigned index) const {
    if (index >= m_cables.size()) return "";
    const auto& st = m_cables[index].c->stats();
    // Per pull, retrain or degrade (the link goes down, as the scenario
    // model counts them): µs from it to the first host's ACK of the unplug
    // event (Linux sends it as it takes the event), -1 while none has; "-"
    // when the link never went down so.
    std::string noticed;
    for (const auto& d : m_cables[index].downs)
        noticed += fmt::format("{}{:.3f}", noticed.empty() ? "" : ",",
                               d.noticed_ps ? double(d.noticed_ps - d.at_ps) / 1e6 : -1.0);
    return fmt::format("frames_sent {} frames_delivered {} frames_lost_in_flight {} frames_refused_down {} "
                       "errors_corrected {} packets_damaged {} frames_damaged {} frames_tapped {} "
                       "link_down_noticed_us {}",
                       st.frames_sent, st.frames_delivered, st.frames_lost_in_flight, st.frames_refused_down,
                       st.errors_corrected, st.packets_damaged, st.frames_damaged, st.frames_tapped,
                       noticed.empty() ? "-" : noticed);
}

std::string sc_backend::cable_event(unsigned index, const std::string& spec) {
    if (index >= m_cables.size())
        return fmt::format("no cable {} (this testbed has {})", index, m_cables.size());
    cable& c = *m_cables[index].c;
    std::istringstream in(spec);
    std::string what, extra;
    in >> what;
    if (what == "retrain") {
        if (in >> extra) return "retrain takes no arguments";
        if (c.state() == link_state::unplugged) return "the cable is unplugged";
        m_cables[index].downs.push_back({scheduler::now().value(), 0});  // the link goes down, as on a pull
        c.retrain();
        return "";
    }
    if (what == "degrade") {
        std::string g;
        unsigned lanes = 0;
        if (!(in >> g >> lanes) || (in >> extra)) return "usage: degrade GEN LANES (e.g. degrade gen3 1)";
        const auto gen = parse_generation(g);
        if (!gen) return fmt::format("unknown generation '{}' (gen2, gen3 or tb4, gen4 or tb5)", g);
        link_config lc = c.config();
        lc.gen = *gen;
        lc.lanes = lanes;
        if (*gen != generation::gen4) lc.asymmetric = false;
        if (const auto why = validate(lc)) return *why;
        if (c.state() == link_state::unplugged) return "the cable is unplugged";
        m_cables[index].downs.push_back({scheduler::now().value(), 0});
        c.degrade(*gen, lanes);
        return "";
    }
    if (what == "ber") {
        std::string r;
        if (!(in >> r) || (in >> extra)) return "usage: ber RATE (e.g. ber 1e-9)";
        char* end = nullptr;
        const double ber = std::strtod(r.c_str(), &end);
        if (end == r.c_str() || *end || !(ber >= 0 && ber <= 1e-3))
            return fmt::format("bit error rate '{}': expected a number from 0 to 1e-3", r);
        c.set_ber(ber);
        m_log.event(c.name(), fmt::format("ber {:g}", ber));
        return "";
    }
    return fmt::format("unknown cable event '{}' (retrain, degrade GEN LANES, ber RATE)", what);
}

bool sc_backend::set_cable(unsigned index, bool plugged) {
    if (index >= m_cables.size()) return false;
    if (m_cables[index].plugged && !plugged) m_cables[index].downs.push_back({scheduler::now().value(), 0});
    m_cables[index].plugged = plugged;
    update_cable(m_cables[index]);
    return true;
}

// A link trains only while its cable is in and both its hosts are powered.
void sc_backend::update_cable(cable_slot& s) {
    const bool want = s.plugged && m_hosts[s.a]->mem.bus && m_hosts[s.b]->mem.bus;
    const bool have = s.c->state() != link_state::unplugged;
    if (want && !have)
        s.c->plug();
    else if (!want && have)
        s.c->unplug();
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
