// SPDX-License-Identifier: MIT
#include "status_page.h"

#include <sys/random.h>

#include <chrono>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "host_json.h"
#include "host_view.h"
#include "plugin_stats.h"

namespace odl::daemon {

namespace {

/// @s with its %XX escapes (and '+') decoded; "\0" stands for a bad escape.
std::string url_decode(const std::string& s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '+') {
            out += ' ';
        } else if (s[i] != '%') {
            out += s[i];
        } else {
            const auto hex = [](char c) {
                return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            };
            const int hi = i + 2 < s.size() ? hex(s[i + 1]) : -1, lo = i + 2 < s.size() ? hex(s[i + 2]) : -1;
            if (hi < 0 || lo < 0) return std::string(1, '\0');
            out += char(hi * 16 + lo);
            i += 2;
        }
    }
    return out;
}

/// The value of @key in the query of @target, decoded ("" when absent).
std::string query_value(const std::string& target, const std::string& key) {
    const auto q = target.find('?');
    if (q == std::string::npos) return "";
    std::size_t i = q + 1;
    while (i < target.size()) {
        const auto amp = target.find('&', i);
        const std::string kv = target.substr(i, amp == std::string::npos ? std::string::npos : amp - i);
        const auto eq = kv.find('=');
        if (eq != std::string::npos && kv.substr(0, eq) == key) return url_decode(kv.substr(eq + 1));
        if (amp == std::string::npos) break;
        i = amp + 1;
    }
    return "";
}

/// Equal without an early exit: the time taken says nothing of the token.
bool same(const std::string& a, const std::string& b) {
    if (a.size() != b.size()) return false;
    unsigned char d = 0;
    for (std::size_t i = 0; i < a.size(); ++i) d |= static_cast<unsigned char>(a[i] ^ b[i]);
    return d == 0;
}

}  // namespace

std::string status_tokens::issue(uid_t uid) {
    std::lock_guard<std::mutex> g(m_mu);
    auto& t = m_by_uid[uid];
    if (t.empty()) {
        unsigned char raw[16];
        if (getrandom(raw, sizeof(raw), 0) != ssize_t(sizeof(raw)))
            throw std::runtime_error("no random bytes for a status page token");
        for (unsigned char c : raw) t += fmt::format("{:02x}", c);
    }
    return t;
}

std::optional<uid_t> status_tokens::uid_of(const std::string& token) const {
    if (token.size() != 32) return std::nullopt;
    std::lock_guard<std::mutex> g(m_mu);
    std::optional<uid_t> who;
    for (const auto& [uid, t] : m_by_uid)
        if (same(t, token)) who = uid;  // no early exit, as in same()
    return who;
}

