// SPDX-License-Identifier: MIT
// odl: the OdinLink command-line tool. Parses and dispatches; each subcommand
// lives in its own cmd_<name>.cpp and reports its own errors once.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "odl/odl.h"

int main(int argc, char** argv) {
    CLI::App app{"OdinLink: host-to-host interconnect over Thunderbolt 5 / USB4"};
    app.require_subcommand(1);
    app.set_version_flag("--version", odl_version());
    odl::cli::add_test_command(app);
    odl::cli::add_perf_command(app);
    odl::cli::add_stats_command(app);
    odl::cli::add_vm_command(app);
    odl::cli::add_run_command(app);
    odl::cli::add_model_command(app);
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
