// SPDX-License-Identifier: MIT
// Tests for `odl perf` (userlib/cli/cmd_perf.cpp, perf_runner.cpp) run as a
// user would: the built binary, its exit status, stdout and stderr.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct result {
    int status = -1;
    std::string out, err;
};

std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

/// Runs the odl binary with @args under `timeout`, capturing both streams;
/// @env: more VAR=value words for its environment.
result run_odl(const std::string& args, int timeout_s = 60, const std::string& env = "") {
    const std::string base = "/tmp/odl-perf-test-" + std::to_string(getpid());
    const std::string cmd = env + " ODL_LOOPBACK_NAMESPACE=clitest-" + std::to_string(getpid()) + " timeout " +
                            std::to_string(timeout_s) + " " ODL_BIN " " + args + " >" + base + ".out 2>" + base + ".err";
    result r;
    const int st = std::system(cmd.c_str());
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    r.out = slurp(base + ".out");
    r.err = slurp(base + ".err");
    std::remove((base + ".out").c_str());
    std::remove((base + ".err").c_str());
    return r;
}

TEST(PerfCli, LatencyPrintsPercentilesAsJson) {
    const result r = run_odl("perf latency -n 300 --warmup 50 -s 64,5000 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["test"], "latency");
    EXPECT_TRUE(j["verified"].get<bool>());
    ASSERT_EQ(j["results"].size(), 2u);
    for (const auto& row : j["results"]) {
        EXPECT_EQ(row["samples"].get<uint64_t>(), 300u);
        EXPECT_GT(row["p50_us"].get<double>(), 0.0);
        EXPECT_LE(row["p50_us"].get<double>(), row["p99_us"].get<double>());
        EXPECT_LE(row["p99_us"].get<double>(), row["max_us"].get<double>());
    }
    EXPECT_NE(r.err.find("[2/2]"), std::string::npos) << "progress lines missing: " << r.err;
}

TEST(PerfCli, LatencyTableHasAllPercentileColumns) {
    const result r = run_odl("perf latency -n 100 --warmup 10 -s 64 -q");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* col : {"p50", "p90", "p99", "p99.9", "max"}) EXPECT_NE(r.out.find(col), std::string::npos) << col;
    EXPECT_TRUE(r.err.empty()) << "--quiet still printed: " << r.err;
}

// libodl prints nothing itself; the CLI shows its warnings on stderr, at the
// level ODL_LOG_LEVEL names.
TEST(PerfCli, LibraryWarningsReachStderr) {
    const std::string warned = "odl: warning: ODL_RX_THREAD='bogus' is not on, off or auto; using auto";
    const result r = run_odl("perf latency -n 20 --warmup 2 -s 64 -q", 60, "ODL_RX_THREAD=bogus");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find(warned), std::string::npos) << r.err;
    const result quiet = run_odl("perf latency -n 20 --warmup 2 -s 64 -q", 60, "ODL_RX_THREAD=bogus ODL_LOG_LEVEL=error");
    ASSERT_EQ(quiet.status, 0) << quiet.err;
    EXPECT_TRUE(quiet.err.empty()) << quiet.err;
    const result bad = run_odl("perf latency -n 20 --warmup 2 -s 64 -q", 60, "ODL_LOG_LEVEL=loud");
    ASSERT_EQ(bad.status, 0) << bad.err;
    EXPECT_NE(bad.err.find("ODL_LOG_LEVEL='loud' is not error, warn, info or debug; using warn"), std::string::npos)
        << bad.err;
}

TEST(PerfCli, EveryTestRunsAndVerifies) {
    const std::vector<std::string> runs = {
        "perf bandwidth -s 0,1,4064,4065,1M --bytes 4M --json",
        "perf bandwidth --bidir -s 64K --bytes 4M --json",
        "perf jitter -n 200 --warmup 10 --interval-us 20 --json",
        "perf latency-load -n 200 --warmup 10 --bytes 16M --json",
        "perf mimo --streams 3 -s 256K --bytes 6M --json",
        "perf bandwidth -s 100000 --bytes 4M --checksum --json",
    };
    for (const auto& args : runs) {
        const result r = run_odl(args);
        ASSERT_EQ(r.status, 0) << args << "\n" << r.err;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_FALSE(j["results"].empty()) << args;
    }
}

