// SPDX-License-Identifier: MIT
#include "safe_dir.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace odl::files {

unique_fd::~unique_fd() {
    if (m_fd >= 0) ::close(m_fd);
}

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
    if (this != &o) {
        if (m_fd >= 0) ::close(m_fd);
        m_fd = std::exchange(o.m_fd, -1);
    }
    return *this;
}

int open_beneath(int root, const std::string& rel, int flags, mode_t mode) {
    open_how how{};
    how.flags = uint64_t(flags | O_CLOEXEC);
    how.mode = (flags & O_CREAT) ? mode : 0;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    const long fd = ::syscall(SYS_openat2, root, rel.empty() ? "." : rel.c_str(), &how, sizeof(how));
    return fd < 0 ? -errno : int(fd);
}

int dir_beneath(int root, const std::string& rel, bool create, mode_t mode) {
    int fd = open_beneath(root, rel, O_RDONLY | O_DIRECTORY);
    if (fd >= 0 || !create || fd != -ENOENT) return fd;
    // Make it one component at a time, each beneath the last.
    unique_fd cur(::dup(root));
    if (!cur) return -errno;
    size_t start = 0;
    while (start <= rel.size()) {
        size_t end = rel.find('/', start);
        if (end == std::string::npos) end = rel.size();
        const std::string name = rel.substr(start, end - start);
        if (::mkdirat(cur.get(), name.c_str(), mode) != 0 && errno != EEXIST) return -errno;
        const int next = open_beneath(cur.get(), name, O_RDONLY | O_DIRECTORY);
        if (next < 0) return next;
        cur = unique_fd(next);
        start = end + 1;
    }
    fd = ::dup(cur.get());
    return fd < 0 ? -errno : fd;
}

std::pair<std::string, std::string> split_parent(const std::string& rel) {
    const size_t slash = rel.rfind('/');
    if (slash == std::string::npos) return {"", rel};
    return {rel.substr(0, slash), rel.substr(slash + 1)};
}

bool is_partial_name(const std::string& name) { return name.rfind(kPartPrefix, 0) == 0; }

bool is_private_name(const std::string& name) {
    return is_partial_name(name) || name == kTrashDir || name == kSyncDir;
}

bool has_private_component(const std::string& path) {
    size_t start = 0;
    while (start <= path.size()) {
        size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        if (is_private_name(path.substr(start, end - start))) return true;
        start = end + 1;
    }
    return false;
}

}  // namespace odl::files
