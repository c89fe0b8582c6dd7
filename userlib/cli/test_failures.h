// SPDX-License-Identifier: MIT
// The end of each failed test's output, read back from ctest's log, so that
// the last lines of `./odl test` say why a test failed: a long suite's own
// log is often cut in the middle, where the failing test printed its reason.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace odl::cli {

struct failed_test {
    std::string name;
    std::vector<std::string> key;   ///< the first lines that say FAIL, Failure or error:
    std::vector<std::string> tail;  ///< the last lines of its output
};

/// Failed tests of a ctest LastTest.log, each with up to @lines of the end
/// of its output and up to @lines lines that name a failure wherever they
/// are (gtest prints its failed assertion mid-output). A test without a
/// "Test Passed." line counts as failed (a timeout or a crash ends its
/// block differently).
std::vector<failed_test> failed_tests(std::istream& log, std::size_t lines);

}  // namespace odl::cli
