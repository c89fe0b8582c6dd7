// SPDX-License-Identifier: MIT
// Scenario YAML parser with file:line errors and configuration checks.
#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "odl/model/host/platform.h"
#include "odl/model/scenario/scenario.h"
#include "yaml_util.h"

namespace odl::model {

namespace fs = std::filesystem;

std::string_view to_string(workload_kind k) {
    switch (k) {
    case workload_kind::pingpong: return "pingpong";
    case workload_kind::stream: return "stream";
    case workload_kind::bidir: return "bidir";
    case workload_kind::allreduce: return "allreduce";
    case workload_kind::allgather: return "allgather";
    }
    return "?";
}

std::vector<std::string> metrics_of(workload_kind k) {
    switch (k) {
    case workload_kind::pingpong:
        return {"p50_us", "p90_us", "p99_us", "p999_us", "mean_us", "max_us", "messages_lost", "completed"};
    case workload_kind::stream:
    case workload_kind::bidir: return {"gbps", "messages_lost", "completed"};
    case workload_kind::allreduce:
    case workload_kind::allgather: return {"time_us", "busbw_gbps", "completed"};
    }
    return {};
}

std::vector<std::string> global_metrics() {
    return {"messages_lost", "link_down_noticed_us", "warnings", "frames_damaged"};
}

namespace {

using yaml::fail;

/// Scenario and workload names go into file names, reports and JSON: letters,
/// digits, '.', '_', '-' ("../x" wrote outside runs/, a byte that is not
/// UTF-8 failed the JSON report after the run). Host names also name the
/// model's SystemC modules, where '.' is a path separator (a.b and a_b
/// became one name).
std::string checked_name(const std::string& f, const YAML::Node& n, const char* what, bool host) {
    const std::string s = yaml::get_string(f, n, what);
    static const std::regex name_re("[A-Za-z0-9][A-Za-z0-9_.-]{0,63}");
    static const std::regex host_re("[A-Za-z0-9][A-Za-z0-9_-]{0,63}");
    if (!std::regex_match(s, host ? host_re : name_re))
        fail(f, n, fmt::format("{} '{}': expected up to 64 letters, digits, {}'_' and '-', starting with a letter "
                               "or digit", what, s, host ? "" : "'.', "));
    return s;
}

/// The model builds every host (about 2 MB of modules each); far more than
/// any ring the VM testbed can run (4) and a bound a typo cannot pass.
constexpr std::size_t k_max_hosts = 64;
/// What `odl run --seed` takes, so a scenario's seed means the same on every target.
constexpr std::uint64_t k_max_seed = 999999999999999999ull;

unsigned host_index(const std::string& file, const YAML::Node& n, const scenario& s,
                    const std::string& name) {
    for (unsigned i = 0; i < s.hosts.size(); ++i)
        if (s.hosts[i].name == name) return i;
    std::string have;
    for (const auto& h : s.hosts) have += fmt::format("{}{}", have.empty() ? "" : ", ", h.name);
    fail(file, n, fmt::format("unknown host '{}' (have: {})", name, have));
}

/// Cable index between hosts @a and @b, or -1.
int cable_between(const scenario& s, unsigned a, unsigned b) {
    for (unsigned i = 0; i < s.cables.size(); ++i) {
        const auto& c = s.cables[i];
        if ((c.host_a == a && c.host_b == b) || (c.host_a == b && c.host_b == a))
            return static_cast<int>(i);
    }
    return -1;
}

void parse_hosts(const std::string& f, const YAML::Node& n, scenario& s, const calibration& cal) {
    if (!n || !n.IsSequence() || n.size() < 2) fail(f, n, "expected 'hosts:' with at least two hosts");
    if (n.size() > k_max_hosts)
        fail(f, n, fmt::format("expected at most {} hosts, got {}", k_max_hosts, n.size()));
    for (const auto& h : n) {
        yaml::check_keys(f, h, {"name", "platform", "completion", "throttle", "nhi"}, "a host");
        scenario_host sh;
        sh.name = checked_name(f, yaml::require(f, h, "name", "host 'name'"), "host name", true);
        for (const auto& o : s.hosts)
            if (o.name == sh.name) fail(f, h, fmt::format("host '{}' is listed twice", sh.name));
        sh.platform = h["platform"] ? yaml::get_string(f, h["platform"], "platform")
                                    : std::string("intel-tb5-discrete");
        try {
            cal.get(sh.platform);
        } catch (const std::exception& e) {
            fail(f, h["platform"] ? h["platform"] : h, e.what());
        }
        if (h["completion"]) {
            const auto m = yaml::get_string(f, h["completion"], "completion");
            if (m != "poll" && m != "interrupt") fail(f, h["completion"], "expected completion: poll or interrupt");
            sh.interrupts = m == "interrupt";
        }
        if (h["throttle"]) {
            const sc_core::sc_time t = yaml::get_time(f, h["throttle"], "throttle");
            const double units = t.to_seconds() * 1e9 / 256.0;
            if (units > 65535) fail(f, h["throttle"], "expected a throttle below 16.7 ms (16-bit, 256 ns units)");
            sh.throttle = static_cast<unsigned>(units + 0.5);
        }
        if (h["nhi"]) {
            const auto m = yaml::get_string(f, h["nhi"], "nhi");
            const auto impl = parse_irq_impl(m);
            if (!impl) fail(f, h["nhi"], "expected nhi: model, rtl or lockstep");
            sh.nhi = *impl;
        }
        s.hosts.push_back(sh);
    }
}

void parse_cables(const std::string& f, const YAML::Node& n, scenario& s) {
    if (!n || !n.IsSequence() || n.size() == 0) fail(f, n, "expected 'cables:' with at least one cable");
    for (const auto& c : n) {
        yaml::check_keys(f, c, {"between", "generation", "lanes", "asymmetric", "length", "plugged"},
                         "a cable");
        const YAML::Node b = c["between"];
        if (!b || !b.IsSequence() || b.size() != 2)
            fail(f, c, "expected 'between: [hostA, hostB]'");
        scenario_cable sc;
        const auto ha = host_index(f, b[0], s, yaml::get_string(f, b[0], "a host name"));
        const auto hb = host_index(f, b[1], s, yaml::get_string(f, b[1], "a host name"));
        if (ha == hb) fail(f, b, "a cable needs two different hosts");
        if (cable_between(s, ha, hb) >= 0)
            fail(f, b, "these hosts are already joined by a cable (one cable per pair)");
        sc.host_a = ha;
        sc.host_b = hb;
        sc.port_a = ++s.hosts[ha].ports;
        sc.port_b = ++s.hosts[hb].ports;
        const std::string g = c["generation"] ? yaml::get_string(f, c["generation"], "generation")
                                              : std::string("tb5");
        const auto gen = parse_generation(g);
        if (!gen) fail(f, c["generation"], fmt::format("expected generation tb3, usb4-gen2, tb4 or tb5, got '{}'", g));
        sc.cfg.gen = *gen;
        if (c["asymmetric"]) sc.cfg.asymmetric = yaml::get_bool(f, c["asymmetric"], "asymmetric");
        sc.cfg.lanes = c["lanes"] ? static_cast<unsigned>(yaml::get_uint(f, c["lanes"], "lanes", 1, 4))
                                  : (sc.cfg.asymmetric ? 3u : 2u);
        sc.cfg.fast_end = 0;
        if (c["length"]) {
            const std::string len = yaml::get_string(f, c["length"], "length");
            double v = 0;
            std::string unit;
            if (!yaml::split_unit(len, &v, &unit) || unit != "m")
                fail(f, c["length"], fmt::format("expected length in metres like 1m or 0.8m, got '{}'", len));
            sc.cfg.length_m = v;
        }
        if (c["plugged"]) sc.plugged = yaml::get_bool(f, c["plugged"], "plugged");
        if (auto why = validate(sc.cfg)) fail(f, c, fmt::format("impossible cable: {}", *why));
        s.cables.push_back(sc);
    }
    for (const auto& h : s.hosts)
        if (h.ports > 7) fail(f, n, fmt::format("host '{}' has {} cables; the model supports 7 ports", h.name, h.ports));
}

void parse_events(const std::string& f, const YAML::Node& n, scenario& s) {
    if (!n) return;
    if (!n.IsSequence()) fail(f, n, "expected 'events:' as a list");
    for (const auto& e : n) {
        yaml::check_keys(f, e, {"at", "event", "cable", "host", "ber", "generation", "lanes", "down"},
                         "an event");
        scenario_event ev;
        ev.at = yaml::get_time(f, yaml::require(f, e, "at", "'at' time"), "'at' time");
        const char* kinds = "'event' (plug, unplug, ber, degrade, retrain, host-reset)";
        const std::string k = yaml::get_string(f, yaml::require(f, e, "event", kinds), kinds);
        const auto want_cable = [&] {
            if (e["cable"]) {
                const auto c = yaml::get_uint(f, e["cable"], "cable index");
                if (c >= s.cables.size())
                    fail(f, e["cable"], fmt::format("cable {} does not exist (have {})", c, s.cables.size()));
                ev.cable = static_cast<unsigned>(c);
            }
        };
        // Keys another kind of event takes would be ignored here: say so.
        const auto only = [&](std::initializer_list<const char*> keys) {
            yaml::check_keys(f, e, keys, fmt::format("event {}", k).c_str());
        };
        if (k == "plug") { ev.kind = event_kind::plug; only({"at", "event", "cable"}); want_cable(); }
        else if (k == "unplug") { ev.kind = event_kind::unplug; only({"at", "event", "cable"}); want_cable(); }
        else if (k == "retrain") { ev.kind = event_kind::retrain; only({"at", "event", "cable"}); want_cable(); }
        else if (k == "ber") {
            ev.kind = event_kind::ber;
            only({"at", "event", "cable", "ber"});
            want_cable();
            const char* what = "'ber' (bit-error rate, e.g. 1e-9)";
            ev.ber = yaml::get_double(f, yaml::require(f, e, "ber", what), what);
            if (ev.ber < 0 || ev.ber > 1e-3) fail(f, e["ber"], "expected a bit-error rate between 0 and 1e-3");
        } else if (k == "degrade") {
            ev.kind = event_kind::degrade;
            only({"at", "event", "cable", "generation", "lanes"});
            want_cable();
            const auto& c = s.cables[ev.cable];
            ev.gen = c.cfg.gen;
            if (e["generation"]) {
                const auto g = parse_generation(yaml::get_string(f, e["generation"], "generation"));
                if (!g) fail(f, e["generation"], "expected generation tb3, usb4-gen2, tb4 or tb5");
                ev.gen = *g;
            }
            ev.lanes = e["lanes"] ? static_cast<unsigned>(yaml::get_uint(f, e["lanes"], "lanes", 1, 4)) : c.cfg.lanes;
            link_config deg = c.cfg;
            deg.gen = ev.gen;
            deg.lanes = ev.lanes;
            if (deg.gen != generation::gen4) deg.asymmetric = false;
            if (auto why = validate(deg)) fail(f, e, fmt::format("impossible degradation: {}", *why));
        } else if (k == "host-reset") {
            ev.kind = event_kind::host_reset;
            only({"at", "event", "host", "down"});
            const YAML::Node h = yaml::require(f, e, "host", "host");
            ev.host = host_index(f, h, s, yaml::get_string(f, h, "host"));
            ev.down = e["down"] ? yaml::get_time(f, e["down"], "down") : sc_core::sc_time(1, sc_core::SC_MS);
        } else {
            fail(f, e["event"], fmt::format("expected event plug, unplug, ber, degrade, retrain or host-reset, got '{}'", k));
        }
        if (ev.at > s.duration) fail(f, e["at"], "event after the end of the scenario (duration)");
        s.events.push_back(ev);
    }
    std::stable_sort(s.events.begin(), s.events.end(),
                     [](const scenario_event& a, const scenario_event& b) { return a.at < b.at; });
}

void parse_workloads(const std::string& f, const YAML::Node& n, scenario& s) {
    if (!n || !n.IsSequence() || n.size() == 0) fail(f, n, "expected 'workloads:' with at least one workload");
    for (const auto& w : n) {
        yaml::check_keys(f, w, {"name", "type", "from", "to", "hosts", "size", "iterations", "count", "start"},
                         "a workload");
        scenario_workload wl;
        const char* types = "workload 'type' (pingpong, stream, bidir, allreduce, allgather)";
        const std::string t = yaml::get_string(f, yaml::require(f, w, "type", types), types);
        if (t == "pingpong") wl.kind = workload_kind::pingpong;
        else if (t == "stream") wl.kind = workload_kind::stream;
        else if (t == "bidir") wl.kind = workload_kind::bidir;
        else if (t == "allreduce") wl.kind = workload_kind::allreduce;
        else if (t == "allgather") wl.kind = workload_kind::allgather;
        else fail(f, w["type"], fmt::format("expected type pingpong, stream, bidir, allreduce or allgather, got '{}'", t));
        if (is_collective(wl.kind))
            yaml::check_keys(f, w, {"name", "type", "hosts", "size", "iterations", "count", "start"},
                             fmt::format("a {} workload (a ring of hosts, no from/to)", t).c_str());
        else
            yaml::check_keys(f, w, {"name", "type", "from", "to", "size", "iterations", "count", "start"},
                             fmt::format("a {} workload (from/to, no hosts)", t).c_str());
        wl.name = w["name"] ? checked_name(f, w["name"], "workload name", false)
                            : fmt::format("{}{}", t, s.workloads.size());
        for (const auto& o : s.workloads)
            if (o.name == wl.name) fail(f, w, fmt::format("workload name '{}' is used twice", wl.name));
        wl.size = w["size"] ? yaml::get_size(f, w["size"], "size") : 64;
        if (w["iterations"] && w["count"]) fail(f, w["count"], "expected 'iterations' or 'count', not both");
        for (const char* key : {"iterations", "count"})
            if (w[key]) wl.count = static_cast<unsigned>(yaml::get_uint(f, w[key], key, 1, 10000000));
        if (w["start"]) wl.start = yaml::get_time(f, w["start"], "start");
        // A workload that starts when the run is over reported 0 samples
        // "NOT completed", and assertions on it passed.
        if (wl.start >= s.duration)
            fail(f, w["start"], fmt::format("workload starts at or after the end of the scenario (duration {})",
                                            s.duration.to_string()));
        if (is_collective(wl.kind)) {
            const YAML::Node hs = w["hosts"];
            if (!hs || !hs.IsSequence() || hs.size() < 2) fail(f, w, "expected 'hosts: [h0, h1, ...]' (the ring, 2 or more)");
            std::set<unsigned> seen;
            for (const auto& h : hs) {
                wl.hosts.push_back(host_index(f, h, s, yaml::get_string(f, h, "host")));
                if (!seen.insert(wl.hosts.back()).second)
                    fail(f, h, fmt::format("host '{}' appears twice in the ring", s.hosts[wl.hosts.back()].name));
            }
            for (std::size_t i = 0; i < wl.hosts.size(); ++i) {
                const unsigned a = wl.hosts[i], b = wl.hosts[(i + 1) % wl.hosts.size()];
                if (cable_between(s, a, b) < 0)
                    fail(f, hs, fmt::format("no cable between '{}' and '{}' for the ring", s.hosts[a].name, s.hosts[b].name));
            }
            if (wl.size < wl.hosts.size()) fail(f, w["size"], "expected a size of at least one byte per host");
        } else {
            const YAML::Node from = yaml::require(f, w, "from", "'from' host");
            const YAML::Node to = yaml::require(f, w, "to", "'to' host");
            const unsigned a = host_index(f, from, s, yaml::get_string(f, from, "'from' host"));
            const unsigned b = host_index(f, to, s, yaml::get_string(f, to, "'to' host"));
            if (cable_between(s, a, b) < 0)
                fail(f, w, fmt::format("no cable between '{}' and '{}' (only direct links are routed)", s.hosts[a].name, s.hosts[b].name));
            wl.hosts = {a, b};
        }
        s.workloads.push_back(wl);
    }
}

void parse_assertions(const std::string& f, const YAML::Node& n, scenario& s) {
    if (!n) return;
    if (!n.IsSequence()) fail(f, n, "expected 'assertions:' as a list");
    for (const auto& a : n) {
        yaml::check_keys(f, a, {"workload", "metric", "max", "min"}, "an assertion");
        scenario_assertion as;
        as.where = yaml::where(f, a);
        as.metric = yaml::get_string(f, yaml::require(f, a, "metric", "'metric'"), "'metric'");
        std::vector<std::string> known = global_metrics();
        if (a["workload"]) {
            as.workload = yaml::get_string(f, a["workload"], "workload name");
            auto it = std::find_if(s.workloads.begin(), s.workloads.end(),
                                   [&](const scenario_workload& w) { return w.name == as.workload; });
            if (it == s.workloads.end()) fail(f, a["workload"], fmt::format("unknown workload '{}'", as.workload));
            known = metrics_of(it->kind);
        }
        if (std::find(known.begin(), known.end(), as.metric) == known.end())
            fail(f, a["metric"], fmt::format("unknown metric '{}' here (expected one of: {})", as.metric,
                                             fmt::join(known, ", ")));
        if (a["max"]) as.max = yaml::get_double(f, a["max"], "max");
        if (a["min"]) as.min = yaml::get_double(f, a["min"], "min");
        if (!as.max && !as.min) fail(f, a, "expected 'max:' and/or 'min:'");
        if (as.max && as.min && *as.min > *as.max)
            fail(f, a["min"], fmt::format("min {} is above max {}: the assertion could never pass", *as.min, *as.max));
        s.assertions.push_back(as);
    }
}

}  // namespace

scenario load_scenario(const std::string& path) {
    scenario s;
    s.file = path;
    const YAML::Node root = yaml::load_file(path);
    yaml::check_keys(path, root,
                     {"name", "description", "seed", "calibration", "duration", "hosts", "cables",
                      "events", "workloads", "assertions"},
                     "the scenario");
    s.name = root["name"] ? checked_name(path, root["name"], "scenario name", false) : fs::path(path).stem().string();
    if (root["description"]) s.description = yaml::get_text(path, root["description"], "description");
    if (root["seed"]) s.seed = yaml::get_uint(path, root["seed"], "seed", 0, k_max_seed);
    if (root["calibration"]) {
        const fs::path c = yaml::get_string(path, root["calibration"], "calibration path");
        s.calibration = c.is_absolute() ? c.string() : (fs::path(path).parent_path() / c).string();
    }
    s.duration = root["duration"] ? yaml::get_time(path, root["duration"], "duration")
                                  : sc_core::sc_time(100, sc_core::SC_MS);
    if (s.duration > sc_core::sc_time(100, sc_core::SC_SEC) || s.duration == sc_core::SC_ZERO_TIME)
        yaml::fail(path, root["duration"], "expected a duration above 0 and at most 100 s");
    // A calibration file the scenario names is its input too: its errors
    // are reported at the scenario's line that named it.
    calibration cal;
    if (s.calibration.empty()) {
        cal = load_calibration(default_calibration_path());
    } else {
        try {
            cal = load_calibration(s.calibration);
        } catch (const std::runtime_error& e) {
            yaml::fail(path, root["calibration"], fmt::format("calibration: {}", e.what()));
        }
    }
    parse_hosts(path, root["hosts"], s, cal);
    parse_cables(path, root["cables"], s);
    parse_events(path, root["events"], s);
    parse_workloads(path, root["workloads"], s);
    parse_assertions(path, root["assertions"], s);
    return s;
}

}  // namespace odl::model
