// SPDX-License-Identifier: MIT
#include "transfer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace odl::files {

namespace {

// Partial files are fsynced and their length recorded every so often: a
// killed receiver resumes from the last record (a clean stop records all).
constexpr uint64_t kCheckpointBytes = 64ull << 20;

[[noreturn]] void io_fail(const std::string& what, int err) {
    throw service_error(ODL_FILES_E_IO, fmt::format("{}: {}", what, std::strerror(err)));
}

uint64_t mtime_of(const struct stat& st) { return uint64_t(st.st_mtim.tv_sec) * 1'000'000'000ull + uint64_t(st.st_mtim.tv_nsec); }

bool same_version(const struct stat& a, const struct stat& b) {
    return a.st_size == b.st_size && a.st_mtim.tv_sec == b.st_mtim.tv_sec && a.st_mtim.tv_nsec == b.st_mtim.tv_nsec &&
           a.st_ctim.tv_sec == b.st_ctim.tv_sec && a.st_ctim.tv_nsec == b.st_ctim.tv_nsec;
}

/// Reads exactly @n bytes at @off; false at a short read (the file shrank).
bool read_exact(int fd, uint8_t* p, size_t n, uint64_t off) {
    while (n) {
        const ssize_t r = ::pread(fd, p, n, off_t(off));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) io_fail("read", errno);
        if (r == 0) return false;
        p += r;
        n -= size_t(r);
        off += uint64_t(r);
    }
    return true;
}

}  // namespace

file_meta meta_of(int fd) {
    struct stat st{};
    if (::fstat(fd, &st) != 0) io_fail("stat", errno);
    return {uint64_t(st.st_size), mtime_of(st), uint32_t(st.st_mode & 07777)};
}

std::string peer_text(std::string_view words) {
    std::string text(words);
    for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20) c = '?';  // the peer's words, shown on our terminal
    return text;
}

void send_error(channel& ch, odl_files_err code, const std::string& text) {
    const std::string t = text.substr(0, ODL_FILES_TEXT_MAX);
    const odl_files_error e{odl_cpu_le32(uint32_t(code)), odl_cpu_le32(uint32_t(t.size()))};
    ch.send(ODL_FILES_ERROR, &e, sizeof(e), t.data(), t.size());
}

service_error error_of(const message& m) {
    const auto e = m.head<odl_files_error>();
    const uint32_t code = odl_le32(e.code);
    return service_error(odl_files_err(code), "peer: " + peer_text(m.tail(sizeof(e))));
}

void send_file(channel& ch, int fd, const file_meta& meta, uint64_t from, const progress_fn& progress) {
    struct stat before{};
    if (::fstat(fd, &before) != 0) io_fail("stat", errno);
    auto give_up = [&](odl_files_err code, const std::string& why) {
        send_error(ch, code, why);
        throw service_error(code, why);
    };
    if (uint64_t(before.st_size) != meta.size || mtime_of(before) != meta.mtime_ns)
        give_up(ODL_FILES_E_CHANGED, "file changed since it was announced");
    if (from > meta.size) give_up(ODL_FILES_E_CHANGED, "file shrank while it was sent");
    // The whole file is hashed on a thread of its own (also the resumed
    // part the receiver already holds) while the rest is sent.
    file_hasher h(fd, meta.size);
    const uint32_t chunk = ch.chunk();
    for (uint64_t off = from; off < meta.size;) {
        const size_t n = size_t(std::min<uint64_t>(chunk, meta.size - off));
        uint8_t* p = ch.data_area();
        bool ok = false;
        try {
            ok = read_exact(fd, p, n, off);
        } catch (const service_error& e) {
            give_up(ODL_FILES_E_IO, e.what());
        }
        if (!ok) give_up(ODL_FILES_E_CHANGED, "file shrank while it was sent");
        ch.send_data(off, n);
        off += n;
        if (progress) progress(off);
    }
    digest d{};
    int err = 0;
    if (!h.finish(meta.size, d, err))
        give_up(err ? ODL_FILES_E_IO : ODL_FILES_E_CHANGED, err ? std::strerror(err) : "file shrank while it was sent");
    struct stat after{};
    if (::fstat(fd, &after) != 0 || !same_version(before, after))
        give_up(ODL_FILES_E_CHANGED, "file changed while it was sent");
    ch.send(ODL_FILES_END, d.data(), d.size());
}

