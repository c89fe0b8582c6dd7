// SPDX-License-Identifier: MIT
// The Prometheus endpoint: GET /metrics over HTTP/1.1 on a loopback
// address only, served by its own thread (Boost.Beast) so a slow scraper
// never holds up the D-Bus loop. Each scrape reads the host afresh.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace odl::daemon {

class metrics_server {
public:
    using render_fn = std::function<std::string()>;
    /// Listens on @address (127.0.0.1, ::1 or localhost) and @port (0: any
    /// free port). Throws std::runtime_error with the reason: not a
    /// loopback address, the port taken, ...
    metrics_server(const std::string& address, uint16_t port, render_fn render);
    ~metrics_server();
    metrics_server(const metrics_server&) = delete;
    metrics_server& operator=(const metrics_server&) = delete;

    /// The port it listens on.
    uint16_t port() const { return m_port; }

private:
    struct impl;
    std::unique_ptr<impl> m_impl;
    uint16_t m_port = 0;
    std::thread m_thread;
};

}  // namespace odl::daemon
