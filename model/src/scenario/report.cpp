// SPDX-License-Identifier: MIT
// Run results as JSON and as a short human report.
#include <fmt/format.h>

#include "odl/model/scenario/runner.h"

namespace odl::model {

nlohmann::json run_result::to_json() const {
    nlohmann::json j;
    j["scenario"] = name;
    j["seed"] = seed;
    j["simulated_us"] = simulated_us;
    j["passed"] = passed();
    for (const auto& w : workloads) {
        nlohmann::json o{{"name", w.name},
                         {"type", std::string(to_string(w.kind))},
                         {"size_bytes", w.size},
                         {"count", w.count},
                         {"completed", w.completed},
                         {"messages_sent", w.messages_sent},
                         {"messages_received", w.messages_received},
                         {"messages_lost", w.messages_lost}};
        if (w.kind == workload_kind::pingpong) {
            o["one_way_us"] = {{"p50", w.p50_us}, {"p90", w.p90_us}, {"p99", w.p99_us},
                               {"p99.9", w.p999_us}, {"mean", w.mean_us},
                               {"max", w.max_us}, {"samples", w.latency_us.size()}};
        } else if (is_collective(w.kind)) {
            o["time_us"] = w.time_us;
            o["busbw_gbps"] = w.busbw_gbps;
        } else {
            o["gbps"] = w.gbps;
        }
        j["workloads"].push_back(o);
    }
    j["link_down_noticed_us"] = link_down_noticed_us;
    for (const auto& a : assertions)
        j["assertions"].push_back({{"assertion", a.text}, {"value", a.value}, {"passed", a.passed}});
    j["counters"] = counters;
    j["warnings"] = warnings;
    return j;
}

std::string run_result::to_text() const {
    std::string t = fmt::format("scenario {} (seed {}): {:.3f} ms simulated\n", name, seed,
                                simulated_us / 1000);
    for (const auto& w : workloads) {
        t += fmt::format("  {:<16} {:<9} {:>9} B x{:<6} ", w.name, to_string(w.kind), w.size, w.count);
        if (w.kind == workload_kind::pingpong)
            t += fmt::format("one-way p50 {:.2f} us  p99 {:.2f} us  p99.9 {:.2f} us  max {:.2f} us",
                             w.p50_us, w.p99_us, w.p999_us, w.max_us);
        else if (is_collective(w.kind))
            t += fmt::format("{:.1f} us per {}, busbw {:.2f} Gb/s", w.time_us,
                             w.kind == workload_kind::allreduce ? "all-reduce" : "all-gather", w.busbw_gbps);
        else
            t += fmt::format("{:.2f} Gb/s", w.gbps);
        t += fmt::format("  ({} received, {} lost{})\n", w.messages_received, w.messages_lost,
                         w.completed ? "" : ", NOT completed");
    }
    for (std::size_t i = 0; i < link_down_noticed_us.size(); ++i) {
        const double v = link_down_noticed_us[i];
        t += v < 0 ? fmt::format("  link down #{}: never noticed\n", i + 1)
                   : fmt::format("  link down #{}: noticed after {:.2f} us\n", i + 1, v);
    }
    if (!warnings.empty()) t += fmt::format("  {} model warnings (see the trace)\n", warnings.size());
    unsigned ok = 0;
    for (const auto& a : assertions) {
        t += fmt::format("  [{}] {}\n", a.passed ? "PASS" : "FAIL", a.text);
        ok += a.passed;
    }
    t += fmt::format("assertions: {} passed, {} failed\n", ok, assertions.size() - ok);
    return t;
}

}  // namespace odl::model
