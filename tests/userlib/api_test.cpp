// SPDX-License-Identifier: MIT
// Tests for the C API (userlib/src/c_api.cpp, device.cpp): misuse gives
// error codes and a reason, never a crash; in-process loopback pairs work.
#include <cstddef>
#include <cstring>
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "odl/odl.h"
#include "odl_test.h"

namespace {

class LoopbackPair : public ::testing::Test {
protected:
    void SetUp() override {
        odl_open_params_init(&p);
        p.num_streams = 4;
        ASSERT_ODL_OK(odl_open_pair(&p, &a, &b));
    }
    void TearDown() override {
        odl_close(a);
        odl_close(b);
    }
    /// Polls both ends until @on has @want completions, for at most
    /// @limit: bounded in time, not in polls (with the copy threads on a
    /// loaded machine, 100000 polls ran out before a 4 MiB message was
    /// through).
    std::vector<odl_completion> drive(odl_dev* on, size_t want,
                                      std::chrono::milliseconds limit = std::chrono::seconds(30)) {
        std::vector<odl_completion> out;
        const auto until = std::chrono::steady_clock::now() + limit;
        while (out.size() < want && std::chrono::steady_clock::now() < until) {
            odl_completion c[8];
            size_t n = 0;
            odl_poll(a == on ? b : a, c, 0, &n);
            EXPECT_ODL_OK(odl_poll(on, c, 8, &n));
            out.insert(out.end(), c, c + n);
        }
        return out;
    }
    odl_open_params p{};
    odl_dev* a = nullptr;
    odl_dev* b = nullptr;
};

TEST(Api, UnknownBackendListsWhatExists) {
    odl_open_params p;
    odl_open_params_init(&p);
    p.backend = "foo";
    odl_dev* d = nullptr;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_NO_BACKEND);
    EXPECT_EQ(d, nullptr);
    EXPECT_NE(std::string(odl_last_error()).find("have: loopback"), std::string::npos) << odl_last_error();
    uint32_t n = 0;
    EXPECT_EQ(odl_device_count("foo", &n), ODL_ERR_NO_BACKEND);
}

TEST(Api, BadDeviceIndexListsWhatExists) {
    odl_open_params p;
    odl_open_params_init(&p);
    p.index = 99;
    odl_dev* d = nullptr;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_NO_DEVICE);
    EXPECT_NE(std::string(odl_last_error()).find("have: 0-63"), std::string::npos) << odl_last_error();
}

TEST(Api, KernelBackendWithoutModuleSaysSo) {
    odl_open_params p;
    odl_open_params_init(&p);
    p.backend = "kernel";
    p.index = 12345;
    odl_dev* d = nullptr;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_NO_DEVICE);
    EXPECT_NE(std::string(odl_last_error()).find("have:"), std::string::npos) << odl_last_error();
}

TEST(Api, RejectsBadParameters) {
    odl_open_params p;
    odl_dev* d = nullptr;
    EXPECT_EQ(odl_open(nullptr, &d), ODL_ERR_INVAL);
    odl_open_params_init(&p);
    EXPECT_EQ(odl_open(&p, nullptr), ODL_ERR_INVAL);
    p.struct_size = 4;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_INVAL);
    odl_open_params_init(&p);
    p.num_streams = 0;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_INVAL);
    p.num_streams = 65;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_INVAL);
    odl_open_params_init(&p);
    p.window_frames = 0;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_INVAL);
    odl_open_params_init(&p);
    p.flags = 0x80;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_INVAL);
    odl_open_params_init(&p);
    p.max_msg_bytes = 1ull << 33;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_INVAL);
    EXPECT_NE(std::string(odl_last_error()).find("max_msg_bytes"), std::string::npos);
}

TEST(Api, TimesOutWithoutAPeer) {
    setenv("ODL_LOOPBACK_NAMESPACE", ("api-timeout-" + std::to_string(getpid())).c_str(), 1);
    odl_open_params p;
    odl_open_params_init(&p);
    p.index = 3;
    p.connect_timeout_ns = 50'000'000;
    odl_dev* d = nullptr;
    EXPECT_EQ(odl_open(&p, &d), ODL_ERR_TIMEOUT);
    EXPECT_EQ(d, nullptr);
}

