// SPDX-License-Identifier: MIT
// A scenario's collective as odl-plugin-collective ranks (plugin_collective.h).
#include "plugin_collective.h"

#include <algorithm>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "pair_collective.h"

namespace odl::cli::pair {

namespace {

/// The files ranks leave for each other, and what a rank may put in one.
const std::regex k_rank_file(R"((handle\.[0-9]+\.hex|done\.[0-9]+))");
const std::regex k_rank_text(R"([0-9a-z]{1,512})");

struct rank_state {
    unsigned host = 0;
    std::set<std::string> has;  ///< rank files present in its folder
    bool ended = false;
    int rc = -1;
};

}  // namespace

void run_plugin_collective(target& tb, const m::scenario_workload& w, wl_result& r, const std::string& folder) {
    r.run = false;
    const unsigned n = unsigned(w.hosts.size());
    if (n < 2) {
        r.error = "a collective needs two hosts or more";
        return;
    }
    // The target names the program, possibly as a glob of its own (a
    // package's library folder): each host says where it has it.
    const std::string where = tb.plugin_collective_program();
    const std::string f = sq(folder);
    std::vector<std::string> prog(n);
    for (unsigned i = 0; i < n; ++i) {
        const auto p = tb.exec(w.hosts[i],
                               fmt::format("p=$(ls -1 {0} 2>/dev/null | head -n 1); [ -n \"$p\" ] && [ -x \"$p\" ] || "
                                           "{{ echo 'no {0} on this host (package odl-nccl-plugin)'; exit 3; }}; "
                                           "ls /dev/odl_tb5_* >/dev/null 2>&1 || {{ echo 'no /dev/odl_tb5_N: the "
                                           "plugin needs odl_tb5'; exit 3; }}; rm -rf {1} && mkdir -p {1} && echo \"$p\"",
                                           where, f),
                               60);
        if (p.rc != 0) {
            r.error = fmt::format("host {} cannot run a rank: {}", tb.name(w.hosts[i]), last_line(p.out));
            return;
        }
        prog[i] = last_line(p.out);
    }
    r.run = true;
    const char* op = w.kind == m::workload_kind::allreduce ? "all_reduce" : "all_gather";
    const unsigned iters = std::max(1u, w.count);
    // Per call: a minute, plus this rank's bytes at 1 MB/s (TCG guests move a few).
    const double per_call_s = 60 + 2.0 * (n - 1) / n * double(w.size) / 1e6;
    std::string ring;
    for (unsigned i = 0; i < n; ++i) ring += (i ? " -> " : "") + tb.name(w.hosts[i]);
    r.how = fmt::format("odl-plugin-collective: ring {} of {} B x{} through the ODL plugin's net API on host "
                        "memory, {} -> {} (no NCCL, no GPU)",
                        op, w.size, iters, ring, tb.name(w.hosts[0]));
    std::vector<rank_state> ranks(n);
    for (unsigned i = 0; i < n; ++i) {
        ranks[i].host = w.hosts[i];
        // Every odl_tb5 device of the host: the plugin takes the one whose
        // peer is the listener (the mesh rule, docs/plugin.md).
        tb.exec(ranks[i].host,
                fmt::format("( d=$(ls /dev/odl_tb5_* | sed 's|/dev/odl_tb5_|kernel:|' | tr '\\n' , | sed 's/,$//'); "
                            "ODL_NCCL_DEVICES=$d {0} --rank {1} --world {2} --dir {3} --ops {4} --sizes {5} "
                            "--iters {6} --timeout {7:.0f} --result-line >{3}/log 2>&1 & echo $! >{3}/pid; wait $!; "
                            "echo rc=$? >>{3}/log ) </dev/null >/dev/null 2>&1 &",
                            sq(prog[i]), i, n, f, op, w.size, iters, per_call_s),
                60);
    }
    // Carry each rank's handle and done file to every other rank's folder
    // until every rank has ended, bounded.
    const double limit_s = 120 + (iters + 2) * per_call_s + 60;
    const double deadline = tb.clock_s() + limit_s;
    std::map<std::string, std::string> files;
    bool all_ended = false;
    while (!all_ended && tb.clock_s() < deadline) {
        bool moved = false;
        for (auto& k : ranks) {
            if (k.ended) continue;
            const auto res = tb.exec(k.host,
                                     fmt::format("cd {} && for f in handle.*.hex done.*; do [ -f \"$f\" ] && echo "
                                                 "\"$f $(cat \"$f\")\"; done; grep -h '^rc=' log; true",
                                                 f),
                                     30);
            std::istringstream in(res.out);
            for (std::string line; std::getline(in, line);) {
                if (line.rfind("rc=", 0) == 0) {
                    k.ended = true;
                    k.rc = std::atoi(line.c_str() + 3);
                    continue;
                }
                const auto sp = line.find(' ');
                if (sp == std::string::npos) continue;
                const std::string name = line.substr(0, sp), text = line.substr(sp + 1);
                if (!std::regex_match(name, k_rank_file) || !std::regex_match(text, k_rank_text)) continue;
                k.has.insert(name);
                files.emplace(name, text);
            }
        }
        for (auto& k : ranks) {
            if (k.ended) continue;
            std::string put;
            for (const auto& [name, text] : files) {
                if (k.has.count(name)) continue;
                put += fmt::format("echo {1} >{0}/{2}.tmp && mv {0}/{2}.tmp {0}/{2} && ", f, text, name);
                k.has.insert(name);
            }
            if (put.empty()) continue;
            tb.exec(k.host, put + "true", 30);
            moved = true;
        }
        all_ended = std::all_of(ranks.begin(), ranks.end(), [](const rank_state& k) { return k.ended; });
        if (!all_ended && !moved) tb.pause(0.3);
    }
    const auto log0 = tb.exec(ranks[0].host, "cat " + f + "/log", 30);
    const std::string why = read_collective_result(log0.out, op, w.size, r);
    std::string bad;
    for (unsigned i = 0; i < n; ++i) {
        const auto& k = ranks[i];
        if (k.ended && k.rc == 0) continue;
        const auto tail = tb.exec(k.host, "grep -v '^rc=' " + f + "/log | tail -n 2", 30);
        bad += fmt::format("{}rank {} on {} {}: {}", bad.empty() ? "" : "; ", i, tb.name(k.host),
                           k.ended ? fmt::format("(status {})", k.rc) : "(stopped: not ended in time)",
                           last_line(tail.out));
    }
    if (!why.empty() || !bad.empty()) {
        r.completed = false;
        r.error = why.empty() ? bad : why + (bad.empty() ? "" : "; " + bad);
    }
    for (const auto& k : ranks)
        tb.exec(k.host,
                fmt::format("[ -f {0}/pid ] && kill $(cat {0}/pid) 2>/dev/null; rm -rf {0}; true", f), 30);
}

}  // namespace odl::cli::pair
