// SPDX-License-Identifier: MIT
// `odl run ...` and `odl model ...`: handed over, git style, to odl-model,
// which comes with the SystemC model (Debian package odl-model). The host
// commands in this folder depend on libodl only, so a lab host needs no
// simulator.
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <unistd.h>

#include "commands.h"

namespace odl::cli {
namespace {

constexpr const char* k_model_exe = "odl-model";
constexpr const char* k_model_package = "odl-model";

/// run, model, and hil compare|calibrate (the HIL commands that need the model).
bool is_model_command(int argc, char** argv) {
    const char* a = argv[1];
    if (std::strcmp(a, "run") == 0 || std::strcmp(a, "model") == 0) return true;
    return std::strcmp(a, "hil") == 0 && argc > 2 &&
           (std::strcmp(argv[2], "compare") == 0 || std::strcmp(argv[2], "calibrate") == 0);
}

/// The folder this binary was run from (resolved), or "" if unknown.
std::string self_dir() {
    const std::string p = self_exe();
    const auto slash = p.rfind('/');
    return slash == std::string::npos ? "" : p.substr(0, slash);
}

}  // namespace

std::string self_exe() {
    char buf[PATH_MAX];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : "";
}

void add_model_forwards(CLI::App& app) {
    // Listed for `odl --help` only: forward_to_model() takes these words
    // before CLI11 parses anything.
    app.add_subcommand("run", "replay a scenario (YAML) on the model or the VMs (runs odl-model)");
    app.add_subcommand("model", "latency modelling: sweep, report, calibrate (runs odl-model)");
}

int forward_to_model(int argc, char** argv) {
    if (argc < 2 || !is_model_command(argc, argv)) return -1;
    std::vector<std::string> args;
    for (int i = 1; i < argc; ++i) args.push_back(argv[i]);
    return exec_model(args);
}

int exec_model(const std::vector<std::string>& words) {
    std::vector<char*> args;
    args.push_back(const_cast<char*>(k_model_exe));
    for (const auto& w : words) args.push_back(const_cast<char*>(w.c_str()));
    args.push_back(nullptr);
    const char* what = words.empty() ? "model" : words.front().c_str();

    const std::string dir = self_dir();
    if (!dir.empty()) {
        const std::string beside = dir + "/" + k_model_exe;
        if (access(beside.c_str(), X_OK) == 0) {
            execv(beside.c_str(), args.data());
            std::fprintf(stderr, "odl: %s: cannot run %s: %s\n", what, beside.c_str(), std::strerror(errno));
            return 126;
        }
    }
    execvp(k_model_exe, args.data());
    const int err = errno;
    if (err != ENOENT) {
        std::fprintf(stderr, "odl: %s: cannot run %s: %s\n", what, k_model_exe, std::strerror(err));
        return 126;
    }
    std::fprintf(stderr,
                 "odl: %s: the modelling commands are in %s, which is not installed (not found in %s "
                 "nor on PATH): install the Debian package %s, or build with -DODL_BUILD_MODEL=ON\n",
                 what, k_model_exe, dir.empty() ? "this binary's folder" : dir.c_str(), k_model_package);
    return 127;
}

}  // namespace odl::cli
