// SPDX-License-Identifier: MIT
// Loads the calibration file: every timing parameter with its provenance.
#include <cstdint>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

#include "../scenario/yaml_util.h"
#include "odl/model/host/platform.h"

namespace odl::model {

namespace {

struct param_reader {
    const std::string& file;
    const YAML::Node& map;
    std::map<std::string, std::string>& prov;

    YAML::Node value(const char* key) {
        const YAML::Node n = map[key];
        if (!n) yaml::fail(file, map, fmt::format("expected parameter '{}'", key));
        yaml::check_keys(file, n, {"value", "source"}, key);
        if (!n["source"] || yaml::get_string(file, n["source"], "source").empty())
            yaml::fail(file, n, fmt::format("expected 'source:' (provenance) for '{}'", key));
        prov[key] = n["source"].Scalar();
        if (!n["value"]) yaml::fail(file, n, fmt::format("expected 'value:' for '{}'", key));
        return n["value"];
    }
    /// A time up to @max: a cost of 1e300 s (or a negative number wrapped
    /// to one) left the model delivering nothing, and runs reported 0 us.
    sc_core::sc_time time(const char* key, double max_s = 1.0) {
        const YAML::Node v = value(key);
        const sc_core::sc_time t = yaml::get_time(file, v, key);
        if (t.to_seconds() > max_s) yaml::fail(file, v, fmt::format("expected {} of at most {:g} s", key, max_s));
        return t;
    }
    double number(const char* key) { return yaml::get_double(file, value(key), key); }
    /// A number in [@lo, @hi].
    double number(const char* key, double lo, double hi, const char* unit) {
        const YAML::Node v = value(key);
        const double d = yaml::get_double(file, v, key);
        if (d < lo || d > hi) yaml::fail(file, v, fmt::format("expected {} from {:g} to {:g}{}", key, lo, hi, unit));
        return d;
    }
    /// A whole number in [@lo, @hi] (a double cast to unsigned was undefined
    /// beyond its range: found by fuzz_calibration).
    unsigned count(const char* key, std::uint64_t lo, std::uint64_t hi, const char* unit) {
        const YAML::Node v = value(key);
        const std::uint64_t n = yaml::get_uint(file, v, key);
        if (n < lo || n > hi) yaml::fail(file, v, fmt::format("expected {} in {}..{}{}", key, lo, hi, unit));
        return static_cast<unsigned>(n);
    }
};

/// A platform's optional `noise:` map: wake, sched and copy, each with
/// probability, median, p99 and source.
void read_noise(const std::string& file, const YAML::Node& n, platform& p) {
    if (!n) return;
    if (!n.IsMap()) yaml::fail(file, n, "expected 'noise:' to map wake, sched or copy to a term");
    yaml::check_keys(file, n, {"wake", "sched", "copy"}, "noise");
    const auto term = [&](const char* key, noise_term& t) {
        const YAML::Node m = n[key];
        if (!m) return;
        const std::string what = fmt::format("noise.{}", key);
        if (!m.IsMap())
            yaml::fail(file, m, fmt::format("expected {} as {{probability, median, p99, source}}", what));
        yaml::check_keys(file, m, {"probability", "median", "p99", "source"}, what.c_str());
        for (const char* k : {"probability", "median", "p99", "source"})
            yaml::require(file, m, k, what.c_str());
        if (yaml::get_string(file, m["source"], "source").empty())
            yaml::fail(file, m, fmt::format("expected 'source:' (provenance) for '{}'", what));
        t.probability = yaml::get_double(file, m["probability"], "probability");
        if (!(t.probability >= 0 && t.probability <= 1))
            yaml::fail(file, m["probability"], "expected a probability in 0..1");
        t.median = yaml::get_time(file, m["median"], "median");
        t.p99 = yaml::get_time(file, m["p99"], "p99");
        if (t.median <= sc_core::SC_ZERO_TIME && t.probability > 0)
            yaml::fail(file, m["median"], "expected a median above 0 (or probability 0)");
        if (t.p99 < t.median) yaml::fail(file, m["p99"], "expected p99 at or above the median");
        if (t.p99.to_seconds() > 1.0 || t.median.to_seconds() > 1.0)
            yaml::fail(file, m, fmt::format("expected {} below 1 s", what));
        p.provenance[what] = m["source"].Scalar();
    };
    term("wake", p.host.noise.wake);
    term("sched", p.host.noise.sched);
    term("copy", p.host.noise.copy);
}

}  // namespace

const platform& calibration::get(const std::string& name) const {
    auto it = platforms.find(name);
    if (it != platforms.end()) return it->second;
    std::string have;
    for (const auto& kv : platforms) have += fmt::format("{}{}", have.empty() ? "" : ", ", kv.first);
    throw std::runtime_error(fmt::format("unknown platform '{}' (have: {})", name, have));
}

std::string model_data_path(const std::string& name) {
    // An installed program must not read the build machine's source tree:
    // it is gone, or another version.
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const std::filesystem::path installed = self.parent_path().parent_path() / "share/odl/model" / name;
        if (std::filesystem::is_regular_file(installed, ec)) return installed.string();
    }
    return std::string(ODL_MODEL_SOURCE_DIR) + "/model/calibration/" + name;
}

