// SPDX-License-Identifier: MIT
// odl-linkd: the model server the QEMU odl-usb4-nhi devices connect to.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <string>

#include "odl/model/linkd/server.h"
#include "stub_model.h"

namespace {
odl::model::linkd::server* g_server = nullptr;
void on_signal(int) {
    if (g_server) g_server->stop();
}
}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"odl-linkd: OdinLink model server for QEMU odl-usb4-nhi devices"};
    odl::model::linkd::server_config cfg;
    unsigned hosts = 2;
    std::string backend = "stub";
    app.add_option("-s,--socket", cfg.socket_path, "unix socket path to listen on")->required();
    app.add_option("-n,--hosts", hosts, "number of hosts (NHIs) served")->check(CLI::Range(1, 16));
    app.add_option("--backend", backend,
                   "model behind the sockets: 'stub' (register-file test double)")
        ->check(CLI::IsMember({"stub"}));
    app.add_flag("-v,--verbose", cfg.verbose, "log connection details");
    CLI11_PARSE(app, argc, argv);

    odl::model::linkd::stub_model model(hosts);
    odl::model::linkd::server srv(cfg, model);
    std::string err;
    if (!srv.listen(err)) {
        fmt::print(stderr, "odl-linkd: {}\n", err);
        return 1;
    }
    g_server = &srv;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
    fmt::print(stderr, "odl-linkd: serving {} hosts on {} (backend {}, free-running)\n",
               hosts, cfg.socket_path, backend);
    srv.run();
    fmt::print(stderr, "odl-linkd: stopped\n");
    return 0;
}
