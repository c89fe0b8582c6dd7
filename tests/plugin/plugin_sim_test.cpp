// SPDX-License-Identifier: MIT
// The plugin over libodl's sim backend: two processes (as two NCCL ranks)
// on the link odl-linkd --sim models. Sizes 0 B-16 MiB both ways with every
// byte checked, and the device speed NCCL is told is the modelled cable's.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdarg>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "odl/odl.h"
#include "pair_harness.h"

namespace odl::plugin::test {
namespace {

/// Both sides in step, then every registration and comm closed, then finalize.
void close_all(side& s, const conn_pair& c, void* tx_mh, void* rx_mh) {
    s.ch.barrier();
    PCHECK_OK(s.api.dereg_mr(c.sc, tx_mh));
    PCHECK_OK(s.api.dereg_mr(c.rc, rx_mh));
    PCHECK_OK(s.api.close_send(c.sc));
    PCHECK_OK(s.api.close_recv(c.rc));
    PCHECK_OK(s.api.close_listen(c.lc));
    PCHECK_OK(s.api.finalize());
}

/// odl-linkd --sim on a private socket for the whole test, stopped at the end.
class PluginSim : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/odl-plugin-sim-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        m_dir = tmpl;
        const std::string sock = m_dir + "/sim.sock";
        setenv("ODL_RUNTIME_DIR", m_dir.c_str(), 1);
        setenv("ODL_SIM_SOCKET", sock.c_str(), 1);
        setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
        m_server = fork();
        ASSERT_GE(m_server, 0);
        if (m_server == 0) {
            execl(ODL_LINKD_PATH, "odl-linkd", "--sim", "--socket", sock.c_str(), "--gen", "gen3", nullptr);
            _exit(127);
        }
        struct stat st {};
        for (int i = 0; i < 200 && stat(sock.c_str(), &st) != 0; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(25));
        ASSERT_EQ(stat(sock.c_str(), &st), 0) << "odl-linkd --sim did not create " << sock;
    }
    void TearDown() override {
        if (m_server > 0) {
            kill(m_server, SIGTERM);
            int status = 0;
            waitpid(m_server, &status, 0);
            EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "odl-linkd --sim status " << status;
        }
        std::system(("rm -rf " + m_dir).c_str());
    }
    std::string m_dir;
    pid_t m_server = -1;
};

TEST_F(PluginSim, TransfersEverySizeBothWaysAtTheCablesSpeed) {
    const std::vector<size_t> sizes = {0, 1, 4095, 4096, 65537, 1 << 20, 16u << 20};
    run_pair(
        10,
        [&](side& s) {
            PCHECK_OK(s.api.init(&log_counter::fn));
            int n = 0;
            PCHECK_OK(s.api.devices(&n));
            PCHECK(n == 1);
            conn_pair c = connect_both(s);
            // TB4 (gen3 x2): the model's 4 KiB payload rate, about 39 Gb/s.
            common_props p;
            PCHECK_OK(s.api.props(0, &p));
            PCHECK(p.name == "sim0");
            PCHECK(p.speed > 30000 && p.speed < 40000);
            std::vector<unsigned char> tx(sizes.back()), rx(sizes.back() + 64);
            void *tx_mh = nullptr, *rx_mh = nullptr;
            PCHECK_OK(s.api.reg_mr(c.sc, tx.data(), tx.size(), NCCL_PTR_HOST, &tx_mh));
            PCHECK_OK(s.api.reg_mr(c.rc, rx.data(), rx.size(), NCCL_PTR_HOST, &rx_mh));
            const uint32_t me = s.server ? 1 : 2, peer = s.server ? 2 : 1;
            for (size_t len : sizes) {
                fill(tx, len, me + uint32_t(len));
                void *sreq = nullptr, *rreq = nullptr;
                void* d = rx.data();
                size_t cap = len + 64;
                int tag = 3;
                void* mh = rx_mh;
                PCHECK_OK(s.api.irecv(c.rc, 1, &d, &cap, &tag, &mh, &rreq));
                PCHECK_OK(s.api.isend(c.sc, tx.data(), len, 3, tx_mh, &sreq));
                int ssize = -1, rsize = -1;
                wait_done(s.api, sreq, &ssize);
                wait_done(s.api, rreq, &rsize);
                PCHECK(ssize == int(len) && rsize == int(len));
                PCHECK(matches(rx, len, peer + uint32_t(len)));
            }
            close_all(s, c, tx_mh, rx_mh);
        },
        120, "sim:0");
}

