// SPDX-License-Identifier: MIT
// The doctor's checks, bottom-up: kernel USB4 support, host interface,
// IOMMU, peer, link against rating, odl_tb5, service, ABI, device node,
// login, ping, NCCL plugin and environment. A failure stops the walk (the
// layers above are "not checked"); a warning does not.
#include "doctor.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <utility>

#include <fmt/format.h>

#include "odl/wire/tb5_login.h"
#include "uapi/odl_tb5.h"

namespace odl::cli {
namespace {

using code = doctor_code;

/// Collects findings; after the first failure the rest are not checked.
class walk {
public:
    bool broken() const { return !m_report.first_broken.empty(); }

    finding& add(finding f) {
        if (broken()) {
            f = finding{f.layer, check_status::not_checked, "", {}, "", 0};
        } else if (f.status == check_status::fail) {
            m_report.first_broken = f.layer;
            m_report.exit_code = f.code;
        } else if (f.status == check_status::warn && m_report.exit_code == 0) {
            m_report.exit_code = f.code;
        }
        m_report.findings.push_back(std::move(f));
        return m_report.findings.back();
    }
    doctor_report take() { return std::move(m_report); }

private:
    doctor_report m_report;
};

finding fail(const char* layer, code c, std::string summary, std::string fix) {
    return finding{layer, check_status::fail, std::move(summary), {}, std::move(fix), int(c)};
}
finding ok(const char* layer, std::string summary) { return finding{layer, check_status::ok, std::move(summary), {}, "", 0}; }

void check_kernel(const host_view& v, walk& w) {
    if (v.tb_bus) {
        w.add(ok("kernel", fmt::format("USB4/Thunderbolt support loaded (Linux {})", v.kernel_release)));
    } else if (v.tb_module_file) {
        w.add(fail("kernel", code::no_usb4_kernel, "the thunderbolt module is not loaded", "modprobe thunderbolt"));
    } else {
        w.add(fail("kernel", code::no_usb4_kernel,
                   fmt::format("Linux {} has no USB4/Thunderbolt support (no /sys/bus/thunderbolt, no thunderbolt.ko)",
                               v.kernel_release),
                   "boot a kernel built with CONFIG_USB4 (Debian's kernels are)"));
    }
}

void check_nhi(const host_view& v, walk& w) {
    if (v.nhis.empty()) {
        w.add(fail("nhi", code::no_nhi, "no USB4/Thunderbolt host interface (NHI) on PCI",
                   "enable USB4/Thunderbolt in the firmware setup; `lspci -d ::0c03` lists USB controllers"));
        return;
    }
    finding f = ok("nhi", "");
    std::string unbound;
    for (const auto& n : v.nhis) {
        f.details.push_back(fmt::format("{} [{}] driver {}", n.address, n.vendor_device,
                                        n.driver.empty() ? "none" : n.driver));
        if (n.driver != "thunderbolt" && unbound.empty()) unbound = n.address;
    }
    for (const auto& d : v.domains) {
        std::string cm = !d.deauthorization ? "unknown" : *d.deauthorization ? "software" : "firmware or software";
        f.details.push_back(fmt::format("{}: security {}, host router generation {}, connection manager {}", d.name,
                                        d.security.empty() ? "?" : d.security, d.host_generation, cm));
    }
    if (!unbound.empty()) {
        f.status = check_status::fail;
        f.code = int(code::nhi_unbound);
        f.summary = fmt::format("host interface {} is not bound to thunderbolt", unbound);
        f.fix = fmt::format("modprobe thunderbolt; if it stays unbound: echo {} > /sys/bus/pci/drivers/thunderbolt/bind "
                            "and read dmesg",
                            unbound);
    } else if (v.domains.empty()) {
        f.status = check_status::fail;
        f.code = int(code::nhi_unbound);
        f.summary = "thunderbolt is bound but created no domain";
        f.fix = "dmesg | grep thunderbolt";
    } else {
        f.summary = fmt::format("{} host interface(s) bound to thunderbolt, {} domain(s)", v.nhis.size(), v.domains.size());
    }
    w.add(std::move(f));
}

void check_iommu(const host_view& v, walk& w) {
    finding f{"iommu", check_status::info, "", {}, "", 0};
    std::string mode = "off (no IOMMU)";
    if (v.iommu_present) {
        const std::string& t = v.nhis.empty() ? std::string() : v.nhis.front().iommu_group_type;
        if (t == "identity")
            mode = "passthrough (identity domain)";
        else if (t.rfind("DMA", 0) == 0)
            mode = fmt::format("translated ({})", t);
        else
            mode = t.empty() ? "on, host interface in no group" : "on, group type " + t;
    }
    std::string prot = "unknown";
    if (!v.domains.empty() && v.domains.front().iommu_dma_protection)
        prot = *v.domains.front().iommu_dma_protection ? "on" : "off";
    f.summary = fmt::format("IOMMU {}; Thunderbolt DMA protection {}", mode, prot);
    if (v.cmdline.find("iommu=pt") != std::string::npos) f.details.push_back("kernel command line has iommu=pt");
    w.add(std::move(f));
}

void check_peer(const host_view& v, walk& w) {
    if (v.peers.empty()) {
        w.add(fail("peer", code::no_peer, "no peer host seen (no XDomain)",
                   "plug the cable into a USB4/Thunderbolt port of both hosts, power the peer on and load "
                   "thunderbolt there; `boltctl` / dmesg show hot-plug events"));
        return;
    }
    finding f = ok("peer", "");
    for (const auto& x : v.peers)
        f.details.push_back(fmt::format("{}: {} ({}), on port {} of {}", x.name,
                                        x.device_name.empty() ? "?" : x.device_name,
                                        x.vendor_name.empty() ? "?" : x.vendor_name, x.port, x.parent_router));
    f.summary = fmt::format("{} peer host(s): {}", v.peers.size(), v.peers.front().device_name);
    w.add(std::move(f));
}

void check_link(const host_view& v, const doctor_options& opt, walk& w) {
    std::optional<port_rating> expect;
    if (opt.expect) expect = parse_expect(*opt.expect);
    finding f = ok("link", "");
    std::string degraded;
    for (const auto& x : v.peers) {
        std::optional<port_rating> r = expect ? expect : x.rating;
        std::string line = fmt::format("{}: tx {}, rx {}", x.name, speed_text(x.tx), speed_text(x.rx));
        if (x.tx.lanes != x.rx.lanes) line += " (asymmetric)";
        if (r) {
            line += fmt::format("; rated {} ({})", rating_text(*r), expect ? "--expect" : r->source);
            if (degraded.empty()) degraded = below_rating(x, *r);
        } else {
            line += "; rating unknown: " + x.rating_error;
        }
        f.details.push_back(line);
        if (!x.tx.total_gbps() || !x.rx.total_gbps())
            f.details.push_back(x.name + ": the kernel reports no speed (tx_speed/rx_speed missing: Linux < 5.18?)");
    }
    if (!degraded.empty()) {
        f.status = check_status::warn;
        f.code = int(code::link_degraded);
        f.summary = "link degraded: " + degraded;
        f.fix = "use a cable rated for the port (USB4 80 Gb/s / Thunderbolt 5 for Gen4 x2), plug it straight "
                "into both hosts (no dock or hub), then re-plug it";
    } else {
        const auto& x = v.peers.front();
        f.summary = fmt::format("{} each way {}", speed_text(x.tx),
                                x.rating || expect ? "at its rating" : "(rating unknown)");
        if (!x.rating && !expect) f.status = check_status::info;
    }
    w.add(std::move(f));
}

void check_module(const host_view& v, walk& w) {
    if (!v.module_loaded && v.module_file && !v.signatures_enforced.empty()) {
        // The silent Secure Boot failure of the field: DKMS built and signed
        // the module, the kernel refuses DKMS's key. A module package built
        // elsewhere (odl-tb5-modules-KVER) is unsigned, or signed with a key
        // of the user's (odl package --sign-key) that is not enrolled.
        const std::string enrol = "enrol it once (mokutil --import /var/lib/dkms/mok.pub; reboot; in the MOK "
                                  "manager: Enroll MOK) or boot without signature enforcement";
        const std::string then = ", then modprobe odl_tb5 (`dmesg | grep -i key` shows the refusal)";
        std::string origin, fix = "DKMS signs odl_tb5 with its machine key /var/lib/dkms/mok.pub: " + enrol + then;
        if (v.module_prebuilt) {
            origin = v.module_prebuilt_signed ? " (odl-tb5-modules, signed by a key it does not trust)"
                                              : " (odl-tb5-modules, not signed)";
            fix = "install odl-tb5-dkms instead of odl-tb5-modules-" + v.kernel_release +
                  " (DKMS builds odl_tb5 here and signs it with its machine key /var/lib/dkms/mok.pub: " + enrol +
                  ")" + then;
            if (v.module_prebuilt_signed)
                fix = "enrol the certificate the package was signed with (mokutil --import CERT.der; reboot; in "
                      "the MOK manager: Enroll MOK), or " +
                      fix;
        }
        w.add(fail("module", code::module_unsigned,
                   fmt::format("odl_tb5 is built for this kernel{} but not loaded, and the kernel loads only "
                               "modules signed by a key it trusts ({})",
                               origin, v.signatures_enforced),
                   fix));
        return;
    }
    if (!v.module_loaded) {
        w.add(fail("module", code::module_not_loaded, "odl_tb5 is not loaded",
                   "modprobe odl_tb5 (package odl-tb5-dkms, or odl-tb5-modules-" + v.kernel_release +
                       " built for this kernel; `dkms status odl_tb5` shows whether DKMS built it for this kernel; "
                       "under Secure Boot it must be signed with an enrolled key)"));
        return;
    }
    finding f = ok("module", "odl_tb5 loaded");
    std::string params;
    for (const auto& p : v.module_params) params += (params.empty() ? "" : " ") + p;
    if (!params.empty()) f.details.push_back("parameters: " + params);
    w.add(std::move(f));
}

void check_service(const host_view& v, walk& w) {
    std::string missing, unbound;
    for (const auto& x : v.peers) {
        if (!x.odinlink_offered) {
            if (missing.empty()) missing = x.name;
        } else if (x.odinlink_driver != "odl_tb5" && unbound.empty()) {
            unbound = x.odinlink_service;
        }
    }
    if (!missing.empty()) {
        const auto& x = *std::find_if(v.peers.begin(), v.peers.end(), [&](const xdomain& p) { return p.name == missing; });
        std::string keys;
        for (const auto& k : x.service_keys) keys += (keys.empty() ? "" : ", ") + k;
        w.add(fail("service", code::peer_no_service,
                   fmt::format("peer {} ({}) does not offer the OdinLink service (it offers: {})", missing,
                               x.device_name, keys.empty() ? "nothing" : keys),
                   "load odl_tb5 on the peer (`odl doctor` there says why it is not)"));
        return;
    }
    if (!unbound.empty()) {
        w.add(fail("service", code::service_unbound,
                   fmt::format("the OdinLink service {} is not bound to odl_tb5", unbound),
                   "dmesg | grep odl_tb5 (the probe says why); then rmmod odl_tb5 && modprobe odl_tb5"));
        return;
    }
    w.add(ok("service", fmt::format("OdinLink service bound on {} peer(s)", v.peers.size())));
}

void check_device(const host_view& v, walk& w) {
    if (v.devices.empty()) {
        w.add(fail("device", code::service_unbound, "no /sys/class/odl_tb5 device although the service is bound",
                   "dmesg | grep odl_tb5"));
        return;
    }
    for (const auto& d : v.devices) {
        if (d.abi_version != ODL_TB5_ABI_VERSION) {
            w.add(fail("device", code::abi_mismatch,
                       fmt::format("{}: odl_tb5 ABI {}, this odl speaks ABI {}", d.name, d.abi_version,
                                   ODL_TB5_ABI_VERSION),
                       "install the odl and odl-tb5-dkms packages of one build (`odl --version`, `modinfo odl_tb5`)"));
            return;
        }
        if (!d.node_exists) {
            w.add(fail("device", code::service_unbound, d.node_error,
                       "udev did not create it: udevadm trigger; check /lib/udev/rules.d/71-odl-tb5.rules"));
            return;
        }
        if (!d.node_accessible) {
            w.add(fail("device", code::device_inaccessible, d.node_error,
                       "add the user to the group odl (usermod -aG odl USER; log in again) or run as root"));
            return;
        }
    }
    w.add(ok("device", fmt::format("{} device(s), ABI {}, read/write for this user: {}", v.devices.size(),
                                   ODL_TB5_ABI_VERSION, v.devices.front().dev_path)));
}

void check_login(const host_view& v, walk& w) {
    finding f = ok("login", "");
    for (const auto& d : v.devices) {
        f.details.push_back(fmt::format("{}: state {}, peer protocol {}, rings {}/{}, logins {}{}", d.name, d.state,
                                        d.peer_version, d.rings_used, d.rings_offered, d.connect_count,
                                        d.local_open ? ", open here" : ""));
        if (d.state != "connected" && d.state != "session" && f.status == check_status::ok) {
            f.status = check_status::fail;
            f.code = int(code::not_logged_in);
            f.summary = fmt::format("{}: not logged in with the peer (state {})", d.name,
                                    d.state.empty() ? "unreadable" : d.state);
            f.fix = d.state == "gone" ? "the peer went away: re-plug the cable or reload odl_tb5 on the peer"
                                      : "login in progress or refused: dmesg | grep odl_tb5 on both hosts";
        }
    }
    if (f.status == check_status::ok) f.summary = fmt::format("logged in with {} peer(s)", v.devices.size());
    w.add(std::move(f));
}

/// One read of the device's ping attribute: the round trip in ns, or -errno.
long long read_ping(const std::string& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -errno;
    char buf[32] = {};
    const ssize_t n = read(fd, buf, sizeof(buf) - 1);
    const int err = errno;
    close(fd);
    if (n < 0) return -err;
    return std::strtoll(buf, nullptr, 10);
}

void check_ping(const host_view& v, walk& w) {
    constexpr int kPings = 5;
    finding f = ok("ping", "");
    for (const auto& d : v.devices) {
        const std::string path = v.root + "/sys/class/odl_tb5/" + d.name + "/ping";
        std::vector<long long> rtt;
        long long err = 0;
        for (int i = 0; i < kPings && !err; ++i) {
            const long long r = read_ping(path);
            if (r < 0)
                err = r;
            else
                rtt.push_back(r);
        }
        if (err == -EACCES || err == -EPERM) {
            f.status = check_status::info;
            f.summary = "not measured: reading the ping attribute needs root";
            continue;
        }
        if (err == -EOPNOTSUPP) {
            f.status = check_status::info;
            f.summary = fmt::format("{}: not measured: the peer's odl_tb5 predates ping (protocol 1.3)", d.name);
            continue;
        }
        if (err) {
            w.add(fail("ping", code::ping_failed,
                       fmt::format("{}: the peer's odl_tb5 did not answer a ping: {}", d.name, std::strerror(int(-err))),
                       "re-plug the cable; dmesg | grep -e odl_tb5 -e thunderbolt on both hosts"));
            return;
        }
        std::sort(rtt.begin(), rtt.end());
        f.details.push_back(fmt::format("{}: {} pings over the control channel, round trip min {:.1f} us, median "
                                        "{:.1f} us, max {:.1f} us",
                                        d.name, rtt.size(), rtt.front() / 1e3, rtt[rtt.size() / 2] / 1e3,
                                        rtt.back() / 1e3));
        if (f.summary.empty())
            f.summary = fmt::format("peer answers, round trip {:.1f} us (median)", rtt[rtt.size() / 2] / 1e3);
    }
    w.add(std::move(f));
}

/// The file NCCL would load for NCCL_NET_PLUGIN (NCCL 2.19+: "NAME" ->
/// libnccl-net-NAME.so, then NAME itself; unset -> libnccl-net.so).
std::vector<std::string> plugin_candidates(const char* env) {
    if (!env || !*env) return {"libnccl-net.so"};
    if (std::strchr(env, '/')) return {env};
    return {fmt::format("libnccl-net-{}.so", env), env};
}

void check_nccl(const doctor_options& opt, walk& w) {
    if (!opt.nccl) {
        w.add(finding{"nccl", check_status::not_checked, "not checked (--no-nccl)", {}, "", 0});
        return;
    }
    const char* env = std::getenv("NCCL_NET_PLUGIN");
    std::string loaded, name, tried, dlerr;
    for (const auto& c : plugin_candidates(env)) {
        tried += (tried.empty() ? "" : ", ") + c;
        void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h) {
            if (const char* e = dlerror()) dlerr = e;
            continue;
        }
        for (int ver = 12; ver >= 5 && name.empty(); --ver)
            if (void* sym = dlsym(h, fmt::format("ncclNetPlugin_v{}", ver).c_str()))
                name = *static_cast<const char* const*>(sym) ? *static_cast<const char* const*>(sym) : "";
        loaded = c;
        dlclose(h);
        break;
    }
    std::string hint;
    for (const auto& h : opt.plugin_hints)
        if (access(h.c_str(), R_OK) == 0) {
            hint = h;
            break;
        }
    const std::string fix = hint.empty() ? "install odl-nccl-plugin and export NCCL_NET_PLUGIN=<its path>"
                                         : "export NCCL_NET_PLUGIN=" + hint;
    if (loaded.empty()) {
        w.add(fail("nccl", code::plugin_missing,
                   fmt::format("NCCL would not find the OdinLink plugin (NCCL_NET_PLUGIN={}; tried {}: {})",
                               env ? env : "unset", tried, dlerr),
                   fix));
        return;
    }
    if (name != "ODL") {
        w.add(fail("nccl", code::plugin_missing,
                   fmt::format("{} is not the OdinLink plugin (its network is '{}')", loaded,
                               name.empty() ? "none" : name),
                   fix));
        return;
    }
    const char* net = std::getenv("NCCL_NET");
    if (!net || std::string(net) != "ODL") {
        w.add(finding{"nccl", check_status::warn,
                      fmt::format("plugin {} loads, but NCCL_NET is {}: if it fails to start, NCCL falls back to "
                                  "sockets without an error",
                                  loaded, net ? fmt::format("'{}'", net) : "unset"),
                      {}, "export NCCL_NET=ODL (NCCL then stops with an error instead)", int(code::nccl_fallback)});
        return;
    }
    w.add(ok("nccl", fmt::format("plugin {} (network ODL) loads; NCCL_NET=ODL", loaded)));
}

}  // namespace

