// SPDX-License-Identifier: MIT
// odl-linkd --sim: the model server for libodl's `sim` backend. Two hosts
// (NHI, router, host driver with a platform profile) joined by one cable,
// run paced to the wall clock; each end is one libodl process whose frames
// the model carries (protocol: include/odl/wire/sim.h).
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "odl/model/cable/link_config.h"
#include "odl/model/host/platform.h"
#include "odl/model/linkd/unix_listen.h"
#include "odl/model/reduced/pipeline.h"
#include "odl/model/scenario/scenario.h"

namespace odl::model {
class system_model;
}

namespace odl::model::linkd {

struct sim_server_config {
    std::string socket_path;   ///< AF_UNIX SOCK_SEQPACKET path
    std::string control_path;  ///< optional: "cable plug|unplug", "status"
    std::string profile = "intel-tb5-discrete";  ///< both hosts, unless profile_b is set
    std::string profile_b;
    calibration cal;           ///< loaded by the caller
    link_config link;
    std::uint64_t seed = 1;
    /// Cable events (plug, unplug, ber, degrade, retrain) at their times
    /// after the model came up; from a scenario file.
    std::vector<scenario_event> events;
    std::string scenario_name;
    /// A frame the model has neither delivered nor reported for this long
    /// (simulated) is lost: its sender gets its window back.
    std::uint64_t lost_after_ns = 50'000'000;
    /// Spin between busy turns instead of ppoll(): 1 on, 0 off, -1 with 4
    /// or more CPUs (two polling programs and the server).
    int spin = -1;
    /// While frames are in the model, it may run this far ahead of the wall
    /// clock to the next delivery (ns): the frame is handed over before it
    /// is due and its program takes it at its due time, so the server's own
    /// hop costs the program nothing. 0: never ahead (hand over when due).
    std::uint64_t lookahead_ns = 20'000;
    bool verbose = false;
    /// Which of the server's links this is, of how many (odl-linkd --sim
    /// --links N runs one process per link behind a router: sim_links.h).
    unsigned link_index = 0;
    unsigned links = 1;
    /// Who decides when a frame arrives: the full model (every action of
    /// the hosts, NHIs, routers and cable), or the reduced one fitted to it
    /// at start (odl/model/reduced/pipeline.h: no action per frame), which
    /// the server refuses when it is further than pipeline_tolerance from
    /// the full model on its check's workloads; automatic (odl-linkd's
    /// default): the reduced one where it fits, else the full model, which
    /// costs about a microsecond of a core per frame, more than a TB5
    /// link's frame time, so it falls behind the wall clock on many machines.
    enum class timing { event, pipeline, automatic } timing = timing::event;
    double pipeline_tolerance = 0.05;
    /// From the router: the programs' connections and control commands
    /// (sim_links.h); -1 when this process listens itself.
    int channel_fd = -1;
    /// Where the server's own lines go (the timing it chose, a scenario's
    /// events, with verbose the ends and the fit); unset: stderr, after
    /// "odl-linkd: ". The in-process model hands them to libodl's log.
    std::function<void(const std::string&)> say;
};

/// Throws std::runtime_error naming what @cfg gets wrong (cable, link
/// index, profiles): what the constructor refuses, without building a model.
void check(const sim_server_config& cfg);
/// The reduced model of a run: the stage fitted to the cable as it starts,
/// and for each of the scenario's degrades the stage of the cable it
/// retrains into (bit errors, retraining and unplugs need no stage of their
/// own: the server draws the errors per frame, and the full model, which
/// still runs, keeps the link's state).
struct pipeline_plan {
    pipeline_params start;
    std::vector<std::optional<pipeline_params>> after;  ///< index: cfg.events; set for degrades
};
/// With cfg.timing pipeline: the reduced model fitted to the full model of
/// @cfg's hosts and cable (and each cable a degrade leaves), checked against
/// it; throws pipeline_misfit naming the workload that is off by more than
/// the tolerance. @report, if given, gets a line per stage (for -v).
pipeline_plan fit_checked_pipeline(const sim_server_config& cfg, std::string* report = nullptr);
/// fit_checked_pipeline()'s refusal when the reduced model is off by more
/// than the tolerance (bad input is a plain std::runtime_error).
struct pipeline_misfit : std::runtime_error {
    explicit pipeline_misfit(const std::string& why)
        : std::runtime_error(why + "; use the full model (--sim-timing event)"), reason(why) {}
    std::string reason;  ///< without the advice
};
/// What --sim-timing auto runs for @cfg: the reduced model's fitted stages
/// where they fit, else nothing, and @why says why the full model runs (the
/// workload the reduced model missed). Bad input throws as check() does.
std::optional<pipeline_plan> auto_pipeline(const sim_server_config& cfg, std::string* why,
                                             std::string* report = nullptr);
/// "<profile> <gen>x<lanes>[ asym] <length> m[ pipeline]", as HELLO tells
/// clients: @cfg's hosts and timing on @link (default: cfg.link).
std::string describe(const sim_server_config& cfg, const link_config& link);
std::string describe(const sim_server_config& cfg);
/// Payload rate of 4 KiB frames sent from @end (0 = A) on @link (default:
/// cfg.link), Mb/s.
std::uint32_t rate_mbps(const sim_server_config& cfg, const link_config& link, int end);
std::uint32_t rate_mbps(const sim_server_config& cfg, int end);

/// The router <-> link process channel (SOCK_SEQPACKET): the first byte
/// says what a datagram is.
inline constexpr unsigned char k_chan_client = 'F';   ///< a program's connection, SCM_RIGHTS
inline constexpr unsigned char k_chan_control = 'C';  ///< a control command follows
inline constexpr char k_chan_reply = 'R';             ///< the answer follows
inline constexpr std::size_t k_max_control = 4096;

/// Counters, for logs and tests.
struct sim_server_stats {
    std::uint64_t frames_in[2] = {};      ///< from end A, B
    std::uint64_t frames_out[2] = {};     ///< delivered to end A, B
    std::uint64_t frames_lost[2] = {};    ///< sent by A, B, lost in the model
    std::uint64_t frames_no_peer[2] = {}; ///< arrived for an end nobody holds
    std::uint64_t bad_msgs = 0;
};

/// Where the server's wall time goes, turn by turn (run()); for `status`
/// and the exit line, to tell a server that cannot keep up from one that
/// waits for its programs.
struct sim_turn_profile {
    std::uint64_t turns = 0;
    std::uint64_t busy_turns = 0;   ///< turns that took or delivered a frame
    std::uint64_t frames = 0;       ///< frames taken from the programs
    std::uint64_t take_ns = 0;      ///< frames from the rings into the model
    std::uint64_t model_ns = 0;     ///< the model run up to the wall clock
    std::uint64_t put_ns = 0;       ///< delivered frames into the rings, acks
    std::uint64_t poll_ns = 0;      ///< the control sockets and sleeping
    std::uint64_t model_runs = 0;   ///< turns that entered the SystemC kernel
    std::uint64_t events = 0;       ///< model actions those runs carried out
    std::uint64_t max_behind_ns = 0;  ///< longest the model was due but not run
    std::uint64_t handed = 0;         ///< descriptors handed over, 1 in 16 sampled
    std::uint64_t hand_lag_ns = 0;    ///< the samples' total wall time past due
    std::uint64_t hand_late = 0;      ///< samples more than 1 us past due
    std::uint64_t ahead_runs = 0;     ///< turns that ran the model ahead of the wall clock
    std::uint64_t ring_full = 0;      ///< delivered frames found the receiver's ring full
    std::uint64_t max_waiting = 0;    ///< most delivered frames waiting for one receiver
    std::string summary() const;
};

class sim_server {
public:
    /// Builds the model. Throws std::runtime_error (unknown profile, bad cable).
    explicit sim_server(sim_server_config cfg);
    ~sim_server();
    sim_server(const sim_server&) = delete;
    sim_server& operator=(const sim_server&) = delete;

