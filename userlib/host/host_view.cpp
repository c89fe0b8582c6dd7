// SPDX-License-Identifier: MIT
// Reads the host view (host_view.h) from sysfs, debugfs, /dev and /proc.
// Missing or unreadable files leave fields empty: the doctor turns those
// into findings, this file only gathers.
#include "host_view.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "odl/wire/tb5_login.h"
#include "uapi/odl_tb5.h"

namespace odl::host {
namespace fs = std::filesystem;

namespace {

/// First line of a sysfs file, without the newline; nullopt when unreadable.
std::optional<std::string> read_line(const fs::path& p) {
    std::ifstream f(p);
    if (!f) return std::nullopt;
    std::string s;
    std::getline(f, s);
    if (f.bad()) return std::nullopt;
    return s;
}

std::string read_all(const fs::path& p) {
    std::ifstream f(p);
    std::ostringstream o;
    o << f.rdbuf();
    return o.str();
}

std::string line_or(const fs::path& p, const std::string& fallback = "") {
    return read_line(p).value_or(fallback);
}

unsigned leading_uint(const std::string& s) {
    unsigned v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') break;
        v = v * 10 + unsigned(c - '0');
        if (v > 1000000) break;
    }
    return v;
}

/// DEVTYPE= of a sysfs device's uevent file.
std::string devtype(const fs::path& dev) {
    std::ifstream f(dev / "uevent");
    std::string l;
    while (std::getline(f, l))
        if (l.rfind("DEVTYPE=", 0) == 0) return l.substr(8);
    return "";
}

std::string link_name(const fs::path& p) {
    std::error_code ec;
    const fs::path t = fs::read_symlink(p, ec);
    return ec ? "" : t.filename().string();
}

std::vector<fs::path> sorted_entries(const fs::path& dir) {
    std::vector<fs::path> v;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) v.push_back(it->path());
    std::sort(v.begin(), v.end());
    return v;
}

/// Route "0-1" or "1-301": domain and route (hex, lowest byte = first hop).
/// The peer hangs off the last hop's port of its parent router.
unsigned last_hop_port(const std::string& name) {
    const auto dash = name.find('-');
    if (dash == std::string::npos) return 0;
    unsigned long long route = std::strtoull(name.c_str() + dash + 1, nullptr, 16);
    unsigned port = 0;
    while (route) {
        port = unsigned(route & 0xff);
        route >>= 8;
    }
    return port & 0x3f;
}

void read_xdomain(const host_view& v, const fs::path& dev, xdomain& x) {
    x.name = dev.filename().string();
    std::error_code ec;
    x.parent_router = fs::canonical(dev, ec).parent_path().filename().string();
    x.port = last_hop_port(x.name);
    x.device_name = line_or(dev / "device_name");
    x.vendor_name = line_or(dev / "vendor_name");
    x.unique_id = line_or(dev / "unique_id");
    // "20.0 Gb/s" and a lane count, per direction.
    x.rx = {leading_uint(line_or(dev / "rx_speed")), leading_uint(line_or(dev / "rx_lanes"))};
    x.tx = {leading_uint(line_or(dev / "tx_speed")), leading_uint(line_or(dev / "tx_lanes"))};
    for (const auto& c : sorted_entries(dev)) {
        if (devtype(c) != "thunderbolt_service") continue;
        const std::string key = line_or(c / "key");
        x.service_keys.push_back(key);
        if (key == ODL_XD_SERVICE_KEY) {
            x.odinlink_offered = true;
            x.odinlink_service = c.filename().string();
            x.odinlink_driver = link_name(c / "driver");
        }
    }
    const fs::path regs = fs::path(v.root + "/sys/kernel/debug/thunderbolt") / x.parent_router /
                          ("port" + std::to_string(x.port)) / "regs";
    std::ifstream f(regs);
    if (!f) {
        x.rating_error = std::string("cannot read ") + regs.string() + ": " + std::strerror(errno) +
                         " (needs root and debugfs mounted)";
        return;
    }
    x.rating = parse_port_regs(read_all(regs));
    if (x.rating)
        x.rating->source = "port " + std::to_string(x.port) + " of router " + x.parent_router + " (debugfs)";
    else
        x.rating_error = regs.string() + " has no lane adapter capability";
}

