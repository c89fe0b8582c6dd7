// SPDX-License-Identifier: MIT
// One side of the plugin harness across two hosts (tests/vm/plugin_vm_test.sh
// runs it in each VM over the kernel backend). It dlopen()s the plugin as
// NCCL does, listens on the table of --version (v12 by default), writes its
// 128-byte handle as hex to DIR/handle.hex, waits for the peer's in
// DIR/peer.hex (the host script carries it over), then connects and accepts
// in one thread without blocking and exchanges messages of 0 B ... 4 MiB both
// ways with every byte checked, 8 requests in flight tested in reverse order.
// That first connection then carries pair_harness.h's channel, so the rest
// reuses the loopback harness (connect_both, wait_done, fill/matches,
// PCHECK): for each table v8 ... v12 its properties, local bad arguments, a
// connection exchange (a few sizes, 8 in flight out of order, a grouped
// receive placing out-of-order tags, bad arguments on real comms); on the
// --version table the request limits (256 sends / 32 receives in flight, the
// next refused) and close with requests pending, then reconnect and exchange.
// Every wait has a deadline; the exit status says whether every check passed.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#define ODL_PAIR_HARNESS_NO_GTEST  // no fork, no gtest: the peer is in the other VM
#include "pair_harness.h"
#include "tools/hex.h"

namespace {

using namespace odl::plugin::test;
using odl::plugin::caller::from_hex;
using odl::plugin::caller::to_hex;

struct failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
#define CHECK(cond, what)                                                                        \
    do {                                                                                         \
        if (!(cond)) throw failure(std::string(what) + " (line " + std::to_string(__LINE__) + ")"); \
    } while (0)
#define CHECK_OK(expr) CHECK((expr) == ncclSuccess, #expr)

/// The plugin's warnings (the bad-argument checks cause many) are kept, the
/// last 200, and printed only if a check fails; ODL_VM_PEER_VERBOSE=1 prints
/// every line as it comes.
std::mutex g_log_mu;
std::deque<std::string> g_warnings;

void log_fn(ncclDebugLogLevel lvl, unsigned long, const char*, int, const char* fmt, ...) {
    const bool verbose = std::getenv("ODL_VM_PEER_VERBOSE") != nullptr;
    if (lvl != NCCL_LOG_WARN && !verbose) return;
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    std::vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (verbose) {
        std::fprintf(stderr, "%s\n", buf);
        return;
    }
    std::lock_guard<std::mutex> lk(g_log_mu);
    g_warnings.emplace_back(buf);
    if (g_warnings.size() > 200) g_warnings.pop_front();
}

void dump_warnings() {
    std::lock_guard<std::mutex> lk(g_log_mu);
    for (const auto& w : g_warnings) std::fprintf(stderr, "plugin warning: %s\n", w.c_str());
}

struct options {
    std::string plugin, dir;
    char role = 0;  ///< 'A' or 'B': only seeds the byte patterns
    int version = 12;
    int timeout_s = 180;
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "plugin_vm_peer: %s\nusage: plugin_vm_peer --plugin SO --dir DIR --role A|B [--version 8-12] "
                 "[--timeout S]\n",
                 why);
    std::exit(2);
}

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) usage(("missing value after " + a).c_str());
        const char* v = argv[++i];
        if (a == "--plugin") o.plugin = v;
        else if (a == "--dir") o.dir = v;
        else if (a == "--role" && (std::strcmp(v, "A") == 0 || std::strcmp(v, "B") == 0)) o.role = v[0];
        else if (a == "--version") o.version = std::atoi(v);
        else if (a == "--timeout") o.timeout_s = std::atoi(v);
        else usage(("bad option " + a + " " + v).c_str());
    }
    if (o.plugin.empty() || o.dir.empty() || !o.role) usage("--plugin, --dir and --role are required");
    if (o.version < 8 || o.version > 12) usage("--version must be 8-12");
    if (o.timeout_s < 1 || o.timeout_s > 3600) usage("--timeout must be 1-3600");
    return o;
}

