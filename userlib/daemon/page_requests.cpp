// SPDX-License-Identifier: MIT
#include "page_requests.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <stdexcept>

namespace odl::daemon {

page_requests::page_requests() : m_fd(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {
    if (m_fd < 0) throw std::runtime_error("status page: no eventfd for its requests");
}

page_requests::~page_requests() {
    // Whoever still waits learns that the daemon is going; nothing more runs.
    std::lock_guard<std::mutex> g(m_mu);
    for (auto& it : m_queue) it.done.set_value({503, "the daemon is stopping"});
    close(m_fd);
}

page_requests::answer page_requests::submit(job_fn job, std::chrono::milliseconds wait) {
    std::future<answer> f;
    {
        std::lock_guard<std::mutex> g(m_mu);
        m_queue.push_back({std::move(job), {}});
        f = m_queue.back().done.get_future();
    }
    const uint64_t one = 1;
    if (write(m_fd, &one, sizeof(one)) != sizeof(one)) return {503, "the daemon's loop cannot be woken"};
    if (f.wait_for(wait) != std::future_status::ready) return {503, "the daemon did not answer in time"};
    return f.get();
}

void page_requests::run_pending() {
    uint64_t n;
    while (read(m_fd, &n, sizeof(n)) == sizeof(n)) {
    }
    for (;;) {
        item it;
        {
            std::lock_guard<std::mutex> g(m_mu);
            if (m_queue.empty()) return;
            it = std::move(m_queue.front());
            m_queue.pop_front();
        }
        answer a;
        try {
            a = it.job ? it.job() : answer{500, "nothing to do"};
        } catch (const std::exception& e) {
            a = {500, e.what()};
        }
        it.done.set_value(std::move(a));
    }
}

}  // namespace odl::daemon
