// SPDX-License-Identifier: MIT
#include "pair_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace odl::files {

namespace fs = std::filesystem;
using nlohmann::json;

std::string default_keys_dir() {
    if (const char* d = std::getenv("ODL_KEYS_DIR"); d && *d) return d;
    if (geteuid() == 0) return "/etc/odl/pairs";
    if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/odl/pairs";
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.config/odl/pairs";
}

namespace {

pair_record parse(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw pair_store_error(fmt::format("{}: cannot read: {}", path, std::strerror(errno)));
    pair_record r;
    try {
        const json j = json::parse(in);
        if (!unhex(j.at("id").get<std::string>(), r.id.data(), r.id.size()))
            throw pair_store_error(fmt::format("{}: 'id' is not 32 hex digits", path));
        if (!unhex(j.at("key").get<std::string>(), r.key.data(), r.key.size()))
            throw pair_store_error(fmt::format("{}: 'key' is not 64 hex digits", path));
        r.peer_name = j.at("peer").get<std::string>();
        r.local_name = j.value("local", "");
        r.created = j.value("created", "");
    } catch (const json::exception& e) {
        throw pair_store_error(fmt::format("{}: not a pair record: {}", path, e.what()));
    }
    return r;
}

}  // namespace

std::string pair_store::save(const pair_record& r) const {
    std::error_code ec;
    fs::create_directories(m_dir, ec);
    if (ec) throw pair_store_error(fmt::format("{}: cannot create: {}", m_dir, ec.message()));
    if (::chmod(m_dir.c_str(), 0700) != 0)
        throw pair_store_error(fmt::format("{}: chmod: {}", m_dir, std::strerror(errno)));
    const json j = {{"id", hex(r.id)},         {"key", hex(r.key)},     {"peer", r.peer_name},
                    {"local", r.local_name},   {"created", r.created}};
    const std::string path = m_dir + "/" + hex(r.id) + ".json";
    const std::string tmp = path + ".tmp";
    const std::string text = j.dump(2) + "\n";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw pair_store_error(fmt::format("{}: cannot create: {}", tmp, std::strerror(errno)));
    const bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size()) && ::fsync(fd) == 0;
    const int err = errno;
    ::close(fd);
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
        ::unlink(tmp.c_str());
        throw pair_store_error(fmt::format("{}: cannot write: {}", path, std::strerror(ok ? errno : err)));
    }
    return path;
}

std::vector<pair_record> pair_store::all() const {
    std::vector<pair_record> out;
    std::error_code ec;
    if (!fs::is_directory(m_dir, ec)) return out;
    for (const auto& e : fs::directory_iterator(m_dir, ec)) {
        const auto p = e.path();
        if (p.extension() != ".json") continue;
        out.push_back(parse(p.string()));
    }
    if (ec) throw pair_store_error(fmt::format("{}: cannot list: {}", m_dir, ec.message()));
    return out;
}

std::optional<pair_record> pair_store::find(const pair_id& id) const {
    const std::string path = m_dir + "/" + hex(id) + ".json";
    if (::access(path.c_str(), F_OK) != 0) return std::nullopt;
    pair_record r = parse(path);
    if (r.id != id) throw pair_store_error(fmt::format("{}: its id differs from its file name", path));
    return r;
}

pair_record pair_store::choose(const std::string& peer_name) const {
    const auto records = all();
    std::vector<const pair_record*> hits;
    for (const auto& r : records)
        if (peer_name.empty() || r.peer_name == peer_name) hits.push_back(&r);
    if (hits.size() == 1) return *hits.front();
    std::string names;
    for (const auto& r : records) names += (names.empty() ? "" : ", ") + r.peer_name;
    if (hits.empty() && records.empty())
        throw pair_store_error(fmt::format("no paired peer in {} (run `odl pair` on both hosts first)", m_dir));
    if (hits.empty())
        throw pair_store_error(fmt::format("no pairing with a peer named '{}' in {} (have: {})", peer_name, m_dir, names));
    throw pair_store_error(fmt::format("{} pairings in {}: name one with --peer ({})", hits.size(), m_dir, names));
}

}  // namespace odl::files
