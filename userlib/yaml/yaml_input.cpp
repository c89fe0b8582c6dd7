// SPDX-License-Identifier: MIT
// YAML helpers with file:line error messages.
#include "yaml_input.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <vector>

#include <yaml-cpp/eventhandler.h>

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

namespace {

/// Walks a document's parse events and fails on a key a mapping has twice:
/// yaml-cpp keeps the first and drops the rest without a word, so a
/// scenario's second `lanes:` or an inventory's second `destination:` was
/// silently ignored. Aliases stay one event each, so a file of many
/// aliases costs no more than its text.
class duplicate_keys : public YAML::EventHandler {
public:
    explicit duplicate_keys(const std::string& path) : m_path(path) {}
    void OnDocumentStart(const YAML::Mark&) override {}
    void OnDocumentEnd() override {}
    void OnNull(const YAML::Mark&, YAML::anchor_t) override { node(nullptr); }
    void OnAlias(const YAML::Mark&, YAML::anchor_t) override { node(nullptr); }
    void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string& v) override {
        node(&v, m);
    }
    void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
        node(nullptr);
        m_open.push_back(level{});
    }
    void OnSequenceEnd() override { m_open.pop_back(); }
    void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
        node(nullptr);
        m_open.emplace_back();
        m_open.back().map = true;
    }
    void OnMapEnd() override { m_open.pop_back(); }

private:
    struct level {
        bool map = false;
        bool key_next = true;
        std::set<std::string> keys;
    };
    /// A node starts: in a mapping it is a key or a value, in turn.
    void node(const std::string* scalar, const YAML::Mark& m = YAML::Mark::null_mark()) {
        if (m_open.empty() || !m_open.back().map) return;
        level& l = m_open.back();
        if (l.key_next && scalar && !l.keys.insert(*scalar).second)
            throw std::runtime_error(fmt::format("{}:{}: key '{}' given twice in one mapping", m_path,
                                                 m.line + 1, *scalar));
        l.key_next = !l.key_next;
    }
    const std::string& m_path;
    std::vector<level> m_open;
};

}  // namespace

YAML::Node load_file(const std::string& path) {
    // yaml-cpp opens a folder and then fails to read it, leaking its 2 KiB
    // read-ahead buffer (found by fuzz_scenario: "calibration: ."); say what
    // it is instead. A FIFO or a device would block or never end.
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
        throw std::runtime_error(fmt::format("{}: expected a file, this is a folder", path));
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
        throw std::runtime_error(fmt::format("{}: expected a regular file (not a FIFO, socket or device)", path));
    YAML::Node root;
    try {
        root = YAML::LoadFile(path);
    } catch (const YAML::BadFile&) {
        throw std::runtime_error(fmt::format("{}: cannot read the file", path));
    } catch (const YAML::ParserException& e) {
        throw std::runtime_error(fmt::format("{}:{}: expected valid YAML: {}", path, e.mark.line + 1,
                                             e.msg));
    }
    std::ifstream in(path);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot read the file", path));
    // The first document only, as LoadFile() reads it: a later one is not
    // the file's content (and looping over documents did not end on some
    // inputs, found by fuzz_inventory).
    duplicate_keys check(path);
    YAML::Parser parser(in);
    try {
        parser.HandleNextDocument(check);
    } catch (const YAML::ParserException& e) {
        throw std::runtime_error(fmt::format("{}:{}: expected valid YAML: {}", path, e.mark.line + 1, e.msg));
    }
    return root;
}

std::string scalar(const std::string& file, const YAML::Node& n, const char* what) {
    if (!n || !n.IsScalar()) fail(file, n, fmt::format("expected {}", what));
    return n.Scalar();
}

std::string get_string(const std::string& file, const YAML::Node& n, const char* what) {
    return scalar(file, n, what);
}

namespace {
/// Well-formed UTF-8 (no overlong forms, surrogates or values above U+10FFFF).
bool utf8(const std::string& s) {
    for (std::size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        const unsigned n = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : 9;
        if (n == 9 || i + n >= s.size()) return false;  // a sequence cut short
        std::uint32_t cp = n == 0 ? c : c & (0x3fu >> n);
        for (unsigned k = 1; k <= n; ++k) {
            const auto d = static_cast<unsigned char>(s[i + k]);
            if ((d >> 6) != 2) return false;
            cp = cp << 6 | (d & 0x3fu);
        }
        static constexpr std::uint32_t min[] = {0, 0x80, 0x800, 0x10000};
        if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
        i += n + 1;
    }
    return true;
}
}  // namespace

std::string get_text(const std::string& file, const YAML::Node& n, const char* what) {
    std::string s = scalar(file, n, what);
    if (!utf8(s)) fail(file, n, fmt::format("expected {} as UTF-8 text", what));
    return s;
}

double get_double(const std::string& file, const YAML::Node& n, const char* what) {
    const std::string s = scalar(file, n, what);
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || *end != '\0' || !std::isfinite(v))
        fail(file, n, fmt::format("expected {} (a number), got '{}'", what, s));
    return v;
}

namespace {
/// Decimal digits only: base 0 read "010" as 8 and "0x16" as 22, and a
/// sign or an overflow wrapped or saturated without a word. False when @s
/// is not digits; @range false when it is, but above 2^64 - 1.
bool decimal(const std::string& s, std::uint64_t* v, bool* range) {
    if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return false;
    errno = 0;
    *v = std::strtoull(s.c_str(), nullptr, 10);
    *range = errno != ERANGE;
    return true;
}
}  // namespace

std::uint64_t get_uint(const std::string& file, const YAML::Node& n, const char* what) {
    const std::string s = scalar(file, n, what);
    std::uint64_t v = 0;
    bool range = true;
    if (!decimal(s, &v, &range)) fail(file, n, fmt::format("expected {} (a whole number), got '{}'", what, s));
    if (!range) fail(file, n, fmt::format("expected {} (a whole number), '{}' is too large", what, s));
    return v;
}

std::uint64_t get_uint(const std::string& file, const YAML::Node& n, const char* what, std::uint64_t lo,
                       std::uint64_t hi) {
    const std::string s = scalar(file, n, what);
    std::uint64_t v = 0;
    bool range = true;
    if (!decimal(s, &v, &range) || !range || v < lo || v > hi)
        fail(file, n, fmt::format("expected {} as a whole number from {} to {}, got '{}'", what, lo, hi, s));
    return v;
}

bool get_bool(const std::string& file, const YAML::Node& n, const char* what) {
    const std::string s = scalar(file, n, what);
    if (s == "true" || s == "yes" || s == "on") return true;
    if (s == "false" || s == "no" || s == "off") return false;
    fail(file, n, fmt::format("expected {} (true or false), got '{}'", what, s));
}

bool split_unit(const std::string& s, double* v, std::string* unit) {
    // A plain decimal number: strtod also reads hex ("0x10ms" was 16 ms),
    // "inf" and "nan".
    if (s.empty() || !((s[0] >= '0' && s[0] <= '9') || s[0] == '.')) return false;
    if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) return false;
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