std::string default_calibration_path() { return model_data_path("default.yaml"); }

calibration load_calibration(const std::string& path) {
    calibration c;
    c.path = path;
    const YAML::Node root = yaml::load_file(path);
    yaml::check_keys(path, root, {"link", "platforms"}, "the calibration file");
    const YAML::Node link = root["link"];
    if (!link) yaml::fail(path, root, "expected a 'link:' section");
    yaml::check_keys(path, link,
                     {"gen4_coding_efficiency", "cable_ns_per_m", "router_hop", "link_train",
                      "dma_credits"},
                     "link");
    param_reader lr{path, link, c.link.provenance};
    c.link.physics.gen4_coding_efficiency = lr.number("gen4_coding_efficiency");
    if (c.link.physics.gen4_coding_efficiency <= 0.5 || c.link.physics.gen4_coding_efficiency > 1)
        yaml::fail(path, link["gen4_coding_efficiency"], "expected an efficiency in (0.5, 1]");
    c.link.physics.cable_ns_per_m = lr.number("cable_ns_per_m", 0, 100, " ns per metre");
    c.link.router_hop = lr.time("router_hop");
    c.link.link_train = lr.time("link_train", 10.0);
    c.link.dma_credits = lr.count("dma_credits", 1, 0xffff, " (frames each path may have in flight)");

    const YAML::Node plats = root["platforms"];
    if (!plats || !plats.IsMap() || plats.size() == 0)
        yaml::fail(path, root, "expected 'platforms:' with at least one platform");
    for (const auto& kv : plats) {
        const std::string name = kv.first.Scalar();
        const YAML::Node& n = kv.second;
        yaml::check_keys(path, n,
                         {"description", "pcie_rtt", "pcie_write", "pcie_gbps", "frame_overhead",
                          "post", "post_frame", "mmio", "completion", "completion_frame", "irq_latency", "poll_period", "copy_gbps",
                          "throttle", "completion_mode", "noise"},
                         "a platform");
        platform p;
        p.name = name;
        if (n["description"]) p.description = yaml::get_string(path, n["description"], "description");
        param_reader r{path, n, p.provenance};
        p.nhi.pcie_rtt = r.time("pcie_rtt");
        p.nhi.pcie_write = r.time("pcie_write");
        p.nhi.pcie_gbps = r.number("pcie_gbps", 0, 10000, " Gb/s (0: no PCIe limit)");
        p.nhi.frame_overhead = r.time("frame_overhead");
        p.host.post = r.time("post");
        p.host.post_frame = r.time("post_frame");
        p.host.completion_frame = r.time("completion_frame");
        p.host.mmio = r.time("mmio");
        p.host.completion = r.time("completion");
        p.host.irq_latency = r.time("irq_latency");
        p.host.poll_period = r.time("poll_period");
        p.host.copy_gbps = r.number("copy_gbps", 0, 10000, " Gb/s (0: no copy cost)");
        p.host.throttle = r.count("throttle", 0, 0xffff, " (256 ns units)");
        const std::string mode = yaml::get_string(path, r.value("completion_mode"), "completion_mode");
        if (mode != "poll" && mode != "interrupt")
            yaml::fail(path, n["completion_mode"], "expected completion_mode: poll or interrupt");
        p.host.interrupts = mode == "interrupt";
        read_noise(path, n["noise"], p);
        c.platforms.emplace(name, std::move(p));
    }
    return c;
}

}  // namespace odl::model
