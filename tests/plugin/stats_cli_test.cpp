// SPDX-License-Identifier: MIT
// `odl stats` reads the plugin's statistics files: values, live/exited
// processes, --clean, and files that are not statistics.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "odl/wire/nccl_stats.h"

namespace {

using odl::plugin::stats_file;

std::string run_cli(const std::string& args) {
    std::string out;
    FILE* p = popen((std::string(ODL_BIN) + " stats " + args).c_str(), "r");
    if (!p) return out;
    std::array<char, 4096> buf;
    size_t n;
    while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
    EXPECT_EQ(pclose(p), 0);
    return out;
}

void write_file(const std::string& dir, pid_t pid, uint64_t tx_bytes) {
    stats_file f{};
    f.magic = odl::plugin::kStatsMagic;
    f.version = odl::plugin::kStatsVersion;
    f.pid = uint32_t(pid);
    f.nlinks = 1;
    odl::plugin::copy_str(f.links[0].name, sizeof(f.links[0].name), "loopback0");
    f.links[0].link_state = 1;
    f.links[0].tx_bytes = tx_bytes;
    f.links[0].rx_msgs = 3;
    std::ofstream(dir + "/" + odl::plugin::stats_file_name(pid), std::ios::binary)
        .write(reinterpret_cast<const char*>(&f), sizeof(f));
}

TEST(StatsCli, ShowsLiveAndExitedProcessesAndCleans) {
    char tmpl[] = "/tmp/odl-stats-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    const std::string dir = tmpl;
    const pid_t dead = fork();
    if (dead == 0) _exit(0);
    ASSERT_EQ(waitpid(dead, nullptr, 0), dead);
    write_file(dir, getpid(), 12345);
    write_file(dir, dead, 777);
    std::ofstream(dir + "/nccl-net-1.stats") << "not a stats file";

    auto j = nlohmann::json::parse(run_cli("--json --dir " + dir));
    ASSERT_EQ(j["processes"].size(), 2u);
    for (const auto& p : j["processes"]) {
        const bool me = p["pid"].get<pid_t>() == getpid();
        EXPECT_EQ(p["alive"].get<bool>(), me);
        EXPECT_EQ(p["links"][0]["name"], "loopback0");
        EXPECT_EQ(p["links"][0]["link_state"], "up");
        EXPECT_EQ(p["links"][0]["tx_bytes"].get<uint64_t>(), me ? 12345u : 777u);
        EXPECT_EQ(p["links"][0]["rx_msgs"].get<uint64_t>(), 3u);
    }
    // The file that is not statistics is named with the reason, not dropped.
    ASSERT_EQ(j["skipped"].size(), 1u) << j.dump();
    EXPECT_EQ(j["skipped"][0]["file"], dir + "/nccl-net-1.stats");
    EXPECT_NE(j["skipped"][0]["why"].get<std::string>().find("short of the"), std::string::npos) << j.dump();
    {
        // Another release's file: the version is named.
        stats_file f{};
        f.magic = odl::plugin::kStatsMagic;
        f.version = odl::plugin::kStatsVersion + 1;
        std::ofstream(dir + "/nccl-net-2.stats", std::ios::binary).write(reinterpret_cast<const char*>(&f), sizeof(f));
        const auto k = nlohmann::json::parse(run_cli("--json --dir " + dir));
        bool named = false;
        for (const auto& x : k["skipped"])
            named = named || (x["file"] == dir + "/nccl-net-2.stats" &&
                              x["why"].get<std::string>().find("format version") != std::string::npos);
        EXPECT_TRUE(named) << k.dump();
        std::remove((dir + "/nccl-net-2.stats").c_str());
    }
    EXPECT_NE(run_cli("--dir " + dir).find("12345"), std::string::npos);  // the table
    j = nlohmann::json::parse(run_cli("--json --clean --dir " + dir));
    ASSERT_EQ(j["processes"].size(), 1u);
    EXPECT_EQ(j["processes"][0]["pid"].get<pid_t>(), getpid());
    std::system(("rm -rf " + dir).c_str());
}

}  // namespace

/// An explicit --dir that is not a folder: said, not an empty table.
TEST(StatsCli, DirThatIsNotAFolderIsRefused) {
    for (const char* dir : {"/nonexistent/odl-stats", "/etc/hostname"}) {
        FILE* p = popen((std::string(ODL_BIN) + " stats --dir " + dir + " 2>&1").c_str(), "r");
        ASSERT_NE(p, nullptr);
        std::string out;
        std::array<char, 4096> buf;
        size_t n;
        while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
        const int st = pclose(p);
        EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) != 0) << dir << ": " << out;
        EXPECT_NE(out.find(dir), std::string::npos) << out;
    }
}
