// SPDX-License-Identifier: MIT
// Paths inside a served folder, resolved by the kernel (openat2 with
// RESOLVE_BENEATH): no '..', absolute path or symbolic link can lead out of
// it, whatever the name says or the folder holds.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>

namespace odl::files {

/// An owned file descriptor.
class unique_fd {
public:
    unique_fd() = default;
    explicit unique_fd(int fd) : m_fd(fd) {}
    ~unique_fd();
    unique_fd(unique_fd&& o) noexcept : m_fd(std::exchange(o.m_fd, -1)) {}
    unique_fd& operator=(unique_fd&& o) noexcept;
    int get() const { return m_fd; }
    explicit operator bool() const { return m_fd >= 0; }

private:
    int m_fd = -1;
};

/// openat2(@root, @rel, @flags, @mode) beneath @root, symbolic links
/// refused. Returns the descriptor or -errno (EXDEV/ELOOP: it would leave).
int open_beneath(int root, const std::string& rel, int flags, mode_t mode = 0);

/// The directory @rel (made with its parents, @mode, when @create) beneath
/// @root, as a descriptor; -errno on failure. An empty @rel is @root itself.
int dir_beneath(int root, const std::string& rel, bool create, mode_t mode = 0755);

/// Splits "a/b/c" into {"a/b", "c"} ({"", "c"} for "c").
std::pair<std::string, std::string> split_parent(const std::string& rel);

/// Names the service keeps to itself (partial files): never listed or sent.
bool is_partial_name(const std::string& name);
/// Names of the service's own: partial files, `.odl-trash` (removed files),
/// `.odl-sync` (odl sync's state). Never listed, sent or written by a peer.
bool is_private_name(const std::string& name);
/// Does any component of the relative @path have a private name?
bool has_private_component(const std::string& path);
/// The folder removed files go to, in each served or synced folder.
constexpr const char* kTrashDir = ".odl-trash";
/// odl sync's state, in each synced folder.
constexpr const char* kSyncDir = ".odl-sync";
/// How partial files' names begin.
constexpr const char* kPartPrefix = ".odl-part.";

}  // namespace odl::files
