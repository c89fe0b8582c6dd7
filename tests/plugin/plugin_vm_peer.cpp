// SPDX-License-Identifier: MIT
// One side of the plugin harness across two hosts (tests/vm/plugin_vm_test.sh
// runs it in each VM over the kernel backend). It dlopen()s the plugin as
// NCCL does, listens, writes its 128-byte handle as hex to DIR/handle.hex,
// waits for the peer's in DIR/peer.hex (the host script carries it over),
// then connects and accepts in one thread without blocking, exchanges
// messages of 0 B ... 4 MiB both ways with every byte checked, keeps 8
// requests in flight tested in reverse order, closes and finalizes. Every
// wait has a deadline; the exit status says whether every check passed.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "net_api.h"

namespace {

using odl::plugin::test::loaded_plugin;
using odl::plugin::test::net_api;

struct failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};
#define CHECK(cond, what)                                                                        \
    do {                                                                                         \
        if (!(cond)) throw failure(std::string(what) + " (line " + std::to_string(__LINE__) + ")"); \
    } while (0)
#define CHECK_OK(expr) CHECK((expr) == ncclSuccess, #expr)

uint64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void log_fn(ncclDebugLogLevel lvl, unsigned long, const char*, int, const char* fmt, ...) {
    if (lvl != NCCL_LOG_WARN && !std::getenv("ODL_VM_PEER_VERBOSE")) return;
    va_list ap;
    va_start(ap, fmt);
    std::vfprintf(stderr, fmt, ap);
    va_end(ap);
    std::fputc('\n', stderr);
}

unsigned char pattern_byte(uint32_t seed, size_t i) { return static_cast<unsigned char>(seed * 131u + i * 7u + (i >> 8)); }

std::string to_hex(const unsigned char* p, size_t n) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < n; ++i) {
        s += d[p[i] >> 4];
        s += d[p[i] & 15];
    }
    return s;
}

bool from_hex(const std::string& s, unsigned char* out, size_t n) {
    if (s.size() < 2 * n) return false;
    for (size_t i = 0; i < n; ++i) {
        unsigned v = 0;
        if (std::sscanf(s.c_str() + 2 * i, "%2x", &v) != 1) return false;
        out[i] = static_cast<unsigned char>(v);
    }
    return true;
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

class peer {
public:
    peer(net_api& api, const options& o) : m_api(api), m_o(o), m_deadline(mono_ns() + uint64_t(o.timeout_s) * 1000000000ull) {}

    void run() {
        CHECK_OK(m_api.init(&log_fn));
        m_inited = true;
        int ndev = 0;
        CHECK_OK(m_api.devices(&ndev));
        CHECK(ndev >= 1, "no NCCL device");
        handshake();
        const size_t sizes[] = {0, 1, 7, 4095, 4096, 4097, 65536, (1u << 20) + 3, 4u << 20};
        int tag = 0;
        for (size_t n : sizes) exchange(n, 1, ++tag);
        exchange(256 << 10, 8, 100);  // 8 in flight each way, tested in reverse
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
            CHECK(mono_ns() - t < 2'000'000'000ull, "connect blocked");
            t = mono_ns();
            if (!m_rc) CHECK_OK(m_api.accept(m_lc, &m_rc));
            CHECK(mono_ns() - t < 2'000'000'000ull, "accept blocked");
            if (!m_sc || !m_rc) usleep(1000);
        }
        std::printf("plugin_vm_peer %c: connected\n", m_o.role);
        std::fflush(stdout);
    }

    uint32_t seed(char role, int tag, int k) const { return uint32_t(role) * 100000u + uint32_t(tag) * 16u + uint32_t(k); }

    /// @count messages of @n bytes each way with tags @tag..; receive
    /// buffers larger than the message; every byte checked.
    void exchange(size_t n, int count, int tag) {
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
                CHECK_OK(m_api.irecv(m_rc, 1, &d, &cap, &t, nullptr, &r));
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
                CHECK_OK(m_api.isend(m_sc, b.data(), n, tag + k, nullptr, &r));
            }
            reqs.push_back(r);
        }
        std::vector<int> got(reqs.size(), -1);
        for (size_t left = reqs.size(); left;) {
            check_time(("messages of " + std::to_string(n) + " bytes").c_str());
            for (size_t i = reqs.size(); i-- > 0;) {  // newest first: out of order
                if (got[i] >= 0) continue;
                int done = 0, sz = -1;
                CHECK_OK(m_api.test(reqs[i], &done, &sz));
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
    try {
        loaded_plugin lp(o.plugin, o.version);
        peer p(lp.api(), o);
        p.run();
    } catch (const std::exception& e) {
        std::printf("plugin_vm_peer %c: FAIL: %s\n", o.role, e.what());
        return 1;
    }
    return 0;
}
