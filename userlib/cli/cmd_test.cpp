// SPDX-License-Identifier: MIT
// `odl test`: run the suite through ctest, then the unit label again in
// sanitizer builds (built beside ctest at idle priority): address +
// undefined (its fuzz targets run beside ctest too), and with --tsan thread.
#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
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
void print_failure_tails(const std::string& build, const std::string& log_name = "LastTest.log") {
    std::ifstream log(build + "/Testing/Temporary/" + log_name);
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

/// The sanitizer trees of one `odl test`: <build>-asan (address + undefined,
/// with the fuzz targets) and with --tsan <build>-tsan (thread).
struct sanitizer_tree {
    std::string suffix;
    std::string sanitizers;
    bool fuzz = false;
    std::string labels;
};

/// The fuzz targets' seconds when they run beside ctest: at SCHED_IDLE they
/// get the third to half of the CPU the testbeds leave (docs/ci.md), so
/// each fuzzes longer in wall time for about the work of 10 s alone.
constexpr int kBesideFuzzSeconds = 25;
/// Their wall-clock limits beside ctest: at SCHED_IDLE a target may get no
/// CPU for minutes while two guests fill both cores, and CI once killed two
/// healthy targets at the 145 s meant for a target run alone. A hang is
/// still one input running a minute, and a target stuck for 20 minutes.
constexpr int kBesideFuzzTimeout = 1200;
constexpr int kBesideFuzzInputTimeout = 60;

/// Configures and builds one sanitizer tree (clang, -O1 -g1, unity as the main
/// build, no model, no benchmarks) in <build>-<suffix>.
int build_sanitizer_tree(const std::string& src, const std::string& build, const std::string& jobs,
                         const sanitizer_tree& t) {
    const std::string san = build + "-" + t.suffix;
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
        "-DODL_SANITIZE=" + t.sanitizers, "-DODL_BUILD_BENCHMARKS=OFF",
        "-DCMAKE_UNITY_BUILD=" + main_build_unity(build),
        // The pass runs the unit and fuzz labels: the model has its own.
        "-DODL_BUILD_MODEL=OFF", std::string("-DODL_FUZZ=") + (t.fuzz ? "ON" : "OFF"),
        "-DODL_FUZZ_SECONDS=" + std::to_string(kBesideFuzzSeconds),
        "-DODL_FUZZ_TIMEOUT=" + std::to_string(kBesideFuzzTimeout),
        "-DODL_FUZZ_INPUT_TIMEOUT=" + std::to_string(kBesideFuzzInputTimeout)};
    if (run_step(configure) != 0) {
        fmt::print(stderr, "odl: test: configuring the {} build failed\n", t.suffix);
        return 1;
    }
    if (run_step({"cmake", "--build", san, "-j", jobs}) != 0) {
        fmt::print(stderr, "odl: test: the {} build failed\n", t.suffix);
        return 1;
    }
    return 0;
}

/// "stat::number_of_executed_units: N" of each fuzz target in a ctest log,
/// one line per target, so the log says how much fuzzing was done.
void print_fuzz_units(const std::string& log_path) {
    std::ifstream log(log_path);
    std::string test;
    for (std::string l; std::getline(log, l);) {
        // "3/11 Test: fuzz_frame" opens each test's part.
        if (const auto at = l.find(" Test: "); at != std::string::npos && l.find('/') < at) test = l.substr(at + 7);
        if (l.rfind("stat::number_of_executed_units:", 0) == 0)
            fmt::print(stderr, "odl: test: {}: {} inputs run\n", test, l.substr(l.rfind(':') + 2));
    }
}

