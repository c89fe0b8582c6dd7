// SPDX-License-Identifier: MIT
// odl-linkd fault injection: see odl/model/linkd/fault.h and docs/vm.md.
#include "odl/model/linkd/fault.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <iterator>

#include "odl/model/router/ctl_packet.h"
#include "odl/wire/frame.h"
#include "odl/wire/frame_codec.h"
#include "odl/wire/tb5_login.h"
#include "odl/wire/usb4_ctl.h"

namespace odl::model::linkd {

// Bytes as uuid_t holds them; the one definition is in tb5_login.h.
const std::uint8_t odl_service_uuid[16] = ODL_XD_SERVICE_UUID_BYTES;

namespace {

constexpr std::uint64_t k_max_count = 1000000;

struct field_def {
    const char* name;
    std::size_t offset;  ///< byte offset in the packet struct
    std::size_t size;    ///< 2 or 4
};

#define ODL_LOGIN_FIELD(s, f) {#f, offsetof(s, f), sizeof(static_cast<s*>(nullptr)->f)}
const field_def k_login_fields[] = {
    ODL_LOGIN_FIELD(odl_xd_login, version_major),
    ODL_LOGIN_FIELD(odl_xd_login, version_minor),
    ODL_LOGIN_FIELD(odl_xd_login, features),
    ODL_LOGIN_FIELD(odl_xd_login, ring_size),
    ODL_LOGIN_FIELD(odl_xd_login, frame_bytes),
    ODL_LOGIN_FIELD(odl_xd_login, transmit_path),
    ODL_LOGIN_FIELD(odl_xd_login, rings),
    {"transmit_path_ext0", offsetof(odl_xd_login, transmit_path_ext), 4},
    {"transmit_path_ext1", offsetof(odl_xd_login, transmit_path_ext) + 4, 4},
};
const field_def k_resp_fields[] = {
    ODL_LOGIN_FIELD(odl_xd_login_resp, status),
    ODL_LOGIN_FIELD(odl_xd_login_resp, version_major),
    ODL_LOGIN_FIELD(odl_xd_login_resp, version_minor),
    ODL_LOGIN_FIELD(odl_xd_login_resp, features),
    ODL_LOGIN_FIELD(odl_xd_login_resp, ring_size),
    ODL_LOGIN_FIELD(odl_xd_login_resp, frame_bytes),
    ODL_LOGIN_FIELD(odl_xd_login_resp, rings),
    {"reserved0", offsetof(odl_xd_login_resp, reserved), 4},
    {"reserved1", offsetof(odl_xd_login_resp, reserved) + 4, 4},
};
#undef ODL_LOGIN_FIELD

struct mode_def {
    const char* name;
    data_mode mode;
    std::size_t offset;  ///< header field (field modes)
    std::size_t size;    ///< 0: not a header field
};
#define ODL_HDR_FIELD(n, m, f) \
    {n, data_mode::m, offsetof(odl_frame_hdr, f), sizeof(static_cast<odl_frame_hdr*>(nullptr)->f)}
const mode_def k_modes[] = {
    {"flip", data_mode::flip, 0, 0},
    {"payload", data_mode::payload, 0, 0},
    ODL_HDR_FIELD("type", type, type),
    ODL_HDR_FIELD("flags", flags, flags),
    ODL_HDR_FIELD("stream", stream, stream),
    ODL_HDR_FIELD("len", len, len),
    ODL_HDR_FIELD("reserved", reserved, reserved0),
    ODL_HDR_FIELD("seq", seq, seq),
    ODL_HDR_FIELD("msg_len", msg_len, msg_len),
    ODL_HDR_FIELD("offset", offset, offset),
    {"truncate", data_mode::truncate, 0, 0},
    {"drop", data_mode::drop, 0, 0},
    {"duplicate", data_mode::duplicate, 0, 0},
};
#undef ODL_HDR_FIELD

struct split_mode_def {
    const char* name;
    split_mode mode;
};
const split_mode_def k_split_modes[] = {
    {"drop-header", split_mode::drop_header},
    {"drop-raw", split_mode::drop_raw},
    {"len", split_mode::len},
    {"raw-pdf", split_mode::raw_pdf},
};

const char* split_mode_name(split_mode m) {
    for (const auto& d : k_split_modes)
        if (d.mode == m) return d.name;
    return "?";
}

const mode_def& mode_of(data_mode m) {
    for (const auto& d : k_modes)
        if (d.mode == m) return d;
    return k_modes[0];
}

/// Out-of-range defaults: each makes odl_frame_decode() refuse a DATA
/// frame, except seq (the codec cannot know; the receiving engine must).
std::uint32_t default_value(data_mode m, std::uint32_t old) {
    switch (m) {
    case data_mode::type: return 0x3f;  // reserved control type
    case data_mode::flags: return 0xf0;  // unknown flag bits
    case data_mode::stream: return 0xffff;
    case data_mode::len: return 0xffff;  // > ODL_FRAME_MAX_PAYLOAD
    case data_mode::reserved: return 1;
    case data_mode::seq: return old + 1000;
    case data_mode::msg_len: return 0;  // offset + len > msg_len
    case data_mode::offset: return 0xffffffffu;
    default: return old;
    }
}

bool parse_u64(const std::string& s, std::uint64_t& out) {
    if (s.empty() || s[0] == '-' || s[0] == '+' || s[0] == ' ') return false;
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (errno || !end || *end) return false;
    out = v;
    return true;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (;;) {
        const std::size_t p = s.find(sep, start);
        out.push_back(s.substr(start, p == std::string::npos ? std::string::npos : p - start));
        if (p == std::string::npos) return out;
        start = p + 1;
    }
}

std::uint32_t le_load(const std::uint8_t* p, std::size_t n) {
    std::uint32_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint32_t{p[i]} << (8 * i);
    return v;
}

void le_store(std::uint8_t* p, std::size_t n, std::uint32_t v) {
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}

const char* host_name(int h) { return h == 0 ? "A" : h == 1 ? "B" : "?"; }

}  // namespace

std::optional<fault_spec> parse_fault(const std::string& text, std::string& err) {
    auto bad = [&](const std::string& why) -> std::optional<fault_spec> {
        err = fmt::format("bad fault '{}': {}", text, why);
        return std::nullopt;
    };
    const std::size_t colon = text.find(':');
    if (colon == std::string::npos)
        return bad("want login:..., login_resp:..., logout:drop, data:... or split:... (no ':')");
    fault_spec s;
    s.text = text;
    const std::string kind = text.substr(0, colon);
    const field_def* fields = nullptr;
    std::size_t nfields = 0;
    if (kind == "login") {
        s.target = fault_target::login;
        fields = k_login_fields;
        nfields = std::size(k_login_fields);
    } else if (kind == "login_resp") {
        s.target = fault_target::login_resp;
        fields = k_resp_fields;
        nfields = std::size(k_resp_fields);
    } else if (kind == "logout") {
        s.target = fault_target::logout;
    } else if (kind == "data") {
        s.target = fault_target::data;
    } else if (kind == "split") {
        s.target = fault_target::split;
    } else {
        return bad(fmt::format("unknown target '{}' (have: login, login_resp, logout, data, split)", kind));
    }
    auto parts = split(text.substr(colon + 1), ',');
    std::size_t first = 0;
    if (s.target == fault_target::data) {
        const std::string& m = parts[0];
        const mode_def* found = nullptr;
        for (const auto& d : k_modes)
            if (m == d.name) found = &d;
        if (!found)
            return bad(fmt::format("unknown data mode '{}' (have: flip, payload, type, flags, "
                                   "stream, len, reserved, seq, msg_len, offset, truncate, "
                                   "drop, duplicate)",
                                   m));
        s.mode = found->mode;
        first = 1;
    } else if (s.target == fault_target::logout) {
        if (parts[0] != "drop") return bad(fmt::format("unknown logout mode '{}' (have: drop)", parts[0]));
        first = 1;
    } else if (s.target == fault_target::split) {
        const split_mode_def* found = nullptr;
        for (const auto& d : k_split_modes)
            if (parts[0] == d.name) found = &d;
        if (!found)
            return bad(fmt::format("unknown split mode '{}' (have: drop-header, drop-raw, len, "
                                   "raw-pdf)",
                                   parts[0]));
        s.smode = found->mode;
        first = 1;
    }
    std::vector<std::string> keys_seen;
    for (std::size_t i = first; i < parts.size(); ++i) {
        const std::string& p = parts[i];
        const std::size_t eq = p.find('=');
        if (p.empty()) return bad("empty item");
        if (eq == std::string::npos || eq == 0)
            return bad(fmt::format("'{}' is not KEY=VALUE", p));
        const std::string key = p.substr(0, eq), val = p.substr(eq + 1);
        for (const auto& k : keys_seen)
            if (k == key) return bad(fmt::format("'{}' given twice", key));
        keys_seen.push_back(key);
        std::uint64_t n = 0;
        if (key == "from") {
            if (val == "A")
                s.from = 0;
            else if (val == "B")
                s.from = 1;
            else
                return bad(fmt::format("from={}: want A or B", val));
            continue;
        }
        if (key == "frames") {
            if (s.target != fault_target::data) return bad("frames= is for data faults");
            if (val != "data" && val != "all")
                return bad(fmt::format("frames={}: want data or all", val));
            s.all_frames = val == "all";
            continue;
        }
        if (!parse_u64(val, n)) return bad(fmt::format("{}={}: not a number", key, val));
        if (key == "count") {
            if (n == 0 || n > k_max_count)
                return bad(fmt::format("count={}: want 1..{}", val, k_max_count));
            s.count = n;
        } else if (key == "skip") {
            if (n > 1000000000ull) return bad(fmt::format("skip={}: want 0..1000000000", val));
            s.skip = n;
        } else if (key == "every") {
            if (n == 0 || n > k_max_count)
                return bad(fmt::format("every={}: want 1..{}", val, k_max_count));
            s.every = n;
        } else if (s.target == fault_target::split && key == "value") {
            if (s.smode != split_mode::len)
                return bad(fmt::format("value= does not apply to split:{}", split_mode_name(s.smode)));
            if (n > 0xffff) return bad(fmt::format("value={}: want 0..65535 for split:len", val));
            s.value = static_cast<std::uint32_t>(n);
        } else if (s.target == fault_target::data && key == "seed") {
            s.seed = n;
        } else if (s.target == fault_target::data && key == "bits") {
            if (s.mode != data_mode::flip) return bad("bits= is for data:flip");
            if (n == 0 || n > 8 * ODL_FRAME_HDR_BYTES)
                return bad(fmt::format("bits={}: want 1..{}", val, 8 * ODL_FRAME_HDR_BYTES));
            s.bits = static_cast<unsigned>(n);
        } else if (s.target == fault_target::data && key == "value") {
            const mode_def& d = mode_of(s.mode);
            if (d.size == 0 && s.mode != data_mode::truncate)
                return bad(fmt::format("value= does not apply to data:{}", d.name));
            const std::uint64_t max = s.mode == data_mode::truncate ? ODL_FRAME_MAX_BYTES - 1
                                      : d.size >= 4 ? 0xffffffffull
                                                    : (1ull << (8 * d.size)) - 1;
            const std::uint64_t min = s.mode == data_mode::truncate ? 1 : 0;
            if (n < min || n > max)
                return bad(fmt::format("value={}: want {}..{} for data:{}", val, min, max, d.name));
            s.value = static_cast<std::uint32_t>(n);
        } else if (fields) {
            const field_def* f = nullptr;
            for (std::size_t k = 0; k < nfields; ++k)
                if (key == fields[k].name) f = &fields[k];
            if (!f) {
                std::string have;
                for (std::size_t k = 0; k < nfields; ++k)
                    have += fmt::format("{}{}", k ? ", " : "", fields[k].name);
                return bad(fmt::format("unknown {} field '{}' (have: {}; and count, skip, every, from)",
                                       kind, key, have));
            }
            const std::uint64_t max = f->size >= 4 ? 0xffffffffull : (1ull << (8 * f->size)) - 1;
            if (n > max) return bad(fmt::format("{}={}: does not fit {} bytes", key, val, f->size));
            login_assign a;
            a.field = key;
            a.dword = static_cast<unsigned>(f->offset / 4);
            a.shift = static_cast<unsigned>(f->offset % 4) * 8;
            a.mask = static_cast<std::uint32_t>(max);
            a.value = static_cast<std::uint32_t>(n);
            s.assigns.push_back(a);
        } else {
            return bad(fmt::format("unknown key '{}' (have: count, skip, every, {}from)", key,
                                   s.target == fault_target::split    ? "value, "
                                   : s.target == fault_target::logout ? ""
                                                                      : "seed, value, bits, frames, "));
        }
    }
    if ((s.target == fault_target::login || s.target == fault_target::login_resp) &&
        s.assigns.empty())
        return bad("no FIELD=VALUE to rewrite");
    return s;
}

void fault_injector::add(fault_spec spec) {
    armed_spec a;
    a.rng.seed(spec.seed);
    a.spec = std::move(spec);
    m_specs.push_back(std::move(a));
}

std::size_t fault_injector::clear() {
    const std::size_t n = m_specs.size();
    m_specs.clear();
    return n;
}

bool fault_injector::armed() const {
    for (const auto& a : m_specs)
        if (a.done < a.spec.count) return true;
    return false;
}

std::string fault_injector::status() const {
    std::size_t armed = 0;
    for (const auto& a : m_specs)
        if (a.done < a.spec.count) ++armed;
    std::string s = fmt::format("injected {} armed {}", m_injected, armed);
    for (std::size_t i = 0; i < m_specs.size(); ++i)
        s += fmt::format("; #{} {} done {}/{}", i, m_specs[i].spec.text, m_specs[i].done,
                         m_specs[i].spec.count);
    return s;
}

std::string fault_injector::command(const std::string& cmd) {
    if (cmd.rfind("add ", 0) == 0) {
        std::string err;
        auto spec = parse_fault(cmd.substr(4), err);
        if (!spec) return "error: " + err;
        add(std::move(*spec));
        return fmt::format("ok armed #{}", m_specs.size() - 1);
    }
    if (cmd == "clear") return fmt::format("ok cleared {}", clear());
    if (cmd == "status") return "ok " + status();
    return "error: unknown fault command (have: fault add SPEC, fault clear, fault status)";
}

bool fault_injector::fire(armed_spec& a) {
    if (a.done >= a.spec.count) return false;
    const std::uint64_t idx = a.seen++;
    if (idx < a.spec.skip) return false;
    return (idx - a.spec.skip) % a.spec.every == 0;
}

void fault_injector::note(const armed_spec& a, int from, const std::string& what) {
    ++m_injected;
    if (m_log)
        m_log(fmt::format("fault {} [{}] {}/{} {}->{}: {}", m_injected, a.spec.text, a.done,
                          a.spec.count, host_name(from), host_name(1 - from), what));
}

tap_verdict fault_injector::apply(int from, frame& f) {
    tap_verdict v = tap_verdict::pass;
    for (auto& a : m_specs) {
        if (a.done >= a.spec.count) continue;
        if (a.spec.from >= 0 && a.spec.from != from) continue;
        if (a.spec.target == fault_target::data || a.spec.target == fault_target::split) {
            const tap_verdict d = a.spec.target == fault_target::data ? apply_data(a, from, f)
                                                                      : apply_split(a, from, f);
            if (d != tap_verdict::pass) v = d;
            if (v == tap_verdict::drop) return v;
        } else if (a.spec.target == fault_target::logout) {
            v = apply_logout(a, from, f);
            if (v == tap_verdict::drop) return v;
        } else {
            apply_login(a, from, f);
        }
    }
    return v;
}

namespace {

// The dwords of @f when it is an odl_tb5 XDomain packet (good CRC, the
// OdinLink UUID) of @type and exactly @size bytes (struct size).
std::optional<std::vector<std::uint32_t>> odl_xd_packet(const frame& f, std::uint32_t type,
                                                        std::size_t size) {
    if (!f.control || f.bytes.size() != size + ODL_USB4_CTL_CRC_BYTES) return std::nullopt;
    if (f.eof != ODL_USB4_PDF_XDOMAIN_REQ && f.eof != ODL_USB4_PDF_XDOMAIN_RESP)
        return std::nullopt;
    bool crc_ok = false;
    auto dw = ctl::decode(f.bytes, &crc_ok);
    if (!dw || !crc_ok) return std::nullopt;
    // Linux sends each CPU-order (little-endian, x86 guests) dword of the
    // struct big-endian: the decoded dwords are the struct's dwords.
    const std::size_t uuid_dw = offsetof(odl_xd_hdr, uuid) / 4;
    for (std::size_t i = 0; i < 4; ++i)
        if ((*dw)[uuid_dw + i] != le_load(&odl_service_uuid[4 * i], 4)) return std::nullopt;
    if ((*dw)[offsetof(odl_xd_hdr, type) / 4] != type) return std::nullopt;
    if (((*dw)[offsetof(odl_xd_hdr, length_sn) / 4] & ODL_XD_LENGTH_MASK) != (size - 12) / 4)
        return std::nullopt;
    return dw;
}

}  // namespace

tap_verdict fault_injector::apply_logout(armed_spec& a, int from, frame& f) {
    if (!odl_xd_packet(f, ODL_XD_LOGOUT, sizeof(odl_xd_hdr)) || !fire(a)) return tap_verdict::pass;
    ++a.done;
    note(a, from, "LOGOUT dropped");
    return tap_verdict::drop;
}

bool fault_injector::apply_login(armed_spec& a, int from, frame& f) {
    const bool req = a.spec.target == fault_target::login;
    const std::size_t size = req ? sizeof(odl_xd_login) : sizeof(odl_xd_login_resp);
    auto dw = odl_xd_packet(f, req ? ODL_XD_LOGIN : ODL_XD_LOGIN_RESP, size);
    if (!dw || !fire(a)) return false;
    std::string what = req ? "LOGIN" : "LOGIN_RESP";
    for (const auto& as : a.spec.assigns) {
        std::uint32_t& d = (*dw)[as.dword];
        const std::uint32_t old = (d >> as.shift) & as.mask;
        d = (d & ~(as.mask << as.shift)) | ((as.value & as.mask) << as.shift);
        what += fmt::format(" {} {:#x} -> {:#x}", as.field, old, as.value);
    }
    f.bytes = ctl::encode(*dw);  // fresh CRC: the receiving CM takes it
    ++a.done;
    note(a, from, what + " (CRC recomputed)");
    return true;
}

tap_verdict fault_injector::apply_data(armed_spec& a, int from, frame& f) {
    const data_mode m = a.spec.mode;
    // Only whole, valid OdinLink frames (odl_tb5's PDFs, a header the shared
    // codec takes): not thunderbolt_net's frames, which use the same PDFs,
    // nor anything already damaged.
    if (f.control || f.sof != ODL_XD_PDF_SOF || f.eof != ODL_XD_PDF_EOF ||
        f.bytes.size() < ODL_FRAME_HDR_BYTES || f.bytes.size() != f.len)
        return tap_verdict::pass;
    odl_frame_info fi{};
    if (odl_frame_decode(f.bytes.data(), f.bytes.size(), ODL_MAX_STREAMS, &fi) != ODL_FRAME_OK)
        return tap_verdict::pass;
    if (!a.spec.all_frames && fi.type != ODL_FRAME_DATA) return tap_verdict::pass;
    if (m == data_mode::payload && f.bytes.size() <= ODL_FRAME_HDR_BYTES) return tap_verdict::pass;
    if (m == data_mode::truncate && (f.len < 2 || (a.spec.value && *a.spec.value >= f.len)))
        return tap_verdict::pass;
    if (!fire(a)) return tap_verdict::pass;
    const std::uint8_t* h = f.bytes.data();
    std::string what = fmt::format(
        "frame type {:#x} stream {} seq {} len {} ({} bytes):", h[0],
        le_load(h + offsetof(odl_frame_hdr, stream), 2), le_load(h + offsetof(odl_frame_hdr, seq), 4),
        le_load(h + offsetof(odl_frame_hdr, len), 2), f.len);
    tap_verdict v = tap_verdict::pass;
    switch (m) {
    case data_mode::flip: {
        std::vector<unsigned> done;
        while (done.size() < a.spec.bits) {
            const unsigned bit = static_cast<unsigned>(a.rng() % (8 * ODL_FRAME_HDR_BYTES));
            bool dup = false;
            for (unsigned b : done) dup = dup || b == bit;
            if (dup) continue;
            done.push_back(bit);
            f.bytes[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
            what += fmt::format(" header bit {} (byte {}) flipped", bit, bit / 8);
        }
        break;
    }
    case data_mode::payload: {
        const std::uint64_t bits = 8ull * (f.bytes.size() - ODL_FRAME_HDR_BYTES);
        const std::uint64_t bit = 8ull * ODL_FRAME_HDR_BYTES + a.rng() % bits;
        f.bytes[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
        what += fmt::format(" payload bit {} (frame byte {}) flipped", bit, bit / 8);
        break;
    }
    case data_mode::truncate: {
        const std::uint32_t n =
            a.spec.value ? *a.spec.value
                         : 1 + static_cast<std::uint32_t>(a.rng() % (f.len - 1));
        what += fmt::format(" truncated to {} bytes", n);
        f.len = n;
        f.bytes.resize(n);
        break;
    }
    case data_mode::drop:
        what += " dropped";
        v = tap_verdict::drop;
        break;
    case data_mode::duplicate:
        what += " duplicated";
        v = tap_verdict::duplicate;
        break;
    default: {
        const mode_def& d = mode_of(m);
        std::uint8_t* p = f.bytes.data() + d.offset;
        const std::uint32_t old = le_load(p, d.size);
        std::uint32_t val = a.spec.value ? *a.spec.value : default_value(m, old);
        if (d.size < 4) val &= (1u << (8 * d.size)) - 1;
        le_store(p, d.size, val);
        what += fmt::format(" {} {:#x} -> {:#x}", d.name, old, val);
        break;
    }
    }
    ++a.done;
    note(a, from, what);
    return v;
}

tap_verdict fault_injector::apply_split(armed_spec& a, int from, frame& f) {
    if (f.control || f.bytes.size() != f.len) return tap_verdict::pass;
    // Frames of one ring from one host reach the cable in ring order, each
    // ring on its own HopID: "next frame on the same ring" is the next one
    // with this key.
    bool& after_hdr = a.split_hdr[static_cast<std::uint32_t>(from) << 16 | f.hop];
    const bool raw = after_hdr && f.sof == ODL_XD_PDF_RAW_SOF && f.eof == ODL_XD_PDF_RAW_EOF &&
                     f.len >= 1;
    odl_frame_info fi{};
    const bool hdr = f.sof == ODL_XD_PDF_SOF && f.eof == ODL_XD_PDF_EOF &&
                     f.len == ODL_FRAME_HDR_BYTES &&
                     odl_frame_decode_opt(f.bytes.data(), f.bytes.size(), ODL_MAX_STREAMS,
                                          ODL_FRAME_DEC_SPLIT, &fi) == ODL_FRAME_OK &&
                     fi.type == ODL_FRAME_DATA && (fi.flags & ODL_FRAME_F_SPLIT) && fi.len > 0;
    after_hdr = hdr;
    const split_mode m = a.spec.smode;
    const bool on_hdr = m == split_mode::drop_header || m == split_mode::len;
    if (!(on_hdr ? hdr : raw) || !fire(a)) return tap_verdict::pass;
    std::string what;
    tap_verdict v = tap_verdict::pass;
    if (on_hdr) {
        what = fmt::format("split header stream {} seq {} len {}:", fi.stream, fi.seq, fi.len);
    } else {
        what = fmt::format("split raw frame of {} bytes on HopID {}:", f.len, f.hop);
    }
    switch (m) {
    case split_mode::drop_header:
        what += " header dropped";
        v = tap_verdict::drop;
        // Its raw frame is now nobody's payload: not this spec's either.
        after_hdr = false;
        break;
    case split_mode::drop_raw:
        what += " dropped";
        v = tap_verdict::drop;
        break;
    case split_mode::len: {
        const std::uint32_t val = a.spec.value ? *a.spec.value : fi.len > 1 ? fi.len - 1 : 2;
        le_store(f.bytes.data() + offsetof(odl_frame_hdr, len), 2, val);
        what += fmt::format(" len {:#x} -> {:#x}", fi.len, val);
        // Default on a message's last frame: msg_len moves with len, so the
        // header stays valid for the codec and only the receiver's join can
        // see that it does not match its raw frame.
        if (!a.spec.value && (fi.flags & ODL_FRAME_F_EOM)) {
            const std::uint32_t ml = fi.msg_len + val - fi.len;
            le_store(f.bytes.data() + offsetof(odl_frame_hdr, msg_len), 4, ml);
            what += fmt::format(", msg_len {:#x} -> {:#x}", fi.msg_len, ml);
        }
        break;
    }
    case split_mode::raw_pdf:
        what += fmt::format(" PDFs {}/{} -> {}/{}", f.sof, f.eof, ODL_XD_PDF_SOF, ODL_XD_PDF_EOF);
        f.sof = ODL_XD_PDF_SOF;
        f.eof = ODL_XD_PDF_EOF;
        break;
    }
    ++a.done;
    note(a, from, what);
    return v;
}

}  // namespace odl::model::linkd
