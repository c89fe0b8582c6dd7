// SPDX-License-Identifier: MIT
#include "client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "clock.h"
#include "crypto.h"
#include "session.h"
#include "transfer.h"

namespace odl::files {

namespace fs = std::filesystem;

struct file_client::job {
    enum kind_t { k_push, k_mkdir_there, k_pull, k_mkdir_here, k_remove } kind;
    std::string local, remote;
    uint32_t mode = 0755;
};

namespace {


/// Between reconnects: 100-400 ms, random, so two sides that retry on the
/// same beat (a server reopening its device as the client arrives) part.
void backoff() {
    uint8_t r = 0;
    random_bytes(&r, 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100 + 300 * r / 255));
}

std::string strip_slashes(std::string s) {
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
}

std::string base_name(const std::string& p) {
    const std::string s = strip_slashes(p);
    const size_t slash = s.rfind('/');
    return slash == std::string::npos ? s : s.substr(slash + 1);
}

std::string join(const std::string& dir, const std::string& name) {
    if (dir.empty()) return name;
    return dir.back() == '/' ? dir + name : dir + "/" + name;
}

void check_remote(const std::string& p, bool allow_empty) {
    if (const char* why = odl_files_path_check(p.data(), p.size(), allow_empty))
        throw copy_error(fmt::format("peer:{}: {} (peer paths are relative to the folder the peer serves)", p, why));
}

/// The peer answered a request with ERROR: that, or a protocol error.
[[noreturn]] void unexpected(const message& m, const char* want) {
    if (m.type == ODL_FILES_ERROR) throw error_of(m);
    throw protocol_error(fmt::format("peer sent message type {} where {} was due", m.type, want));
}

}  // namespace

file_client::file_client(open_fn open, pair_record pair, copy_options opt, const std::atomic<bool>* stop,
                         note_fn note, progress_fn progress)
    : m_open(std::move(open)), m_pair(std::move(pair)), m_opt(opt), m_stop(stop), m_note(std::move(note)),
      m_progress(std::move(progress)) {}

file_client::~file_client() {
    try {
        close();
    } catch (...) {
        // Closing quietly: the peer notices the device closing.
    }
}

void file_client::close() {
    if (m_ch) {
        m_ch->send(ODL_FILES_BYE, nullptr, 0);
        m_ch->flush(2'000'000'000ull);
    }
    m_ch.reset();
    m_dev.reset();
}

void file_client::connect() {
    m_ch.reset();
    m_dev.reset();
    m_dev = m_open();
    m_ch = std::make_unique<channel>(*m_dev, ODL_FILES_FROM_CLIENT, m_stop);
    client_hello(*m_ch, m_pair, m_opt.chunk, m_opt.answer_timeout_ns);
}

void file_client::push(const std::vector<std::string>& sources, const std::string& dest_in) {
    const std::string dest = strip_slashes(dest_in);
    const bool into_dir = dest.empty() || dest_in.back() == '/' || sources.size() > 1;
    std::vector<job> jobs;
    for (const auto& src : sources) {
        struct stat st{};
        if (::stat(src.c_str(), &st) != 0) throw copy_error(fmt::format("{}: {}", src, std::strerror(errno)));
        const std::string remote = into_dir ? join(dest == "/" ? "" : dest, base_name(src)) : dest;
        check_remote(remote, false);
        if (S_ISREG(st.st_mode)) {
            jobs.push_back({job::k_push, src, remote});
            continue;
        }
        if (!S_ISDIR(st.st_mode)) throw copy_error(fmt::format("{}: not a regular file or directory", src));
        if (!m_opt.recursive) throw copy_error(fmt::format("{}: is a directory (copy trees with -r)", src));
        jobs.push_back({job::k_mkdir_there, src, remote, uint32_t(st.st_mode & 07777)});
        std::error_code ec;
        for (fs::recursive_directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec)) {
            const std::string rel = it->path().lexically_relative(src).generic_string();
            const auto name = it->path().filename().string();
            if (is_private_name(name)) {
                if (it->is_directory()) it.disable_recursion_pending();
                continue;
            }
            const auto s = it->symlink_status(ec);
            const std::string r = remote + "/" + rel;
            if (fs::is_directory(s)) {
                check_remote(r, false);
                jobs.push_back({job::k_mkdir_there, it->path().string(), r, uint32_t(s.permissions()) & 07777});
            } else if (fs::is_regular_file(s)) {
                check_remote(r, false);
                jobs.push_back({job::k_push, it->path().string(), r});
            } else {
                m_report.skipped++;
                m_note(fmt::format("{}: skipped (not a regular file or directory)", it->path().string()));
            }
        }
        if (ec) throw copy_error(fmt::format("{}: {}", src, ec.message()));
    }
    run(jobs);
}