std::optional<port_rating> parse_expect(const std::string& s) {
    unsigned gen = 0, lanes = 2;
    char x = 0;
    const int n = std::sscanf(s.c_str(), "gen%u%c%u", &gen, &x, &lanes);
    if (n != 1 && !(n == 3 && x == 'x')) return std::nullopt;
    if (lanes < 1 || lanes > 2) return std::nullopt;
    const unsigned per_lane = gen == 2 ? 10 : gen == 3 ? 20 : gen == 4 ? 40 : 0;
    if (!per_lane) return std::nullopt;
    // Anything after the lane count is garbage.
    const std::string canon = n == 1 ? fmt::format("gen{}", gen) : fmt::format("gen{}x{}", gen, lanes);
    if (canon != s) return std::nullopt;
    return port_rating{per_lane, lanes, "expected"};
}

const char* status_name(check_status s) {
    switch (s) {
    case check_status::ok: return "ok";
    case check_status::info: return "info";
    case check_status::warn: return "warn";
    case check_status::fail: return "fail";
    case check_status::not_checked: return "not_checked";
    }
    return "?";
}

doctor_report run_doctor(const host_view& v, const doctor_options& opt) {
    walk w;
    // Bottom-up; once a layer failed, the ones above are not looked at
    // (their checks assume the layers below them are there).
    const std::pair<const char*, std::function<void()>> layers[] = {
        {"kernel", [&] { check_kernel(v, w); }},   {"nhi", [&] { check_nhi(v, w); }},
        {"iommu", [&] { check_iommu(v, w); }},     {"peer", [&] { check_peer(v, w); }},
        {"link", [&] { check_link(v, opt, w); }},  {"module", [&] { check_module(v, w); }},
        {"service", [&] { check_service(v, w); }}, {"device", [&] { check_device(v, w); }},
        {"login", [&] { check_login(v, w); }},     {"ping", [&] { check_ping(v, w); }},
        {"nccl", [&] { check_nccl(opt, w); }},
    };
    for (const auto& [layer, check] : layers) {
        if (w.broken())
            w.add(finding{layer, check_status::not_checked, "", {}, "", 0});
        else
            check();
    }
    return w.take();
}

}  // namespace odl::cli
