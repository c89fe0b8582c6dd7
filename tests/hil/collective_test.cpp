// SPDX-License-Identifier: MIT
// A scenario's collective on a pair (model/cli/pair_collective.h) through a
// target whose two "hosts" are this machine: the same commands `odl hil run`
// sends over SSH, run with /bin/sh here. The Gpu tests need a CUDA GPU,
// PyTorch and the plugin (ctest label gpu, -DODL_GPU_TESTS=ON): both ranks
// share GPU 0, each its own NCCL host, so every byte goes through the plugin
// (loopback backend: there is no cable here). The others run anywhere.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <string>

#include <gtest/gtest.h>

#include "odl/hil/process.h"
#include "pair_collective.h"

namespace {

namespace p = odl::cli::pair;
namespace m = odl::model;

std::string env_or(const char* name, const char* fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

class local_target : public p::target {
public:
    /// @extra[h]: environment words for host h's rank (before the program).
    explicit local_target(std::string plugin, std::string extra0 = "", std::string extra1 = "")
        : plugin_(std::move(plugin)), extra_{std::move(extra0), std::move(extra1)} {}

    std::string name(unsigned host) const override { return host == 0 ? "local-a" : "local-b"; }
    p::sh_result exec(unsigned /*host*/, const std::string& cmd, int timeout_s) override {
        const auto r = odl::hil::run_process({"sh", "-c", cmd}, timeout_s);
        log += "$ " + cmd + "\n" + r.out + r.err;
        return {r.timed_out ? 124 : r.status, r.out + r.err};
    }
    int device(unsigned) const override { return 0; }
    void load_driver() override {}
    std::string link_seen() override { return ""; }
    bool can_cable() const override { return false; }
    std::string no_cable_reason() const override { return "none here"; }
    void cable(unsigned, const std::string&) override {}
    std::string no_event_reason() const override { return "none here"; }
    std::string rendezvous_address() const override { return "127.0.0.1"; }
    std::string nccl_rank_command(unsigned host) const override {
        // Two NCCL hosts on one GPU, no path between them but the plugin.
        return "env NCCL_HOSTID=odlhost" + std::to_string(host) +
               " NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_NVLS_ENABLE=0 ODL_NCCL_DEVICES=loopback:0"
               " ODL_LOOPBACK_NAMESPACE=collective-test-" + std::to_string(getpid()) + " " + extra_[host & 1] +
               " python3 " + env_or("ODL_TEST_COLLECTIVE_SCRIPT", ODL_COLLECTIVE_SCRIPT) + " --plugin " + plugin_;
    }
    std::string log;

private:
    std::string plugin_;
    std::string extra_[2];
};

std::string plugin_path() {
    return env_or("ODL_TEST_PLUGIN_DIR", ODL_PLUGIN_DIR) + std::string("/libnccl-net-odl.so");
}

m::scenario_workload workload(m::workload_kind k, std::uint64_t size, unsigned count) {
    m::scenario_workload w;
    w.name = "w";
    w.kind = k;
    w.hosts = {0, 1};
    w.size = size;
    w.count = count;
    return w;
}

TEST(CollectiveResult, ReadsRankZerosLineForTheOpAndSize) {
    p::wl_result r;
    const std::string out =
        "NCCL INFO something {with braces}\n"
        "ODL all_reduce 1048576 B  200.0 us  busbw 5.000 GB/s  ok\n"
        "ODL-RESULT {\"op\": \"all_gather\", \"size\": 1048576, \"time_us\": 99.0, \"busbw_GBps\": 1.0, \"ok\": true}\n"
        "ODL-RESULT {\"op\": \"all_reduce\", \"size\": 4096, \"time_us\": 50.0, \"busbw_GBps\": 0.1, \"ok\": true}\n"
        "ODL-RESULT {\"op\": \"all_reduce\", \"size\": 1048576, \"time_us\": 200.0, \"busbw_GBps\": 5.0, "
        "\"ok\": true, \"nccl\": \"2.28.9\", \"gpu\": \"NVIDIA H100\", \"iters\": 7}\n";
    EXPECT_EQ(p::read_collective_result(out, "all_reduce", 1048576, r), "");
    ASSERT_TRUE(r.time_us && r.gbps && r.lost);
    EXPECT_DOUBLE_EQ(*r.time_us, 200.0);
    EXPECT_DOUBLE_EQ(*r.gbps, 40.0);  // GB/s to the model's Gb/s
    EXPECT_EQ(*r.lost, 0u);
    EXPECT_TRUE(r.completed);
    EXPECT_NE(r.how.find("NCCL 2.28.9, NVIDIA H100, 7 calls"), std::string::npos) << r.how;
}

TEST(CollectiveResult, AWrongResultIsAFailureNotAMeasurement) {
    p::wl_result r;
    const std::string out =
        "ODL-RESULT {\"op\": \"all_reduce\", \"size\": 64, \"time_us\": 30.0, \"busbw_GBps\": 0.1, \"ok\": false}\n";
    EXPECT_EQ(p::read_collective_result(out, "all_reduce", 64, r), "");
    EXPECT_FALSE(r.completed);
    EXPECT_FALSE(r.lost.has_value());
    EXPECT_NE(r.error.find("WRONG"), std::string::npos) << r.error;
}

TEST(CollectiveResult, MissingOrMalformedLinesAreNamed) {
    p::wl_result r;
    EXPECT_NE(p::read_collective_result("Traceback ...\nRuntimeError: NCCL error\n", "all_reduce", 64, r)
                  .find("no result for all_reduce of 64 B"),
              std::string::npos);
    EXPECT_NE(p::read_collective_result("ODL-RESULT {\"op\": \"all_reduce\",\n", "all_reduce", 64, r)
                  .find("unreadable result line"),
              std::string::npos);
    EXPECT_NE(p::read_collective_result("ODL-RESULT {\"op\": \"all_reduce\", \"size\": 64, \"ok\": true}\n",
                                        "all_reduce", 64, r)
                  .find("lacks time_us"),
              std::string::npos);
    EXPECT_FALSE(r.completed);
    EXPECT_FALSE(r.time_us.has_value());
}

// A host that cannot take part (here: no plugin where it is looked for, and
// on a machine without PyTorch or a GPU that first) skips the workload with
// the host and the reason; nothing is started on the other host.
TEST(Collective, AHostThatCannotRunARankSkipsItWithTheReason) {
    local_target tb("/nonexistent/libnccl-net-odl.so");
    p::wl_result r;
    p::run_collective(tb, workload(m::workload_kind::allreduce, 4096, 3), r);
    EXPECT_FALSE(r.run);
    EXPECT_FALSE(r.completed);
    EXPECT_NE(r.error.find("host local-a cannot run a NCCL rank: no "), std::string::npos) << r.error;
    EXPECT_EQ(tb.log.find("RANK="), std::string::npos) << tb.log;
}

TEST(Collective, ARingOfMoreThanTwoIsRefused) {
    local_target tb(plugin_path());
    auto w = workload(m::workload_kind::allgather, 4096, 3);
    w.hosts = {0, 1, 0};
    p::wl_result r;
    p::run_collective(tb, w, r);
    EXPECT_FALSE(r.run);
    EXPECT_NE(r.error.find("over 3 hosts: a pair has two"), std::string::npos) << r.error;
    EXPECT_TRUE(tb.log.empty()) << tb.log;
}

TEST(CollectiveGpu, AllReduceAndAllGatherThroughThePlugin) {
    for (const auto& [kind, size] : {std::pair{m::workload_kind::allreduce, std::uint64_t(1) << 20},
                                     std::pair{m::workload_kind::allgather, std::uint64_t(64) << 10}}) {
        local_target tb(plugin_path());
        p::wl_result r;
        p::run_collective(tb, workload(kind, size, 5), r, {29517, "/tmp/odl-collective-test"});
        EXPECT_TRUE(r.run) << r.error << "\n" << tb.log;
        EXPECT_TRUE(r.completed) << r.error << "\n" << tb.log;
        ASSERT_TRUE(r.time_us && r.gbps) << tb.log;
        EXPECT_GT(*r.time_us, 0);
        EXPECT_GT(*r.gbps, 0);
        EXPECT_NE(r.how.find("5 calls timed one by one"), std::string::npos) << r.how;
        // NCCL really used the plugin: NCCL_NET=ODL makes anything else an error.
        EXPECT_EQ(tb.log.find("Traceback"), std::string::npos) << tb.log;
        std::cout << m::to_string(kind) << " " << size << " B: " << *r.time_us << " us, busbw " << *r.gbps
                  << " Gb/s [" << r.how << "]\n";
    }
}

}  // namespace