/// Counts the plugin's model-timing lines at finalize, by level.
struct timing_log {
    static inline int late_warnings = 0, on_time_infos = 0, other_warnings = 0;
    static void fn(ncclDebugLogLevel lvl, unsigned long flags, const char* file, int line, const char* fmt, ...) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        const bool timing = std::strstr(buf, "model timing") != nullptr;
        if (lvl == NCCL_LOG_WARN && timing && std::strstr(buf, "arrived later than the link model said"))
            ++late_warnings;
        else if (lvl == NCCL_LOG_WARN)
            ++other_warnings;
        else if (timing && std::strstr(buf, "none late"))
            ++on_time_infos;
        log_counter::fn(lvl, flags, file, line, "%s", buf);
    }
};

/// One 1 MiB message each way, then an orderly close; @late_ns is the
/// programs' lateness threshold (ODL_SIM_LATE_NS).
void one_exchange_then_finalize(const char* late_ns, bool expect_late) {
    setenv("ODL_SIM_LATE_NS", late_ns, 1);
    run_pair(
        11,  // v11 has finalize, which closes the links (v10: only at unload)
        [&](side& s) {
            PCHECK_OK(s.api.init(&timing_log::fn));
            conn_pair c = connect_both(s);
            std::vector<unsigned char> tx(1 << 20), rx((1 << 20) + 64);
            void *tx_mh = nullptr, *rx_mh = nullptr;
            PCHECK_OK(s.api.reg_mr(c.sc, tx.data(), tx.size(), NCCL_PTR_HOST, &tx_mh));
            PCHECK_OK(s.api.reg_mr(c.rc, rx.data(), rx.size(), NCCL_PTR_HOST, &rx_mh));
            void *sreq = nullptr, *rreq = nullptr;
            void* d = rx.data();
            size_t cap = rx.size();
            int tag = 5;
            void* mh = rx_mh;
            PCHECK_OK(s.api.irecv(c.rc, 1, &d, &cap, &tag, &mh, &rreq));
            PCHECK_OK(s.api.isend(c.sc, tx.data(), tx.size(), 5, tx_mh, &sreq));
            int ssize = -1, rsize = -1;
            wait_done(s.api, sreq, &ssize);
            wait_done(s.api, rreq, &rsize);
            PCHECK(ssize == int(tx.size()) && rsize == int(tx.size()));
            close_all(s, c, tx_mh, rx_mh);
            // Each side received 257+ frames from the model; its link says
            // at finalize whether they were on time, once.
            if (timing_log::late_warnings + timing_log::on_time_infos != 1 || timing_log::other_warnings)
                std::fprintf(stderr, "%s: late warnings %d, on-time infos %d, other warnings %d\n",
                             s.server ? "server" : "client", timing_log::late_warnings, timing_log::on_time_infos,
                             timing_log::other_warnings);
            if (expect_late) {
                PCHECK(timing_log::late_warnings == 1);
                PCHECK(timing_log::on_time_infos == 0);
            } else {
                PCHECK(timing_log::late_warnings == 0);
                PCHECK(timing_log::on_time_infos == 1);
            }
            PCHECK(timing_log::other_warnings == 0);
        },
        120, "sim:0");
    unsetenv("ODL_SIM_LATE_NS");
}

// Every frame counts as late with a threshold of 0 ns: the job's end says
// its timings are not the modelled link's, at WARN.
TEST_F(PluginSim, SaysAtFinalizeThatTheModelFellBehind) { one_exchange_then_finalize("0", true); }

