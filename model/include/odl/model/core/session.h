// SPDX-License-Identifier: MIT
// A fresh SystemC kernel per model run, so one process (a test binary, a
// sweep) can elaborate and simulate many independent systems in turn.
#pragma once

namespace odl::model {

/// Creates a new simulation context on construction. Construct it before
/// any module of the run; destroy the run's modules before the next session.
class sim_session {
public:
    sim_session();
    sim_session(const sim_session&) = delete;
    sim_session& operator=(const sim_session&) = delete;
};

}  // namespace odl::model
