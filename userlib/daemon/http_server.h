// SPDX-License-Identifier: MIT
// The daemon's HTTP endpoints (the Prometheus metrics, the status page):
// GET and HEAD (and POST where a handler takes it) over HTTP/1.1 on a
// loopback address only, each server on its
// own thread (Boost.Beast) so a slow client never holds up the D-Bus loop.
// The handler sees the request target and answers; each request reads the
// host afresh.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace odl::daemon {

class http_server {
public:
    struct reply {
        unsigned status = 200;
        std::string type = "text/plain; charset=utf-8";
        std::string body;
    };
    struct request {
        bool post = false;   ///< POST (its body is not read: all is in the query); else GET or HEAD
        std::string target;  ///< the path and query ("/api/state?token=...")
    };
    /// Runs on the server's thread; an exception is a 500 with its text.
    using handler_fn = std::function<reply(const request& req)>;
    /// Listens on @address (127.0.0.1, ::1 or localhost) and @port (0: any
    /// free port). Throws std::runtime_error with the reason, prefixed by
    /// @what ("metrics"): not a loopback address, the port taken, ...
    http_server(const std::string& what, const std::string& address, uint16_t port, handler_fn handler);
    ~http_server();
    http_server(const http_server&) = delete;
    http_server& operator=(const http_server&) = delete;

    /// The port it listens on.
    uint16_t port() const { return m_port; }

private:
    struct impl;
    std::unique_ptr<impl> m_impl;
    uint16_t m_port = 0;
    std::thread m_thread;
};

}  // namespace odl::daemon
