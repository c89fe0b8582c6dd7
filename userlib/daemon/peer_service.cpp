// SPDX-License-Identifier: MIT
#include "peer_service.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "files/clock.h"

namespace odl::daemon {

namespace {

uint64_t now_us() { return files::now_ns() / 1000u; }

constexpr unsigned kMaxBackoffS = 30;
constexpr uint64_t kHealthyUs = 60'000'000;  // ran this long: the next failure starts the backoff afresh
constexpr uint64_t kPeerGoneUs = 5'000'000;  // on demand: a child whose peer closed is stopped after this

std::string exit_words(const std::string& who, int st) {
    if (WIFSIGNALED(st)) return fmt::format("{} ended by signal {}", who, WTERMSIG(st));
    return fmt::format("{} exited with status {}", who, WEXITSTATUS(st));
}

/// A server waits for its client this long (a year: until stopped).
constexpr const char* kWaitForever = "31536000";

}  // namespace

peer_service::peer_service(config c, state_fn on_state) : m_cfg(std::move(c)), m_on_state(std::move(on_state)) {}

peer_service::~peer_service() {
    for (auto& [name, c] : m_children) stop(c);
}

void peer_service::set_devices(const std::map<std::string, device_state>& devices) {
    for (auto it = m_children.begin(); it != m_children.end();) {
        if (devices.count(it->first)) {
            ++it;
            continue;
        }
        stop(it->second);
        const std::string name = it->first;
        it = m_children.erase(it);
        if (m_on_state) m_on_state(name, "");
    }
    const uint64_t now = now_us();
    for (const auto& [name, d] : devices) {
        const bool fresh = m_children.count(name) == 0;
        child& c = m_children[name];
        c.index = d.index;
        if (!m_cfg.on_demand) {
            if (fresh) start(name, c);
            continue;
        }
        c.peer_waits = d.open_on_peer && !d.open_here;
        if (c.pid > 0) {
            // Its client left before a session (or the child is between
            // its session's end and its exit): stopped after a grace.
            if (d.open_on_peer) c.peer_gone_us = 0;
            else if (!c.peer_gone_us) c.peer_gone_us = now;
        } else if (c.peer_waits && (!c.pending || now >= c.restart_at_us)) {
            start(name, c);
        } else if (fresh && m_on_state) {
            m_on_state(name, idle_words());
        }
    }
}

bool peer_service::serving(const std::string& device) const {
    const auto it = m_children.find(device);
    return it != m_children.end() && (!m_cfg.on_demand || it->second.pid > 0);
}

std::string peer_service::what() const {
    if (m_cfg.dir.empty()) return "answering tests";
    return "serving files from " + m_cfg.dir + (m_cfg.tests ? " and answering tests" : "");
}

std::string peer_service::idle_words() const { return what() + " when the peer asks"; }

std::string peer_service::child_name() const {
    return m_cfg.dir.empty() ? "odl perf --server" : m_cfg.tests ? "odl files serve --answer-tests" : "odl files serve";
}

void peer_service::start(const std::string& device, child& c) {
    std::vector<std::string> argv{m_cfg.odl};
    if (m_cfg.dir.empty()) {
        argv.insert(argv.end(), {"perf", "latency", "--server", "-q", "--connect-timeout", kWaitForever});
    } else {
        argv.insert(argv.end(), {"files", "serve", m_cfg.dir});
        if (m_cfg.tests) argv.push_back("--answer-tests");
        if (m_cfg.on_demand) argv.push_back("--once");
        if (!m_cfg.keys.empty()) argv.insert(argv.end(), {"--keys", m_cfg.keys});
    }
    argv.insert(argv.end(), {"--device", std::to_string(c.index), "--backend", m_cfg.backend});
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid == 0) {
        // Dies with the daemon: no orphan keeps the device.
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) _exit(1);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, nullptr);  // the daemon blocks its signals for its signalfd
        const int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, 0);
        execv(a[0], a.data());
        _exit(127);
    }
    std::string why;
    if (pid < 0) {
        why = std::string("fork failed: ") + std::strerror(errno);
    } else {
        const int fd = int(syscall(SYS_pidfd_open, pid, 0));
        if (fd >= 0) {
            c.pid = pid;
            c.pidfd = fd;
            c.started_us = now_us();
            c.pending = false;
            c.peer_gone_us = 0;
            if (m_on_state) m_on_state(device, what());
            return;
        }
        why = std::string("pidfd_open failed: ") + std::strerror(errno);
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
    }
    back_off(device, c, why);
}

void peer_service::resume(const std::string& device, child& c) {
    if (!m_cfg.on_demand || c.peer_waits) return start(device, c);
    // On demand with no peer waiting: until it opens its end again.
    c.pending = false;
    if (m_on_state) m_on_state(device, idle_words());
}

void peer_service::back_off(const std::string& device, child& c, const std::string& why) {
    c.restart_at_us = now_us() + uint64_t(c.backoff_s) * 1000000u;
    c.pending = true;
    if (m_on_state) m_on_state(device, fmt::format("restarting in {} s: {}", c.backoff_s, why));
    c.backoff_s = std::min(kMaxBackoffS, c.backoff_s * 2);
}

void peer_service::stop(child& c) {
    if (c.pid <= 0) return;
    kill(c.pid, SIGTERM);
    // It ends within 0.2 s of the signal (odl files serve's stop flag); then no mercy.
    pollfd p{c.pidfd, POLLIN, 0};
    if (poll(&p, 1, 2000) != 1) kill(c.pid, SIGKILL);
    waitpid(c.pid, nullptr, 0);
    close(c.pidfd);
    c.pid = -1;
    c.pidfd = -1;
}

std::vector<int> peer_service::fds() const {
    std::vector<int> v;
    for (const auto& [name, c] : m_children)
        if (c.pidfd >= 0) v.push_back(c.pidfd);
    return v;
}

uint64_t peer_service::deadline_us() const {
    uint64_t d = UINT64_MAX;
    for (const auto& [name, c] : m_children) {
        if (c.pid < 0 && c.pending) d = std::min(d, c.restart_at_us);
        if (c.pid > 0 && c.peer_gone_us) d = std::min(d, c.peer_gone_us + kPeerGoneUs);
    }
    return d;
}

void peer_service::handle() {
    const uint64_t now = now_us();
    for (auto& [name, c] : m_children) {
        if (c.pid > 0) {
            int st = 0;
            if (waitpid(c.pid, &st, WNOHANG) != c.pid) {
                if (c.peer_gone_us && now >= c.peer_gone_us + kPeerGoneUs) {
                    // On demand, its client gone: the device back to this host.
                    stop(c);
                    if (m_on_state) m_on_state(name, idle_words());
                }
                continue;
            }
            close(c.pidfd);
            c.pid = -1;
            c.pidfd = -1;
            const bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
            if (ok && (m_cfg.on_demand || m_cfg.dir.empty())) {
                // A session ended (the perf server ends after each; on
                // demand every child does): answer the next one.
                c.backoff_s = 1;
                resume(name, c);
                continue;
            }
            if (now - c.started_us > kHealthyUs) c.backoff_s = 1;
            back_off(name, c, exit_words(child_name(), st));
        } else if (c.pending && now >= c.restart_at_us) {
            resume(name, c);
        }
    }
}

}  // namespace odl::daemon
