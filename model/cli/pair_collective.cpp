// SPDX-License-Identifier: MIT
// A scenario's collective on a pair (pair_collective.h).
#include "pair_collective.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>

namespace odl::cli::pair {

std::string target::nccl_rank_command(unsigned host) const {
    // The installed plugin over odl_tb5's device to the other host. NCCL's
    // own bootstrap sockets stay off the link under test and off loopback.
    return fmt::format("env ODL_NCCL_DEVICES=kernel:{} NCCL_SOCKET_IFNAME=^thunderbolt,lo,docker "
                       "python3 /usr/share/odl/nccl/allreduce_check.py --plugin auto",
                       device(host));
}

std::string read_collective_result(const std::string& out, const std::string& op, std::uint64_t size,
                                   wl_result& r) {
    std::istringstream in(out);
    std::string line;
    static const std::string tag = "ODL-RESULT ";
    while (std::getline(in, line)) {
        if (line.compare(0, tag.size(), tag) != 0) continue;
        json j;
        try {
            j = json::parse(line.substr(tag.size()));
        } catch (const std::exception& e) {
            return fmt::format("unreadable result line ({})", e.what());
        }
        if (!j.is_object() || j.value("op", "") != op || j.value("size", std::uint64_t(0)) != size) continue;
        const auto num = [&](const char* k) -> std::optional<double> {
            if (!j.contains(k) || !j[k].is_number()) return std::nullopt;
            return j[k].get<double>();
        };
        const auto t = num("time_us"), bw = num("busbw_GBps");
        if (!t || !bw || *t <= 0 || !j.contains("ok") || !j["ok"].is_boolean())
            return "result line lacks time_us, busbw_GBps or ok: " + line;
        r.time_us = *t;
        r.gbps = *bw * 8;  // GB/s as nccl-tests counts it; Gb/s as the model does
        r.completed = j["ok"].get<bool>();
        if (!r.completed) {
            r.error = "a result was WRONG (every element is checked)";
        } else {
            r.lost = 0;  // checked exactly: a lost or damaged byte would show
        }
        if (j.contains("engine"))  // odl-plugin-collective: its how says what ran
            r.how += fmt::format("; {} calls timed one by one over {} ranks", j.value("iters", 0), j.value("ranks", 0));
        else
            r.how += fmt::format("; NCCL {}, {}, {} calls timed one by one", j.value("nccl", "?"), j.value("gpu", "?"),
                                 j.value("iters", 0));
        return "";
    }
    return fmt::format("no result for {} of {} B in rank 0's output", op, size);
}

void run_collective(target& tb, const m::scenario_workload& w, wl_result& r, const collective_opts& o) {
    r.run = false;
    if (w.hosts.size() != 2) {
        r.error = fmt::format("{} over {} hosts: a pair has two", m::to_string(w.kind), w.hosts.size());
        return;
    }
    const char* op = w.kind == m::workload_kind::allreduce ? "all_reduce" : "all_gather";
    // Host 0 (the scenario's first host) holds rank 0 and the rendezvous.
    for (unsigned h = 0; h < 2; ++h) {
        const auto p = tb.exec(h,
                               "command -v python3 >/dev/null 2>&1 || { echo 'no python3 on this host (a NCCL rank "
                               "needs python3 with PyTorch and a CUDA GPU)'; exit 3; }; " +
                                   tb.nccl_rank_command(h) + " --probe",
                               120);
        if (p.rc != 0) {
            r.error = fmt::format("host {} cannot run a NCCL rank: {}", tb.name(h), last_line(p.out));
            return;
        }
    }
    const std::string addr = tb.rendezvous_address();
    if (addr.empty()) {
        r.error = "no management address at which host " + tb.name(1) + " reaches " + tb.name(0);
        return;
    }
    r.run = true;
    const unsigned iters = std::max(1u, w.count);
    const std::string args =
        fmt::format("--ops {} --sizes {} --iters {} --result-line --timeout 120", op, w.size, iters);
    const auto env = [&](unsigned rank) {
        return fmt::format("RANK={} WORLD_SIZE=2 LOCAL_RANK=0 MASTER_ADDR={} MASTER_PORT={} ", rank, sq(addr), o.port);
    };
    r.how = fmt::format("torch.distributed {} of {} B x{} through NCCL and the ODL plugin ({} and {})", op, w.size,
                        iters, tb.name(0), tb.name(1));
    const std::string log = o.rank1_files + ".log", pid = o.rank1_files + ".pid";
    // Rank 1 in the background, detached from the exec's output (over SSH a
    // job holding the session's stdout keeps the command from returning).
    tb.exec(1, fmt::format("rm -f {1} {2}; ( {0}{3} {4} >{1} 2>&1 & echo $! >{2}; wait $!; echo rc=$? >>{1} ) "
                           "</dev/null >/dev/null 2>&1 &",
                           env(1), sq(log), sq(pid), tb.nccl_rank_command(1), args),
            60);
    // Generous: NCCL's start-up, two warm-up calls, the calls, at >= 20 MB/s.
    const int limit = int(std::min<std::uint64_t>(1800, 180 + w.size * (iters + 3) / 20'000'000));
    const auto res = tb.exec(0, env(0) + tb.nccl_rank_command(0) + " " + args, limit);
    const bool ended = tb.wait_in(1, 30, "grep -q '^rc=' " + sq(log));
    if (!ended) tb.exec(1, fmt::format("kill $(cat {0}) 2>/dev/null; sleep 1; kill -9 $(cat {0}) 2>/dev/null", sq(pid)), 30);
    const std::string why = read_collective_result(res.out, op, w.size, r);
    if (!why.empty() || (res.rc != 0 && r.completed)) {
        r.completed = false;
        const auto other = tb.exec(1, "tail -n 3 " + sq(log), 30);
        r.error = fmt::format("rank 0 on {} (status {}): {}; {}rank 1 on {}: {}", tb.name(0), res.rc,
                              why.empty() ? last_line(res.out) : why + " (" + last_line(res.out) + ")",
                              ended ? "" : "stopped ", tb.name(1), last_line(other.out));
    }
    tb.exec(1, fmt::format("rm -f {} {}", sq(log), sq(pid)), 30);
}

}  // namespace odl::cli::pair