TEST(Api, OpenPairIsForLoopbackAndSim) {
    odl_open_params p;
    odl_open_params_init(&p);
    p.backend = "kernel";
    odl_dev *a = nullptr, *b = nullptr;
    EXPECT_EQ(odl_open_pair(&p, &a, &b), ODL_ERR_INVAL);
    EXPECT_NE(std::string(odl_last_error()).find("loopback and sim"), std::string::npos) << odl_last_error();
    EXPECT_EQ(a, nullptr);
    EXPECT_EQ(b, nullptr);
}

TEST(Api, OpenPairOnSimWithoutAServerSaysSo) {
    // A socket nobody listens on: refused at once, nothing half-open.
    setenv("ODL_SIM_SOCKET", ("/tmp/odl-api-test-no-server-" + std::to_string(getpid()) + ".sock").c_str(), 1);
    odl_open_params p;
    odl_open_params_init(&p);
    p.backend = "sim";
    odl_dev *a = nullptr, *b = nullptr;
    EXPECT_EQ(odl_open_pair(&p, &a, &b), ODL_ERR_NO_DEVICE);
    EXPECT_NE(std::string(odl_last_error()).find("no model server at"), std::string::npos) << odl_last_error();
    EXPECT_EQ(a, nullptr);
    EXPECT_EQ(b, nullptr);
    unsetenv("ODL_SIM_SOCKET");
}

TEST(Api, NullDeviceIsAnErrorEverywhere) {
    odl_completion c;
    size_t n;
    char buf[4] = {};
    EXPECT_EQ(odl_post_send(nullptr, 0, 0, buf, 4, nullptr, 0), ODL_ERR_INVAL);
    EXPECT_EQ(odl_post_recv(nullptr, 0, 0, buf, 4, nullptr, 0), ODL_ERR_INVAL);
    EXPECT_EQ(odl_poll(nullptr, &c, 1, &n), ODL_ERR_INVAL);
    EXPECT_EQ(odl_wait(nullptr, &c, 1, &n, 0), ODL_ERR_INVAL);
    EXPECT_EQ(odl_query(nullptr, nullptr), ODL_ERR_INVAL);
    EXPECT_EQ(odl_get_stats(nullptr, nullptr), ODL_ERR_INVAL);
    EXPECT_ODL_OK(odl_close(nullptr));
}

TEST_F(LoopbackPair, ExchangesMessagesBothWays) {
    const std::string m1 = "hello from a", m2 = "and from b";
    char r1[64] = {}, r2[64] = {};
    ASSERT_ODL_OK(odl_post_recv(b, 0, 7, r1, sizeof(r1), nullptr, 1));
    ASSERT_ODL_OK(odl_post_recv(a, 3, 8, r2, sizeof(r2), nullptr, 2));
    ASSERT_ODL_OK(odl_post_send(a, 0, 7, m1.data(), m1.size(), nullptr, 3));
    ASSERT_ODL_OK(odl_post_send(b, 3, 8, m2.data(), m2.size(), nullptr, 4));
    auto cb = drive(b, 2);
    auto ca = drive(a, 2);
    ASSERT_EQ(cb.size(), 2u);
    ASSERT_EQ(ca.size(), 2u);
    EXPECT_EQ(std::string(r1, m1.size()), m1);
    EXPECT_EQ(std::string(r2, m2.size()), m2);
    odl_dev_info info{};
    info.struct_size = sizeof(info);
    ASSERT_ODL_OK(odl_query(a, &info));
    EXPECT_EQ(info.link_state, uint32_t(ODL_LINK_UP));
    EXPECT_STREQ(info.backend, "loopback");
    EXPECT_EQ(info.num_streams, 4u);
    EXPECT_EQ(info.peer_pid, uint32_t(getpid()));
}