// With a threshold no frame reaches (60 s), the same job ends quietly: one
// INFO line, no warning.
TEST_F(PluginSim, QuietAtFinalizeWhenTheModelKeptUp) { one_exchange_then_finalize("60000000000", false); }

// Late is what the server hands over after it is due, not what then waits
// for its program (an NCCL rank whose progress thread naps between
// collectives): libodl's C API straight, this process holding both ends. B
// does not look at its device for 400 ms while A's 64 KiB arrive; with a
// threshold of 100 ms (far above what the server takes, even on a loaded
// machine) none of them is late. Counting when the program took them, all
// 16 were.
TEST_F(PluginSim, AFrameThatWaitsForItsProgramIsNotLate) {
    // Both devices closed and the variable gone however the test ends.
    struct closer {
        void operator()(odl_dev* d) const { odl_close(d); }
    };
    struct unset_late {
        ~unset_late() { unsetenv("ODL_SIM_LATE_NS"); }
    } late_guard;
    setenv("ODL_SIM_LATE_NS", "100000000", 1);
    odl_open_params p;
    odl_open_params_init(&p);
    p.backend = "sim";
    p.flags = ODL_OPEN_NONBLOCK;
    odl_dev *a = nullptr, *b = nullptr;
    ASSERT_EQ(odl_open(&p, &a), ODL_OK) << odl_last_error();
    std::unique_ptr<odl_dev, closer> a_guard(a);
    ASSERT_EQ(odl_open(&p, &b), ODL_OK) << odl_last_error();
    std::unique_ptr<odl_dev, closer> b_guard(b);
    unsetenv("ODL_SIM_LATE_NS");
    odl_completion c[8];
    size_t n = 0;
    const auto up = [](odl_dev* d) {
        odl_dev_info info{};
        info.struct_size = sizeof(info);
        return odl_query(d, &info) == ODL_OK && info.link_state == ODL_LINK_UP;
    };
    for (int i = 0; i < 10000 && !(up(a) && up(b)); ++i) {
        odl_poll(a, c, 8, &n);
        odl_poll(b, c, 8, &n);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_TRUE(up(a) && up(b)) << "the sim link did not come up";
    std::vector<unsigned char> tx(64 << 10), rx(tx.size());
    for (size_t i = 0; i < tx.size(); ++i) tx[i] = static_cast<unsigned char>(i * 7 + 3);
    ASSERT_EQ(odl_post_recv(b, 0, 1, rx.data(), rx.size(), nullptr, 1), ODL_OK);
    ASSERT_EQ(odl_post_send(a, 0, 1, tx.data(), tx.size(), nullptr, 2), ODL_OK);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(400);
    while (std::chrono::steady_clock::now() < until) {  // only A: its frames go out, B's wait
        ASSERT_EQ(odl_poll(a, c, 8, &n), ODL_OK);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    bool got = false, sent = false;
    for (int i = 0; i < 100000 && !(got && sent); ++i) {
        ASSERT_EQ(odl_poll(b, c, 8, &n), ODL_OK);
        for (size_t k = 0; k < n; ++k) got = got || (c[k].ctx == 1 && c[k].status == ODL_OK);
        ASSERT_EQ(odl_poll(a, c, 8, &n), ODL_OK);
        for (size_t k = 0; k < n; ++k) sent = sent || (c[k].ctx == 2 && c[k].status == ODL_OK);
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    ASSERT_TRUE(got && sent) << "got " << got << " sent " << sent;
    EXPECT_EQ(rx, tx);
    odl_stats st{};
    st.struct_size = sizeof(st);
    ASSERT_EQ(odl_get_stats(b, &st), ODL_OK);
    EXPECT_GE(st.model_frames, 16u);
    EXPECT_EQ(st.model_late_frames, 0u) << "frames that waited for their program counted as late (lag max "
                                        << st.model_lag_max_ns / 1000 << " us)";
    EXPECT_LT(st.model_lag_max_ns, 100'000'000u);
    EXPECT_EQ(odl_close(a_guard.release()), ODL_OK);
    EXPECT_EQ(odl_close(b_guard.release()), ODL_OK);
}

}  // namespace
}  // namespace odl::plugin::test
