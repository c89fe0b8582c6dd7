// SPDX-License-Identifier: MIT
// `odl hil check`: reachability, OS, kernel, IOMMU, Secure Boot, the build
// installed and `odl doctor` on each host of the pair; one table.
#include <future>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "odl/hil/facts.h"
#include "odl/hil/hil.h"
#include "odl/hil/ssh.h"

namespace odl::hil {
namespace {

std::string doctor_cell(const host_facts& f) {
    if (f.doctor_exit < 0) return "not run";
    if (f.doctor_exit == 0) return "ok";
    if (f.doctor_first_broken.empty()) return fmt::format("exit {}", f.doctor_exit);
    return fmt::format("FAIL {} (exit {})", f.doctor_first_broken, f.doctor_exit);
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

}  // namespace

int run_check(const inventory& inv, const check_options& o) {
    const pair& p = inv.select(o.pair);
    control_dir dir;
    // Both hosts at once: a slow or dead one costs its own timeout only.
    auto probe = [&](const host& h) {
        ssh_session s(h, dir.path());
        host_facts f;
        f.role = h.role;
        f.label = s.label();
        f.reach = s.connect();
        if (f.reach.empty()) {
            read_facts(s, o.timeout_s, &f);
            if (f.reach.empty() && !f.odl_build.empty()) run_doctor(s, p.expect, o.timeout_s, &f);
        }
        return f;
    };
    auto fa = std::async(std::launch::async, probe, p.a);
    auto fb = std::async(std::launch::async, probe, p.b);
    const std::vector<host_facts> hosts{fa.get(), fb.get()};

    // The verdict: the first broken host and layer, bottom-up.
    int rc = kOk;
    std::string why;
    for (const auto& f : hosts) {
        if (!f.reach.empty()) {
            rc = kUnreachable;
            why = fmt::format("host {}: not reachable over SSH: {}", f.label, f.reach);
            break;
        }
    }
    if (rc == kOk) {
        for (const auto& f : hosts) {
            if (f.odl_build.empty()) {
                rc = kNotDeployed;
                why = fmt::format("host {}: odl is not installed (half-deployed pair? run `odl hil deploy`)", f.label);
                break;
            }
        }
    }
    if (rc == kOk && hosts[0].odl_build != hosts[1].odl_build) {
        rc = kMixedBuilds;
        why = fmt::format("mixed builds: a runs '{}', b runs '{}' (run `odl hil deploy`)", hosts[0].odl_build,
                          hosts[1].odl_build);
    }
    if (rc == kOk) {
        for (const auto& f : hosts) {
            if (f.doctor_exit != 0) {
                rc = f.doctor_exit > 0 ? f.doctor_exit : 1;
                why = fmt::format("host {}: layer {}: {}", f.label, or_dash(f.doctor_first_broken),
                                  or_dash(f.doctor_summary));
                break;
            }
        }
    }
    if (rc == kOk && (hosts[0].module_src != hosts[1].module_src ||
                      hosts[0].module_version != hosts[1].module_version)) {
        rc = kMixedBuilds;
        why = fmt::format("mixed builds: odl_tb5 {} (srcversion {}) on a, {} (srcversion {}) on b",
                          or_dash(hosts[0].module_version), or_dash(hosts[0].module_src),
                          or_dash(hosts[1].module_version), or_dash(hosts[1].module_src));
    }

    if (o.json) {
        nlohmann::json out{{"inventory", inv.file}, {"pair", p.name}, {"expect", p.expect},
                           {"exit_code", rc}, {"first_broken", why.empty() ? nlohmann::json() : nlohmann::json(why)}};
        for (const auto& f : hosts)
            out["hosts"].push_back({{"role", f.role},
                                    {"target", f.label},
                                    {"reachable", f.reach.empty()},
                                    {"unreachable_reason", f.reach},
                                    {"os", f.os},
                                    {"kernel", f.kernel},
                                    {"iommu", f.iommu},
                                    {"secure_boot", f.secure_boot},
                                    {"odl", f.odl_build},
                                    {"odl_tb5_srcversion", f.module_src},
                                    {"odl_tb5_version", f.module_version},
                                    {"doctor_exit", f.doctor_exit},
                                    {"doctor_first_broken", f.doctor_first_broken},
                                    {"doctor_summary", f.doctor_summary}});
        fmt::print("{}\n", out.dump(1));
    } else {
        fmt::print("pair {} ({}), expected link {}\n", p.name, inv.file, p.expect);
        for (const auto& f : hosts) {
            fmt::print("{}\n", f.label);
            if (!f.reach.empty()) {
                fmt::print("    reach        FAIL {}\n", f.reach);
                continue;
            }
            fmt::print("    reach        ok\n");
            fmt::print("    os           {}\n", or_dash(f.os));
            fmt::print("    kernel       {}\n", or_dash(f.kernel));
            fmt::print("    iommu        {}\n", or_dash(f.iommu));
            fmt::print("    secure boot  {}\n", or_dash(f.secure_boot));
            fmt::print("    odl          {}\n", f.odl_build.empty() ? "not installed" : f.odl_build);
            fmt::print("    odl_tb5      {}\n", f.module_src.empty()
                                                    ? "not loaded"
                                                    : fmt::format("{}, srcversion {}", or_dash(f.module_version),
                                                                  f.module_src));
            fmt::print("    doctor       {}{}\n", doctor_cell(f),
                       f.doctor_exit > 0 && !f.doctor_summary.empty() ? ": " + f.doctor_summary : "");
        }
    }
    if (rc != kOk) fmt::print(stderr, "odl hil check: {} (exit {})\n", why, rc);
    return rc;
}

}  // namespace odl::hil