namespace {

http_server::reply text(unsigned status, std::string body) {
    return {status, "text/plain; charset=utf-8", std::move(body)};
}

/// POST /api/test?token=&device=odl_tb5_N&test=latency|bandwidth: started
/// (202) or why not. The outcome shows in /api/state as the device's test.
http_server::reply start_test(const std::string& target, uid_t uid, const status_page_context& ctx) {
    if (!ctx.start_test) return text(501, "this daemon runs no tests\n");
    if (!may_act(uid, ctx.act_group))
        return text(403, fmt::format("running a test needs root or membership of the group {} (uid {} has neither)\n",
                                     ctx.act_group, uid));
    const std::string device = query_value(target, "device"), test = query_value(target, "test");
    if (device.empty() || test.empty()) return text(400, "want device=odl_tb5_N and test=latency|bandwidth\n");
    const auto a = ctx.start_test(device, test);
    if (a.status >= 300) return text(a.status, a.error + "\n");
    return {202, "application/json", nlohmann::json{{"device", device}, {"test", test}, {"state", "running"}}.dump()};
}

using file_act = std::function<page_requests::answer(const std::string& device, const std::string& path)>;

/// A request on the peer's files at @path of the query: @act (empty: 501
/// saying @off), allowed to @doing's users; @want_path: a path is required.
http_server::reply start_file_request(const std::string& target, uid_t uid, const status_page_context& ctx,
                                      const file_act& act, const char* off, const char* doing, const char* want,
                                      bool want_path) {
    if (!act) return text(501, off);
    if (!may_act(uid, ctx.act_group))
        return text(403, fmt::format("{} the peer's files needs root or membership of the group {} (uid {} "
                                     "has neither)\n",
                                     doing, ctx.act_group, uid));
    const std::string device = query_value(target, "device"), path = query_value(target, "path");
    if (device.empty() || (want_path && path.empty())) return text(400, want);
    if (path.find('\0') != std::string::npos) return text(400, "path: a bad %-escape\n");
    const auto a = act(device, path);
    if (a.status >= 300) return text(a.status, a.error + "\n");
    return {202, "application/json", nlohmann::json{{"device", device}, {"path", path}, {"state", "running"}}.dump()};
}

/// POST /api/files?token=&device=odl_tb5_N&path=P: a listing of the peer's
/// folder P started (202); it shows in /api/state as the device's "files".
http_server::reply start_listing(const std::string& target, uid_t uid, const status_page_context& ctx) {
    return start_file_request(target, uid, ctx, ctx.browse, "this daemon browses no files\n", "browsing",
                              "want device=odl_tb5_N (and path=, a folder of the peer's)\n", false);
}

/// POST /api/fetch?token=&device=odl_tb5_N&path=P: the peer's file P
/// fetched into the daemon's --fetch-to folder (202); it shows in
/// /api/state under "fetches".
http_server::reply start_fetch(const std::string& target, uid_t uid, const status_page_context& ctx) {
    return start_file_request(target, uid, ctx, ctx.fetch, "this daemon fetches no files (odl-daemon --fetch-to DIR)\n",
                              "fetching", "want device=odl_tb5_N and path=, a file of the peer's\n", true);
}

}  // namespace

http_server::reply status_request(const http_server::request& req, const status_page_context& ctx) {
    const std::string& target = req.target;
    const std::string path = target.substr(0, target.find('?'));
    const bool page = path == "/" || path == "/api/state", test = path == "/api/test", files = path == "/api/files",
               fetch = path == "/api/fetch";
    if (!page && !test && !files && !fetch) return text(404, "no such page\n");
    const auto uid = ctx.tokens.uid_of(query_value(target, "token"));
    if (!uid)
        return text(403, "this page needs your own address with its token: busctl call org.odinlink.Daemon1 "
                         "/org/odinlink/Daemon1 org.odinlink.Daemon1 StatusPage\n");
    if ((test || files || fetch) != req.post)
        return text(405, page ? "only GET and HEAD here\n" : path + ": only POST\n");
    if (test) return start_test(target, *uid, ctx);
    if (files) return start_listing(target, *uid, ctx);
    if (fetch) return start_fetch(target, *uid, ctx);
    if (path == "/") return {200, "text/html; charset=utf-8", kStatusPageHtml};
    nlohmann::json j = host::link_json(host::read_host_view(ctx.root));
    j["version"] = ctx.version;
    j["tests"] = nlohmann::json::object();
    for (const auto& [device, rec] : ctx.tests.all()) j["tests"][device] = nlohmann::json::parse(rec, nullptr, false);
    j["plugin"] = std::move(host::plugin_stats_of_host(ctx.root, ctx.plugin_dirs, true)["processes"]);  // running ones
    // What the page offers this user: the test buttons, or why not.
    const bool member = may_act(*uid, ctx.act_group);
    j["may_run_tests"] = bool(ctx.start_test) && member;
    j["may_browse"] = bool(ctx.browse) && member;
    // The peer's file names only for those who may browse them.
    j["files"] = nlohmann::json::object();
    if (ctx.listings && member)
        for (const auto& [device, rec] : ctx.listings->all())
            j["files"][device] = nlohmann::json::parse(rec, nullptr, false);
    j["may_fetch"] = bool(ctx.fetch) && member;
    j["fetch_to"] = ctx.fetch ? ctx.fetch_dir : "";
    j["fetches"] = nlohmann::json::object();
    if (ctx.fetches && member)
        for (const auto& [device, rec] : ctx.fetches->all())
            j["fetches"][device] = nlohmann::json::parse(rec, nullptr, false);
    j["act_group"] = ctx.act_group;
    j["unix_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    return {200, "application/json", j.dump()};
}

}  // namespace odl::daemon
