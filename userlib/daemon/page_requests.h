// SPDX-License-Identifier: MIT
// Requests from the status page's thread to the daemon's poll loop, which
// alone touches the bus objects and the test runner: the page's thread
// submits and waits (briefly) for the loop's answer; an eventfd wakes the
// loop.
#pragma once

#include <chrono>
#include <deque>
#include <functional>
#include <future>
#include <mutex>
#include <string>

namespace odl::daemon {

class page_requests {
public:
    /// What the loop answers: "" when done, else why not (with a status).
    struct answer {
        unsigned status = 200;
        std::string error;
    };
    using job_fn = std::function<answer()>;

    page_requests();
    ~page_requests();
    page_requests(const page_requests&) = delete;
    page_requests& operator=(const page_requests&) = delete;

    /// From any thread: runs @job on the loop and returns its answer, or a
    /// 503 when the loop does not take it within @wait.
    answer submit(job_fn job, std::chrono::milliseconds wait = std::chrono::milliseconds(3000));
    /// The loop's side: the fd to poll (POLLIN), and running what is queued.
    int fd() const { return m_fd; }
    void run_pending();

private:
    struct item {
        job_fn job;
        std::promise<answer> done;
    };
    int m_fd = -1;
    std::mutex m_mu;
    std::deque<item> m_queue;
};

}  // namespace odl::daemon
