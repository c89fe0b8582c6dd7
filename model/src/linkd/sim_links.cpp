// SPDX-License-Identifier: MIT
// odl-linkd --sim --links N: a process per modelled link, one socket.
#include "odl/model/linkd/sim_links.h"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <deque>
#include <thread>

#include <fmt/format.h>

#include "odl/model/linkd/unix_listen.h"
#include "odl/wire/sim_codec.h"

namespace odl::model::linkd {

namespace {

/// How long a link process has to answer a control command.
constexpr int k_answer_ms = 2000;
/// Connections that have not sent their HELLO yet, at most.
constexpr std::size_t k_max_waiting = 64;

struct link_proc {
    pid_t pid = -1;
    int chan = -1;  ///< our end of the channel (sim_server_config::channel_fd)
    bool gone = false;
};

std::string exit_text(int status) {
    if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
    if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
    return "stopped";
}

// In the link process: serve, then leave without running the router's
// destructors (they would remove the router's socket files).
[[noreturn]] void link_main(sim_server_config cfg, const std::vector<int>& close_fds,
                            const std::function<void(sim_server*)>& in_child, pid_t router) {
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive the router
    if (::getppid() != router) ::_exit(1);
    for (int fd : close_fds) ::close(fd);
    const unsigned index = cfg.link_index;
    const bool verbose = cfg.verbose;
    int rc = 0;
    try {
        sim_server sim(std::move(cfg));
        if (in_child) in_child(&sim);
        sim.run();
        if (in_child) in_child(nullptr);
        if (verbose) {
            const auto& st = sim.stats();
            fmt::print(stderr, "odl-linkd: sim link {}: frames A->B {} (lost {}), B->A {} (lost {})\n", index,
                       st.frames_in[0], st.frames_lost[0], st.frames_in[1], st.frames_lost[1]);
            fmt::print(stderr, "odl-linkd: sim link {}: {}\n", index, sim.profile().summary());
        }
    } catch (const std::exception& e) {
        fmt::print(stderr, "odl-linkd: sim link {}: {}\n", index, e.what());
        rc = 1;
    }
    std::fflush(nullptr);
    ::_exit(rc);
}

// The link a waiting connection's first datagram (its HELLO) asks for; a
// connection that sent anything else goes to link 0, which drops it with
// the reason as a single-link server does. Peeked: the datagram and its
// ring memory stay queued for the link process.
unsigned route_of(int fd, unsigned links) {
    unsigned char buf[ODL_SIM_MAX_DATAGRAM];
    const ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_PEEK | MSG_DONTWAIT);
    if (n <= 0 || odl_sim_check(buf, std::size_t(n), ODL_SIM_SIDE_CLIENT)) return 0;
    odl_sim_hdr h;
    std::memcpy(&h, buf, sizeof(h));
    if (odl_le16(h.type) != ODL_SIM_HELLO) return 0;
    odl_sim_hello hello;
    std::memcpy(&hello, buf + sizeof(h), sizeof(hello));
    return hello.link < links ? hello.link : 0;  // link 0 refuses a link there is not
}

class router {
public:
    router(sim_links_config cfg, const std::atomic<bool>& stop) : m_cfg(std::move(cfg)), m_stop(stop) {}
    ~router() {
        for (int fd : m_waiting) ::close(fd);
        for (auto& l : m_links)
            if (l.chan >= 0) ::close(l.chan);
    }
    router(const router&) = delete;
    router& operator=(const router&) = delete;