TEST_F(LoopbackPair, RejectsMisuseOfPosts) {
    char buf[16] = {};
    EXPECT_EQ(odl_post_send(a, 4, 1, buf, 16, nullptr, 0), ODL_ERR_INVAL);
    EXPECT_NE(std::string(odl_last_error()).find("stream 4"), std::string::npos);
    EXPECT_EQ(odl_post_send(a, 0, ODL_TAG_ANY, buf, 16, nullptr, 0), ODL_ERR_INVAL);
    EXPECT_EQ(odl_post_send(a, 0, 1, nullptr, 16, nullptr, 0), ODL_ERR_INVAL);
    EXPECT_EQ(odl_post_recv(a, 0, 1, nullptr, 16, nullptr, 0), ODL_ERR_INVAL);
    EXPECT_EQ(odl_post_send(a, 0, 1, buf, 65ull << 20, nullptr, 0), ODL_ERR_TOO_BIG);
    odl_completion c;
    size_t n = 0;
    EXPECT_EQ(odl_poll(a, nullptr, 4, &n), ODL_ERR_INVAL);
    EXPECT_EQ(odl_wait(a, &c, 0, &n, 0), ODL_ERR_INVAL);
    odl_dev_info small{};
    small.struct_size = 8;
    EXPECT_EQ(odl_query(a, &small), ODL_ERR_INVAL);
}

TEST_F(LoopbackPair, MemoryRegionsBoundOperations) {
    std::vector<char> mem(4096);
    odl_mr* mr = nullptr;
    EXPECT_EQ(odl_reg_mr(a, nullptr, 10, &mr), ODL_ERR_INVAL);
    ASSERT_ODL_OK(odl_reg_mr(a, mem.data(), mem.size(), &mr));
    EXPECT_ODL_OK(odl_post_send(a, 0, 1, mem.data() + 96, 4000, mr, 0));
    EXPECT_EQ(odl_post_send(a, 0, 1, mem.data() + 97, 4000, mr, 0), ODL_ERR_INVAL);
    EXPECT_EQ(odl_post_recv(a, 0, 1, mem.data() - 1, 10, mr, 0), ODL_ERR_INVAL);
    ASSERT_ODL_OK(odl_dereg_mr(a, mr));
    EXPECT_EQ(odl_dereg_mr(a, mr), ODL_ERR_INVAL);
    EXPECT_EQ(odl_post_send(a, 0, 1, mem.data(), 10, mr, 0), ODL_ERR_INVAL);
}

