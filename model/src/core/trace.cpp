// SPDX-License-Identifier: MIT
// Event trace and diagnostics sink.
#include "odl/model/core/trace.h"

#include <fmt/format.h>

#include "odl/model/core/scheduler.h"

namespace odl::model {

void trace_log::event(std::string_view who, std::string_view what) {
    const auto ps = static_cast<std::uint64_t>(scheduler::now().value());
    fmt::format_to(std::back_inserter(m_text), "{} {} {}\n", ps, who, what);
    ++m_lines;
}

void trace_log::warn(std::string_view who, std::string_view what) {
    m_warnings.push_back(fmt::format("{}: {}", who, what));
    event(who, fmt::format("WARN {}", what));
}

}  // namespace odl::model