    int run(const std::function<void(sim_server*)>& in_child) {
        std::string err;
        if (!m_listen.open(m_cfg.socket_path, err) ||
            (!m_cfg.control_path.empty() && !m_ctl.open(m_cfg.control_path, err))) {
            fmt::print(stderr, "odl-linkd: {}\n", err);
            return 1;
        }
        if (!start(in_child)) {
            stop_links();
            return 1;
        }
        fmt::print(stderr, "odl-linkd: serving the sim backend on {} ({} links, wall-clock paced, a process each)\n",
                   m_cfg.socket_path, m_links.size());
        for (std::size_t k = 0; k < m_links.size(); ++k) {
            const auto& c = m_cfg.links[k];
            fmt::print(stderr, "odl-linkd:   sim device {}: {}, {} Mb/s A to B, {} Mb/s B to A\n", k, describe(c),
                       rate_mbps(c, 0), rate_mbps(c, 1));
        }
        int rc = 0;
        while (!m_stop.load() && rc == 0) rc = turn();
        stop_links();
        return rc < 0 ? 0 : rc;
    }

private:
    bool start(const std::function<void(sim_server*)>& in_child) {
        const pid_t self = ::getpid();
        for (std::size_t k = 0; k < m_cfg.links.size(); ++k) {
            int sp[2];
            if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
                fmt::print(stderr, "odl-linkd: sim: socketpair: {}\n", std::strerror(errno));
                return false;
            }
            std::fflush(nullptr);  // nothing buffered is written twice
            const pid_t pid = ::fork();
            if (pid < 0) {
                fmt::print(stderr, "odl-linkd: sim: fork: {}\n", std::strerror(errno));
                ::close(sp[0]);
                ::close(sp[1]);
                return false;
            }
            if (pid == 0) {
                std::vector<int> fds = {m_listen.fd(), sp[0]};
                if (m_ctl.fd() >= 0) fds.push_back(m_ctl.fd());
                for (const auto& l : m_links) fds.push_back(l.chan);
                sim_server_config c = m_cfg.links[k];
                c.socket_path.clear();
                c.control_path.clear();
                c.channel_fd = sp[1];
                link_main(std::move(c), fds, in_child, self);
            }
            ::close(sp[1]);
            m_links.push_back({pid, sp[0], false});
        }
        return true;
    }

    // One poll: new connections, their HELLOs, control commands, and the
    // link processes' health. Non-zero: stop (-1: with status 0).
    int turn() {
        std::vector<pollfd> p;
        p.push_back({m_listen.fd(), POLLIN, 0});
        p.push_back({m_ctl.fd(), POLLIN, 0});
        for (const auto& l : m_links) p.push_back({l.chan, POLLIN, 0});
        for (int fd : m_waiting) p.push_back({fd, POLLIN, 0});
        if (::poll(p.data(), p.size(), 200) < 0) return 0;  // EINTR: the stop flag is looked at next
        const std::size_t nl = m_links.size();
        for (std::size_t k = 0; k < nl; ++k)
            if (p[2 + k].revents) {
                // A link process speaks only when asked: this is its end.
                if (int rc = link_ended(k)) return rc;
            }
        for (std::size_t i = 0, w = 2 + nl; i < m_waiting.size(); ++w) {
            if (!p[w].revents) {
                ++i;
                continue;
            }
            const int fd = m_waiting[i];
            m_waiting.erase(m_waiting.begin() + std::ptrdiff_t(i));
            hand_over(fd);
        }
        if (p[0].revents & POLLIN) accept_all();
        if (p[1].revents & POLLIN)
            answer_control(m_ctl.fd(), [this](const std::string& cmd) { return control(cmd); });
        return 0;
    }

