// SPDX-License-Identifier: MIT
// Device events from the kernel through libudev: odl_tb5 devices and
// Thunderbolt XDomains appearing, changing (odl_tb5 sends a change event
// with ODL_STATE= on every state change; thunderbolt.ko on a link change)
// and going. With udevd running its processed events are taken (the /dev
// node exists by then), else the kernel's own (a busybox initramfs).
#pragma once

#include <memory>
#include <string>

struct udev;
struct udev_monitor;

namespace odl::daemon {

class udev_events {
public:
    /// Throws std::runtime_error with the reason when no monitor can be made.
    udev_events();
    ~udev_events();
    udev_events(const udev_events&) = delete;
    udev_events& operator=(const udev_events&) = delete;

    /// The descriptor to poll(2) for input.
    int fd() const;
    /// Takes every pending event; true when one was about our devices.
    bool drain();
    /// "udev" or "kernel": where the events come from.
    const std::string& source() const { return m_source; }

private:
    udev* m_udev = nullptr;
    udev_monitor* m_mon = nullptr;
    std::string m_source;
};

}  // namespace odl::daemon
