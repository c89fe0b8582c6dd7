// SPDX-License-Identifier: MIT
// `odl hil check` and `odl hil deploy` (docs/hil.md): the pair's hosts as
// the controller sees them over SSH, and this build installed on both.
#pragma once

#include <string>
#include <vector>

#include "odl/hil/inventory.h"

namespace odl::hil {

/// Exit codes of `odl hil` beyond the doctor's own (10..21, 30), which
/// `check` passes on for the first host whose doctor fails.
enum exit_code : int {
    kOk = 0,
    kUsage = 2,              ///< bad arguments or inventory
    kUnreachable = 40,       ///< SSH could not reach a host (or it vanished)
    kNotDeployed = 41,       ///< odl or odl_tb5 missing on a host
    kMixedBuilds = 42,       ///< the two hosts run different builds
    kDeployFailed = 43,      ///< copying or installing the packages failed
};

/// What one host is, as seen over SSH.
struct host_facts {
    std::string role;
    std::string label;        ///< "a (root@... port N)"
    std::string reach;        ///< "" when reached, else why not
    std::string os, kernel, secure_boot;
    std::string odl_build;    ///< `odl --version` ("" when not installed)
    std::string module_src;   ///< odl_tb5 srcversion ("" when not loaded)
    std::string module_version;  ///< odl_tb5 MODULE_VERSION: the build's version when packaged
    std::string iommu;        ///< the doctor's IOMMU line
    int doctor_exit = -1;     ///< -1: not run
    std::string doctor_first_broken, doctor_summary;
};

struct check_options {
    std::string pair;  ///< --pair ("" = the only one)
    bool json = false;
    int timeout_s = 60;  ///< per remote command
};

/// Runs the checks, prints the table (or JSON) on stdout and one line
/// naming the first broken host and layer on stderr; returns the exit code.
int run_check(const inventory& inv, const check_options& o);

struct deploy_options {
    std::string pair;
    std::string debs_dir;   ///< take the packages from here ("" = build them)
    std::string odl_self;   ///< this odl binary, to run `odl package`
    bool plugin = false;    ///< also the NCCL/RCCL plugin package
    int install_timeout_s = 1200;  ///< per host: DKMS builds the module there
    int settle_s = 60;             ///< wait this long for the peers' login after the reload (0: don't)
};

/// Copies and installs this build's packages on both hosts (DKMS builds the
/// module against each host's kernel), loads odl_tb5 and checks that both
/// run the same build. Progress on stderr; returns the exit code.
int run_deploy(const inventory& inv, const deploy_options& o);

}  // namespace odl::hil
