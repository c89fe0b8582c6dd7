// SPDX-License-Identifier: MIT
// Moving one file's bytes: the sending side (hash while reading, notice a
// file that changes under it) and the receiving side (a partial file under
// a temporary name, checkpointed for resume, renamed into place only after
// the SHA-256 of every byte matched the sender's).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "channel.h"
#include "crypto.h"
#include "file_hasher.h"
#include "safe_dir.h"

namespace odl::files {

/// A request that failed for a reason the protocol names (an ERROR).
struct service_error : std::runtime_error {
    service_error(odl_files_err c, const std::string& what) : std::runtime_error(what), code(c) {}
    odl_files_err code;
};

struct file_meta {
    uint64_t size = 0;
    uint64_t mtime_ns = 0;
    uint32_t mode = 0644;
};

/// Called with the bytes of the current file moved so far.
using progress_fn = std::function<void(uint64_t done)>;

/// Sends @fd's bytes [@from, @meta.size) as DATA, having hashed [0, @from),
/// then END (or, when the file changed or could not be read, an ERROR in
/// its place, then throws service_error E_CHANGED / E_IO).
void send_file(channel& ch, int fd, const file_meta& meta, uint64_t from, const progress_fn& progress = {});

/// A file being received into folder @dir under final name @name.
class incoming_file {
public:
    /// Finds the partial file of an earlier attempt at the same file (same
    /// name, size and mtime) and keeps its checkpointed bytes, or starts one.
    incoming_file(int dir, std::string name, const file_meta& meta);
    ~incoming_file();
    incoming_file(const incoming_file&) = delete;
    incoming_file& operator=(const incoming_file&) = delete;

    /// Bytes already held (where the sender resumes).
    uint64_t offset() const { return m_offset; }
    /// The next bytes; @off must be offset(). Throws service_error.
    void write(uint64_t off, const uint8_t* p, size_t n);
    /// Compares SHA-256s; on a match fixes mode and mtime, fsyncs and
    /// renames into place (E_HASH otherwise: the partial file is gone).
    void finish(const digest& sender);
    /// Drops the partial file (the sender gave up on this version).
    void discard();
    /// Bytes written in this attempt (not those resumed).
    uint64_t written() const { return m_written; }

private:
    void checkpoint();
    void remove_partial();

    int m_dir;
    std::string m_name, m_part, m_state;
    file_meta m_meta;
    unique_fd m_fd;
    std::unique_ptr<file_hasher> m_hash;  ///< after m_fd: its thread reads it, so it goes first
    uint64_t m_offset = 0, m_checkpointed = 0, m_written = 0;
    bool m_open = true;
};

/// ERROR payload for @e (code and words).
void send_error(channel& ch, odl_files_err code, const std::string& text);
/// A peer's words made safe to print (control characters become '?').
std::string peer_text(std::string_view words);
/// An ERROR message's code and words.
service_error error_of(const message& m);

/// A directory entry's permission bits and mtime in nanoseconds.
file_meta meta_of(int fd);

}  // namespace odl::files
