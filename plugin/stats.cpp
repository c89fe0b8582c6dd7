// SPDX-License-Identifier: MIT
// Creates and maps the per-process statistics file.
#include "stats.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>

#include <cerrno>
#include <cstring>

namespace odl::plugin {
namespace {

uint64_t unix_ns() {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

/// mkdir -p for the runtime directory, private to the user.
bool make_dirs(const std::string& dir) {
    for (size_t pos = 1; pos <= dir.size(); ++pos) {
        if (pos != dir.size() && dir[pos] != '/') continue;
        const std::string part = dir.substr(0, pos);
        if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) return false;
    }
    return true;
}

}  // namespace

bool stats_mapping::open(const std::string& process, std::string& why) {
    close();
    const std::string dir = stats_dir();
    if (!make_dirs(dir)) {
        why = "cannot create " + dir + ": " + std::strerror(errno);
        return false;
    }
    m_path = dir + "/" + stats_file_name(getpid());
    const int fd = ::open(m_path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        why = "cannot create " + m_path + ": " + std::strerror(errno);
        return false;
    }
    void* p = MAP_FAILED;
    if (ftruncate(fd, sizeof(stats_file)) == 0)
        p = mmap(nullptr, sizeof(stats_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) {
        why = "cannot map " + m_path + ": " + std::strerror(err);
        return false;
    }
    m_file = static_cast<stats_file*>(p);
    std::memset(m_file, 0, sizeof(*m_file));
    m_file->version = kStatsVersion;
    m_file->pid = uint32_t(getpid());
    m_file->start_unix_ns = unix_ns();
    copy_str(m_file->process, sizeof(m_file->process), process);
    // Magic last: a reader never sees a half-initialised file as valid.
    __atomic_store_n(&m_file->magic, kStatsMagic, __ATOMIC_RELEASE);
    return true;
}

void stats_mapping::close() {
    if (m_file) {
        stat_store(m_file->update_unix_ns, unix_ns());
        munmap(m_file, sizeof(stats_file));
    }
    m_file = nullptr;
    m_dummy = stats_file{};
}

void stats_mapping::abandon() {
    if (m_file) munmap(m_file, sizeof(stats_file));
    m_file = nullptr;
    m_dummy = stats_file{};
}

}  // namespace odl::plugin
