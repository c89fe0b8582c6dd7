// SPDX-License-Identifier: MIT
// For the fuzz targets of file loaders: the input as a file, and the
// loaders' error contract (docs/scenarios.md, docs/hil.md): bad input is a
// std::runtime_error whose message starts with "<file>:", nothing else.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

namespace odl::fuzz {

/// Writes @data to a file named @name in a private folder (removed at
/// exit) and returns its path.
std::string as_file(const std::uint8_t* data, std::size_t size, const char* name);

/// Runs @load on @path; aborts (a finding) when it throws anything but a
/// std::runtime_error naming @path first. Returns whether @load succeeded.
bool loads_or_fails_cleanly(const std::string& path, const std::function<void()>& load);

}  // namespace odl::fuzz
