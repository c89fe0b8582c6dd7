// SPDX-License-Identifier: MIT
// Scenario and calibration files: malformed YAML and impossible
// configurations give "file:line: expected ..." or the reason.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <set>
#include <stdexcept>
#include <string>

#include "odl/model/host/platform.h"
#include "odl/model/scenario/scenario.h"

namespace odl::model {
namespace {

/// The files this test writes, removed when it ends.
class tmp_files : public ::testing::Environment {
public:
    void TearDown() override {
        for (const auto& p : paths) std::remove(p.c_str());
    }
    std::set<std::string> paths;
};
tmp_files* const g_tmp = static_cast<tmp_files*>(::testing::AddGlobalTestEnvironment(new tmp_files));

std::string write_tmp(const std::string& name, const std::string& body) {
    const std::string path = ::testing::TempDir() + "odl-scenario-test-" + std::to_string(getpid()) + "-" + name;
    std::ofstream(path) << body;
    g_tmp->paths.insert(path);
    return path;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

/// Loads @body and returns the error message ("" if it loaded).
std::string error_of(const std::string& body) {
    const std::string path = write_tmp("scenario.yaml", body);
    try {
        load_scenario(path);
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

const std::string k_hosts = "hosts:\n  - {name: a}\n  - {name: b}\n";
const std::string k_cable = "cables:\n  - {between: [a, b], generation: tb5}\n";
const std::string k_work = "workloads:\n  - {type: pingpong, from: a, to: b}\n";

TEST(ScenarioParse, ValidScenarioLoads) {
    EXPECT_EQ(error_of(k_hosts + k_cable + k_work), "");
    const scenario s = load_scenario(write_tmp("ok.yaml", "seed: 9\n" + k_hosts + k_cable + k_work));
    EXPECT_EQ(s.seed, 9u);
    EXPECT_EQ(s.cables[0].port_a, 1u);
    EXPECT_EQ(s.cables[0].cfg.lanes, 2u);
}

TEST(ScenarioParse, SyntaxErrorNamesFileAndLine) {
    const std::string e = error_of(k_hosts + "cables:\n  - {between: [a, b]\n");
    EXPECT_NE(e.find("scenario.yaml:"), std::string::npos) << e;
    EXPECT_NE(e.find("expected"), std::string::npos) << e;
}

TEST(ScenarioParse, WrongTypeNamesLineAndExpectation) {
    const std::string e = error_of(k_hosts + k_cable + "workloads:\n  - {type: pingpong, from: a, to: b, size: lots}\n");
    EXPECT_NE(e.find("scenario.yaml:7:"), std::string::npos) << e;
    EXPECT_NE(e.find("expected size"), std::string::npos) << e;
}

TEST(ScenarioParse, UnknownKeyIsRejected) {
    const std::string e = error_of(k_hosts + k_cable + k_work + "asserts: []\n");
    EXPECT_NE(e.find("unknown key 'asserts'"), std::string::npos) << e;
}

TEST(ScenarioParse, ImpossibleCablesAreRejectedWithTheReason) {
    std::string e = error_of(k_hosts + "cables:\n  - {between: [a, b], generation: tb4, lanes: 3}\n" + k_work);
    EXPECT_NE(e.find("scenario.yaml:5:"), std::string::npos) << e;
    EXPECT_NE(e.find("1 or 2 lanes"), std::string::npos) << e;
    e = error_of(k_hosts + "cables:\n  - {between: [a, b], generation: tb4, asymmetric: true}\n" + k_work);
    EXPECT_NE(e.find("asymmetric links need USB4 v2 Gen4"), std::string::npos) << e;
    e = error_of(k_hosts + "cables:\n  - {between: [a, a]}\n" + k_work);
    EXPECT_NE(e.find("two different hosts"), std::string::npos) << e;
}

TEST(ScenarioParse, UnknownPlatformListsTheKnownOnes) {
    const std::string e = error_of("hosts:\n  - {name: a, platform: nope}\n  - {name: b}\n" + k_cable + k_work);
    EXPECT_NE(e.find("scenario.yaml:2:"), std::string::npos) << e;
    EXPECT_NE(e.find("intel-tb5-discrete"), std::string::npos) << e;
}

TEST(ScenarioParse, WorkloadNeedsADirectCable) {
    const std::string e = error_of("hosts:\n  - {name: a}\n  - {name: b}\n  - {name: c}\n" + k_cable +
                                   "workloads:\n  - {type: stream, from: a, to: c}\n");
    EXPECT_NE(e.find("no cable between 'a' and 'c'"), std::string::npos) << e;
}

TEST(ScenarioParse, ImpossibleDegradationIsRejected) {
    const std::string e = error_of(k_hosts + k_cable + k_work +
                                   "events:\n  - {at: 1ms, event: degrade, generation: tb4, lanes: 3}\n");
    EXPECT_NE(e.find("impossible degradation"), std::string::npos) << e;
}

TEST(ScenarioParse, UnknownMetricIsRejected) {
    const std::string e = error_of(k_hosts + k_cable +
                                   "workloads:\n  - {name: w, type: stream, from: a, to: b}\n"
                                   "assertions:\n  - {workload: w, metric: p99_us, max: 3}\n");
    EXPECT_NE(e.find("unknown metric 'p99_us'"), std::string::npos) << e;
}

/// Numbers the parser read wrongly before: wrapped to 32 bits, octal, hex,
/// saturated. Each is refused now, naming the value and the line.
TEST(ScenarioParse, WholeNumbersAreDecimalAndInRange) {
    std::string e = error_of(k_hosts + "cables:\n  - {between: [a, b], lanes: 4294967298}\n" + k_work);
    EXPECT_NE(e.find("scenario.yaml:5: expected lanes as a whole number from 1 to 4"), std::string::npos) << e;
    e = error_of(k_hosts + k_cable + "workloads:\n  - {type: pingpong, from: a, to: b, iterations: 4294967297}\n");
    EXPECT_NE(e.find("iterations as a whole number from 1 to 10000000"), std::string::npos) << e;
    e = error_of(k_hosts + k_cable + k_work + "events:\n  - {at: 1ms, event: unplug, cable: 4294967296}\n");
    EXPECT_NE(e.find("cable 4294967296 does not exist"), std::string::npos) << e;
    e = error_of("seed: 99999999999999999999999\n" + k_hosts + k_cable + k_work);
    EXPECT_NE(e.find("scenario.yaml:1: expected seed"), std::string::npos) << e;
    e = error_of(k_hosts + k_cable + k_work + "duration: 0x10ms\n");
    EXPECT_NE(e.find("expected duration as a duration"), std::string::npos) << e;
    e = error_of(k_hosts + "cables:\n  - {between: [a, b], length: 1m garbage}\n" + k_work);
    EXPECT_NE(e.find("expected length in metres"), std::string::npos) << e;
    // "010" is ten, not eight.
    const scenario s = load_scenario(write_tmp(
        "octal.yaml", k_hosts + k_cable + "workloads:\n  - {type: pingpong, from: a, to: b, iterations: 010}\n"));
    EXPECT_EQ(s.workloads[0].count, 10u);
}

TEST(ScenarioParse, DuplicateKeysAreRefused) {
    std::string e = error_of(k_hosts + "cables:\n  - {between: [a, b], lanes: 1, lanes: 2}\n" + k_work);
    EXPECT_NE(e.find("scenario.yaml:5: key 'lanes' given twice"), std::string::npos) << e;
    e = error_of("duration: 10ms\n" + k_hosts + k_cable + k_work + "duration: 50ms\n");
    EXPECT_NE(e.find("scenario.yaml:9: key 'duration' given twice"), std::string::npos) << e;
    // The same key in two mappings is fine, and so are aliases.
    EXPECT_EQ(error_of("hosts:\n  - &h {name: a}\n  - {name: b}\n" + k_cable + k_work), "");
}

TEST(ScenarioParse, WorkloadAfterTheEndAndEmptyDurationAreRefused) {
    std::string e = error_of("duration: 10ms\n" + k_hosts + k_cable +
                             "workloads:\n  - {type: pingpong, from: a, to: b, start: 50ms}\n");
    EXPECT_NE(e.find("scenario.yaml:8: workload starts at or after the end of the scenario"), std::string::npos) << e;
    e = error_of("duration: 0s\n" + k_hosts + k_cable + k_work);
    EXPECT_NE(e.find("expected a duration above 0"), std::string::npos) << e;
}

TEST(ScenarioParse, NamesAreCheckedAndRingsHaveDistinctHosts) {
    std::string e = error_of("name: ../../escaped\n" + k_hosts + k_cable + k_work);
    EXPECT_NE(e.find("scenario name '../../escaped'"), std::string::npos) << e;
    e = error_of("hosts:\n  - {name: a.b}\n  - {name: a_b}\n" + std::string("cables:\n  - {between: [a.b, a_b]}\n") +
                 "workloads:\n  - {type: pingpong, from: a.b, to: a_b}\n");
    EXPECT_NE(e.find("scenario.yaml:2: host name 'a.b'"), std::string::npos) << e;
    e = error_of("description: \"caf\xe9\"\n" + k_hosts + k_cable + k_work);
    EXPECT_NE(e.find("expected description as UTF-8 text"), std::string::npos) << e;
    e = error_of(k_hosts + k_cable + "workloads:\n  - {type: allreduce, hosts: [a, b, a, b]}\n");
    EXPECT_NE(e.find("host 'a' appears twice in the ring"), std::string::npos) << e;
    std::string many = "hosts:\n";
    for (int i = 0; i < 65; ++i) many += "  - {name: h" + std::to_string(i) + "}\n";
    e = error_of(many + "cables:\n  - {between: [h0, h1]}\nworkloads:\n  - {type: pingpong, from: h0, to: h1}\n");
    EXPECT_NE(e.find("expected at most 64 hosts, got 65"), std::string::npos) << e;
}

TEST(ScenarioParse, KeysOfAnotherKindAreRefusedAndMissingOnesHaveALine) {
    std::string e = error_of(k_hosts + k_cable + k_work + "events:\n  - {at: 1ms, event: unplug, ber: 1e-5}\n");
    EXPECT_NE(e.find("unknown key 'ber' in event unplug"), std::string::npos) << e;
    e = error_of(k_hosts + k_cable + "workloads:\n  - {type: pingpong, from: a, to: b, hosts: [a, b]}\n");
    EXPECT_NE(e.find("unknown key 'hosts' in a pingpong workload"), std::string::npos) << e;
    e = error_of(k_hosts + k_cable + "workloads:\n  - {type: pingpong, from: a, to: b, iterations: 2, count: 3}\n");
    EXPECT_NE(e.find("'iterations' or 'count', not both"), std::string::npos) << e;
    e = error_of(k_hosts + k_cable + "workloads:\n  - {name: w, type: pingpong, from: a, to: b}\n"
                 "assertions:\n  - {workload: w, metric: p99_us, max: 1, min: 100}\n");
    EXPECT_NE(e.find("min 100 is above max 1"), std::string::npos) << e;
    e = error_of(k_hosts + k_cable + k_work + "events:\n  - {event: unplug}\n");
    EXPECT_NE(e.find("scenario.yaml:9: expected 'at' time"), std::string::npos) << e;
}

TEST(ScenarioParse, AFifoIsRefusedNotWaitedOn) {
    const std::string path = ::testing::TempDir() + "odl-scenario-test-" + std::to_string(getpid()) + "-fifo";
    ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    g_tmp->paths.insert(path);
    try {
        load_scenario(path);
        ADD_FAILURE() << "a FIFO loaded";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("expected a regular file"), std::string::npos) << e.what();
    }
}

TEST(CalibrationParse, ImpossibleValuesAreRefused) {
    const std::string shipped = read_file(default_calibration_path());
    const auto with = [&](const std::string& key, const std::string& value) {
        const auto k = shipped.find(key + ":");
        const auto v = shipped.find("value: ", k);
        const auto end = shipped.find_first_of(",}\n", v);
        return shipped.substr(0, v + 7) + value + shipped.substr(end);
    };
    const auto error_in = [&](const std::string& body) {
        try {
            load_calibration(write_tmp("bad-cal.yaml", body));
        } catch (const std::exception& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_NE(error_in(with("cable_ns_per_m", "-5.0")).find("expected cable_ns_per_m from 0 to 100"), std::string::npos);
    EXPECT_NE(error_in(with("pcie_gbps", "-57.6")).find("expected pcie_gbps from 0 to 10000"), std::string::npos);
    EXPECT_NE(error_in(with("copy_gbps", "-1")).find("expected copy_gbps from 0 to 10000"), std::string::npos);
    EXPECT_NE(error_in(with("router_hop", "1e300s")).find("expected router_hop of at most 1 s"), std::string::npos);
    EXPECT_NE(error_in(with("link_train", "99999s")).find("expected link_train of at most 10 s"), std::string::npos);
    EXPECT_EQ(error_in(shipped), "");
}

TEST(CalibrationParse, MissingProvenanceIsRejected) {
    const std::string path = write_tmp("cal.yaml",
        "link:\n"
        "  gen4_coding_efficiency: {value: 0.98}\n");
    try {
        load_calibration(path);
        FAIL() << "loaded a parameter without a source";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("cal.yaml:2:"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("source"), std::string::npos) << e.what();
    }
}

TEST(CalibrationParse, MalformedNoiseIsRejectedWithTheLine) {
    const std::string ok = read_file(default_calibration_path());
    const std::string anchor = "      sched: {probability: 1, median: 100ns, p99: 2300ns,";
    ASSERT_NE(ok.find(anchor), std::string::npos);
    const struct {
        std::string line, want;
    } cases[] = {
        {"      sched: {probability: 2, median: 100ns, p99: 2300ns,", "probability in 0..1"},
        {"      sched: {probability: 1, median: 100ns, p99: 50ns,", "p99 at or above the median"},
        {"      sched: {probability: 1, median: 0ns, p99: 50ns,", "median above 0"},
        {"      sched: {probability: 1, median: 100ns, p99: 2s,", "below 1 s"},
        {"      sched: {probability: 1, median: 100ns, p99: 2300ns, colour: 1,", "colour"},
    };
    for (const auto& k : cases) {
        std::string body = ok;
        body.replace(body.find(anchor), anchor.size(), k.line);
        const std::string path = write_tmp("noise.yaml", body);
        try {
            load_calibration(path);
            ADD_FAILURE() << "loaded " << k.line;
        } catch (const std::exception& e) {
            EXPECT_NE(std::string(e.what()).find(path + ":"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(k.want), std::string::npos) << e.what();
        }
    }
    std::string nosrc = ok;
    const auto at = nosrc.find(anchor);
    nosrc.replace(at, nosrc.find('\n', at) - at, "      sched: {probability: 1, median: 100ns, p99: 2300ns}");
    EXPECT_THROW(load_calibration(write_tmp("nosrc.yaml", nosrc)), std::runtime_error);
}

TEST(CalibrationParse, ShippedFileHasProvenanceForEveryParameter) {
    const calibration c = load_calibration(default_calibration_path());
    EXPECT_GE(c.platforms.size(), 4u);
    EXPECT_EQ(c.link.provenance.size(), 5u);
    // 14 parameters, and one more entry per noise term.
    for (const auto& kv : c.platforms) {
        const auto& n = kv.second.host.noise;
        const std::size_t terms = n.wake.active() + n.sched.active() + n.copy.active();
        EXPECT_EQ(kv.second.provenance.size(), 14u + terms) << kv.first;
    }
}

}  // namespace
}  // namespace odl::model