TEST_F(LoopbackPair, WaitTimesOutAndReportsAClosedPeer) {
    odl_completion c;
    size_t n = 9;
    EXPECT_EQ(odl_wait(a, &c, 1, &n, 1'000'000), ODL_ERR_TIMEOUT);
    EXPECT_EQ(n, 0u);
    char buf[8];
    ASSERT_ODL_OK(odl_post_recv(a, 0, 1, buf, sizeof(buf), nullptr, 77));
    odl_close(b);
    b = nullptr;
    ASSERT_ODL_OK(odl_wait(a, &c, 1, &n, 1'000'000'000));
    EXPECT_EQ(c.ctx, 77u);
    EXPECT_EQ(c.status, ODL_ERR_PEER_CLOSED);
    EXPECT_EQ(odl_post_send(a, 0, 1, buf, 8, nullptr, 0), ODL_ERR_PEER_CLOSED);
    EXPECT_EQ(odl_wait(a, &c, 1, &n, 1'000'000'000), ODL_ERR_PEER_CLOSED);
}

TEST_F(LoopbackPair, StatisticsCountTraffic) {
    std::vector<char> tx(10000, 'x'), rx(10000);
    ASSERT_ODL_OK(odl_post_recv(b, 0, 1, rx.data(), rx.size(), nullptr, 1));
    ASSERT_ODL_OK(odl_post_send(a, 0, 1, tx.data(), tx.size(), nullptr, 2));
    drive(b, 1);
    drive(a, 1);
    odl_stats sa{}, sb{};
    sa.struct_size = sb.struct_size = sizeof(odl_stats);
    ASSERT_ODL_OK(odl_get_stats(a, &sa));
    ASSERT_ODL_OK(odl_get_stats(b, &sb));
    EXPECT_EQ(sa.tx_msgs, 1u);
    EXPECT_EQ(sa.tx_bytes, 10000u);
    EXPECT_EQ(sa.tx_frames, 3u);
    EXPECT_EQ(sb.rx_msgs, 1u);
    EXPECT_EQ(sb.rx_frames, 3u);
    EXPECT_EQ(sb.rx_bad_frames, 0u);
    // Not a sim link: no model figures.
    EXPECT_EQ(sb.model_frames, 0u);
    EXPECT_EQ(sb.model_lag_max_ns, 0u);
}

// A caller built against API version 3 passes the struct without the
// model_* fields: it gets what it knows, and nothing past it is written.
TEST_F(LoopbackPair, StatisticsKeepOlderCallersWorking) {
    constexpr size_t v3 = offsetof(odl_stats, model_frames);
    std::vector<unsigned char> buf(sizeof(odl_stats) + 16, 0xa5);
    odl_stats head{};
    head.struct_size = uint32_t(v3);
    std::memcpy(buf.data(), &head, sizeof(head.struct_size));
    ASSERT_ODL_OK(odl_get_stats(a, reinterpret_cast<odl_stats*>(buf.data())));
    for (size_t i = v3; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xa5) << "byte " << i << " written";
    uint32_t size = 0;
    std::memcpy(&size, buf.data(), sizeof(size));
    EXPECT_EQ(size, v3);
    odl_stats small{};
    small.struct_size = uint32_t(v3 - 8);
    EXPECT_EQ(odl_get_stats(a, &small), ODL_ERR_INVAL);
}

TEST_F(LoopbackPair, CancelThroughTheCApi) {
    char buf[8];
    ASSERT_ODL_OK(odl_post_recv(a, 1, 5, buf, sizeof(buf), nullptr, 41));
    EXPECT_EQ(odl_cancel(a, 1, 42), ODL_ERR_INVAL);
    EXPECT_NE(std::string(odl_last_error()).find("no posted operation 42"), std::string::npos) << odl_last_error();
    EXPECT_EQ(odl_cancel(a, 9, 41), ODL_ERR_INVAL);
    EXPECT_EQ(odl_cancel(nullptr, 1, 41), ODL_ERR_INVAL);
    ASSERT_ODL_OK(odl_cancel(a, 1, 41));
    auto c = drive(a, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].ctx, 41u);
    EXPECT_EQ(c[0].status, ODL_ERR_CANCELED);
    odl_dev_info info{};
    info.struct_size = sizeof(info);
    ASSERT_ODL_OK(odl_query(a, &info));
    EXPECT_EQ(info.local_pid, uint32_t(getpid()));
    EXPECT_GT(std::strlen(info.local_name), 0u);
}

TEST_F(LoopbackPair, DiscardThroughTheCApi) {
    EXPECT_EQ(odl_discard(a, 9, 0, 0, 0), ODL_ERR_INVAL);
    EXPECT_NE(std::string(odl_last_error()).find("stream 9 out of range"), std::string::npos) << odl_last_error();
    EXPECT_EQ(odl_discard(a, 1, 0, 0, 0x80), ODL_ERR_INVAL);
    EXPECT_NE(std::string(odl_last_error()).find("flags"), std::string::npos) << odl_last_error();
    EXPECT_EQ(odl_discard(nullptr, 1, 0, 0, 0), ODL_ERR_INVAL);
    // A blocked sender: a message larger than the receive window, no receive.
    std::vector<unsigned char> big(4u << 20, 0x5a);
    ASSERT_ODL_OK(odl_post_send(b, 1, 7, big.data(), big.size(), nullptr, 1));
    EXPECT_TRUE(drive(b, 1, std::chrono::milliseconds(200)).empty()) << "held back by credit";
    ASSERT_ODL_OK(odl_discard(a, 1, 7, 0xffffffffu, 0));
    auto c = drive(b, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, ODL_OK);
    // Reopened: messages are delivered normally again.
    ASSERT_ODL_OK(odl_discard(a, 1, 0, 0, ODL_DISCARD_STOP));
    std::vector<unsigned char> rx(big.size());
    ASSERT_ODL_OK(odl_post_recv(a, 1, 7, rx.data(), rx.size(), nullptr, 2));
    ASSERT_ODL_OK(odl_post_send(b, 1, 7, big.data(), big.size(), nullptr, 3));
    c = drive(a, 1);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].status, ODL_OK);
    EXPECT_EQ(c[0].len, big.size());
    EXPECT_EQ(rx, big);
}

TEST(Api, StatusTextsAreDistinct) {
    std::vector<std::string> seen;
    for (int s = 0; s >= ODL_ERR_CANCELED; --s) {
        const std::string t = odl_strerror(s);
        EXPECT_EQ(std::count(seen.begin(), seen.end(), t), 0) << t;
        seen.push_back(t);
    }
    EXPECT_STREQ(odl_strerror(-999), "unknown status");
}

}  // namespace
