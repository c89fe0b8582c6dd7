// SPDX-License-Identifier: MIT
// Drives every exported table (v8-v12) of the built plugin from two
// processes over libodl's loopback backend: non-blocking connect/accept,
// sizes 0 B-64 MiB, tags and grouped receives, out-of-order test(), request
// limits, close with requests pending, statistics.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "pair_harness.h"
#include "odl/odl.h"
#include "odl/wire/nccl_stats.h"

namespace odl::plugin::test {
namespace {

/// Every test's plugin statistics go to a private directory, removed at
/// the end (the plugin leaves its files behind for `odl stats` on purpose).
class runtime_dir_env : public ::testing::Environment {
public:
    void SetUp() override {
        char tmpl[] = "/tmp/odl-plugin-rt-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        m_dir = tmpl;
        setenv("ODL_RUNTIME_DIR", m_dir.c_str(), 1);
    }
    void TearDown() override { std::system(("rm -rf " + m_dir).c_str()); }

private:
    std::string m_dir;
};
const auto* const g_runtime_dir = ::testing::AddGlobalTestEnvironment(new runtime_dir_env);

class PluginLoopback : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override {
        const char* outer = std::getenv("ODL_RUNTIME_DIR");
        m_outer = outer ? outer : "";
        char tmpl[] = "/tmp/odl-plugin-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        m_dir = tmpl;
        setenv("ODL_RUNTIME_DIR", m_dir.c_str(), 1);
    }
    void TearDown() override {
        std::system(("rm -rf " + m_dir).c_str());
        setenv("ODL_RUNTIME_DIR", m_outer.c_str(), 1);
    }
    std::string m_dir, m_outer;
};

void init_side(side& s) {
    PCHECK_OK(s.api.init(&log_counter::fn));
    int n = 0;
    PCHECK_OK(s.api.devices(&n));
    PCHECK(n == 1);
}

void close_all(side& s, conn_pair& c) {
    PCHECK_OK(s.api.close_send(c.sc));
    PCHECK_OK(s.api.close_recv(c.rc));
    PCHECK_OK(s.api.close_listen(c.lc));
}

TEST_P(PluginLoopback, ReportsPropertiesOfItsVersion) {
    run_pair(GetParam(), [](side& s) {
        init_side(s);
        const int v = s.api.version();
        PCHECK(std::string(s.api.name()) == "ODL");
        common_props p;
        PCHECK_OK(s.api.props(0, &p));
        PCHECK(p.name == "loopback0");
        PCHECK(p.ptr_support == NCCL_PTR_HOST);
        PCHECK(p.max_recvs == 8);
        PCHECK(p.speed == 80000);
        // Fields after vProps land right only if the struct layout is right.
        if (v >= 9) PCHECK(p.vdevs == 1 && p.max_p2p == (size_t(1) << 30));
        if (v >= 11) PCHECK(p.max_multi == 1);
        if (v >= 12) PCHECK(p.rail == NCCL_NET_ID_UNDEF);
        PCHECK(log_counter::net_lines > 0);  // logs go through NCCL's logger
        PCHECK_OK(s.api.finalize());
    });
}

TEST_P(PluginLoopback, TransfersEverySizeBothWays) {
    const std::vector<size_t> sizes = {0, 1, 7, 4095, 4096, 65537, 1 << 20, 64u << 20};
    run_pair(GetParam(), [&](side& s) {
        init_side(s);
        conn_pair c = connect_both(s);
        std::vector<unsigned char> tx(sizes.back()), rx(sizes.back() + 64);
        void *tx_mh = nullptr, *rx_mh = nullptr;
        PCHECK_OK(s.api.reg_mr(c.sc, tx.data(), tx.size(), NCCL_PTR_HOST, &tx_mh));
        PCHECK_OK(s.api.reg_mr(c.rc, rx.data(), rx.size(), NCCL_PTR_HOST, &rx_mh));
        const uint32_t me = s.server ? 1 : 2, peer = s.server ? 2 : 1;
        uint64_t total = 0;
        for (size_t n : sizes) {
            fill(tx, n, me + uint32_t(n));
            void *sreq = nullptr, *rreq = nullptr;
            void* d = rx.data();
            size_t cap = n + 64;  // larger than the message: normal for NCCL
            int tag = 5;
            void* mh = rx_mh;
            PCHECK_OK(s.api.irecv(c.rc, 1, &d, &cap, &tag, &mh, &rreq));
            PCHECK(rreq);
            PCHECK_OK(s.api.isend(c.sc, tx.data(), n, 5, tx_mh, &sreq));
            PCHECK(sreq);
            int ssize = -1, rsize = -1;
            wait_done(s.api, sreq, &ssize);
            wait_done(s.api, rreq, &rsize);
            PCHECK(ssize == int(n));
            PCHECK(rsize == int(n));
            PCHECK(matches(rx, n, peer + uint32_t(n)));
            total += n;
        }
        // The statistics file shows this process's traffic.
        stats_file st{};
        std::ifstream f(stats_dir() + "/" + stats_file_name(getpid()), std::ios::binary);
        PCHECK(f.read(reinterpret_cast<char*>(&st), sizeof(st)).good());
        PCHECK(st.magic == kStatsMagic && st.pid == uint32_t(getpid()) && st.nlinks == 1);
        PCHECK(st.links[0].tx_bytes == total && st.links[0].rx_bytes == total);
        PCHECK(st.links[0].tx_msgs == sizes.size() && st.links[0].send_comms == 1);
        PCHECK(st.links[0].link_state == ODL_LINK_UP);
        s.ch.barrier();
        PCHECK_OK(s.api.dereg_mr(c.sc, tx_mh));
        PCHECK_OK(s.api.dereg_mr(c.rc, rx_mh));
        close_all(s, c);
        PCHECK_OK(s.api.finalize());
    });
}

TEST_P(PluginLoopback, GroupedReceivePlacesMessagesByTag) {
    run_pair(GetParam(), [](side& s) {
        init_side(s);
        conn_pair c = connect_both(s);
        if (s.server) {
            // Sent in another order than the receive lists the tags.
            const int tags[4] = {12, 10, 13, 11};
            const size_t lens[4] = {100, 200, 300, 400};
            std::vector<std::vector<unsigned char>> bufs(4, std::vector<unsigned char>(400));
            void* reqs[4] = {};
            for (int i = 0; i < 4; ++i) {
                fill(bufs[size_t(i)], lens[i], uint32_t(tags[i]));
                PCHECK_OK(s.api.isend(c.sc, bufs[size_t(i)].data(), lens[i], tags[i], nullptr, &reqs[i]));
                PCHECK(reqs[i]);
            }
            for (auto* r : reqs) wait_done(s.api, r, nullptr);
        } else {
            std::vector<std::vector<unsigned char>> bufs(4, std::vector<unsigned char>(1000));
            void* data[4];
            size_t caps[4];
            int tags[4] = {10, 11, 12, 13};
            for (int i = 0; i < 4; ++i) {
                data[i] = bufs[size_t(i)].data();
                caps[i] = 1000;
            }
            void* req = nullptr;
            PCHECK_OK(s.api.irecv(c.rc, 4, data, caps, tags, nullptr, &req));
            PCHECK(req);
            int got[4] = {};
            wait_done(s.api, req, got);
            PCHECK(got[0] == 200 && got[1] == 400 && got[2] == 100 && got[3] == 300);
            for (int i = 0; i < 4; ++i) PCHECK(matches(bufs[size_t(i)], size_t(got[i]), uint32_t(tags[i])));
        }
        s.ch.barrier();
        close_all(s, c);
        PCHECK_OK(s.api.finalize());
    });
}

TEST_P(PluginLoopback, HonoursRequestLimitsAndOutOfOrderTest) {
    run_pair(GetParam(), [](side& s) {
        init_side(s);
        conn_pair c = connect_both(s);
        constexpr size_t kLen = 1024;
        if (s.server) {
            // Send side: 32 requests x maxRecvs (8) = 256, then "retry later".
            std::vector<std::vector<unsigned char>> bufs(257, std::vector<unsigned char>(kLen));
            std::vector<void*> reqs;
            for (uint32_t i = 0; i < 256; ++i) {
                fill(bufs[i], kLen, i);
                void* r = nullptr;
                PCHECK_OK(s.api.isend(c.sc, bufs[i].data(), kLen, 1, nullptr, &r));
                PCHECK(r);
                reqs.push_back(r);
            }
            void* extra = reinterpret_cast<void*>(0x1);
            PCHECK_OK(s.api.isend(c.sc, bufs[256].data(), kLen, 1, nullptr, &extra));
            PCHECK(extra == nullptr);
            std::reverse(reqs.begin(), reqs.end());  // test() in reverse order
            for (void* r : reqs) wait_done(s.api, r, nullptr);
        } else {
            std::vector<std::vector<unsigned char>> bufs(33, std::vector<unsigned char>(kLen));
            for (uint32_t round = 0; round < 8; ++round) {
                std::vector<void*> reqs;
                for (int i = 0; i < 32; ++i) {
                    void* d = bufs[size_t(i)].data();
                    size_t cap = kLen;
                    int tag = 1;
                    // NCCL may pre-store this; the plugin must overwrite it.
                    void* r = reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION);
                    PCHECK_OK(s.api.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &r));
                    PCHECK(r && r != reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION));
                    reqs.push_back(r);
                }
                void* d = bufs[32].data();
                size_t cap = kLen;
                int tag = 1;
                void* extra = nullptr;
                PCHECK_OK(s.api.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &extra));
                PCHECK(extra == nullptr);  // 32 receive requests per comm
                for (int i = 31; i >= 0; --i) {
                    int n = 0;
                    wait_done(s.api, reqs[size_t(i)], &n);
                    PCHECK(n == int(kLen));
                    // Receives match sends in posting order.
                    PCHECK(matches(bufs[size_t(i)], kLen, round * 32 + uint32_t(i)));
                }
            }
        }
        s.ch.barrier();
        close_all(s, c);
        PCHECK_OK(s.api.finalize());
    });
}

