// SPDX-License-Identifier: MIT
// Loads the calibration points and runs the model for each.
#include "odl/model/sweep/calibration_points.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "../scenario/yaml_util.h"
#include "odl/model/scenario/runner.h"
#include "odl/model/sweep/sweep.h"

namespace odl::model {

namespace {

const std::vector<std::string> k_metrics = {"one_way_mean", "one_way_p50", "one_way_p90",
                                            "one_way_p99",  "rtt_mean",    "rtt_p50",
                                            "gbps"};

std::vector<std::string> string_list(const std::string& file, const YAML::Node& n,
                                     const char* what) {
    std::vector<std::string> out;
    if (!n) return out;
    if (!n.IsSequence() || n.size() == 0)
        yaml::fail(file, n, fmt::format("expected '{}' as a list like [a, b]", what));
    for (const auto& e : n) out.push_back(yaml::get_string(file, e, what));
    return out;
}

bool tail_metric(const std::string& m) { return m == "one_way_p90" || m == "one_way_p99"; }

}  // namespace

std::string default_points_path() { return model_data_path("points.yaml"); }

sc_core::sc_time& time_param(platform& p, const std::string& name) {
    struct entry {
        const char* name;
        sc_core::sc_time* t;
    };
    const entry table[] = {
        {"pcie_rtt", &p.nhi.pcie_rtt},
        {"pcie_write", &p.nhi.pcie_write},
        {"frame_overhead", &p.nhi.frame_overhead},
        {"post", &p.host.post},
        {"post_frame", &p.host.post_frame},
        {"mmio", &p.host.mmio},
        {"completion", &p.host.completion},
        {"completion_frame", &p.host.completion_frame},
        {"irq_latency", &p.host.irq_latency},
        {"poll_period", &p.host.poll_period},
        {"noise.wake.median", &p.host.noise.wake.median},
        {"noise.wake.p99", &p.host.noise.wake.p99},
        {"noise.sched.median", &p.host.noise.sched.median},
        {"noise.sched.p99", &p.host.noise.sched.p99},
        {"noise.copy.median", &p.host.noise.copy.median},
        {"noise.copy.p99", &p.host.noise.copy.p99},
    };
    std::string have;
    for (const auto& e : table) {
        if (name == e.name) return *e.t;
        have += fmt::format("{}{}", have.empty() ? "" : ", ", e.name);
    }
    throw std::runtime_error(fmt::format("'{}' is not a fittable parameter (have: {})", name, have));
}

const sc_core::sc_time& time_param(const platform& p, const std::string& name) {
    return time_param(const_cast<platform&>(p), name);  // the same table, read only
}

calibration_points load_points(const std::string& path, const calibration& cal) {
    calibration_points out;
    out.path = path;
    const YAML::Node root = yaml::load_file(path);
    yaml::check_keys(path, root, {"points", "not_modelled"}, "the points file");
    const YAML::Node list = root["points"];
    if (!list || !list.IsSequence() || list.size() == 0)
        yaml::fail(path, root, "expected 'points:' with at least one point");
    for (const auto& n : list) {
        if (!n.IsMap()) yaml::fail(path, n, "expected a point (a map)");
        yaml::check_keys(path, n,
                         {"name", "what", "source", "platform", "generation", "mode", "throttle_us",
                          "size", "metric", "published", "tolerance", "role", "fits", "share_with",
                          "note"},
                         "a point");
        calibration_point_spec p;
        p.line = static_cast<unsigned>(n.Mark().line + 1);
        const auto need = [&](const char* key) {
            return yaml::require(path, n, key, fmt::format("'{}:' in each point", key).c_str());
        };
        const auto str = [&](const char* key) { return yaml::get_string(path, need(key), key); };
        p.name = str("name");
        p.what = str("what");
        p.source = str("source");
        p.platform = str("platform");
        p.generation = str("generation");
        p.mode = str("mode");
        p.metric = str("metric");
        const std::string role = str("role");
        if (n["note"]) p.note = yaml::get_string(path, n["note"], "note");
        for (const auto& q : out.points)
            if (q.name == p.name) yaml::fail(path, n["name"], fmt::format("point '{}' twice", p.name));
        try {
            cal.get(p.platform);
        } catch (const std::exception& e) {
            yaml::fail(path, n["platform"], e.what());
        }
        if (p.generation != "tb5-asym" && !parse_generation(p.generation))
            yaml::fail(path, n["generation"], "expected generation tb3, tb4, tb5 or tb5-asym");
        if (p.mode != "poll" && p.mode != "interrupt")
            yaml::fail(path, n["mode"], "expected mode poll or interrupt");
        if (std::find(k_metrics.begin(), k_metrics.end(), p.metric) == k_metrics.end())
            yaml::fail(path, n["metric"], fmt::format("expected metric one of {}", fmt::join(k_metrics, ", ")));
        if (role != "fit" && role != "validate") yaml::fail(path, n["role"], "expected role fit or validate");
        p.fit = role == "fit";
        p.size = yaml::get_size(path, need("size"), "size");
        if (p.size == 0 || p.size > (1ull << 30)) yaml::fail(path, n["size"], "expected a size in 1 B..1 GiB");
        p.published = yaml::get_double(path, need("published"), "published");
        if (!(p.published > 0)) yaml::fail(path, n["published"], "expected a published value above 0");
        p.tolerance = yaml::get_double(path, need("tolerance"), "tolerance");
        if (!(p.tolerance > 0 && p.tolerance < 1))
            yaml::fail(path, n["tolerance"], "expected a tolerance as a fraction in (0, 1)");
        if (n["throttle_us"]) {
            p.throttle_us = yaml::get_double(path, n["throttle_us"], "throttle_us");
            if (!(p.throttle_us >= 0 && p.throttle_us <= 16000))
                yaml::fail(path, n["throttle_us"], "expected throttle_us in 0..16000");
        }
        p.fits = string_list(path, n["fits"], "fits");
        p.share_with = string_list(path, n["share_with"], "share_with");
        if (p.fit && p.fits.empty()) yaml::fail(path, n, "expected 'fits:' (the parameters a fit point determines)");
        if (!p.fit && (!p.fits.empty() || !p.share_with.empty()))
            yaml::fail(path, n, "a validate point fits nothing: no 'fits:' or 'share_with:'");
        for (const auto& s : p.share_with) {
            try {
                cal.get(s);
            } catch (const std::exception& e) {
                yaml::fail(path, n["share_with"], e.what());
            }
        }
        for (const auto& f : p.fits) {
            try {
                time_param(cal.get(p.platform), f);
            } catch (const std::exception& e) {
                yaml::fail(path, n["fits"], e.what());
            }
        }
        out.points.push_back(std::move(p));
    }
    out.not_modelled = string_list(path, root["not_modelled"], "not_modelled");
    return out;
}

std::string point_unit(const calibration_point_spec& p) {
    if (p.metric == "gbps") return "Gb/s";
    if (p.metric.rfind("rtt_", 0) == 0) return "us RTT";
    if (p.metric == "one_way_p90") return "us one-way p90";
    if (p.metric == "one_way_p99") return "us one-way p99";
    return "us one-way";
}

double evaluate_point(const calibration_point_spec& p, const calibration& cal) {
    const platform& plat = cal.get(p.platform);
    const double thr = p.throttle_us >= 0 ? p.throttle_us : plat.host.throttle * 256.0 / 1000.0;
    // Tails need more round trips than a median to settle.
    const unsigned iterations = tail_metric(p.metric) ? 2000 : 200;
    const bool irq = p.mode == "interrupt";
    if (p.metric == "gbps") return run_stream(p.generation, p.platform, irq, thr, p.size, cal);
    const workload_result r = run_pingpong(p.generation, p.platform, irq, thr, p.size, iterations, cal);
    if (p.metric == "one_way_mean") return r.mean_us;
    if (p.metric == "one_way_p50") return r.p50_us;
    if (p.metric == "one_way_p90") return percentile(r.latency_us, 90);
    if (p.metric == "one_way_p99") return percentile(r.latency_us, 99);
    if (p.metric == "rtt_mean") return 2 * r.mean_us;
    return 2 * r.p50_us;  // rtt_p50
}

}  // namespace odl::model
