// SPDX-License-Identifier: MIT
#include "test_failures.h"

#include <deque>

namespace odl::cli {

std::vector<failed_test> failed_tests(std::istream& log, std::size_t lines) {
    std::vector<failed_test> out;
    std::string line, name;
    std::deque<std::string> tail;
    std::vector<std::string> key;
    int explain = 0;
    bool in_test = false, in_output = false;
    const auto close = [&](bool passed) {
        if (in_test && !passed) out.push_back({name, key, {tail.begin(), tail.end()}});
        in_test = in_output = false;
        tail.clear();
        key.clear();
        explain = 0;
    };
    while (std::getline(log, line)) {
        // "39/55 Test: vm_hostile_6.12" opens a test's block.
        const auto t = line.find(" Test: ");
        if (!in_output && t != std::string::npos && line.find('/') < t) {
            close(false);
            in_test = true;
            name = line.substr(t + 7);
            continue;
        }
        if (!in_test) continue;
        if (!in_output && line == "Output:") {
            in_output = true;
            std::getline(log, line);  // the dashes under it
            continue;
        }
        if (in_output) {
            if (line == "<end of output>") {
                in_output = false;
                continue;
            }
            tail.push_back(line);
            if (tail.size() > lines) tail.pop_front();
            // gtest puts what failed on the two lines after "Failure".
            const bool failure = line.find("Failure") != std::string::npos;
            const bool says = failure || line.find("FAIL") != std::string::npos ||
                              line.find("error:") != std::string::npos;
            if ((says || explain > 0) && key.size() < lines) key.push_back(line);
            explain = failure ? 2 : explain > 0 ? explain - 1 : 0;
            continue;
        }
        // The verdict ("Test Passed.", or "Test Failed." and the like) comes
        // before the block's end-time line.
        if (line == "Test Passed.") close(true);
        else if (line.find("\" end time:") != std::string::npos) close(false);
    }
    close(false);
    return out;
}

}  // namespace odl::cli
