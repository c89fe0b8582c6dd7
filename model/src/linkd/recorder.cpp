// SPDX-License-Identifier: MIT
// Recording and replay of linkd's model seam; format in recorder.h.
#include "odl/model/linkd/recorder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <istream>
#include <ostream>
#include <sstream>

namespace odl::model::linkd {

namespace {

std::string to_hex(const void* p, std::size_t n) {
    static const char digits[] = "0123456789abcdef";
    const auto* b = static_cast<const std::uint8_t*>(p);
    std::string s(n * 2, '0');
    for (std::size_t i = 0; i < n; i++) {
        s[2 * i] = digits[b[i] >> 4];
        s[2 * i + 1] = digits[b[i] & 15];
    }
    return s;
}

bool from_hex(const std::string& s, std::vector<std::uint8_t>& out) {
    if (s.size() % 2) return false;
    out.resize(s.size() / 2);
    for (std::size_t i = 0; i < out.size(); i++) {
        unsigned v = 0;
        for (int k = 0; k < 2; k++) {
            const char c = s[2 * i + static_cast<std::size_t>(k)];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
            else return false;
        }
        out[i] = static_cast<std::uint8_t>(v);
    }
    return true;
}

}  // namespace

class recording_backend::bus final : public host_bus {
public:
    bus(recording_backend& r, unsigned h) : m_r(r), m_h(h) {}
    bool dma_read(std::uint64_t addr, void* buf, std::size_t len) override {
        const bool ok = inner && inner->dma_read(addr, buf, len);
        m_r.line(m_h) << fmt::format("DR {:x} {} {}\n", addr, len, ok ? to_hex(buf, len) : "-");
        return ok;
    }
    bool dma_write(std::uint64_t addr, const void* buf, std::size_t len) override {
        const bool ok = inner && inner->dma_write(addr, buf, len);
        m_r.line(m_h) << fmt::format("DW {:x} {} {} {}\n", addr, len, to_hex(buf, len), ok ? 1 : 0);
        return ok;
    }
    void raise_irq(unsigned vector) override {
        m_r.line(m_h) << fmt::format("I {}\n", vector);
        if (inner) inner->raise_irq(vector);
    }
    host_bus* inner = nullptr;

private:
    recording_backend& m_r;
    unsigned m_h;
};

class recording_backend::port final : public nhi_port {
public:
    port(recording_backend& r, unsigned h) : m_r(r), m_h(h) {}
    std::uint64_t mmio_read(std::uint64_t off, unsigned size) override {
        const std::uint64_t v = m_r.m_inner.nhi(m_h).mmio_read(off, size);
        m_r.line(m_h) << fmt::format("R {:x} {} {:x}\n", off, size, v);
        return v;
    }
    void mmio_write(std::uint64_t off, unsigned size, std::uint64_t v) override {
        // Logged first: DMA the write triggers must follow it in the file.
        m_r.line(m_h) << fmt::format("W {:x} {} {:x}\n", off, size, v);
        m_r.m_inner.nhi(m_h).mmio_write(off, size, v);
    }
    void reset() override {
        m_r.line(m_h) << "X\n";
        m_r.m_inner.nhi(m_h).reset();
    }
    void devctrl(std::uint16_t command, bool msix) override {
        m_r.line(m_h) << fmt::format("D {:x} {}\n", command, msix ? 1 : 0);
        m_r.m_inner.nhi(m_h).devctrl(command, msix);
    }

private:
    recording_backend& m_r;
    unsigned m_h;
};

recording_backend::recording_backend(model_backend& inner, std::ostream& out)
    : m_inner(inner), m_out(out) {
    for (unsigned h = 0; h < inner.host_count(); h++) {
        m_ports.push_back(std::make_unique<port>(*this, h));
        m_buses.push_back(std::make_unique<bus>(*this, h));
    }
}

recording_backend::~recording_backend() { m_out.flush(); }

std::ostream& recording_backend::line(unsigned host) {
    return m_out << m_now << ' ' << host << ' ';
}

nhi_port& recording_backend::nhi(unsigned host) { return *m_ports.at(host); }

void recording_backend::attach(unsigned host, host_bus* b) {
    line(host) << "A " << (b ? 1 : 0) << '\n';
    m_buses.at(host)->inner = b;
    m_inner.attach(host, b ? m_buses[host].get() : nullptr);
}

void recording_backend::advance_to(std::uint64_t now_ps) {
    m_now = now_ps;
    m_inner.advance_to(now_ps);
}

// Recordings are of two-host testbeds (odl-linkd refuses --record with
// more), so every cable event is cable 0's.
bool recording_backend::set_cable(unsigned cable, bool plugged) {
    m_out << m_now << " - C " << (plugged ? 1 : 0) << '\n';
    return m_inner.set_cable(cable, plugged);
}

std::string recording_backend::cable_event(unsigned cable, const std::string& spec) {
    std::string why = m_inner.cable_event(cable, spec);
    if (why.empty()) m_out << m_now << " - E " << spec << '\n';
    return why;
}

namespace {

struct model_event {
    std::string kind;  // DR, DW, I
    std::uint64_t addr = 0;
    std::size_t len = 0;
    std::vector<std::uint8_t> data;
    bool ok = true;
    unsigned vector = 0;
    std::uint64_t line = 0;
};

/// Serves the model's DMA from the recording and checks what it does.
class replay_bus final : public host_bus {
public:
    replay_bus(unsigned h, replay_report& rep) : m_h(h), m_rep(rep) {}
    std::deque<model_event> expect;

