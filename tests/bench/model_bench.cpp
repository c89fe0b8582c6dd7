// SPDX-License-Identifier: MIT
// model_bench: simulation speed of a saturated TB5 stream of 4 KiB frames
// (goal: >= 1.0x real time, i.e. >= 2.4 M frames per wall second).
#include <benchmark/benchmark.h>

#include <chrono>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include "odl/model/core/scheduler.h"
#include "odl/model/linkd/sim_server.h"
#include "odl/model/reduced/pipeline.h"
#include "odl/model/scenario/system.h"
#include "odl/wire/frame.h"

namespace {

using namespace odl::model;

/// Integrated NHI without a PCIe cap and with tiny host costs, so the 80G
/// link is the bottleneck and the model has to keep up with it.
platform line_rate_platform(bool poll) {
    platform p;
    p.name = "bench";
    p.nhi.pcie_gbps = 0;
    p.nhi.frame_overhead = sc_core::SC_ZERO_TIME;
    p.host.post = p.host.completion = sc_core::sc_time(100, sc_core::SC_NS);
    p.host.post_frame = p.host.completion_frame = sc_core::sc_time(5, sc_core::SC_NS);
    p.host.interrupts = !poll;
    return p;
}

const calibration& shipped() {
    static const calibration c = load_calibration(default_calibration_path());
    return c;
}

/// A 1 m cable of generation @gen, two lanes each way, or with @asym (gen4
/// only) 3 lanes A -> B and 1 back, as odl-linkd --asymmetric makes it.
link_config cable_of(generation gen = generation::gen4, bool asym = false) {
    link_config c;
    c.gen = gen;
    c.asymmetric = asym;
    return c;
}

/// A saturated stream of one-frame 4 KiB messages A -> B over @link; @plat
/// on both hosts, or the line-rate platform; @copy payload bytes the NHIs
/// move per frame.
void stream(benchmark::State& state, const link_config& link, const platform* plat = nullptr,
            std::uint32_t copy = ODL_FRAME_HDR_BYTES, irq_impl irq = irq_impl::model) {
    const unsigned frames = static_cast<unsigned>(state.range(0));
    double sim_s = 0, wall_s = 0;
    std::uint64_t events = 0, delivered = 0;
    for (auto _ : state) {
        std::vector<host_spec> hs(2);
        hs[0].name = "a";
        hs[1].name = "b";
        hs[0].plat = hs[1].plat = plat ? *plat : line_rate_platform(true);
        hs[0].copy_limit = hs[1].copy_limit = copy;
        hs[0].irq.impl = hs[1].irq.impl = irq;
        cable_spec c;
        c.cfg = link;
        link_calibration l = plat ? shipped().link : link_calibration{};
        l.link_train = sc_core::sc_time(1, sc_core::SC_US);
        const auto t0 = std::chrono::steady_clock::now();
        system_model sys(hs, {c}, l, 1, false);
        unsigned got = 0;
        sc_core::sc_time first, last;
        sys.hosts[1].drv->on_message([&](unsigned, std::uint32_t, std::uint64_t) {
            if (got++ == 0) first = scheduler::now();
            last = scheduler::now();
        });
        sys.start([&] {
            for (unsigned i = 0; i < frames; ++i) sys.hosts[0].drv->send(1, ODL_FRAME_MAX_PAYLOAD, i);
        });
        sys.run_until(sc_core::sc_time(1, sc_core::SC_SEC));
        wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        sim_s += (last - first).to_seconds();
        events += sys.sched.events_run();
        delivered += got;
        if (got != frames) state.SkipWithError("frames lost");
    }
    state.counters["frames_per_wall_s"] = static_cast<double>(delivered) / wall_s;
    state.counters["events_per_wall_s"] = static_cast<double>(events) / wall_s;
    state.counters["realtime_factor"] = sim_s / wall_s;
    state.counters["sim_gbps"] = static_cast<double>(delivered) * 4096 * 8 / sim_s / 1e9;
}

void BM_Tb5Stream4KiB(benchmark::State& state) { stream(state, cable_of()); }
void BM_Tb5AsymStream4KiB(benchmark::State& state) { stream(state, cable_of(generation::gen4, true)); }
/// The line-rate stream with interrupt completion on both hosts, so every
/// frame goes through the NHI's interrupt unit: argument 1 picks it, 0 the
/// C++ twin, 1 the Verilated RTL block, 2 both in lock step (model/rtl).
void BM_Tb5Stream4KiBIrq(benchmark::State& state) {
    static const platform irq_platform = line_rate_platform(false);
    const irq_impl impl = state.range(1) == 1 ? irq_impl::rtl : state.range(1) == 2 ? irq_impl::lockstep : irq_impl::model;
    state.SetLabel(to_string(impl));
    stream(state, cable_of(), &irq_platform, ODL_FRAME_HDR_BYTES, impl);
}
/// What odl-linkd --sim runs: the shipped intel-tb5-discrete profile (host
/// costs, interrupts, noise), whole payloads (second argument 4096) or
/// headers only (32), which is what the sim server asks for.
void BM_SimProfileStream4KiB(benchmark::State& state) {
    stream(state, cable_of(), &shipped().get("intel-tb5-discrete"), static_cast<std::uint32_t>(state.range(1)));
}

/// The sim server's pattern: frames posted in batches as the programs send
/// them (every 0.8 us, about the profile's 41 Gb/s), the model advanced without the kernel to
/// each batch's last stamp (run_direct), as odl-linkd --sim does. A third
/// argument of 0 posts a batch's frames all at one time, as the server does
/// when the model is behind the programs' stamps (the batch then comes every
/// batch x 0.8 us).
void BM_SimPacedStream4KiB(benchmark::State& state) {
    const unsigned frames = static_cast<unsigned>(state.range(0));
    const unsigned batch = static_cast<unsigned>(state.range(1));
    const bool spaced = state.range(2) != 0;
    double wall_s = 0;
    std::uint64_t events = 0, delivered = 0;
    for (auto _ : state) {
        std::vector<host_spec> hs(2);
        hs[0].name = "a";
        hs[1].name = "b";
        hs[0].plat = hs[1].plat = shipped().get("intel-tb5-discrete");
        hs[0].copy_limit = hs[1].copy_limit = ODL_FRAME_HDR_BYTES;
        cable_spec c;
        link_calibration l = shipped().link;
        l.link_train = sc_core::sc_time(1, sc_core::SC_US);
        system_model sys(hs, {c}, l, 1, false);
        unsigned got = 0;
        sys.hosts[1].drv->on_message([&](unsigned, std::uint32_t, std::uint64_t) { ++got; });
        bool ready = false;
        sys.start([&] { ready = true; });
        sc_core::sc_time t = sc_core::SC_ZERO_TIME;
        while (!ready) sys.run_until(t += sc_core::sc_time(100, sc_core::SC_US));
        const auto t0 = std::chrono::steady_clock::now();
        const std::uint64_t ev0 = sys.sched.events_run();
        const sc_core::sc_time gap(800, sc_core::SC_NS);
        auto& drv = *sys.hosts[0].drv;
        for (unsigned i = 0; i < frames;) {
            const sc_core::sc_time batch_at = t + gap * double(batch);
            for (unsigned k = 0; k < batch && i < frames; ++k, ++i) {
                t = spaced ? t + gap : batch_at;
                sys.sched.at(t, [&drv, i] { drv.send(1, ODL_FRAME_MAX_PAYLOAD, i); });
            }
            sys.sched.run_direct(t);
        }
        sys.sched.run_direct(t + sc_core::sc_time(100, sc_core::SC_MS));
        wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        events += sys.sched.events_run() - ev0;
        delivered += got;
        if (got != frames) state.SkipWithError("frames lost");
    }
    state.counters["frames_per_wall_s"] = static_cast<double>(delivered) / wall_s;
    state.counters["events_per_frame"] = static_cast<double>(events) / static_cast<double>(delivered);
}

/// BM_SimPacedStream4KiB's pattern on the reduced model (odl-linkd
/// --sim-timing pipeline), fitted once to the same hosts and cable, run as
/// the server runs it: a frame's times set when it is taken, frames handed
/// over in order once their leaving time has come; no scheduler action.
void BM_PipelinePacedStream4KiB(benchmark::State& state) {
    const unsigned frames = static_cast<unsigned>(state.range(0));
    const unsigned batch = static_cast<unsigned>(state.range(1));
    const bool spaced = state.range(2) != 0;
    static const pipeline_params params = [] {
        std::vector<host_spec> hs(2);
        hs[0].name = "a";
        hs[1].name = "b";
        hs[0].plat = hs[1].plat = shipped().get("intel-tb5-discrete");
        return fit_pipeline(hs, cable_spec{}, shipped().link, 1);
    }();
    double wall_s = 0;
    std::uint64_t delivered = 0;
    for (auto _ : state) {
        sim_session session;
        pipeline_state stage(params);
        std::deque<sc_core::sc_time> leaving;  // frames in the stage, in order
        sc_core::sc_time last_due;
        unsigned got = 0;
        const auto deliver = [&](const sc_core::sc_time& upto) {
            for (; !leaving.empty() && leaving.front() <= upto; leaving.pop_front()) ++got;
        };
        const auto t0 = std::chrono::steady_clock::now();
        const sc_core::sc_time gap(800, sc_core::SC_NS);
        sc_core::sc_time t = sc_core::SC_ZERO_TIME;
        for (unsigned i = 0; i < frames;) {
            const sc_core::sc_time batch_at = t + gap * double(batch);
            for (unsigned k = 0; k < batch && i < frames; ++k, ++i) {
                t = spaced ? t + gap : batch_at;
                deliver(t);
                sc_core::sc_time left;
                last_due = stage.due(0, t, ODL_FRAME_MAX_PAYLOAD, true, true, &left);
                leaving.push_back(left);
            }
        }
        deliver(last_due);
        wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        delivered += got;
        if (got != frames) state.SkipWithError("frames lost");
    }
    state.counters["frames_per_wall_s"] = static_cast<double>(delivered) / wall_s;
}

/// What `odl-linkd --sim` serves by default (--sim-timing auto) for
/// @profile on both hosts over @link: the reduced model where its check
/// against the full model passes, else the full model. A saturated stream
/// of one-frame 4 KiB messages A -> B (argument: how many), headers only
/// (as the server moves them): realtime_factor >= 1 means the model the
/// server runs keeps up with that link on one core (the server's own socket
/// work not counted). The label says which model served and, for the full
/// one, why.
void BM_ServedStream4KiB(benchmark::State& state, const std::string& profile, const link_config& link) {
    // The decision (a fit and a check on the full model, about 0.1 s) once
    // per benchmark, not on each of the library's calls of this function.
    struct decision {
        std::optional<linkd::pipeline_plan> plan;
        std::string why;
    };
    static std::map<std::string, decision> decided;
    const std::string key = profile + " " + std::string(to_string(link.gen)) + (link.asymmetric ? " asym" : "");
    auto it = decided.find(key);
    if (it == decided.end()) {
        linkd::sim_server_config cfg;
        cfg.profile = profile;
        cfg.cal = shipped();
        cfg.link = link;
        decision d;
        d.plan = linkd::auto_pipeline(cfg, &d.why);
        it = decided.emplace(key, std::move(d)).first;
    }
    const std::optional<linkd::pipeline_plan>& plan = it->second.plan;
    const std::string& why = it->second.why;
    if (!plan) {
        state.SetLabel("full model: " + why.substr(0, why.find(':')));
        stream(state, link, &shipped().get(profile), ODL_FRAME_HDR_BYTES);
        return;
    }
    state.SetLabel("pipeline");
    const unsigned frames = static_cast<unsigned>(state.range(0));
    double sim_s = 0, wall_s = 0;
    std::uint64_t delivered = 0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        pipeline_state stage(plan->start);
        std::deque<sc_core::sc_time> leaving;  // frames in the stage, in order, as the server keeps them
        sc_core::sc_time first, last;
        for (unsigned i = 0; i < frames; ++i) {
            // All put in at once: the stage is the bottleneck, as when a
            // program streams faster than the modelled link carries.
            sc_core::sc_time left;
            last = stage.due(0, sc_core::SC_ZERO_TIME, ODL_FRAME_MAX_PAYLOAD, true, true, &left);
            leaving.push_back(left);
            if (i == 0) first = last;
        }
        for (; !leaving.empty() && leaving.front() <= last; leaving.pop_front()) ++delivered;
        wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        sim_s += (last - first).to_seconds();
    }
    if (delivered != std::uint64_t{frames} * state.iterations()) state.SkipWithError("frames lost");
    state.counters["frames_per_wall_s"] = static_cast<double>(delivered) / wall_s;
    state.counters["realtime_factor"] = sim_s / wall_s;
    state.counters["sim_gbps"] = static_cast<double>(delivered) * 4096 * 8 / sim_s / 1e9;
}

