// SPDX-License-Identifier: MIT
// Small YAML helpers for the project's input files (scenarios, calibration,
// HIL inventories): typed getters that fail with "file:line: expected ...".
#pragma once

#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include <yaml-cpp/yaml.h>

namespace odl::yaml {

/// Where a node sits, for messages: "file:line".
std::string where(const std::string& file, const YAML::Node& n);
[[noreturn]] void fail(const std::string& file, const YAML::Node& n, const std::string& what);

/// Loads a regular file; syntax errors become "file:line: <yaml-cpp
/// message>", and so does a key given twice in one mapping.
YAML::Node load_file(const std::string& path);

std::string get_string(const std::string& file, const YAML::Node& n, const char* what);
/// get_string() that must be UTF-8 (it goes into JSON reports).
std::string get_text(const std::string& file, const YAML::Node& n, const char* what);
double get_double(const std::string& file, const YAML::Node& n, const char* what);
/// Decimal digits only (no sign, no 0x, no octal), at most 2^64 - 1.
std::uint64_t get_uint(const std::string& file, const YAML::Node& n, const char* what);
/// get_uint() within [@lo, @hi], checked before any narrowing.
std::uint64_t get_uint(const std::string& file, const YAML::Node& n, const char* what, std::uint64_t lo,
                       std::uint64_t hi);
bool get_bool(const std::string& file, const YAML::Node& n, const char* what);
/// 64, "4KiB", "1MiB", "2GiB" (binary units).
std::uint64_t get_size(const std::string& file, const YAML::Node& n, const char* what);
/// A non-negative number and the unit text after it ("1.5ms" -> 1.5, "ms").
bool split_unit(const std::string& s, double* v, std::string* unit);
/// The scalar text of @n, failing with "expected <what>" when it is none.
std::string scalar(const std::string& file, const YAML::Node& n, const char* what);
/// @map[@key]; when it is absent, fails at @map's line with "expected <what>".
YAML::Node require(const std::string& file, const YAML::Node& map, const char* key, const char* what);
/// Fails on keys not in @known (catches typos).
void check_keys(const std::string& file, const YAML::Node& map,
                std::initializer_list<const char*> known, const char* what);

}  // namespace odl::yaml
