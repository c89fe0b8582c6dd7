// SPDX-License-Identifier: MIT
// Two processes over the shared-memory loopback backend: data integrity across
// processes, and a killed peer noticed within one second.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "odl/odl.h"
#include "odl_test.h"
#include "two_process.h"

namespace {

double now_s() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

using TwoProcess = odl::test::two_process;

/// Child: echo @count messages of up to 1 MiB back to the parent, then exit.
[[noreturn]] void echo_child(uint32_t index, int count) {
    odl_open_params p;
    odl_open_params_init(&p);
    p.index = index;
    odl_dev* d = nullptr;
    if (odl_open(&p, &d) != ODL_OK) _exit(2);
    std::vector<char> buf(1 << 20);
    for (int i = 0; i < count; ++i) {
        odl_completion c;
        size_t n = 0;
        if (odl_post_recv(d, 0, ODL_TAG_ANY, buf.data(), buf.size(), nullptr, 1) != ODL_OK) _exit(3);
        if (odl_wait(d, &c, 1, &n, 5'000'000'000ull) != ODL_OK || c.status != ODL_OK) _exit(4);
        if (odl_post_send(d, 0, c.tag, buf.data(), c.len, nullptr, 2) != ODL_OK) _exit(5);
        if (odl_wait(d, &c, 1, &n, 5'000'000'000ull) != ODL_OK || c.status != ODL_OK) _exit(6);
    }
    odl_close(d);
    _exit(0);
}

TEST_F(TwoProcess, EchoesMessagesIntact) {
    const std::vector<size_t> sizes = {0, 1, 4063, 4064, 4065, 4095, 4096, 4097, 100000, 1 << 20};
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) echo_child(5, int(sizes.size()));
    odl_dev* d = open_dev(5);
    ASSERT_NE(d, nullptr) << odl_last_error();
    for (size_t i = 0; i < sizes.size(); ++i) {
        std::vector<char> tx(sizes[i]), rx(sizes[i] + 1);
        for (size_t k = 0; k < tx.size(); ++k) tx[k] = char(k * 7 + i);
        ASSERT_ODL_OK(odl_post_recv(d, 0, uint32_t(i), rx.data(), rx.size(), nullptr, 1));
        ASSERT_ODL_OK(odl_post_send(d, 0, uint32_t(i), tx.data(), tx.size(), nullptr, 2));
        int got = 0;
        while (got < 2) {
            odl_completion c[2];
            size_t n = 0;
            ASSERT_ODL_OK(odl_wait(d, c, 2, &n, 5'000'000'000ull));
            for (size_t k = 0; k < n; ++k) {
                ASSERT_EQ(c[k].status, ODL_OK);
                if (c[k].op == ODL_OP_RECV) {
                    EXPECT_EQ(c[k].len, sizes[i]);
                }
            }
            got += int(n);
        }
        EXPECT_EQ(std::vector<char>(rx.begin(), rx.begin() + long(sizes[i])), tx) << "size " << sizes[i];
    }
    odl_close(d);
    int status = 0;
    waitpid(child, &status, 0);
    child = -1;
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child status " << status;
}

TEST_F(TwoProcess, KilledPeerIsReportedWithinOneSecond) {
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) echo_child(6, 1000000);
    odl_dev* d = open_dev(6);
    ASSERT_NE(d, nullptr) << odl_last_error();
    char buf[64];
    ASSERT_ODL_OK(odl_post_recv(d, 0, 99, buf, sizeof(buf), nullptr, 7));
    kill(child, SIGKILL);
    const double t0 = now_s();
    odl_completion c;
    size_t n = 0;
    ASSERT_ODL_OK(odl_wait(d, &c, 1, &n, 5'000'000'000ull));
    const double dt = now_s() - t0;
    EXPECT_EQ(c.ctx, 7u);
    EXPECT_EQ(c.status, ODL_ERR_PEER_LOST);
    EXPECT_LT(dt, 1.0) << "peer loss took " << dt << " s to notice";
    EXPECT_EQ(odl_post_send(d, 0, 1, buf, 8, nullptr, 0), ODL_ERR_PEER_LOST);
    EXPECT_NE(std::string(odl_last_error()).find("peer process exited"), std::string::npos) << odl_last_error();
    odl_close(d);
}

TEST_F(TwoProcess, ThirdEndpointWaitsForItsOwnPeer) {
    // A loopback index joins exactly two endpoints: once a pair formed, a
    // third opener does not join it (it waits, and times out here).
    child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) echo_child(7, 1);
    odl_dev* d = open_dev(7);
    ASSERT_NE(d, nullptr);
    odl_open_params p;
    odl_open_params_init(&p);
    p.index = 7;
    p.connect_timeout_ns = 100'000'000;
    odl_dev* third = nullptr;
    EXPECT_EQ(odl_open(&p, &third), ODL_ERR_TIMEOUT);
    odl_close(d);
}

}  // namespace
