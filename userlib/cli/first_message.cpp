// SPDX-License-Identifier: MIT
#include "first_message.h"

#include <chrono>
#include <memory>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

namespace odl::cli {

namespace {

constexpr uint64_t kCtx = 0xf1257;
constexpr uint64_t kBusyNs = 20'000'000;  // waiting this long is idle: then look every 5 ms
constexpr auto kIdleSleep = std::chrono::milliseconds(5);

std::string status_text(int status) {
    const char* why = odl_last_error();
    return fmt::format("{}{}{}", odl_strerror(status), why && *why ? ": " : "", why ? why : "");
}

}  // namespace

std::optional<first_message> await_first(odl::device& dev, size_t cap, const std::atomic<bool>& stop,
                                         std::string& why) {
    why.clear();
    // Not cleared: pages become resident only where the message goes.
    std::unique_ptr<char[]> buf(new char[cap]);
    int rc = dev.post_recv(0, ODL_TAG_ANY, buf.get(), cap, kCtx);
    if (rc != ODL_OK) {
        why = status_text(rc);
        return std::nullopt;
    }
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        if (stop.load()) {
            // Once cancelled, libodl never touches the buffer again.
            dev.cancel(0, kCtx);
            return std::nullopt;
        }
        odl_completion c[4];
        size_t n = 0;
        const bool busy = std::chrono::steady_clock::now() - start < std::chrono::nanoseconds(kBusyNs);
        rc = busy ? odl_wait(dev.get(), c, 4, &n, kBusyNs) : odl_poll(dev.get(), c, 4, &n);
        for (size_t k = 0; k < n; k++) {
            if (c[k].ctx != kCtx) continue;
            if (c[k].status == ODL_ERR_TRUNCATED)
                throw std::runtime_error(fmt::format(
                    "the peer's first message has {} bytes, more than a test or a file request ({} at most)",
                    c[k].len, cap));
            if (c[k].status != ODL_OK) {
                why = odl_strerror(c[k].status);
                return std::nullopt;
            }
            return first_message{c[k].tag, std::string(buf.get(), size_t(c[k].len))};
        }
        if (rc != ODL_OK && rc != ODL_ERR_TIMEOUT) {
            why = status_text(rc);
            dev.cancel(0, kCtx);
            return std::nullopt;
        }
        if (!busy && n == 0) std::this_thread::sleep_for(kIdleSleep);
    }
}

}  // namespace odl::cli