TEST_P(PluginLoopback, ClosesWithRequestsPendingThenReconnects) {
    run_pair(GetParam(), [](side& s) {
        init_side(s);
        std::vector<unsigned char> buf(4096), big(8u << 20);
        {
            conn_pair c = connect_both(s);
            // Receives nobody will match, and a send larger than the peer's window.
            for (int i = 0; i < 4; ++i) {
                void* d = buf.data();
                size_t cap = buf.size();
                int tag = 99;
                void* r = nullptr;
                PCHECK_OK(s.api.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &r));
                PCHECK(r);
            }
            void* r = nullptr;
            PCHECK_OK(s.api.isend(c.sc, big.data(), big.size(), 7, nullptr, &r));
            PCHECK(r);
            s.ch.barrier();
            close_all(s, c);
        }
        s.ch.barrier();
        // A new connection (a stream is reused later) is not disturbed by them.
        conn_pair c = connect_both(s);
        fill(buf, 4096, s.server ? 11 : 22);
        void *sreq = nullptr, *rreq = nullptr;
        std::vector<unsigned char> rx(4096);
        void* d = rx.data();
        size_t cap = rx.size();
        int tag = 7;
        PCHECK_OK(s.api.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &rreq));
        PCHECK_OK(s.api.isend(c.sc, buf.data(), 4096, 7, nullptr, &sreq));
        int n = 0;
        wait_done(s.api, sreq, nullptr);
        wait_done(s.api, rreq, &n);
        PCHECK(n == 4096 && matches(rx, 4096, s.server ? 22 : 11));
        s.ch.barrier();
        close_all(s, c);
        PCHECK_OK(s.api.finalize());
    });
}

