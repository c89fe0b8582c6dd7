// SPDX-License-Identifier: MIT
// What sysfs, /dev and /proc say about this host's USB4 stack and odl_tb5,
// read without opening any device (an open of /dev/odl_tb5_N starts a
// session with the peer). Shared by `odl doctor`, `odl link` and odl-daemon. Every path
// is taken under a root directory, so tests can hand in a made-up tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace odl::host {

/// A USB4 / Thunderbolt host interface on PCI.
struct pci_nhi {
    std::string address;  ///< e.g. "0000:00:03.0"
    std::string vendor_device;  ///< "1af4:10f0"
    std::string driver;   ///< bound driver's name, "" when none
    std::string iommu_group_type;  ///< "identity", "DMA", "DMA-FQ", ... or "" (no group)
};

/// A Thunderbolt domain (one per host interface with thunderbolt bound).
struct tb_domain {
    std::string name;  ///< "domain0"
    std::string security;  ///< none, user, secure, dponly, usbonly, nopcie
    std::optional<bool> iommu_dma_protection;
    std::optional<bool> deauthorization;  ///< offered by the software connection manager only
    int host_generation = 0;  ///< generation of the host router (4: USB4)
};

/// Link speed as the kernel reports it for an XDomain, per direction.
struct lane_speed {
    unsigned gbps_per_lane = 0;  ///< 10, 20, 40 (0: not reported)
    unsigned lanes = 0;
    unsigned total_gbps() const { return gbps_per_lane * lanes; }
};

/// What a lane adapter supports (its LANE_ADP_CS_0), from debugfs.
struct port_rating {
    unsigned max_gbps_per_lane = 0;  ///< 10 (Gen2), 20 (Gen3), 40 (Gen4)
    unsigned max_lanes = 0;          ///< 1 or 2
    std::string source;              ///< where it came from
};

/// A peer host seen over a cable (a thunderbolt_xdomain device).
struct xdomain {
    std::string name;  ///< "0-1"
    std::string parent_router;  ///< "0-0"
    unsigned port = 0;  ///< the parent router's lane adapter the peer is on
    std::string device_name, vendor_name, unique_id;
    lane_speed rx, tx;
    std::optional<port_rating> rating;  ///< debugfs, readable by root only
    std::string rating_error;           ///< why @rating is absent
    std::vector<std::string> service_keys;  ///< keys of the services the peer offers
    bool odinlink_offered = false;
    std::string odinlink_service;  ///< "0-1.1" when offered
    std::string odinlink_driver;   ///< driver bound to it, "" when none
};

/// One /dev/odl_tb5_N, from /sys/class/odl_tb5/odl_tb5_N.
struct odl_device {
    std::string name;  ///< "odl_tb5_0"
    std::string dev_path;  ///< "/dev/odl_tb5_0" (without the root)
    bool node_exists = false;
    bool node_accessible = false;  ///< read+write for this user
    std::string node_error;
    unsigned abi_version = 0;
    std::string state;  ///< login, connected, session, gone ("" when unreadable)
    bool local_open = false, peer_open = false;
    unsigned rings_used = 0, rings_offered = 0;
    unsigned connect_count = 0;
    std::string irq_throttle_us;  ///< the device's knob ("" when absent)
    std::string poll;  ///< "1" polling, "0" interrupt mode ("" when absent)
    std::string peer_version;
    std::string xdomain;  ///< the XDomain it belongs to ("0-1")
    /// statistics/: counter name and value, in name order.
    std::vector<std::pair<std::string, std::uint64_t>> counters;
};

struct host_view {
    std::string root;
    std::string kernel_release;
    bool tb_bus = false;  ///< /sys/bus/thunderbolt exists
    bool tb_module_file = false;  ///< thunderbolt.ko exists for this kernel
    std::vector<pci_nhi> nhis;
    std::vector<tb_domain> domains;
    bool iommu_present = false;  ///< /sys/class/iommu has entries
    std::string cmdline;
    std::vector<xdomain> peers;
    bool module_loaded = false;  ///< /sys/module/odl_tb5
    bool module_file = false;    ///< an odl_tb5.ko for the running kernel under /lib/modules
    /// That file came built for this kernel (odl-tb5-modules-KVER, under
    /// updates/odl), not from DKMS: nothing on the host signed it.
    bool module_prebuilt = false;
    /// That prebuilt file carries a signature (odl package --sign-key).
    bool module_prebuilt_signed = false;
    /// Why this kernel loads only modules signed by a key it trusts
    /// ("module.sig_enforce", "lockdown=integrity", ...); "" when it does not.
    std::string signatures_enforced;
    std::vector<std::string> module_params;  ///< "name=value"
    std::vector<odl_device> devices;
};

/// Reads the view under @root ("" for the real system).
host_view read_host_view(const std::string& root);

/// "Gen4" for 40 Gb/s per lane, "Gen3" for 20, "Gen2" for 10.
std::string generation_name(unsigned gbps_per_lane);

/// "Gen3 x2 (40 Gb/s)", or "unknown".
std::string speed_text(const lane_speed& s);
/// "Gen4 x2 (80 Gb/s)".
std::string rating_text(const port_rating& r);
/// Empty when no direction of @x trained below @r; else which one, how.
std::string below_rating(const xdomain& x, const port_rating& r);

/// Parses one port's debugfs `regs` file: the lane adapter capability's
/// first dword (supported speeds and widths). Empty when it is not there.
std::optional<port_rating> parse_port_regs(const std::string& text);

}  // namespace odl::host