std::vector<remote_entry> file_client::list_once(const std::string& src) {
    const odl_files_path h{0, odl_cpu_le32(uint32_t(src.size()))};
    m_ch->send(ODL_FILES_LIST, &h, sizeof(h), src.data(), src.size());
    std::vector<remote_entry> out;
    for (;;) {
        const message m = m_ch->recv(m_opt.answer_timeout_ns);
        if (m.type != ODL_FILES_ENTRIES) unexpected(m, "ENTRIES");
        const auto e = m.head<odl_files_entries>();
        size_t off = sizeof(e);
        for (uint32_t i = 0; i < odl_le32(e.count); i++) {
            odl_files_entry en;
            std::memcpy(&en, m.payload + off, sizeof(en));
            off += sizeof(en);
            remote_entry r;
            r.path.assign(reinterpret_cast<const char*>(m.payload + off), odl_le16(en.path_len));
            off += odl_le16(en.path_len);
            r.dir = odl_le16(en.kind) == ODL_FILES_DIR;
            r.size = odl_le64(en.size);
            r.mtime_ns = odl_le64(en.mtime_ns);
            r.mode = odl_le32(en.mode);
            out.push_back(std::move(r));
        }
        if (m.flags & ODL_FILES_LAST) return out;
    }
}

std::vector<remote_entry> file_client::list(const std::string& src) {
    check_remote(src, true);
    uint64_t lost_since = 0;
    for (;;) {
        if (m_stop && m_stop->load()) throw stopped();  // SIGTERM was waited out for --retry-for
        try {
            if (!m_ch) connect();
            return list_once(src);
        } catch (const protocol_error& e) {
            throw copy_error(e.what());
        } catch (const link_error& e) {
            drop_link(lost_since, e.what());
            m_report.reconnects++;
        } catch (const odl::error& e) {
            waiting(lost_since, e.what());
            drop_link(lost_since, e.what());
        }
    }
}

