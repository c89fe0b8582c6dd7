// SPDX-License-Identifier: MIT
// run_process() and background_process: output, input, exit statuses, the
// deadline (a process that would run for minutes is ended), and nothing
// left running afterwards.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "odl/hil/process.h"
#include "odl/hil/ssh.h"

namespace {

using odl::hil::run_process;

TEST(Process, OutputErrorAndStatus) {
    const auto r = run_process({"sh", "-c", "echo out; echo err >&2; exit 3"}, 10);
    EXPECT_EQ(r.status, 3);
    EXPECT_FALSE(r.timed_out);
    EXPECT_EQ(r.out, "out\n");
    EXPECT_EQ(r.err, "err\n");
}

TEST(Process, InputReachesTheProgram) {
    std::string big(1 << 20, 'x');  // more than a pipe holds
    const auto r = run_process({"wc", "-c"}, 10, big);
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(std::stoul(r.out), big.size());
}

TEST(Process, MissingProgramIs127) {
    const auto r = run_process({"/nonexistent/odl-no-such-program"}, 10);
    EXPECT_EQ(r.status, 127);
    EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
}

TEST(Process, DeadlineEndsTheWholeGroup) {
    // The child's own child must go too: the group gets the signal.
    // A sleep no other program runs (pgrep looks machine-wide: a plain
    // `sleep 300` elsewhere once failed this test).
    const std::string sleep = "sleep 300." + std::to_string(getpid());
    const auto t0 = std::chrono::steady_clock::now();
    const auto r = run_process({"sh", "-c", sleep + " & echo started; wait"}, 1);
    const auto took = std::chrono::steady_clock::now() - t0;
    EXPECT_TRUE(r.timed_out);
    EXPECT_EQ(r.status, 124);
    EXPECT_EQ(r.out, "started\n");
    EXPECT_LT(took, std::chrono::seconds(60));  // bounded: not the sleep's 300 s
    // The signal is delivered at once, the exit happens when the sleep is
    // next scheduled: on a loaded machine, a moment later (bounded).
    const std::string pattern = "^" + sleep + "$";
    auto left = run_process({"pgrep", "-f", pattern}, 10);
    for (int i = 0; i < 50 && left.status == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        left = run_process({"pgrep", "-f", pattern}, 10);
    }
    EXPECT_NE(left.status, 0) << "left running: " << left.out;
}

TEST(Process, SignalledStatus) {
    const auto r = run_process({"sh", "-c", "kill -9 $$"}, 10);
    EXPECT_EQ(r.status, 128 + SIGKILL);
}

TEST(BackgroundProcess, StopEndsIt) {
    odl::hil::background_process p({"sleep", "300"}, "/dev/null");
    EXPECT_TRUE(p.running());
    EXPECT_EQ(p.stop(), 128 + SIGTERM);
    EXPECT_FALSE(p.running());
}

TEST(BackgroundProcess, ExitStatusKept) {
    odl::hil::background_process p({"sh", "-c", "exit 7"}, "/dev/null");
    int status = -1;
    for (int i = 0; i < 100 && p.running(&status); ++i) ::usleep(20000);
    EXPECT_EQ(status, 7);
}

TEST(Ssh, ShellQuoteSurvivesTheShell) {
    const std::string nasty = "a b'c\"d$(e)`f`;g\\h";
    const auto r = run_process({"sh", "-c", "printf %s " + odl::hil::shell_quote(nasty)}, 10);
    EXPECT_EQ(r.out, nasty);
}

TEST(Ssh, FailureReasonsAreNamed) {
    odl::hil::process_result r;
    r.status = 255;
    r.err = "ssh: connect to host 127.0.0.1 port 1: Connection refused\n";
    EXPECT_NE(odl::hil::ssh_failure_reason(r).find("connection refused"), std::string::npos);
    r.err = "Host key verification failed.\n";
    EXPECT_NE(odl::hil::ssh_failure_reason(r).find("not in the inventory's known_hosts"), std::string::npos);
    r.err = "root@h: Permission denied (publickey).\n";
    EXPECT_NE(odl::hil::ssh_failure_reason(r).find("authentication refused"), std::string::npos);
    r.status = 1;  // the remote command's own failure is not an SSH failure
    EXPECT_EQ(odl::hil::ssh_failure_reason(r), "");
}

}  // namespace
