// SPDX-License-Identifier: MIT
// odl-linkd --sim: libodl `sim` clients on a modelled cable, wall-clock paced.
#include "odl/model/linkd/sim_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <optional>
#include <cstddef>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "odl/model/cable/bit_errors.h"
#include "odl/model/core/scheduler.h"
#include "odl/model/reduced/pipeline.h"
#include "odl/model/scenario/system.h"
#include "odl/wire/sim_codec.h"
#include "odl/wire/spin.h"
#include "odl/model/linkd/unix_listen.h"

namespace odl::model::linkd {

namespace {

constexpr unsigned k_port = pipeline_lane_port;  // the lane adapter the cable is on, both hosts
static_assert(ODL_SIM_WINDOW <= host_driver::data_ring_size, "a program's window fits the model's data ring");
/// Waits shorter than this are spun: even with the timer slack at 1 ns
/// (run()), a wake-up from ppoll() takes some microseconds.
constexpr std::uint64_t k_spin_ns = 20'000;
/// How long the server keeps polling the rings after the last frame.
constexpr std::uint64_t k_busy_ns = 2'000'000;
/// While busy and spinning, the sockets are polled this often.
constexpr std::uint64_t k_poll_every_ns = 100'000;
/// The model runs ahead of the wall clock only after the programs have put
/// no frame in for this long (a message's frames come closer together).
constexpr std::uint64_t k_quiet_ns = 2'000;
/// Datagrams taken from one client per turn, so one cannot starve the model.
constexpr int k_batch = 64;

/// SystemC time units per ns (1000 with its default 1 ps resolution; 0 if
/// the resolution is coarser than 1 ns), read once: converting through
/// doubles and a fresh sc_time twice per frame showed in profiles.
std::uint64_t units_per_ns() {
    static const std::uint64_t u = sc_core::sc_time(1, sc_core::SC_NS).value();
    return u;
}

/// Simulated time in ns, whatever SystemC's time resolution is.
std::uint64_t ns_of(const sc_core::sc_time& t) {
    const std::uint64_t u = units_per_ns();
    return u ? t.value() / u : static_cast<std::uint64_t>(t / sc_core::sc_time(1, sc_core::SC_NS));
}

sc_core::sc_time at_ns(std::uint64_t ns) {
    const std::uint64_t u = units_per_ns();
    return u ? sc_core::sc_time::from_value(ns * u) : sc_core::sc_time(double(ns), sc_core::SC_NS);
}

std::uint64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return std::uint64_t(ts.tv_sec) * 1'000'000'000u + std::uint64_t(ts.tv_nsec);
}

std::string event_name(const scenario_event& e) {
    switch (e.kind) {
    case event_kind::plug: return "cable plug";
    case event_kind::unplug: return "cable unplug";
    case event_kind::retrain: return "retrain";
    case event_kind::degrade: return fmt::format("degrade to {} x{}", to_string(e.gen), e.lanes);
    case event_kind::ber: return fmt::format("bit error rate {:g}", e.ber);
    case event_kind::host_reset: return "host reset";
    }
    return "event";
}

}  // namespace

struct sim_server::client {
    int fd = -1;
    int end = -1;  ///< 0 = A, 1 = B once HELLO was answered
    std::uint64_t tx_seq = 0, rx_seq = 0;
    odl_sim_shm* shm = nullptr;  ///< the client's rings, mapped at HELLO
    int memfd = -1;              ///< their memory, for the peer's read-only view
    std::uint64_t region = 0;    ///< its name in PEER and descriptors
    std::uint64_t taken = 0;     ///< frames taken from its ring into the model
    std::uint64_t released = 0;  ///< slots given back (our to_server.tail)
    std::uint64_t acked = 0;     ///< frames acknowledged through shm->acked
    std::uint64_t put = 0;       ///< descriptors put in its ring (our head)
    std::uint64_t consumed = 0;  ///< descriptors it has read (its tail)
    /// Its frames that left the model, in order, until their slot is free:
    /// read by @to (at its descriptor @pos; k_not_put while waiting for
    /// room), or by nobody (@to null: lost, or no peer).
    struct exit_rec {
        std::uint64_t seq;
        client* to;
        std::uint64_t pos;
    };
    std::deque<exit_rec> exits;
    struct due_frame {
        std::uint64_t due_ns;
        std::uint64_t region;
        std::uint64_t seq;
        std::uint32_t len;
    };
    std::deque<due_frame> rxq;  ///< delivered frames waiting for room in its ring
    /// The regions it was given a view of (PEER): the only frames it can read.
    std::vector<std::uint64_t> views;
    bool sees(std::uint64_t r) const { return std::find(views.begin(), views.end(), r) != views.end(); }
    struct queued {
        std::vector<unsigned char> bytes;
        int fd = -1;  ///< ours, closed once sent
    };
    std::deque<queued> outq;  ///< control datagrams waiting for room
    bool dead = false;
    bool reset_seen = false;  ///< ECONNRESET reported once (serve())
    std::string why;
    std::uint64_t link_sent = ~std::uint64_t{0};  ///< last LINK state told
    ~client() {
        if (shm) ::munmap(shm, ODL_SIM_SHM_BYTES);
        if (memfd >= 0) ::close(memfd);
        for (auto& q : outq)
            if (q.fd >= 0) ::close(q.fd);
    }
};

namespace {
constexpr std::uint64_t k_not_put = ~std::uint64_t{0};

// The two hosts of @cfg, A and B. The programs' bytes never enter the model
// (the peer reads them from the sender's ring): its NHIs need only each
// frame's header, which saves two 4 KiB copies per frame and changes no
// timing (DMA time is by length, bit errors by wire bits).
std::vector<host_spec> hosts_of(const sim_server_config& cfg) {
    std::vector<host_spec> hosts(2);
    hosts[0].name = "a";
    hosts[1].name = "b";
    hosts[0].plat = cfg.cal.get(cfg.profile);
    hosts[1].plat = cfg.cal.get(cfg.profile_b.empty() ? cfg.profile : cfg.profile_b);
    for (auto& h : hosts) h.copy_limit = ODL_FRAME_HDR_BYTES;
    return hosts;
}
}  // namespace