void read_devices(host_view& v) {
    for (const auto& d : sorted_entries(v.root + "/sys/class/odl_tb5")) {
        odl_device o;
        o.name = d.filename().string();
        if (o.name.rfind(ODL_TB5_DEV_PREFIX, 0) != 0) continue;
        o.dev_path = "/dev/" + o.name;
        o.abi_version = leading_uint(line_or(d / "abi_version"));
        o.state = line_or(d / "state");
        const std::string open = line_or(d / "open");
        o.local_open = open.size() >= 1 && open[0] == '1';
        o.peer_open = open.size() >= 3 && open[2] == '1';
        std::istringstream rings(line_or(d / "rings"));
        rings >> o.rings_used >> o.rings_offered;
        o.connect_count = leading_uint(line_or(d / "connect_count"));
        o.peer_version = line_or(d / "peer_version");
        o.irq_throttle_us = line_or(d / "irq_throttle_us");
        o.poll = line_or(d / "poll");
        for (const auto& c : sorted_entries(d / "statistics"))
            if (auto l = read_line(c)) o.counters.emplace_back(c.filename().string(), std::strtoull(l->c_str(), nullptr, 10));
        // device -> the service "0-1.1"; its parent is the XDomain "0-1".
        std::error_code ec;
        const fs::path svc = fs::canonical(d / "device", ec);
        if (!ec) o.xdomain = svc.parent_path().filename().string();
        const std::string node = v.root + o.dev_path;
        o.node_exists = fs::exists(node, ec);
        if (!o.node_exists) {
            o.node_error = node + " does not exist";
        } else if (access(node.c_str(), R_OK | W_OK) == 0) {
            o.node_accessible = true;
        } else {
            o.node_error = node + ": " + std::strerror(errno);
        }
        v.devices.push_back(std::move(o));
    }
}

}  // namespace

std::string generation_name(unsigned gbps_per_lane) {
    switch (gbps_per_lane) {
    case 10: return "Gen2";
    case 20: return "Gen3";
    case 40: return "Gen4";
    default: return gbps_per_lane ? std::to_string(gbps_per_lane) + " Gb/s/lane" : "unknown";
    }
}

std::string speed_text(const lane_speed& s) {
    if (!s.gbps_per_lane || !s.lanes) return "unknown";
    return generation_name(s.gbps_per_lane) + " x" + std::to_string(s.lanes) + " (" + std::to_string(s.total_gbps()) +
           " Gb/s)";
}

std::string rating_text(const port_rating& r) {
    return generation_name(r.max_gbps_per_lane) + " x" + std::to_string(r.max_lanes) + " (" +
           std::to_string(r.max_gbps_per_lane * r.max_lanes) + " Gb/s)";
}

std::string below_rating(const xdomain& x, const port_rating& r) {
    const unsigned want = r.max_gbps_per_lane * r.max_lanes;
    for (const auto* s : {&x.tx, &x.rx})
        if (s->total_gbps() && s->total_gbps() < want)
            return x.name + " trained " + speed_text(*s) + " below its rating " + rating_text(r);
    return "";
}

std::optional<port_rating> parse_port_regs(const std::string& text) {
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        // "0x0013    0 0x01 0x00 0x03e00113": offset, relative offset,
        // capability id, vendor id, value (drivers/thunderbolt/debugfs.c).
        unsigned off = 0, rel = 0, cap = 0, vsec = 0, value = 0;
        if (std::sscanf(line.c_str(), "%x %u %x %x %x", &off, &rel, &cap, &vsec, &value) != 5) continue;
        if (cap != 0x01 || rel != 0) continue;
        // LANE_ADP_CS_0: bits 19:16 supported speeds (0x8 Gen2, 0x4 Gen3,
        // 0x2 Gen4), bits 25:20 supported widths (0x1 single, 0x2 dual).
        const unsigned speeds = (value >> 16) & 0xf, widths = (value >> 20) & 0x3f;
        port_rating r;
        r.max_gbps_per_lane = (speeds & 0x2) ? 40 : (speeds & 0x4) ? 20 : (speeds & 0x8) ? 10 : 0;
        r.max_lanes = (widths & 0x2) ? 2 : (widths & 0x1) ? 1 : 0;
        if (!r.max_gbps_per_lane || !r.max_lanes) return std::nullopt;
        return r;
    }
    return std::nullopt;
}

