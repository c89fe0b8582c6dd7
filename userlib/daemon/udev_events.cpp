// SPDX-License-Identifier: MIT
#include "udev_events.h"

#include <libudev.h>
#include <unistd.h>

#include <cstring>
#include <stdexcept>

namespace odl::daemon {

udev_events::udev_events() {
    m_udev = udev_new();
    if (!m_udev) throw std::runtime_error("udev: cannot start libudev");
    // udevd's control socket: it runs and rebroadcasts processed events.
    m_source = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel";
    m_mon = udev_monitor_new_from_netlink(m_udev, m_source.c_str());
    if (!m_mon) {
        udev_unref(m_udev);
        throw std::runtime_error("udev: cannot open a " + m_source + " event monitor (netlink)");
    }
    udev_monitor_filter_add_match_subsystem_devtype(m_mon, "odl_tb5", nullptr);
    udev_monitor_filter_add_match_subsystem_devtype(m_mon, "thunderbolt", nullptr);
    if (udev_monitor_enable_receiving(m_mon) < 0) {
        udev_monitor_unref(m_mon);
        udev_unref(m_udev);
        throw std::runtime_error("udev: cannot receive events: " + std::string(std::strerror(errno)));
    }
}

udev_events::~udev_events() {
    udev_monitor_unref(m_mon);
    udev_unref(m_udev);
}

int udev_events::fd() const { return udev_monitor_get_fd(m_mon); }

bool udev_events::drain() {
    bool ours = false;
    // The monitor's socket is non-blocking: nullptr once it is empty.
    while (udev_device* d = udev_monitor_receive_device(m_mon)) {
        const char* sub = udev_device_get_subsystem(d);
        // Kernel events are not filtered by libudev: check here.
        if (sub && (!std::strcmp(sub, "odl_tb5") || !std::strcmp(sub, "thunderbolt"))) ours = true;
        udev_device_unref(d);
    }
    return ours;
}

}  // namespace odl::daemon
