// SPDX-License-Identifier: MIT
#include "file_hasher.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <memory>

namespace odl::files {

namespace {
constexpr uint64_t kBlock = 1u << 20;
}

file_hasher::file_hasher(int fd, uint64_t readable) : m_fd(fd), m_readable(readable), m_thread([this] { run(); }) {}

file_hasher::~file_hasher() {
    {
        std::lock_guard<std::mutex> l(m_mu);
        m_stop = true;
    }
    m_cv.notify_all();
    m_thread.join();
}

void file_hasher::advance(uint64_t readable) {
    {
        std::lock_guard<std::mutex> l(m_mu);
        if (readable <= m_readable) return;
        m_readable = readable;
    }
    m_cv.notify_all();
}

bool file_hasher::finish(uint64_t total, digest& out, int& err) {
    std::unique_lock<std::mutex> l(m_mu);
    m_total = total;
    if (m_readable < total) m_readable = total;
    m_cv.notify_all();
    m_cv.wait(l, [&] { return m_failed || m_hashed >= total; });
    err = m_err;
    if (m_failed || m_hashed != total) return false;
    out = m_sha.finish();
    return true;
}

void file_hasher::run() {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[kBlock]);
    std::unique_lock<std::mutex> l(m_mu);
    for (;;) {
        m_cv.wait(l, [&] { return m_stop || (m_hashed < m_readable && m_hashed < m_total); });
        if (m_stop) return;
        const uint64_t off = m_hashed;
        const size_t want = size_t(std::min<uint64_t>({kBlock, m_readable - off, m_total - off}));
        l.unlock();
        ssize_t r;
        do {
            r = ::pread(m_fd, buf.get(), want, off_t(off));
        } while (r < 0 && errno == EINTR);
        if (r > 0) m_sha.update(buf.get(), size_t(r));
        l.lock();
        if (r <= 0) {  // an error, or the file ended before the bytes promised
            m_failed = true;
            m_err = r < 0 ? errno : 0;
            m_cv.notify_all();
            return;
        }
        m_hashed += uint64_t(r);
        if (m_hashed >= m_total) m_cv.notify_all();
    }
}

}  // namespace odl::files
