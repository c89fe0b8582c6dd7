// SPDX-License-Identifier: MIT
// odl-plugin-collective: one rank of a checked ring all_reduce / all_gather
// driven through the ODL net plugin's NCCL API on host memory. It needs no
// GPU and no NCCL, so a scenario's collective runs where a NCCL job cannot:
// the VM guests, hosts without CUDA. The ranks meet through a folder
// (--dir): each writes its listen handle there (handle.RANK.hex) and
// connects to the next rank's, and at the end writes done.RANK and waits for
// every rank's before it closes. On one host the ranks share the folder;
// across hosts whoever starts them copies each such file to every rank's.
// Rank 0 prints one row per (op, size); --result-line adds the row as
// 'ODL-RESULT <json>', the form allreduce_check.py prints for a NCCL job.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tools/hex.h"
#include "tools/net_api.h"
#include "tools/ring.h"

namespace {

using namespace odl::plugin::caller;
using clk = std::chrono::steady_clock;

enum exit_code { k_ok = 0, k_wrong = 1, k_usage = 2, k_failed = 3 };

struct failed : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// The value rank @r contributes at element @j of call @call.
std::uint32_t value(int r, std::uint64_t j, unsigned call) {
    std::uint64_t x = (std::uint64_t(r) + 1) * 0x9e3779b97f4a7c15ull ^ (j * 0xbf58476d1ce4e5b9ull) ^
                      (std::uint64_t(call) << 48);
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    return std::uint32_t(x);
}

/// The plugin's warnings go to stderr; the rest of its log is dropped.
void log_warnings(ncclDebugLogLevel lvl, unsigned long, const char*, int, const char* fmt, ...) {
    if (lvl != NCCL_LOG_WARN) return;
    va_list ap;
    va_start(ap, fmt);
    std::fputs("plugin: ", stderr);
    std::vfprintf(stderr, fmt, ap);
    std::fputc('\n', stderr);
    va_end(ap);
}

std::string program_dir() {
    char buf[4096];
    const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
    if (n <= 0) return ".";
    std::string p(buf, std::size_t(n));
    const auto slash = p.rfind('/');
    return slash == std::string::npos ? "." : p.substr(0, slash);
}

/// Writes @text to @path whole (a temporary name, then rename), so a reader
/// never sees half a handle.
void publish(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp";
    {
        std::ofstream f(tmp);
        f << text << "\n";
        if (!f) throw failed("cannot write " + tmp);
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) throw failed("cannot rename " + tmp + " to " + path);
}

std::string read_when_there(const std::string& path, clk::time_point deadline) {
    for (;;) {
        std::ifstream f(path);
        std::string line;
        if (f && std::getline(f, line) && !line.empty()) return line;
        if (clk::now() > deadline) throw failed("nothing in " + path + " before the timeout");
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

struct options {
    int rank = -1, world = 0, version = 12, device = 0;
    std::string dir, plugin;
    std::vector<std::string> ops{"all_reduce", "all_gather"};
    std::vector<std::uint64_t> sizes{8, 65536, 1 << 20};
    unsigned iters = 5;
    double timeout_s = 120;
    std::size_t piece = 1 << 20;
    bool result_line = false;
    int inject_error = -1;  ///< tests: this rank damages one element of each result before the check
};

/// One (op, size): a checked warm-up call, then @o.iters timed calls, each
/// checked; every rank's count of wrong calls summed over the ring at the end.
nlohmann::json run_size(ring& rg, const options& o, const std::string& op, std::uint64_t size) {
    const bool reduce = op == "all_reduce";
    const std::size_t per = reduce ? 0 : std::max<std::uint64_t>(1, size / 4 / std::uint64_t(o.world));
    const std::size_t n = reduce ? std::max<std::uint64_t>(1, size / 4) : per * std::size_t(o.world);
    std::vector<std::uint32_t> buf(n);
    std::vector<double> times;
    std::uint32_t wrong = 0;
    for (unsigned call = 0; call <= o.iters; ++call) {
        if (reduce) {
            for (std::size_t j = 0; j < n; ++j) buf[j] = value(o.rank, j, call);
        } else {
            std::fill(buf.begin(), buf.end(), 0u);
            for (std::size_t j = 0; j < per; ++j) buf[std::size_t(o.rank) * per + j] = value(o.rank, j, call);
        }
        rg.set_deadline(clk::now() + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(o.timeout_s)));
        const auto t0 = clk::now();
        if (reduce)
            rg.all_reduce(buf.data(), n);
        else
            rg.all_gather(buf.data(), per);
        const double t = std::chrono::duration<double>(clk::now() - t0).count();
        if (call > 0) times.push_back(t);  // call 0 warms up
        if (o.inject_error == o.rank) buf[n / 2] ^= 1u;
        bool ok = true;
        for (std::size_t j = 0; j < n && ok; ++j) {
            std::uint32_t want = 0;
            if (reduce) {
                for (int r = 0; r < o.world; ++r) want += value(r, j, call);
            } else {
                want = value(int(j / per), j % per, call);
            }
            ok = buf[j] == want;
        }
        if (!ok) ++wrong;
    }
    // Every rank's verdict: one element per rank, each the rank's count of
    // wrong calls, summed by the same ring.
    std::vector<std::uint32_t> verdict(std::size_t(o.world), wrong);
    rg.all_reduce(verdict.data(), verdict.size());
    std::sort(times.begin(), times.end());
    const double t = times[times.size() / 2];
    const double algbw = double(size) / t / 1e9;
    const double factor = reduce ? 2.0 * (o.world - 1) / o.world : double(o.world - 1) / o.world;
    return {{"op", op},
            {"size", size},
            {"iters", o.iters},
            {"time_us", t * 1e6},
            {"algbw_GBps", algbw},
            {"busbw_GBps", algbw * factor},
            {"ok", verdict[0] == 0},
            {"wrong_calls", verdict[0]},
            {"ranks", o.world},
            {"engine", "odl-plugin-collective (ring over the plugin's net API, host memory)"}};
}

int run(const options& o) {
    const std::string plugin = o.plugin.empty() ? program_dir() + "/libnccl-net-odl.so" : o.plugin;
    loaded_plugin lp(plugin, o.version);
    net_api& api = lp.api();
    if (api.init(&log_warnings) != ncclSuccess)
        throw failed("the plugin's init failed (is ODL_NCCL_DEVICES right?)");
    // Whatever was opened is closed and the plugin finalized on every way
    // out, as NCCL does when a communicator is destroyed after an error.
    void* lc = nullptr;
    void* sc = nullptr;
    void* rc = nullptr;
    struct closer {
        net_api& api;
        void*& lc;
        void*& sc;
        void*& rc;
        ~closer() {
            if (sc) api.close_send(sc);
            if (rc) api.close_recv(rc);
            if (lc) api.close_listen(lc);
            api.finalize();
        }
    } close_all{api, lc, sc, rc};
    int ndev = 0;
    if (api.devices(&ndev) != ncclSuccess || ndev < 1) throw failed("the plugin has no device");
    if (o.device >= ndev) throw failed(fmt::format("--device {}: the plugin has {} device(s)", o.device, ndev));

    const auto deadline = clk::now() + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(o.timeout_s));
    unsigned char mine[NCCL_NET_HANDLE_MAXSIZE] = {}, next[NCCL_NET_HANDLE_MAXSIZE] = {};
    if (api.listen(o.device, mine, &lc) != ncclSuccess) throw failed("listen failed");
    publish(fmt::format("{}/handle.{}.hex", o.dir, o.rank), to_hex(mine, sizeof(mine)));
    const int after = (o.rank + 1) % o.world;
    const std::string next_path = fmt::format("{}/handle.{}.hex", o.dir, after);
    if (!from_hex(read_when_there(next_path, deadline), next, sizeof(next)))
        throw failed(next_path + " does not hold a handle (256 hex digits)");
    while (!sc || !rc) {
        if (clk::now() > deadline) throw failed(fmt::format("no connection to rank {} and from rank {} before the timeout",
                                                            after, (o.rank + o.world - 1) % o.world));
        if (!sc && api.connect(o.device, next, &sc) != ncclSuccess) throw failed(fmt::format("connect to rank {} failed", after));
        if (!rc && api.accept(lc, &rc) != ncclSuccess) throw failed("accept failed");
        if (!sc || !rc) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    bool all_ok = true;
    {
        ring rg(api, sc, rc, o.rank, o.world, o.piece);
        for (const auto& op : o.ops) {
            for (const std::uint64_t size : o.sizes) {
                const nlohmann::json row = run_size(rg, o, op, size);
                all_ok = all_ok && row["ok"].get<bool>();
                if (o.rank != 0) continue;
                std::cout << fmt::format("odl-plugin {:10s} {:>10d} B  {:10.1f} us  busbw {:8.3f} GB/s  {}  ({} ranks)\n",
                                         op, size, row["time_us"].get<double>(), row["busbw_GBps"].get<double>(),
                                         row["ok"].get<bool>() ? "ok" : "WRONG", o.world);
                if (o.result_line) std::cout << "ODL-RESULT " << row.dump() << "\n";
                std::cout.flush();
            }
        }
    }
    // Closing at once could end the link under a neighbour still receiving
    // (a completed send is not yet a received one): as NCCL barriers over its
    // bootstrap network before it closes, the ranks meet in --dir once more.
    publish(fmt::format("{}/done.{}", o.dir, o.rank), all_ok ? "ok" : "wrong");
    const auto end_by = clk::now() + std::chrono::duration_cast<clk::duration>(std::chrono::duration<double>(o.timeout_s));
    for (int r = 0; r < o.world; ++r) read_when_there(fmt::format("{}/done.{}", o.dir, r), end_by);
    return all_ok ? k_ok : k_wrong;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"One rank of a checked ring all_reduce / all_gather through the ODL NCCL net plugin, on host "
                 "memory (no GPU, no NCCL). Ranks meet through --dir: each writes handle.RANK.hex there and "
                 "reads its next rank's."};
    options o;
    std::string ops = "all_reduce,all_gather", sizes;
    app.add_option("--rank", o.rank, "this rank, 0 .. world-1")->required();
    app.add_option("--world", o.world, "number of ranks, 2 .. 16")->required()->check(CLI::Range(2, 16));
    app.add_option("--dir", o.dir, "rendezvous folder (handle.RANK.hex files)")->required()->check(CLI::ExistingDirectory);
    app.add_option("--plugin", o.plugin, "the plugin to load (default: libnccl-net-odl.so beside this program)");
    app.add_option("--version", o.version, "the plugin table to drive, ncclNetPlugin_vN")->check(CLI::Range(8, 12));
    app.add_option("--device", o.device, "the NCCL device to listen and connect on (the plugin takes the link to the "
                                         "listener whichever it is)")->check(CLI::NonNegativeNumber);
    app.add_option("--ops", ops, "all_reduce, all_gather or both, comma-separated");
    app.add_option("--sizes", sizes, "bytes per call, comma-separated (all_gather: the output, as nccl-tests counts)");
    app.add_option("--iters", o.iters, "timed calls per size after one warm-up; the median is reported")
        ->check(CLI::Range(1u, 100000u));
    app.add_option("--timeout", o.timeout_s, "seconds for the rendezvous and for each call")->check(CLI::Range(0.1, 86400.0));
    app.add_option("--piece", o.piece, "largest message, bytes")->check(CLI::Range(std::size_t(1), std::size_t(1) << 30));
    app.add_flag("--result-line", o.result_line, "rank 0 also prints each row as 'ODL-RESULT <json>'");
    app.add_option("--inject-error", o.inject_error, "tests: this rank damages one element of every result before "
                                                     "checking it, so the check must fail")
        ->group("");
    try {
        app.parse(argc, argv);
        if (o.rank < 0 || o.rank >= o.world) throw CLI::ValidationError("--rank", "must be 0 .. world-1");
        o.ops.clear();
        std::stringstream os(ops);
        for (std::string op; std::getline(os, op, ',');) {
            if (op != "all_reduce" && op != "all_gather")
                throw CLI::ValidationError("--ops", "'" + op + "' is neither all_reduce nor all_gather");
            o.ops.push_back(op);
        }
        if (o.ops.empty()) throw CLI::ValidationError("--ops", "no operation");
        if (!sizes.empty()) {
            o.sizes.clear();
            std::stringstream ss(sizes);
            for (std::string s; std::getline(ss, s, ',');) {
                std::size_t used = 0;
                unsigned long long v = 0;
                try {
                    v = std::stoull(s, &used);
                } catch (const std::exception&) {
                    used = 0;
                }
                if (used != s.size() || s.empty() || v < 4 || v > (1ull << 34))
                    throw CLI::ValidationError("--sizes", "'" + s + "' is not a byte count from 4 to 16 GiB");
                o.sizes.push_back(v);
            }
        }
    } catch (const CLI::ParseError& e) {
        const int rc = app.exit(e);
        return rc == 0 ? 0 : k_usage;
    }
    try {
        return run(o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "odl-plugin-collective: rank %d: %s\n", o.rank, e.what());
        return k_failed;
    }
}