constexpr uint64_t kMaxCallNs = 2'000'000'000ull;  // connect/accept/close: TCG guests are slow
constexpr int kChannelTag = 4242;                  // the channel's messages on the first connection

/// pair_harness.h's channel over a plugin connection: each send is one
/// message of n bytes with kChannelTag, each recv takes one and checks its
/// size. Sends do not wait for the peer (their requests are reaped later).
class plugin_channel {
public:
    plugin_channel(net_api& api, void* sc, void* rc) : m_api(api), m_sc(sc), m_rc(rc) {}
    void send(const void* p, size_t n) {
        auto buf = std::make_unique<std::vector<unsigned char>>(static_cast<const unsigned char*>(p),
                                                                 static_cast<const unsigned char*>(p) + n);
        void* r = nullptr;
        const uint64_t deadline = mono_ns() + 30'000'000'000ull;
        while (!r) {  // NULL: request limit, reap and try again
            PCHECK(mono_ns() < deadline);
            PCHECK_OK(m_api.isend(m_sc, buf->data(), n, kChannelTag, nullptr, &r));
            if (!r) reap();
        }
        m_sends.push_back({r, std::move(buf)});
        reap();
    }
    void recv(void* p, size_t n) {
        std::vector<unsigned char> b(n + 1);  // one byte spare: a longer message shows
        void* d = b.data();
        size_t cap = b.size();
        int tag = kChannelTag;
        void* r = nullptr;
        const uint64_t deadline = mono_ns() + 60'000'000'000ull;
        while (!r) {
            PCHECK(mono_ns() < deadline);
            PCHECK_OK(m_api.irecv(m_rc, 1, &d, &cap, &tag, nullptr, &r));
        }
        for (int done = 0, sz = -1; !done;) {
            PCHECK(mono_ns() < deadline);
            PCHECK_OK(m_api.test(r, &done, &sz));
            if (done) PCHECK(sz == int(n));
            reap();
        }
        std::memcpy(p, b.data(), n);
    }
    /// Every send done (before the connection closes).
    void drain() {
        const uint64_t deadline = mono_ns() + 30'000'000'000ull;
        while (!m_sends.empty()) {
            PCHECK(mono_ns() < deadline);
            reap();
        }
    }

private:
    struct pending_send {
        void* req;
        std::unique_ptr<std::vector<unsigned char>> buf;
    };
    void reap() {
        for (size_t i = 0; i < m_sends.size();) {
            int done = 0;
            PCHECK_OK(m_api.test(m_sends[i].req, &done, nullptr));
            if (done) m_sends.erase(m_sends.begin() + long(i));
            else ++i;
        }
    }
    net_api& m_api;
    void *m_sc, *m_rc;
    std::vector<pending_send> m_sends;
};

void close_all(net_api& a, conn_pair& c) {
    uint64_t t = mono_ns();
    PCHECK_OK(a.close_send(c.sc));
    PCHECK_OK(a.close_recv(c.rc));
    PCHECK_OK(a.close_listen(c.lc));
    PCHECK(mono_ns() - t < kMaxCallNs);  // close never waits
    c = conn_pair{};
}

class peer {
public:
    peer(net_api& api, const options& o) : m_api(api), m_o(o), m_deadline(mono_ns() + uint64_t(o.timeout_s) * 1000000000ull) {}

