// SPDX-License-Identifier: MIT
// Fresh SystemC simulation context per run (SystemC 2.3 cannot restart one).
#include "odl/model/core/session.h"

#include <cstdlib>

#include <systemc>

namespace odl::model {

sim_session::sim_session() {
    // Keep stdout for results: no SystemC banner.
    setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    // The previous context is leaked on purpose: its modules may still be
    // alive until their owner is destroyed, and it is small.
    sc_core::sc_curr_simcontext = new sc_core::sc_simcontext();
    sc_core::sc_default_global_context = sc_core::sc_curr_simcontext;
}

}  // namespace odl::model
