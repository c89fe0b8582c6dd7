// SPDX-License-Identifier: MIT
// The file service's commands: `odl pair` (make a key with the peer host),
// `odl files serve DIR` (serve a folder to paired peers) and `odl cp`
// (push and pull files and trees, verified and resumable). docs/files.md.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "files/client.h"
#include "files/folder_sync.h"
#include "files/safe_dir.h"
#include "files/server.h"
#include "files/session.h"
#include "first_message.h"
#include "perf_runner.h"
#include "cli_common.h"
#include "odl_cli_checks.h"

namespace odl::cli {
namespace {

using nlohmann::json;
namespace fl = odl::files;

std::atomic<bool> g_stop{false};

void on_signal(int) { g_stop.store(true); }

/// SIGINT and SIGTERM raise the stop flag (waits end within 0.2 s) instead
/// of killing the process mid-write; a second one kills it.
void catch_signals() {
    struct sigaction sa{};
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

struct link_opts {
    std::string backend = "kernel";
    uint32_t device = 0;
    std::string keys;
    double connect_timeout_s = 10;
};

void add_link_opts(CLI::App* cmd, link_opts& o) {
    cmd->add_option("--backend,-b", o.backend, "kernel (odl_tb5) | loopback | sim")->capture_default_str();
    cmd->add_option("--device,-d", o.device, "Device index leading to the peer")->capture_default_str();
    cmd->add_option("--keys", o.keys, "Folder of pair keys (default: $ODL_KEYS_DIR, /etc/odl/pairs for root, "
                                      "else ~/.config/odl/pairs)");
}

/// For the commands that wait for the peer's server (not `files serve`).
void add_connect_timeout(CLI::App* cmd, link_opts& o) {
    cmd->add_option("--connect-timeout", o.connect_timeout_s,
                    "Seconds to wait for the peer's server at each (re)connect")
        ->capture_default_str()
        ->check(finite_in(0.1, k_max_wait_s));
}

std::string keys_dir(const link_opts& o) { return o.keys.empty() ? fl::default_keys_dir() : o.keys; }

/// Opens the device; @timeout_ns 0: without waiting for the peer (the
/// session's first receive waits, and looks at the stop flag meanwhile).
std::unique_ptr<odl::device> open_dev(const link_opts& o, uint64_t timeout_ns, uint32_t streams = 1) {
    odl::open_params p;
    p.backend = o.backend.c_str();
    p.index = o.device;
    p.num_streams = streams;
    if (timeout_ns)
        p.connect_timeout_ns = timeout_ns;
    else
        p.flags |= ODL_OPEN_NONBLOCK;
    return std::make_unique<odl::device>(p);
}

/// open_dev() for a client that retries while the link comes and goes: a
/// backend or device number that cannot exist is said at once (fl::copy_error
/// ends the command) instead of retried for --retry-for. On the kernel backend
/// a missing device is the peer not plugged in yet, and is retried.
std::unique_ptr<odl::device> open_client_dev(const link_opts& o) {
    try {
        return open_dev(o, uint64_t(o.connect_timeout_s * 1e9));
    } catch (const odl::error& e) {
        const int st = e.status();
        if (st == ODL_ERR_INVAL || st == ODL_ERR_NO_BACKEND || st == ODL_ERR_NOT_SUPPORTED ||
            (st == ODL_ERR_NO_DEVICE && o.backend != "kernel"))
            throw fl::copy_error(fmt::format("{} device {}: {}", o.backend, o.device, e.what()));
        throw;
    }
}

/// A chunk size for @sub's option @opt (cp's --chunk, serve's --max-chunk).
uint32_t parse_chunk(const char* sub, const char* opt, const std::string& s) {
    const auto v = odl::cli::byte_size(s);
    if (!v) die(sub, fmt::format("bad {} '{}' (examples: 64K, 1M)", opt, s));
    if (*v > ODL_FILES_CHUNK_MAX || !odl_files_chunk_ok(uint32_t(*v)))
        die(sub, fmt::format("{} {}: want a power of two from 4K to 4M", opt, s));
    return uint32_t(*v);
}

std::string host_name() {
    char buf[ODL_FILES_NODE_MAX] = {};
    if (::gethostname(buf, sizeof(buf) - 1) != 0 || !buf[0]) return "host";
    return buf;
}

// --- odl pair ---------------------------------------------------------------

struct pair_cli {
    link_opts link;
    std::string name;
    bool yes = false;
    double timeout_s = 60;
};

void run_pair(const pair_cli& c) {
    const fl::pair_store store(keys_dir(c.link));
    fl::pairing p;
    try {
        auto dev = open_dev(c.link, uint64_t(c.timeout_s * 1e9));
        fl::channel ch(*dev, ODL_FILES_FROM_CLIENT, &g_stop);
        p = fl::pair_over(ch, c.name.empty() ? host_name() : c.name, uint64_t(c.timeout_s * 1e9));
        ch.flush(2'000'000'000ull);
    } catch (const odl::error& e) {
        die("pair", fmt::format("{} device {}: {} (run `odl pair` on the peer host too)", c.link.backend,
                                c.link.device, e.what()));
    } catch (const std::exception& e) {
        die("pair", e.what());
    }
    std::printf("peer %s, pairing code %s\n", p.record.peer_name.c_str(), p.code.c_str());
    if (!c.yes) {
        if (!::isatty(STDIN_FILENO)) die("pair", "not saved: compare the code on both hosts, then rerun with --yes");
        std::printf("Does the peer host show the same code? [y/N] ");
        std::fflush(stdout);
        std::string answer;
        std::getline(std::cin, answer);
        if (answer != "y" && answer != "Y" && answer != "yes") die("pair", "not saved (codes not confirmed)");
    }
    try {
        const std::string path = store.save(p.record);
        std::printf("paired with %s: key %s saved in %s\n", p.record.peer_name.c_str(), fl::hex(p.record.id).c_str(),
                    path.c_str());
    } catch (const std::exception& e) {
        die("pair", e.what());
    }
}

// --- odl files serve ----------------------------------------------------------

struct serve_cli {
    link_opts link;
    std::string dir;
    bool once = false;
    bool verbose = false;
    bool answer_tests = false;
    std::string max_chunk = "4M";
};

/// --answer-tests: one session of either service, by its first message.
/// Returns whether a session took place; counts answered tests in @tests.
bool serve_either(odl::device& dev, fl::file_server& server, bool verbose, unsigned long long& tests) {
    std::string why;
    std::optional<first_message> first;
    try {
        first = await_first(dev, std::max<size_t>(ODL_FILES_MAX_MSG, perf::kCtrlCap), g_stop, why);
    } catch (const std::runtime_error& e) {
        std::fprintf(stderr, "odl files: refused a session: %s\n", e.what());
        return true;
    }
    // A link that ended before any message is no session (as in file_server::serve).
    if (!first) return false;
    if (first->tag != perf::kTagPhase) {
        server.serve(dev, &g_stop, first->bytes);
        return true;
    }
    try {
        const auto phase = perf::parse_ctrl(first->bytes.data(), first->bytes.size());
        perf::run_server(dev.get(), perf::options{}.stall_timeout_ms, &phase);
        tests++;
        if (verbose) std::fprintf(stderr, "odl files: answered a test\n");
    } catch (const perf::perf_error& e) {
        std::fprintf(stderr, "odl files: a test session ended: %s\n", e.what());
    }
    return true;
}

void run_serve(const serve_cli& c) {
    const uint32_t max_chunk = parse_chunk("files serve", "--max-chunk", c.max_chunk);  // before the keys
    fl::unique_fd root(::open(c.dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root) die("files serve", fmt::format("{}: {}", c.dir, std::strerror(errno)));
    const fl::pair_store store(keys_dir(c.link));
    try {
        if (store.all().empty())
            die("files serve", fmt::format("no paired peer in {} (run `odl pair` on both hosts first)", store.dir()));
    } catch (const fl::pair_store_error& e) {
        die("files serve", e.what());
    }
    const bool verbose = c.verbose;
    fl::file_server server(root.get(), store, [verbose](const std::string& line) {
        // Sessions and their ends are routine (-v); refusals always show.
        const bool routine = line.rfind("session with", 0) == 0 || line.find("said goodbye") != std::string::npos;
        if (verbose || !routine) std::fprintf(stderr, "odl files: %s\n", line.c_str());
    }, max_chunk);
    catch_signals();
    bool served = false;
    unsigned long long tests = 0;  // --answer-tests: test sessions answered
    std::string waiting;  // why the device does not open, said once
    while (!g_stop.load()) {
        // Held open between sessions: on the kernel backend every open and
        // close is a session notice to the peer host.
        std::unique_ptr<odl::device> dev;
        try {
            dev = open_dev(c.link, 0, c.answer_tests ? perf::kPerfStreams : 1);
        } catch (const odl::error& e) {
            // A device that has served and went (cable unplugged, the peer's
            // module unloaded) comes back under its number, through states
            // where it is listed but not yet usable: wait for it, saying each
            // new reason once. One that never opened is a mistake to say at once.
            if (!served) die("files serve", fmt::format("{} device {}: {}", c.link.backend, c.link.device, e.what()));
            if (waiting.empty())
                std::fprintf(stderr, "odl files: device %u went away; serving again when it is back\n", c.link.device);
            if (e.status() != ODL_ERR_NO_DEVICE && waiting != e.what())
                std::fprintf(stderr, "odl files: device %u: %s; trying again\n", c.link.device, e.what());
            waiting = e.what();
            for (int i = 0; i < 10 && !g_stop.load(); i++) std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        if (!waiting.empty()) std::fprintf(stderr, "odl files: device %u is back\n", c.link.device);
        waiting.clear();
        served = true;
        const auto began = std::chrono::steady_clock::now();
        if (c.answer_tests) {
            if (serve_either(*dev, server, verbose, tests) && c.once) break;
        } else {
            server.serve(*dev, &g_stop);
            if (c.once && server.counters().sessions) break;
        }
        // A device that fails at once (its link still going down) is not
        // reopened in a tight loop.
        if (std::chrono::steady_clock::now() - began < std::chrono::milliseconds(100))
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    const auto& k = server.counters();
    if (verbose)
        std::fprintf(stderr, "odl files: %llu session(s), %llu file(s) in, %llu out, %llu refused, %llu hash mismatch(es)\n",
                     (unsigned long long)k.sessions, (unsigned long long)k.files_in, (unsigned long long)k.files_out,
                     (unsigned long long)k.refused, (unsigned long long)k.hash_mismatches);
    if (verbose && c.answer_tests) std::fprintf(stderr, "odl files: %llu test(s) answered\n", tests);
}

// --- odl cp -------------------------------------------------------------------

struct cp_cli {
    link_opts link;
    std::vector<std::string> args;
    bool recursive = false;
    std::string peer;
    std::string chunk = "1M";
    double retry_for_s = 30;
    bool json_out = false;
    bool quiet = false;
};

constexpr const char* kPeer = "peer:";

bool is_remote(const std::string& s) { return s.rfind(kPeer, 0) == 0; }

std::string human(double bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    return fmt::format("{:.1f} {}", bytes, units[u]);
}

void run_cp(const cp_cli& c) {
    if (c.args.size() < 2) die("cp", "want SOURCE... DEST, one side prefixed 'peer:'");
    const std::string dest = c.args.back();
    std::vector<std::string> sources(c.args.begin(), c.args.end() - 1);
    size_t remote_sources = 0;
    for (const auto& s : sources) remote_sources += is_remote(s);
    const bool push = is_remote(dest);
    if (push && remote_sources) die("cp", "both sides are on the peer: one side must be local");
    if (!push && remote_sources != sources.size())
        die("cp", "either DEST or every SOURCE starts with 'peer:' (the folder the peer serves)");
    for (auto& s : sources)
        if (!push) s = s.substr(std::strlen(kPeer));

    const uint32_t chunk = parse_chunk("cp", "--chunk", c.chunk);
    fl::pair_record pair;
    try {
        pair = fl::pair_store(keys_dir(c.link)).choose(c.peer);
    } catch (const fl::pair_store_error& e) {
        die("cp", e.what());
    }
    fl::copy_options opt;
    opt.recursive = c.recursive;
    opt.chunk = chunk;
    opt.retry_for_ns = uint64_t(c.retry_for_s * 1e9);
    const bool show = !c.quiet && ::isatty(STDERR_FILENO);
    using clock = std::chrono::steady_clock;
    const auto start = clock::now();
    auto last = start;
    auto progress = [&](const std::string& name, uint64_t done, uint64_t size) {
        const auto now = clock::now();
        if (!show || (now - last < std::chrono::milliseconds(250) && done != size)) return;
        last = now;
        std::fprintf(stderr, "\r%s  %s / %s\033[K", name.c_str(), human(double(done)).c_str(), human(double(size)).c_str());
    };
    auto note = [&](const std::string& line) {
        if (show) std::fprintf(stderr, "\r\033[K");
        std::fprintf(stderr, "odl: cp: %s\n", line.c_str());
    };
    const link_opts link = c.link;
    auto open = [link]() { return open_client_dev(link); };
    catch_signals();
    int rc = 0;
    std::string failure;
    fl::copy_report r;
    {
        // Closed (BYE) before any exit below: std::exit skips destructors.
        fl::file_client client(open, pair, opt, &g_stop, note, progress);
        try {
            if (push)
                client.push(sources, dest.substr(std::strlen(kPeer)));
            else
                client.pull(sources, dest);
            client.close();
        } catch (const fl::stopped&) {
            failure = "stopped (a rerun resumes where this one ended)";
            rc = 130;
        } catch (const std::exception& e) {
            failure = e.what();
            rc = 1;
        }
        r = client.report();
    }
    if (show) std::fprintf(stderr, "\r\033[K");
    const double secs = std::chrono::duration<double>(clock::now() - start).count();
    if (c.json_out) {
        const json out{{"direction", push ? "push" : "pull"},
                       {"ok", rc == 0},
                       {"error", failure},
                       {"files", r.files},
                       {"dirs", r.dirs},
                       {"bytes", r.bytes},
                       {"resumed_bytes", r.resumed_bytes},
                       {"total_bytes", r.total_bytes},
                       {"seconds", secs},
                       {"gbps", secs > 0 ? double(r.bytes) * 8 / secs / 1e9 : 0.0},
                       {"reconnects", r.reconnects},
                       {"hash_mismatches", r.hash_mismatches},
                       {"skipped", r.skipped}};
        std::printf("%s\n", out.dump(2).c_str());
    } else if (rc == 0 && !c.quiet) {
        std::fprintf(stderr, "odl: cp: %llu file(s), %s in %.2f s (%.2f Gb/s), SHA-256 checked%s\n",
                     (unsigned long long)r.files, human(double(r.bytes)).c_str(), secs,
                     secs > 0 ? double(r.bytes) * 8 / secs / 1e9 : 0.0,
                     r.resumed_bytes ? fmt::format(", {} resumed", human(double(r.resumed_bytes))).c_str() : "");
    }
    if (rc) die("cp", failure, rc);
}

// --- odl sync -------------------------------------------------------------------

struct sync_cli {
    link_opts link;
    std::string local;
    std::string remote;
    std::string peer;
    bool once = false;
    double interval_s = 2;
    double retry_for_s = 30;
    bool quiet = false;
};

/// Watches @dir and every folder under it (but the service's own) for
/// changes; rebuilt after each pass, so new folders are watched too.
class tree_watch {
public:
    explicit tree_watch(const std::string& dir) : m_dir(dir), m_fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) {
        if (m_fd < 0) die("sync", fmt::format("inotify: {}", std::strerror(errno)));
    }
    ~tree_watch() { ::close(m_fd); }
    void rebuild() {
        ::close(m_fd);
        m_fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        const uint32_t mask = IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB;
        add(m_dir, mask);
        std::error_code ec;
        for (std::filesystem::recursive_directory_iterator it(m_dir, ec), end; !ec && it != end; it.increment(ec)) {
            if (!it->is_directory(ec) || it->is_symlink(ec)) continue;
            if (fl::is_private_name(it->path().filename().string())) {
                it.disable_recursion_pending();
                continue;
            }
            add(it->path().string(), mask);
        }
    }
    /// True when something changed within @timeout_ms (events drained).
    bool wait(int timeout_ms) {
        pollfd p{m_fd, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) return false;
        bool ours_only = true;
        alignas(inotify_event) char buf[8192];
        ssize_t n;
        while ((n = ::read(m_fd, buf, sizeof(buf))) > 0) {
            for (ssize_t off = 0; off < n;) {
                const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
                // The service's own files (partial files, its state) are no change.
                if (!(e->len && fl::is_private_name(e->name))) ours_only = false;
                off += ssize_t(sizeof(inotify_event) + e->len);
            }
        }
        return !ours_only;
    }

private:
    void add(const std::string& d, uint32_t mask) { ::inotify_add_watch(m_fd, d.c_str(), mask); }
    std::string m_dir;
    int m_fd;
};

void run_sync(const sync_cli& c) {
    std::error_code ec;
    if (!std::filesystem::is_directory(c.local, ec)) die("sync", fmt::format("{}: not a directory", c.local));
    std::string remote = c.remote;
    if (!remote.empty()) {
        if (!is_remote(remote)) die("sync", fmt::format("'{}': the peer's folder is peer:PATH", remote));
        remote = remote.substr(std::strlen(kPeer));
        while (!remote.empty() && remote.back() == '/') remote.pop_back();
        if (const char* why = odl_files_path_check(remote.data(), remote.size(), 1))
            die("sync", fmt::format("peer:{}: {}", remote, why));
    }
    fl::pair_record pair;
    try {
        pair = fl::pair_store(keys_dir(c.link)).choose(c.peer);
    } catch (const fl::pair_store_error& e) {
        die("sync", e.what());
    }
    fl::copy_options opt;
    opt.retry_for_ns = uint64_t(c.retry_for_s * 1e9);
    const link_opts link = c.link;
    auto open = [link]() { return open_client_dev(link); };
    const bool quiet = c.quiet;
    auto note = [quiet](const std::string& line) {
        if (!quiet) std::fprintf(stderr, "odl: sync: %s\n", line.c_str());
    };
    catch_signals();
    int rc = 0;
    std::string failure;
    {
        fl::file_client client(open, pair, opt, &g_stop, note);
        try {
            fl::folder_sync sync(client, c.local, remote, pair.peer_name, note);
            tree_watch watch(c.local);
            for (;;) {
                watch.rebuild();
                sync.pass();
                if (c.once || g_stop.load()) break;
                // A local change starts the next pass at once (after a short
                // settle); the peer's changes are seen every --interval.
                const auto deadline = std::chrono::steady_clock::now() +
                                      std::chrono::milliseconds(int64_t(c.interval_s * 1000));
                while (!g_stop.load() && std::chrono::steady_clock::now() < deadline) {
                    if (watch.wait(100)) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(200));
                        watch.wait(0);
                        break;
                    }
                }
                if (g_stop.load()) break;
            }
            client.close();
        } catch (const fl::stopped&) {
        } catch (const std::exception& e) {
            failure = e.what();
            rc = 1;
        }
    }
    if (rc) die("sync", failure, rc);
}

struct ls_cli {
    link_opts link;
    std::string path;  ///< peer:PATH, or "" for all the peer serves
    std::string peer;
    double retry_for_s = 10;
    bool json_out = false;
};

/// `odl files ls [peer:PATH]`: what the peer serves under PATH, recursively.
void run_ls(const ls_cli& c) {
    std::string remote = c.path;
    if (is_remote(remote))
        remote = remote.substr(std::strlen(kPeer));
    else if (!remote.empty())
        die("files ls", "want peer:PATH (a folder of the peer's), not '" + remote + "'");
    fl::pair_record pair;
    try {
        pair = fl::pair_store(keys_dir(c.link)).choose(c.peer);
    } catch (const fl::pair_store_error& e) {
        die("files ls", e.what());
    }
    const link_opts link = c.link;
    auto open = [link]() { return open_client_dev(link); };
    auto note = [](const std::string& line) { std::fprintf(stderr, "odl: files ls: %s\n", line.c_str()); };
    catch_signals();
    std::vector<fl::remote_entry> entries;
    std::string failure;
    int rc = 1;
    {
        fl::copy_options opt;
        opt.retry_for_ns = uint64_t(c.retry_for_s * 1e9);
        fl::file_client client(open, pair, opt, &g_stop, note);
        try {
            entries = client.list(remote);
            client.close();
        } catch (const fl::stopped&) {
            failure = "stopped";
            rc = 130;  // as odl cp
        } catch (const std::exception& e) {
            failure = e.what();
        }
    }
    if (!failure.empty()) die("files ls", failure, rc);
    if (c.json_out) {
        json out{{"peer", pair.peer_name}, {"path", remote}, {"entries", json::array()}};
        for (const auto& e : entries)
            out["entries"].push_back(
                {{"path", e.path}, {"dir", e.dir}, {"size", e.size}, {"mtime_ns", e.mtime_ns}, {"mode", e.mode}});
        std::cout << out.dump() << "\n";
        return;
    }
    for (const auto& e : entries) {
        const std::time_t t = std::time_t(e.mtime_ns / 1'000'000'000ull);
        std::tm tm{};
        gmtime_r(&t, &tm);
        char when[32];
        when[std::strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm)] = 0;
        std::cout << fmt::format("{:04o} {:>14} {}  {}{}\n", e.mode & 07777, e.dir ? "-" : std::to_string(e.size),
                                 when, e.path, e.dir ? "/" : "");
    }
}

}  // namespace

void add_files_commands(CLI::App& app) {
    auto pc = std::make_shared<pair_cli>();
    auto* pair = app.add_subcommand("pair", "Make a key with the peer host (run on both; compare the code)");
    add_link_opts(pair, pc->link);
    // The PAIR message carries 63 bytes of it; a longer one was cut short on
    // the peer, and --peer with the whole name then found nothing.
    pair->add_option("--name", pc->name, "This host's name as the peer will know it (default: host name)")
        ->check(CLI::Validator(
            [](std::string& in) -> std::string {
                if (in.empty() || in.size() > ODL_FILES_NODE_MAX - 1)
                    return fmt::format("a name of 1 to {} bytes, not {}", ODL_FILES_NODE_MAX - 1, in.size());
                return {};
            },
            "NAME"));
    pair->add_flag("--yes,-y", pc->yes, "Save without asking (scripts that trust the cable)");
    pair->add_option("--timeout", pc->timeout_s, "Seconds to wait for the peer")
        ->capture_default_str()
        ->check(finite_in(0.1, k_max_wait_s));
    pair->callback([pc] { run_pair(*pc); });

    auto* files = app.add_subcommand("files", "The file service");
    files->require_subcommand(1);
    auto sc = std::make_shared<serve_cli>();
    auto* serve = files->add_subcommand("serve", "Serve folder DIR to paired peers (odl cp's other end)");
    serve->add_option("dir", sc->dir, "Folder to serve")->required();
    add_link_opts(serve, sc->link);
    serve->add_flag("--once", sc->once, "End after one session");
    serve->add_flag("--answer-tests", sc->answer_tests,
                    "Also answer the peer's `odl perf --client` runs on the same device (each session's first "
                    "message says which service it wants)");
    serve->add_flag("--verbose,-v", sc->verbose, "Log every session");
    serve->add_option("--max-chunk", sc->max_chunk, "Largest DATA message granted")->capture_default_str();
    serve->callback([sc] { run_serve(*sc); });

    auto lc = std::make_shared<ls_cli>();
    auto* ls = files->add_subcommand("ls", "List what the peer serves under peer:PATH (all of it by default), "
                                           "recursively");
    ls->add_option("path", lc->path, "peer:PATH");
    add_link_opts(ls, lc->link);
    add_connect_timeout(ls, lc->link);
    ls->add_option("--peer", lc->peer, "Which pairing to use (its peer name) when there are several");
    ls->add_option("--retry-for", lc->retry_for_s, "Seconds to keep reconnecting after a lost link")
        ->capture_default_str()
        ->check(finite_in(0, k_max_wait_s));
    ls->add_flag("--json", lc->json_out, "The entries as JSON on stdout");
    ls->callback([lc] { run_ls(*lc); });

    auto cc = std::make_shared<cp_cli>();
    auto* cp = app.add_subcommand("cp", "Copy files to or from the peer's served folder: "
                                        "odl cp [-r] SRC... peer:DEST | odl cp [-r] peer:SRC... DEST");
    cp->add_option("paths", cc->args, "Sources then destination; 'peer:' marks the peer's side")->required();
    add_link_opts(cp, cc->link);
    add_connect_timeout(cp, cc->link);
    cp->add_flag("--recursive,-r", cc->recursive, "Copy directory trees");
    cp->add_option("--peer", cc->peer, "Which pairing to use (its peer name) when there are several");
    cp->add_option("--chunk", cc->chunk, "Bytes per DATA message, 4K..4M")->capture_default_str();
    cp->add_option("--retry-for", cc->retry_for_s, "Seconds to keep reconnecting after a lost link (resumes)")
        ->capture_default_str()
        ->check(finite_in(0, k_max_wait_s));
    cp->add_flag("--json", cc->json_out, "Report as JSON on stdout");
    cp->add_flag("--quiet,-q", cc->quiet, "No progress or summary");
    cp->callback([cc] { run_cp(*cc); });

    auto yc = std::make_shared<sync_cli>();
    auto* sync = app.add_subcommand("sync", "Keep LOCAL and a folder of the peer's the same, both ways "
                                            "(conflicts keep both copies; removals go to .odl-trash/)");
    sync->add_option("local", yc->local, "The local folder")->required();
    sync->add_option("remote", yc->remote, "peer:PATH (default: all the peer serves)");
    add_link_opts(sync, yc->link);
    add_connect_timeout(sync, yc->link);
    sync->add_option("--peer", yc->peer, "Which pairing to use when there are several");
    sync->add_flag("--once", yc->once, "One pass, then exit");
    sync->add_option("--interval", yc->interval_s, "Seconds between looks at the peer's side")
        ->capture_default_str()
        ->check(finite_in(0.1, k_max_wait_s));
    sync->add_option("--retry-for", yc->retry_for_s, "Seconds to keep reconnecting after a lost link")
        ->capture_default_str()
        ->check(finite_in(0, k_max_wait_s));
    sync->add_flag("--quiet,-q", yc->quiet, "Say nothing of what is copied");
    sync->callback([yc] { run_sync(*yc); });
}

}  // namespace odl::cli
