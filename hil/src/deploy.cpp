// SPDX-License-Identifier: MIT
// `odl hil deploy`: this build's Debian packages onto both hosts with apt
// (odl_tb5 from odl-tb5-modules-KVER when the packages hold one for the
// host's kernel, else DKMS builds it there), the module loaded, and both
// hosts checked to run the identical build.
#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <sstream>

#include <fmt/format.h>

#include "odl/hil/facts.h"
#include "odl/hil/hil.h"
#include "odl/hil/process.h"
#include "odl/hil/ssh.h"

namespace odl::hil {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRemoteDir = "/var/tmp/odl-hil-deploy";

std::mutex print_mutex;
template <typename... Args>
void progress(const std::string& who, fmt::format_string<Args...> f, Args&&... args) {
    const std::lock_guard<std::mutex> lock(print_mutex);
    fmt::print(stderr, "odl: hil: deploy: {}: {}\n", who, fmt::format(f, std::forward<Args>(args)...));
}

std::string last_lines(const std::string& text, int n) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    std::string out;
    for (std::size_t i = lines.size() > static_cast<std::size_t>(n) ? lines.size() - n : 0; i < lines.size(); ++i)
        out += "    " + lines[i] + "\n";
    return out;
}

constexpr const char* kModulesPrefix = "odl-tb5-modules-";

bool named(const std::string& deb, const std::string& prefix) {
    return fs::path(deb).filename().string().rfind(prefix, 0) == 0;
}

/// The packages deploy may install: the runtime (odl, libodl, udev rule,
/// modules-load), the module (DKMS source, or built for a kernel release:
/// each host gets one of them) and the plugin when asked.
std::vector<std::string> pick_debs(const std::vector<std::string>& all, bool plugin) {
    std::vector<std::string> out;
    for (const auto& d : all)
        if (named(d, "odl_") || named(d, "odl-tb5-dkms_") || named(d, kModulesPrefix) ||
            (plugin && named(d, "odl-nccl-plugin_")))
            out.push_back(d);
    return out;
}

/// What one host gets: the runtime and plugin, and odl-tb5-modules-KVER for
/// its kernel when there is one (no compiler needed there, seconds instead
/// of DKMS's minutes), else the DKMS package. *modules: that package's path
/// ("" when DKMS builds the module). Empty when neither module package fits.
std::vector<std::string> debs_for_kernel(const std::vector<std::string>& debs, const std::string& kver,
                                         std::string* modules) {
    std::vector<std::string> out;
    std::string dkms;
    // Package names are lower case (odl-modules-deb lowers the release).
    std::string lower = kver;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
    modules->clear();
    for (const auto& d : debs) {
        if (named(d, kModulesPrefix)) {
            if (named(d, kModulesPrefix + lower + "_")) *modules = d;
        } else if (named(d, "odl-tb5-dkms_")) {
            dkms = d;
        } else {
            out.push_back(d);
        }
    }
    if (modules->empty() && dkms.empty()) return {};
    out.push_back(modules->empty() ? dkms : *modules);
    return out;
}

struct host_result {
    std::string error;  ///< "" when deployed
    int code = kOk;
    std::string build, module_src;
    double seconds = 0;
};

struct host_kernel {
    std::string label;    ///< "a (root@host port 22)"
    std::string release;  ///< uname -r
    std::string error;    ///< "" when known
    int code = kOk;
};

/// The host's kernel release, asked before anything is installed on either
/// host: a host that no package fits must leave its peer untouched too.
host_kernel kernel_of(const host& h, const std::string& sockets) {
    host_kernel k;
    ssh_session s(h, sockets);
    k.label = s.label();
    if (const std::string why = s.connect(); !why.empty()) {
        k.code = kUnreachable;
        k.error = fmt::format("host {}: not reachable over SSH: {}", s.label(), why);
        return k;
    }
    const process_result r = s.run("uname -r", 60);
    k.release = r.out.substr(0, r.out.find_first_of("\r\n"));
    if (r.status != 0 || k.release.empty()) {
        const std::string why = ssh_failure_reason(r);
        k.code = why.empty() ? kDeployFailed : kUnreachable;
        k.error = fmt::format("host {}: uname -r: {}", s.label(), why.empty() ? last_lines(r.out + r.err, 5) : why);
    }
    return k;
}

