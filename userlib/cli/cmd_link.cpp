// SPDX-License-Identifier: MIT
// `odl link [--json]`: per peer host, the link as the kernel trained it
// (generation, lanes each way) against the port's rating, with a warning
// when below it; per /dev/odl_tb5_N its session state, rings, the module's
// knobs and counters. Reads sysfs only (host_view.h), never opens a device.
#include <cstdlib>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "commands.h"
#include "doctor.h"
#include "host_json.h"
#include "host_view.h"

namespace odl::cli {

using namespace odl::host;
namespace {

struct link_options {
    bool json = false;
    std::string expect;
    std::string root;
};

std::string state_text(const odl_device& d) {
    std::string s = d.state.empty() ? "unknown" : d.state;
    if (d.local_open && d.peer_open) return s + " (open on both hosts)";
    if (d.local_open) return s + " (open here, not on the peer)";
    if (d.peer_open) return s + " (open on the peer, not here)";
    return s;
}

int run(const link_options& o) {
    std::optional<port_rating> expect;
    if (!o.expect.empty()) {
        expect = parse_expect(o.expect);
        if (!expect) {
            fmt::print(stderr, "odl: link: --expect '{}': {}\n", o.expect, kExpectUsage);
            return 2;
        }
    }
    const host_view v = read_host_view(o.root);
    const std::string knobs = link_knobs(v);
    if (o.json) {
        fmt::print("{}\n", link_json(v, expect).dump(1));
        return v.peers.empty() ? 1 : 0;
    }
    if (v.peers.empty()) {
        fmt::print(stderr, "odl: link: no peer host seen (no XDomain); `odl doctor` says which layer is missing\n");
        return 1;
    }
    for (const auto& x : v.peers) {
        fmt::print("{}  peer {} ({}), port {} of router {}\n", x.name, x.device_name.empty() ? "?" : x.device_name,
                   x.vendor_name.empty() ? "?" : x.vendor_name, x.port, x.parent_router);
        fmt::print("    link     tx {}, rx {}{}\n", speed_text(x.tx), speed_text(x.rx),
                   x.tx.lanes != x.rx.lanes ? " (asymmetric)" : "");
        if (const std::optional<port_rating> r = expect ? expect : x.rating) {
            fmt::print("    rated    {} ({})\n", rating_text(*r), expect ? "--expect" : r->source);
            const std::string below = below_rating(x, *r);
            if (!below.empty()) fmt::print("    WARNING  {}: check the cable and re-plug it\n", below);
        } else {
            fmt::print("    rated    unknown: {}\n", x.rating_error);
        }
        if (!x.odinlink_offered) fmt::print("    odinlink not offered by the peer (odl_tb5 not loaded there)\n");
        for (const auto& d : v.devices) {
            if (d.xdomain != x.name) continue;
            fmt::print("    {}  {}, peer protocol {}, rings {} of {} offered, logins {}, {} mode, irq_throttle_us {}\n",
                       d.dev_path, state_text(d), d.peer_version, d.rings_used, d.rings_offered, d.connect_count,
                       d.poll == "1" ? "polling" : "interrupt", d.irq_throttle_us.empty() ? "?" : d.irq_throttle_us);
            std::string line;
            for (const auto& [k, val] : d.counters) line += fmt::format("{}{} {}", line.empty() ? "" : ", ", k, val);
            if (!line.empty()) fmt::print("        counters: {}\n", line);
        }
    }
    if (v.module_loaded) fmt::print("odl_tb5: {}\n", knobs.empty() ? "(no parameters readable)" : knobs);
    return 0;
}

}  // namespace

void add_link_command(CLI::App& app) {
    auto o = std::make_shared<link_options>();
    auto* cmd = app.add_subcommand("link", "Show each peer's link (generation, lanes, speed vs rating) and device");
    cmd->add_flag("--json", o->json, "JSON instead of text");
    cmd->add_option("--expect", o->expect, "The rating to hold the link to (genN or genNxL) instead of the port's");
    cmd->add_option("--root", o->root, "Read /sys, /dev and /proc under this directory");
    cmd->callback([o] { std::exit(run(*o)); });
}

}  // namespace odl::cli
