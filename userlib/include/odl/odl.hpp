// SPDX-License-Identifier: MIT
// libodl for C++: RAII owners and exceptions over the stable C API (odl.h).
// Header-only, so it adds nothing to the library's ABI.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "odl/odl.h"

namespace odl {

/// A failed libodl call: the status and the library's reason.
class error : public std::runtime_error {
public:
    explicit error(int status) : std::runtime_error(std::string(odl_strerror(status)) + ": " + odl_last_error()),
                                 m_status(status) {}
    int status() const noexcept { return m_status; }

private:
    int m_status;
};

/// Throws odl::error unless @status is ODL_OK.
inline void check(int status) {
    if (status != ODL_OK) throw error(status);
}

/// The level ODL_LOG_LEVEL names (error, warn, info or debug); @fallback when
/// it is unset, and also, after a warning on stderr, when it names none.
inline int log_level_from_env(int fallback = ODL_LOG_WARN) {
    static const char* const names[] = {"error", "warn", "info", "debug"};
    const char* v = std::getenv("ODL_LOG_LEVEL");
    if (!v || !*v) return fallback;
    for (int i = 0; i <= ODL_LOG_DEBUG; ++i)
        if (std::strcmp(v, names[i]) == 0) return i;
    std::fprintf(stderr, "libodl: ODL_LOG_LEVEL='%s' is not error, warn, info or debug; using %s\n", v,
                 names[fallback]);
    return fallback;
}

/// Routes libodl's messages up to @max_level to stderr, one line each, as
/// "PREFIX: warning: ..." (@prefix must outlive the library's use of it).
inline void log_to_stderr(const char* prefix, int max_level) {
    odl_set_log_fn(
        [](void* arg, int level, const char* msg) {
            static const char* const kinds[] = {"error", "warning", "info", "debug"};
            const char* kind = level >= 0 && level <= ODL_LOG_DEBUG ? kinds[level] : "message";
            std::fprintf(stderr, "%s: %s: %s\n", static_cast<const char*>(arg), kind, msg);
        },
        const_cast<char*>(prefix), max_level);
}

/// Open parameters with the library's defaults; set fields, then open.
struct open_params : odl_open_params {
    open_params() { odl_open_params_init(this); }
};

/// One open device; closes (saying goodbye to the peer) when destroyed.
class device {
public:
    /// Opens and connects; throws odl::error.
    explicit device(const open_params& p) {
        odl_dev* d = nullptr;
        check(odl_open(&p, &d));
        m_dev.reset(d);
    }
    /// Two joined endpoints in this process (loopback, or both ends of a sim link).
    static std::pair<device, device> pair(const open_params& p) {
        odl_dev *a = nullptr, *b = nullptr;
        check(odl_open_pair(&p, &a, &b));
        return {device(a), device(b)};
    }

    /// Posts return the status: ODL_ERR_AGAIN is routine flow control, not
    /// an exception. The buffer stays in use until its completion.
    int post_send(uint32_t stream, uint32_t tag, const void* buf, size_t len, uint64_t ctx = 0,
                  odl_mr* mr = nullptr) noexcept {
        return odl_post_send(m_dev.get(), stream, tag, buf, len, mr, ctx);
    }
    int post_recv(uint32_t stream, uint32_t tag, void* buf, size_t cap, uint64_t ctx = 0,
                  odl_mr* mr = nullptr) noexcept {
        return odl_post_recv(m_dev.get(), stream, tag, buf, cap, mr, ctx);
    }
    /// Withdraws the operation posted on @stream with @ctx (odl_cancel());
    /// ODL_ERR_INVAL when nothing pending matches.
    int cancel(uint32_t stream, uint64_t ctx) noexcept { return odl_cancel(m_dev.get(), stream, ctx); }
    /// Drops @stream's incoming messages whose tag matches @tag under @mask
    /// until the next call (odl_discard()); stop_discard() delivers again.
    int discard(uint32_t stream, uint32_t tag, uint32_t mask) noexcept {
        return odl_discard(m_dev.get(), stream, tag, mask, 0);
    }
    int stop_discard(uint32_t stream) noexcept {
        return odl_discard(m_dev.get(), stream, 0, 0, ODL_DISCARD_STOP);
    }
    /// Collects up to @max completions without blocking.
    std::vector<odl_completion> poll(size_t max = 64) {
        std::vector<odl_completion> out(max);
        size_t n = 0;
        check(odl_poll(m_dev.get(), out.data(), out.size(), &n));
        out.resize(n);
        return out;
    }
    /// Waits up to @timeout_ns; an empty result means the time ran out.
    std::vector<odl_completion> wait(uint64_t timeout_ns, size_t max = 64) {
        std::vector<odl_completion> out(max);
        size_t n = 0;
        const int rc = odl_wait(m_dev.get(), out.data(), out.size(), &n, timeout_ns);
        if (rc != ODL_OK && rc != ODL_ERR_TIMEOUT) throw error(rc);
        out.resize(n);
        return out;
    }
    odl_dev_info info() const {
        odl_dev_info i{};
        i.struct_size = sizeof(i);
        check(odl_query(m_dev.get(), &i));
        return i;
    }
    odl_stats stats() const {
        odl_stats s{};
        s.struct_size = sizeof(s);
        check(odl_get_stats(m_dev.get(), &s));
        return s;
    }
    /// The C handle, for calls this wrapper lacks.
    odl_dev* get() const noexcept { return m_dev.get(); }

private:
    explicit device(odl_dev* d) : m_dev(d) {}
    struct closer {
        void operator()(odl_dev* d) const noexcept { odl_close(d); }
    };
    std::unique_ptr<odl_dev, closer> m_dev;
};

}  // namespace odl