sim_server::sim_server(sim_server_config cfg)
    : m_cfg(std::move(cfg)), m_tag(m_cfg.links > 1 ? fmt::format("sim link {}", m_cfg.link_index) : "sim") {
    check(m_cfg);
    m_wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (m_wake_fd < 0) throw std::runtime_error(fmt::format("eventfd: {}", std::strerror(errno)));
    const std::vector<host_spec> hosts = hosts_of(m_cfg);
    for (int e = 0; e < 2; ++e)
        m_answer_ns[e] = static_cast<std::uint32_t>(ns_of(hosts[std::size_t(e)].plat.host.completion));
    for (const auto& e : m_cfg.events)
        if (e.kind == event_kind::host_reset || e.cable != 0)
            throw std::runtime_error("the sim backend applies cable events of one cable only (no host-reset: the "
                                     "hosts are the programs)");
    std::optional<pipeline_plan> pipe;
    std::string report;
    if (m_cfg.timing == sim_server_config::timing::pipeline) {
        pipe = fit_checked_pipeline(m_cfg, &report);
    } else if (m_cfg.timing == sim_server_config::timing::automatic) {
        std::string why;
        pipe = auto_pipeline(m_cfg, &why, &report);
        m_cfg.timing = pipe ? sim_server_config::timing::pipeline : sim_server_config::timing::event;
        // Said once at start: what the timing is and why (the banner names it).
        if (!pipe) say(fmt::format("{}: the full model (--sim-timing event): {}", m_tag, why));
    }
    if (pipe && m_cfg.verbose) {
        std::size_t at = 0;  // a line per stage
        for (std::size_t nl; (nl = report.find('\n', at)) != std::string::npos; at = nl + 1)
            say(fmt::format("{}: {}", m_tag, report.substr(at, nl - at)));
        say(fmt::format("{}: {}", m_tag, report.substr(at)));
    }
    cable_spec cs;
    cs.cfg = m_cfg.link;
    m_sys = std::make_unique<system_model>(hosts, std::vector<cable_spec>{cs}, m_cfg.cal.link, m_cfg.seed, false);
    if (pipe) {
        m_stage = std::make_unique<pipeline_state>(pipe->start);
        m_stage_after = std::move(pipe->after);
        m_ber_rng.seed(m_cfg.seed ^ 0x6265725f70697065ull);  // its own stream: the full model's cable has one
    }
    for (int h = 0; h < 2; ++h) {
        m_sys->hosts[h].drv->on_frame(
            [this, h](unsigned, std::uint32_t tag, const sc_core::sc_time& due) { delivered(h, tag, due); });
        m_sys->hosts[h].drv->on_link([this, h](unsigned, bool up) { link_changed(h, up); });
    }
}

sim_server::~sim_server() {
    for (auto& c : m_clients)
        if (c->fd >= 0) ::close(c->fd);
    if (m_wake_fd >= 0) ::close(m_wake_fd);
}

void sim_server::say(const std::string& line) const {
    if (m_cfg.say)
        m_cfg.say(line);
    else
        fmt::print(stderr, "odl-linkd: {}\n", line);
}

void sim_server::stop() {
    m_stop.store(true);
    const int saved = errno;  // stop() may run in a signal handler
    const std::uint64_t one = 1;
    if (m_wake_fd >= 0 && ::write(m_wake_fd, &one, sizeof one) < 0) {
        // Full or closed: run() sees m_stop at its next turn anyway.
    }
    errno = saved;
}

void check(const sim_server_config& cfg) {
    if (auto why = validate(cfg.link)) throw std::runtime_error("bad cable: " + *why);
    if (cfg.links == 0 || cfg.link_index >= cfg.links || cfg.links > 256)
        throw std::runtime_error(fmt::format("link {} of {}: no such link", cfg.link_index, cfg.links));
    (void)cfg.cal.get(cfg.profile);  // throws naming the profiles there are
    if (!cfg.profile_b.empty()) (void)cfg.cal.get(cfg.profile_b);
}

std::string describe(const sim_server_config& cfg, const link_config& link) {
    const std::string prof =
        cfg.profile_b.empty() || cfg.profile_b == cfg.profile ? cfg.profile : cfg.profile + "/" + cfg.profile_b;
    return fmt::format("{} {}x{}{} {:g} m{}", prof, to_string(link.gen), link.lanes, link.asymmetric ? " asym" : "",
                       link.length_m, cfg.timing == sim_server_config::timing::pipeline ? " pipeline" : "");
}

std::string describe(const sim_server_config& cfg) { return describe(cfg, cfg.link); }

namespace {
/// The reduced model fitted to @cfg's hosts on @link and checked against
/// the full model; throws pipeline_misfit naming the worst workload.
pipeline_params fit_checked_stage(const sim_server_config& cfg, const link_config& link, std::string* report) {
    const std::vector<host_spec> hosts = hosts_of(cfg);
    cable_spec cs;
    cs.cfg = link;
    const pipeline_params p = fit_pipeline(hosts, cs, cfg.cal.link, cfg.seed);
    // Another seed for the check: the full model's host noise differs.
    const pipeline_check chk = check_pipeline(hosts, cs, cfg.cal.link, cfg.seed + 1000, p);
    const pipeline_check_row& w = chk.worst();
    if (std::abs(w.error()) > cfg.pipeline_tolerance)
        throw pipeline_misfit(fmt::format(
            "pipeline timing does not fit {}: {}: {:.1f} against the full model's {:.1f} ({:+.1f} %, tolerance "
            "{:.0f} %)",
            describe(cfg, link), w.what, w.reduced, w.full, 100 * w.error(), 100 * cfg.pipeline_tolerance));
    if (report)
        *report = fmt::format("{}; checked on {} workloads against the full model, worst {} ({:+.1f} %)", p.summary(),
                              chk.rows.size(), w.what, 100 * w.error());
    return p;
}
}  // namespace

pipeline_plan fit_checked_pipeline(const sim_server_config& cfg, std::string* report) {
    check(cfg);
    pipeline_plan plan;
    std::string line;
    plan.start = fit_checked_stage(cfg, cfg.link, report ? &line : nullptr);
    if (report) *report = "pipeline timing: " + line;
    // The cable each degrade retrains into (events are in time order), one
    // fit per distinct cable.
    plan.after.resize(cfg.events.size());
    link_config link = cfg.link;
    std::vector<std::pair<link_config, std::size_t>> fitted;
    for (std::size_t i = 0; i < cfg.events.size(); ++i) {
        const scenario_event& e = cfg.events[i];
        if (e.kind != event_kind::degrade) continue;
        link = degraded(link, e.gen, e.lanes);
        if (auto why = validate(link))
            throw std::runtime_error(fmt::format("the scenario's {} leaves an impossible cable: {}", event_name(e), *why));
        const auto same = std::find_if(fitted.begin(), fitted.end(), [&](const auto& f) {
            return f.first.gen == link.gen && f.first.lanes == link.lanes && f.first.asymmetric == link.asymmetric;
        });
        if (same != fitted.end()) {
            plan.after[i] = plan.after[same->second];
            continue;
        }
        plan.after[i] = fit_checked_stage(cfg, link, report ? &line : nullptr);
        fitted.emplace_back(link, i);
        if (report) *report += fmt::format("\npipeline timing after the {}: {}", event_name(e), line);
    }
    return plan;
}

std::optional<pipeline_plan> auto_pipeline(const sim_server_config& cfg, std::string* why, std::string* report) {
    sim_server_config c = cfg;
    c.timing = sim_server_config::timing::event;
    check(c);  // bad input is refused, not a reason to pick a timing
    c.timing = sim_server_config::timing::pipeline;
    try {
        return fit_checked_pipeline(c, report);
    } catch (const pipeline_misfit& e) {
        if (why) *why = e.reason;
        return std::nullopt;
    } catch (const std::runtime_error& e) {
        // check() passed, so this is the fit's own trouble with the full
        // model (no frame delivered, frames lost): serve with the full model.
        if (why) *why = fmt::format("pipeline timing could not be fitted: {}", e.what());
        return std::nullopt;
    }
}