    /// Binds and listens; false (with @err) on failure.
    bool listen(std::string& err);
    /// Serves until stop() (from any thread or a signal handler).
    void run();
    /// Ends run() soon: also wakes it from a ppoll() (an eventfd write,
    /// async-signal-safe), so a thread that stops it need not wait out a sleep.
    void stop();
    const sim_server_stats& stats() const { return m_stats; }
    const sim_turn_profile& profile() const { return m_prof; }
    /// "<profile> <gen>x<lanes>[ asym] <length> m", as HELLO tells clients:
    /// the cable as it is now (after a scenario's degrade, the new one).
    std::string describe() const;
    /// Payload rate of 4 KiB frames sent from @end (0 = A) on the cable as
    /// it is now, Mb/s.
    std::uint32_t rate_mbps(int end) const;

private:
    struct client;
    /// A frame in the model. Its bytes stay in the sender's slot.
    struct pending {
        std::uint32_t tag;
        std::uint64_t sent_ns;  ///< model time it was posted
        std::uint64_t region;   ///< the sender's ring memory
        std::uint64_t seq;      ///< the sender's frame number (its slot)
        std::uint32_t len;      ///< checked when taken
        /// Pipeline timing: model times (ns) it leaves the bottleneck and is
        /// due; lost: posted while the sender's cable was down.
        std::uint64_t leave_ns = 0, due_ns = 0;
        bool lost = false;
    };

