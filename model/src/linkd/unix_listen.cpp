// SPDX-License-Identifier: MIT
#include "unix_listen.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace odl::model::linkd {

int listen_unix(const std::string& path, std::string& err) {
    struct sockaddr_un sun {};
    sun.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof(sun.sun_path)) {
        err = fmt::format("bad socket path '{}'", path);
        return -1;
    }
    std::memcpy(sun.sun_path, path.c_str(), path.size());
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        err = fmt::format("socket: {}", std::strerror(errno));
        return -1;
    }
    ::unlink(path.c_str());  // a stale socket from a killed run
    if (::bind(fd, reinterpret_cast<struct sockaddr*>(&sun), sizeof(sun)) < 0 || ::listen(fd, 8) < 0) {
        err = fmt::format("{}: {}", path, std::strerror(errno));
        ::close(fd);
        return -1;
    }
    return fd;
}

}  // namespace odl::model::linkd
