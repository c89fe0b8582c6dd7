// SPDX-License-Identifier: MIT
// Fixture for tests that fork a peer process over the loopback backend: a
// private rendezvous namespace (parallel test binaries never meet), and the
// child killed and reaped whatever the test did.
#pragma once

#include <gtest/gtest.h>

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "odl/odl.h"

namespace odl::test {

class two_process : public ::testing::Test {
protected:
    void SetUp() override { setenv("ODL_LOOPBACK_NAMESPACE", ("two-proc-" + std::to_string(getpid())).c_str(), 1); }
    void TearDown() override {
        if (child > 0) {
            kill(child, SIGKILL);
            waitpid(child, nullptr, 0);
        }
    }
    /// Loopback device @index with a 5 s connect timeout; nullptr on error.
    /// @max_msg_bytes 0 keeps the library default.
    static odl_dev* open_dev(uint32_t index, uint64_t max_msg_bytes = 0) {
        odl_open_params p;
        odl_open_params_init(&p);
        p.index = index;
        if (max_msg_bytes) p.max_msg_bytes = max_msg_bytes;
        p.connect_timeout_ns = 5'000'000'000ull;
        odl_dev* d = nullptr;
        return odl_open(&p, &d) == ODL_OK ? d : nullptr;
    }
    pid_t child = -1;
};

}  // namespace odl::test
