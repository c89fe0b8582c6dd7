// SPDX-License-Identifier: MIT
// `odl doctor --root DIR` over made-up sysfs trees: each broken layer gives
// its exit code and first_broken, the walk stops there, a degraded link is
// a warning, --expect is parsed strictly. The real faults are made in the
// two-VM testbed (tests/vm/doctor_test.sh); this covers the decision logic
// and the parsing of each file on every layer.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "fake_host.h"

namespace fs = std::filesystem;

namespace {

struct result {
    int rc = -1;
    nlohmann::json json;
    std::string text;
};

/// The tree, and odl run over it.
class fake_host : public odl::test::fake_host {
public:
    result doctor(const std::string& args = "") const { return odl("doctor --no-nccl --json " + args); }
    result link(const std::string& args = "--json") const { return odl("link " + args); }
    result odl(const std::string& args) const {
        result r;
        const std::string cmd = std::string(ODL_BIN) + " " + args + " --root " + root;
        FILE* p = popen(cmd.c_str(), "r");
        if (!p) return r;
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.text.append(buf, n);
        const int st = pclose(p);
        r.rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        r.json = nlohmann::json::parse(r.text, nullptr, false);
        return r;
    }

};

std::string status_of(const result& r, const std::string& layer) {
    for (const auto& c : r.json["checks"])
        if (c["layer"] == layer) return c["status"];
    return "absent";
}

TEST(DoctorCli, HealthyTreeIsHealthyWithPingAndRating) {
    fake_host h;
    const result r = h.doctor();
    ASSERT_FALSE(r.json.is_discarded()) << r.text;
    EXPECT_EQ(r.rc, 0) << r.text;
    EXPECT_TRUE(r.json["healthy"].get<bool>());
    EXPECT_TRUE(r.json["first_broken"].is_null());
    EXPECT_EQ(status_of(r, "link"), "ok") << r.text;
    EXPECT_EQ(status_of(r, "ping"), "ok") << r.text;
    EXPECT_NE(r.text.find("median 812.3 us"), std::string::npos) << r.text;
    EXPECT_EQ(status_of(r, "nccl"), "not_checked");
}

// A refused module's fix depends on where it came from: DKMS's key to
// enrol, or the prebuilt package to replace with DKMS's (or, when it was
// signed, its certificate to enrol).
TEST(DoctorCli, RefusedModuleFixNamesWhereItCameFrom) {
    for (const bool prebuilt : {false, true}) {
        fake_host h;
        h.remove("sys/module/odl_tb5");
        h.put(std::string("lib/modules/6.12.0-test/updates/") + (prebuilt ? "odl" : "dkms") + "/odl_tb5.ko", "");
        h.put("sys/module/module/parameters/sig_enforce", "Y");
        const result r = h.doctor();
        ASSERT_FALSE(r.json.is_discarded()) << r.text;
        ASSERT_EQ(r.rc, 22) << r.text;
        nlohmann::json m;
        for (const auto& c : r.json["checks"])
            if (c["layer"] == "module") m = c;
        const std::string summary = m["summary"].get<std::string>(), fix = m["fix"].get<std::string>();
        EXPECT_NE(fix.find("mokutil --import /var/lib/dkms/mok.pub"), std::string::npos) << fix;
        EXPECT_EQ(fix.find("install odl-tb5-dkms instead of odl-tb5-modules-6.12.0-test") != std::string::npos, prebuilt)
            << fix;
        EXPECT_EQ(summary.find("(odl-tb5-modules, not signed)") != std::string::npos, prebuilt) << summary;
        EXPECT_EQ(fix.find("enrol the certificate the package was signed with"), std::string::npos) << fix;
    }
    fake_host h;
    h.remove("sys/module/odl_tb5");
    // What the kernel's sign-file appends ends with this marker (put adds
    // the line's end).
    h.put("lib/modules/6.12.0-test/updates/odl/odl_tb5.ko", "\x7f" "ELF...sig...~Module signature appended~");
    h.put("sys/module/module/parameters/sig_enforce", "Y");
    const result r = h.doctor();
    ASSERT_EQ(r.rc, 22) << r.text;
    EXPECT_NE(r.text.find("(odl-tb5-modules, signed by a key it does not trust)"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("enrol the certificate the package was signed with"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("install odl-tb5-dkms instead of odl-tb5-modules-6.12.0-test"), std::string::npos) << r.text;
}

TEST(DoctorCli, EachBrokenLayerHasItsCodeAndStopsTheWalk) {
    struct fault {
        const char* name;
        const char* layer;
        int code;
        std::function<void(fake_host&)> make;
    };
    const fault faults[] = {
        {"no thunderbolt bus", "kernel", 10, [](fake_host& h) { h.remove("sys/bus/thunderbolt"); }},
        {"no host interface", "nhi", 11, [](fake_host& h) { h.remove("sys/bus/pci/devices/0000:00:03.0"); }},
        {"host interface unbound", "nhi", 12,
         [](fake_host& h) { h.remove("sys/devices/pci0000:00/0000:00:03.0/driver"); }},
        {"no peer", "peer", 13, [](fake_host& h) { h.remove("sys/bus/thunderbolt/devices/0-1"); }},
        {"module not loaded", "module", 14, [](fake_host& h) { h.remove("sys/module/odl_tb5"); }},
        // Signatures enforced but no module built: still "not loaded" (14).
        {"not built, signatures enforced", "module", 14,
         [](fake_host& h) {
             h.remove("sys/module/odl_tb5");
             h.put("sys/module/module/parameters/sig_enforce", "Y");
         }},
        // Built by DKMS, refused by a kernel that enforces signatures (22).
        {"refused: module.sig_enforce", "module", 22,
         [](fake_host& h) {
             h.remove("sys/module/odl_tb5");
             h.put("lib/modules/6.12.0-test/updates/dkms/odl_tb5.ko.xz", "");
             h.put("sys/module/module/parameters/sig_enforce", "Y");
         }},
        // Built elsewhere for this kernel (odl-tb5-modules-KVER), refused too.
        {"refused: prebuilt module, module.sig_enforce", "module", 22,
         [](fake_host& h) {
             h.remove("sys/module/odl_tb5");
             h.put("lib/modules/6.12.0-test/updates/odl/odl_tb5.ko", "");
             h.put("sys/module/module/parameters/sig_enforce", "Y");
         }},
        {"refused: Secure Boot lockdown", "module", 22,
         [](fake_host& h) {
             h.remove("sys/module/odl_tb5");
             h.put("lib/modules/6.12.0-test/updates/dkms/odl_tb5.ko", "");
             h.put("sys/module/module/parameters/sig_enforce", "N");
             h.put("sys/kernel/security/lockdown", "none [integrity] confidentiality");
         }},
        // Lockdown off and sig_enforce off: built but not loaded is 14.
        {"built, nothing enforced", "module", 14,
         [](fake_host& h) {
             h.remove("sys/module/odl_tb5");
             h.put("lib/modules/6.12.0-test/updates/dkms/odl_tb5.ko", "");
             h.put("sys/module/module/parameters/sig_enforce", "N");
             h.put("sys/kernel/security/lockdown", "[none] integrity confidentiality");
         }},
        {"peer offers no OdinLink", "service", 15, [](fake_host& h) { h.put(h.svc + "/key", "other"); }},
        {"service unbound", "service", 16, [](fake_host& h) { h.remove(h.svc + "/driver"); }},
        {"ABI mismatch", "device", 17, [](fake_host& h) { h.put(h.dev + "/abi_version", "2"); }},
        {"no device node", "device", 16, [](fake_host& h) { h.remove("dev/odl_tb5_0"); }},
        {"not logged in", "login", 19, [](fake_host& h) { h.put(h.dev + "/state", "login"); }},
        {"peer gone", "login", 19, [](fake_host& h) { h.put(h.dev + "/state", "gone"); }},
    };
    for (const auto& f : faults) {
        fake_host h;
        f.make(h);
        const result r = h.doctor();
        ASSERT_FALSE(r.json.is_discarded()) << f.name << ": " << r.text;
        EXPECT_EQ(r.rc, f.code) << f.name << ": " << r.text;
        EXPECT_EQ(r.json["exit_code"], f.code) << f.name;
        EXPECT_EQ(r.json["first_broken"], f.layer) << f.name << ": " << r.text;
        EXPECT_EQ(status_of(r, f.layer), "fail") << f.name;
        // Every layer after the broken one is not checked.
        bool after = false;
        for (const auto& c : r.json["checks"]) {
            if (after) {
                EXPECT_EQ(c["status"], "not_checked") << f.name << ": " << c.dump();
            }
            if (c["layer"] == f.layer && c["status"] == "fail") after = true;
        }
    }
}

TEST(DoctorCli, TrainedBelowTheRatingIsAWarningNotAFailure) {
    fake_host h;
    h.put(h.xd + "/tx_speed", "20.0 Gb/s");
    h.put(h.xd + "/tx_lanes", "1");
    const result r = h.doctor();
    EXPECT_EQ(r.rc, 30) << r.text;
    EXPECT_TRUE(r.json["first_broken"].is_null());
    EXPECT_EQ(status_of(r, "link"), "warn");
    EXPECT_NE(r.text.find("Gen3 x1 (20 Gb/s) below its rating Gen4 x2 (80 Gb/s)"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("asymmetric"), std::string::npos) << r.text;
    // The layers above still ran.
    EXPECT_EQ(status_of(r, "login"), "ok");
    // Held to what the cable is rated for, it is healthy (nothing trained
    // below Gen3 x1); a failure above outranks the warning.
    EXPECT_EQ(h.doctor("--expect gen3x1").rc, 0);
    EXPECT_EQ(h.doctor("--expect gen3x2").rc, 30);
    h.put(h.dev + "/state", "login");
    EXPECT_EQ(h.doctor().rc, 19);
}

TEST(DoctorCli, RatingUnknownWithoutDebugfsIsInfo) {
    fake_host h;
    h.remove("sys/kernel/debug");
    const result r = h.doctor();
    EXPECT_EQ(r.rc, 0) << r.text;
    EXPECT_EQ(status_of(r, "link"), "info");
    EXPECT_NE(r.text.find("rating unknown"), std::string::npos) << r.text;
    // A regs file without a lane adapter capability gives no rating either.
    h.put("sys/kernel/debug/thunderbolt/0-0/port1/regs", "0x0000    0 0x00 0x00 0x00000000");
    EXPECT_NE(h.doctor().text.find("has no lane adapter capability"), std::string::npos);
}

TEST(DoctorCli, ExpectIsParsedStrictly) {
    fake_host h;
    for (const char* bad : {"gen5", "gen4x3", "gen4x", "gen4x2x", "4x2", "Gen4x2", "gen4x0", ""}) {
        const std::string cmd = std::string(ODL_BIN) + " doctor --no-nccl --root " + h.root + " --expect '" + bad +
                                "' >/dev/null 2>&1";
        const int st = std::system(cmd.c_str());
        // "" means no --expect at all (the port's rating): healthy.
        EXPECT_EQ(WEXITSTATUS(st), std::string(bad).empty() ? 0 : 2) << bad;
    }
    EXPECT_EQ(h.doctor("--expect gen4").rc, 0);
    EXPECT_EQ(h.doctor("--expect gen4x2").rc, 0);
    EXPECT_EQ(h.doctor("--expect gen2x1").rc, 0);
}

TEST(DoctorCli, IommuModeIsReported) {
    fake_host h;
    h.mkdir("sys/class/iommu/dmar0");
    h.put("sys/devices/pci0000:00/0000:00:03.0/iommu_group/type", "identity");
    EXPECT_NE(h.doctor().text.find("IOMMU passthrough"), std::string::npos);
    h.put("sys/devices/pci0000:00/0000:00:03.0/iommu_group/type", "DMA-FQ");
    EXPECT_NE(h.doctor().text.find("IOMMU translated (DMA-FQ)"), std::string::npos);
}

TEST(LinkCli, ShowsEachPeerAgainstItsRatingWithTheDevice) {
    fake_host h;
    h.put(h.xd + "/tx_speed", "20.0 Gb/s");
    const result r = h.link();
    ASSERT_FALSE(r.json.is_discarded()) << r.text;
    EXPECT_EQ(r.rc, 0);
    ASSERT_EQ(r.json["peers"].size(), 1u) << r.text;
    const auto& p = r.json["peers"][0];
    EXPECT_EQ(p["peer"], "peer-host");
    EXPECT_EQ(p["tx"]["generation"], "Gen3");
    EXPECT_EQ(p["tx"]["gbps"], 40);
    EXPECT_EQ(p["rx"]["gbps"], 80);
    EXPECT_EQ(p["rated"]["gbps"], 80);
    EXPECT_TRUE(p["below_rating"].get<bool>());
    ASSERT_EQ(p["devices"].size(), 1u);
    EXPECT_EQ(p["devices"][0]["state"], "connected");
    EXPECT_EQ(p["devices"][0]["counters"]["tx_frames"], 1200);
    EXPECT_EQ(r.json["knobs"], "irq_throttle_us=8 poll=N rings=1");
    const result t = h.link("");
    EXPECT_NE(t.text.find("WARNING  0-1 trained Gen3 x2 (40 Gb/s) below its rating Gen4 x2 (80 Gb/s)"),
              std::string::npos)
        << t.text;
    EXPECT_NE(t.text.find("counters: rx_bad 0, tx_frames 1200"), std::string::npos) << t.text;
    // At its rating: no warning.
    h.put(h.xd + "/tx_speed", "40.0 Gb/s");
    EXPECT_FALSE(h.link().json["peers"][0]["below_rating"].get<bool>());
    EXPECT_EQ(h.link("").text.find("WARNING"), std::string::npos);
}

TEST(LinkCli, NoPeerIsAnErrorNamingDoctor) {
    fake_host h;
    h.remove("sys/bus/thunderbolt/devices/0-1");
    const result r = h.link("");
    EXPECT_EQ(r.rc, 1);
    EXPECT_EQ(h.link().rc, 1);
    EXPECT_EQ(h.link("--expect gen9").rc, 2);
}

}  // namespace

namespace odl::cli {
namespace {

/// A --root that is not there was read as a host without USB4 ("Linux  has
/// no USB4/Thunderbolt support", exit 10): it is a usage error naming it.
TEST(DoctorCli, MissingRootIsAUsageError) {
    const std::string cmd = std::string(ODL_BIN) + " doctor --no-nccl --root /nonexistent/odl-root 2>&1";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string text;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), p)) > 0) text.append(buf, n);
    const int st = pclose(p);
    ASSERT_TRUE(WIFEXITED(st));
    EXPECT_NE(WEXITSTATUS(st), 0);
    EXPECT_NE(WEXITSTATUS(st), 10) << text;
    EXPECT_NE(text.find("Directory does not exist: /nonexistent/odl-root"), std::string::npos) << text;
}

}  // namespace
}  // namespace odl::cli
