// SPDX-License-Identifier: MIT
#include "folder_sync.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "clock.h"
#include "crypto.h"
#include "safe_dir.h"
#include "transfer.h"

namespace odl::files {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {


}  // namespace

folder_sync::folder_sync(file_client& client, std::string local, std::string remote, std::string peer, note_fn note)
    : m_client(client), m_local(std::move(local)), m_remote(std::move(remote)), m_peer(std::move(peer)),
      m_note(std::move(note)) {
    for (char& c : m_peer)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
    load_state();
}

std::string folder_sync::remote_path(const std::string& rel) const {
    return m_remote.empty() ? rel : m_remote + "/" + rel;
}

void folder_sync::load_state() {
    const std::string path = m_local + "/" + kSyncDir + "/state.json";
    std::ifstream in(path);
    if (!in) return;  // the first pass: nothing synced yet
    try {
        const json j = json::parse(in);
        if (j.at("remote").get<std::string>() != m_remote)
            throw copy_error(fmt::format("{} was synced with peer:{}, not peer:{} (remove {}/{} to start over)", m_local,
                                         j.at("remote").get<std::string>(), m_remote, m_local, kSyncDir));
        for (const auto& [k, v] : j.at("files").items()) m_base[k] = version{v.at(0).get<uint64_t>(), v.at(1).get<uint64_t>()};
    } catch (const json::exception& e) {
        throw copy_error(fmt::format("{}: unreadable sync state: {}", path, e.what()));
    }
}

void folder_sync::save_state() const {
    const std::string dir = m_local + "/" + kSyncDir;
    fs::create_directories(dir);
    json files = json::object();
    for (const auto& [k, v] : m_base) files[k] = {v.size, v.mtime_ns};
    const json j = {{"remote", m_remote}, {"peer", m_peer}, {"files", files}};
    const std::string tmp = dir + "/state.json.tmp";
    {
        std::ofstream out(tmp, std::ios::trunc);
        out << j.dump(1) << "\n";
        if (!out) throw copy_error(fmt::format("{}: cannot write", tmp));
    }
    fs::rename(tmp, dir + "/state.json");
}

void folder_sync::scan_local(std::map<std::string, version>& files, std::set<std::string>& dirs) const {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(m_local, ec), end; !ec && it != end; it.increment(ec)) {
        if (is_private_name(it->path().filename().string())) {
            if (it->is_directory(ec)) it.disable_recursion_pending();
            continue;
        }
        const std::string rel = it->path().lexically_relative(m_local).generic_string();
        struct stat st{};
        if (::lstat(it->path().c_str(), &st) != 0) continue;  // gone meanwhile
        if (S_ISDIR(st.st_mode)) {
            dirs.insert(rel);
        } else if (S_ISREG(st.st_mode)) {
            files[rel] = version{uint64_t(st.st_size),
                                 uint64_t(st.st_mtim.tv_sec) * 1'000'000'000ull + uint64_t(st.st_mtim.tv_nsec)};
        }
    }
    if (ec) throw copy_error(fmt::format("{}: {}", m_local, ec.message()));
}

void folder_sync::trash_local(const std::string& rel) {
    const fs::path dest = fs::path(m_local) / kTrashDir / utc_stamp() / rel;
    fs::create_directories(dest.parent_path());
    fs::rename(fs::path(m_local) / rel, dest);
}

std::string folder_sync::conflict_name(const std::string& rel) const {
    const std::string name = fmt::format("{}.conflict-{}-{}", rel, m_peer, utc_stamp());
    const auto slash = name.rfind('/');
    if (name.size() - (slash == std::string::npos ? 0 : slash + 1) <= ODL_FILES_NAME_MAX) return name;
    uint8_t r[4];
    random_bytes(r, sizeof(r));
    const std::string dir = slash == std::string::npos ? "" : rel.substr(0, rel.rfind('/') + 1);
    return fmt::format("{}conflict-{}-{}", dir, utc_stamp(), hex(r, sizeof(r)));
}

uint64_t folder_sync::pass() {
    m_report.passes++;
    std::vector<remote_entry> listing;
    try {
        listing = m_client.list(m_remote);
    } catch (const service_error& e) {
        if (e.code != ODL_FILES_E_NOENT || m_remote.empty()) throw copy_error(fmt::format("peer:{}: {}", m_remote, e.what()));
        m_client.make_dir(m_remote);  // the first pass makes the peer's folder
    }
    std::map<std::string, version> remote, local;
    std::set<std::string> remote_dirs, local_dirs;
    for (const auto& e : listing) {
        if (e.dir)
            remote_dirs.insert(e.path);
        else
            remote[e.path] = version{e.size, e.mtime_ns};
    }
    scan_local(local, local_dirs);
    uint64_t actions = 0;

    for (const auto& d : remote_dirs)
        if (!local_dirs.count(d) && !local.count(d)) fs::create_directories(fs::path(m_local) / d);
    for (const auto& d : local_dirs)
        if (!remote_dirs.count(d) && !remote.count(d)) m_client.make_dir(remote_path(d));

    std::set<std::string> paths;
    for (const auto& [k, v] : local) paths.insert(k);
    for (const auto& [k, v] : remote) paths.insert(k);
    for (const auto& [k, v] : m_base) paths.insert(k);
    auto pull = [&](const std::string& rel, const std::string& into) {
        fs::create_directories((fs::path(m_local) / into).parent_path());
        m_client.fetch(remote_path(rel), (fs::path(m_local) / into).string());
    };
    for (const auto& rel : paths) {
        const auto l = local.find(rel), r = remote.find(rel), b = m_base.find(rel);
        const bool hl = l != local.end(), hr = r != remote.end(), hb = b != m_base.end();
        if (hl && hr && l->second == r->second) {
            m_base[rel] = l->second;
            continue;
        }
        if (!hl && !hr) {
            m_base.erase(rel);
            continue;
        }
        actions++;
        if (hl && !hr) {
            if (hb && l->second == b->second) {  // removed on the peer, unchanged here
                trash_local(rel);
                m_base.erase(rel);
                m_report.trashed_here++;
                m_note(fmt::format("{}: removed on the peer; moved into {}/", rel, kTrashDir));
            } else {  // new here, or changed here after the peer removed it
                m_client.put((fs::path(m_local) / rel).string(), remote_path(rel));
                m_base[rel] = l->second;
                m_report.pushed++;
                m_note(fmt::format("{}: sent", rel));
            }
        } else if (!hl && hr) {
            if (hb && r->second == b->second) {  // removed here, unchanged on the peer
                m_client.remove(remote_path(rel));
                m_base.erase(rel);
                m_report.trashed_there++;
                m_note(fmt::format("{}: removed here; moved into the peer's {}/", rel, kTrashDir));
            } else {
                pull(rel, rel);
                m_base[rel] = r->second;
                m_report.pulled++;
                m_note(fmt::format("{}: fetched", rel));
            }
        } else if (hb && l->second == b->second) {  // changed on the peer only
            pull(rel, rel);
            m_base[rel] = r->second;
            m_report.pulled++;
            m_note(fmt::format("{}: fetched (changed on the peer)", rel));
        } else if (hb && r->second == b->second) {  // changed here only
            m_client.put((fs::path(m_local) / rel).string(), remote_path(rel));
            m_base[rel] = l->second;
            m_report.pushed++;
            m_note(fmt::format("{}: sent (changed here)", rel));
        } else {
            // Changed on both sides (or new on both, different): the peer's
            // copy is kept under a conflict name, here and (next pass) there;
            // ours goes to the peer under the file's name.
            const std::string other = conflict_name(rel);
            pull(rel, other);
            m_client.put((fs::path(m_local) / rel).string(), remote_path(rel));
            m_base[rel] = l->second;
            m_report.conflicts++;
            m_note(fmt::format("{}: changed on both hosts; the peer's copy kept as {}", rel, other));
        }
    }
    save_state();
    return actions;
}

}  // namespace odl::files
