// SPDX-License-Identifier: MIT
// `odl test` repeats the end of each failed test's output from ctest's log.
#include <sstream>

#include <gtest/gtest.h>

#include "test_failures.h"

namespace {

// The shape of ctest 3.25's LastTest.log: one block per test.
std::string block(const std::string& n, const std::string& out, const std::string& verdict) {
    return "1/3 Testing: " + n + "\n1/3 Test: " + n + "\nCommand: \"/x/" + n +
           "\"\nDirectory: /x\n\"" + n + "\" start time: Nov 26 01:41 UTC\nOutput:\n"
           "----------------------------------------------------------\n" + out +
           "<end of output>\nTest time =   1.00 sec\n"
           "----------------------------------------------------------\n" + verdict + "\"" + n +
           "\" end time: Nov 26 01:42 UTC\n\"" + n + "\" time elapsed: 00:00:01\n"
           "----------------------------------------------------------\n\n";
}

TEST(TestFailures, OnlyFailedTestsWithTheEndOfTheirOutput) {
    std::string out;
    for (int i = 1; i <= 20; ++i) out += "line " + std::to_string(i) + "\n";
    out += "FAIL: split:len: B's rx_bad_split rose by 1, want 2\n";
    std::istringstream log("Start testing: Nov 26 01:41 UTC\n"
                           "----------------------------------------------------------\n" +
                           block("good", "ok\nTest: looks like a header\n", "Test Passed.\n") +
                           block("bad", out, "Test Failed.\n") +
                           block("slow", "waiting\n", "Test time out\n") +
                           "End testing: Nov 26 01:44 UTC\n");
    const auto f = odl::cli::failed_tests(log, 3);
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].name, "bad");
    ASSERT_EQ(f[0].tail.size(), 3u);
    EXPECT_EQ(f[0].tail[0], "line 19");
    EXPECT_EQ(f[0].tail[2], "FAIL: split:len: B's rx_bad_split rose by 1, want 2");
    EXPECT_EQ(f[0].key, std::vector<std::string>{"FAIL: split:len: B's rx_bad_split rose by 1, want 2"});
    EXPECT_EQ(f[1].name, "slow");
    EXPECT_EQ(f[1].tail, std::vector<std::string>{"waiting"});
}

TEST(TestFailures, FailureLinesFromTheMiddleOfTheOutputAreKept) {
    std::string out = "[ RUN      ] Process.Deadline\n/x/process_test.cpp:57: Failure\n"
                      "Expected: (left.status) != (0), actual: 0 vs 0\n";
    for (int i = 0; i < 30; ++i) out += "[       OK ] Other." + std::to_string(i) + "\n";
    std::istringstream log(block("gt", out, "Test Failed.\n"));
    const auto f = odl::cli::failed_tests(log, 4);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].key, (std::vector<std::string>{"/x/process_test.cpp:57: Failure",
                                                   "Expected: (left.status) != (0), actual: 0 vs 0",
                                                   "[       OK ] Other.0"}));
    EXPECT_EQ(f[0].tail.back(), "[       OK ] Other.29");
}

TEST(TestFailures, ATestCutOffByTheEndOfTheLogCountsAsFailed) {
    std::istringstream log("2/2 Test: crashed\nOutput:\n-----\nstarting\nhalf a li");
    const auto f = odl::cli::failed_tests(log, 5);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].name, "crashed");
    EXPECT_EQ(f[0].tail, (std::vector<std::string>{"starting", "half a li"}));
}

TEST(TestFailures, AnEmptyOrAllGreenLogHasNone) {
    std::istringstream empty("");
    EXPECT_TRUE(odl::cli::failed_tests(empty, 5).empty());
    std::istringstream green(block("a", "x\n", "Test Passed.\n"));
    EXPECT_TRUE(odl::cli::failed_tests(green, 5).empty());
}

}  // namespace
