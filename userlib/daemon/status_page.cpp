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

/// The value of @key in the query of @target ("" when absent).
std::string query_value(const std::string& target, const std::string& key) {
    const auto q = target.find('?');
    if (q == std::string::npos) return "";
    std::size_t i = q + 1;
    while (i < target.size()) {
        const auto amp = target.find('&', i);
        const std::string kv = target.substr(i, amp == std::string::npos ? std::string::npos : amp - i);
        const auto eq = kv.find('=');
        if (eq != std::string::npos && kv.substr(0, eq) == key) return kv.substr(eq + 1);
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

bool status_tokens::valid(const std::string& token) const {
    if (token.size() != 32) return false;
    std::lock_guard<std::mutex> g(m_mu);
    bool ok = false;
    for (const auto& [uid, t] : m_by_uid) ok |= same(t, token);
    return ok;
}

http_server::reply status_request(const std::string& target, const status_tokens& tokens, const std::string& root,
                                  const std::string& version, const test_records& tests,
                                  const std::vector<std::string>& plugin_dirs) {
    const std::string path = target.substr(0, target.find('?'));
    if (path != "/" && path != "/api/state") return {404, "text/plain; charset=utf-8", "no such page\n"};
    if (!tokens.valid(query_value(target, "token")))
        return {403, "text/plain; charset=utf-8",
                "this page needs your own address with its token: busctl call org.odinlink.Daemon1 "
                "/org/odinlink/Daemon1 org.odinlink.Daemon1 StatusPage\n"};
    if (path == "/") return {200, "text/html; charset=utf-8", kStatusPageHtml};
    nlohmann::json j = host::link_json(host::read_host_view(root));
    j["version"] = version;
    j["tests"] = nlohmann::json::object();
    for (const auto& [device, rec] : tests.all()) j["tests"][device] = nlohmann::json::parse(rec, nullptr, false);
    j["plugin"] = std::move(host::plugin_stats_of_host(root, plugin_dirs, true)["processes"]);  // running ones
    j["unix_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    return {200, "application/json", j.dump()};
}

}  // namespace odl::daemon
