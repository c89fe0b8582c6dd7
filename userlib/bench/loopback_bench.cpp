// SPDX-License-Identifier: MIT
// Two-process loopback benchmarks, each beside its plain shared-memory
// baseline in the same run: ping-pong latency and one-way bandwidth.
//
// A child process is forked once per benchmark family: it serves libodl
// (echo or sink) or the baseline (flag-spin echo, or nothing for memcpy).
#include <benchmark/benchmark.h>

#include <signal.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "odl/odl.h"

namespace {

constexpr uint32_t kTagData = 1;
constexpr uint32_t kTagEnd = 2;
constexpr uint64_t kMaxMsg = 4 << 20;
constexpr uint32_t kDepth = 16;
constexpr uint64_t kWaitNs = 10'000'000'000ull;

odl_dev* open_index(uint32_t index) {
    odl_open_params p;
    odl_open_params_init(&p);
    p.index = index;
    p.max_msg_bytes = kMaxMsg;
    p.num_streams = 2;
    odl_dev* d = nullptr;
    if (odl_open(&p, &d) != ODL_OK) return nullptr;
    return d;
}

bool wait_one(odl_dev* d, odl_completion* c) {
    size_t n = 0;
    return odl_wait(d, c, 1, &n, kWaitNs) == ODL_OK && c->status == ODL_OK;
}

/// Child: echo every message back until the parent closes.
[[noreturn]] void odl_echo_child(uint32_t index) {
    odl_dev* d = open_index(index);
    if (!d) _exit(2);
    std::vector<char> buf(kMaxMsg);
    for (;;) {
        odl_completion c;
        if (odl_post_recv(d, 0, ODL_TAG_ANY, buf.data(), buf.size(), nullptr, 0) != ODL_OK) break;
        if (!wait_one(d, &c)) break;
        if (odl_post_send(d, 0, c.tag, buf.data(), c.len, nullptr, 1) != ODL_OK) break;
        if (!wait_one(d, &c)) break;
    }
    odl_close(d);
    _exit(0);
}

/// Child: receive messages (kDepth posted), answer each END with an ack.
[[noreturn]] void odl_sink_child(uint32_t index) {
    odl_dev* d = open_index(index);
    if (!d) _exit(2);
    std::vector<std::vector<char>> bufs(kDepth, std::vector<char>(kMaxMsg));
    for (uint32_t i = 0; i < kDepth; ++i) odl_post_recv(d, 0, ODL_TAG_ANY, bufs[i].data(), kMaxMsg, nullptr, i);
    char ack = 0;
    for (;;) {
        odl_completion c[16];
        size_t n = 0;
        if (odl_wait(d, c, 16, &n, 3600ull * 1000000000ull) != ODL_OK) break;
        for (size_t k = 0; k < n; ++k) {
            if (c[k].status != ODL_OK) _exit(0);
            if (c[k].op != ODL_OP_RECV) continue;
            if (c[k].tag == kTagEnd) odl_post_send(d, 1, kTagEnd, &ack, 1, nullptr, 99);
            odl_post_recv(d, 0, ODL_TAG_ANY, bufs[c[k].ctx].data(), kMaxMsg, nullptr, c[k].ctx);
        }
    }
    odl_close(d);
    _exit(0);
}

struct child_proc {
    pid_t pid = -1;
    ~child_proc() {
        if (pid > 0) {
            kill(pid, SIGKILL);
            waitpid(pid, nullptr, 0);
        }
    }
};

uint32_t next_index() {
    static uint32_t i = 0;
    return i++ % 64;
}

void BM_OdlPingPong(benchmark::State& state) {
    const auto size = uint64_t(state.range(0));
    const uint32_t index = next_index();
    child_proc child;
    child.pid = fork();
    if (child.pid == 0) odl_echo_child(index);
    odl_dev* d = open_index(index);
    if (!d) {
        state.SkipWithError(odl_last_error());
        return;
    }
    std::vector<char> tx(size, 'x'), rx(size);
    for (auto _ : state) {
        odl_completion c[2];
        size_t n = 0, got = 0;
        odl_post_recv(d, 0, kTagData, rx.data(), rx.size(), nullptr, 0);
        odl_post_send(d, 0, kTagData, tx.data(), tx.size(), nullptr, 1);
        while (got < 2) {
            odl_poll(d, c, 2, &n);
            got += n;
        }
    }
    // Time per iteration is one round trip; one way is half of it.
    state.counters["one_way_us"] = benchmark::Counter(double(state.iterations()) * 2e-6,
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    odl_close(d);
}

/// Baseline: the least two processes can do: copy into shared memory, flip a
/// flag, the peer spins on it and copies back.
void BM_ShmPingPong(benchmark::State& state) {
    const auto size = uint64_t(state.range(0));
    struct shared {
        alignas(64) std::atomic<uint64_t> ping{0};
        alignas(64) std::atomic<uint64_t> pong{0};
        alignas(64) char buf[2][kMaxMsg];
    };
    void* mem = mmap(nullptr, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    auto* sh = new (mem) shared();
    child_proc child;
    child.pid = fork();
    if (child.pid == 0) {
        std::vector<char> local(size + 1);
        for (uint64_t seq = 1;; ++seq) {
            while (sh->ping.load(std::memory_order_acquire) < seq) {
            }
            std::memcpy(local.data(), sh->buf[0], size);
            std::memcpy(sh->buf[1], local.data(), size);
            sh->pong.store(seq, std::memory_order_release);
        }
    }
    std::vector<char> tx(size + 1, 'x'), rx(size + 1);
    uint64_t seq = 0;
    for (auto _ : state) {
        ++seq;
        std::memcpy(sh->buf[0], tx.data(), size);
        sh->ping.store(seq, std::memory_order_release);
        while (sh->pong.load(std::memory_order_acquire) < seq) {
        }
        std::memcpy(rx.data(), sh->buf[1], size);
    }
    // Time per iteration is one round trip; one way is half of it.
    state.counters["one_way_us"] = benchmark::Counter(double(state.iterations()) * 2e-6,
                                                       benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    kill(child.pid, SIGKILL);
    waitpid(child.pid, nullptr, 0);
    child.pid = -1;
    munmap(mem, sizeof(shared));
}

void BM_OdlBandwidth(benchmark::State& state) {
    const auto size = uint64_t(state.range(0));
    const uint32_t index = next_index();
    child_proc child;
    child.pid = fork();
    if (child.pid == 0) odl_sink_child(index);
    odl_dev* d = open_index(index);
    if (!d) {
        state.SkipWithError(odl_last_error());
        return;
    }
    std::vector<std::vector<char>> bufs(kDepth, std::vector<char>(size, 'y'));
    uint64_t posted = 0, done = 0;
    for (auto _ : state) {
        // One iteration = one message handed over; kDepth stay in flight.
        while (posted - done >= kDepth) {
            odl_completion c[16];
            size_t n = 0;
            odl_poll(d, c, 16, &n);
            done += n;
        }
        odl_post_send(d, 0, kTagData, bufs[posted % kDepth].data(), size, nullptr, posted);
        ++posted;
    }
    // Count the drain: END is acknowledged only after every message arrived.
    char end = 0, ack = 0;
    odl_completion c;
    odl_post_recv(d, 1, kTagEnd, &ack, 1, nullptr, 0);
    odl_post_send(d, 0, kTagEnd, &end, 1, nullptr, 0);
    for (uint64_t want = posted - done + 2; want > 0;) {
        size_t n = 0;
        if (odl_wait(d, &c, 1, &n, kWaitNs) != ODL_OK) {
            state.SkipWithError("sink did not acknowledge");
            break;
        }
        want -= n;
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(size));
    odl_close(d);
}

/// Baseline: one plain memcpy of each message into shared memory.
void BM_MemcpyToShm(benchmark::State& state) {
    const auto size = uint64_t(state.range(0));
    const size_t ring = kDepth * size;
    void* mem = mmap(nullptr, ring, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    std::vector<std::vector<char>> bufs(kDepth, std::vector<char>(size, 'y'));
    std::memset(mem, 0, ring);
    uint64_t i = 0;
    for (auto _ : state) {
        std::memcpy(static_cast<char*>(mem) + (i % kDepth) * size, bufs[i % kDepth].data(), size);
        benchmark::ClobberMemory();
        ++i;
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(size));
    munmap(mem, ring);
}

/// Ceiling of the loopback rendezvous path: process_vm_readv(2) of each
/// message from another process's buffers (what an RNDV receiver does), no
/// libodl around it. Compare with BM_MemcpyToShm and BM_OdlBandwidth.
void BM_CmaReadBandwidth(benchmark::State& state) {
    const auto size = uint64_t(state.range(0));
    // Anonymous shared memory mapped before the fork: the child's copy of
    // the buffers sits at the same address in its own address space.
    const size_t bytes = kDepth * size;
    void* src = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (src == MAP_FAILED) {
        state.SkipWithError("mmap failed");
        return;
    }
    std::memset(src, 'y', bytes);
    child_proc child;
    child.pid = fork();
    if (child.pid == 0) {
        for (;;) pause();  // holds the buffers; killed by child_proc
    }
    std::vector<std::vector<char>> dst(kDepth, std::vector<char>(size, 0));
    uint64_t i = 0;
    for (auto _ : state) {
        iovec local{dst[i % kDepth].data(), size};
        iovec remote{static_cast<char*>(src) + (i % kDepth) * size, size};
        if (process_vm_readv(child.pid, &local, 1, &remote, 1, 0) != ssize_t(size)) {
            state.SkipWithError("process_vm_readv failed (Yama ptrace_scope?)");
            break;
        }
        benchmark::ClobberMemory();
        ++i;
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(size));
    munmap(src, bytes);
}

/// Ceiling of a split rendezvous: both processes copy one message at once
/// through CMA, the receiver reads [0, split) from the sender with
/// process_vm_readv while the sender writes [split, size) into the
/// receiver's buffer with process_vm_writev; a message counts when both
/// halves are in. The handshake is two shared-memory flags (what a control
/// frame would cost at best). Args: size, split in percent of size.
void BM_CmaSplitBandwidth(benchmark::State& state) {
    const auto size = uint64_t(state.range(0));
    const auto split = size * uint64_t(state.range(1)) / 100;
    struct flags {
        alignas(64) std::atomic<uint64_t> go{0};    // sender -> receiver: message seq
        alignas(64) std::atomic<uint64_t> done{0};  // receiver -> sender: seq read
        alignas(64) std::atomic<int> failed{0};
    };
    void* fm = mmap(nullptr, sizeof(flags), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    const size_t bytes = kDepth * size;
    // Private mappings made before the fork sit at the same address in
    // both processes: the parent's is the source, the child's the target.
    void* src = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    void* dst = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fm == MAP_FAILED || src == MAP_FAILED || dst == MAP_FAILED) {
        state.SkipWithError("mmap failed");
        return;
    }
    auto* fl = new (fm) flags();
    const pid_t parent = getpid();
    child_proc child;
    child.pid = fork();
    if (child.pid == 0) {
        std::memset(dst, 0, bytes);  // the child's own pages, no copy-on-write later
        for (uint64_t seq = 1;; ++seq) {
            while (fl->go.load(std::memory_order_acquire) < seq) {
            }
            const size_t off = ((seq - 1) % kDepth) * size;
            if (split > 0) {
                iovec local{static_cast<char*>(dst) + off, split};
                iovec remote{static_cast<char*>(src) + off, split};
                if (process_vm_readv(parent, &local, 1, &remote, 1, 0) != ssize_t(split))
                    fl->failed.store(1, std::memory_order_relaxed);
            }
            fl->done.store(seq, std::memory_order_release);
        }
    }
    std::memset(src, 'y', bytes);
    uint64_t seq = 0;
    for (auto _ : state) {
        ++seq;
        fl->go.store(seq, std::memory_order_release);
        const size_t off = ((seq - 1) % kDepth) * size;
        if (split < size) {
            iovec local{static_cast<char*>(src) + off + split, size - split};
            iovec remote{static_cast<char*>(dst) + off + split, size - split};
            if (process_vm_writev(child.pid, &local, 1, &remote, 1, 0) != ssize_t(size - split)) {
                state.SkipWithError("process_vm_writev failed (Yama ptrace_scope?)");
                break;
            }
        }
        // Bounded: gives up if the child is gone.
        for (uint64_t spins = 1; fl->done.load(std::memory_order_acquire) < seq; ++spins) {
            if (spins % (1u << 20) == 0 && waitpid(child.pid, nullptr, WNOHANG) != 0) {
                child.pid = -1;
                fl->failed.store(1, std::memory_order_relaxed);
                break;
            }
        }
        if (fl->failed.load(std::memory_order_relaxed)) {
            state.SkipWithError("process_vm_readv failed (Yama ptrace_scope?)");
            break;
        }
    }
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(size));
    if (child.pid > 0) {
        kill(child.pid, SIGKILL);
        waitpid(child.pid, nullptr, 0);
        child.pid = -1;
    }
    munmap(src, bytes);
    munmap(dst, bytes);
    munmap(fm, sizeof(flags));
}

}  // namespace

BENCHMARK(BM_OdlPingPong)->Arg(8)->Arg(64)->Arg(4096)->Arg(65536)->UseRealTime();
BENCHMARK(BM_ShmPingPong)->Arg(8)->Arg(64)->Arg(4096)->Arg(65536)->UseRealTime();
BENCHMARK(BM_OdlBandwidth)->Arg(4096)->Arg(65536)->Arg(1 << 20)->Arg(4 << 20)->UseRealTime();
BENCHMARK(BM_MemcpyToShm)->Arg(4096)->Arg(65536)->Arg(1 << 20)->Arg(4 << 20)->UseRealTime();
BENCHMARK(BM_CmaReadBandwidth)->Arg(65536)->Arg(1 << 20)->Arg(4 << 20)->UseRealTime();
// Split 100 = receiver reads all (one core, with the handshake); 0 = sender
// writes all; 50/60 = both cores copy.
BENCHMARK(BM_CmaSplitBandwidth)
    ->Args({1 << 20, 100})
    ->Args({1 << 20, 0})
    ->Args({1 << 20, 50})
    ->Args({1 << 20, 60})
    ->Args({4 << 20, 50})
    ->UseRealTime();

int main(int argc, char** argv) {
    // A private rendezvous namespace per run.
    setenv("ODL_LOOPBACK_NAMESPACE", ("bench-" + std::to_string(getpid())).c_str(), 0);
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