    void run() {
        CHECK_OK(m_api.init(&log_fn));
        m_inited = true;
        int ndev = 0;
        CHECK_OK(m_api.devices(&ndev));
        CHECK(ndev >= 1, "no NCCL device");
        // The speed NCCL is told: the link's trained rate (the test script
        // compares it with the testbed's cable).
        common_props props;
        CHECK_OK(m_api.props(0, &props));
        std::printf("plugin_vm_peer %c: speed %d Mb/s\n", m_o.role, props.speed);
        std::fflush(stdout);
        handshake();
        uint64_t t0 = mono_ns();
        const size_t sizes[] = {0, 1, 7, 4095, 4096, 4097, 65536, (1u << 20) + 3, 4u << 20};
        int tag = 0;
        for (size_t n : sizes) exchange(m_api, m_sc, m_rc, n, 1, ++tag);
        exchange(m_api, m_sc, m_rc, 256 << 10, 8, 100);  // 8 in flight each way, tested in reverse
        phase_done("sizes 0 B-4 MiB, 8 x 256 KiB in flight", t0);

        // From here on the harness's channel runs over this connection.
        plugin_channel pc(m_api, m_sc, m_rc);
        channel ch([&pc](const void* p, size_t n) { pc.send(p, n); }, [&pc](void* p, size_t n) { pc.recv(p, n); });
        for (int v = 8; v <= 12; ++v) {
            t0 = mono_ns();
            version_round(v, ch);
            phase_done(("v" + std::to_string(v) + " table").c_str(), t0);
        }
        side s{m_api, ch, m_o.role == 'A'};
        t0 = mono_ns();
        request_limits(s);
        phase_done("request limits", t0);
        t0 = mono_ns();
        close_pending_then_reconnect(s);
        phase_done("close with requests pending, reconnect", t0);
        ch.barrier();
        pc.drain();

        fin();
        CHECK_OK(m_api.close_send(m_sc));
        CHECK_OK(m_api.close_recv(m_rc));
        CHECK_OK(m_api.close_listen(m_lc));
        m_sc = m_rc = m_lc = nullptr;
        CHECK_OK(m_api.finalize());
        m_inited = false;
        std::printf("plugin_vm_peer %c: OK, %d messages each way, %llu bytes each way, checked\n", m_o.role, m_msgs,
                    static_cast<unsigned long long>(m_bytes));
    }

    ~peer() {
        if (m_inited) m_api.finalize();  // best effort after a failure: joins the plugin's threads
    }

private:
    void check_time(const char* what) const { CHECK(mono_ns() < m_deadline, std::string("timed out: ") + what); }

    void phase_done(const char* what, uint64_t t0) {
        std::printf("plugin_vm_peer %c: %s OK (%.1f s)\n", m_o.role, what, double(mono_ns() - t0) / 1e9);
        std::fflush(stdout);
    }

