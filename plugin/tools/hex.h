// SPDX-License-Identifier: MIT
// A connection handle as text: the 128 bytes NCCL carries between hosts,
// written as hex to a file that someone else carries (odl-plugin-collective's
// rendezvous folder, the VM plugin test's peer).
#pragma once

#include <cstddef>
#include <string>

namespace odl::plugin::caller {

inline std::string to_hex(const unsigned char* p, std::size_t n) {
    static const char* d = "0123456789abcdef";
    std::string s;
    for (std::size_t i = 0; i < n; ++i) {
        s += d[p[i] >> 4];
        s += d[p[i] & 15];
    }
    return s;
}

/// Reads exactly @n bytes as 2 @n hex digits (either case; trailing
/// whitespace ignored) into @out; false when @s is anything else.
inline bool from_hex(std::string s, unsigned char* out, std::size_t n) {
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) s.pop_back();
    if (s.size() != 2 * n) return false;
    const auto nib = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < n; ++i) {
        const int hi = nib(s[2 * i]), lo = nib(s[2 * i + 1]);
        if (hi < 0 || lo < 0) return false;
        out[i] = static_cast<unsigned char>(hi * 16 + lo);
    }
    return true;
}

}  // namespace odl::plugin::caller