    void start_model();
    /// One of the server's lines (sim_server_config::say).
    void say(const std::string& line) const;
    std::uint64_t wall_ns() const;
    std::uint64_t model_ns() const;
    std::uint64_t model_of(std::uint64_t wall) const;  ///< simulated time at wall-clock time @wall
    void accept_one();
    void serve(client& c);
    void handle(client& c, const unsigned char* buf, std::size_t n, int fd);
    void take_frames(client& c);
    void put_frames(client& c);
    bool about_to_sleep();
    void spin_until(std::uint64_t until);
    void run_ahead(std::uint64_t now, std::uint64_t wall);
    std::uint64_t used_ns() const;
    bool next_due(std::uint64_t& ns) const;
    bool next_action(sc_core::sc_time& t) const;
    void drop(client& c, const std::string& why);
    /// @fd, if any, goes along (SCM_RIGHTS); the caller keeps its own.
    void send_msg(client& c, unsigned type, std::uint64_t stamp, std::uint64_t arg,
                  const void* payload, std::size_t len, int fd = -1);
    /// Gives @to a read-only view of @of's ring memory (PEER).
    void send_peer(client& to, const client& of);
    client* by_region(std::uint64_t region) const;
    /// Frame @seq of @region left the model; @to reads it, or nobody.
    void left_model(std::uint64_t region, std::uint64_t seq, client* to);
    /// The receivers' read positions; the senders' slots they free.
    void release_slots();
    void flush(client& c);
    /// Sends WAKE to @c if it sleeps (client_waiting), clearing the flag.
    void wake_client(client& c);
    void send_failed(client& c, int err);  ///< @err: errno of the failed send
    void ack(int end, std::uint64_t frames);
    void flush_acks();
    /// The model's driver at end @to reaped frame @tag; its completion
    /// handling ends at @due, when the frame is handed to the program.
    void delivered(int to, std::uint32_t tag, const sc_core::sc_time& due);
    void end_ahead(bool delivery);
    /// Posts the @n frames at the front of m_posts[@end] to the model.
    void post_frames(int end, std::uint32_t n);
    /// Pipeline timing: the frame @p from @end, posted at p.sent_ns, into
    /// the reduced model's stage (its leaving and due times), at the back
    /// of m_pending[@end].
    void stage_frame(int end, pending p, std::uint32_t payload, bool som, bool eom);
    /// Pipeline timing: hands over every frame that leaves its stage by
    /// @upto (model ns); false if none did.
    bool stage_deliver(std::uint64_t upto);
    /// Pipeline timing: the model time (ns) the next frame leaves its stage.
    bool stage_next(std::uint64_t& ns) const;
    /// Pipeline timing: whether bit errors damage @p as it leaves (the
    /// cable's rate and generation now, cable/bit_errors.h).
    bool stage_damaged(const pending& p);
    /// The frame at the front of m_pending[1 - @to] reaches end @to, due
    /// at @due (wall-clock ns).
    bool deliver_front(int to, std::uint64_t due);  ///< false: nobody to read it
    /// Runs the model's due actions up to @now (simulated ns).
    void run_model(std::uint64_t now);
    /// Pipeline timing: the stage's frames and the model's actions up to @now.
    void run_stage(std::uint64_t now);
    void sweep_lost(std::uint64_t now);  ///< @now: simulated time of this turn
    void link_changed(int end, bool up);
    /// Sends @end its LINK state if it changed.
    void notify(int end);
    void control_one();
    void channel_one();
    void reap();

public:
    /// The answer to one control command (the control socket's, or the router's).
    std::string control(const std::string& cmd);

private:

