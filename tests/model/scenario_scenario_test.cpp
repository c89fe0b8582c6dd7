// SPDX-License-Identifier: MIT
// Scenario and calibration files: malformed YAML and impossible
// configurations give "file:line: expected ..." or the reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
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

TEST(CalibrationParse, ShippedFileHasProvenanceForEveryParameter) {
    const calibration c = load_calibration(default_calibration_path());
    EXPECT_GE(c.platforms.size(), 4u);
    EXPECT_EQ(c.link.provenance.size(), 5u);
    for (const auto& kv : c.platforms) EXPECT_EQ(kv.second.provenance.size(), 14u) << kv.first;
}

}  // namespace
}  // namespace odl::model
