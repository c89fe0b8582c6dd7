// SPDX-License-Identifier: MIT
// The listening sockets of odl-linkd (devices, sim programs, control) and
// the one-line control protocol both of its servers answer.
#pragma once

#include <functional>
#include <string>

namespace odl::model::linkd {

/// A non-blocking AF_UNIX SOCK_SEQPACKET socket listening on @path (a stale
/// socket file there is replaced). Returns the fd, or -1 with @err set.
int listen_unix(const std::string& path, std::string& err);

/// A listening socket that closes and removes its path when it goes.
class unix_listener {
public:
    unix_listener() = default;
    ~unix_listener();
    unix_listener(const unix_listener&) = delete;
    unix_listener& operator=(const unix_listener&) = delete;
    /// listen_unix() on @path; false with @err set.
    bool open(const std::string& path, std::string& err);
    /// -1 while not listening (poll() ignores it).
    int fd() const { return m_fd; }

private:
    int m_fd = -1;
    std::string m_path;
};

/// Takes one connection waiting on the control socket @listen_fd and reads
/// its command (one datagram, at most 1 s), without its trailing newline
/// and spaces. Returns the connection (-1: none was waiting); reply_control()
/// answers and closes it, now or later.
int take_control(int listen_fd, std::string& cmd);
/// Sends @reply on the control connection @fd and closes it.
void reply_control(int fd, const std::string& reply);
/// Answers one connection waiting on the control socket @listen_fd: reads
/// one command (at most 1 s), without its trailing newline and spaces,
/// sends what @handler replies (an empty command included) and closes.
void answer_control(int listen_fd, const std::function<std::string(const std::string&)>& handler);

}  // namespace odl::model::linkd