std::uint32_t rate_mbps(const sim_server_config& cfg, const link_config& link, int end) {
    return static_cast<std::uint32_t>(payload_gbps(link, cfg.cal.link.physics, end, ODL_FRAME_MAX_BYTES) * 1000.0);
}

std::uint32_t rate_mbps(const sim_server_config& cfg, int end) { return rate_mbps(cfg, cfg.link, end); }

// The cable as it is now: a scenario's degrade changes it, and a program
// that comes after it is told the cable it finds.
std::string sim_server::describe() const { return linkd::describe(m_cfg, m_sys->cables[0]->config()); }

std::uint32_t sim_server::rate_mbps(int end) const { return linkd::rate_mbps(m_cfg, m_sys->cables[0]->config(), end); }

bool sim_server::listen(std::string& err) {
    if (!m_listen.open(m_cfg.socket_path, err)) return false;
    return m_cfg.control_path.empty() || m_ctl.open(m_cfg.control_path, err);
}

std::uint64_t sim_server::wall_ns() const { return mono_ns(); }

std::uint64_t sim_server::model_ns() const { return model_of(mono_ns()); }

std::uint64_t sim_server::model_of(std::uint64_t wall) const {
    const std::int64_t d = std::int64_t(wall) - m_t0_ns;
    return d > 0 ? std::uint64_t(d) : 0;
}

// The drivers program rings and paths before any frame can move; that
// takes simulated microseconds, run here at full speed. Model time then
// follows the wall clock from where bring-up ended.
void sim_server::start_model() {
    bool ready = false;
    m_sys->start([&ready] { ready = true; });
    sc_core::sc_time t = sc_core::SC_ZERO_TIME;
    for (int i = 0; i < 1000 && !ready; ++i) {
        t += sc_core::sc_time(100, sc_core::SC_US);
        m_sys->run_until(t);
    }
    if (!ready) throw std::runtime_error("the model's host drivers did not come up within 100 ms (simulated)");
    m_t0_ns = std::int64_t(mono_ns()) - std::int64_t(ns_of(t));
    // The scenario's timeline starts now, as the programs can start.
    cable& cab = *m_sys->cables[0];
    for (std::size_t i = 0; i < m_cfg.events.size(); ++i) {
        const scenario_event& e = m_cfg.events[i];
        m_sys->sched.at(t + e.at, [this, &cab, e, i] {
            switch (e.kind) {
            case event_kind::plug: cab.plug(); break;
            case event_kind::unplug: cab.unplug(); break;
            case event_kind::retrain: cab.retrain(); break;
            case event_kind::degrade:
                cab.degrade(e.gen, e.lanes);
                // Frames taken from now on cross the cable it retrains into.
                if (m_stage && i < m_stage_after.size() && m_stage_after[i]) m_stage->set_params(*m_stage_after[i]);
                break;
            case event_kind::ber: cab.set_ber(e.ber); break;
            case event_kind::host_reset: break;  // refused in the constructor
            }
            say(fmt::format("{}: {} at {} (scenario {})", m_tag, event_name(e), e.at.to_string(),
                           m_cfg.scenario_name));
        });
    }
}