incoming_file::incoming_file(int dir, std::string name, const file_meta& meta)
    : m_dir(dir), m_name(std::move(name)), m_meta(meta) {
    // One partial per (name, size, mtime): another version starts afresh.
    sha256 id;
    const std::string key = fmt::format("{}\n{}\n{}", m_name, meta.size, meta.mtime_ns);
    id.update(key.data(), key.size());
    const digest d = id.finish();
    m_part = kPartPrefix + hex(d.data(), 12);
    m_state = m_part + ".state";

    uint64_t held = 0;
    if (unique_fd st(::openat(m_dir, m_state.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW)); st) {
        char buf[128] = {};
        const ssize_t r = ::read(st.get(), buf, sizeof(buf) - 1);
        unsigned long long size = 0, mtime = 0, verified = 0;
        if (r > 0 && std::sscanf(buf, "odl-part 1 %llu %llu %llu", &size, &mtime, &verified) == 3 &&
            size == meta.size && mtime == meta.mtime_ns && verified <= meta.size)
            held = verified;
    }
    m_fd = unique_fd(::openat(m_dir, m_part.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!m_fd) io_fail(fmt::format("create {}", m_part), errno);
    struct stat st{};
    if (::fstat(m_fd.get(), &st) != 0) io_fail("stat", errno);
    if (uint64_t(st.st_size) < held) held = 0;  // the record promises more than is there
    // Bytes after the record were never checkpointed: drop them.
    if (::ftruncate(m_fd.get(), off_t(held)) != 0) io_fail(fmt::format("truncate {}", m_part), errno);
    m_offset = m_checkpointed = held;
    m_hash = std::make_unique<file_hasher>(m_fd.get(), held);
}

incoming_file::~incoming_file() {
    if (!m_open) return;
    try {
        checkpoint();
    } catch (...) {
        // Best effort on the way out: the next attempt starts earlier.
    }
}

void incoming_file::checkpoint() {
    if (m_offset == m_checkpointed) return;
    if (::fdatasync(m_fd.get()) != 0) io_fail(fmt::format("sync {}", m_part), errno);
    const std::string text = fmt::format("odl-part 1 {} {} {}\n", m_meta.size, m_meta.mtime_ns, m_offset);
    const std::string tmp = m_state + ".tmp";
    unique_fd fd(::openat(m_dir, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
    if (!fd) io_fail(fmt::format("create {}", tmp), errno);
    if (::write(fd.get(), text.data(), text.size()) != ssize_t(text.size()))
        io_fail(fmt::format("write {}", tmp), errno ? errno : EIO);
    if (::renameat(m_dir, tmp.c_str(), m_dir, m_state.c_str()) != 0) io_fail(fmt::format("rename {}", tmp), errno);
    m_checkpointed = m_offset;
}

void incoming_file::write(uint64_t off, const uint8_t* p, size_t n) {
    if (off != m_offset)
        throw service_error(ODL_FILES_E_PROTO, fmt::format("DATA at offset {} where {} was next", off, m_offset));
    if (n > m_meta.size - m_offset)
        throw service_error(ODL_FILES_E_PROTO, fmt::format("DATA beyond the announced {} bytes", m_meta.size));
    for (size_t done = 0; done < n;) {
        const ssize_t w = ::pwrite(m_fd.get(), p + done, n - done, off_t(off + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) io_fail(fmt::format("write {}", m_name), w < 0 ? errno : EIO);
        done += size_t(w);
    }
    m_offset += n;
    m_hash->advance(m_offset);
    m_written += n;
    if (m_offset - m_checkpointed >= kCheckpointBytes) checkpoint();
}

void incoming_file::remove_partial() {
    ::unlinkat(m_dir, m_part.c_str(), 0);
    ::unlinkat(m_dir, m_state.c_str(), 0);
    m_open = false;
}

void incoming_file::discard() { remove_partial(); }

void incoming_file::finish(const digest& sender) {
    if (m_offset != m_meta.size)
        throw service_error(ODL_FILES_E_PROTO, fmt::format("END after {} of {} bytes", m_offset, m_meta.size));
    digest mine{};
    int err = 0;
    if (!m_hash->finish(m_offset, mine, err)) io_fail(fmt::format("read back {}", m_part), err ? err : EIO);
    if (!same_bytes(mine.data(), sender.data(), mine.size())) {
        remove_partial();
        throw service_error(ODL_FILES_E_HASH, fmt::format("SHA-256 of {} differs from the sender's", m_name));
    }
    const timespec times[2] = {{0, UTIME_OMIT},
                               {time_t(m_meta.mtime_ns / 1'000'000'000ull), long(m_meta.mtime_ns % 1'000'000'000ull)}};
    if (::fchmod(m_fd.get(), m_meta.mode & 07777) != 0 || ::futimens(m_fd.get(), times) != 0 || ::fsync(m_fd.get()) != 0)
        io_fail(fmt::format("finish {}", m_name), errno);
    if (::renameat(m_dir, m_part.c_str(), m_dir, m_name.c_str()) != 0) io_fail(fmt::format("rename to {}", m_name), errno);
    ::unlinkat(m_dir, m_state.c_str(), 0);
    ::fsync(m_dir);
    m_open = false;
}

}  // namespace odl::files
