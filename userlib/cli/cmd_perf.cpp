// SPDX-License-Identifier: MIT
// `odl perf <test>`: the perf suite. Without --server/--client it spawns its
// own server on a private loopback device and runs both ends.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "odl/wire/sim_inproc.h"
#include "perf_runner.h"
#include "cli_common.h"
#include "odl_cli_checks.h"

namespace odl::cli {
namespace {

using nlohmann::json;

struct perf_cli {
    perf::options opt;
    std::string backend = "loopback";
    std::string sizes;
    std::string bytes;      ///< --bytes, with unit suffix
    std::string load_size;  ///< --load-size, with unit suffix
    bool server = false;
    std::string client;  ///< device index leading to the peer
    uint32_t device = 0;
    bool json_out = false;
    bool checksum = false;
    bool quiet = false;
    double connect_timeout_s = 10;
};

uint64_t parse_size(const std::string& s) {
    if (const auto v = odl::cli::byte_size(s)) return *v;
    die("perf", fmt::format("bad size '{}' (a whole number of bytes such as 64, 4K, 1M or 1.5KiB; units B, K, M, G)", s));
}

std::vector<uint64_t> parse_sizes(const std::string& list) {
    std::vector<uint64_t> out;
    size_t start = 0;
    while (start <= list.size()) {
        const size_t comma = list.find(',', start);
        const std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (!item.empty()) out.push_back(parse_size(item));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (out.empty()) die("perf", "--sizes is empty");
    return out;
}

/// The open parameters of @index on the chosen backend.
odl_open_params perf_params(const perf_cli& c, uint32_t index) {
    odl_open_params p;
    odl_open_params_init(&p);
    p.backend = c.backend.c_str();
    p.index = index;
    p.num_streams = perf::kPerfStreams;
    // A send thread where the machine has the cores (bandwidth both ways:
    // docs/benchmarks.md, "The send thread").
    p.flags = (c.checksum ? ODL_OPEN_CHECKSUM : 0) | ODL_OPEN_TX_THREAD | ODL_OPEN_RX_THREAD;
    p.max_msg_bytes = 1ull << 31;
    p.connect_timeout_ns = uint64_t(c.connect_timeout_s * 1e9);
    return p;
}

/// Opens @index on the chosen backend; null with the reason in @err.
odl_dev* try_open_device(const perf_cli& c, uint32_t index, std::string* err) {
    const odl_open_params p = perf_params(c, index);
    odl_dev* dev = nullptr;
    if (odl_open(&p, &dev) != ODL_OK) {
        *err = fmt::format("cannot open {} device {}: {}", c.backend, index, odl_last_error());
        return nullptr;
    }
    return dev;
}

odl_dev* open_device(const perf_cli& c, uint32_t index) {
    std::string err;
    odl_dev* dev = try_open_device(c, index, &err);
    if (!dev) die("perf", err);
    return dev;
}

/// Closes the device on every exit path.
struct dev_closer {
    void operator()(odl_dev* d) const { odl_close(d); }
};
using dev_ptr = std::unique_ptr<odl_dev, dev_closer>;

std::string fmt_us(const json& row, const char* key) { return fmt::format("{:.2f}", row.value(key, 0.0)); }

void print_table(const std::string& test, const json& results) {
    if (test == "bandwidth" || test == "mimo") {
        fmt::print("{:>10} {:>10} {:>9} {:>10} {:>11} {:>12}\n", "size", "messages", "seconds", "Gb/s", "MiB/s", "msg/s");
        for (const auto& r : results) {
            fmt::print("{:>10} {:>10} {:>9.3f} {:>10.2f} {:>11.1f} {:>12.0f}\n", r["size"].get<uint64_t>(),
                       r["messages"].get<uint64_t>(), r["seconds"].get<double>(), r["gbps"].get<double>(),
                       r["mib_s"].get<double>(), r["msgs_per_s"].get<double>());
            if (r.contains("streams"))
                for (const auto& s : r["streams"])
                    fmt::print("{:>10} {:>10} {:>9} {:>10.2f}   (stream {})\n", "", s["messages"].get<uint64_t>(), "",
                               s["gbps"].get<double>(), s["stream"].get<uint32_t>());
        }
        return;
    }
    const bool load = test == "latency-load";
    const bool jitter = test == "jitter";
    fmt::print("one-way latency (round trip / 2), microseconds\n");
    fmt::print("{:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8}", load ? "load" : "size", "samples", "p50", "p90",
               "p99", "p99.9", "max", "mean", "stddev");
    if (jitter) fmt::print(" {:>8}", "ipdv");
    if (load) fmt::print(" {:>10}", "bulk Gb/s");
    fmt::print("\n");
    for (const auto& r : results) {
        const std::string first = load ? r.value("load", "") : std::to_string(r.value("size", uint64_t(0)));
        fmt::print("{:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>9} {:>9} {:>8}", first, r.value("samples", uint64_t(0)),
                   fmt_us(r, "p50_us"), fmt_us(r, "p90_us"), fmt_us(r, "p99_us"), fmt_us(r, "p999_us"),
                   fmt_us(r, "max_us"), fmt_us(r, "mean_us"), fmt_us(r, "stddev_us"));
        if (jitter) fmt::print(" {:>8}", fmt_us(r, "ipdv_us"));
        if (load) fmt::print(" {:>10}", r.contains("bulk") ? fmt::format("{:.2f}", r["bulk"]["gbps"].get<double>()) : "-");
        fmt::print("\n");
    }
}

/// On the sim backend: says on stderr when frames reached this end later
/// than the model said they were due (the figures are then slower than the
/// model's), so a distorted result never passes silently.
void warn_if_late(odl_dev* dev, const char* who) {
    odl_stats st{};
    st.struct_size = sizeof(st);
    if (odl_get_stats(dev, &st) != ODL_OK || st.model_late_frames == 0) return;
    fmt::print(stderr,
               "odl: perf: warning: {}: {} of {} frames arrived later than the model said they were due (by up to "
               "{:.1f} us): the model or this machine did not keep up with the wall clock; these timings are "
               "slower than the model's\n",
               who, st.model_late_frames, st.model_frames, double(st.model_lag_max_ns) / 1000.0);
}

/// Starts `odl perf <test> --server` on the same backend/device as a child.
pid_t spawn_server(const std::string& test, const perf_cli& c, uint32_t index) {
    std::vector<std::string> args = {"odl", "perf", test, "--server", "--backend", c.backend, "--device",
                                     std::to_string(index), "--quiet"};
    if (c.checksum) args.push_back("--checksum");
    const pid_t pid = fork();
    if (pid < 0) die("perf", "fork failed");
    if (pid == 0) {
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv("/proc/self/exe", argv.data());
        _exit(127);
    }
    return pid;
}

/// Reaps the spawned server; kills it if it has not exited within 2 s.
int reap(pid_t pid) {
    int status = 0;
    for (int i = 0; i < 200; ++i) {
        if (waitpid(pid, &status, WNOHANG) == pid) return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return 128 + SIGKILL;
}

int run_perf(const std::string& test, perf_cli c) {
    const std::vector<std::string> tests = {"bandwidth", "latency", "jitter", "latency-load", "mimo"};
    if (std::find(tests.begin(), tests.end(), test) == tests.end())
        die("perf", fmt::format("unknown test '{}' (have: bandwidth, latency, jitter, latency-load, mimo)", test));
    uint32_t count = 0;
    if (odl_device_count(c.backend.c_str(), &count) != ODL_OK) die("perf", odl_last_error());
    c.opt.test = test;
    if (!c.bytes.empty()) c.opt.bytes = parse_size(c.bytes);
    if (!c.load_size.empty()) c.opt.load_size = parse_size(c.load_size);
    if (c.opt.load_size > (1ull << 31)) die("perf", "--load-size above the 2 GiB limit");
    if (!c.sizes.empty()) c.opt.sizes = parse_sizes(c.sizes);
    else if (test == "bandwidth") c.opt.sizes = {64, 512, 4096, 65536, 1 << 20, 4 << 20};
    else if (test == "latency") c.opt.sizes = {8, 64, 512, 4096, 65536};
    else c.opt.sizes = {test == "mimo" ? uint64_t(1) << 20 : 64};
    if (c.opt.streams < 1 || c.opt.streams > perf::kMaxBulkStreams)
        die("perf", fmt::format("--streams must be 1-{}", perf::kMaxBulkStreams));
    // Refused here rather than met as an empty table or a server's "impossible
    // phase": zero round trips or messages measure nothing.
    constexpr uint64_t k_max_count = 1000000000;
    if (c.opt.depth < 1 || c.opt.depth > perf::kMaxDepth)
        die("perf", fmt::format("--depth must be 1-{}", perf::kMaxDepth));
    if (c.opt.iterations < 1 || c.opt.iterations > k_max_count)
        die("perf", fmt::format("--iterations must be 1-{}", k_max_count));
    if (c.opt.warmup > k_max_count) die("perf", fmt::format("--warmup must be 0-{}", k_max_count));
    if (c.opt.max_msgs < 1) die("perf", "--max-msgs must be at least 1");
    if (!c.bytes.empty() && c.opt.bytes < 1) die("perf", "--bytes must be at least 1");
    if (c.opt.stall_timeout_ms < 1) die("perf", "--stall-timeout-ms must be at least 1");
    for (uint64_t s : c.opt.sizes)
        if (s > (1ull << 31)) die("perf", fmt::format("message size {} above the 2 GiB limit", s));

    auto progress = [&](const std::string& line) {
        if (!c.quiet) fmt::print(stderr, "odl: perf: {}\n", line);
    };

    if (c.server) {
        dev_ptr dev(open_device(c, c.device));
        try {
            perf::run_server(dev.get(), c.opt.stall_timeout_ms);
        } catch (const perf::perf_error& e) {
            die("perf", fmt::format("server: {}", e.what()));
        }
        warn_if_late(dev.get(), "server");
        return 0;
    }

    pid_t child = -1;
    dev_ptr pair_client, server_dev;  // ODL_SIM_SOCKET=inproc: both ends here
    std::thread server_thread;        // serves server_dev
    std::string server_err;
    uint32_t index = 0;
    if (!c.client.empty()) {
        // Digits only: stoul took "5abc" as 5, "-1" as 2^32 - 1 and cut
        // 99999999999 to 32 bits.
        if (c.client.size() > 9 || c.client.find_first_not_of("0123456789") != std::string::npos)
            die("perf", fmt::format("--client wants the device index that leads to the peer, not '{}'", c.client));
        index = uint32_t(std::stoul(c.client));
    } else {
        // sim: both ends on this machine, on the model server's link.
        if (c.backend != "loopback" && c.backend != "sim")
            die("perf", fmt::format("backend '{}' needs --server on one host and --client on the other", c.backend));
        // A private namespace keeps concurrent self-spawned runs apart.
        const char* ns = std::getenv("ODL_LOOPBACK_NAMESPACE");
        setenv("ODL_LOOPBACK_NAMESPACE", fmt::format("{}perf-{}", ns ? ns : "", getpid()).c_str(), 1);
        index = c.device;  // both ends on that device (sim: that modelled link)
        const char* sock = std::getenv("ODL_SIM_SOCKET");
        if (c.backend == "sim" && sock && std::strcmp(sock, ODL_SIM_INPROC_SOCKET) == 0) {
            // The in-process model: both ends in this process, the server's
            // on a thread of its own instead of a child process.
            const odl_open_params p = perf_params(c, index);
            odl_dev *a = nullptr, *b = nullptr;
            if (odl_open_pair(&p, &a, &b) != ODL_OK)
                die("perf", fmt::format("cannot open both ends of sim device {}: {}", index, odl_last_error()));
            pair_client.reset(a);
            server_dev.reset(b);
            server_thread = std::thread([&] {
                try {
                    perf::run_server(server_dev.get(), c.opt.stall_timeout_ms);
                } catch (const perf::perf_error& e) {
                    server_err = e.what();
                }
                // Closed here, as a server process would on its way out: the
                // client's close waits for this end's last acknowledgements.
                warn_if_late(server_dev.get(), "server");
                server_dev.reset();
            });
            progress(fmt::format("both ends of sim{} in this process (ODL_SIM_SOCKET=inproc)", index));
        } else {
            child = spawn_server(test, c, index);
            progress(fmt::format("started server (pid {}) on {}{}", child, c.backend, index));
        }
    }

    json results, model_timing, recovery;
    int rc = 0;
    {
        std::string err;
        dev_ptr dev(pair_client ? pair_client.release() : try_open_device(c, index, &err));
        if (!dev) {
            // The server we started must not outlive us (it would fail on
            // its own a moment later, its words after our exit).
            if (child > 0) {
                kill(child, SIGTERM);
                reap(child);
            }
            die("perf", err);
        }
        try {
            results = perf::run_client(dev.get(), c.opt, progress);
        } catch (const perf::perf_error& e) {
            fmt::print(stderr, "odl: perf: {}\n", e.what());
            rc = 1;
        }
        odl_stats st{};
        st.struct_size = sizeof(st);
        odl_get_stats(dev.get(), &st);
        if (st.model_frames > 0) {
            model_timing = json{{"frames", st.model_frames},
                                {"late_frames", st.model_late_frames},
                                {"lag_max_us", double(st.model_lag_max_ns) / 1000.0},
                                {"distorted", st.model_late_frames > 0}};
            warn_if_late(dev.get(), "client");
        }
        // Frames the link lost and the library sent again (kernel, sim):
        // the results hold, but say what it took.
        recovery = json{{"resent_frames", st.tx_resent_frames},
                        {"lost_frames", st.rx_lost_frames},
                        {"dropped_frames", st.rx_dropped_frames},
                        // Credits and acknowledgements (and HELLO, GOODBYE): what the
                        // protocol's own frames cost next to the data.
                        {"control_frames_sent", st.tx_ctrl_frames},
                        {"control_frames_received", st.rx_ctrl_frames}};
        if (rc == 0 && (st.rx_bad_frames || st.rx_csum_errors)) {
            fmt::print(stderr, "odl: perf: {} bad frames, {} checksum errors\n", st.rx_bad_frames, st.rx_csum_errors);
            rc = 1;
        }
    }
    if (server_thread.joinable()) {
        // The client's end is closed: a server still waiting sees it go.
        server_thread.join();
        if (!server_err.empty() && rc == 0) {
            fmt::print(stderr, "odl: perf: server: {}\n", server_err);
            rc = 1;
        }
    }
    if (child > 0) {
        const int src = reap(child);
        if (src != 0 && rc == 0) {
            fmt::print(stderr, "odl: perf: server exited with status {}\n", src);
            rc = 1;
        }
    }
    if (rc != 0) return rc;
    if (c.json_out) {
        json out{{"test", test}, {"backend", c.backend}, {"device", index}, {"checksum", c.checksum},
                 {"verified", c.opt.verify}, {"results", results}};
        if (!model_timing.is_null()) out["model_timing"] = model_timing;
        out["recovery"] = recovery;
        fmt::print("{}\n", out.dump(2));
    } else {
        print_table(test, results);
        if (!model_timing.is_null())
            fmt::print("model timing: {} frames from the model, {} late, at most {:.1f} us past due{}\n",
                       model_timing["frames"].get<uint64_t>(), model_timing["late_frames"].get<uint64_t>(),
                       model_timing["lag_max_us"].get<double>(),
                       model_timing["distorted"].get<bool>() ? ": DISTORTED (the model fell behind the wall clock)" : "");
        if (recovery["resent_frames"].get<uint64_t>() || recovery["lost_frames"].get<uint64_t>())
            fmt::print("link recovery (this end): {} frames sent again, {} found missing, {} dropped out of order\n",
                       recovery["resent_frames"].get<uint64_t>(), recovery["lost_frames"].get<uint64_t>(),
                       recovery["dropped_frames"].get<uint64_t>());
        if (!c.opt.verify) fmt::print("bulk payloads not verified (--no-verify): lengths and order only\n");
    }
    return 0;
}

}  // namespace

void add_perf_command(CLI::App& app) {
    auto c = std::make_shared<perf_cli>();
    auto test = std::make_shared<std::string>();
    auto* cmd = app.add_subcommand("perf", "Perf suite: bandwidth, latency, jitter, latency-load, mimo");
    cmd->add_option("test", *test, "bandwidth | latency | jitter | latency-load | mimo")->required();
    cmd->add_option("--backend,-b", c->backend, "loopback | sim (odl-linkd --sim, or in this process with ODL_SIM_SOCKET=inproc) | kernel")->capture_default_str();
    auto* srv = cmd->add_flag("--server", c->server, "Serve a client (this end only)");
    cmd->add_option("--client", c->client, "Run the client over device PEER (index) against a --server")
        ->excludes(srv);
    cmd->add_option("--device,-d", c->device,
                    "Device index for --server, or for both ends when it starts its own server (sim: the link)")
        ->capture_default_str();
    cmd->add_option("--sizes,-s", c->sizes, "Message sizes, comma-separated (64,4K,1M)");
    cmd->add_option("--bytes", c->bytes, "Bytes per size of a bulk transfer: bandwidth, mimo, and latency-load's load (default 256M)");
    cmd->add_option("--max-msgs", c->opt.max_msgs, "Bandwidth: cap on messages per size")->capture_default_str();
    cmd->add_option("--iterations,-n", c->opt.iterations, "Latency/jitter: measured round trips")->capture_default_str();
    cmd->add_option("--warmup", c->opt.warmup, "Latency/jitter: unmeasured round trips")->capture_default_str();
    cmd->add_flag("--bidir", c->opt.bidir, "Bandwidth: both directions at once");
    cmd->add_option("--streams", c->opt.streams, "MIMO: concurrent streams")->capture_default_str();
    cmd->add_option("--depth", c->opt.depth, "Messages in flight per stream")->capture_default_str();
    cmd->add_option("--interval-us", c->opt.interval_us, "Jitter: gap between pings")
        ->capture_default_str()
        ->check(finite_in(0, 60e6));
    cmd->add_option("--load-size", c->load_size, "Latency-load: bulk message size (default 1M)");
    // In milliseconds up to k_max_wait_s: 18446744073710 wrapped to 0.45 ms
    // when made nanoseconds.
    cmd->add_option("--stall-timeout-ms", c->opt.stall_timeout_ms, "Fail after this long without progress")
        ->capture_default_str()
        ->check(finite_in(1, k_max_wait_s * 1000));
    // At least 0.1 s, as odl cp and odl pair: 0 could never connect.
    cmd->add_option("--connect-timeout", c->connect_timeout_s, "Seconds to wait for the peer")
        ->capture_default_str()
        ->check(finite_in(0.1, k_max_wait_s));
    cmd->add_flag("--checksum", c->checksum, "Send CRC32C with every frame");
    cmd->add_flag("--verify,!--no-verify", c->opt.verify,
                  "Check every received bulk payload byte (default); --no-verify checks lengths and order only");
    cmd->add_flag("--json", c->json_out, "Print results as JSON");
    cmd->add_flag("--quiet,-q", c->quiet, "No progress lines");
    cmd->callback([c, test] { std::exit(run_perf(*test, *c)); });
}

}  // namespace odl::cli