void sim_server::run() {
    // Timed waits end when asked, not up to 50 us later (the default
    // slack): frames are due at microsecond times.
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    // Two programs that poll and a server that spins need three cores (per
    // link, with --links); on fewer the server yields every turn (ppoll) so
    // the programs can run.
    m_spin = m_cfg.spin >= 0 ? m_cfg.spin == 1 : ::sysconf(_SC_NPROCESSORS_ONLN) >= long(3 * m_cfg.links + 1);
    start_model();
    // Entering the SystemC kernel costs about a microsecond, and a frame
    // takes a dozen actions at distinct times: when the model has no other
    // SystemC process, its actions run without the kernel.
    m_direct = m_sys->sched.sole_process();
    if (m_cfg.verbose)
        say(fmt::format("{}: the model runs {}; the server {} between busy turns", m_tag,
                        m_direct ? "without the SystemC kernel (its scheduler is the only process)"
                                 : "through the SystemC kernel (it has other processes)",
                        m_spin ? "spins" : "polls its sockets"));
    std::vector<pollfd> pfds;
    std::uint64_t turn_start = wall_ns();
    while (!m_stop.load()) {
        std::uint64_t taken = 0;
        for (auto& c : m_clients) {
            const std::uint64_t before = c->taken;
            take_frames(*c);
            taken += c->taken - before;
        }
        const std::uint64_t wall = wall_ns();  // the turn's time
        m_prof.take_ns += wall - turn_start;
        if (taken) m_last_frame_ns = wall;
        const std::uint64_t now = model_of(wall);
        // The model runs only when an action is due; either way it has been
        // run up to @now.
        const std::uint64_t out_before = m_stats.frames_out[0] + m_stats.frames_out[1];
        if (m_stage)
            run_stage(now);
        else
            run_model(now);
        m_upto_ns = std::max(m_upto_ns, now);
        run_ahead(now, wall);
        const std::uint64_t after_model = wall_ns();
        m_prof.model_ns += after_model - wall;
        sweep_lost(now);
        for (auto& c : m_clients) put_frames(*c);
        release_slots();
        flush_acks();
        reap();
        ++m_prof.turns;
        m_prof.frames += taken;
        if (taken || m_stats.frames_out[0] + m_stats.frames_out[1] != out_before) ++m_prof.busy_turns;
        const std::uint64_t after_put = wall_ns();
        m_prof.put_ns += after_put - after_model;

        std::uint64_t wait_ns = 10'000'000;
        if (std::uint64_t next = 0; next_due(next)) wait_ns = std::min(wait_ns, next > now ? next - now : 0);
        if (std::uint64_t next = 0; m_stage && stage_next(next))
            wait_ns = std::min(wait_ns, next > now ? next - now : 0);
        // Busy, with a core to spare: no system call per turn. Spin on the
        // rings and the clock until a frame comes or the model's next
        // action is due (a turn with a ppoll() took about 1.5 us on the
        // 16-core host: a delivery waited half of that on average); the
        // sockets are still polled every k_poll_every_ns.
        if (m_spin && m_last_frame_ns + k_busy_ns > wall && after_put - m_last_poll_ns < k_poll_every_ns) {
            // From the turn's clock read: the next action is due at
            // wall + wait_ns, however long this turn took.
            spin_until(wall + std::min(wait_ns, k_spin_ns));
            turn_start = wall_ns();
            m_prof.poll_ns += turn_start - after_put;
            continue;
        }
        if (!m_pending[0].empty() || !m_pending[1].empty()) wait_ns = std::min<std::uint64_t>(wait_ns, 1'000'000);
        bool room_wanted = false;
        for (auto& c : m_clients) room_wanted = room_wanted || !c->rxq.empty();
        if (room_wanted) wait_ns = std::min<std::uint64_t>(wait_ns, 50'000);  // their ring is full: look again soon
        // While frames flow, the next one is near: keep looking (a wake-up
        // costs microseconds, a modelled TB5 hop about 3.5). Sleep once the
        // link has been quiet for a while.
        if (m_last_frame_ns + k_busy_ns > wall) wait_ns = 0;
        // A ppoll() every turn, even a busy one: skipping it (to spare the
        // system call) left a 2-core machine's scheduler so few chances to
        // switch between the server and two polling programs that some runs'
        // 64 B round trips took a millisecond; on 16 cores it gained nothing.
        if (wait_ns >= k_spin_ns && !about_to_sleep()) wait_ns = 0;
        pfds.clear();
        pfds.push_back({m_listen.fd(), POLLIN, 0});
        pfds.push_back({m_ctl.fd(), POLLIN, 0});
        pfds.push_back({m_cfg.channel_fd, POLLIN, 0});
        for (auto& c : m_clients)
            pfds.push_back({c->fd, short(POLLIN | (c->outq.empty() ? 0 : POLLOUT)), 0});
        pfds.push_back({m_wake_fd, POLLIN, 0});  // last: stop() from another thread
        const timespec ts{time_t(wait_ns < k_spin_ns ? 0 : (wait_ns - k_spin_ns) / 1'000'000'000u),
                          long(wait_ns < k_spin_ns ? 0 : (wait_ns - k_spin_ns) % 1'000'000'000u)};
        const int r = ::ppoll(pfds.data(), pfds.size(), &ts, nullptr);
        for (auto& c : m_clients)
            if (c->shm) __atomic_store_n(&c->shm->server_waiting, 0u, __ATOMIC_SEQ_CST);
        if (r > 0) {  // else EINTR: stop() is checked next
            if (pfds[0].revents & POLLIN) accept_one();
            if (pfds[1].revents & POLLIN) control_one();
            const std::size_t polled = pfds.size() - 4;
            for (std::size_t i = 0; i < polled && i < m_clients.size(); ++i) {
                auto& c = *m_clients[i];
                if (pfds[i + 3].revents & POLLOUT) flush(c);
                if (pfds[i + 3].revents & (POLLIN | POLLHUP | POLLERR)) serve(c);
            }
            // After the clients: a connection taken here joins the next turn's poll.
            if (pfds[2].revents & (POLLIN | POLLHUP | POLLERR)) channel_one();
        }
        turn_start = m_last_poll_ns = wall_ns();  // the sockets were just polled
        m_prof.poll_ns += turn_start - after_put;
    }
    for (auto& c : m_clients)
        if (!c->dead) send_msg(*c, ODL_SIM_BYE, wall_ns(), 0, nullptr, 0);
}

// Runs the model's due actions up to @now (simulated ns), if any is due.
void sim_server::run_model(std::uint64_t now) {
    std::uint64_t due = 0;
    if (!next_due(due) || due > now) return;
    m_prof.max_behind_ns = std::max(m_prof.max_behind_ns, now - due);
    ++m_prof.model_runs;
    const std::uint64_t ev = m_sys->sched.events_run();
    const sc_core::sc_time upto = at_ns(now);
    if (m_direct)
        m_sys->sched.run_used(upto);  // a frame stamped before @now may still be posted at its stamp
    else
        m_sys->run_until(upto);
    m_prof.events += m_sys->sched.events_run() - ev;
}

// Pipeline timing: the frames that leave their stage by @now, and the
// model's own actions (the cable's events, the link's state) in time order
// with them. The model has no action per frame: a frame's times were set
// when it was taken (stage_frame()).
void sim_server::run_stage(std::uint64_t now) {
    const sc_core::sc_time upto = at_ns(now);
    bool entered = false;
    // Bounded: every pass runs at least one action or hands over a frame
    // (the window bounds the frames).
    for (int i = 0; i < 100'000; ++i) {
        std::uint64_t leave = 0;
        const bool frames = stage_next(leave) && leave <= now;
        sc_core::sc_time act;
        const bool actions = next_action(act) && act <= upto;
        if (!frames && !actions) break;
        if (!entered) {
            entered = true;
            ++m_prof.model_runs;
            const std::uint64_t first = std::min(frames ? leave : now, actions ? ns_of(act) : now);
            m_prof.max_behind_ns = std::max(m_prof.max_behind_ns, now - first);
        }
        if (!actions || (frames && at_ns(leave) < act)) {
            stage_deliver(leave);
            continue;
        }
        // The actions at @act (SystemC's resolution is finer than a ns).
        const std::uint64_t ev = m_sys->sched.events_run();
        if (m_direct)
            m_sys->sched.run_used(act);
        else
            m_sys->run_until(act);
        const std::uint64_t ran = m_sys->sched.events_run() - ev;
        m_prof.events += ran;
        if (!ran) {  // through the kernel, an action at @act may wait for a later run
            run_model(now);
            stage_deliver(now);
            break;
        }
    }
}

void sim_server::stage_frame(int end, pending p, std::uint32_t payload, bool som, bool eom) {
    m_stage_used = std::max(m_stage_used, p.sent_ns);
    if (m_link_up[end]) {  // else lost, as the full model's drivers lose it
        sc_core::sc_time left;
        p.due_ns = ns_of(m_stage->due(end, at_ns(p.sent_ns), payload, som, eom, &left));
        p.leave_ns = ns_of(left);
    } else {
        p.lost = true;
        p.leave_ns = p.sent_ns;
    }
    // In order per direction, lost frames too (their slots come free in order).
    p.leave_ns = m_stage_left[end] = std::max(p.leave_ns, m_stage_left[end]);
    m_pending[end].push_back(p);
}

bool sim_server::stage_damaged(const pending& p) {
    const cable& cab = *m_sys->cables[0];
    if (cab.ber() <= 0) return false;
    return draw_frame_errors(cab.config().gen, cab.ber(), p.len, m_ber_rng).damaged();
}

bool sim_server::stage_next(std::uint64_t& ns) const {
    bool any = false;
    for (const auto& q : m_pending)
        if (!q.empty() && (!any || q.front().leave_ns < ns)) {
            ns = q.front().leave_ns;
            any = true;
        }
    return any;
}

bool sim_server::stage_deliver(std::uint64_t upto) {
    std::uint64_t n = 0;
    for (int from = 0; from < 2; ++from) {
        auto& q = m_pending[from];
        const int to = 1 - from;
        for (; !q.empty() && q.front().leave_ns <= upto; ++n) {
            const pending& p = q.front();
            m_stage_used = std::max(m_stage_used, p.leave_ns);
            // A frame in flight when the cable went is lost, and one a bit
            // error damaged (its receiver drops it, as the full model's does).
            if (!p.lost && m_link_up[to] && !stage_damaged(p)) {
                deliver_front(to, std::uint64_t(m_t0_ns) + p.due_ns);
                continue;
            }
            ++m_stats.frames_lost[from];
            left_model(p.region, p.seq, nullptr);
            q.pop_front();
            ack(from, 1);
        }
    }
    m_prof.events += n;
    return n > 0;
}

// While frames are in the model and the programs are quiet, runs it on to
// the next delivery, at most lookahead_ns past @now (@wall: the turn's
// clock), so that the frame is in its receiver's ring before it is due (the
// program waits for the due time). It stops after that delivery's time
// step (delivered() asks it to), so that a program's next frame, sent after
// it has read this one, finds the model no further on than the frame's
// stamp.
void sim_server::run_ahead(std::uint64_t now, std::uint64_t wall) {
    // A program still putting frames in (a message of many frames) would
    // find the model ahead of its next frame's stamp and have it posted
    // late: only once the programs have been quiet for a moment.
    if (!m_cfg.lookahead_ns || !m_direct || wall < m_last_frame_ns + k_quiet_ns) return;
    if (m_pending[0].empty() && m_pending[1].empty()) return;
    if (m_stage) {
        // The next frame's leaving time, unless a model action (a cable
        // event) comes first: all the frames that leave then.
        std::uint64_t leave = 0, due = 0;
        if (!stage_next(leave) || leave > now + m_cfg.lookahead_ns || (next_due(due) && due <= leave)) return;
        stage_deliver(leave);
        ++m_prof.ahead_runs;
        return;
    }
    const std::uint64_t ev = m_sys->sched.events_run();
    m_ahead = true;
    m_sys->sched.run_ahead(at_ns(now + m_cfg.lookahead_ns));
    m_ahead = false;
    if (m_sys->sched.events_run() == ev) return;
    // Frames sent from now on are posted no earlier than where the model is.
    m_upto_ns = std::max(m_upto_ns, used_ns());
    ++m_prof.ahead_runs;
    m_prof.events += m_sys->sched.events_run() - ev;
}

// The model's own time (ns, rounded up): where its last action ran, or
// beyond when a turn through the kernel claimed more.
std::uint64_t sim_server::used_ns() const {
    const std::uint64_t u = units_per_ns();
    return u ? (scheduler::now().value() + u - 1) / u : ns_of(scheduler::now()) + 1;
}

// The simulated time of the model's next action, if any.
bool sim_server::next_action(sc_core::sc_time& t) const {
    if (m_direct) return m_sys->sched.next_time(t);
    if (!sc_core::sc_pending_activity()) return false;
    t = sc_core::sc_time_stamp() + sc_core::sc_time_to_pending_activity();
    return true;
}

// The simulated time (ns) of the model's next action, if any.
bool sim_server::next_due(std::uint64_t& ns) const {
    sc_core::sc_time t;
    if (!next_action(t)) return false;
    ns = ns_of(t);
    return true;
}

// Until @until (wall clock) or a program has put a frame in its ring.
void sim_server::spin_until(std::uint64_t until) {
    for (unsigned i = 0;; ++i) {
        for (auto& c : m_clients)
            if (c->shm && !c->dead && odl_sim_load(&c->shm->to_server.head) != c->taken) return;
        if (wall_ns() >= until) return;
        odl_cpu_relax();
    }
}

// Tells every client that the server is going to sleep, then looks at the
// rings once more: a frame put in just before the flag was seen would
// otherwise wait for the timeout (the client sends WAKE once it sees the
// flag). False when a ring holds a frame after all.
bool sim_server::about_to_sleep() {
    for (auto& c : m_clients)
        if (c->shm) __atomic_store_n(&c->shm->server_waiting, 1u, __ATOMIC_SEQ_CST);
    for (auto& c : m_clients) {
        if (!c->shm || c->dead) continue;
        if (__atomic_load_n(&c->shm->to_server.head, __ATOMIC_SEQ_CST) != c->taken) return false;
    }
    return true;
}

// Frames from a client's ring into the model, each posted at its stamp.
// Only the slot's length and stamp and the frame header's type and flags
// are read: the bytes stay where they are until the peer has read them. The
// ring's head is read once a turn and the turn's slot headers fetched
// together: each is a line the program's core has just written, and one at
// a time they cost a cross-core miss each. Frames posted at one time (all
// of them when the model is behind) share one action.
void sim_server::take_frames(client& c) {
    if (!c.shm || c.dead || c.end < 0) return;
    odl_sim_slot* slots = odl_sim_slots(c.shm);
    const int e = c.end;
    // A frame is posted at its stamp (the hop to the server costs no model
    // time) unless the model has already acted after it: run without the
    // kernel, it claims only the time of its last action (run_used()), so a
    // program's frame stamped when it asked still goes at that time if
    // nothing happened since; through the kernel, at its last turn.
    const std::uint64_t model_now = m_stage ? m_stage_used : m_direct ? used_ns() : m_upto_ns;
    const std::int64_t filled = odl_sim_ring_filled(&c.shm->to_server, c.taken);
    if (filled < 0) return drop(c, "corrupted its ring indices");
    const std::uint64_t n = std::min<std::uint64_t>(std::uint64_t(filled), ODL_SIM_WINDOW);
    for (std::uint64_t i = 0; i < n; ++i) {
        const odl_sim_slot* slot = &slots[(c.taken + i) & (ODL_SIM_SLOTS - 1)];
        __builtin_prefetch(slot);
        __builtin_prefetch(slot->data);
    }
    const char* why = nullptr;
    std::uint32_t group = 0;  // frames taken for one posting time, not yet scheduled
    std::uint64_t group_at = 0;
    const auto schedule = [&] {
        if (group) m_sys->sched.at(at_ns(group_at), [this, e, k = group] { post_frames(e, k); });
        group = 0;
    };
    for (std::uint64_t i = 0; i < n; ++i) {
        const odl_sim_slot* slot = &slots[c.taken & (ODL_SIM_SLOTS - 1)];
        const std::uint32_t len = odl_sim_slot_len(slot);
        if (len == 0) {
            why = "put a frame of an impossible length in its ring";
            break;
        }
        if (c.taken + 1 - c.acked > ODL_SIM_WINDOW) {
            why = "sent more frames than its window";
            break;
        }
        const std::int64_t stamp = std::int64_t(__atomic_load_n(&slot->stamp_ns, __ATOMIC_RELAXED)) - m_t0_ns;
        // Never before an earlier frame of this end: the model sends them
        // in the order they were taken (m_pending's order).
        const std::uint64_t at =
            std::max({stamp > 0 ? std::uint64_t(stamp) : 0, model_now, m_post_at[e]});
        m_post_at[e] = at;
        // A message's frames carry its first and last mark, so the model
        // charges the message's costs once (odl_frame_hdr); anything else
        // is a message of one frame.
        const std::uint8_t type = __atomic_load_n(&slot->data[offsetof(odl_frame_hdr, type)], __ATOMIC_RELAXED);
        const std::uint8_t flags = __atomic_load_n(&slot->data[offsetof(odl_frame_hdr, flags)], __ATOMIC_RELAXED);
        const bool data = type == ODL_FRAME_DATA;
        const std::uint32_t tag = m_next_tag[e]++;
        const bool som = !data || (flags & ODL_FRAME_F_SOM) != 0, eom = !data || (flags & ODL_FRAME_F_EOM) != 0;
        if (m_stage) {
            stage_frame(e, {tag, at, c.region, c.taken, len}, len - ODL_FRAME_HDR_BYTES, som, eom);
        } else {
            m_pending[e].push_back({tag, at, c.region, c.taken, len});
            if (group && at != group_at) schedule();
            group_at = at;
            ++group;
            m_posts[e].push_back({len - ODL_FRAME_HDR_BYTES, tag, som, eom});
        }
        ++c.taken;
        ++m_stats.frames_in[e];
    }
    schedule();
    if (why) drop(c, why);
}

void sim_server::post_frames(int end, std::uint32_t n) {
    auto& drv = *m_sys->hosts[end].drv;
    auto& q = m_posts[end];
    for (; n > 0 && !q.empty(); --n) {
        const to_post p = q.front();
        q.pop_front();
        drv.send_frame(k_port, p.payload, p.tag, p.som, p.eom);
    }
}

// Descriptors of delivered frames into the client's ring, as far as it has
// room: once a turn, not per delivery. The ring's indices are lines the
// program's core polls and writes: its read position is read once and the
// new head published once for all the frames of the turn (a store per frame
// to a line another core spins on cost more than the model's work for it).
void sim_server::put_frames(client& c) {
    if (!c.shm || c.dead || c.rxq.empty()) return;
    const std::uint64_t tail = odl_sim_load(&c.shm->to_client.tail);
    if (c.put - tail > ODL_SIM_SLOTS) return drop(c, "corrupted its ring indices");
    std::uint64_t room = ODL_SIM_SLOTS - (c.put - tail);
    odl_sim_desc* descs = odl_sim_descs(c.shm);
    const std::uint64_t first = c.put;
    // The frames are the program's from now on: what it takes later waited
    // for it, not for the model.
    const std::uint64_t handed = wall_ns();
    for (; room > 0 && !c.rxq.empty(); --room) {
        const auto& f = c.rxq.front();
        odl_sim_desc& d = descs[c.put & (ODL_SIM_SLOTS - 1)];
        d.len = f.len;
        d.slot = std::uint32_t(f.seq & (ODL_SIM_SLOTS - 1));
        d.stamp_ns = f.due_ns;
        d.region = f.region;
        d.handed_ns = handed;
        if (client* from = by_region(f.region)) {
            auto& ex = from->exits;
            // Frames leave the model in order, so @seq's record is at its
            // distance from the first one still held.
            if (!ex.empty() && f.seq >= ex.front().seq && f.seq - ex.front().seq < ex.size())
                ex[f.seq - ex.front().seq].pos = c.put;
        }
        ++c.put;
        if ((c.put & 15) == 0) {  // one frame in 16: a sample
            const std::uint64_t lag = handed > f.due_ns ? handed - f.due_ns : 0;
            ++m_prof.handed;
            m_prof.hand_lag_ns += lag;
            if (lag > 1000) ++m_prof.hand_late;
        }
        c.rxq.pop_front();
    }
    if (c.put != first) {
        odl_sim_store(&c.shm->to_client.head, c.put);
        wake_client(c);
    }
    if (!c.rxq.empty()) {
        // The program has not read its ring: delivered frames wait for it.
        ++m_prof.ring_full;
        m_prof.max_waiting = std::max<std::uint64_t>(m_prof.max_waiting, c.rxq.size());
    }
}

sim_server::client* sim_server::by_region(std::uint64_t region) const {
    for (const auto& c : m_clients)
        if (c->region == region) return c.get();
    return nullptr;
}

void sim_server::left_model(std::uint64_t region, std::uint64_t seq, client* to) {
    if (client* from = by_region(region)) from->exits.push_back({seq, to, k_not_put});
}

void sim_server::release_slots() {
    for (auto& c : m_clients) {
        if (!c->shm || c->dead) continue;
        const std::uint64_t t = odl_sim_load(&c->shm->to_client.tail);
        if (t < c->consumed || t > c->put) {
            drop(*c, "corrupted its ring indices");
            continue;
        }
        c->consumed = t;
    }
    for (auto& c : m_clients) {
        if (!c->shm || c->dead) continue;
        const std::uint64_t before = c->released;
        while (!c->exits.empty()) {
            const auto& e = c->exits.front();
            if (e.to && (e.pos == k_not_put || e.to->consumed <= e.pos)) break;
            c->released = e.seq + 1;
            c->exits.pop_front();
        }
        if (c->released != before) {
            odl_sim_store(&c->shm->to_server.tail, c->released);
            wake_client(*c);
        }
    }
}

// A program that shares the cores with the server and its peer sleeps
// instead of spinning once it has waited a while (client_waiting): what the
// server just gave it (descriptors, acknowledged frames, freed slots) wakes
// it.
void sim_server::wake_client(client& c) {
    if (odl_sim_take_flag(&c.shm->client_waiting)) send_msg(c, ODL_SIM_WAKE, wall_ns(), 0, nullptr, 0);
}

std::string sim_turn_profile::summary() const {
    const double total = double(take_ns + model_ns + put_ns + poll_ns);
    const auto pct = [total](std::uint64_t ns) { return total > 0 ? 100.0 * double(ns) / total : 0.0; };
    const auto per_frame = [this](std::uint64_t ns) { return frames ? double(ns) / double(frames) : 0.0; };
    return fmt::format("turns {} ({} busy, {:.1f} frames each), model entered {} times ({:.1f} actions per frame), "
                       "ahead of the wall clock in {} turns, at most {:.1f} us behind; wall time: take {:.0f}% ({:.0f} ns/frame), model {:.0f}% ({:.0f} "
                       "ns/frame), put {:.0f}% ({:.0f} ns/frame), poll {:.0f}%; handed over {:.2f} us past due on "
                       "average, {} of {} sampled frames more than 1 us; a receiver's ring full {} times (up to {} "
                       "delivered frames waiting for it)",
                       turns, busy_turns, busy_turns ? double(frames) / double(busy_turns) : 0.0, model_runs,
                       frames ? double(events) / double(frames) : 0.0, ahead_runs, double(max_behind_ns) / 1000.0, pct(take_ns), per_frame(take_ns), pct(model_ns),
                       per_frame(model_ns), pct(put_ns), per_frame(put_ns), pct(poll_ns),
                       handed ? double(hand_lag_ns) / double(handed) / 1000.0 : 0.0, hand_late, handed, ring_full,
                       max_waiting);
}

void sim_server::accept_one() {
    const int fd = ::accept4(m_listen.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    auto c = std::make_unique<client>();
    c->fd = fd;
    m_clients.push_back(std::move(c));
}

void sim_server::serve(client& c) {
    unsigned char buf[ODL_SIM_MAX_DATAGRAM + 1];
    for (int i = 0; i < k_batch && !c.dead; ++i) {
        int fd = -1, flags = 0;
        const ssize_t n = odl_sim_recv(c.fd, buf, sizeof(buf), &fd, &flags);
        if (n == 0) {
            if (fd >= 0) ::close(fd);
            return drop(c, "closed the connection");
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            // A program that closes with our last message unread resets the
            // connection, and Linux reports that before the datagrams it
            // sent first (its BYE): read on, once.
            if (errno == ECONNRESET && !c.reset_seen) {
                c.reset_seen = true;
                continue;
            }
            return drop(c, fmt::format("receive failed: {}", std::strerror(errno)));
        }
        if (flags & (MSG_TRUNC | MSG_CTRUNC)) {
            if (fd >= 0) ::close(fd);
            ++m_stats.bad_msgs;
            return drop(c, "sent an oversized datagram or more than one descriptor");
        }
        handle(c, buf, size_t(n), fd);
    }
}

void sim_server::handle(client& c, const unsigned char* buf, std::size_t n, int fd) {
    // A descriptor is taken with HELLO only; closed on every other path.
    struct fd_guard {
        int fd;
        ~fd_guard() {
            if (fd >= 0) ::close(fd);
        }
    } guard{fd};
    if (const char* why = odl_sim_check(buf, n, ODL_SIM_SIDE_CLIENT)) {
        ++m_stats.bad_msgs;
        return drop(c, fmt::format("sent a bad message: {}", why));
    }
    odl_sim_hdr h;
    std::memcpy(&h, buf, sizeof(h));
    if (odl_le64(h.seq) != c.rx_seq++) {
        ++m_stats.bad_msgs;
        return drop(c, "sent a message out of sequence");
    }
    const unsigned type = odl_le16(h.type);
    if (c.end < 0 && type != ODL_SIM_HELLO) return drop(c, "did not start with HELLO");
    switch (type) {
    case ODL_SIM_HELLO: {
        if (c.end >= 0) return drop(c, "sent a second HELLO");
        odl_sim_hello in;
        std::memcpy(&in, buf + sizeof(h), sizeof(in));
        if (guard.fd < 0) return drop(c, "sent HELLO without its ring memory");
        struct stat st {};
        if (::fstat(guard.fd, &st) < 0 || std::uint64_t(st.st_size) < ODL_SIM_SHM_BYTES)
            return drop(c, fmt::format("sent ring memory of {} bytes (want {})", st.st_size, ODL_SIM_SHM_BYTES));
        void* m = ::mmap(nullptr, ODL_SIM_SHM_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, guard.fd, 0);
        if (m == MAP_FAILED) return drop(c, fmt::format("ring memory cannot be mapped: {}", std::strerror(errno)));
        c.shm = static_cast<odl_sim_shm*>(m);
        if (const char* why = odl_sim_shm_check(c.shm)) return drop(c, fmt::format("sent {}", why));
        c.taken = c.released = odl_sim_load(&c.shm->to_server.tail);
        c.put = c.consumed = odl_sim_load(&c.shm->to_client.head);
        c.memfd = guard.fd;  // kept: the peer gets a read-only view of it
        guard.fd = -1;
        c.region = ++m_next_region;
        odl_sim_hello out{};
        out.magic = odl_cpu_le32(ODL_SIM_MAGIC);
        out.version = odl_cpu_le16(ODL_SIM_VERSION);
        out.link = in.link;
        out.links = odl_cpu_le32(m_cfg.links);
        out.pid = odl_cpu_le32(std::uint32_t(getpid()));
        int end = -1;
        if (in.link != m_cfg.link_index) {
            // Only a client of a link this server lacks is routed here.
        } else if (in.end == ODL_SIM_END_ANY) {
            end = !m_end[0] ? 0 : !m_end[1] ? 1 : -1;
        } else if (in.end <= 1 && !m_end[in.end]) {
            end = in.end;
        }
        if (end < 0) {
            // Refused: a HELLO naming no end says the server's links, then BYE.
            out.end = ODL_SIM_END_ANY;
            send_msg(c, ODL_SIM_HELLO, wall_ns(), 0, &out, sizeof(out));
            send_msg(c, ODL_SIM_BYE, wall_ns(), 0, nullptr, 0);
            if (in.link != m_cfg.link_index)
                return drop(c, fmt::format("asked for link {}: the server models {}", int(in.link), m_cfg.links));
            return drop(c, in.end == ODL_SIM_END_ANY ? "asked for an end: both are taken"
                                                     : fmt::format("asked for end {}: taken or none", int(in.end)));
        }
        c.end = end;
        m_end[end] = &c;
        out.end = std::uint8_t(end);
        out.rate_mbps = odl_cpu_le32(rate_mbps(end));
        out.window = odl_cpu_le32(ODL_SIM_WINDOW);
        out.answer_ns = odl_cpu_le32(m_answer_ns[end]);
        const std::string d = describe();
        std::memcpy(out.profile, d.data(), std::min(d.size(), sizeof(out.profile) - 1));
        send_msg(c, ODL_SIM_HELLO, wall_ns(), 0, &out, sizeof(out));
        // Each end reads the other's frames from its rings: views before
        // the LINK state that lets frames flow.
        if (client* other = m_end[1 - end]) {
            send_peer(c, *other);
            send_peer(*other, c);
        }
        m_link_up[end] = m_sys->hosts[end].drv->link_up(k_port);
        notify(end);
        notify(1 - end);
        if (m_cfg.verbose)
            say(fmt::format("{}: end {} taken by pid {}", m_tag, end ? 'B' : 'A', odl_le32(in.pid)));
        return;
    }
    case ODL_SIM_WAKE: return;  // the frames are in the ring; this turn takes them
    case ODL_SIM_BYE: return drop(c, "");
    default: return drop(c, "sent a message only the server sends");
    }
}

void sim_server::delivered(int to, std::uint32_t tag, const sc_core::sc_time& due_at) {
    const int from = 1 - to;
    auto& q = m_pending[from];
    std::uint64_t acked = 0;
    // The ring delivers in order: anything posted before @tag is lost.
    while (!q.empty() && q.front().tag != tag) {
        ++m_stats.frames_lost[from];
        ++acked;
        left_model(q.front().region, q.front().seq, nullptr);
        q.pop_front();
    }
    ack(from, acked);
    if (q.empty()) return end_ahead(false);  // a frame we no longer hold (swept as lost)
    end_ahead(deliver_front(to, std::uint64_t(m_t0_ns) + ns_of(due_at)));
}

bool sim_server::deliver_front(int to, std::uint64_t due) {
    auto& q = m_pending[1 - to];
    const pending& p = q.front();
    client* c = m_end[to];
    // The peer reads the bytes from the sender's slot; a sender that left
    // meanwhile is still readable through the peer's own mapping.
    // A program that took the end after the sender left never saw its
    // ring memory: the frame finds no one to read it.
    const bool out = c && c->shm && c->sees(p.region);
    if (out) {
        c->rxq.push_back({due, p.region, p.seq, p.len});  // into its ring at the end of the turn
        left_model(p.region, p.seq, c);
        ++m_stats.frames_out[to];
    } else {
        left_model(p.region, p.seq, nullptr);
        ++m_stats.frames_no_peer[to];
    }
    q.pop_front();
    ack(1 - to, 1);
    return out;
}

// Running ahead (run_ahead()) ends at a delivery, or once no frame is left
// in flight.
void sim_server::end_ahead(bool delivery) {
    if (m_ahead && (delivery || (m_pending[0].empty() && m_pending[1].empty()))) m_sys->sched.stop_after_now();
}

// Acknowledgements are gathered and sent once per turn of run(): one
// message for many frames.
void sim_server::ack(int end, std::uint64_t frames) { m_ack[end] += frames; }

void sim_server::flush_acks() {
    for (int end = 0; end < 2; ++end) {
        std::uint64_t frames = m_ack[end];
        m_ack[end] = 0;
        client* c = m_end[end];
        if (!c || !c->shm || frames == 0) continue;
        frames = std::min<std::uint64_t>(frames, c->taken - c->acked);
        if (frames == 0) continue;
        c->acked += frames;
        odl_sim_store(&c->shm->acked, c->acked);
        wake_client(*c);
    }
}

void sim_server::sweep_lost(std::uint64_t now) {
    if (m_stage) return;  // every staged frame leaves at its time
    for (int e = 0; e < 2; ++e) {
        auto& q = m_pending[e];
        std::uint64_t n = 0;
        while (!q.empty() && q.front().sent_ns + m_cfg.lost_after_ns < now) {
            ++m_stats.frames_lost[e];
            ++n;
            left_model(q.front().region, q.front().seq, nullptr);
            q.pop_front();
        }
        ack(e, n);
    }
}

void sim_server::link_changed(int end, bool up) {
    m_link_up[end] = up;
    notify(end);
}

void sim_server::notify(int end) {
    client* c = m_end[end];
    if (!c) return;
    const std::uint64_t state = (m_link_up[end] ? ODL_SIM_LINK_UP : 0) | (m_end[1 - end] ? ODL_SIM_LINK_PEER : 0);
    if (state == c->link_sent) return;
    c->link_sent = state;
    send_msg(*c, ODL_SIM_LINK, wall_ns(), state, nullptr, 0);
}

void sim_server::send_msg(client& c, unsigned type, std::uint64_t stamp, std::uint64_t arg, const void* payload,
                          std::size_t len, int fd) {
    if (c.dead) return;
    odl_sim_hdr h;
    odl_sim_hdr_init(&h, type, std::uint32_t(len), c.tx_seq++, stamp, arg);
    // Straight out when nothing waits before it (no copy); queued otherwise.
    if (c.outq.empty()) {
        iovec iov[2] = {{&h, sizeof(h)}, {const_cast<void*>(payload), len}};
        if (odl_sim_send(c.fd, iov, len ? 2 : 1, fd) >= 0) return;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return send_failed(c, errno);
    }
    client::queued d;
    d.bytes.resize(sizeof(odl_sim_hdr) + len);
    std::memcpy(d.bytes.data(), &h, sizeof(h));
    if (len) std::memcpy(d.bytes.data() + sizeof(h), payload, len);
    if (fd >= 0 && (d.fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0)
        return drop(c, fmt::format("cannot keep a descriptor to send: {}", std::strerror(errno)));
    c.outq.push_back(std::move(d));
}

// Read-only: a program can read its peer's frames, never write its rings.
void sim_server::send_peer(client& to, const client& of) {
    const std::string path = fmt::format("/proc/self/fd/{}", of.memfd);
    const int ro = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (ro < 0) return drop(to, fmt::format("cannot share its peer's ring memory ({}: {})", path, std::strerror(errno)));
    send_msg(to, ODL_SIM_PEER, wall_ns(), of.region, nullptr, 0, ro);
    ::close(ro);
    to.views.push_back(of.region);
}

void sim_server::flush(client& c) {
    while (!c.outq.empty() && !c.dead) {
        auto& d = c.outq.front();
        iovec iov{d.bytes.data(), d.bytes.size()};
        if (odl_sim_send(c.fd, &iov, 1, d.fd) < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            return send_failed(c, errno);
        }
        if (d.fd >= 0) ::close(d.fd);
        c.outq.pop_front();
    }
}

// A program that said goodbye and closed is no failure: its BYE may still be
// unread when the server's next message finds the connection shut, so read
// what is left before naming an error.
void sim_server::send_failed(client& c, int err) {
    if (err == EPIPE || err == ECONNRESET) serve(c);
    if (!c.dead) drop(c, fmt::format("send failed: {}", std::strerror(err)));
}

void sim_server::drop(client& c, const std::string& why) {
    if (c.dead) return;
    c.dead = true;
    c.why = why;
}

// Gone clients leave their end free; frames they had in the model still
// arrive at the peer (they are on the wire).
void sim_server::reap() {
    for (auto it = m_clients.begin(); it != m_clients.end();) {
        client& c = **it;
        if (!c.dead) {
            ++it;
            continue;
        }
        if (!c.why.empty() || m_cfg.verbose)
            say(fmt::format("{}: {} {}", m_tag,
                       c.end < 0 ? std::string("a client") : fmt::format("end {}", c.end ? 'B' : 'A'),
                       c.why.empty() ? "said goodbye" : c.why));
        const int end = c.end;
        if (end >= 0) m_end[end] = nullptr;
        // Nobody will read what it was handed: its senders' slots come free.
        for (auto& o : m_clients)
            for (auto& e : o->exits)
                if (e.to == &c) e.to = nullptr;
        ::close(c.fd);
        it = m_clients.erase(it);
        if (end >= 0) notify(1 - end);
    }
}

void sim_server::control_one() {
    answer_control(m_ctl.fd(), [this](const std::string& cmd) { return control(cmd); });
}

std::string sim_server::control(const std::string& cmd) {
    if (cmd == "cable plug" || cmd == "cable unplug") {
        const bool plug = cmd == "cable plug";
        cable& cab = *m_sys->cables[0];
        // Now, or where the model already is when it ran ahead.
        m_sys->sched.at(at_ns(std::max(model_ns(), m_upto_ns)), [&cab, plug] {
            if (plug)
                cab.plug();
            else
                cab.unplug();
        });
        return fmt::format("ok cable {}\n", plug ? "plugged" : "unplugged");
    }
    if (cmd == "status")
        return fmt::format("ok sim {} ends {}{} frames A->B {} (lost {}) B->A {} (lost {}) bad {}; {}\n",
                           describe(), m_end[0] ? "A" : "-", m_end[1] ? "B" : "-", m_stats.frames_in[0],
                           m_stats.frames_lost[0], m_stats.frames_in[1], m_stats.frames_lost[1], m_stats.bad_msgs,
                           m_prof.summary());
    return fmt::format("error unknown command '{}' (have: cable plug, cable unplug, status)\n", cmd);
}

// From the router (links > 1): a program's connection (its fd, SCM_RIGHTS)
// or a control command to answer on the channel.
void sim_server::channel_one() {
    for (int i = 0; i < k_batch; ++i) {
        unsigned char buf[1 + k_max_control];
        int fd = -1, flags = 0;
        const ssize_t n = odl_sim_recv(m_cfg.channel_fd, buf, sizeof(buf), &fd, &flags);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
        if (n <= 0) {  // the router is gone: so are the programs' way in and the control socket
            if (fd >= 0) ::close(fd);
            say(fmt::format("{}: the router process went away; stopping", m_tag));
            m_stop.store(true);
            return;
        }
        if (buf[0] == k_chan_client && fd >= 0) {
            const int fl = ::fcntl(fd, F_GETFL);
            if (fl < 0 || ::fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) {
                ::close(fd);
                continue;
            }
            auto c = std::make_unique<client>();
            c->fd = fd;
            m_clients.push_back(std::move(c));
            continue;
        }
        if (fd >= 0) ::close(fd);
        if (buf[0] == k_chan_control) {
            const std::string reply =
                k_chan_reply + control(std::string(reinterpret_cast<const char*>(buf) + 1, std::size_t(n) - 1));
            if (::send(m_cfg.channel_fd, reply.data(), reply.size(), MSG_NOSIGNAL) < 0)
                say(fmt::format("{}: cannot answer the router: {}", m_tag, std::strerror(errno)));
        }
    }
}

}  // namespace odl::model::linkd
