// SPDX-License-Identifier: MIT
// `odl run <scenario> --on <inventory.yaml>`: replays a scenario on a HIL
// pair over SSH (docs/hil.md). What real hosts cannot do (cable events
// without a controllable switch, bit errors, retraining) is reported as not
// applied; assertions they cannot measure as not evaluated.
#pragma once

#include <string>

#include "run_vm.h"

namespace odl::cli {

/// Real links move a scenario's streams in full; the VMs' cap is for TCG.
constexpr unsigned k_hosts_stream_cap_mib = 65536;

struct hosts_run_opts {
    std::string file;       ///< scenario YAML
    std::string inventory;  ///< the HIL inventory
    std::string pair;       ///< which pair ("" = the only one)
    std::string out;        ///< results folder (empty: <build>/runs/hil/<profile>/<pair>/<scenario>-<time>)
    bool json = false;
    bool print_report = true;  ///< false: only the results folder (odl hil compare prints its own)
    vm_run_opts settings;   ///< time scale and per-workload caps, as on the VMs
};

/// Runs the scenario on the pair; exit status as run_on_vm (0 pass, 1 an
/// assertion failed or a workload did not complete, 2 bad input, 3 a host
/// failed or vanished, 130 interrupted).
int run_on_hosts(const hosts_run_opts& o);

}  // namespace odl::cli