    void handshake() {
        unsigned char h[NCCL_NET_HANDLE_MAXSIZE] = {}, ph[NCCL_NET_HANDLE_MAXSIZE] = {};
        CHECK_OK(m_api.listen(0, h, &m_lc));
        CHECK(m_lc, "listen gave no comm");
        const std::string mine = m_o.dir + "/handle.hex", theirs = m_o.dir + "/peer.hex";
        {
            std::ofstream f(mine + ".tmp");
            f << to_hex(h, sizeof(h)) << "\n";
            CHECK(f.good(), "cannot write " + mine);
        }
        CHECK(std::rename((mine + ".tmp").c_str(), mine.c_str()) == 0, "cannot rename " + mine);
        for (;;) {  // the host script copies the peer's handle here
            std::ifstream f(theirs);
            std::string line;
            if (f && std::getline(f, line) && !line.empty()) {
                CHECK(from_hex(line, ph, sizeof(ph)), "malformed " + theirs);
                break;
            }
            check_time("waiting for the peer's handle");
            usleep(100'000);
        }
        // connect/accept alternated in one thread: neither may block.
        while (!m_sc || !m_rc) {
            check_time("connect/accept");
            uint64_t t = mono_ns();
            if (!m_sc) CHECK_OK(m_api.connect(0, ph, &m_sc));
            CHECK(mono_ns() - t < kMaxCallNs, "connect blocked");
            t = mono_ns();
            if (!m_rc) CHECK_OK(m_api.accept(m_lc, &m_rc));
            CHECK(mono_ns() - t < kMaxCallNs, "accept blocked");
            if (!m_sc || !m_rc) usleep(1000);
        }
        std::printf("plugin_vm_peer %c: connected\n", m_o.role);
        std::fflush(stdout);
    }

    uint32_t seed(char role, int tag, int k) const { return uint32_t(role) * 100000u + uint32_t(tag) * 16u + uint32_t(k); }

    /// @count messages of @n bytes each way on @sc/@rc with tags @tag..;
    /// receive buffers larger than the message; test() newest first; every
    /// byte checked.
    void exchange(net_api& a, void* sc, void* rc, size_t n, int count, int tag) {
        const char other = m_o.role == 'A' ? 'B' : 'A';
        const size_t nc = size_t(count);
        std::vector<std::vector<unsigned char>> tx(nc), rx(nc);
        std::vector<void*> reqs;
        for (int k = 0; k < count; ++k) {
            rx[size_t(k)].assign(n + 64, 0xee);
            void* d = rx[size_t(k)].data();
            size_t cap = rx[size_t(k)].size();
            int t = tag + k;
            void* r = nullptr;
            while (!r) {  // NULL: request limit, try again
                check_time("irecv");
                CHECK_OK(a.irecv(rc, 1, &d, &cap, &t, nullptr, &r));
            }
            reqs.push_back(r);
        }
        for (int k = 0; k < count; ++k) {
            auto& b = tx[size_t(k)];
            b.resize(n);
            for (size_t i = 0; i < n; ++i) b[i] = pattern_byte(seed(m_o.role, tag, k), i);
            void* r = nullptr;
            while (!r) {
                check_time("isend");
                CHECK_OK(a.isend(sc, b.data(), n, tag + k, nullptr, &r));
            }
            reqs.push_back(r);
        }
        std::vector<int> got(reqs.size(), -1);
        for (size_t left = reqs.size(); left;) {
            check_time(("messages of " + std::to_string(n) + " bytes").c_str());
            for (size_t i = reqs.size(); i-- > 0;) {  // newest first: out of order
                if (got[i] >= 0) continue;
                int done = 0, sz = -1;
                CHECK_OK(a.test(reqs[i], &done, &sz));
                if (!done) continue;
                got[i] = sz;
                --left;
            }
        }
        for (int k = 0; k < count; ++k) {
            CHECK(got[size_t(k)] == int(n), "receive of " + std::to_string(n) + " bytes reported " + std::to_string(got[size_t(k)]));
            CHECK(got[size_t(count + k)] == int(n), "send of " + std::to_string(n) + " bytes reported " + std::to_string(got[size_t(count + k)]));
            const auto& b = rx[size_t(k)];
            for (size_t i = 0; i < n; ++i)
                CHECK(b[i] == pattern_byte(seed(other, tag, k), i),
                      "byte " + std::to_string(i) + " of a " + std::to_string(n) + "-byte message is wrong");
            for (size_t i = n; i < b.size(); ++i) CHECK(b[i] == 0xee, "written beyond a " + std::to_string(n) + "-byte message");
            ++m_msgs;
            m_bytes += n;
        }
    }

    /// One table: its properties, local bad arguments, then a connection
    /// made through the channel with a small exchange, a grouped receive and
    /// bad arguments on real comms.
    void version_round(int v, channel& ch) {
        loaded_plugin lp(m_o.plugin, v);  // the same library again, another table
        net_api& a = lp.api();
        PCHECK(a.version() == v && std::string(a.name()) == "ODL");
        PCHECK_OK(a.init(&log_fn));
        int n = 0;
        PCHECK_OK(a.devices(&n));
        PCHECK(n == 1);
        common_props p;
        PCHECK_OK(a.props(0, &p));
        std::string want = std::getenv("ODL_NCCL_DEVICES");  // e.g. kernel:0 is device "kernel0"
        want.erase(std::remove(want.begin(), want.end(), ':'), want.end());
        PCHECK(p.name == want);
        PCHECK(p.ptr_support == NCCL_PTR_HOST && p.max_recvs == 8);
        // Fields after vProps land right only if the struct layout is right.
        if (v >= 9) PCHECK(p.vdevs == 1 && p.max_p2p == (size_t(1) << 30));
        if (v >= 11) PCHECK(p.max_multi == 1);
        if (v >= 12) PCHECK(p.rail == NCCL_NET_ID_UNDEF);
        bad_arguments_local(a);

        side s{a, ch, m_o.role == 'A'};
        conn_pair c = connect_both(s, kMaxCallNs);
        const size_t sizes[] = {0, 1, 4097, 65536 + 3};
        int tag = 200 + 10 * v;
        for (size_t len : sizes) exchange(a, c.sc, c.rc, len, 1, ++tag);
        exchange(a, c.sc, c.rc, 4096, 8, 2000 + 10 * v);  // 8 in flight each way, out of order
        grouped_receive(s, c);
        bad_arguments_on_comms(s, c);
        s.ch.barrier();
        close_all(a, c);
        PCHECK_OK(a.finalize());
    }

    /// Each side sends tags 12, 10, 13, 11 and receives them with one
    /// grouped irecv listing 10, 11, 12, 13: tags, not order, place them.
    void grouped_receive(side& s, conn_pair& c) {
        const uint32_t me = s.server ? 1000 : 2000, other = s.server ? 2000 : 1000;
        const int stags[4] = {12, 10, 13, 11};
        const size_t lens[4] = {100, 200, 300, 400};
        std::vector<std::vector<unsigned char>> out(4, std::vector<unsigned char>(400));
        void* sreqs[4] = {};
        for (int i = 0; i < 4; ++i) {
            fill(out[size_t(i)], lens[i], me + uint32_t(stags[i]));
            PCHECK_OK(s.api.isend(c.sc, out[size_t(i)].data(), lens[i], stags[i], nullptr, &sreqs[i]));
            PCHECK(sreqs[i]);
        }
        std::vector<std::vector<unsigned char>> in(4, std::vector<unsigned char>(1000));
        void* data[4];
        size_t caps[4];
        int rtags[4] = {10, 11, 12, 13};
        for (int i = 0; i < 4; ++i) {
            data[i] = in[size_t(i)].data();
            caps[i] = 1000;
        }
        void* req = nullptr;
        PCHECK_OK(s.api.irecv(c.rc, 4, data, caps, rtags, nullptr, &req));
        PCHECK(req);
        int got[4] = {-1, -1, -1, -1};
        wait_done(s.api, req, got);
        PCHECK(got[0] == 200 && got[1] == 400 && got[2] == 100 && got[3] == 300);
        for (int i = 0; i < 4; ++i) PCHECK(matches(in[size_t(i)], size_t(got[i]), other + uint32_t(rtags[i])));
        for (int i = 3; i >= 0; --i) wait_done(s.api, sreqs[i], nullptr);
        m_msgs += 4;
        m_bytes += 1000;
    }

    /// Calls refused before any connection (as on loopback; connecting to
    /// one's own handle is left out: a kernel link does reach a process).
    void bad_arguments_local(net_api& a) {
        common_props p;
        PCHECK(a.props(-1, &p) != ncclSuccess);
        PCHECK(a.props(1, &p) != ncclSuccess);
        char h[NCCL_NET_HANDLE_MAXSIZE] = {};
        void* lc = nullptr;
        PCHECK(a.listen(7, h, &lc) != ncclSuccess);
        void* sc = nullptr;
        PCHECK(a.connect(0, h, &sc) == ncclInternalError && sc == nullptr);  // all zero: not our handle
        refuses_foreign_objects(a);
    }

    /// Misuse of real comms is refused; a request is dead once test()
    /// reported it done.
    void bad_arguments_on_comms(side& s, conn_pair& c) {
        net_api& a = s.api;
        char data[16] = {};
        void* mh = nullptr;
        PCHECK(a.reg_mr(c.sc, data, 16, NCCL_PTR_CUDA, &mh) == ncclInternalError);
        void* d[9];
        size_t caps[9] = {};
        int tags[9] = {};
        for (auto& x : d) x = data;
        void* req = nullptr;
        PCHECK(a.irecv(c.rc, 0, d, caps, tags, nullptr, &req) == ncclInternalError);
        PCHECK(a.irecv(c.rc, 9, d, caps, tags, nullptr, &req) == ncclInternalError);
        PCHECK(a.irecv(c.sc, 1, d, caps, tags, nullptr, &req) == ncclInternalError);  // a send comm
        PCHECK(a.isend(c.rc, data, 16, 0, nullptr, &req) == ncclInternalError);       // a receive comm
        PCHECK(a.isend(c.sc, nullptr, 16, 0, nullptr, &req) == ncclInternalError);
        req = reinterpret_cast<void*>(0x1);
        PCHECK_OK(a.iflush(c.rc, data, 16, nullptr, &req));
        PCHECK(req == nullptr);  // host memory: nothing to flush
        void* r = nullptr;
        PCHECK_OK(a.isend(c.sc, data, 0, 0, nullptr, &r));
        PCHECK(r);
        wait_done(a, r, nullptr);
        int done = 0;
        PCHECK(a.test(r, &done, nullptr) == ncclInternalError);
        void* rr = nullptr;
        d[0] = data;
        caps[0] = 16;
        PCHECK_OK(a.irecv(c.rc, 1, d, caps, tags, nullptr, &rr));
        PCHECK(rr);
        int sz = -1;
        wait_done(a, rr, &sz);
        PCHECK(sz == 0);
        PCHECK(a.test(rr, &done, nullptr) == ncclInternalError);
    }

    /// Both ways: 256 sends in flight (32 requests x maxRecvs 8), the next
    /// refused; receives 8 rounds of 32, the 33rd refused; test() newest
    /// first; receives match sends in posting order.
    void request_limits(side& s) {
        net_api& a = s.api;
        conn_pair c = connect_both(s, kMaxCallNs);
        constexpr size_t kLen = 256;
        const uint32_t me = s.server ? 10000 : 20000, other = s.server ? 20000 : 10000;
        std::vector<std::vector<unsigned char>> out(257, std::vector<unsigned char>(kLen));
        std::vector<void*> sreqs;
        for (uint32_t i = 0; i < 256; ++i) {
            fill(out[i], kLen, me + i);
            void* r = nullptr;
            PCHECK_OK(a.isend(c.sc, out[i].data(), kLen, 1, nullptr, &r));
            PCHECK(r);
            sreqs.push_back(r);
        }
        void* extra = reinterpret_cast<void*>(0x1);
        PCHECK_OK(a.isend(c.sc, out[256].data(), kLen, 1, nullptr, &extra));
        PCHECK(extra == nullptr);
        std::vector<std::vector<unsigned char>> in(33, std::vector<unsigned char>(kLen));
        for (uint32_t round = 0; round < 8; ++round) {
            std::vector<void*> reqs;
            for (int i = 0; i < 32; ++i) {
                void* d = in[size_t(i)].data();
                size_t cap = kLen;
                int tag = 1;
                // NCCL may pre-store this; the plugin must overwrite it.
                void* r = reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION);
                PCHECK_OK(a.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &r));
                PCHECK(r && r != reinterpret_cast<void*>(NCCL_NET_OPTIONAL_RECV_COMPLETION));
                reqs.push_back(r);
            }
            void* d = in[32].data();
            size_t cap = kLen;
            int tag = 1;
            void* more = reinterpret_cast<void*>(0x1);
            PCHECK_OK(a.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &more));
            PCHECK(more == nullptr);  // 32 receive requests per comm
            for (int i = 31; i >= 0; --i) {
                int n = 0;
                wait_done(a, reqs[size_t(i)], &n);
                PCHECK(n == int(kLen));
                PCHECK(matches(in[size_t(i)], kLen, other + round * 32 + uint32_t(i)));
            }
            m_msgs += 32;
            m_bytes += 32 * kLen;
        }
        for (size_t i = sreqs.size(); i-- > 0;) wait_done(a, sreqs[i], nullptr);
        s.ch.barrier();
        close_all(a, c);
    }

    /// Closes comms with unmatched receives and an 8 MiB send pending, then
    /// a new connection (which may reuse the stream) works undisturbed.
    void close_pending_then_reconnect(side& s) {
        net_api& a = s.api;
        std::vector<unsigned char> buf(4096), big(8u << 20);
        {
            conn_pair c = connect_both(s, kMaxCallNs);
            for (int i = 0; i < 4; ++i) {
                void* d = buf.data();
                size_t cap = buf.size();
                int tag = 99;
                void* r = nullptr;
                PCHECK_OK(a.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &r));
                PCHECK(r);
            }
            void* r = nullptr;
            PCHECK_OK(a.isend(c.sc, big.data(), big.size(), 7, nullptr, &r));
            PCHECK(r);
            s.ch.barrier();
            close_all(a, c);
        }
        s.ch.barrier();
        conn_pair c = connect_both(s, kMaxCallNs);
        fill(buf, 4096, s.server ? 11 : 22);
        std::vector<unsigned char> rx(4096 + 64, 0xee);
        void* d = rx.data();
        size_t cap = rx.size();
        int tag = 7;
        void *sreq = nullptr, *rreq = nullptr;
        PCHECK_OK(a.irecv(c.rc, 1, &d, &cap, &tag, nullptr, &rreq));
        PCHECK_OK(a.isend(c.sc, buf.data(), 4096, 7, nullptr, &sreq));
        PCHECK(sreq && rreq);
        int n = 0;
        wait_done(a, sreq, nullptr);
        wait_done(a, rreq, &n);
        PCHECK(n == 4096 && matches(rx, 4096, s.server ? 22 : 11));
        PCHECK(rx[4096] == 0xee);
        ++m_msgs;
        m_bytes += 4096;
        s.ch.barrier();
        close_all(a, c);
    }

    /// Both sides got everything before either closes.
    void fin() {
        unsigned char out = static_cast<unsigned char>(m_o.role), in = 0;
        void* d = &in;
        size_t cap = 1;
        int t = 999;
        void *rr = nullptr, *sr = nullptr;
        while (!rr) {
            check_time("fin irecv");
            CHECK_OK(m_api.irecv(m_rc, 1, &d, &cap, &t, nullptr, &rr));
        }
        while (!sr) {
            check_time("fin isend");
            CHECK_OK(m_api.isend(m_sc, &out, 1, 999, nullptr, &sr));
        }
        for (int done_s = 0, done_r = 0; !done_s || !done_r;) {
            check_time("fin");
            if (!done_s) CHECK_OK(m_api.test(sr, &done_s, nullptr));
            int sz = 0;
            if (!done_r) CHECK_OK(m_api.test(rr, &done_r, &sz));
        }
        CHECK(in == (m_o.role == 'A' ? 'B' : 'A'), "fin message from the wrong side");
    }

    net_api& m_api;
    const options& m_o;
    uint64_t m_deadline;
    bool m_inited = false;
    void *m_lc = nullptr, *m_sc = nullptr, *m_rc = nullptr;
    int m_msgs = 0;
    uint64_t m_bytes = 0;
};

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    if (!std::getenv("ODL_NCCL_DEVICES")) setenv("ODL_NCCL_DEVICES", "kernel:0", 1);
    setenv("ODL_RUNTIME_DIR", o.dir.c_str(), 1);  // the statistics file
    alarm(unsigned(o.timeout_s) + 30);  // backstop: every wait below has its own deadline
    try {
        loaded_plugin lp(o.plugin, o.version);
        peer p(lp.api(), o);
        p.run();
    } catch (const std::exception& e) {
        std::fflush(stdout);
        dump_warnings();
        std::printf("plugin_vm_peer %c: FAIL: %s\n", o.role, e.what());
        return 1;
    }
    return 0;
}
