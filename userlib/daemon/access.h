// SPDX-License-Identifier: MIT
// Who may act (run tests) rather than only look: root and the members of
// the group `odl`, the same rule as the bus policy
// (org.odinlink.Daemon1.conf) and /dev/odl_tb5_N's group. The status page
// knows a user by the uid its token was issued to; this says what that
// uid may do.
#pragma once

#include <sys/types.h>

#include <string>

namespace odl::daemon {

/// The group whose members may run tests (the bus policy's).
constexpr const char* kActGroup = "odl";

/// True when @uid is root or a member of @group (its primary group or a
/// supplementary one, as the user database says now). An unknown uid or
/// group: false.
bool may_act(uid_t uid, const std::string& group = kActGroup);

}  // namespace odl::daemon
