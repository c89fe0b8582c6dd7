// SPDX-License-Identifier: MIT
// Event trace and diagnostics sink: one line per model event, stamped with
// simulated time only, so the same scenario and seed give identical bytes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <systemc>

namespace odl::model {

/// Collects trace lines ("<ps> <who> <what>") and warnings. Tracing of
/// per-frame events can be switched off for speed; warnings are always kept.
class trace_log {
public:
    explicit trace_log(bool per_frame = true) : m_per_frame(per_frame) {}

    bool per_frame() const { return m_per_frame; }
    /// Records one event line.
    void event(std::string_view who, std::string_view what);
    /// Records a per-frame event (dropped when per-frame tracing is off).
    void frame(std::string_view who, std::string_view what) {
        if (m_per_frame) event(who, what);
    }
    /// Guest or peer misuse: kept, counted, and traced; never fatal.
    void warn(std::string_view who, std::string_view what);

    const std::string& text() const { return m_text; }
    const std::vector<std::string>& warnings() const { return m_warnings; }
    std::uint64_t lines() const { return m_lines; }

private:
    bool m_per_frame;
    std::string m_text;
    std::vector<std::string> m_warnings;
    std::uint64_t m_lines = 0;
};

}  // namespace odl::model
