// SPDX-License-Identifier: MIT
// The listening sockets of odl-linkd (devices, sim programs, control).
#pragma once

#include <string>

namespace odl::model::linkd {

/// A non-blocking AF_UNIX SOCK_SEQPACKET socket listening on @path (a stale
/// socket file there is replaced). Returns the fd, or -1 with @err set.
int listen_unix(const std::string& path, std::string& err);

}  // namespace odl::model::linkd
