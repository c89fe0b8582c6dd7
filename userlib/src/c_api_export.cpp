// SPDX-License-Identifier: MIT
// libodl.so is odl_core linked whole; this file only gives the target a source.
#include "odl/odl.h"
