// SPDX-License-Identifier: MIT
// A made-up host tree for the programs that read sysfs, /dev and /proc under
// --root (odl doctor, odl link, odl-daemon): a USB4 host with one peer over
// a Gen4 x2 cable offering the odinlink service, odl_tb5 bound, its device
// logged in. Tests break or change one part at a time.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "uapi/odl_tb5.h"

namespace odl::test {

/// A host's tree: builds the healthy case, tests break one layer.
class fake_host {
public:
    fake_host() {
        char tmpl[] = "/tmp/odl-host-XXXXXX";
        root = mkdtemp(tmpl);
        put("proc/sys/kernel/osrelease", "6.12.0-test");
        put("proc/cmdline", "console=ttyS0");
        const std::string pci = "sys/devices/pci0000:00/0000:00:03.0";
        put(pci + "/class", "0x0c0340");
        put(pci + "/vendor", "0x1af4");
        put(pci + "/device", "0x10f0");
        mkdir("sys/bus/pci/drivers/thunderbolt");
        link("sys/bus/pci/drivers/thunderbolt", pci + "/driver");
        link(pci, "sys/bus/pci/devices/0000:00:03.0");
        const std::string dom = pci + "/domain0";
        put(dom + "/uevent", "DEVTYPE=thunderbolt_domain");
        put(dom + "/security", "user");
        put(dom + "/iommu_dma_protection", "0");
        put(dom + "/deauthorization", "1");
        put(dom + "/0-0/uevent", "DEVTYPE=thunderbolt_device");
        put(dom + "/0-0/generation", "4");
        xd = dom + "/0-0/0-1";
        put(xd + "/uevent", "DEVTYPE=thunderbolt_xdomain");
        put(xd + "/device_name", "peer-host");
        put(xd + "/vendor_name", "Vendor");
        for (const char* d : {"rx", "tx"}) {
            put(xd + "/" + d + "_speed", "40.0 Gb/s");
            put(xd + "/" + d + "_lanes", "2");
        }
        svc = xd + "/0-1.1";
        put(svc + "/uevent", "DEVTYPE=thunderbolt_service");
        put(svc + "/key", "odinlink");
        mkdir("sys/bus/thunderbolt/drivers/odl_tb5");
        link("sys/bus/thunderbolt/drivers/odl_tb5", svc + "/driver");
        put(xd + "/0-1.0/uevent", "DEVTYPE=thunderbolt_service");
        put(xd + "/0-1.0/key", "network");
        for (const char* n : {"domain0", "0-0", "0-1", "0-1.0", "0-1.1"}) {
            std::string target = dom;
            if (std::string(n) == "0-0") target = dom + "/0-0";
            if (std::string(n) == "0-1") target = xd;
            if (std::string(n) == "0-1.0") target = xd + "/0-1.0";
            if (std::string(n) == "0-1.1") target = svc;
            link(target, std::string("sys/bus/thunderbolt/devices/") + n);
        }
        // debugfs: the lane adapter capability of port 1 (Gen2-4, x1/x2).
        put("sys/kernel/debug/thunderbolt/0-0/port1/regs",
            "offset relative_offset cap_id vs_cap_id value\n0x0000    0 0x00 0x00 0x00000000\n"
            "0x0008    0 0x01 0x00 0x003e0110\n0x0009    1 0x01 0x00 0x0822001c\n");
        put("sys/module/odl_tb5/parameters/rings", "1");
        dev = svc + "/odl_tb5/odl_tb5_0";
        put(dev + "/abi_version", std::to_string(ODL_TB5_ABI_VERSION));
        put(dev + "/state", "connected");
        put(dev + "/open", "0 0");
        put(dev + "/rings", "1 1");
        put(dev + "/connect_count", "1");
        put(dev + "/peer_version", "1.3");
        put(dev + "/ping", "812345");
        put(dev + "/statistics/tx_frames", "1200");
        put(dev + "/statistics/rx_bad", "0");
        put("sys/module/odl_tb5/parameters/poll", "N");
        put("sys/module/odl_tb5/parameters/irq_throttle_us", "8");
        link(svc, dev + "/device");
        link(dev, "sys/class/odl_tb5/odl_tb5_0");
        put("dev/odl_tb5_0", "");
    }
    ~fake_host() {
        std::error_code ec;
        std::filesystem::remove_all(root, ec);
    }

    void put(const std::string& rel, const std::string& content) {
        std::filesystem::create_directories((std::filesystem::path(root) / rel).parent_path());
        std::ofstream(std::filesystem::path(root) / rel) << content << "\n";
    }
    void mkdir(const std::string& rel) { std::filesystem::create_directories(std::filesystem::path(root) / rel); }
    /// A symlink at @rel pointing at @target (both relative to the root).
    void link(const std::string& target, const std::string& rel) {
        std::filesystem::create_directories((std::filesystem::path(root) / rel).parent_path());
        std::filesystem::create_symlink(std::filesystem::path(root) / target, std::filesystem::path(root) / rel);
    }
    void remove(const std::string& rel) { std::filesystem::remove_all(std::filesystem::path(root) / rel); }

    std::string root, xd, svc, dev;
};

}  // namespace odl::test
