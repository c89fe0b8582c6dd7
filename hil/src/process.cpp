// SPDX-License-Identifier: MIT
// run_process(): fork/exec with pipes, one poll loop, a hard deadline.
#include "odl/hil/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace odl::hil {
namespace {

using clock = std::chrono::steady_clock;

struct fd_guard {
    int fd = -1;
    ~fd_guard() { reset(); }
    void reset() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
};

void keep(std::string* s, const char* buf, std::size_t n, bool* capped) {
    if (s->size() + n <= kOutputCap) {
        s->append(buf, n);
    } else if (!*capped) {
        *capped = true;
        s->append("\n[output over 16 MiB: the rest was dropped]\n");
    }
}

}  // namespace

process_result run_process(const std::vector<std::string>& argv, int timeout_s, const std::string& input) {
    process_result r;
    if (argv.empty()) {
        r.status = 127;
        r.err = "no program given";
        return r;
    }
    int in[2], out[2], err[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return {127, false, "", std::strerror(errno)};
    fd_guard in_r{in[0]}, in_w{in[1]};
    if (::pipe2(out, O_CLOEXEC) != 0) return {127, false, "", std::strerror(errno)};
    fd_guard out_r{out[0]}, out_w{out[1]};
    if (::pipe2(err, O_CLOEXEC) != 0) return {127, false, "", std::strerror(errno)};
    fd_guard err_r{err[0]}, err_w{err[1]};

    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) return {127, false, "", std::strerror(errno)};
    if (pid == 0) {
        ::setpgid(0, 0);
        // Its own group (the deadline kills it whole), yet gone with us.
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        ::signal(SIGPIPE, SIG_DFL);
        ::execvp(args[0], args.data());
        const std::string msg = std::string(argv[0]) + ": " + std::strerror(errno) + "\n";
        (void)!::write(2, msg.data(), msg.size());
        ::_exit(127);
    }
    ::setpgid(pid, pid);  // both sides set it: no race with the kill below
    in_r.reset();
    out_w.reset();
    err_w.reset();
    ::fcntl(in_w.fd, F_SETFL, O_NONBLOCK);
    if (input.empty()) in_w.reset();

    const auto deadline = clock::now() + std::chrono::seconds(timeout_s);
    std::size_t sent = 0;
    bool out_capped = false, err_capped = false, killed = false;
    clock::time_point kill_at{};
    char buf[65536];
    while (out_r.fd >= 0 || err_r.fd >= 0) {
        const auto now = clock::now();
        if (!killed && now >= deadline) {
            ::kill(-pid, SIGTERM);
            killed = true;
            r.timed_out = true;
            kill_at = now + std::chrono::seconds(2);
        } else if (killed && now >= kill_at) {
            ::kill(-pid, SIGKILL);
            kill_at = now + std::chrono::hours(1);
            // Whatever still holds the pipes (a grandchild that left the
            // group) must not keep us here: stop reading.
            break;
        }
        pollfd p[3];
        int n = 0;
        if (out_r.fd >= 0) p[n++] = {out_r.fd, POLLIN, 0};
        if (err_r.fd >= 0) p[n++] = {err_r.fd, POLLIN, 0};
        if (in_w.fd >= 0) p[n++] = {in_w.fd, POLLOUT, 0};
        const auto until = killed ? kill_at : deadline;
        const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(until - now).count();
        if (::poll(p, n, static_cast<int>(std::max<long long>(0, std::min<long long>(ms, 1000)))) < 0 &&
            errno != EINTR)
            break;
        for (int i = 0; i < n; ++i) {
            if (p[i].revents == 0) continue;
            if (p[i].fd == in_w.fd) {
                const ssize_t w = ::write(in_w.fd, input.data() + sent, input.size() - sent);
                if (w > 0) sent += static_cast<std::size_t>(w);
                if (w < 0 && errno != EAGAIN) in_w.reset();
                if (sent == input.size()) in_w.reset();
                continue;
            }
            const ssize_t got = ::read(p[i].fd, buf, sizeof buf);
            const bool is_out = p[i].fd == out_r.fd;
            if (got > 0) {
                keep(is_out ? &r.out : &r.err, buf, static_cast<std::size_t>(got), is_out ? &out_capped : &err_capped);
            } else if (got == 0 || errno != EAGAIN) {
                (is_out ? out_r : err_r).reset();
            }
        }
    }
    int ws = 0;
    while (::waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
    }
    if (r.timed_out) r.status = 124;
    else if (WIFEXITED(ws)) r.status = WEXITSTATUS(ws);
    else if (WIFSIGNALED(ws)) r.status = 128 + WTERMSIG(ws);
    return r;
}

background_process::background_process(const std::vector<std::string>& argv, const std::string& log_path) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (log < 0) return;
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::setpgid(0, 0);
        ::prctl(PR_SET_PDEATHSIG, SIGTERM);
        const int null = ::open("/dev/null", O_RDONLY);
        ::dup2(null, 0);
        ::dup2(log, 1);
        ::dup2(log, 2);
        ::execvp(args[0], args.data());
        ::_exit(127);
    }
    ::close(log);
    if (pid > 0) {
        ::setpgid(pid, pid);
        pid_ = pid;
    }
}

background_process::~background_process() { stop(); }

bool background_process::running(int* status) {
    if (pid_ < 0) {
        if (status) *status = status_;
        return false;
    }
    int ws = 0;
    const pid_t w = ::waitpid(pid_, &ws, WNOHANG);
    if (w == 0) return true;
    status_ = w < 0 ? 127 : WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
    pid_ = -1;
    if (status) *status = status_;
    return false;
}

int background_process::stop() {
    if (!running()) return status_;
    ::kill(-pid_, SIGTERM);
    for (int i = 0; i < 40 && running(); ++i) ::usleep(50000);
    if (running()) {
        ::kill(-pid_, SIGKILL);
        int ws = 0;
        while (::waitpid(pid_, &ws, 0) < 0 && errno == EINTR) {
        }
        status_ = 128 + SIGKILL;
        pid_ = -1;
    }
    return status_;
}

}  // namespace odl::hil