host_view read_host_view(const std::string& root) {
    host_view v;
    v.root = root;
    const fs::path R(root.empty() ? "/" : root);
    std::error_code ec;
    v.kernel_release = line_or(R / "proc/sys/kernel/osrelease");
    v.cmdline = line_or(R / "proc/cmdline");
    v.tb_bus = fs::is_directory(R / "sys/bus/thunderbolt", ec);
    // A module file of the running kernel, compressed or not.
    auto module_file = [&](const char* dir, const char* name) {
        for (const char* ext : {"", ".xz", ".zst", ".gz"})
            if (fs::exists(R / "lib/modules" / v.kernel_release / dir / (std::string(name) + ".ko" + ext), ec))
                return true;
        return false;
    };
    v.tb_module_file = module_file("kernel/drivers/thunderbolt", "thunderbolt");

    for (const auto& d : sorted_entries(R / "sys/bus/pci/devices")) {
        const std::string cls = line_or(d / "class");
        const std::string drv = link_name(d / "driver");
        // 0x0c0340: serial bus, USB, USB4 host interface. Thunderbolt 3
        // hosts (class 0x088000) show up by their bound driver.
        if (cls != "0x0c0340" && drv != "thunderbolt") continue;
        pci_nhi n;
        n.address = d.filename().string();
        auto hex4 = [](const std::string& s) { return s.size() > 2 ? s.substr(2) : s; };
        n.vendor_device = hex4(line_or(d / "vendor")) + ":" + hex4(line_or(d / "device"));
        n.driver = drv;
        if (fs::exists(d / "iommu_group", ec)) n.iommu_group_type = line_or(d / "iommu_group/type", "unknown");
        v.nhis.push_back(n);
    }
    v.iommu_present = !sorted_entries(R / "sys/class/iommu").empty();

    for (const auto& d : sorted_entries(R / "sys/bus/thunderbolt/devices")) {
        const std::string type = devtype(d);
        if (type == "thunderbolt_domain") {
            tb_domain t;
            t.name = d.filename().string();
            t.security = line_or(d / "security");
            if (auto s = read_line(d / "iommu_dma_protection")) t.iommu_dma_protection = *s == "1";
            if (auto s = read_line(d / "deauthorization")) t.deauthorization = *s == "1";
            // The host router "N-0" of domain N.
            t.host_generation = int(leading_uint(line_or(
                R / "sys/bus/thunderbolt/devices" / (t.name.substr(6) + "-0") / "generation")));
            v.domains.push_back(t);
        } else if (type == "thunderbolt_xdomain") {
            xdomain x;
            read_xdomain(v, d, x);
            v.peers.push_back(std::move(x));
        }
    }

    v.module_loaded = fs::is_directory(R / "sys/module/odl_tb5", ec);
    // DKMS installs under updates/dkms, odl-tb5-modules-KVER under
    // updates/odl, a tree build under extra/.
    static constexpr const char* kPrebuiltDir = "updates/odl";
    v.module_prebuilt = module_file(kPrebuiltDir, "odl_tb5");
    if (v.module_prebuilt) {
        // A signed module ends with this marker (the kernel's sign-file).
        static const std::string kSigned = "~Module signature appended~\n";
        std::ifstream ko(R / "lib/modules" / v.kernel_release / kPrebuiltDir / "odl_tb5.ko", std::ios::binary);
        std::string tail(kSigned.size(), '\0');
        if (ko.seekg(-static_cast<std::streamoff>(kSigned.size()), std::ios::end) && ko.read(tail.data(), tail.size()))
            v.module_prebuilt_signed = tail == kSigned;
    }
    for (const char* dir : {"updates/dkms", "updates", "extra"})
        v.module_file = v.module_file || module_file(dir, "odl_tb5");
    v.module_file = v.module_file || v.module_prebuilt;
    // Secure Boot shows up as lockdown (integrity or confidentiality), which
    // refuses unsigned or untrusted modules; module.sig_enforce does it alone.
    if (line_or(R / "sys/module/module/parameters/sig_enforce") == "Y") {
        v.signatures_enforced = "module.sig_enforce";
    } else {
        const std::string lock = line_or(R / "sys/kernel/security/lockdown");
        const auto open = lock.find('['), close = lock.find(']');
        if (open != std::string::npos && close != std::string::npos && close > open) {
            const std::string mode = lock.substr(open + 1, close - open - 1);
            if (mode != "none") v.signatures_enforced = "lockdown=" + mode;
        }
    }
    for (const auto& p : sorted_entries(R / "sys/module/odl_tb5/parameters"))
        v.module_params.push_back(p.filename().string() + "=" + line_or(p));
    read_devices(v);
    return v;
}

}  // namespace odl::host
