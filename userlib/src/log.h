// SPDX-License-Identifier: MIT
// Library logging: nothing is printed; messages go to the application's callback.
#pragma once

#include <fmt/format.h>

#include "odl/odl.h"

namespace odl::log {

/// True when a message at @level would reach a callback (cheap check first).
bool enabled(int level);
void emit(int level, const std::string& msg);

template <typename... Args>
void write(int level, fmt::format_string<Args...> f, Args&&... args) {
    if (enabled(level)) emit(level, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace odl::log
