// SPDX-License-Identifier: MIT
#include "http_server.h"

#include <chrono>
#include <optional>
#include <stdexcept>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace odl::daemon {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr auto kTimeout = std::chrono::seconds(5);  // a whole request and its answer
constexpr std::size_t kMaxRequestBytes = 8192;

/// One connection: requests in turn until the client closes or times out.
class session : public std::enable_shared_from_this<session> {
public:
    session(tcp::socket s, const http_server::handler_fn& handler) : m_stream(std::move(s)), m_handler(handler) {}
    void start() { read(); }

private:
    void read() {
        m_parser.emplace();
        m_parser->body_limit(kMaxRequestBytes);
        m_parser->header_limit(kMaxRequestBytes);
        m_stream.expires_after(kTimeout);
        http::async_read(m_stream, m_buf, *m_parser,
                         [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
    }
    void on_read(beast::error_code ec) {
        if (ec == http::error::end_of_stream || ec == beast::error::timeout || ec == asio::error::connection_reset)
            return close();
        if (ec) return reply(http::status::bad_request, "malformed request\n", false);
        const auto& req = m_parser->get();
        const bool post = req.method() == http::verb::post;
        if (req.method() != http::verb::get && req.method() != http::verb::head && !post)
            return reply(http::status::method_not_allowed, "only GET, HEAD and POST\n", req.keep_alive());
        http_server::reply r;
        try {
            r = m_handler({post, std::string(req.target())});
        } catch (const std::exception& e) {
            return reply(http::status::internal_server_error, std::string(e.what()) + "\n", false);
        }
        reply(http::int_to_status(r.status), std::move(r.body), req.keep_alive(), r.type,
              req.method() == http::verb::head);
    }
    /// @head: the headers of the answer, its Content-Length included, no body.
    void reply(http::status st, std::string body, bool keep, const std::string& type = "text/plain; charset=utf-8",
               bool head = false) {
        auto res = std::make_shared<http::response<http::string_body>>(st, 11);
        res->set(http::field::server, "odl-daemon");
        res->set(http::field::content_type, type);
        // Nothing the daemon serves may be framed or cached by another page.
        res->set(http::field::cache_control, "no-store");
        res->set("X-Frame-Options", "DENY");
        res->keep_alive(keep);
        res->body() = std::move(body);
        res->prepare_payload();
        if (head) res->body().clear();
        m_stream.expires_after(kTimeout);
        http::async_write(m_stream, *res, [self = shared_from_this(), res, keep](beast::error_code ec, std::size_t) {
            if (ec || !keep) return self->close();
            self->read();
        });
    }
    void close() {
        beast::error_code ec;
        m_stream.socket().shutdown(tcp::socket::shutdown_both, ec);
    }

    beast::tcp_stream m_stream;
    beast::flat_buffer m_buf;
    std::optional<http::request_parser<http::string_body>> m_parser;
    http_server::handler_fn m_handler;
};

}  // namespace

struct http_server::impl {
    asio::io_context io{1};
    tcp::acceptor acceptor{io};
    handler_fn handler;

    void accept() {
        acceptor.async_accept([this](beast::error_code ec, tcp::socket s) {
            if (ec == asio::error::operation_aborted) return;
            if (!ec) std::make_shared<session>(std::move(s), handler)->start();
            accept();
        });
    }
};

http_server::http_server(const std::string& what, const std::string& address, uint16_t port, handler_fn handler)
    : m_impl(std::make_unique<impl>()) {
    m_impl->handler = std::move(handler);
    beast::error_code ec;
    const auto addr = asio::ip::make_address(address == "localhost" ? "127.0.0.1" : address, ec);
    if (ec) throw std::runtime_error(what + ": '" + address + "' is not an IP address (127.0.0.1, ::1 or localhost)");
    if (!addr.is_loopback())
        throw std::runtime_error(what + ": " + address + " is not a loopback address: it is for this host only");
    const tcp::endpoint ep(addr, port);
    auto& a = m_impl->acceptor;
    a.open(ep.protocol(), ec);
    if (!ec) a.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) a.bind(ep, ec);
    if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
    if (ec)
        throw std::runtime_error(what + ": cannot listen on " + address + " port " + std::to_string(port) + ": " +
                                 ec.message());
    m_port = a.local_endpoint().port();
    m_impl->accept();
    m_thread = std::thread([this] { m_impl->io.run(); });
}

http_server::~http_server() {
    m_impl->io.stop();
    if (m_thread.joinable()) m_thread.join();
}

}  // namespace odl::daemon
