// SPDX-License-Identifier: MIT
// odl-model: the modelling commands (scenario replay, latency modelling) on
// the SystemC model. They ship with the model, apart from the host commands,
// so that the `odl` tool needs no simulator; `odl run|model ...` execs this.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "odl_cli_checks.h"

#include "model_commands.h"
#include "odl/build_info.h"

int main(int argc, char** argv) {
    CLI::App app{"OdinLink modelling commands (also reached as `odl run` and `odl model`)"};
    app.name("odl");
    app.require_subcommand(1);
    app.set_version_flag("--version", "odl-model " ODL_BUILD_VERSION);
    odl::cli::add_run_command(app);
    odl::cli::add_model_command(app);
    odl::cli::add_hil_model_command(app);
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
