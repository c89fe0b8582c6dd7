// SPDX-License-Identifier: MIT
// Loading and checking the HIL inventory (docs/hil.md "Inventory").
#include "odl/hil/inventory.h"

#include <filesystem>
#include <regex>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "yaml_input.h"

namespace odl::hil {
namespace {

namespace fs = std::filesystem;
namespace y = odl::yaml;

constexpr int kFormat = 1;

/// A path from the inventory: relative ones are taken from its folder.
std::string file_path(const std::string& file, const YAML::Node& n, const char* what, const fs::path& base) {
    const std::string s = y::get_string(file, n, what);
    if (s.empty()) y::fail(file, n, fmt::format("expected {} (a file), got an empty string", what));
    fs::path p = s;
    if (s.rfind("~/", 0) == 0) {
        const char* home = std::getenv("HOME");
        if (!home) y::fail(file, n, fmt::format("{} '{}': HOME is not set", what, s));
        p = fs::path(home) / s.substr(2);
    } else if (p.is_relative()) {
        p = base / p;
    }
    std::error_code ec;
    if (!fs::is_regular_file(p, ec))
        y::fail(file, n, fmt::format("{} '{}': no such file ({})", what, s, p.string()));
    return p.lexically_normal().string();
}

/// @m[@key] as a whole number from @lo to @hi (@unit after it in the
/// message), or a file:line error naming it as @name.
int bounded(const std::string& file, const YAML::Node& m, const char* key, const std::string& name, const char* what,
            unsigned lo, unsigned hi, const char* unit = "") {
    const auto v = y::get_uint(file, m[key], what);
    if (v < lo || v > hi) y::fail(file, m[key], fmt::format("expected {} from {} to {}{}, got {}", name, lo, hi, unit, v));
    return static_cast<int>(v);
}

/// Settings a host may take from the inventory's `ssh:` defaults.
void read_ssh(const std::string& file, const YAML::Node& m, const fs::path& base, ssh_target* t) {
    if (m["user"]) t->user = y::get_string(file, m["user"], "ssh user");
    if (m["port"]) t->port = bounded(file, m, "port", "ssh port", "ssh port", 1, 65535);
    if (m["key"]) t->key = file_path(file, m["key"], "ssh key", base);
    if (m["known_hosts"]) t->known_hosts = file_path(file, m["known_hosts"], "known_hosts", base);
    if (m["connect_timeout"])
        t->connect_timeout_s =
            bounded(file, m, "connect_timeout", "connect_timeout", "connect_timeout (seconds)", 1, 300, " seconds");
    if (m["keepalive_interval"])
        t->keepalive_interval_s = bounded(file, m, "keepalive_interval", "keepalive_interval",
                                          "keepalive_interval (seconds)", 1, 300, " seconds");
    if (m["keepalive_count"])
        t->keepalive_count = bounded(file, m, "keepalive_count", "keepalive_count",
                                     "keepalive_count (unanswered keep-alives)", 1, 100);
}

// What OpenSSH takes as a destination or user without reading it as an
// option or a second host: no leading '-', no spaces, '@' or control bytes.
bool plain_word(const std::string& s) {
    static const std::regex ok("[A-Za-z0-9_.:%\\[\\]][A-Za-z0-9_.:%\\[\\]-]*");
    return std::regex_match(s, ok);
}

host read_host(const std::string& file, const YAML::Node& hosts, const char* role, const ssh_target& defaults,
               const fs::path& base) {
    const YAML::Node n = y::require(file, hosts, role, fmt::format("host '{}'", role).c_str());
    y::check_keys(file, n, {"destination", "user", "port", "key", "known_hosts", "connect_timeout", "keepalive_interval",
                                "keepalive_count", "device", "address"},
                  fmt::format("host '{}'", role).c_str());
    host h;
    h.role = role;
    h.ssh = defaults;
    h.ssh.where = y::where(file, n);
    h.ssh.destination = y::get_string(file, y::require(file, n, "destination", "destination (host name or address)"),
                                      "destination (host name or address)");
    if (!plain_word(h.ssh.destination))
        y::fail(file, n["destination"], fmt::format("destination '{}': expected a host name or address "
                                                    "(letters, digits, '.', ':', '-'; the user goes in 'user')",
                                                    h.ssh.destination));
    read_ssh(file, n, base, &h.ssh);
    if (h.ssh.user.empty())
        y::fail(file, n, fmt::format("host '{}': no ssh user (set 'user' here or under 'ssh')", role));
    if (!plain_word(h.ssh.user)) y::fail(file, n, fmt::format("ssh user '{}': not a user name", h.ssh.user));
    if (h.ssh.key.empty())
        y::fail(file, n, fmt::format("host '{}': no ssh key (set 'key' here or under 'ssh')", role));
    if (h.ssh.known_hosts.empty())
        y::fail(file, n, fmt::format("host '{}': no known_hosts file (set 'known_hosts' here or under 'ssh'; "
                                     "host keys are always checked)", role));
    if (n["device"]) {
        const auto d = y::get_uint(file, n["device"], "device (N of /dev/odl_tb5_N)");
        if (d > 255) y::fail(file, n["device"], fmt::format("expected device from 0 to 255, got {}", d));
        h.device = static_cast<int>(d);
    }
    h.address = h.ssh.destination;
    if (n["address"]) {
        h.address = y::get_string(file, n["address"], "address (where the other host reaches this one)");
        if (!plain_word(h.address))
            y::fail(file, n["address"], fmt::format("address '{}': expected a host name or address", h.address));
    }
    return h;
}

}  // namespace

const pair& inventory::select(const std::string& name) const {
    if (name.empty() && pairs.size() == 1) return pairs.front();
    std::string names;
    for (const auto& p : pairs) {
        if (p.name == name) return p;
        names += (names.empty() ? "" : ", ") + p.name;
    }
    if (name.empty())
        throw std::runtime_error(fmt::format("{}: {} pairs: choose one with --pair ({})", file, pairs.size(), names));
    throw std::runtime_error(fmt::format("{}: no pair '{}' (have: {})", file, name, names));
}

inventory load_inventory(const std::string& path) {
    const YAML::Node root = y::load_file(path);
    if (!root || root.IsNull()) throw std::runtime_error(fmt::format("{}: the file is empty", path));
    y::check_keys(path, root, {"inventory", "ssh", "pairs"}, "the inventory");
    const auto format = y::get_uint(path, y::require(path, root, "inventory", "inventory: 1 (the format version)"),
                                    "inventory: 1 (the format version)");
    if (format != kFormat)
        y::fail(path, root["inventory"], fmt::format("inventory format {} is not known (this build reads {})",
                                                     format, kFormat));
    const fs::path base = fs::absolute(path).parent_path();
    ssh_target defaults;
    if (root["ssh"]) {
        y::check_keys(path, root["ssh"], {"user", "port", "key", "known_hosts", "connect_timeout", "keepalive_interval", "keepalive_count"},
                      "ssh");
        read_ssh(path, root["ssh"], base, &defaults);
    }
    const YAML::Node pairs = root["pairs"];
    if (!pairs || !pairs.IsSequence() || pairs.size() == 0)
        y::fail(path, pairs ? pairs : root, "expected 'pairs' as a list of at least one host pair");

    inventory inv;
    inv.file = path;
    std::set<std::string> names;
    static const std::regex name_re("[A-Za-z0-9][A-Za-z0-9_.-]*");
    static const std::regex expect_re("gen[234]x[12]");
    for (const auto& n : pairs) {
        y::check_keys(path, n, {"name", "profile", "expect", "cable_command", "hosts"}, "a pair");
        pair p;
        p.name = y::get_string(path, y::require(path, n, "name", "name (names the results folder)"), "name");
        if (!std::regex_match(p.name, name_re))
            y::fail(path, n["name"], fmt::format("pair name '{}': expected letters, digits, '.', '_', '-'", p.name));
        if (!names.insert(p.name).second) y::fail(path, n["name"], fmt::format("pair '{}' named twice", p.name));
        p.profile = y::get_string(
            path, y::require(path, n, "profile", "profile (the model platform profile to compare with)"), "profile");
        p.expect = y::get_string(path, y::require(path, n, "expect", "expect (the link rating, e.g. gen4x2)"), "expect");
        if (!std::regex_match(p.expect, expect_re))
            y::fail(path, n["expect"], fmt::format("expect '{}': expected gen2x1 .. gen4x2 (generation x lanes)",
                                                   p.expect));
        if (n["cable_command"]) p.cable_command = y::get_string(path, n["cable_command"], "cable_command");
        const YAML::Node hosts = y::require(path, n, "hosts", "'hosts' with a and b");
        y::check_keys(path, hosts, {"a", "b"}, "hosts");
        p.a = read_host(path, hosts, "a", defaults, base);
        p.b = read_host(path, hosts, "b", defaults, base);
        if (p.a.ssh.destination == p.b.ssh.destination && p.a.ssh.port == p.b.ssh.port)
            y::fail(path, hosts["b"], fmt::format("pair '{}': a and b are the same host ({} port {})", p.name,
                                                  p.a.ssh.destination, p.a.ssh.port));
        inv.pairs.push_back(std::move(p));
    }
    return inv;
}

}  // namespace odl::hil
