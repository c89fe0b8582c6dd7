// SPDX-License-Identifier: MIT
// odl-linkd: the model server the QEMU odl-usb4-nhi devices connect to.
#include <fmt/format.h>
#include <signal.h>

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include <fstream>
#include <memory>

#include "odl/model/linkd/recorder.h"
#include "odl/model/linkd/server.h"
#include "stub_model.h"
#ifdef ODL_LINKD_HAVE_MODEL
#include <systemc>

#include "odl/model/linkd/fault.h"
#include "odl/model/linkd/model_backend_sc.h"
// libsystemc owns main() and calls sc_main() after setting the kernel up.
#define ODL_LINKD_MAIN sc_main
#else
#define ODL_LINKD_MAIN main
#endif

namespace {
odl::model::linkd::server* g_server = nullptr;
void on_signal(int) {
    if (g_server) g_server->stop();
}
}  // namespace

int ODL_LINKD_MAIN(int argc, char** argv) {
    CLI::App app{"odl-linkd: OdinLink model server for QEMU odl-usb4-nhi devices"};
    odl::model::linkd::server_config cfg;
    unsigned hosts = 2;
#ifdef ODL_LINKD_HAVE_MODEL
    std::string backend = "model";
#else
    std::string backend = "stub";
#endif
    app.add_option("-s,--socket", cfg.socket_path, "unix socket path to listen on")->required();
    app.add_option("-c,--control", cfg.control_path,
                   "unix socket for scenario commands (cable plug|unplug, status)");
    app.add_option("-n,--hosts", hosts, "number of hosts (NHIs) served")->check(CLI::Range(1, 16));
    app.add_option("--backend", backend,
                   "model behind the sockets: 'model' (SystemC NHI, router, cable) or "
                   "'stub' (register-file test double, no rings)")
        ->check(CLI::IsMember({"model", "stub"}));
    std::string gen = "gen3";
    unsigned lanes = 2;
    app.add_option("--gen", gen, "cable generation (model backend)")
        ->check(CLI::IsMember({"tb3", "gen2", "gen3", "gen4"}));
    app.add_option("--lanes", lanes, "lanes per direction (model backend)")->check(CLI::Range(1, 2));
    std::string record;
    app.add_option("--record", record,
                   "write every MMIO, DMA and IRQ at the model seam to this file (for replay tests)");
    bool no_shared_ram = false;
    app.add_flag("--no-shared-ram", no_shared_ram,
                 "refuse guest RAM offered by the devices: every DMA is a message round trip "
                 "(slower; for comparison)");
    std::vector<std::string> faults;
    app.add_option("--fault", faults,
                   "hostile peer (model backend, repeatable): rewrite odl_tb5 LOGINs or damage "
                   "DMA frames or split pairs on the cable; each injection is logged. SPEC: "
                   "login:FIELD=VALUE[,FIELD=VALUE...][,count=N][,skip=M][,every=K][,from=A|B] | "
                   "login_resp:FIELD=VALUE[,...] (same keys) | "
                   "data:MODE[,count=N][,skip=M][,every=K][,seed=S][,value=V][,bits=B]"
                   "[,frames=data|all][,from=A|B] with MODE flip|payload|type|flags|stream|len|"
                   "reserved|seq|msg_len|offset|truncate|drop|duplicate | "
                   "split:MODE[,count=N][,skip=M][,every=K][,value=V][,from=A|B] with MODE "
                   "drop-header|drop-raw|len|raw-pdf (odl_tb5 split pairs) (docs/vm.md). Also at run "
                   "time on --control: 'fault add SPEC', 'fault clear', 'fault status'");
    app.add_flag("-v,--verbose", cfg.verbose, "log connection details");
    CLI11_PARSE(app, argc, argv);
    cfg.shared_ram = !no_shared_ram;
#ifdef ODL_LINKD_HAVE_MODEL
    // Each injection is one line on stderr (the testbed's linkd.log).
    odl::model::linkd::fault_injector injector(
        [](const std::string& line) { fmt::print(stderr, "odl-linkd: {}\n", line); });
    for (const auto& f : faults) {
        std::string err;
        auto spec = odl::model::linkd::parse_fault(f, err);
        if (!spec) {
            fmt::print(stderr, "odl-linkd: {}\n", err);
            return 1;
        }
        injector.add(std::move(*spec));
    }
#endif

    std::unique_ptr<odl::model::linkd::model_backend> model;
    if (backend == "stub") {
        if (!faults.empty()) {
            fmt::print(stderr, "odl-linkd: --fault needs the model backend (it acts on the cable)\n");
            return 1;
        }
        model = std::make_unique<odl::model::linkd::stub_model>(hosts);
    } else {
#ifdef ODL_LINKD_HAVE_MODEL
        if (hosts != 2) {
            fmt::print(stderr, "odl-linkd: the model backend serves exactly 2 hosts\n");
            return 1;
        }
        odl::model::linkd::sc_backend_config sc;
        sc.link.gen = gen == "tb3"    ? odl::model::generation::tb3
                      : gen == "gen2" ? odl::model::generation::gen2
                      : gen == "gen3" ? odl::model::generation::gen3
                                      : odl::model::generation::gen4;
        sc.link.lanes = lanes;
        if (auto why = odl::model::validate(sc.link)) {
            fmt::print(stderr, "odl-linkd: bad cable: {}\n", *why);
            return 1;
        }
        auto sc_model = std::make_unique<odl::model::linkd::sc_backend>(sc);
        // The cable gets the tap only while a spec is armed: no faults, no
        // per-frame cost. The control socket may arm or clear them later.
        auto retap = [&injector, m = sc_model.get()] {
            if (injector.armed())
                m->set_tap([&injector](int from, odl::model::frame& f) {
                    return injector.apply(from, f);
                });
            else
                m->set_tap({});
        };
        retap();
        cfg.fault_command = [&injector, retap](const std::string& cmd) {
            std::string reply = injector.command(cmd);
            retap();
            return reply;
        };
        model = std::move(sc_model);
#else
        fmt::print(stderr, "odl-linkd: built without the SystemC model\n");
        return 1;
#endif
    }
    std::ofstream record_out;
    std::unique_ptr<odl::model::linkd::recording_backend> recorder;
    if (!record.empty()) {
        record_out.open(record);
        if (!record_out) {
            fmt::print(stderr, "odl-linkd: cannot write {}\n", record);
            return 1;
        }
        recorder = std::make_unique<odl::model::linkd::recording_backend>(*model, record_out);
    }
    odl::model::linkd::server srv(cfg, recorder ? static_cast<odl::model::linkd::model_backend&>(*recorder)
                                                : *model);
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
    fmt::print(stderr, "odl-linkd: serving {} hosts on {} (backend {}, cable {} x{}, free-running)\n",
               hosts, cfg.socket_path, backend, gen, lanes);
    srv.run();
    fmt::print(stderr, "odl-linkd: stopped\n");
    return 0;
}
