// SPDX-License-Identifier: MIT
// odl: the OdinLink command-line tool. Parses and dispatches; each subcommand
// lives in its own cmd_<name>.cpp and reports its own errors once. The host
// commands need libodl only; `run` and `model` are handed to odl-model.
#include <cstdio>
#include <exception>
#include <string>

#include <CLI/CLI.hpp>

#include "odl_cli_checks.h"

#include "commands.h"
#include "odl/build_info.h"
#include "odl/odl.h"
#include "odl/odl.hpp"

int main(int argc, char** argv) {
    const int forwarded = odl::cli::forward_to_model(argc, argv);
    if (forwarded >= 0) return forwarded;

    // libodl prints nothing itself: its warnings (a bad ODL_* setting, a
    // damaged payload, a peer that left mid-run) reach the user only so.
    odl::log_to_stderr("odl", odl::log_level_from_env());
    CLI::App app{"OdinLink: host-to-host interconnect over Thunderbolt 5 / USB4"};
    app.require_subcommand(1);
    // The build (version + source hash) and the libodl actually loaded, so
    // that two hosts can be checked to run the same build.
    app.set_version_flag("--version", std::string("odl " ODL_BUILD_VERSION " (libodl ") + odl_version() + ")");
    odl::cli::add_test_command(app);
    odl::cli::add_perf_command(app);
    odl::cli::add_stats_command(app);
    odl::cli::add_doctor_command(app);
    odl::cli::add_link_command(app);
    odl::cli::add_vm_command(app);
    odl::cli::add_package_command(app);
    odl::cli::add_hil_command(app);
    odl::cli::add_files_commands(app);
    odl::cli::add_mount_command(app);
    odl::cli::add_model_forwards(app);
    odl::cli::decimal_integers(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "odl: %s\n", e.what());
        return 1;
    }
    return 0;
}
