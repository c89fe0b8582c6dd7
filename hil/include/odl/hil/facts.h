// SPDX-License-Identifier: MIT
// What check, deploy and `odl run --on <inventory>` ask a host: its facts
// and its doctor, over an open ssh_session.
#pragma once

#include <string>

#include "odl/hil/hil.h"
#include "odl/hil/ssh.h"

namespace odl::hil {

/// "" for root, else "sudo -n " (never asks for a password: BatchMode).
std::string privileged(const host& h);

/// OS, kernel, Secure Boot, the odl build and the loaded module's
/// srcversion, in one SSH round trip. Sets f->reach when SSH fails.
void read_facts(const ssh_session& s, int timeout_s, host_facts* f);

/// `odl doctor --json --no-nccl --expect <rating>` on the host.
void run_doctor(const ssh_session& s, const std::string& expect, int timeout_s, host_facts* f);

}  // namespace odl::hil
