// SPDX-License-Identifier: MIT
// The perf suite on request (D-Bus RunTest), and the other `odl` commands
// the daemon runs for its users (a listing of the peer's files): one `odl`
// child per device at a time, its output read from pipes in the daemon's own
// poll loop (no thread), bounded in time. The peer host must be answering
// (`odl perf --server`); what odl perf says when it is not becomes the
// error.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace odl::daemon {

/// A finished test: the report (odl perf's JSON) or why there is none.
struct test_outcome {
    bool ok = false;
    std::string report;  ///< odl perf's JSON when ok
    std::string error;   ///< its last words on stderr, or the runner's reason
};

/// The last test of each device as JSON (the D-Bus LastTest), for readers
/// in other threads (the status page's).
class test_records {
public:
    void set(const std::string& device, std::string json);
    std::map<std::string, std::string> all() const;

private:
    mutable std::mutex m_mu;
    std::map<std::string, std::string> m_by_device;
};

class test_runner {
public:
    using done_fn = std::function<void(const test_outcome&)>;
    /// Runs @odl (the CLI) with --backend @backend; each test ends within @limit_s.
    test_runner(std::string odl, std::string backend, unsigned limit_s);
    ~test_runner();
    test_runner(const test_runner&) = delete;
    test_runner& operator=(const test_runner&) = delete;

    /// The tests one may ask for ("latency", "bandwidth").
    static const std::vector<std::string>& tests();
    /// Starts @test over device @index ("odl_tb5_<index>") as @key; throws
    /// std::runtime_error if it cannot start. @done runs from handle().
    void start(const std::string& key, unsigned index, const std::string& test, done_fn done);
    /// Runs the CLI with @args (after the program's name; --backend is
    /// added) as @key, stopped after @limit_s; its stdout is the report.
    void run_odl(const std::string& key, std::vector<std::string> args, unsigned limit_s, done_fn done);
    bool running(const std::string& key) const { return m_runs.count(key) != 0; }

    /// The pipes to poll (POLLIN) and the next deadline (monotonic µs,
    /// UINT64_MAX none).
    std::vector<int> fds() const;
    uint64_t deadline_us() const;
    /// Reads what is ready, ends what finished or ran out of time.
    void handle();

private:
    struct run {
        pid_t pid = -1;
        int out = -1, err = -1;
        std::string out_text, err_text;
        uint64_t kill_at_us = 0;
        unsigned limit_s = 0;
        bool killed = false;
        done_fn done;
    };
    static void drain(int& fd, std::string& into);
    void finish(run& r, int status);

    std::string m_odl, m_backend;
    unsigned m_limit_s;
    std::map<std::string, run> m_runs;
};

}  // namespace odl::daemon