TEST_P(PluginLoopback, RefusesBadArguments) {
    run_pair(GetParam(), [](side& s) {
        init_side(s);
        net_api& a = s.api;
        common_props p;
        PCHECK(a.props(-1, &p) != ncclSuccess);
        PCHECK(a.props(1, &p) != ncclSuccess);
        char h[NCCL_NET_HANDLE_MAXSIZE] = {};
        void* lc = nullptr;
        PCHECK(a.listen(7, h, &lc) != ncclSuccess);
        void* sc = nullptr;
        PCHECK(a.connect(0, h, &sc) == ncclInternalError);  // all zero: not our handle
        // Our own handle: this process is not reachable over a link.
        PCHECK_OK(a.listen(0, h, &lc));
        PCHECK(a.connect(0, h, &sc) != ncclSuccess && sc == nullptr);
        refuses_foreign_objects(a);
        // Now with real comms.
        void* req = nullptr;
        char data[16] = {};
        int done = 0;
        void* mh = nullptr;
        s.ch.barrier();
        PCHECK_OK(a.close_listen(lc));
        conn_pair c = connect_both(s);
        PCHECK(a.reg_mr(c.sc, data, 16, NCCL_PTR_CUDA, &mh) == ncclInternalError);
        void* d[9];
        size_t caps[9] = {};
        int tags[9] = {};
        for (auto& x : d) x = data;
        PCHECK(a.irecv(c.rc, 0, d, caps, tags, nullptr, &req) == ncclInternalError);
        PCHECK(a.irecv(c.rc, 9, d, caps, tags, nullptr, &req) == ncclInternalError);
        PCHECK(a.irecv(c.sc, 1, d, caps, tags, nullptr, &req) == ncclInternalError);  // a send comm
        PCHECK(a.isend(c.rc, data, 16, 0, nullptr, &req) == ncclInternalError);       // a receive comm
        PCHECK(a.isend(c.sc, nullptr, 16, 0, nullptr, &req) == ncclInternalError);
        PCHECK_OK(a.iflush(c.rc, data, 16, nullptr, &req));
        PCHECK(req == nullptr);  // host memory: nothing to flush
        // A request is dead once test() reported it done.
        void* r = nullptr;
        PCHECK_OK(a.isend(c.sc, data, 0, 0, nullptr, &r));
        wait_done(a, r, nullptr);
        PCHECK(a.test(r, &done, nullptr) == ncclInternalError);
        void* rr = nullptr;
        d[0] = data;
        caps[0] = 16;
        PCHECK_OK(a.irecv(c.rc, 1, d, caps, tags, nullptr, &rr));
        wait_done(a, rr, nullptr);
        s.ch.barrier();
        close_all(s, c);
        PCHECK_OK(a.finalize());
    });
}

