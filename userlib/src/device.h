// SPDX-License-Identifier: MIT
// odl::device_impl: one open device. Checks every argument once for all backends,
// keeps the registered memory regions, and owns the backend.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backend.h"

struct odl_mr {
    const unsigned char* addr;
    size_t len;
};

namespace odl {

/// Checks and defaults user parameters; throws odl::error(ODL_ERR_INVAL).
open_config make_config(const odl_open_params& p);

class device_impl {
public:
    explicit device_impl(std::unique_ptr<backend> b, open_config cfg);
    ~device_impl();
    device_impl(const device_impl&) = delete;
    device_impl& operator=(const device_impl&) = delete;

    /// Waits for the link (unless ODL_OPEN_NONBLOCK). Throws odl::error.
    void wait_until_up();

    int post_send(uint32_t stream, uint32_t tag, const void* buf, size_t len, odl_mr* mr, uint64_t ctx);
    int post_recv(uint32_t stream, uint32_t tag, void* buf, size_t cap, odl_mr* mr, uint64_t ctx);
    int cancel(uint32_t stream, uint64_t ctx);
    int discard(uint32_t stream, uint32_t tag, uint32_t mask, uint32_t flags);
    /// After a link failure the completions carry its status, and the
    /// thread's last error its reason in words.
    size_t poll(odl_completion* comps, size_t max);
    int wait(odl_completion* comps, size_t max, size_t* n, uint64_t timeout_ns);
    void query(odl_dev_info& info) const;
    void stats(odl_stats& s) const;
    odl_mr* reg_mr(void* addr, size_t len);
    int dereg_mr(odl_mr* mr);

private:
    int check_mr(const odl_mr* mr, const void* buf, size_t len) const;
    int link_error(int status) const;

    std::unique_ptr<backend> m_backend;
    open_config m_cfg;
    std::vector<std::unique_ptr<odl_mr>> m_mrs;
};

}  // namespace odl

struct odl_dev {
    std::unique_ptr<odl::device_impl> dev;
};
