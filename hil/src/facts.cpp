// SPDX-License-Identifier: MIT
// Host facts over SSH: one shell script, key=value lines back.
#include "odl/hil/facts.h"


#include <filesystem>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace odl::hil {
namespace {

// Runs with the remote user's shell (POSIX sh); every probe tolerates a
// missing file or tool, so the script itself cannot fail.
constexpr const char* kFactsScript = R"sh(
. /etc/os-release 2>/dev/null; echo "os=${PRETTY_NAME:-unknown}"
echo "kernel=$(uname -r)"
if [ ! -d /sys/firmware/efi ]; then
	echo "secure_boot=off (no EFI: legacy boot)"
else
	f=$(ls /sys/firmware/efi/efivars/SecureBoot-* 2>/dev/null | head -n1)
	v=$( [ -n "$f" ] && od -An -tu1 -j4 -N1 "$f" 2>/dev/null | tr -d ' ')
	case "$v" in 1) echo "secure_boot=on (odl_tb5 loads only if DKMS's signing key is enrolled: docs/hil.md)" ;;
	0) echo "secure_boot=off" ;; *) echo "secure_boot=unknown (no SecureBoot variable)" ;; esac
fi
command -v odl >/dev/null 2>&1 && echo "odl=$(odl --version 2>/dev/null | head -n1)"
[ -r /sys/module/odl_tb5/srcversion ] && echo "module=$(cat /sys/module/odl_tb5/srcversion)"
[ -r /sys/module/odl_tb5/version ] && echo "module_version=$(cat /sys/module/odl_tb5/version)"
echo "end=1"
)sh";

}  // namespace

std::string privileged(const host& h) { return h.ssh.user == "root" ? "" : "sudo -n "; }

void read_facts(const ssh_session& s, int timeout_s, host_facts* f) {
    const process_result r = s.run("sh -s", timeout_s, kFactsScript);
    if (const std::string why = ssh_failure_reason(r); !why.empty()) {
        f->reach = why;
        return;
    }
    std::istringstream in(r.out);
    std::string line;
    bool complete = false;
    while (std::getline(in, line)) {
        const auto eq = line.find('=');
        if (eq == std::string::npos) continue;
        const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
        if (k == "os") f->os = v;
        else if (k == "kernel") f->kernel = v;
        else if (k == "secure_boot") f->secure_boot = v;
        else if (k == "odl") f->odl_build = v;
        else if (k == "module") f->module_src = v;
        else if (k == "module_version") f->module_version = v;
        else if (k == "end") complete = true;
    }
    if (!complete)
        f->reach = fmt::format("the facts script did not finish (exit {}): {}", r.status,
                               r.err.substr(0, r.err.find('\n')));
}

void run_doctor(const ssh_session& s, const std::string& expect, int timeout_s, host_facts* f) {
    const process_result r = s.run(
        privileged(s.target()) + "odl doctor --json --no-nccl --expect " + shell_quote(expect), timeout_s);
    if (const std::string why = ssh_failure_reason(r); !why.empty()) {
        f->reach = why;
        return;
    }
    f->doctor_exit = r.status;
    try {
        const auto j = nlohmann::json::parse(r.out);
        if (j.contains("first_broken") && j["first_broken"].is_string()) f->doctor_first_broken = j["first_broken"];
        for (const auto& c : j.value("checks", nlohmann::json::array())) {
            if (c.value("layer", "") == "iommu") f->iommu = c.value("summary", "");
            if (c.value("layer", "") == f->doctor_first_broken) f->doctor_summary = c.value("summary", "");
        }
    } catch (const nlohmann::json::exception&) {
        f->doctor_summary = fmt::format("odl doctor gave no JSON (exit {}): {}", r.status,
                                        (r.err.empty() ? r.out : r.err).substr(0, 200));
        if (f->doctor_exit == 0) f->doctor_exit = 1;
    }
}

}  // namespace odl::hil