    sim_server_config m_cfg;
    std::string m_tag;  ///< "sim", or "sim link N" in logs
    std::unique_ptr<system_model> m_sys;
    /// --sim-timing pipeline: the reduced model, run by the server itself
    /// (no scheduler action per frame); frames wait in m_pending.
    std::unique_ptr<pipeline_state> m_stage;
    std::vector<std::optional<pipeline_params>> m_stage_after;  ///< pipeline_plan::after
    /// Pipeline timing's bit errors: drawn per frame as it leaves, at the
    /// cable's rate then (the full model's cable keeps the scenario's rate).
    std::mt19937_64 m_ber_rng;
    std::uint64_t m_stage_left[2] = {0, 0};  ///< the latest leaving time staged, per sending end
    std::uint64_t m_stage_used = 0;  ///< model time of the stage's last post or delivery (ns)
    std::int64_t m_t0_ns = 0;  ///< wall time of model time 0
    unix_listener m_listen, m_ctl;
    std::atomic<bool> m_stop{false};
    int m_wake_fd = -1;  ///< eventfd written by stop(), polled by run()
    std::vector<std::unique_ptr<client>> m_clients;
    client* m_end[2] = {nullptr, nullptr};
    /// Each end's host's modelled completion cost, ns (HELLO's answer_ns).
    std::uint32_t m_answer_ns[2] = {0, 0};
    bool m_link_up[2] = {false, false};
    std::deque<pending> m_pending[2];  ///< per sending end, in posting order
    std::uint32_t m_next_tag[2] = {0, 0};
    /// Frames taken but not yet posted to the model, per sending end, in
    /// order; one action posts the frames that share a time.
    struct to_post {
        std::uint32_t payload, tag;
        bool som, eom;
    };
    std::deque<to_post> m_posts[2];
    std::uint64_t m_post_at[2] = {0, 0};  ///< the latest posting time, ns
    std::uint64_t m_ack[2] = {0, 0};  ///< frames to acknowledge this turn
    bool m_ahead = false;  ///< in run_ahead(): a delivery ends the run
    std::uint64_t m_upto_ns = 0;  ///< simulated time the model has been run up to
    std::uint64_t m_last_frame_ns = 0;  ///< wall time a program last sent a frame
    std::uint64_t m_last_poll_ns = 0;   ///< wall time of the last ppoll()
    bool m_spin = false;                ///< spin between busy turns (enough cores)
    bool m_direct = false;              ///< the model runs without the SystemC kernel
    std::uint64_t m_next_region = 0;  ///< names of ring memory, as PEER gives them
    sim_server_stats m_stats;
    sim_turn_profile m_prof;
};

}  // namespace odl::model::linkd
