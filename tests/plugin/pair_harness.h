// SPDX-License-Identifier: MIT
// Two-process harness for plugin tests: forks a peer, gives both sides the
// plugin loaded fresh, a byte channel to swap handles, and checks that throw
// so one scenario body serves both processes.
// Define ODL_PAIR_HARNESS_NO_GTEST before including it to use the channel,
// connect and check helpers without gtest and fork (plugin_vm_peer does,
// across two VMs, with a channel over a plugin connection).
#pragma once

#include <dirent.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#ifndef ODL_PAIR_HARNESS_NO_GTEST
#include <gtest/gtest.h>
#endif

#include "tools/net_api.h"

namespace odl::plugin::test {

using caller::common_props;
using caller::loaded_plugin;
using caller::net_api;

/// Thrown by PCHECK; the side that throws fails (the child through its exit code).
struct check_failed : std::runtime_error {
    using std::runtime_error::runtime_error;
};

#define PCHECK(cond)                                                                                   \
    do {                                                                                               \
        if (!(cond))                                                                                   \
            throw ::odl::plugin::test::check_failed(std::string(__FILE__) + ":" + std::to_string(__LINE__) + \
                                                    ": " #cond);                                       \
    } while (0)
#define PCHECK_OK(expr) PCHECK((expr) == ncclSuccess)

/// Null or foreign comms, requests and handles are refused with
/// ncclInternalError (no connection needed).
inline void refuses_foreign_objects(net_api& a) {
    alignas(16) unsigned char junk[256] = {};
    void* req = nullptr;
    char data[16] = {};
    PCHECK(a.isend(nullptr, data, 16, 0, nullptr, &req) == ncclInternalError);
    PCHECK(a.isend(junk, data, 16, 0, nullptr, &req) == ncclInternalError);
    PCHECK(a.test(nullptr, nullptr, nullptr) == ncclInternalError);
    int done = 0;
    PCHECK(a.test(junk, &done, nullptr) == ncclInternalError);
    PCHECK(a.close_send(nullptr) == ncclInternalError);
    PCHECK(a.close_recv(junk) == ncclInternalError);
    PCHECK(a.close_listen(junk) == ncclInternalError);
    void* mh = nullptr;
    PCHECK(a.reg_mr(junk, data, 16, NCCL_PTR_HOST, &mh) == ncclInternalError);
}

inline uint64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

/// Counts what the plugin logged (its only output path).
/// For debugging a failing test: ODL_TEST_VERBOSE=1 prints every line,
/// =warn only warnings, =buffer keeps every line in memory (timing changes
/// least) and the side that fails prints them.
struct log_counter {
    static inline std::atomic<int> lines{0};
    static inline std::atomic<int> net_lines{0};
    static inline std::atomic<int> warn_lines{0};
    static inline std::mutex mu;
    static inline std::vector<std::string> kept;
    /// One line of NCCL's printf-style logger as a string.
    static std::string line(const char* fmt, va_list ap) {
        char buf[512];
        std::vsnprintf(buf, sizeof(buf), fmt, ap);
        return buf;
    }
    static void fn(ncclDebugLogLevel lvl, unsigned long flags, const char*, int, const char* fmt, ...) {
        const char* v = std::getenv("ODL_TEST_VERBOSE");
        if (v && std::strcmp(v, "buffer") == 0) {
            va_list ap;
            va_start(ap, fmt);
            const std::string l = line(fmt, ap);
            va_end(ap);
            std::lock_guard<std::mutex> lk(mu);
            if (kept.size() < 100000) kept.push_back(std::to_string(mono_ns() / 1000) + " " + l);
        } else if (v && (std::strcmp(v, "warn") != 0 || lvl == NCCL_LOG_WARN)) {
            va_list ap;
            va_start(ap, fmt);
            std::fprintf(stderr, "[%d] ", int(getpid()));
            std::vfprintf(stderr, fmt, ap);
            std::fputc('\n', stderr);
            va_end(ap);
        }
        ++lines;
        if (flags & NCCL_NET_SUBSYS) ++net_lines;
        if (lvl == NCCL_LOG_WARN) ++warn_lines;
    }
    static void dump() {
        std::lock_guard<std::mutex> lk(mu);
        for (const auto& l : kept) std::fprintf(stderr, "[%d] %s\n", int(getpid()), l.c_str());
    }
};

/// A socketpair end: whole messages of a fixed size. Or any other transport
/// given as two functions with the same contract (each call moves one
/// message of exactly n bytes, in order, and throws on failure).
class channel {
public:
    using send_fn = std::function<void(const void*, size_t)>;
    using recv_fn = std::function<void(void*, size_t)>;
    explicit channel(int fd) : m_fd(fd) {}
    channel(send_fn s, recv_fn r) : m_fd(-1), m_send(std::move(s)), m_recv(std::move(r)) {}
    void send(const void* p, size_t n) {
        if (m_send) return m_send(p, n);
        PCHECK(::send(m_fd, p, n, MSG_NOSIGNAL) == ssize_t(n));
    }
    void recv(void* p, size_t n) {
        if (m_recv) return m_recv(p, n);
        size_t got = 0;
        while (got < n) {
            const ssize_t r = ::recv(m_fd, static_cast<char*>(p) + got, n - got, 0);
            PCHECK(r > 0);
            got += size_t(r);
        }
    }
    /// Both sides reach this point before either goes on.
    void barrier() {
        char b = 1;
        send(&b, 1);
        recv(&b, 1);
    }

private:
    int m_fd;
    send_fn m_send;
    recv_fn m_recv;
};

/// One side's view: the plugin, its channel to the other side, its role.
struct side {
    net_api& api;
    channel& ch;
    bool server;  ///< parent process
};

using scenario = std::function<void(side&)>;

#ifndef ODL_PAIR_HARNESS_NO_GTEST
inline std::string plugin_path() { return ODL_PLUGIN_PATH; }

/// Runs @body in two forked processes, each loading the plugin of @version
/// fresh (as two NCCL ranks do) on loopback device 0 of a private namespace.
/// The test process itself never loads it, so no state leaks between tests.
/// @devices: ODL_NCCL_DEVICES for both sides.
inline void run_pair(int version, const scenario& body, int timeout_s = 60, const char* devices = "loopback:0") {
    static int run_no = 0;
    const std::string ns = "plugtest-" + std::to_string(getpid()) + "-" + std::to_string(++run_no);
    setenv("ODL_LOOPBACK_NAMESPACE", ns.c_str(), 1);
    setenv("ODL_NCCL_DEVICES", devices, 1);
    int sv[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    std::fflush(nullptr);
    pid_t pids[2];
    for (int role = 0; role < 2; ++role) {
        pids[role] = fork();
        ASSERT_GE(pids[role], 0);
        if (pids[role] != 0) continue;
        close(sv[1 - role]);
        alarm(unsigned(timeout_s));
        int rc = 0;
        try {
            loaded_plugin lp(plugin_path(), version);
            channel ch(sv[role]);
            side s{lp.api(), ch, role == 0};
            body(s);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "%s (v%d): %s\n", role == 0 ? "server" : "client", version, e.what());
            log_counter::dump();
            rc = 1;
        }
        std::fflush(nullptr);
        _exit(rc);
    }
    close(sv[0]);
    close(sv[1]);
    for (int role = 0; role < 2; ++role) {
        int status = 0;
        ASSERT_EQ(waitpid(pids[role], &status, 0), pids[role]);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << (role == 0 ? "server" : "client") << " process failed (status " << status << ")";
    }
}

#endif  // ODL_PAIR_HARNESS_NO_GTEST

/// A connection each way: both sides listen, swap handles, then call
/// connect and accept alternately in one thread until both exist, checking
/// that no call blocks.
struct conn_pair {
    void* lc = nullptr;
    void* sc = nullptr;
    void* rc = nullptr;
};

inline conn_pair connect_both(side& s, uint64_t max_call_ns = 200'000'000) {
    conn_pair c;
    char h[NCCL_NET_HANDLE_MAXSIZE] = {}, peer[NCCL_NET_HANDLE_MAXSIZE] = {};
    PCHECK_OK(s.api.listen(0, h, &c.lc));
    PCHECK(c.lc != nullptr);
    s.ch.send(h, sizeof(h));
    s.ch.recv(peer, sizeof(peer));
    const uint64_t deadline = mono_ns() + 20'000'000'000ull;
    while (!c.sc || !c.rc) {
        PCHECK(mono_ns() < deadline);
        uint64_t t0 = mono_ns();
        if (!c.sc) PCHECK_OK(s.api.connect(0, peer, &c.sc));
        PCHECK(mono_ns() - t0 < max_call_ns);
        t0 = mono_ns();
        if (!c.rc) PCHECK_OK(s.api.accept(c.lc, &c.rc));
        PCHECK(mono_ns() - t0 < max_call_ns);
    }
    return c;
}

/// @n connections each way on device 0, set up as connect_both does.
inline std::vector<conn_pair> connect_many(side& s, int n, uint64_t max_call_ns = 200'000'000) {
    std::vector<conn_pair> c(static_cast<size_t>(n));
    std::vector<char> mine(size_t(n) * NCCL_NET_HANDLE_MAXSIZE), peer(mine.size());
    for (int i = 0; i < n; ++i) {
        PCHECK_OK(s.api.listen(0, &mine[size_t(i) * NCCL_NET_HANDLE_MAXSIZE], &c[size_t(i)].lc));
        PCHECK(c[size_t(i)].lc != nullptr);
    }
    s.ch.send(mine.data(), mine.size());
    s.ch.recv(peer.data(), peer.size());
    const uint64_t deadline = mono_ns() + 20'000'000'000ull;
    for (bool all = false; !all;) {
        if (mono_ns() >= deadline) {
            std::string miss;
            for (int i = 0; i < n; ++i)
                miss += std::to_string(i) + (c[size_t(i)].sc ? "" : ":no-send") + (c[size_t(i)].rc ? "" : ":no-recv") + " ";
            std::fprintf(stderr, "[%d] connect_many timed out: %s\n", int(getpid()), miss.c_str());
        }
        PCHECK(mono_ns() < deadline);
        all = true;
        for (int i = 0; i < n; ++i) {
            auto& x = c[size_t(i)];
            uint64_t t0 = mono_ns();
            if (!x.sc) PCHECK_OK(s.api.connect(0, &peer[size_t(i) * NCCL_NET_HANDLE_MAXSIZE], &x.sc));
            PCHECK(mono_ns() - t0 < max_call_ns);
            t0 = mono_ns();
            if (!x.rc) PCHECK_OK(s.api.accept(x.lc, &x.rc));
            PCHECK(mono_ns() - t0 < max_call_ns);
            all = all && x.sc && x.rc;
        }
    }
    return c;
}

/// Threads of this process (the plugin starts one per lane).
inline int thread_count() {
    // ThreadSanitizer starts its own background thread at the process's
    // first thread creation: make that happen before anything is counted.
    static const bool settled = [] {
        std::thread([] {}).join();
        return true;
    }();
    (void)settled;
    int n = 0;
    if (DIR* d = opendir("/proc/self/task")) {
        while (dirent* e = readdir(d))
            if (e->d_name[0] != '.') ++n;
        closedir(d);
    }
    return n;
}

/// Polls @req until done; returns the reported size(s) in @sizes.
inline void wait_done(net_api& api, void* req, int* sizes) {
    const uint64_t deadline = mono_ns() + 30'000'000'000ull;
    int done = 0;
    while (!done) {
        PCHECK(mono_ns() < deadline);
        PCHECK_OK(api.test(req, &done, sizes));
    }
}

inline unsigned char pattern_byte(uint32_t seed, size_t i) {
    return static_cast<unsigned char>(seed * 131u + i * 7u + (i >> 8));
}
inline void fill(std::vector<unsigned char>& v, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; ++i) v[i] = pattern_byte(seed, i);
}
inline bool matches(const std::vector<unsigned char>& v, size_t n, uint32_t seed) {
    for (size_t i = 0; i < n; ++i)
        if (v[i] != pattern_byte(seed, i)) return false;
    return true;
}

}  // namespace odl::plugin::test