/// The sanitizer trees' builds, started beside ctest in a child process at
/// SCHED_IDLE: the compilers get only the CPU time ctest's tests leave
/// idle (a third to a half of it while the testbeds run, docs/ci.md), and
/// a guest's vCPU thread that wakes takes its core back at once. Measured
/// here: a compile at SCHED_IDLE on one core does not slow a CPU-bound
/// benchmark on the other (docs/ci.md); the nice-19 overlap tried in the
/// first session slowed the testbeds as much as it saved. Its output goes to
/// a log, so that it does not interleave with ctest's. A tree with the fuzz
/// targets runs them next, still beside ctest (kBesideFuzzSeconds each):
/// they need no timing of their own, unlike the unit tests, which run after
/// ctest.
class background_builds {
public:
    background_builds(const std::string& src, const std::string& build, const std::string& jobs,
                      const std::vector<sanitizer_tree>& trees)
        : m_log(build + "-sanitizers.log") {
        fmt::print(stderr, "odl: test: building the sanitizer trees beside ctest at idle priority (log: {})\n",
                   m_log);
        std::fflush(stderr);
        m_pid = fork();
        if (m_pid != 0) return;
        // The child: lowest priority first, then its output to the log.
        sched_param none{};
        if (sched_setscheduler(0, SCHED_IDLE, &none) != 0 && nice(19) == -1)
            std::perror("odl: test: cannot lower the sanitizer builds' priority");
        const int fd = open(m_log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
            std::perror(m_log.c_str());
            _exit(1);
        }
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
        phase_clock clock;
        bool fuzz_failed = false;
        for (const auto& t : trees) {
            if (build_sanitizer_tree(src, build, jobs, t) != 0) {
                std::fflush(stderr);
                _exit(10 + static_cast<int>(&t - trees.data()));
            }
            clock.lap(t.suffix + " build");
            if (t.fuzz) {
                const std::string san = build + "-" + t.suffix;
                const int r = run_step({"ctest", "--test-dir", san, "--output-on-failure", "-j", jobs, "-L", "^fuzz$"});
                clock.lap(t.suffix + " fuzz targets");
                // Kept apart: the unit tests' ctest in this tree writes LastTest.log again.
                std::rename((san + "/Testing/Temporary/LastTest.log").c_str(), fuzz_log(san).c_str());
                if (r != 0) {
                    fmt::print(stderr, "odl: test: {} fuzz targets failed (exit {})\n", t.suffix, r);
                    fuzz_failed = true;
                }
            }
            std::fflush(stderr);
        }
        _exit(fuzz_failed ? kFuzzFailed : 0);
    }

    /// Where the fuzz targets' ctest log of tree @san is kept.
    static std::string fuzz_log(const std::string& san) { return san + "/Testing/Temporary/LastTest-fuzz.log"; }
    background_builds(const background_builds&) = delete;
    background_builds& operator=(const background_builds&) = delete;
    ~background_builds() {
        if (m_pid > 0) wait_for();
    }

    /// Waits for the builds; on a failure the end of their log goes to
    /// stderr. Returns the index of the first tree that failed, or -1.
    /// fuzz_failed() then says whether a fuzz target failed.
    int wait_for() {
        int status = 0;
        if (m_pid < 0) {
            std::perror("odl: test: fork for the sanitizer builds");
            return 0;
        }
        while (waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
        }
        m_pid = 0;
        std::ifstream log(m_log);
        std::vector<std::string> lines;
        for (std::string l; std::getline(log, l);) {
            // Each tree's time, from its start beside ctest to its end.
            if (l.rfind("odl: test: ", 0) == 0 && l.find(" took ") != std::string::npos)
                fmt::print(stderr, "{} (beside ctest at idle priority)\n", l);
            lines.push_back(l);
        }
        m_fuzz_failed = WIFEXITED(status) && WEXITSTATUS(status) == kFuzzFailed;
        if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || m_fuzz_failed)) return -1;
        fmt::print(stderr, "odl: test: the sanitizer builds failed; the end of {}:\n", m_log);
        for (std::size_t i = lines.size() > 40 ? lines.size() - 40 : 0; i < lines.size(); ++i)
            fmt::print(stderr, "  | {}\n", lines[i]);
        return WIFEXITED(status) && WEXITSTATUS(status) >= 10 ? WEXITSTATUS(status) - 10 : 0;
    }

    bool fuzz_failed() const { return m_fuzz_failed; }

private:
    static constexpr int kFuzzFailed = 30;
    std::string m_log;
    pid_t m_pid = -1;
    bool m_fuzz_failed = false;
};

