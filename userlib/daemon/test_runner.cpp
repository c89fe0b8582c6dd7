// SPDX-License-Identifier: MIT
#include "test_runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "files/clock.h"

extern char** environ;

namespace odl::daemon {

namespace {

constexpr std::size_t kMaxReport = 4u << 20;  // a latency report with its CDFs is a few KiB
constexpr std::size_t kMaxErr = 16u << 10;

uint64_t now_us() { return files::now_ns() / 1000u; }

/// Short and light enough to run on a busy link: seconds, not minutes.
std::vector<std::string> test_args(const std::string& test) {
    if (test == "latency") return {"latency", "--sizes", "64,4K", "-n", "2000", "--warmup", "200"};
    if (test == "bandwidth") return {"bandwidth", "--sizes", "4K,64K,1M", "--bytes", "64M"};
    return {};
}

/// The last non-empty line of @s (what odl perf said last).
std::string last_line(const std::string& s) {
    auto end = s.find_last_not_of("\n ");
    if (end == std::string::npos) return "";
    const auto start = s.rfind('\n', end);
    return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

}  // namespace

void test_records::set(const std::string& device, std::string json) {
    std::lock_guard<std::mutex> g(m_mu);
    m_by_device[device] = std::move(json);
}

std::map<std::string, std::string> test_records::all() const {
    std::lock_guard<std::mutex> g(m_mu);
    return m_by_device;
}

test_runner::test_runner(std::string odl, std::string backend, unsigned limit_s)
    : m_odl(std::move(odl)), m_backend(std::move(backend)), m_limit_s(limit_s) {}

test_runner::~test_runner() {
    for (auto& [key, r] : m_runs) {
        kill(r.pid, SIGKILL);
        waitpid(r.pid, nullptr, 0);
        if (r.out >= 0) close(r.out);
        if (r.err >= 0) close(r.err);
    }
}

const std::vector<std::string>& test_runner::tests() {
    static const std::vector<std::string> t{"latency", "bandwidth"};
    return t;
}

void test_runner::start(const std::string& key, unsigned index, const std::string& test, done_fn done) {
    auto args = test_args(test);
    if (args.empty()) throw std::invalid_argument(fmt::format("no test '{}' (latency, bandwidth)", test));
    args.insert(args.begin(), "perf");
    args.insert(args.end(), {"--client", std::to_string(index), "--json", "-q"});
    run_odl(key, std::move(args), m_limit_s, std::move(done));
}

void test_runner::run_odl(const std::string& key, std::vector<std::string> args, unsigned limit_s, done_fn done) {
    if (running(key)) throw std::logic_error(fmt::format("a test is already running on {}", key));
    std::vector<std::string> argv{m_odl};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--backend", m_backend});

    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) throw std::runtime_error("pipe failed");
    if (pipe2(err, O_CLOEXEC) != 0) {
        close(out[0]);
        close(out[1]);
        throw std::runtime_error("pipe failed");
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    // The daemon blocks its signals for its signalfd; the child must not inherit that.
    posix_spawnattr_t at;
    posix_spawnattr_init(&at);
    sigset_t none, deflt;
    sigemptyset(&none);
    sigemptyset(&deflt);
    for (int s : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) sigaddset(&deflt, s);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &deflt);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, a[0], &fa, &at, a.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(out[1]);
    close(err[1]);
    if (rc != 0) {
        close(out[0]);
        close(err[0]);
        throw std::runtime_error(fmt::format("cannot run {}: {}", m_odl, std::strerror(rc)));
    }
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    run r;
    r.pid = pid;
    r.out = out[0];
    r.err = err[0];
    r.kill_at_us = now_us() + uint64_t(limit_s) * 1000000u;
    r.limit_s = limit_s;
    r.done = std::move(done);
    m_runs.emplace(key, std::move(r));
}

std::vector<int> test_runner::fds() const {
    std::vector<int> v;
    for (const auto& [key, r] : m_runs) {
        if (r.out >= 0) v.push_back(r.out);
        if (r.err >= 0) v.push_back(r.err);
    }
    return v;
}

uint64_t test_runner::deadline_us() const {
    uint64_t d = UINT64_MAX;
    for (const auto& [key, r] : m_runs) {
        // Both pipes closed or killed: the child is ending; look again shortly.
        d = std::min(d, (r.out < 0 && r.err < 0) || r.killed ? now_us() + 10000u : r.kill_at_us);
    }
    return d;
}

void test_runner::drain(int& fd, std::string& into) {
    char buf[65536];
    for (;;) {
        const ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0) {
            into.append(buf, size_t(n));
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && errno == EAGAIN) return;
        close(fd);  // end of file, or an error: nothing more comes
        fd = -1;
        return;
    }
}

void test_runner::handle() {
    for (auto it = m_runs.begin(); it != m_runs.end();) {
        run& r = it->second;
        if (r.out >= 0) drain(r.out, r.out_text);
        if (r.err >= 0) drain(r.err, r.err_text);
        if (r.err_text.size() > kMaxErr) r.err_text.erase(0, r.err_text.size() - kMaxErr);
        if (r.out_text.size() > kMaxReport && !r.killed) {
            kill(r.pid, SIGKILL);  // not a report any more: something is wrong with it
            r.killed = true;
            r.err_text += "\nthe report grew past 4 MiB";
        }
        if (!r.killed && now_us() >= r.kill_at_us) {
            kill(r.pid, SIGKILL);
            r.killed = true;
            r.err_text += fmt::format("\nno result within {} s: stopped", r.limit_s);
        }
        int st = 0;
        if ((r.out < 0 && r.err < 0) || r.killed) {
            if (waitpid(r.pid, &st, WNOHANG) == r.pid) {
                if (r.out >= 0) close(r.out);
                if (r.err >= 0) close(r.err);
                run done = std::move(r);
                it = m_runs.erase(it);
                finish(done, st);
                continue;
            }
        }
        ++it;
    }
}

void test_runner::finish(run& r, int status) {
    test_outcome o;
    o.ok = !r.killed && WIFEXITED(status) && WEXITSTATUS(status) == 0 && !r.out_text.empty();
    if (o.ok) {
        o.report = std::move(r.out_text);
    } else {
        o.error = last_line(r.err_text);
        if (o.error.empty())
            o.error = WIFSIGNALED(status) ? fmt::format("odl ended by signal {}", WTERMSIG(status))
                                          : fmt::format("odl exited with status {}", WEXITSTATUS(status));
    }
    if (r.done) r.done(o);
}

}  // namespace odl::daemon
