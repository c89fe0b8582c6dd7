// SPDX-License-Identifier: MIT
// odl-daemon: publishes this host's OdinLink devices and peers on D-Bus
// (org.odinlink.Daemon1.xml) and signals every change. One thread, one
// poll(2) over the bus, the udev monitor and a signalfd: udev events and
// SIGHUP re-read the devices, SIGTERM / SIGINT end it quietly. Runs in the
// foreground (systemd: odl-daemon.service, Type=dbus). Tests asked for over
// the bus run as `odl perf` children whose pipes join the same poll.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <vector>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <cstdlib>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <sdbus-c++/sdbus-c++.h>

#include "odl_cli_checks.h"
#include "files/clock.h"
#include "metrics.h"
#include "plugin_stats.h"
#include "http_server.h"
#include "page_requests.h"
#include "status_page.h"
#include "odl/build_info.h"
#include "service.h"
#include "udev_events.h"

namespace {

uint64_t now_us() { return odl::files::now_ns() / 1000u; }

/// The odl CLI installed beside this program.
std::string odl_beside_me() {
    std::error_code ec;
    const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
    return ec ? std::string("odl") : (self.parent_path() / "odl").string();
}

/// "PORT", "ADDRESS:PORT" or "[IPv6]:PORT" (the address defaults to 127.0.0.1).
std::pair<std::string, uint16_t> listen_spec(const std::string& opt, const std::string& s) {
    std::string addr = "127.0.0.1", port = s;
    if (!s.empty() && s[0] == '[') {
        const auto close = s.find("]:");
        if (close == std::string::npos) throw std::runtime_error(opt + " '" + s + "': want [ADDRESS]:PORT");
        addr = s.substr(1, close - 1);
        port = s.substr(close + 2);
    } else if (const auto colon = s.rfind(':'); colon != std::string::npos) {
        addr = s.substr(0, colon);
        port = s.substr(colon + 1);
    }
    char* end = nullptr;
    const unsigned long p = std::strtoul(port.c_str(), &end, 10);
    if (port.empty() || *end || p > 65535) throw std::runtime_error(opt + " '" + s + "': the port must be 0..65535");
    return {addr, uint16_t(p)};
}

std::unique_ptr<sdbus::IConnection> connect(const std::string& bus) {
    if (bus == "system") return sdbus::createSystemBusConnection();
    if (bus == "session") return sdbus::createSessionBusConnection();
    return sdbus::createSessionBusConnectionWithAddress(bus);
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"odl-daemon: OdinLink devices and peers on D-Bus (org.odinlink.Daemon1)"};
    std::string bus = "system", root;
    bool no_udev = false, verbose = false;
    unsigned counters_ms = 1000;
    std::string metrics, status;
    app.set_version_flag("--version", std::string("odl-daemon " ODL_BUILD_VERSION));
    app.add_option("--bus", bus, "system, session, or a D-Bus address (unix:path=...)")->capture_default_str()
        ->check(odl::cli::dbus_bus());
    app.add_option("--root", root, "read sysfs, /dev and /proc under this directory (tests)")
        ->check(CLI::ExistingDirectory);
    app.add_flag("--no-udev", no_udev, "no udev events: re-read only on SIGHUP and Rescan()");
    app.add_option("--counters-interval-ms", counters_ms,
                   "re-read the counters this often while a device is in a session (0: never)")
        ->capture_default_str()
        ->check(CLI::Range(0u, 3600000u));
    app.add_option("--metrics", metrics,
                   "serve Prometheus metrics at http://ADDRESS:PORT/metrics, loopback only ([ADDRESS:]PORT; off "
                   "by default)");
    app.add_option("--status-page", status,
                   "serve the live status page on http://ADDRESS:PORT/, loopback only, each user with a token "
                   "of their own (D-Bus method StatusPage) ([ADDRESS:]PORT; off by default)");
    std::string odl = odl_beside_me(), test_backend = "kernel";
    // No default shown: it is where this binary runs from (the man page is made in the build tree).
    app.add_option("--odl", odl, "the odl CLI that runs the tests asked for over the bus (RunTest; default: the odl "
                                 "beside this program)");
    app.add_option("--test-backend", test_backend, "the backend of those tests (loopback: tests of the daemon)")
        ->capture_default_str()
        ->check(CLI::IsMember({"kernel", "sim", "loopback"}));
    std::vector<std::string> plugin_dirs;
    app.add_option("--plugin-stats-dir", plugin_dirs,
                   "also read the NCCL plugin's statistics here (besides /run/user/UID/odl; repeatable)");
    unsigned test_limit_s = 120;
    std::string keys_dir, serve_dir;
    bool answer_tests = false;
    app.add_option("--serve-files", serve_dir, "serve this folder to paired peers on every device "
                                                                 "(odl files serve, one child per device; the devices "
                                                                 "are then held)")
        ->check(CLI::ExistingDirectory);
    app.add_flag("--answer-tests", answer_tests, "answer the peer's perf tests on every device (odl perf --server, "
                                                 "one child per device; the devices are then held; with "
                                                 "--serve-files one odl files serve --answer-tests does both)");
    bool on_demand = false;
    app.add_flag("--on-demand", on_demand, "with --serve-files or --answer-tests: hold a device only while the "
                                           "peer has its end open and this host does not, one session at a time "
                                           "(odl_tb5 signals the peer's open)");
    std::string fetch_dir;
    app.add_option("--fetch-to", fetch_dir, "the status page's file browser fetches the peer's files into this "
                                            "folder (odl cp; off by default)")
        ->check(CLI::ExistingDirectory);
    app.add_option("--keys", keys_dir, "the pair keys of --serve-files and of the status page's file browser "
                                       "(default: odl's, /etc/odl/pairs for root)");
    app.add_option("--test-limit", test_limit_s, "seconds a test may take before it is stopped")
        ->capture_default_str()
        ->check(CLI::Range(1u, 3600u));
    app.add_flag("-v,--verbose", verbose, "log each refresh");
    odl::cli::decimal_integers(app);
    CLI11_PARSE(app, argc, argv);
    if (on_demand && serve_dir.empty() && !answer_tests) {
        fmt::print(stderr, "odl-daemon: --on-demand needs --serve-files DIR or --answer-tests (what to serve)\n");
        return 2;
    }

    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    sigprocmask(SIG_BLOCK, &mask, nullptr);
    const int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) {
        std::perror("odl-daemon: signalfd");
        return 1;
    }

    try {
        std::optional<odl::daemon::udev_events> events;
        if (!no_udev) events.emplace();
        using odl::daemon::http_server;
        std::unique_ptr<http_server> prom;
        if (!metrics.empty()) {
            const auto [addr, port] = listen_spec("--metrics", metrics);
            prom = std::make_unique<http_server>("metrics", addr, port, [root, plugin_dirs](const http_server::request& r) {
                if (r.target != "/metrics") return http_server::reply{404, "text/plain; charset=utf-8", "only /metrics\n"};
                if (r.post) return http_server::reply{405, "text/plain; charset=utf-8", "only GET and HEAD\n"};
                return http_server::reply{
                    200, "text/plain; version=0.0.4; charset=utf-8",
                    odl::daemon::render_metrics(odl::host::read_host_view(root), ODL_BUILD_VERSION,
                                                odl::host::plugin_stats_of_host(root, plugin_dirs, true)["processes"])};
            });
            if (verbose) fmt::print(stderr, "odl-daemon: metrics on {} port {}\n", addr, prom->port());
        }
        odl::daemon::status_tokens tokens;
        odl::daemon::test_records tests, listings, fetches;
        // Tests the page asks for start on this loop (the service is not
        // thread-safe); svc is set once it exists, before the page answers.
        odl::daemon::page_requests page_jobs;
        odl::daemon::service* svc_ptr = nullptr;
        // Runs @act on the loop; the bus's error names become HTTP statuses.
        const auto on_loop = [&page_jobs, &svc_ptr](std::function<void(odl::daemon::service&)> act) {
            return page_jobs.submit([&svc_ptr, act]() -> odl::daemon::page_requests::answer {
                if (!svc_ptr) return {503, "the daemon is starting"};
                try {
                    act(*svc_ptr);
                } catch (const sdbus::Error& e) {
                    const std::string& n = e.getName();
                    const unsigned st = n == "org.odinlink.Error.NoSuchDevice" ? 404
                                        : n == "org.odinlink.Error.InvalidArgs" ? 400
                                        : n == "org.odinlink.Error.Busy"        ? 409
                                        : n == "org.odinlink.Error.Exists"      ? 409
                                                                                : 500;
                    return {st, e.getMessage()};
                }
                return {};
            });
        };
        odl::daemon::status_page_context page_ctx{
            tokens, root, ODL_BUILD_VERSION, tests, plugin_dirs,
            [on_loop](const std::string& device, const std::string& test) {
                return on_loop([device, test](odl::daemon::service& s) { s.start_test(device, test); });
            },
            [on_loop](const std::string& device, const std::string& path) {
                return on_loop([device, path](odl::daemon::service& s) { s.browse(device, path); });
            },
            &listings};
        if (!fetch_dir.empty()) {
            page_ctx.fetch = [on_loop](const std::string& device, const std::string& path) {
                return on_loop([device, path](odl::daemon::service& s) { s.fetch(device, path); });
            };
            page_ctx.fetches = &fetches;
            page_ctx.fetch_dir = std::filesystem::absolute(fetch_dir).lexically_normal().string();
        }
        std::unique_ptr<http_server> page;
        std::string page_base;
        if (!status.empty()) {
            const auto [addr, port] = listen_spec("--status-page", status);
            page = std::make_unique<http_server>("status page", addr, port, [&page_ctx](const http_server::request& r) {
                return odl::daemon::status_request(r, page_ctx);
            });
            page_base = fmt::format("http://{}:{}/", addr.find(':') != std::string::npos ? "[" + addr + "]" : addr,
                                    page->port());
            if (verbose) fmt::print(stderr, "odl-daemon: status page on {} port {}\n", addr, page->port());
        }
        auto conn = connect(bus);
        odl::daemon::test_runner runner(odl, test_backend, test_limit_s);
        odl::daemon::service svc(*conn, root, ODL_BUILD_VERSION, runner, tests, [&](uid_t uid) {
            return page ? page_base + "?token=" + tokens.issue(uid) : std::string();
        });
        for (const auto& d : plugin_dirs) svc.add_plugin_stats_dir(d);
        svc.enable_file_browser(listings, keys_dir);
        if (!fetch_dir.empty()) svc.enable_fetch(fetches, page_ctx.fetch_dir);
        std::unique_ptr<odl::daemon::peer_service> peer;
        if (!serve_dir.empty() || answer_tests) {
            peer = std::make_unique<odl::daemon::peer_service>(
                odl::daemon::peer_service::config{odl, serve_dir, answer_tests, keys_dir, test_backend, on_demand},
                [&svc, verbose](const std::string& device, const std::string& state) {
                    if (verbose || state.rfind("restarting", 0) == 0)
                        fmt::print(stderr, "odl-daemon: {}: {}\n", device, state.empty() ? "stopped serving" : state);
                    svc.set_peer_service_state(device, state);
                });
            svc.enable_peer_service(*peer);
        }
        svc.refresh();
        svc_ptr = &svc;
        // The name last: a client that sees it finds the objects there.
        conn->requestName(odl::daemon::kBusName);
        if (verbose)
            fmt::print(stderr, "odl-daemon: {} on the {} bus; events from {}\n", odl::daemon::kBusName, bus,
                       events ? events->source() : "SIGHUP only");
        uint64_t next_counters = now_us() + uint64_t(counters_ms) * 1000u;
        for (;;) {
            const auto pd = conn->getEventLoopPollData();
            std::vector<pollfd> fds{{pd.fd, pd.events, 0},
                                    {sfd, POLLIN, 0},
                                    {events ? events->fd() : -1, POLLIN, 0},
                                    {page_jobs.fd(), POLLIN, 0}};
            for (int fd : runner.fds()) fds.push_back({fd, POLLIN, 0});
            if (peer)
                for (int fd : peer->fds()) fds.push_back({fd, POLLIN, 0});
            uint64_t deadline = std::min({pd.timeout_usec, runner.deadline_us(), peer ? peer->deadline_us() : UINT64_MAX});
            if (counters_ms && svc.any_session() && next_counters < deadline) deadline = next_counters;
            const uint64_t t = now_us();
            const int timeout_ms = deadline == UINT64_MAX ? -1 : deadline <= t ? 0 : int((deadline - t + 999) / 1000);
            if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) throw std::runtime_error("poll failed");
            runner.handle();
            if (peer) peer->handle();
            if (fds[3].revents & POLLIN) page_jobs.run_pending();
            bool rescan = false;
            if (fds[1].revents & POLLIN) {
                signalfd_siginfo si{};
                while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
                    if (si.ssi_signo == SIGHUP)
                        rescan = true;
                    else
                        return 0;  // SIGTERM, SIGINT: the objects go with the connection
                }
            }
            if (events && (fds[2].revents & POLLIN) && events->drain()) rescan = true;
            if (counters_ms && now_us() >= next_counters) {
                next_counters = now_us() + uint64_t(counters_ms) * 1000u;
                rescan |= svc.any_session();
            }
            if (rescan) {
                const unsigned n = svc.refresh();
                if (verbose && n) fmt::print(stderr, "odl-daemon: {} device(s) changed\n", n);
            }
            while (conn->processPendingRequest()) {
            }
        }
    } catch (const sdbus::Error& e) {
        fmt::print(stderr, "odl-daemon: D-Bus: {}: {}\n", e.getName(), e.getMessage());
        return 1;
    } catch (const std::exception& e) {
        fmt::print(stderr, "odl-daemon: {}\n", e.what());
        return 1;
    }
}