INSTANTIATE_TEST_SUITE_P(Versions, PluginLoopback, ::testing::Values(8, 9, 10, 11, 12),
                         [](const auto& p) { return "v" + std::to_string(p.param); });

/// v11+: init per communicator, finalize closes the links after the last
/// one, and the library can be unloaded and loaded again (NCCL >= 2.28).
TEST(PluginLifecycle, InitFinalizeCyclesAcrossDlclose) {
    run_pair(11, [](side& s) {
        for (int cycle = 0; cycle < 2; ++cycle) {
            loaded_plugin second(plugin_path(), 12);  // same library, second table
            PCHECK_OK(s.api.init(&log_counter::fn));
            PCHECK_OK(second.api().init(&log_counter::fn));
            conn_pair c = connect_both(s);
            void *sreq = nullptr, *rreq = nullptr;
            char tx[64] = "cycle", rx[64] = {};
            void* d = rx;
            size_t cap = sizeof(rx);
            int tag = cycle;
            PCHECK_OK(s.api.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &rreq));
            PCHECK_OK(s.api.isend(c.sc, tx, sizeof(tx), cycle, nullptr, &sreq));
            wait_done(s.api, sreq, nullptr);
            wait_done(s.api, rreq, nullptr);
            PCHECK(std::string(rx) == "cycle");
            s.ch.barrier();
            close_all(s, c);
            PCHECK_OK(second.api().finalize());
            PCHECK_OK(s.api.finalize());
            PCHECK(s.api.finalize() == ncclInternalError);  // one finalize per init
            s.ch.barrier();
        }
    });
}