BENCHMARK(BM_Tb5Stream4KiB)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Tb5AsymStream4KiB)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Tb5Stream4KiBIrq)
    ->Args({100000, 0})
    ->Args({100000, 1})
    ->Args({100000, 2})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SimPacedStream4KiB)
    ->Args({100000, 1, 1})
    ->Args({100000, 50, 1})
    ->Args({100000, 64, 1})
    ->Args({100000, 64, 0})
    ->Args({100000, 256, 0})
    ->Args({100000, 1024, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_PipelinePacedStream4KiB)
    ->Args({100000, 1, 1})
    ->Args({100000, 64, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(BM_SimProfileStream4KiB)
    ->Args({100000, 4096})
    ->Args({100000, ODL_FRAME_HDR_BYTES})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

int main(int argc, char** argv) {
    // One per shipped profile and cable: BM_ServedStream4KiB/<profile>/<cable>/100000.
    const std::pair<const char*, link_config> cables[] = {
        {"tb4", cable_of(generation::gen3)},
        {"tb5", cable_of()},
        {"tb5-asym", cable_of(generation::gen4, true)},
    };
    for (const auto& profile : shipped().platforms) {
        const std::string& name = profile.first;
        for (const auto& [cable, link] : cables)
            benchmark::RegisterBenchmark(("BM_ServedStream4KiB/" + name + "/" + cable).c_str(), BM_ServedStream4KiB,
                                         name, link)
                ->Arg(100000)
                ->Unit(benchmark::kMillisecond)
                ->UseRealTime();
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
