// SPDX-License-Identifier: MIT
// Where odl-model writes what it made when no --out says.
#pragma once

#include <string>

/// $ODL_BUILD_DIR if set; else the build tree this program runs from; else
/// ./odl-results (an installed odl-model: the tree it was built in is not on
/// this machine, or not this user's).
std::string results_base();
