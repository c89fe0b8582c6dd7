// SPDX-License-Identifier: MIT
// The HIL inventory loader: a good file, and every kind of bad one refused
// with file:line and what was expected.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "odl/hil/inventory.h"

namespace {

namespace fs = std::filesystem;

class Inventory : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("odl-inv-test-" + std::to_string(::getpid()));
        fs::create_directories(dir_ / "keys");
        std::ofstream(dir_ / "keys/id") << "not a real key\n";
        std::ofstream(dir_ / "keys/known_hosts") << "\n";
    }
    void TearDown() override { fs::remove_all(dir_); }

    std::string write(const std::string& text) {
        const auto p = dir_ / "hosts.yaml";
        std::ofstream(p) << text;
        return p.string();
    }
    /// The message load_inventory() throws for @text ("" when it loads).
    std::string error_of(const std::string& text) {
        try {
            odl::hil::load_inventory(write(text));
        } catch (const std::exception& e) {
            return e.what();
        }
        return "";
    }

    fs::path dir_;
};

const char* kGood = R"(inventory: 1
ssh:
  user: root
  key: keys/id
  known_hosts: keys/known_hosts
  connect_timeout: 7
pairs:
  - name: ms-s1-pair-1
    profile: strix-halo
    expect: gen4x2
    hosts:
      a: { destination: 10.0.0.11 }
      b: { destination: 10.0.0.12, port: 2222, device: 1, user: lab, address: 192.168.7.12, keepalive_interval: 2, keepalive_count: 4 }
)";

TEST_F(Inventory, GoodFileLoadsWithDefaultsAndOverrides) {
    const auto inv = odl::hil::load_inventory(write(kGood));
    ASSERT_EQ(inv.pairs.size(), 1u);
    const auto& p = inv.select("");
    EXPECT_EQ(p.name, "ms-s1-pair-1");
    EXPECT_EQ(p.profile, "strix-halo");
    EXPECT_EQ(p.expect, "gen4x2");
    EXPECT_EQ(p.cable_command, "");
    EXPECT_EQ(p.a.role, "a");
    EXPECT_EQ(p.a.ssh.destination, "10.0.0.11");
    EXPECT_EQ(p.a.ssh.user, "root");
    EXPECT_EQ(p.a.ssh.port, 22);
    EXPECT_EQ(p.a.ssh.connect_timeout_s, 7);
    // OpenSSH's keep-alives: 5 s x 3 unless the inventory says otherwise.
    EXPECT_EQ(p.a.ssh.keepalive_interval_s, 5);
    EXPECT_EQ(p.a.ssh.keepalive_count, 3);
    EXPECT_EQ(p.b.ssh.keepalive_interval_s, 2);
    EXPECT_EQ(p.b.ssh.keepalive_count, 4);
    EXPECT_EQ(p.a.device, 0);
    EXPECT_EQ(p.b.ssh.user, "lab");
    EXPECT_EQ(p.b.ssh.port, 2222);
    EXPECT_EQ(p.b.device, 1);
    // NCCL's rendezvous address: the SSH destination unless given.
    EXPECT_EQ(p.a.address, "10.0.0.11");
    EXPECT_EQ(p.b.address, "192.168.7.12");
    // Relative paths are taken from the inventory's folder.
    EXPECT_EQ(p.a.ssh.key, (dir_ / "keys/id").string());
    EXPECT_EQ(p.b.ssh.known_hosts, (dir_ / "keys/known_hosts").string());
    EXPECT_NE(p.a.ssh.where.find("hosts.yaml:12"), std::string::npos) << p.a.ssh.where;
}

TEST_F(Inventory, SelectNamesTheChoices) {
    std::string two = kGood;
    two += R"(  - name: second
    profile: tb5
    expect: gen4x1
    hosts:
      a: { destination: h1 }
      b: { destination: h2 }
)";
    const auto inv = odl::hil::load_inventory(write(two));
    EXPECT_EQ(inv.select("second").expect, "gen4x1");
    try {
        inv.select("");
        FAIL() << "no pair given with two in the file";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("choose one with --pair (ms-s1-pair-1, second)"), std::string::npos)
            << e.what();
    }
    try {
        inv.select("third");
        FAIL() << "unknown pair";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("no pair 'third'"), std::string::npos) << e.what();
    }
}