    bool dma_read(std::uint64_t addr, void* buf, std::size_t len) override {
        model_event e;
        if (!next("DR", e)) return false;
        m_rep.dma_checked++;
        if (e.addr != addr || e.len != len) {
            mismatch(fmt::format("line {}: DMA read {:#x}+{}, recorded {:#x}+{}", e.line, addr,
                                 len, e.addr, e.len));
            return false;
        }
        if (!e.ok) return false;
        std::memcpy(buf, e.data.data(), len);
        return true;
    }
    bool dma_write(std::uint64_t addr, const void* buf, std::size_t len) override {
        model_event e;
        if (!next("DW", e)) return false;
        m_rep.dma_checked++;
        if (e.addr != addr || e.len != len || std::memcmp(buf, e.data.data(), len) != 0)
            mismatch(fmt::format("line {}: DMA write {:#x}+{} differs from the recording", e.line,
                                 addr, len));
        return e.ok;
    }
    void raise_irq(unsigned vector) override {
        model_event e;
        if (!next("I", e)) return;
        m_rep.irqs_checked++;
        if (e.vector != vector)
            mismatch(fmt::format("line {}: IRQ {}, recorded {}", e.line, vector, e.vector));
    }
    void mismatch(std::string s) {
        m_rep.mismatch_count++;
        if (m_rep.mismatches.size() < 20) m_rep.mismatches.push_back(std::move(s));
    }

private:
    bool next(const char* kind, model_event& e) {
        if (expect.empty()) {
            mismatch(fmt::format("host {}: model did {} the recording does not have", m_h, kind));
            return false;
        }
        e = std::move(expect.front());
        expect.pop_front();
        if (e.kind != kind) {
            mismatch(fmt::format("line {}: model did {}, recording has {}", e.line, kind, e.kind));
            return false;
        }
        return true;
    }
    unsigned m_h;
    replay_report& m_rep;
};

}  // namespace

bool replay(model_backend& model, std::istream& in, replay_report& rep) {
    std::vector<std::unique_ptr<replay_bus>> buses;
    for (unsigned h = 0; h < model.host_count(); h++)
        buses.push_back(std::make_unique<replay_bus>(h, rep));

    // Model-side events are queued per host ahead of the device-side event
    // that causes them; so read the file into one list first.
    struct dev_event {
        std::uint64_t ts;
        int host;
        std::string kind;
        std::uint64_t a = 0, b = 0, c = 0;
        std::uint64_t line;
        std::size_t model_events_before;  // per host: queued up to here
        std::string spec;                 // E: the cable event
    };
    std::vector<dev_event> dev;
    std::vector<std::vector<model_event>> model_evs(model.host_count());
    std::string text;
    std::uint64_t lineno = 0;
    std::uint64_t max_model_ts = 0;
    while (std::getline(in, text)) {
        lineno++;
        if (text.empty()) continue;
        std::istringstream ls(text);
        std::uint64_t ts;
        std::string host_s, kind;
        if (!(ls >> ts >> host_s >> kind)) {
            rep.mismatches.push_back(fmt::format("line {}: malformed", lineno));
            return false;
        }
        int host = host_s == "-" ? -1 : std::stoi(host_s);
        if (host >= static_cast<int>(model.host_count())) {
            rep.mismatches.push_back(fmt::format("line {}: host {} out of range", lineno, host));
            return false;
        }
        if (kind == "DR" || kind == "DW" || kind == "I") {
            if (host < 0) return false;
            model_event e;
            e.kind = kind;
            e.line = lineno;
            max_model_ts = std::max(max_model_ts, ts);
            if (kind == "I") {
                ls >> e.vector;
            } else {
                std::string hex;
                ls >> std::hex >> e.addr >> std::dec >> e.len >> hex;
                if (hex == "-") {
                    e.ok = false;
                } else if (!from_hex(hex, e.data) || e.data.size() != e.len) {
                    rep.mismatches.push_back(fmt::format("line {}: bad data", lineno));
                    return false;
                }
                if (kind == "DW") {
                    int ok = 1;
                    ls >> ok;
                    e.ok = ok != 0;
                }
            }
            model_evs[static_cast<std::size_t>(host)].push_back(std::move(e));
            continue;
        }
        dev_event d{ts, host, kind, 0, 0, 0, lineno, 0, {}};
        if (kind == "E") {
            std::getline(ls >> std::ws, d.spec);
        } else if (kind == "R" || kind == "W")
            ls >> std::hex >> d.a >> std::dec >> d.b >> std::hex >> d.c;
        else if (kind == "D")
            ls >> std::hex >> d.a >> std::dec >> d.b;
        else if (kind == "A" || kind == "C")
            ls >> d.a;
        else if (kind != "X") {
            rep.mismatches.push_back(fmt::format("line {}: unknown event '{}'", lineno, kind));
            return false;
        }
        dev.push_back(d);
    }
    for (unsigned h = 0; h < model.host_count(); h++)
        buses[h]->expect.assign(model_evs[h].begin(), model_evs[h].end());

    std::uint64_t last_ts = 0;
    for (const auto& d : dev) {
        rep.events++;
        last_ts = d.ts;
        model.advance_to(d.ts);
        if (d.kind == "C") {
            model.set_cable(0, d.a != 0);
            continue;
        }
        if (d.kind == "E") {
            if (const std::string why = model.cable_event(0, d.spec); !why.empty()) {
                rep.mismatches.push_back(fmt::format("line {}: cable event '{}': {}", d.line, d.spec, why));
                return false;
            }
            continue;
        }
        const auto h = static_cast<unsigned>(d.host);
        if (d.kind == "A") {
            model.attach(h, d.a ? buses[h].get() : nullptr);
        } else if (d.kind == "X") {
            model.nhi(h).reset();
        } else if (d.kind == "D") {
            model.nhi(h).devctrl(static_cast<std::uint16_t>(d.a), d.b != 0);
        } else if (d.kind == "W") {
            model.nhi(h).mmio_write(d.a, static_cast<unsigned>(d.b), d.c);
        } else if (d.kind == "R") {
            const std::uint64_t v = model.nhi(h).mmio_read(d.a, static_cast<unsigned>(d.b));
            rep.mmio_reads_checked++;
            if (v != d.c)
                buses[h]->mismatch(fmt::format("line {}: host {} read {:#x} = {:#x}, recorded {:#x}",
                                               d.line, h, d.a, v, d.c));
        }
    }
    // Model events after the last device event (timers, in-flight frames).
    model.advance_to(std::max(last_ts, max_model_ts));
    for (unsigned h = 0; h < model.host_count(); h++)
        if (!buses[h]->expect.empty())
            buses[h]->mismatch(fmt::format("host {}: {} recorded model events never happened",
                                           h, buses[h]->expect.size()));
    return true;
}

}  // namespace odl::model::linkd