/// An orderly end logs nothing at WARN (NCCL prints those to every user):
/// one side finalizes first, and the other's link sees the peer's goodbye
/// while still running, as at the end of every NCCL job.
TEST(PluginLifecycle, OrderlyCloseLogsNoWarning) {
    run_pair(11, [](side& s) {
        PCHECK_OK(s.api.init(&log_counter::fn));
        conn_pair c = connect_both(s);
        void *sreq = nullptr, *rreq = nullptr;
        char tx[64] = "bye", rx[64] = {};
        void* d = rx;
        size_t cap = sizeof(rx);
        int tag = 1;
        PCHECK_OK(s.api.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &rreq));
        PCHECK_OK(s.api.isend(c.sc, tx, sizeof(tx), 1, nullptr, &sreq));
        wait_done(s.api, sreq, nullptr);
        wait_done(s.api, rreq, nullptr);
        s.ch.barrier();
        close_all(s, c);
        if (s.server) {
            PCHECK_OK(s.api.finalize());
            s.ch.barrier();
        } else {
            s.ch.barrier();
            // The server's link is gone: give this side's progress thread
            // time to see the goodbye before its own finalize.
            usleep(300'000);
            PCHECK_OK(s.api.finalize());
        }
        if (log_counter::warn_lines != 0) {
            std::fprintf(stderr, "%s logged %d warning(s) on an orderly close (ODL_TEST_VERBOSE=warn shows them)\n",
                         s.server ? "server" : "client", log_counter::warn_lines.load());
            PCHECK(log_counter::warn_lines == 0);
        }
    });
}

/// libodl's own warnings (here: a bad ODL_RX_THREAD, read when a device
/// opens) reach the user through NCCL's logger, at NCCL's WARN level.
struct libodl_lines {
    static inline std::mutex mu;
    static inline std::vector<std::pair<ncclDebugLogLevel, std::string>> got;
    static void fn(ncclDebugLogLevel lvl, unsigned long, const char*, int, const char* fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        std::string l = log_counter::line(fmt, ap);
        va_end(ap);
        std::lock_guard<std::mutex> lk(mu);
        got.emplace_back(lvl, std::move(l));
    }
};

TEST(PluginConfig, LibraryWarningsGoThroughNcclLogger) {
    setenv("ODL_RX_THREAD", "bogus", 1);
    {
        loaded_plugin lp(plugin_path(), 11);
        ASSERT_EQ(lp.api().init(&libodl_lines::fn), ncclSuccess);
        EXPECT_EQ(lp.api().finalize(), ncclSuccess);
    }
    unsetenv("ODL_RX_THREAD");
    std::lock_guard<std::mutex> lk(libodl_lines::mu);
    bool warned = false;
    for (const auto& [lvl, line] : libodl_lines::got)
        warned = warned || (lvl == NCCL_LOG_WARN &&
                            line.find("NET/ODL : libodl: ODL_RX_THREAD='bogus' is not on, off or auto") == 0);
    EXPECT_TRUE(warned) << libodl_lines::got.size() << " line(s) logged, none the warning";
}

TEST(PluginConfig, RejectsBadDeviceList) {
    loaded_plugin lp(plugin_path(), 11);
    setenv("ODL_NCCL_DEVICES", "loopback", 1);
    EXPECT_EQ(lp.api().init(&log_counter::fn), ncclInvalidUsage);
    setenv("ODL_NCCL_DEVICES", "nosuch:0", 1);
    EXPECT_EQ(lp.api().init(&log_counter::fn), ncclSystemError);
    setenv("ODL_NCCL_DEVICES", "loopback:0", 1);
}

}  // namespace
}  // namespace odl::plugin::test