/// The sanitizer trees `odl test` runs: AddressSanitizer + UBSan over the unit
/// tests (and the fuzz targets), then ThreadSanitizer over the unit tests
/// (libodl, the plugin's threads, hil).
std::vector<sanitizer_tree> sanitizer_trees(bool fuzz, bool tsan) {
    // The fuzz targets run in the background child (background_builds).
    std::vector<sanitizer_tree> trees = {{"asan", "address,undefined", fuzz, "^unit$"}};
    if (tsan) trees.push_back({"tsan", "thread", false, "^unit$"});
    return trees;
}

/// Runs ctest in each built sanitizer tree. Trees that failed to build or
/// whose ctest failed go to @failed (a tree that did not build is not run).
int run_sanitizer_tests(const std::string& build, const std::string& jobs, const std::vector<sanitizer_tree>& trees,
                        int failed_build, phase_clock& clock, std::vector<std::string>* failed) {
    int rc = 0;
    for (std::size_t i = 0; i < trees.size(); ++i) {
        const auto& t = trees[i];
        if (failed_build >= 0 && i >= static_cast<std::size_t>(failed_build)) {
            fmt::print(stderr, "odl: test: the {} tree {}: its tests are not run\n", t.suffix,
                       i == static_cast<std::size_t>(failed_build) ? "failed to build" : "was not built");
            rc = rc != 0 ? rc : 1;
            continue;
        }
        // A ThreadSanitizer report fails the test at once, with both stacks of a race.
        if (t.sanitizers == "thread") setenv("TSAN_OPTIONS", "halt_on_error=1 second_deadlock_stack=1", 1);
        const std::string san = build + "-" + t.suffix;
        // One test per core: with one more (the fuzz targets at nice 10
        // filling what the unit tests leave) the pass took 85-87 s instead
        // of 119 s here, but tray_test failed in CI beside a fuzz target and
        // daemon_bus_test's Chromium (docs/ci.md, thirtieth session).
        const int r = run_step({"ctest", "--test-dir", san, "--output-on-failure", "-j", jobs, "-L", t.labels});
        if (t.sanitizers == "thread") unsetenv("TSAN_OPTIONS");
        clock.lap(t.suffix + " tests");
        if (r != 0) {
            fmt::print(stderr, "odl: test: {} ctest failed (exit {})\n", t.suffix, r);
            failed->push_back(san);
            rc = rc != 0 ? rc : r;
        }
    }
    return rc;
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
    // The sanitizer pass covers the unit and fuzz labels; it is skipped when
    // a label other than those was asked for. It runs after a failed ctest too: a
    // broken VM stack must not hide what the sanitizers find.
    const bool sanitize = opt.sanitize && (opt.label.empty() || opt.label == "unit" || opt.label == "fuzz");
    const auto trees = sanitizer_trees(opt.fuzz && opt.label != "unit", opt.tsan && opt.label != "fuzz");
    phase_clock clock;
    std::optional<background_builds> builds;
    if (sanitize) builds.emplace(src, build, jobs, trees);
    const int rc = run_step(ctest);
    clock.lap("ctest");
    if (rc != 0) fmt::print(stderr, "odl: test: ctest failed (exit {})\n", rc);
    int san_rc = 0;
    std::vector<std::string> failed;
    if (rc != 0) failed.push_back(build);
    bool fuzz_failed = false;
    if (builds) {
        const int failed_build = builds->wait_for();
        clock.lap("rest of the sanitizer builds");
        for (const auto& t : trees)
            if (t.fuzz && failed_build < 0) print_fuzz_units(background_builds::fuzz_log(build + "-" + t.suffix));
        fuzz_failed = builds->fuzz_failed();
        san_rc = run_sanitizer_tests(build, jobs, trees, failed_build, clock, &failed);
        if (fuzz_failed && san_rc == 0) san_rc = 8;
    }
    // Last in the log, whichever pass failed: a long log is often shown cut.
    for (const auto& dir : failed) print_failure_tails(dir);
    if (fuzz_failed)
        for (const auto& t : trees)
            if (t.fuzz) print_failure_tails(build + "-" + t.suffix, "LastTest-fuzz.log");
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