host_result deploy_host(const host& h, const std::string& sockets, const std::vector<std::string>& debs,
                        const std::string& kver, const std::string& modules, const deploy_options& o) {
    const auto t0 = std::chrono::steady_clock::now();
    host_result res;
    ssh_session s(h, sockets);
    const std::string who = s.label();
    if (const std::string why = s.connect(); !why.empty()) {
        res.code = kUnreachable;
        res.error = fmt::format("host {}: not reachable over SSH: {}", who, why);
        return res;
    }
    const std::string sudo = privileged(h);
    auto fail = [&](int code, const std::string& what, const process_result& r) {
        res.code = code;
        const std::string why = ssh_failure_reason(r);
        res.error = why.empty() ? fmt::format("host {}: {} (exit {}):\n{}", who, what, r.status,
                                              last_lines(r.out + r.err, 15))
                                : fmt::format("host {}: {}: {}", who, what, why);
        if (!why.empty()) res.code = kUnreachable;
        return res;
    };
    process_result r = s.run(fmt::format("{}rm -rf {d} && {}mkdir -p {d} && {}chmod 1777 {d}", sudo, sudo, sudo,
                          fmt::arg("d", kRemoteDir)),
              60);
    if (r.status != 0) return fail(kDeployFailed, "cannot make " + std::string(kRemoteDir), r);
    progress(who, "copying {} packages", debs.size());
    r = s.copy_to(debs, kRemoteDir, 600);
    if (r.status != 0) return fail(kDeployFailed, "copying the packages (scp) failed", r);

    // apt resolves the packages' dependencies from the host's own archive
    // (none are downloaded when they are installed already); the DKMS
    // package's postinst builds odl_tb5 for the running kernel. Each module
    // package conflicts with the other: apt removes the one installed before.
    std::string files;
    for (const auto& d : debs) files += " " + shell_quote(std::string(kRemoteDir) + "/" + fs::path(d).filename().string());
    if (modules.empty())
        progress(who, "installing (apt; DKMS builds odl_tb5 for the host's kernel, {})", kver);
    else
        progress(who, "installing (apt; odl_tb5 built for {} already: {})", kver, fs::path(modules).filename().string());
    r = s.run(fmt::format("{}env DEBIAN_FRONTEND=noninteractive "
                          "apt-get install -y -q --no-install-recommends --allow-downgrades --reinstall{}",
                          sudo, files),
              o.install_timeout_s);
    if (r.status != 0) return fail(kDeployFailed, "installing the packages failed", r);
    if (modules.empty()) {
        r = s.run(sudo + "sh -c 'dkms status -m odl_tb5 -k \"$(uname -r)\"'", 60);
        if (r.status != 0 || r.out.find("installed") == std::string::npos)
            return fail(kDeployFailed, "DKMS did not install odl_tb5 for the running kernel", r);
    } else {
        // What modprobe loads must be the package's file, not an older one
        // left elsewhere under /lib/modules (a tree build under extra/).
        const std::string want = "/lib/modules/" + kver + "/updates/odl/odl_tb5.ko";
        r = s.run("/sbin/modinfo -n odl_tb5", 60);
        const std::string got = r.out.substr(0, r.out.find_first_of("\r\n"));
        if (r.status != 0) return fail(kDeployFailed, "modinfo finds no odl_tb5 after installing " + modules, r);
        if (got != want && got != "/usr" + want) {
            res.code = kDeployFailed;
            res.error = fmt::format("host {}: modprobe would load {}, not the package's {}", who, got, want);
            return res;
        }
    }
    // Reload: a module loaded before (by us, or by udev the moment the
    // peer's service appeared) is the old build. Whatever loads it after
    // the unload, modprobe or udev, loads the file just installed.
    // rmmod, not modprobe -r: that also unloads thunderbolt.ko when nothing
    // else holds it, which resets the host's whole USB4 domain (and drops
    // every other device and thunderbolt_net on a real host).
    r = s.run(fmt::format("if [ -d /sys/module/odl_tb5 ]; then {}rmmod odl_tb5 || "
                          "{{ echo 'odl_tb5 is in use: close the programs using /dev/odl_tb5_*' >&2; exit 3; }}; fi; "
                          "{}modprobe odl_tb5",
                          sudo, sudo),
              60);
    if (r.status != 0 && !modules.empty() && ssh_failure_reason(r).empty()) {
        // Secure Boot (lockdown) or module.sig_enforce: the prebuilt module
        // is unsigned, or signed (odl package --sign-key) by a key the host
        // has not enrolled.
        const std::string said = r.out + r.err;
        for (const char* refusal : {"Key was rejected by service", "Required key not available"}) {
            if (said.find(refusal) == std::string::npos) continue;
            res.code = kDeployFailed;
            res.error = fmt::format(
                "host {}: the kernel refuses odl_tb5 from {} ({}): it loads only modules signed by a key it "
                "trusts, and that package's module is unsigned or signed by a key not enrolled there; deploy "
                "odl-tb5-dkms to this host instead (leave odl-tb5-modules-{} out of --debs; DKMS signs the "
                "module, enrol its key once: docs/install.md), or enrol the certificate of odl package --sign-key",
                who, fs::path(modules).filename().string(), refusal, kver);
            return res;
        }
    }
    if (r.status != 0) return fail(kDeployFailed, "reloading odl_tb5 failed", r);

    host_facts f;
    read_facts(s, 60, &f);
    if (!f.reach.empty()) {
        res.code = kUnreachable;
        res.error = fmt::format("host {}: {}", who, f.reach);
        return res;
    }
    if (f.odl_build.empty() || f.module_src.empty()) {
        res.code = kNotDeployed;
        res.error = fmt::format("host {}: installed, but odl {} and odl_tb5 {}", who,
                                f.odl_build.empty() ? "does not run" : "runs",
                                f.module_src.empty() ? "is not loaded" : "is loaded");
        return res;
    }
    // The module DKMS built must be this build: its MODULE_VERSION is the
    // version odl reports ("odl 0.1.0+N.gHASH (libodl ...)").
    if (f.module_version.empty() || f.odl_build.find(" " + f.module_version + " ") == std::string::npos) {
        res.code = kMixedBuilds;
        res.error = fmt::format("host {}: odl_tb5 {} is loaded, but odl is '{}' (an older module still loaded?)",
                                who, f.module_version.empty() ? "without a version" : f.module_version,
                                f.odl_build);
        return res;
    }
    res.build = f.odl_build;
    res.module_src = f.module_src;
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    progress(who, "{} with odl_tb5 srcversion {} ({:.0f} s)", f.odl_build, f.module_src, res.seconds);
    return res;
}

