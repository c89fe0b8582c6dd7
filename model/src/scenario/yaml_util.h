// SPDX-License-Identifier: MIT
// Small YAML helpers: typed getters that fail with "file:line: expected ...".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include <systemc>
#include <yaml-cpp/yaml.h>

namespace odl::model::yaml {

/// Where a node sits, for messages: "file:line".
std::string where(const std::string& file, const YAML::Node& n);
[[noreturn]] void fail(const std::string& file, const YAML::Node& n, const std::string& what);

/// Loads a file; syntax errors become "file:line: <yaml-cpp message>".
YAML::Node load_file(const std::string& path);

std::string get_string(const std::string& file, const YAML::Node& n, const char* what);
double get_double(const std::string& file, const YAML::Node& n, const char* what);
std::uint64_t get_uint(const std::string& file, const YAML::Node& n, const char* what);
bool get_bool(const std::string& file, const YAML::Node& n, const char* what);
/// "10us", "1.5ms", "250ns", "2s", "100ps".
sc_core::sc_time get_time(const std::string& file, const YAML::Node& n, const char* what);
/// 64, "4KiB", "1MiB", "2GiB" (binary units).
std::uint64_t get_size(const std::string& file, const YAML::Node& n, const char* what);
/// Fails on keys not in @known (catches typos).
void check_keys(const std::string& file, const YAML::Node& map,
                std::initializer_list<const char*> known, const char* what);

}  // namespace odl::model::yaml
