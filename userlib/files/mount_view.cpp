// SPDX-License-Identifier: MIT
#include "mount_view.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>

#include <fmt/format.h>

#include "clock.h"
#include "crypto.h"

namespace odl::files {

namespace {


}  // namespace

mount_view::mount_view(file_client& client, std::string remote_root, std::string cache_dir, uint64_t ttl_ns)
    : m_client(client), m_root(std::move(remote_root)), m_cache(std::move(cache_dir)), m_ttl_ns(ttl_ns) {}

void mount_view::refresh() {
    if (m_listed && now_ns() - m_listed_at < m_ttl_ns) return;
    const auto entries = m_client.list(m_root);
    m_nodes.clear();
    for (const auto& e : entries) m_nodes[e.path] = node{e.dir, e.size, e.mtime_ns, e.mode};
    m_listed = true;
    m_listed_at = now_ns();
    m_listings++;
}

std::optional<mount_view::node> mount_view::stat(const std::string& rel) {
    refresh();
    if (rel.empty()) return node{true, 0, 0, 0755};
    const auto it = m_nodes.find(rel);
    if (it == m_nodes.end()) return std::nullopt;
    return it->second;
}

std::vector<std::string> mount_view::children(const std::string& rel) {
    refresh();
    std::vector<std::string> out;
    const std::string prefix = rel.empty() ? "" : rel + "/";
    for (auto it = m_nodes.lower_bound(prefix); it != m_nodes.end(); ++it) {
        if (it->first.compare(0, prefix.size(), prefix) != 0) break;
        const std::string rest = it->first.substr(prefix.size());
        if (!rest.empty() && rest.find('/') == std::string::npos) out.push_back(rest);
    }
    return out;
}

std::string mount_view::fetch(const std::string& rel) {
    const auto n = stat(rel);
    if (!n) throw std::invalid_argument(fmt::format("{}: no such file", rel));
    if (n->dir) throw std::invalid_argument(fmt::format("{}: a folder", rel));
    // One cached copy per version (path, size, mtime): a newer version on
    // the peer is fetched afresh, an unchanged one read again from here.
    sha256 h;
    const std::string key = fmt::format("{}\n{}\n{}", rel, n->size, n->mtime_ns);
    h.update(key.data(), key.size());
    const digest d = h.finish();
    const std::string local = m_cache + "/" + hex(d.data(), 16);
    if (::access(local.c_str(), R_OK) == 0) return local;
    m_client.fetch(m_root.empty() ? rel : m_root + "/" + rel, local);
    m_fetches++;
    // The peer may have sent a newer version than the listing named: show
    // what was fetched.
    struct stat st{};
    if (::stat(local.c_str(), &st) == 0) {
        node& cur = m_nodes[rel];
        cur.size = uint64_t(st.st_size);
        cur.mtime_ns = uint64_t(st.st_mtim.tv_sec) * 1'000'000'000ull + uint64_t(st.st_mtim.tv_nsec);
    }
    return local;
}

}  // namespace odl::files