/// Seconds until every odl_tb5 device of the host is logged in with its
/// peer (state connected or session), or -1 when that did not happen
/// within `limit_s`. One remote loop, so the wait costs one SSH command.
double wait_host_login(const host& h, const std::string& sockets, int limit_s, std::string* last_state) {
    ssh_session s(h, sockets);
    if (const std::string why = s.connect(); !why.empty()) {
        *last_state = "not reachable over SSH: " + why;
        return -1;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const process_result r = s.run(
        fmt::format("i=0; while [ $i -lt {} ]; do ok=1; n=0; "
                    "for f in /sys/class/odl_tb5/odl_tb5_*/state; do [ -r \"$f\" ] || continue; n=$((n+1)); "
                    "case $(cat \"$f\") in connected|session) ;; *) ok=0 ;; esac; done; "
                    "[ $n -gt 0 ] && [ $ok = 1 ] && exit 0; sleep 1; i=$((i+1)); done; "
                    "cat /sys/class/odl_tb5/odl_tb5_*/state 2>/dev/null | tr '\\n' ' '; exit 1",
                    limit_s),
        limit_s + 30);
    if (r.status == 0) return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    *last_state = r.out.empty() ? "no odl_tb5 device" : "state " + r.out;
    return -1;
}

/// After a reload both modules log in again; the deploy ends when they have
/// (or says that they did not), so a check or run started next finds the
/// link as a fresh boot would leave it rather than half way through login.
void wait_for_login(const pair& p, const std::string& sockets, int limit_s) {
    if (limit_s <= 0) return;
    std::string why_a, why_b;
    auto fa = std::async(std::launch::async, wait_host_login, p.a, sockets, limit_s, &why_a);
    auto fb = std::async(std::launch::async, wait_host_login, p.b, sockets, limit_s, &why_b);
    const double a = fa.get(), b = fb.get();
    if (a >= 0 && b >= 0) {
        fmt::print("pair {}: odl_tb5 logged in with the peer on both hosts ({:.0f} s after the reload)\n", p.name,
                   std::max(a, b));
        return;
    }
    fmt::print(stderr,
               "odl hil deploy: warning: the link is not logged in {} s after the reload ({}{}{}); "
               "odl hil check says which layer is broken\n",
               limit_s, a < 0 ? "a: " + why_a : "", a < 0 && b < 0 ? ", " : "", b < 0 ? "b: " + why_b : "");
}

}  // namespace