void file_client::waiting(uint64_t since, const std::string& why) {
    // Once per outage: the retries were silent for all of --retry-for.
    if (!since)
        m_note(fmt::format("{}; trying again for up to {} s", why, m_opt.retry_for_ns / 1'000'000'000ull));
}

void file_client::drop_link(uint64_t& since, const std::string& give_up) {
    m_ch.reset();
    m_dev.reset();
    const uint64_t now = now_ns();
    if (!since) since = now;
    if (now - since > m_opt.retry_for_ns) throw copy_error(give_up);
    backoff();
}

void file_client::fetch(const std::string& remote, const std::string& local) {
    check_remote(remote, false);
    std::vector<job> jobs{{job::k_pull, local, remote}};
    run(jobs);
}

void file_client::put(const std::string& local, const std::string& remote) {
    check_remote(remote, false);
    std::vector<job> jobs{{job::k_push, local, remote}};
    run(jobs);
}

void file_client::make_dir(const std::string& remote, uint32_t mode) {
    check_remote(remote, false);
    std::vector<job> jobs{{job::k_mkdir_there, "", remote, mode}};
    run(jobs);
}

void file_client::remove(const std::string& remote) {
    check_remote(remote, false);
    std::vector<job> jobs{{job::k_remove, "", remote}};
    run(jobs);
}

void file_client::pull(const std::vector<std::string>& sources, const std::string& dest) {
    std::error_code ec;
    const bool into_dir = fs::is_directory(dest, ec) || (!dest.empty() && dest.back() == '/') || sources.size() > 1;
    if (sources.size() > 1 && !fs::is_directory(dest, ec))
        throw copy_error(fmt::format("{}: not a directory (several sources go into one)", dest));
    std::vector<std::string> remotes;
    for (const auto& s : sources) {
        remotes.push_back(strip_slashes(s));
        check_remote(remotes.back(), false);
    }
    std::vector<job> jobs;
    for (const auto& r : remotes) {
        const std::string local = into_dir ? join(dest, base_name(r)) : dest;
        if (!m_opt.recursive) {
            jobs.push_back({job::k_pull, local, r});
            continue;
        }
        // Which sources are trees, the peer says (LIST of a file: E_KIND).
        try {
            const auto entries = list(r);
            jobs.push_back({job::k_mkdir_here, local, r});
            for (const auto& e : entries)
                jobs.push_back({e.dir ? job::k_mkdir_here : job::k_pull, local + "/" + e.path, r + "/" + e.path, e.mode});
        } catch (const service_error& e) {
            if (e.code != ODL_FILES_E_KIND) throw copy_error(fmt::format("peer:{}: {}", r, e.what()));
            jobs.push_back({job::k_pull, local, r});
        }
    }
    run(jobs);
}

void file_client::run(std::vector<job>& jobs) {
    uint64_t failed = 0;
    for (const job& j : jobs) {
        uint64_t lost_since = 0;
        bool hash_retried = false;
        for (;;) {
            if (m_stop && m_stop->load()) throw stopped();
            try {
                if (!m_ch) connect();
                switch (j.kind) {
                case job::k_push:
                    push_file(j);
                    break;
                case job::k_mkdir_there:
                    remote_mkdir(j.remote, j.mode);
                    m_report.dirs++;
                    break;
                case job::k_pull:
                    pull_file(j);
                    break;
                case job::k_mkdir_here:
                    fs::create_directories(j.local);
                    m_report.dirs++;
                    break;
                case job::k_remove:
                    remote_remove(j.remote);
                    break;
                }
                break;
            } catch (const link_error& e) {
                drop_link(lost_since, fmt::format("link lost ({}); gave up after {} s", e.what(),
                                                  m_opt.retry_for_ns / 1'000'000'000ull));
                m_report.reconnects++;
                m_note(fmt::format("{}; reconnecting to resume", e.what()));
            } catch (const odl::error& e) {  // the device would not open (no peer yet)
                waiting(lost_since, e.what());
                drop_link(lost_since, e.what());
            } catch (const service_error& e) {
                if (e.code == ODL_FILES_E_HASH && !hash_retried) {
                    hash_retried = true;
                    m_report.hash_mismatches++;
                    m_note(fmt::format("{}: SHA-256 mismatch; sending it again", j.local));
                    continue;
                }
                if (e.code == ODL_FILES_E_HASH) m_report.hash_mismatches++;
                failed++;
                const bool ours = j.kind == job::k_push || (j.kind == job::k_mkdir_there && !j.local.empty());
                m_note(fmt::format("{}: {}", ours ? j.local : "peer:" + j.remote, e.what()));
                break;
            } catch (const fs::filesystem_error& e) {
                failed++;
                m_note(e.what());
                break;
            } catch (const protocol_error& e) {
                throw copy_error(e.what());  // the session is unusable: nothing more is tried
            }
        }
    }
    if (failed) throw copy_error(fmt::format("{} of {} item(s) failed", failed, jobs.size()));
}

void file_client::remote_mkdir(const std::string& path, uint32_t mode) {
    const odl_files_path h{odl_cpu_le32(mode & 07777), odl_cpu_le32(uint32_t(path.size()))};
    m_ch->send(ODL_FILES_MKDIR, &h, sizeof(h), path.data(), path.size());
    const message m = m_ch->recv(m_opt.answer_timeout_ns);
    if (m.type != ODL_FILES_DONE) unexpected(m, "DONE");
}

void file_client::remote_remove(const std::string& path) {
    const odl_files_path h{0, odl_cpu_le32(uint32_t(path.size()))};
    m_ch->send(ODL_FILES_REMOVE, &h, sizeof(h), path.data(), path.size());
    const message m = m_ch->recv(m_opt.answer_timeout_ns);
    if (m.type != ODL_FILES_DONE) unexpected(m, "DONE");
}

void file_client::push_file(const job& j) {
    unique_fd fd(::open(j.local.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw service_error(ODL_FILES_E_IO, std::strerror(errno));
    const file_meta meta = meta_of(fd.get());
    odl_files_put h{odl_cpu_le64(meta.size), odl_cpu_le64(meta.mtime_ns), odl_cpu_le32(meta.mode),
                    odl_cpu_le32(uint32_t(j.remote.size()))};
    m_ch->send(ODL_FILES_PUT, &h, sizeof(h), j.remote.data(), j.remote.size());
    const message r = m_ch->recv(m_opt.answer_timeout_ns);
    if (r.type != ODL_FILES_READY) unexpected(r, "READY");
    const uint64_t from = odl_le64(r.head<odl_files_offset>().offset);
    if (from > meta.size) throw protocol_error("peer's READY offset beyond the file");
    if (m_progress) m_progress(j.local, from, meta.size);
    // An ERROR from the server ends the stream early (its disk is full).
    std::optional<service_error> early;
    try {
        send_file(*m_ch, fd.get(), meta, from, [&](uint64_t done) {
            if (auto m = m_ch->try_recv()) {
                if (m->type != ODL_FILES_ERROR) unexpected(*m, "nothing");
                early = error_of(*m);
                throw *early;
            }
            if (m_progress) m_progress(j.local, done, meta.size);
        });
    } catch (const service_error& e) {
        if (!early) throw;  // ours: send_file told the server already
        send_error(*m_ch, ODL_FILES_E_IO, "stopped after the peer's error");
        throw;
    }
    m_report.bytes += meta.size - from;
    const message m = m_ch->recv(m_opt.answer_timeout_ns);
    if (m.type != ODL_FILES_DONE) unexpected(m, "DONE");
    m_report.files++;
    m_report.resumed_bytes += from;
    m_report.total_bytes += meta.size;
}

void file_client::pull_file(const job& j) {
    const odl_files_path h{0, odl_cpu_le32(uint32_t(j.remote.size()))};
    m_ch->send(ODL_FILES_GET, &h, sizeof(h), j.remote.data(), j.remote.size());
    const message r = m_ch->recv(m_opt.answer_timeout_ns);
    if (r.type != ODL_FILES_INFO) unexpected(r, "INFO");
    const auto info = r.head<odl_files_info>();
    const file_meta meta{odl_le64(info.size), odl_le64(info.mtime_ns), odl_le32(info.mode)};
    fs::path local(j.local);
    const std::string parent = local.has_parent_path() ? local.parent_path().string() : ".";
    unique_fd dir(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::optional<incoming_file> in;
    try {
        if (!dir) throw service_error(ODL_FILES_E_IO, fmt::format("{}: {}", parent, std::strerror(errno)));
        in.emplace(dir.get(), local.filename().string(), meta);
    } catch (const service_error& e) {
        send_error(*m_ch, e.code, e.what());
        throw;
    }
    const uint64_t from = in->offset();
    const odl_files_offset ready{odl_cpu_le64(from)};
    m_ch->send(ODL_FILES_READY, &ready, sizeof(ready));
    if (m_progress) m_progress(j.local, from, meta.size);
    std::optional<service_error> failed;
    for (;;) {
        const message m = m_ch->recv(m_opt.answer_timeout_ns);
        if (m.type == ODL_FILES_DATA) {
            if (failed) continue;  // the rest of the stream, read and dropped
            try {
                in->write(odl_le64(m.head<odl_files_data>().offset), m.payload + sizeof(odl_files_data),
                          m.len - sizeof(odl_files_data));
                m_report.bytes += m.len - sizeof(odl_files_data);
            } catch (const service_error& e) {
                if (e.code == ODL_FILES_E_PROTO) throw protocol_error(e.what());
                failed = e;
            }
            if (m_progress && !failed) m_progress(j.local, in->offset(), meta.size);
            continue;
        }
        if (m.type == ODL_FILES_ERROR) {
            in->discard();
            throw error_of(m);
        }
        if (m.type != ODL_FILES_END) unexpected(m, "DATA or END");
        if (failed) throw *failed;
        digest sha{};
        std::memcpy(sha.data(), m.payload, sha.size());
        in->finish(sha);
        m_report.files++;
        m_report.resumed_bytes += from;
        m_report.total_bytes += meta.size;
        return;
    }
}

}  // namespace odl::files
