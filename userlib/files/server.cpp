// SPDX-License-Identifier: MIT
#include "server.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "clock.h"
#include "session.h"
#include "transfer.h"

namespace odl::files {

namespace {

constexpr int kMaxDepth = 64;
constexpr uint64_t kMaxListed = 1'000'000;

std::string path_of(const message& m, size_t skip) { return std::string(m.tail(skip)); }

[[noreturn]] void path_fail(const std::string& path, int err) {
    throw service_error(path_error_code(err), fmt::format("{}: {}", path,
                                                          err == EXDEV || err == ELOOP
                                                              ? "leads outside the served folder (or through a symbolic link)"
                                                              : std::strerror(err)));
}

/// Collects ENTRIES payloads of at most @cap bytes each.
struct lister {
    uint32_t cap = ODL_FILES_CHUNK_DEFAULT;
    std::vector<std::vector<uint8_t>> out;
    std::vector<uint8_t> cur;
    uint32_t count = 0;
    uint64_t total = 0;

    void add(const std::string& rel, uint16_t kind, uint64_t size, uint64_t mtime, uint32_t mode) {
        if (++total > kMaxListed) throw service_error(ODL_FILES_E_IO, "more than a million entries");
        const size_t need = sizeof(odl_files_entry) + rel.size();
        if (count == ODL_FILES_ENTRIES_MAX || (count && cur.size() + need > cap)) flush();
        if (cur.empty()) cur.resize(sizeof(odl_files_entries));
        odl_files_entry e{odl_cpu_le64(size), odl_cpu_le64(mtime), odl_cpu_le32(mode), odl_cpu_le16(kind),
                          odl_cpu_le16(uint16_t(rel.size()))};
        const auto* p = reinterpret_cast<const uint8_t*>(&e);
        cur.insert(cur.end(), p, p + sizeof(e));
        cur.insert(cur.end(), rel.begin(), rel.end());
        count++;
    }
    void flush() {
        if (cur.empty()) cur.resize(sizeof(odl_files_entries));
        const odl_files_entries h{odl_cpu_le32(count), 0};
        std::memcpy(cur.data(), &h, sizeof(h));
        out.push_back(std::move(cur));
        cur.clear();
        count = 0;
    }
};

void walk(int dir, const std::string& prefix, int depth, lister& l) {
    if (depth > kMaxDepth) throw service_error(ODL_FILES_E_IO, "folders nested deeper than 64");
    const int fd = ::dup(dir);
    if (fd < 0) throw service_error(ODL_FILES_E_IO, std::strerror(errno));
    std::unique_ptr<DIR, int (*)(DIR*)> d(::fdopendir(fd), ::closedir);
    if (!d) {
        ::close(fd);
        throw service_error(ODL_FILES_E_IO, std::strerror(errno));
    }
    std::vector<std::string> names;
    while (const dirent* e = ::readdir(d.get())) {
        const std::string n = e->d_name;
        if (n == "." || n == ".." || is_private_name(n)) continue;
        names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
        struct stat st{};
        if (::fstatat(dir, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone meanwhile
        const std::string rel = prefix.empty() ? n : prefix + "/" + n;
        if (rel.size() > ODL_FILES_PATH_MAX) continue;
        const uint64_t mtime = uint64_t(st.st_mtim.tv_sec) * 1'000'000'000ull + uint64_t(st.st_mtim.tv_nsec);
        if (S_ISREG(st.st_mode)) {
            l.add(rel, ODL_FILES_FILE, uint64_t(st.st_size), mtime, st.st_mode & 07777);
        } else if (S_ISDIR(st.st_mode)) {
            l.add(rel, ODL_FILES_DIR, 0, mtime, st.st_mode & 07777);
            unique_fd sub(open_beneath(dir, n, O_RDONLY | O_DIRECTORY));
            if (sub) walk(sub.get(), rel, depth + 1, l);
        }
        // Symbolic links and special files are not served.
    }
}

}  // namespace

odl_files_err path_error_code(int err) {
    switch (err) {
    case ENOENT:
        return ODL_FILES_E_NOENT;
    case EXDEV:
    case ELOOP:
    case ENAMETOOLONG:
        return ODL_FILES_E_PATH;
    case ENOTDIR:
    case EISDIR:
        return ODL_FILES_E_KIND;
    default:
        return ODL_FILES_E_IO;
    }
}

file_server::file_server(int root, pair_store keys, log_fn log, uint32_t max_chunk)
    : m_root(root), m_keys(std::move(keys)), m_log(std::move(log)), m_max_chunk(max_chunk) {}

void file_server::serve(odl::device& dev, const std::atomic<bool>* stop, std::string_view first) {
    channel ch(dev, ODL_FILES_FROM_SERVER, stop, first);
    std::string peer = "?";
    try {
        peer = server_hello(ch, m_keys, m_max_chunk).peer_name;
        m_counters.sessions++;
        m_log(fmt::format("session with {}", peer));
        for (;;) {
            const message m = ch.recv(0);
            if (m.type == ODL_FILES_BYE) {
                m_log(fmt::format("{} said goodbye", peer));
                return;
            }
            handle(ch, m);
        }
    } catch (const protocol_error& e) {
        m_counters.refused++;
        m_log(fmt::format("session with {} ended: {}", peer, e.what()));
        try {
            ch.flush(1'000'000'000ull);  // a refusal, if one was sent, must leave before the device closes
        } catch (const std::exception&) {
        }
    } catch (const link_error& e) {
        // A link that failed before any HELLO is no session (the device
        // reopened while the last peer was still leaving): not worth a line.
        if (peer != "?") m_log(fmt::format("session with {} ended: {}", peer, e.what()));
    } catch (const stopped&) {
    }
}

void file_server::handle(channel& ch, const message& m) {
    try {
        const size_t skip = m.type == ODL_FILES_PUT ? sizeof(odl_files_put) : sizeof(odl_files_path);
        if (m.type == ODL_FILES_PUT || m.type == ODL_FILES_GET || m.type == ODL_FILES_MKDIR ||
            m.type == ODL_FILES_REMOVE || m.type == ODL_FILES_LIST) {
            const std::string path = path_of(m, skip);
            if (has_private_component(path))
                throw service_error(ODL_FILES_E_PATH, fmt::format("{}: a name the service keeps to itself", path));
        }
        switch (m.type) {
        case ODL_FILES_PUT:
            return put(ch, m);
        case ODL_FILES_GET:
            return get(ch, m);
        case ODL_FILES_LIST:
            return list(ch, m);
        case ODL_FILES_MKDIR:
            return mkdir(ch, m);
        case ODL_FILES_REMOVE:
            return remove(ch, m);
        default:
            throw protocol_error(fmt::format("message type {} where a request was expected", m.type));
        }
    } catch (const service_error& e) {
        m_counters.errors++;
        m_log(fmt::format("refused: {}", e.what()));
        send_error(ch, e.code, e.what());
    }
}

void file_server::put(channel& ch, const message& m) {
    const auto h = m.head<odl_files_put>();
    const std::string path = path_of(m, sizeof(h));
    const file_meta meta{odl_le64(h.size), odl_le64(h.mtime_ns), odl_le32(h.mode)};
    const auto [parent, name] = split_parent(path);
    unique_fd dir(dir_beneath(m_root, parent, true));
    if (!dir) path_fail(path, -dir.get());
    std::optional<incoming_file> in;
    std::optional<service_error> failed;
    try {
        in.emplace(dir.get(), name, meta);
    } catch (const service_error& e) {
        failed = e;
    }
    if (failed) throw *failed;
    const odl_files_offset r{odl_cpu_le64(in->offset())};
    ch.send(ODL_FILES_READY, &r, sizeof(r));
    // DATA until END or the client's ERROR. After a failure here (disk full)
    // the ERROR goes at once and the rest of the stream is read and dropped.
    for (;;) {
        const message d = ch.recv(60'000'000'000ull);
        if (d.type == ODL_FILES_DATA) {
            if (failed) continue;
            try {
                in->write(odl_le64(d.head<odl_files_data>().offset), d.payload + sizeof(odl_files_data),
                          d.len - sizeof(odl_files_data));
            } catch (const service_error& e) {
                failed = e;
                m_counters.errors++;
                m_log(fmt::format("{}: {}", path, e.what()));
                send_error(ch, e.code, e.what());
                if (e.code == ODL_FILES_E_PROTO) throw protocol_error(e.what());
            }
            continue;
        }
        if (d.type == ODL_FILES_ERROR) {  // the client gave up on this file
            m_log(fmt::format("{}: {}", path, error_of(d).what()));
            in->discard();
            return;
        }
        if (d.type != ODL_FILES_END) throw protocol_error(fmt::format("message type {} inside a PUT", d.type));
        if (failed) return;
        digest sha{};
        std::memcpy(sha.data(), d.payload, sha.size());
        m_counters.bytes_in += in->written();
        try {
            in->finish(sha);
        } catch (const service_error& e) {
            if (e.code == ODL_FILES_E_HASH) m_counters.hash_mismatches++;
            throw;
        }
        m_counters.files_in++;
        const odl_files_offset done{odl_cpu_le64(meta.size)};
        ch.send(ODL_FILES_DONE, &done, sizeof(done));
        return;
    }
}

void file_server::get(channel& ch, const message& m) {
    const std::string path = path_of(m, sizeof(odl_files_path));
    unique_fd fd(open_beneath(m_root, path, O_RDONLY | O_NOFOLLOW));
    if (!fd) path_fail(path, -fd.get());
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0) path_fail(path, errno);
    if (S_ISDIR(st.st_mode)) throw service_error(ODL_FILES_E_KIND, fmt::format("{}: is a directory", path));
    if (!S_ISREG(st.st_mode)) throw service_error(ODL_FILES_E_KIND, fmt::format("{}: not a regular file", path));
    const file_meta meta = meta_of(fd.get());
    const odl_files_info info{odl_cpu_le64(meta.size), odl_cpu_le64(meta.mtime_ns), odl_cpu_le32(meta.mode), 0};
    ch.send(ODL_FILES_INFO, &info, sizeof(info));
    const message r = ch.recv(60'000'000'000ull);
    if (r.type == ODL_FILES_ERROR) {  // the client cannot take it (its disk)
        m_log(fmt::format("{}: {}", path, error_of(r).what()));
        return;
    }
    if (r.type != ODL_FILES_READY) throw protocol_error(fmt::format("message type {} where READY was due", r.type));
    const uint64_t from = odl_le64(r.head<odl_files_offset>().offset);
    if (from > meta.size) throw protocol_error(fmt::format("{}: READY at {} of {} bytes", path, from, meta.size));
    try {
        send_file(ch, fd.get(), meta, from);  // its ERROR, if any, is the answer
    } catch (const service_error& e) {
        m_counters.errors++;
        m_log(fmt::format("{}: {}", path, e.what()));
        return;
    }
    m_counters.files_out++;
    m_counters.bytes_out += meta.size - from;
}

void file_server::list(channel& ch, const message& m) {
    const auto h = m.head<odl_files_path>();
    const std::string path = path_of(m, sizeof(h));
    unique_fd dir(dir_beneath(m_root, path, false));
    if (!dir) path_fail(path.empty() ? "." : path, -dir.get());
    lister l;
    l.cap = ch.chunk();
    walk(dir.get(), "", 0, l);
    l.flush();
    for (size_t i = 0; i < l.out.size(); i++)
        ch.send(ODL_FILES_ENTRIES, l.out[i].data(), l.out[i].size(), nullptr, 0,
                i + 1 == l.out.size() ? ODL_FILES_LAST : 0);
}

void file_server::mkdir(channel& ch, const message& m) {
    const auto h = m.head<odl_files_path>();
    const std::string path = path_of(m, sizeof(h));
    unique_fd dir(dir_beneath(m_root, path, true, odl_le32(h.mode) & 07777 ? odl_le32(h.mode) & 07777 : 0755));
    if (!dir) path_fail(path, -dir.get());
    const odl_files_offset done{0};
    ch.send(ODL_FILES_DONE, &done, sizeof(done));
}

void file_server::remove(channel& ch, const message& m) {
    const std::string path = path_of(m, sizeof(odl_files_path));
    const auto [parent, name] = split_parent(path);
    unique_fd dir(dir_beneath(m_root, parent, false));
    if (!dir) path_fail(path, -dir.get());
    struct stat st{};
    if (::fstatat(dir.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) path_fail(path, errno);
    if (!S_ISREG(st.st_mode)) throw service_error(ODL_FILES_E_KIND, fmt::format("{}: not a regular file", path));
    // Into the trash, never gone: a time-stamped folder per removal keeps
    // every version that was removed.
    uint8_t rnd[4];
    random_bytes(rnd, sizeof(rnd));
    const std::string where = fmt::format("{}/{}-{}{}{}", kTrashDir, utc_stamp(), hex(rnd, sizeof(rnd)), parent.empty() ? "" : "/",
                                          parent);
    unique_fd trash(dir_beneath(m_root, where, true, 0700));
    if (!trash) path_fail(where, -trash.get());
    if (::renameat(dir.get(), name.c_str(), trash.get(), name.c_str()) != 0) path_fail(path, errno);
    m_counters.removed++;
    const odl_files_offset done{odl_cpu_le64(uint64_t(st.st_size))};
    ch.send(ODL_FILES_DONE, &done, sizeof(done));
}

}  // namespace odl::files