int run_deploy(const inventory& inv, const deploy_options& o) {
    const pair& p = inv.select(o.pair);
    std::vector<std::string> all;
    control_dir sockets;
    if (!o.debs_dir.empty()) {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(o.debs_dir, ec))
            if (e.path().extension() == ".deb") all.push_back(fs::absolute(e.path()).string());
        if (ec) {
            fmt::print(stderr, "odl: hil: deploy: --debs {}: {}\n", o.debs_dir, ec.message());
            return kUsage;
        }
    } else {
        // This tree's packages, built now (`odl package`: paths on stdout).
        const std::string out = sockets.path() + "/debs";
        fmt::print(stderr, "odl: hil: deploy: building this tree's packages (odl package)\n");
        const process_result r = run_process({o.odl_self, "package", "--out", out}, 1800);
        if (r.status != 0) {
            fmt::print(stderr, "odl: hil: deploy: odl package failed (exit {}):\n{}", r.status,
                       last_lines(r.err, 20));
            return kDeployFailed;
        }
        std::istringstream in(r.out);
        for (std::string l; std::getline(in, l);)
            if (!l.empty()) all.push_back(l);
    }
    const std::vector<std::string> debs = pick_debs(all, o.plugin);
    bool have_runtime = false, have_module = false;
    for (const auto& d : debs) {
        have_runtime |= named(d, "odl_");
        have_module |= named(d, "odl-tb5-dkms_") || named(d, kModulesPrefix);
    }
    if (!have_runtime || !have_module) {
        fmt::print(stderr,
                   "odl: hil: deploy: {} has no {} package (want odl_*.deb and odl-tb5-dkms_*.deb or "
                   "odl-tb5-modules-KVER_*.deb)\n",
                   o.debs_dir.empty() ? "odl package" : o.debs_dir,
                   have_runtime ? "odl-tb5-dkms or odl-tb5-modules-KVER" : "odl");
        return kUsage;
    }

    // Each host's module package, from its kernel, before either installs.
    auto ka = std::async(std::launch::async, kernel_of, p.a, sockets.path());
    auto kb = std::async(std::launch::async, kernel_of, p.b, sockets.path());
    const host_kernel kernels[2] = {ka.get(), kb.get()};
    std::vector<std::string> host_debs[2];
    std::string modules[2];
    for (int i = 0; i < 2; ++i) {
        if (kernels[i].code != kOk) {
            fmt::print(stderr, "odl hil deploy: {} (exit {})\n", kernels[i].error, kernels[i].code);
            return kernels[i].code;
        }
        host_debs[i] = debs_for_kernel(debs, kernels[i].release, &modules[i]);
        if (host_debs[i].empty()) {
            const std::string k = kernels[i].release;
            fmt::print(stderr,
                       "odl hil deploy: host {} runs Linux {}: the packages hold neither {}{} nor odl-tb5-dkms "
                       "(odl package --kernel {} makes the first); nothing installed (exit {})\n",
                       kernels[i].label, k, kModulesPrefix, k, k, kUsage);
            return kUsage;
        }
    }
    auto fa = std::async(std::launch::async, deploy_host, p.a, sockets.path(), host_debs[0], kernels[0].release,
                         modules[0], o);
    auto fb = std::async(std::launch::async, deploy_host, p.b, sockets.path(), host_debs[1], kernels[1].release,
                         modules[1], o);
    const host_result a = fa.get(), b = fb.get();
    for (const auto* r : {&a, &b}) {
        if (r->code != kOk) {
            fmt::print(stderr, "odl hil deploy: {} (exit {})\n", r->error, r->code);
            return r->code;
        }
    }
    if (a.build != b.build || a.module_src != b.module_src) {
        fmt::print(stderr,
                   "odl hil deploy: mixed builds after deploying: a runs '{}' (odl_tb5 {}), b runs '{}' "
                   "(odl_tb5 {}) (exit {})\n",
                   a.build, a.module_src, b.build, b.module_src, kMixedBuilds);
        return kMixedBuilds;
    }
    fmt::print("pair {}: both hosts run {} (odl_tb5 srcversion {}); a {:.0f} s, b {:.0f} s\n", p.name, a.build,
               a.module_src, a.seconds, b.seconds);
    wait_for_login(p, sockets.path(), o.settle_s);
    return kOk;
}

}  // namespace odl::hil
