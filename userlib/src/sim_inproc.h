// SPDX-License-Identifier: MIT
// ODL_SIM_SOCKET=inproc: the model server in a thread of this process, from
// the model module libodl loads at run time (include/odl/wire/sim_inproc.h).
#pragma once

#include <string>

namespace odl {

/// The socket of this process's in-process model server, started at the
/// first call from ODL_SIM_ARGS (odl-linkd --sim's options, split at
/// spaces) and stopped when the process exits. Throws odl::error when the
/// module is missing or refuses the options (their file:line for a
/// scenario or calibration), before any device opens.
std::string sim_inproc_socket();

}  // namespace odl