TEST(PerfCli, BandwidthCountsEveryMessage) {
    const result r = run_odl("perf bandwidth -s 1000 --bytes 1000000 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["results"][0]["messages"].get<uint64_t>(), 1000u);
    EXPECT_EQ(j["results"][0]["bytes"].get<uint64_t>(), 1000000u);
}

// --no-verify (for comparisons with tools that check nothing, like iperf3)
// still counts every message both ways and says so in the JSON and the table.
TEST(PerfCli, NoVerifyIsReportedAndStillCountsEveryMessage) {
    const result r = run_odl("perf bandwidth --bidir --no-verify -s 1000 --bytes 1000000 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_FALSE(j["verified"].get<bool>());
    EXPECT_EQ(j["results"][0]["messages"].get<uint64_t>(), 2000u);
    const result v = run_odl("perf bandwidth -s 1000 --bytes 1000000 --json");
    ASSERT_EQ(v.status, 0) << v.err;
    EXPECT_TRUE(nlohmann::json::parse(v.out)["verified"].get<bool>());
    const result t = run_odl("perf bandwidth --no-verify -s 4K --bytes 1M");
    ASSERT_EQ(t.status, 0) << t.err;
    EXPECT_NE(t.out.find("not verified"), std::string::npos) << t.out;
}

TEST(PerfCli, BadInputGivesOneLineAndNonZeroExit) {
    struct c {
        std::string args, expect;
    };
    for (const auto& t : std::vector<c>{{"perf latency --backend foo", "have: loopback"},
                                        {"perf nosuchtest", "have: bandwidth, latency, jitter, latency-load, mimo"},
                                        {"perf latency -s 12Q", "bad size '12Q'"},
                                        // Were read as 2^64 - 5 and (shifted past 64 bits) 0 bytes.
                                        {"perf latency -s -5", "bad size '-5'"},
                                        {"perf latency -s 64,17179869184G", "bad size '17179869184G'"},
                                        {"perf bandwidth --bytes 1.5", "bad size '1.5'"},
                                        {"perf latency --client 99", "no loopback device 99 (have: 0-63)"},
                                        // Were device 5, 2^32 - 1 and 1215752191 (99999999999 cut to 32 bits).
                                        {"perf latency --client 5abc", "not '5abc'"},
                                        {"perf latency --client -1", "not '-1'"},
                                        {"perf latency --client 99999999999", "not '99999999999'"},
                                        {"perf latency --backend kernel", "needs --server"},
                                        // Counts that measure nothing: refused, not an empty table.
                                        {"perf latency -n 0", "--iterations must be 1-"},
                                        {"perf bandwidth --depth 0", "--depth must be 1-4096"},
                                        {"perf bandwidth --depth 4097", "--depth must be 1-4096"},
                                        {"perf bandwidth --max-msgs 0", "--max-msgs must be at least 1"},
                                        {"perf bandwidth --bytes 0", "--bytes must be at least 1"}}) {
        const result r = run_odl(t.args, 20);
        EXPECT_NE(r.status, 0) << t.args;
        EXPECT_NE(r.err.find(t.expect), std::string::npos) << t.args << ": " << r.err;
        EXPECT_NE(r.err.find("odl: perf: "), std::string::npos) << t.args << ": " << r.err;
    }
}

TEST(PerfCli, AServerItStartedDoesNotOutliveAFailedClient) {
    // No model server at the socket: the client cannot open its end. The
    // server it started (which fails the same way a moment later) must be
    // gone, its words written, before the command returns.
    const std::string sock = "/tmp/odl-perf-test-nosrv-" + std::to_string(getpid()) + ".sock";
    const result r = run_odl("perf latency --backend sim -n 10", 20, "ODL_SIM_SOCKET=" + sock);
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("no model server at " + sock), std::string::npos) << r.err;
    const auto at = r.err.find("started server (pid ");
    ASSERT_NE(at, std::string::npos) << r.err;
    const pid_t pid = pid_t(std::stol(r.err.substr(at + 20)));
    ASSERT_GT(pid, 0);
    EXPECT_NE(kill(pid, 0), 0) << "the server it started (pid " << pid << ") is still running";
}

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

TEST(PerfCli, TimeoutsAndIntervalsAreFiniteNumbersInRange) {
    // A nan or negative connect timeout used to wait forever for a peer that
    // never came, 1e30 to give up at once saying "within 0.0 s".
    for (const char* bad : {"--connect-timeout=nan", "--connect-timeout=-1", "--connect-timeout=1e30",
                            "--connect-timeout=inf", "--connect-timeout=5s", "--interval-us=nan",
                            "--interval-us=-5",
                            // 0 could never connect; 18446744073710 ms wrapped to 0.45 ms as nanoseconds.
                            "--connect-timeout=0", "--stall-timeout-ms=0", "--stall-timeout-ms=18446744073710"}) {
        const double t0 = now_s();
        const result r = run_odl(std::string("perf jitter --client 0 ") + bad, 20);
        EXPECT_NE(r.status, 0) << bad;
        EXPECT_NE(r.err.find("is not a number from "), std::string::npos) << bad << ": " << r.err;
        EXPECT_LT(now_s() - t0, 5.0) << bad << " was not refused up front";
    }
}

/// Whole numbers are decimal: CLI11 read "010" as 8, "0x10" as 16 and a
/// sign into an unsigned count as 2^64 - 1.
TEST(PerfCli, WholeNumbersAreDecimalDigits) {
    for (const char* bad : {"perf latency -n 0x10", "perf latency -n -5", "perf latency --warmup -1",
                            "perf bandwidth --max-msgs -1", "perf latency --warmup 1e3",
                            "perf mimo --streams ' 4'"}) {
        const result r = run_odl(bad, 20);
        EXPECT_NE(r.status, 0) << bad;
        EXPECT_NE(r.err.find("is not a whole number in decimal digits"), std::string::npos) << bad << ": " << r.err;
    }
    const result r = run_odl("perf latency --backend loopback -s 64 -n 010 --warmup 0 --json", 20);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("\"samples\": 10,"), std::string::npos) << r.out;
}