    void accept_all() {
        for (;;) {
            const int fd = ::accept4(m_listen.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
            if (fd < 0) return;
            if (m_waiting.size() >= k_max_waiting) {
                fmt::print(stderr, "odl-linkd: sim: {} connections have sent no HELLO; closing the oldest\n",
                           m_waiting.size());
                ::close(m_waiting.front());
                m_waiting.pop_front();
            }
            m_waiting.push_back(fd);
        }
    }

    // The connection goes to its link's process (SCM_RIGHTS); ours closes.
    void hand_over(int fd) {
        const unsigned k = route_of(fd, unsigned(m_links.size()));
        unsigned char tag = k_chan_client;
        iovec iov{&tag, 1};
        if (odl_sim_send(m_links[k].chan, &iov, 1, fd) < 0)
            fmt::print(stderr, "odl-linkd: sim: cannot hand a program to link {}: {}\n", k, std::strerror(errno));
        ::close(fd);
    }

    std::string control(const std::string& cmd) {
        const std::size_t n = m_links.size();
        const auto usage = [n] {
            return fmt::format("(have: cable plug LINK, cable unplug LINK, status [LINK]; LINK 0 to {})", n - 1);
        };
        std::string verb = cmd, arg;
        if (const auto sp = cmd.rfind(' '); sp != std::string::npos) {
            arg = cmd.substr(sp + 1);
            verb = cmd.substr(0, sp);
        }
        const bool numeric = !arg.empty() && arg.size() <= 3 && arg.find_first_not_of("0123456789") == std::string::npos;
        if (!numeric) {
            verb = cmd;
            arg.clear();
        }
        if (verb == "status" && arg.empty()) {
            std::string all;
            for (std::size_t k = 0; k < n; ++k) all += fmt::format("link {}: {}", k, ask(k, "status"));
            return all;
        }
        if (verb != "status" && verb != "cable plug" && verb != "cable unplug")
            return fmt::format("error unknown command '{}' {}\n", cmd, usage());
        if (arg.empty()) return fmt::format("error '{}' needs the link: this server models {} {}\n", cmd, n, usage());
        const unsigned long k = std::stoul(arg);
        if (k >= n) return fmt::format("error no link {}: this server models {} {}\n", k, n, usage());
        return ask(k, verb);
    }

    // A control command answered by link @k's process (bounded).
    std::string ask(std::size_t k, const std::string& cmd) {
        link_proc& l = m_links[k];
        if (l.gone) return fmt::format("error link {} has stopped\n", k);
        const std::string req = char(k_chan_control) + cmd;
        if (::send(l.chan, req.data(), req.size(), MSG_NOSIGNAL) < 0)
            return fmt::format("error link {}: {}\n", k, std::strerror(errno));
        pollfd p{l.chan, POLLIN, 0};
        const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(k_answer_ms);
        std::string buf(k_max_control + 1, '\0');
        while (std::chrono::steady_clock::now() < until) {
            if (::poll(&p, 1, 50) <= 0) continue;
            const ssize_t r = ::recv(l.chan, buf.data(), buf.size(), MSG_DONTWAIT);
            if (r <= 0) break;  // it ended: the next turn says so
            if (buf[0] == k_chan_reply) return buf.substr(1, std::size_t(r) - 1);
        }
        return fmt::format("error link {} did not answer within {} ms\n", k, k_answer_ms);
    }

    int link_ended(std::size_t k) {
        link_proc& l = m_links[k];
        char c;
        if (::recv(l.chan, &c, 1, MSG_DONTWAIT) > 0) return 0;  // a late answer
        int status = 0;
        std::string how = "closed its channel";
        for (int i = 0; i < 50; ++i) {
            if (::waitpid(l.pid, &status, WNOHANG) == l.pid) {
                how = exit_text(status);
                l.gone = true;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (m_stop.load()) return 0;  // stopping anyway
        // Exit 0 is a link process told to stop (SIGINT to the whole process
        // group, say): the others follow, quietly.
        if (l.gone && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            if (m_cfg.verbose) fmt::print(stderr, "odl-linkd: sim link {}: stopped; stopping the others\n", k);
            return -1;
        }
        fmt::print(stderr, "odl-linkd: sim link {}: its process {}; stopping the others\n", k, how);
        return 1;
    }

    // SIGTERM to every link process (each sends its programs BYE), then
    // bounded waits; SIGKILL for one that does not end.
    void stop_links() {
        for (auto& l : m_links)
            if (!l.gone) ::kill(l.pid, SIGTERM);
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        for (std::size_t k = 0; k < m_links.size(); ++k) {
            auto& l = m_links[k];
            while (!l.gone) {
                int status = 0;
                if (::waitpid(l.pid, &status, WNOHANG) == l.pid) {
                    l.gone = true;
                    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0))
                        fmt::print(stderr, "odl-linkd: sim link {}: its process {}\n", k, exit_text(status));
                    break;
                }
                if (std::chrono::steady_clock::now() >= until) {
                    fmt::print(stderr, "odl-linkd: sim link {}: its process did not stop within 5 s; killed\n", k);
                    ::kill(l.pid, SIGKILL);
                    ::waitpid(l.pid, &status, 0);
                    l.gone = true;
                    break;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        }
    }

    sim_links_config m_cfg;
    const std::atomic<bool>& m_stop;
    unix_listener m_listen, m_ctl;
    std::vector<link_proc> m_links;
    std::deque<int> m_waiting;  ///< accepted, HELLO not yet seen
};

}  // namespace

int run_sim_links(sim_links_config cfg, const std::atomic<bool>& stop,
                  const std::function<void(sim_server*)>& in_child) {
    if (cfg.links.size() < 2 || cfg.links.size() > 256) {
        fmt::print(stderr, "odl-linkd: --links: from 2 to 256 here (got {})\n", cfg.links.size());
        return 1;
    }
    router r(std::move(cfg), stop);
    return r.run(in_child);
}

}  // namespace odl::model::linkd