struct bad_case {
    const char* from;  // replaced in kGood ...
    const char* to;    // ... by this
    const char* line;  // expected "hosts.yaml:N"
    const char* says;  // expected in the message
};

TEST_F(Inventory, BadInputIsRefusedWithFileLineAndWhat) {
    const bad_case cases[] = {
        {"inventory: 1", "inventory: 2", "hosts.yaml:1", "format 2 is not known"},
        {"  connect_timeout: 7", "  connect_timout: 7", "hosts.yaml:6", "unknown key 'connect_timout'"},
        {"  connect_timeout: 7", "  connect_timeout: 0", "hosts.yaml:6", "from 1 to 300"},
        {"port: 2222", "port: 70000", "hosts.yaml:13", "from 1 to 65535"},
        {"keepalive_interval: 2", "keepalive_interval: 0", "hosts.yaml:13", "keepalive_interval from 1 to 300"},
        {"keepalive_count: 4", "keepalive_count: 1000", "hosts.yaml:13", "keepalive_count from 1 to 100"},
        {"keepalive_count: 4", "keepalive_count: -1", "hosts.yaml:13", "a whole number"},
        {"port: 2222", "port: many", "hosts.yaml:13", "a whole number"},
        {"key: keys/id", "key: keys/missing", "hosts.yaml:4", "no such file"},
        {"destination: 10.0.0.11", "destination: -oProxyCommand=sh", "hosts.yaml:12", "expected a host name"},
        {"destination: 10.0.0.11", "destination: root@10.0.0.11", "hosts.yaml:12", "the user goes in 'user'"},
        {"destination: 10.0.0.12, port: 2222,", "destination: 10.0.0.11,", "hosts.yaml:13", "the same host"},
        {"expect: gen4x2", "expect: gen5x2", "hosts.yaml:10", "gen2x1 .. gen4x2"},
        {"    profile: strix-halo\n", "", "hosts.yaml:8", "expected profile"},
        {"name: ms-s1-pair-1", "name: ../escape", "hosts.yaml:8", "pair name '../escape'"},
        {"device: 1", "device: 300", "hosts.yaml:13", "from 0 to 255"},
        {"address: 192.168.7.12", "address: -oProxyCommand=x", "hosts.yaml:13", "address '-oProxyCommand=x'"},
        {"      b: { destination: 10.0.0.12, port: 2222, device: 1, user: lab, address: 192.168.7.12, keepalive_interval: 2, keepalive_count: 4 }\n", "", "hosts.yaml:12", "expected host 'b'"},
        {"pairs:", "pairz:", "hosts.yaml:7", "unknown key 'pairz'"},
        {"  user: root\n", "", "hosts.yaml:11", "no ssh user"},
        {"  known_hosts: keys/known_hosts\n", "", "hosts.yaml:11", "no known_hosts file"},
        {"a: { destination: 10.0.0.11 }", "a: [10.0.0.11]", "hosts.yaml:12", "expected host 'a' as a mapping"},
        {"- name", "name", "hosts.yaml:", "expected"},
    };
    for (const auto& c : cases) {
        std::string text = kGood;
        const auto at = text.find(c.from);
        ASSERT_NE(at, std::string::npos) << c.from;
        text.replace(at, std::string(c.from).size(), c.to);
        const std::string e = error_of(text);
        EXPECT_NE(e.find(c.line), std::string::npos) << "case '" << c.to << "': " << e;
        EXPECT_NE(e.find(c.says), std::string::npos) << "case '" << c.to << "': " << e;
    }
}

TEST_F(Inventory, SyntaxErrorsAndEmptyFiles) {
    EXPECT_NE(error_of("inventory: [1\n").find("hosts.yaml:"), std::string::npos);
    EXPECT_NE(error_of("").find("empty"), std::string::npos);
    EXPECT_NE(error_of("inventory: 1\npairs: []\n").find("at least one host pair"), std::string::npos);
    try {
        odl::hil::load_inventory((dir_ / "nope.yaml").string());
        FAIL() << "missing file loaded";
    } catch (const std::exception& e) {
        EXPECT_NE(std::string(e.what()).find("cannot read"), std::string::npos) << e.what();
    }
}

}  // namespace
