// SPDX-License-Identifier: MIT
#include "odl/model/linkd/unix_listen.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
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
    // Only a stale socket (from a killed run) is removed: a file at the path
    // is someone's data, and a socket a server still answers on is in use
    // (a second server took it over and, exiting, removed it).
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            err = fmt::format("{}: exists and is not a socket (not removing it)", path);
            ::close(fd);
            return -1;
        }
        const int probe = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        const bool live = probe >= 0 && ::connect(probe, reinterpret_cast<struct sockaddr*>(&sun), sizeof(sun)) == 0;
        const int why = errno;
        if (probe >= 0) ::close(probe);
        if (live || why != ECONNREFUSED) {
            err = fmt::format("{}: {}", path, live ? "another server is listening on it"
                                                   : fmt::format("in use ({})", std::strerror(why)));
            ::close(fd);
            return -1;
        }
        ::unlink(path.c_str());
    }
    if (::bind(fd, reinterpret_cast<struct sockaddr*>(&sun), sizeof(sun)) < 0 || ::listen(fd, 8) < 0) {
        err = fmt::format("{}: {}", path, std::strerror(errno));
        ::close(fd);
        return -1;
    }
    return fd;
}

unix_listener::~unix_listener() {
    if (m_fd < 0) return;
    ::close(m_fd);
    ::unlink(m_path.c_str());
}

bool unix_listener::open(const std::string& path, std::string& err) {
    m_fd = listen_unix(path, err);
    m_path = path;
    return m_fd >= 0;
}

int take_control(int listen_fd, std::string& cmd) {
    cmd.clear();
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return -1;
    struct pollfd p = {fd, POLLIN, 0};
    // One datagram: a command for a guest's agent may take a few KiB.
    std::string buf(8192, '\0');
    if (::poll(&p, 1, 1000) == 1) {
        const ssize_t n = ::recv(fd, buf.data(), buf.size(), MSG_DONTWAIT);
        cmd.assign(buf.data(), n > 0 ? static_cast<std::size_t>(n) : 0);
        while (!cmd.empty() && (cmd.back() == '\n' || cmd.back() == '\r' || cmd.back() == ' ')) cmd.pop_back();
    }
    return fd;
}

void reply_control(int fd, const std::string& reply) {
    ::send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    ::close(fd);
}

void answer_control(int listen_fd, const std::function<std::string(const std::string&)>& handler) {
    std::string cmd;
    const int fd = take_control(listen_fd, cmd);
    if (fd >= 0) reply_control(fd, handler(cmd));
}

}  // namespace odl::model::linkd
