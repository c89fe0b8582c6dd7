// SPDX-License-Identifier: MIT
#include "odl/model/linkd/det_control.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <iterator>
#include <sstream>

#include "odl/wire/linkd.h"

namespace odl::model::linkd {

std::uint32_t det_control::mbox_read(unsigned host, std::uint64_t off, unsigned size) const {
    if (host >= m_hosts || size == 0 || size > 4 || off >= ODL_LINKD_MBOX_BYTES || size > ODL_LINKD_MBOX_BYTES - off)
        return 0;
    const mailbox& b = m_box[host];
    if (off >= ODL_LINKD_MBOX_CMD) {
        // The command's bytes (any width, little-endian); zero past its end.
        std::uint32_t v = 0;
        for (unsigned i = 0; i < size; i++) {
            const std::uint64_t at = off - ODL_LINKD_MBOX_CMD + i;
            if (at < b.cmd.size()) v |= std::uint32_t(static_cast<unsigned char>(b.cmd[at])) << (8 * i);
        }
        return v;
    }
    std::uint32_t reg = 0;
    switch (off & ~std::uint64_t{3}) {
    case ODL_LINKD_MBOX_MAGIC: reg = ODL_LINKD_MBOX_MAGIC_VALUE; break;
    case ODL_LINKD_MBOX_CMD_SEQ: reg = b.seq; break;
    case ODL_LINKD_MBOX_CMD_LEN: reg = static_cast<std::uint32_t>(b.cmd.size()); break;
    default: break;  // write-only and reserved registers read 0
    }
    const unsigned shift = 8 * static_cast<unsigned>(off & 3);
    const std::uint32_t mask = size >= 4 ? 0xffffffffu : (1u << (8 * size)) - 1;
    return (reg >> shift) & mask;
}

std::string det_control::mbox_write(unsigned host, std::uint64_t off, unsigned size, std::uint32_t value) {
    if (host >= m_hosts) return "no such host";
    if (size != 4 || (off & 3)) return fmt::format("mailbox write of {} bytes at 0x{:x}: registers take 32 bits", size, off);
    mailbox& b = m_box[host];
    switch (off) {
    case ODL_LINKD_MBOX_READY: b.ready = value != 0; return "";
    case ODL_LINKD_MBOX_DONE_RC: b.done_rc = value; return "";
    case ODL_LINKD_MBOX_DONE_SEQ:
        if (value != b.seq) return fmt::format("agent finished command {}, but the latest is {}", value, b.seq);
        b.done_seq = value;
        return "";
    default: return fmt::format("mailbox write at 0x{:x}: not a writable register", off);
    }
}

bool det_control::controlled() const {
    if (m_hosts == 0) return false;
    for (const auto& b : m_box)
        if (!b.ready) return false;
    return true;
}

bool det_control::may_run(std::uint64_t now_ps) const {
    if (!controlled()) return true;
    if (!m_req) return false;
    // An exec whose command is done, or a request whose time is up, is
    // answered (finished()) before the run takes another window.
    if (m_req->host >= 0) {
        const mailbox& b = m_box[static_cast<unsigned>(m_req->host)];
        if (b.done_seq == m_req->seq || b.gone) return false;
    }
    return now_ps < m_req->until_ps;
}

std::uint64_t det_control::limit() const {
    return controlled() && m_req ? m_req->until_ps : UINT64_MAX;
}

std::string det_control::exec(unsigned host, std::uint64_t timeout_ps, const std::string& cmd, std::uint64_t now_ps) {
    if (!controlled()) return "the guests' agents are not all ready yet (the run is booting)";
    if (m_req) return "busy: another request is running";
    if (host >= m_hosts) return fmt::format("no host {} (hosts 0 to {})", host, m_hosts - 1);
    if (timeout_ps == 0) return "a timeout of 0";
    if (cmd.empty()) return "an empty command";
    if (cmd.size() > ODL_LINKD_MBOX_CMD_MAX)
        return fmt::format("a command of {} bytes (the mailbox takes {})", cmd.size(), ODL_LINKD_MBOX_CMD_MAX);
    if (cmd.find('\0') != std::string::npos) return "a command with a NUL byte";
    mailbox& b = m_box[host];
    if (b.gone) return fmt::format("host {} left the run", host);
    if (b.done_seq != b.seq)
        return fmt::format("host {} is still running command {} (it timed out); let it finish with advance", host,
                           b.seq);
    b.cmd = cmd;
    b.seq++;
    m_req = request{static_cast<int>(host), b.seq, now_ps + timeout_ps, now_ps};
    return "";
}

std::string det_control::advance(std::uint64_t ps, std::uint64_t now_ps) {
    if (!controlled()) return "the guests' agents are not all ready yet (the run is booting)";
    if (m_req) return "busy: another request is running";
    if (ps == 0) return "advance by 0";
    m_req = request{-1, 0, now_ps + ps, now_ps};
    return "";
}

std::optional<std::string> det_control::finished(std::uint64_t now_ps) {
    if (!m_req) return std::nullopt;
    const request r = *m_req;
    if (r.host >= 0) {
        const mailbox& b = m_box[static_cast<unsigned>(r.host)];
        if (b.gone && b.done_seq != r.seq) {
            m_req.reset();
            return fmt::format("error: host {} left the run while its command {} ran (at {} ns)", r.host, r.seq,
                               now_ps / 1000);
        }
        if (b.done_seq == r.seq) {
            m_req.reset();
            return fmt::format("ok rc {} seq {} at {} ns", b.done_rc, r.seq, now_ps / 1000);
        }
        if (now_ps < r.until_ps) return std::nullopt;
        m_req.reset();
        return fmt::format("error: timeout: command {} of host {} still running after {} ms of simulated time (at {} ns)",
                           r.seq, r.host, (r.until_ps - r.started_ps) / 1'000'000'000, now_ps / 1000);
    }
    if (now_ps < r.until_ps) return std::nullopt;
    m_req.reset();
    return fmt::format("ok at {} ns", now_ps / 1000);
}

void det_control::host_left(unsigned host) {
    if (host < m_hosts) m_box[host].gone = true;
}

std::string det_control::ready_hosts() const {
    std::string s;
    for (unsigned h = 0; h < m_hosts; h++)
        if (m_box[h].ready) s += fmt::format("{}{}", s.empty() ? "" : ",", h);
    return s.empty() ? "-" : s;
}

std::string cable_event_word(const std::string& event) {
    std::istringstream words(event);
    std::string w;
    words >> w;
    if (!w.empty() && std::isdigit(static_cast<unsigned char>(w[0]))) words >> w;  // cable number
    return w;
}

bool known_cable_event(const std::string& event) {
    const std::string w = cable_event_word(event);
    static const char* const known[] = {"plug", "unplug", "retrain", "degrade", "ber"};
    return std::any_of(std::begin(known), std::end(known), [&](const char* k) { return w == k; });
}

}  // namespace odl::model::linkd
