// SPDX-License-Identifier: MIT
// One raw HTTP exchange over loopback, for the tests of odl-daemon's
// endpoints (metrics, status page): the request exactly as written, so a
// test can also send what no client library would.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace odl::test {

/// One HTTP exchange with the daemon's endpoint: the raw request in, the
/// status line and the body out.
struct http_reply {
    std::string status, headers, body;
};
inline http_reply http(uint16_t port, const std::string& request) {
    http_reply r;
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
        close(fd);
        return r;
    }
    (void)!write(fd, request.data(), request.size());
    std::string all;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0) all.append(buf, size_t(n));
    close(fd);
    const auto eol = all.find("\r\n"), end = all.find("\r\n\r\n");
    if (eol == std::string::npos || end == std::string::npos) return r;
    r.status = all.substr(0, eol);
    r.headers = all.substr(eol + 2, end - eol - 2);
    r.body = all.substr(end + 4);
    return r;
}

}  // namespace odl::test