TEST(PerfCli, ClientReportsAKilledServerWithinOneSecond) {
    const std::string ns = "ODL_LOOPBACK_NAMESPACE=clitest-kill-" + std::to_string(getpid());
    const pid_t server = fork();
    ASSERT_GE(server, 0);
    if (server == 0) {
        putenv(const_cast<char*>(ns.c_str()));
        execl(ODL_BIN, "odl", "perf", "bandwidth", "--server", "--device", "9", "-q", nullptr);
        _exit(127);
    }
    const std::string err = "/tmp/odl-kill-test-" + std::to_string(getpid()) + ".err";
    const std::string cmd = ns + " timeout 60 " ODL_BIN " perf bandwidth --client 9 -s 1M --bytes 100G --max-msgs 100000000 -q 2>" + err;
    FILE* client = popen(cmd.c_str(), "r");
    ASSERT_NE(client, nullptr);
    usleep(700000);  // let the run get going
    kill(server, SIGKILL);
    const double t0 = now_s();
    const int st = pclose(client);
    const double dt = now_s() - t0;
    waitpid(server, nullptr, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 124) << "status " << st;
    EXPECT_LT(dt, 1.0) << "client took " << dt << " s to notice";
    EXPECT_NE(slurp(err).find("peer"), std::string::npos) << slurp(err);
    std::remove(err.c_str());
}

TEST(PerfCli, ServerReportsAKilledClientAndExits) {
    const std::string ns = "ODL_LOOPBACK_NAMESPACE=clitest-kill2-" + std::to_string(getpid());
    const std::string err = "/tmp/odl-kill2-test-" + std::to_string(getpid()) + ".err";
    const std::string cmd = ns + " timeout 60 " ODL_BIN " perf bandwidth --server --device 10 -q 2>" + err;
    FILE* server = popen(cmd.c_str(), "r");
    ASSERT_NE(server, nullptr);
    const pid_t client = fork();
    ASSERT_GE(client, 0);
    if (client == 0) {
        putenv(const_cast<char*>(ns.c_str()));
        execl(ODL_BIN, "odl", "perf", "bandwidth", "--client", "10", "-s", "1M", "--bytes", "100G", "--max-msgs",
              "100000000", "-q", nullptr);
        _exit(127);
    }
    usleep(700000);
    kill(client, SIGKILL);
    const double t0 = now_s();
    const int st = pclose(server);
    const double dt = now_s() - t0;
    waitpid(client, nullptr, 0);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 124) << "status " << st;
    EXPECT_LT(dt, 1.0) << "server took " << dt << " s to notice";
    std::remove(err.c_str());
}

}  // namespace
