// SPDX-License-Identifier: MIT
// `odl test`: run the suite through ctest, then the unit label again in
// sanitizer builds: address + undefined (with the fuzz targets), and with
// --tsan thread.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.h"
#include "test_failures.h"
#include "cli_common.h"

namespace odl::cli {
namespace {

/// Runs argv, inheriting stdio; returns the exit status (or 128+signal).
int run_step(const std::vector<std::string>& argv) {
    fmt::print(stderr, "odl: test: {}\n", fmt::join(argv, " "));
    std::fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) return 127;
    if (pid == 0) {
        std::vector<char*> args;
        for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
        args.push_back(nullptr);
        execvp(args[0], args.data());
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
    }
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    return 128 + WTERMSIG(status);
}

/// Wall time per phase on stderr, so a slow run says where its time went.
class phase_clock {
public:
    void lap(const std::string& phase) {
        const auto now = std::chrono::steady_clock::now();
        fmt::print(stderr, "odl: test: {} took {} s\n", phase,
                   std::chrono::duration_cast<std::chrono::seconds>(now - last_).count());
        last_ = now;
    }

private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

/// The end of each failed test's output again, last in the log: a long
/// log is often shown cut, and a test prints its reason at its end.
void print_failure_tails(const std::string& build) {
    std::ifstream log(build + "/Testing/Temporary/LastTest.log");
    if (!log) return;
    for (const auto& t : failed_tests(log, 12)) {
        fmt::print(stderr, "odl: test: {} ({}) failed; what it said of failures:\n", t.name, build);
        for (const auto& l : t.key) fmt::print(stderr, "  ! {}\n", l);
        fmt::print(stderr, "odl: test: the end of {}'s output:\n", t.name);
        for (const auto& l : t.tail) fmt::print(stderr, "  | {}\n", l);
    }
}

/// "ON" when the main build in @build was configured as a unity build (the
/// bootstrap's default, ODL_UNITY_BUILD=OFF not), else "OFF".
std::string main_build_unity(const std::string& build) {
    std::ifstream cache(build + "/CMakeCache.txt");
    for (std::string line; std::getline(cache, line);)
        if (line.rfind("CMAKE_UNITY_BUILD:", 0) == 0) return line.substr(line.find('=') + 1);
    return "OFF";
}

/// One sanitizer build (clang, -O1 -g1, unity as the main build, no model, no benchmarks) in
/// <build>-<suffix>, then ctest over @labels there.
int run_sanitizer_build(const std::string& src, const std::string& build, const std::string& jobs,
                        const std::string& suffix, const std::string& sanitizers, bool fuzz,
                        const std::string& labels, phase_clock& clock) {
    const std::string san = build + "-" + suffix;
    // -O1 -g1: what AddressSanitizer recommends and line tables for its
    // reports; full debug info under both sanitizers tripled the compile
    // time (docs/ci.md). clang, because libFuzzer comes with it: the fuzz
    // targets (tests/fuzz) build in the same tree, every library with
    // their coverage counters. A unity build when the main one is (a third
    // less compile time, docs/ci.md); ODL_UNITY_BUILD=OFF builds both file
    // by file, which is what finds a missing #include.
    std::vector<std::string> configure = {
        "cmake", "-S", src, "-B", san, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
        "-DCMAKE_C_COMPILER=clang", "-DCMAKE_CXX_COMPILER=clang++",
        "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG", "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG",
        "-DODL_SANITIZE=" + sanitizers, "-DODL_BUILD_BENCHMARKS=OFF",
        "-DCMAKE_UNITY_BUILD=" + main_build_unity(build),
        // The pass runs the unit and fuzz labels: the model has its own.
        "-DODL_BUILD_MODEL=OFF", std::string("-DODL_FUZZ=") + (fuzz ? "ON" : "OFF")};
    if (run_step(configure) != 0) {
        fmt::print(stderr, "odl: test: configuring the {} build failed\n", suffix);
        return 1;
    }
    if (run_step({"cmake", "--build", san, "-j", jobs}) != 0) {
        fmt::print(stderr, "odl: test: the {} build failed\n", suffix);
        return 1;
    }
    clock.lap(suffix + " build");
    const int rc = run_step({"ctest", "--test-dir", san, "--output-on-failure", "-j", jobs, "-L", labels});
    clock.lap(suffix + " tests");
    if (rc != 0) fmt::print(stderr, "odl: test: {} ctest failed (exit {})\n", suffix, rc);
    return rc;
}

/// AddressSanitizer + UBSan over the unit tests (and the fuzz targets), then
/// ThreadSanitizer over the unit tests (libodl, the plugin's threads, hil).
/// Build trees whose ctest failed go to @failed.
int run_sanitizer_pass(const std::string& src, const std::string& build, const std::string& jobs, bool fuzz,
                       bool tsan, phase_clock& clock, std::vector<std::string>* failed) {
    const int asan = run_sanitizer_build(src, build, jobs, "asan", "address,undefined", fuzz,
                                         fuzz ? "^(unit|fuzz)$" : "^unit$", clock);
    if (asan != 0) failed->push_back(build + "-asan");
    if (!tsan) return asan;
    // A report fails the test at once, with both stacks of a race.
    setenv("TSAN_OPTIONS", "halt_on_error=1 second_deadlock_stack=1", 1);
    const int thread = run_sanitizer_build(src, build, jobs, "tsan", "thread", false, "^unit$", clock);
    unsetenv("TSAN_OPTIONS");
    if (thread != 0) failed->push_back(build + "-tsan");
    return asan != 0 ? asan : thread;
}

struct test_options {
    std::string label;
    bool sanitize = true;
    bool fuzz = true;
    bool tsan = false;
    int jobs = 0;
};

int run_tests(const test_options& opt) {
    const std::string src = env_or("ODL_SOURCE_DIR", ODL_SOURCE_DIR_DEFAULT);
    const std::string build = env_or("ODL_BUILD_DIR", ODL_BINARY_DIR_DEFAULT);
    const std::string jobs =
        std::to_string(opt.jobs > 0 ? opt.jobs : std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));

