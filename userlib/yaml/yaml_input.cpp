// SPDX-License-Identifier: MIT
// YAML helpers with file:line error messages.
#include "yaml_input.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace odl::yaml {

std::string where(const std::string& file, const YAML::Node& n) {
    // A missing key's node has no place in the file, and its Mark() throws
    // YAML::InvalidNode (found by fuzz_scenario: a scenario without hosts).
    if (!n.IsDefined()) return file;
    const auto m = n.Mark();
    if (m.line < 0) return file;
    return fmt::format("{}:{}", file, m.line + 1);
}

void fail(const std::string& file, const YAML::Node& n, const std::string& what) {
    throw std::runtime_error(fmt::format("{}: {}", where(file, n), what));
}

YAML::Node load_file(const std::string& path) {
    // yaml-cpp opens a folder and then fails to read it, leaking its 2 KiB
    // read-ahead buffer (found by fuzz_scenario: "calibration: ."); say what
    // it is instead.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw std::runtime_error(fmt::format("{}: expected a file, this is a folder", path));
    try {
        return YAML::LoadFile(path);
    } catch (const YAML::BadFile&) {
        throw std::runtime_error(fmt::format("{}: cannot read the file", path));
    } catch (const YAML::ParserException& e) {
        throw std::runtime_error(fmt::format("{}:{}: expected valid YAML: {}", path, e.mark.line + 1,
                                             e.msg));
    }
}

std::string scalar(const std::string& file, const YAML::Node& n, const char* what) {
    if (!n || !n.IsScalar()) fail(file, n, fmt::format("expected {}", what));
    return n.Scalar();
}

std::string get_string(const std::string& file, const YAML::Node& n, const char* what) {
    return scalar(file, n, what);
}

double get_double(const std::string& file, const YAML::Node& n, const char* what) {
    const std::string s = scalar(file, n, what);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(v))
        fail(file, n, fmt::format("expected {} (a number), got '{}'", what, s));
    return v;
}

std::uint64_t get_uint(const std::string& file, const YAML::Node& n, const char* what) {
    const std::string s = scalar(file, n, what);
    char* end = nullptr;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    if (s.empty() || *end != '\0' || s[0] == '-')
        fail(file, n, fmt::format("expected {} (a whole number), got '{}'", what, s));
    return v;
}

bool get_bool(const std::string& file, const YAML::Node& n, const char* what) {
    const std::string s = scalar(file, n, what);
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail(file, n, fmt::format("expected {} (true or false), got '{}'", what, s));
}

bool split_unit(const std::string& s, double* v, std::string* unit) {
    char* end = nullptr;
    *v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || !std::isfinite(*v) || *v < 0) return false;
    *unit = std::string(end);
    while (!unit->empty() && unit->front() == ' ') unit->erase(unit->begin());
    return true;
}

std::uint64_t get_size(const std::string& file, const YAML::Node& n, const char* what) {
    const std::string s = scalar(file, n, what);
    double v = 0;
    std::string u;
    if (split_unit(s, &v, &u)) {
        double mul = 0;
        if (u.empty() || u == "B") mul = 1;
        else if (u == "KiB" || u == "K") mul = 1024.0;
        else if (u == "MiB" || u == "M") mul = 1024.0 * 1024;
        else if (u == "GiB" || u == "G") mul = 1024.0 * 1024 * 1024;
        const double bytes = v * mul;
        if (mul > 0 && bytes >= 1 && bytes == std::floor(bytes) && bytes < 4294967296.0)
            return static_cast<std::uint64_t>(bytes);
    }
    fail(file, n, fmt::format("expected {} as a size from 1 B to 4 GiB like 64, 4KiB or 1MiB, "
                              "got '{}'", what, s));
}

YAML::Node require(const std::string& file, const YAML::Node& map, const char* key, const char* what) {
    if (!map.IsMap()) fail(file, map, fmt::format("expected a mapping with {}", what));
    YAML::Node n = map[key];
    if (!n) fail(file, map, fmt::format("expected {}", what));
    return n;
}

void check_keys(const std::string& file, const YAML::Node& map,
                std::initializer_list<const char*> known, const char* what) {
    if (!map.IsMap()) fail(file, map, fmt::format("expected {} as a mapping", what));
    for (const auto& kv : map) {
        const std::string k = kv.first.Scalar();
        bool ok = false;
        for (const char* x : known) ok = ok || k == x;
        if (!ok) {
            std::string list;
            for (const char* x : known) list += fmt::format("{}{}", list.empty() ? "" : ", ", x);
            fail(file, kv.first, fmt::format("unknown key '{}' in {} (expected one of: {})", k,
                                             what, list));
        }
    }
}

}  // namespace odl::yaml
