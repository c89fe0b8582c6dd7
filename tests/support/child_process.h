// SPDX-License-Identifier: MIT
// Child processes for tests that start programs (odl-daemon, dbus-daemon,
// Xvfb, odl-tray): each with its stderr in a file, stopped (and reaped)
// when the test is done with it, so no test leaves a process behind.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace odl::test {

inline std::string slurp(const std::string& path) {
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

/// A child process with its stderr in a file; killed at the end.
struct child {
    pid_t pid = -1;
    std::string err_file;
    child() = default;
    child(std::vector<std::string> argv, const std::string& err, int out_fd = -1) : err_file(err) {
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out_fd >= 0) posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
        std::vector<char*> a;
        for (auto& s : argv) a.push_back(s.data());
        a.push_back(nullptr);
        if (posix_spawn(&pid, a[0], &fa, nullptr, a.data(), environ) != 0) pid = -1;
        posix_spawn_file_actions_destroy(&fa);
    }
    /// Exit status after @sig, or -1 if it did not end within 5 s.
    int stop(int sig = SIGTERM) {
        if (pid < 0) return -1;
        kill(pid, sig);
        return wait(500);
    }
    /// Exit status once it ends by itself within @tries x 10 ms; else -1 (and killed).
    int wait(int tries = 500) {
        if (pid < 0) return -1;
        for (int i = 0; i < tries; i++) {
            int st = 0;
            if (waitpid(pid, &st, WNOHANG) == pid) {
                pid = -1;
                return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
        pid = -1;
        return -1;
    }
    child(child&& o) noexcept : pid(o.pid), err_file(std::move(o.err_file)) { o.pid = -1; }
    child& operator=(child&& o) noexcept {
        if (this != &o) {
            if (pid > 0) stop(SIGKILL);
            pid = o.pid;
            err_file = std::move(o.err_file);
            o.pid = -1;
        }
        return *this;
    }
    child(const child&) = delete;
    child& operator=(const child&) = delete;
    ~child() {
        if (pid > 0) stop(SIGKILL);
    }
    std::string err() const { return slurp(err_file); }
};

}  // namespace odl::test
