// SPDX-License-Identifier: MIT
// What check and deploy both ask a host: its facts, its doctor, and a
// private folder for the SSH master sockets.
#pragma once

#include <string>

#include "odl/hil/hil.h"
#include "odl/hil/ssh.h"

namespace odl::hil {

/// A private folder for the SSH control sockets (short path: socket names
/// are limited to 107 bytes), removed with everything in it.
class control_dir {
public:
    control_dir();
    ~control_dir();
    control_dir(const control_dir&) = delete;
    control_dir& operator=(const control_dir&) = delete;
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

/// "" for root, else "sudo -n " (never asks for a password: BatchMode).
std::string privileged(const host& h);

/// OS, kernel, Secure Boot, the odl build and the loaded module's
/// srcversion, in one SSH round trip. Sets f->reach when SSH fails.
void read_facts(const ssh_session& s, int timeout_s, host_facts* f);

/// `odl doctor --json --no-nccl --expect <rating>` on the host.
void run_doctor(const ssh_session& s, const std::string& expect, int timeout_s, host_facts* f);

}  // namespace odl::hil