    // Two testbeds may run at once (tests/vm/CMakeLists.txt says which).
    std::vector<std::string> ctest = {"ctest", "--test-dir", build, "--output-on-failure", "-j", jobs,
                                      "--resource-spec-file", src + "/cmake/ctest-resources.json"};
    if (!opt.label.empty()) {
        ctest.push_back("-L");
        ctest.push_back(opt.label);
    }
    phase_clock clock;
    const int rc = run_step(ctest);
    clock.lap("ctest");
    if (rc != 0) fmt::print(stderr, "odl: test: ctest failed (exit {})\n", rc);
    // The sanitizer pass covers the unit and fuzz labels; it is skipped when
    // a label other than those was asked for. It runs after a failed ctest too: a
    // broken VM stack must not hide what the sanitizers find.
    int san_rc = 0;
    std::vector<std::string> failed;
    if (rc != 0) failed.push_back(build);
    if (opt.sanitize && (opt.label.empty() || opt.label == "unit" || opt.label == "fuzz"))
        san_rc = run_sanitizer_pass(src, build, jobs, opt.fuzz && opt.label != "unit",
                                    opt.tsan && opt.label != "fuzz", clock, &failed);
    // Last in the log, whichever pass failed: a long log is often shown cut.
    for (const auto& dir : failed) print_failure_tails(dir);
    return rc != 0 ? rc : san_rc;
}

}  // namespace

void add_test_command(CLI::App& app) {
    auto opt = std::make_shared<test_options>();
    auto* cmd = app.add_subcommand("test", "Run the test suite through ctest");
    cmd->add_option("--label,-L", opt->label, "Only tests with this ctest label (unit, model, vm, hil, gpu, package, fuzz)");
    cmd->add_flag("!--no-sanitize", opt->sanitize, "Skip the sanitizer passes (address/undefined with the fuzz targets; thread with --tsan)");
    cmd->add_flag("!--no-fuzz", opt->fuzz, "Skip the fuzz targets in the sanitizer pass");
    cmd->add_flag("--tsan", opt->tsan,
                  "Also build the unit tests under ThreadSanitizer and run them (about 2 minutes more)");
    cmd->add_option("--jobs,-j", opt->jobs, "Parallel tests (default: cores)");
    cmd->callback([opt] { std::exit(run_tests(*opt)); });
}

}  // namespace odl::cli
