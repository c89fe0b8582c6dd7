// SPDX-License-Identifier: MIT
// Three ranks in a triangle of links, as three hosts cabled in a ring: each
// pair of processes has its own loopback device, so each rank's two NCCL
// devices reach different peers. NCCL names a device in connect() without
// knowing which peer it reaches; the plugin must send over the link whose
// peer is the listener (the mesh rule, docs/plugin.md). Every rank connects
// to both others naming device 0, exchanges checked messages with each, and
// its statistics must show one connection each way on each link, each link
// with the peer the triangle says. Every wait is bounded.
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "odl/wire/nccl_stats.h"
#include "pair_harness.h"
#include "stats_reader.h"

namespace odl::plugin::test {
namespace {

constexpr int kRanks = 3;
// Loopback device of the link between ranks a and b (a < b): 0-1, 0-2, 1-2.
constexpr int link_of(int a, int b) { return a + b - (a == 0 ? 1 : 0); }

/// One rank's body: its number, the plugin, a channel to each other rank.
void rank_body(int me, net_api& api, std::array<channel*, kRanks>& ch) {
    PCHECK_OK(api.init(&log_counter::fn));
    int ndev = 0;
    PCHECK_OK(api.devices(&ndev));
    PCHECK(ndev == 2);

    // The process identity each rank's links will report as their peer.
    const stats_file st0 = read_stats();
    std::array<std::string, kRanks> identity;
    identity[size_t(me)] = st0.process;
    PCHECK(!identity[size_t(me)].empty());
    for (int p = 0; p < kRanks; ++p) {
        if (p == me) continue;
        char mine[sizeof(st0.process)] = {}, theirs[sizeof(st0.process)] = {};
        // The identity as the file holds it, always NUL-terminated here.
        std::memcpy(mine, st0.process, sizeof(mine) - 1);
        ch[size_t(p)]->send(mine, sizeof(mine));
        ch[size_t(p)]->recv(theirs, sizeof(theirs));
        identity[size_t(p)] = theirs;
    }

    // A listener per peer; its handle goes to that peer.
    std::array<void*, kRanks> lc{}, sc{}, rc{};
    std::array<std::array<char, NCCL_NET_HANDLE_MAXSIZE>, kRanks> peer_handle{};
    for (int p = 0; p < kRanks; ++p) {
        if (p == me) continue;
        char h[NCCL_NET_HANDLE_MAXSIZE] = {};
        PCHECK_OK(api.listen(0, h, &lc[size_t(p)]));
        ch[size_t(p)]->send(h, sizeof(h));
        ch[size_t(p)]->recv(peer_handle[size_t(p)].data(), NCCL_NET_HANDLE_MAXSIZE);
    }
    // Device 0 reaches only one of the two peers; NCCL may name it for both.
    const uint64_t deadline = mono_ns() + 30'000'000'000ull;
    for (bool all = false; !all;) {
        PCHECK(mono_ns() < deadline);
        all = true;
        for (int p = 0; p < kRanks; ++p) {
            if (p == me) continue;
            if (!sc[size_t(p)]) PCHECK_OK(api.connect(0, peer_handle[size_t(p)].data(), &sc[size_t(p)]));
            if (!rc[size_t(p)]) PCHECK_OK(api.accept(lc[size_t(p)], &rc[size_t(p)]));
            all = all && sc[size_t(p)] && rc[size_t(p)];
        }
    }

    // To each peer a message of its own; from each the one it made for us.
    constexpr size_t kLen = 64 << 10;
    std::array<std::vector<unsigned char>, kRanks> tx, rx;
    std::array<void*, kRanks> sreq{}, rreq{};
    for (int p = 0; p < kRanks; ++p) {
        if (p == me) continue;
        tx[size_t(p)].resize(kLen);
        rx[size_t(p)].assign(kLen, 0);
        fill(tx[size_t(p)], kLen, uint32_t(10 * me + p));
        void* rdata = rx[size_t(p)].data();
        size_t rsize = kLen;
        int tag = 7;
        void* mh = nullptr;
        // A request may be refused for now (null): try again, bounded.
        const uint64_t t = mono_ns();
        while (!rreq[size_t(p)]) {
            PCHECK(mono_ns() - t < 10'000'000'000ull);
            PCHECK_OK(api.irecv(rc[size_t(p)], 1, &rdata, &rsize, &tag, &mh, &rreq[size_t(p)]));
        }
        while (!sreq[size_t(p)]) {
            PCHECK(mono_ns() - t < 10'000'000'000ull);
            PCHECK_OK(api.isend(sc[size_t(p)], tx[size_t(p)].data(), kLen, 7, nullptr, &sreq[size_t(p)]));
        }
    }
    for (int p = 0; p < kRanks; ++p) {
        if (p == me) continue;
        int size = 0;
        wait_done(api, sreq[size_t(p)], &size);
        wait_done(api, rreq[size_t(p)], &size);
        PCHECK(size == int(kLen));
        PCHECK(matches(rx[size_t(p)], kLen, uint32_t(10 * p + me)));
    }

    // Each link: the peer the triangle says, one connection each way.
    const stats_file st = read_stats();
    PCHECK(st.nlinks == 2u);
    for (uint32_t l = 0; l < st.nlinks; ++l) {
        const stats_link& k = st.links[l];
        const std::string name = k.name;
        int peer = -1;
        for (int p = 0; p < kRanks; ++p)
            if (p != me && name == "loopback" + std::to_string(link_of(std::min(me, p), std::max(me, p)))) peer = p;
        PCHECK(peer >= 0);
        if (identity[size_t(peer)] != k.peer)
            throw check_failed("rank " + std::to_string(me) + ": link " + name + " reaches '" + k.peer +
                               "', expected rank " + std::to_string(peer) + " '" + identity[size_t(peer)] + "'");
        PCHECK(k.send_comms == 1u);
        PCHECK(k.recv_comms == 1u);
        PCHECK(k.rx_bytes == kLen);
    }
    for (int p = 0; p < kRanks; ++p) {
        if (p == me) continue;
        ch[size_t(p)]->barrier();
    }
    for (int p = 0; p < kRanks; ++p) {
        if (p == me) continue;
        PCHECK_OK(api.close_send(sc[size_t(p)]));
        PCHECK_OK(api.close_recv(rc[size_t(p)]));
        PCHECK_OK(api.close_listen(lc[size_t(p)]));
    }
    for (int p = 0; p < kRanks; ++p) {
        if (p == me) continue;
        ch[size_t(p)]->barrier();
    }
    PCHECK_OK(api.finalize());
}

TEST(PluginMesh, EachConnectionTakesTheLinkToItsPeerWhicheverDeviceNcclNames) {
    char tmpl[] = "/tmp/odl-plugin-mesh-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl;
    setenv("ODL_RUNTIME_DIR", dir.c_str(), 1);
    setenv("ODL_LOOPBACK_NAMESPACE", ("plugmesh-" + std::to_string(getpid())).c_str(), 1);
    // A socketpair per pair of ranks: fd[a][b] is a's end towards b.
    std::array<std::array<int, kRanks>, kRanks> fd{};
    for (int a = 0; a < kRanks; ++a)
        for (int b = a + 1; b < kRanks; ++b) {
            int sv[2];
            ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
            fd[size_t(a)][size_t(b)] = sv[0];
            fd[size_t(b)][size_t(a)] = sv[1];
        }
    std::fflush(nullptr);
    std::array<pid_t, kRanks> pids{};
    for (int me = 0; me < kRanks; ++me) {
        pids[size_t(me)] = fork();
        ASSERT_GE(pids[size_t(me)], 0);
        if (pids[size_t(me)] != 0) continue;
        alarm(90);
        int rc = 0;
        try {
            // The links touching this rank, lower device first.
            std::string devices;
            for (int p = 0; p < kRanks; ++p)
                if (p != me)
                    devices += (devices.empty() ? "" : ",") + std::string("loopback:") +
                               std::to_string(link_of(std::min(me, p), std::max(me, p)));
            setenv("ODL_NCCL_DEVICES", devices.c_str(), 1);
            std::array<std::unique_ptr<channel>, kRanks> owned;
            std::array<channel*, kRanks> ch{};
            for (int p = 0; p < kRanks; ++p)
                if (p != me) {
                    owned[size_t(p)] = std::make_unique<channel>(fd[size_t(me)][size_t(p)]);
                    ch[size_t(p)] = owned[size_t(p)].get();
                }
            loaded_plugin lp(plugin_path(), 12);
            rank_body(me, lp.api(), ch);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "rank %d: %s\n", me, e.what());
            log_counter::dump();
            rc = 1;
        }
        std::fflush(nullptr);
        _exit(rc);
    }
    for (auto& row : fd)
        for (int f : row)
            if (f > 0) close(f);
    for (int me = 0; me < kRanks; ++me) {
        int status = 0;
        ASSERT_EQ(waitpid(pids[size_t(me)], &status, 0), pids[size_t(me)]);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "rank " << me << " failed (status " << status << ")";
    }
    std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace odl::plugin::test
