// SPDX-License-Identifier: MIT
// SHA-256 of a file on its own thread, following the bytes as they become
// readable: the sender hashes while it sends, the receiver while it writes,
// and neither waits for the other (the hash is the slowest step per byte).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "crypto.h"

namespace odl::files {

class file_hasher {
public:
    /// Hashes @fd from offset 0; bytes up to @readable may be read now.
    file_hasher(int fd, uint64_t readable);
    ~file_hasher();
    file_hasher(const file_hasher&) = delete;
    file_hasher& operator=(const file_hasher&) = delete;

    /// Bytes up to @readable have been written and may be read.
    void advance(uint64_t readable);
    /// Waits until [0, @total) is hashed; the digest, or nothing when the
    /// file ended early or could not be read (@err: errno, 0 for short).
    bool finish(uint64_t total, digest& out, int& err);

private:
    void run();

    int m_fd;
    std::mutex m_mu;
    std::condition_variable m_cv;
    uint64_t m_readable, m_hashed = 0, m_total = UINT64_MAX;
    bool m_stop = false, m_failed = false;
    int m_err = 0;
    sha256 m_sha;
    std::thread m_thread;
};

}  // namespace odl::files
