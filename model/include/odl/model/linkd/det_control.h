// SPDX-License-Identifier: MIT
// Deterministic mode's controller: the testbed mailbox each guest's agent
// polls (include/odl/wire/linkd.h, ODL_LINKD_MBOX_*), and what the run may
// do next. Once every host's agent is ready, the run stands still between
// requests from the control socket ("exec", "advance"): a command enters a
// guest at a point of simulated time that depends only on the run, never
// on when a person or a program typed it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace odl::model::linkd {

class det_control {
public:
    explicit det_control(unsigned hosts) : m_hosts(hosts) {}

    /// A mailbox register read by @host's agent (32 bits at most).
    std::uint32_t mbox_read(unsigned host, std::uint64_t off, unsigned size) const;
    /// A mailbox register written by @host's agent; "" or why it is refused.
    std::string mbox_write(unsigned host, std::uint64_t off, unsigned size, std::uint32_t value);

    /// Every host's agent said it is ready: from then the run goes only as asked.
    bool controlled() const;
    /// The run may take another window at model time @now_ps.
    bool may_run(std::uint64_t now_ps) const;
    /// The latest time the next window may reach (a request's end), or UINT64_MAX.
    std::uint64_t limit() const;

    /// Queues @cmd for @host's agent; the run goes on until its agent says
    /// it finished or @timeout_ps of model time passed. "" or why refused.
    std::string exec(unsigned host, std::uint64_t timeout_ps, const std::string& cmd, std::uint64_t now_ps);
    /// The run goes on for @ps of model time. "" or why refused.
    std::string advance(std::uint64_t ps, std::uint64_t now_ps);
    /// A request is waiting for its answer.
    bool busy() const { return m_req.has_value(); }
    /// The answer to the request once it is met at @now_ps (it is then over).
    std::optional<std::string> finished(std::uint64_t now_ps);
    /// @host left the run (its QEMU stopped): a command of its own still
    /// running is answered at once, as an error.
    void host_left(unsigned host);
    /// "0,1" style list of the hosts whose agent is ready (for "time").
    std::string ready_hosts() const;

private:
    struct mailbox {
        bool ready = false;
        bool gone = false;
        std::uint32_t seq = 0;       ///< the latest command given
        std::uint32_t done_seq = 0;  ///< the latest the agent finished
        std::uint32_t done_rc = 0;
        std::string cmd;
    };
    struct request {
        int host = -1;  ///< exec: whose command; advance: -1
        std::uint32_t seq = 0;
        std::uint64_t until_ps = 0;  ///< exec: its timeout; advance: the end
        std::uint64_t started_ps = 0;
    };
    unsigned m_hosts;
    std::vector<mailbox> m_box = std::vector<mailbox>(m_hosts);
    std::optional<request> m_req;
};

/// The event word of @event (what follows "cable " in a timed event:
/// "[N] WORD ..."), and whether the model knows it: odl-linkd --event and
/// the control request `at` both check before the run gets there.
std::string cable_event_word(const std::string& event);
bool known_cable_event(const std::string& event);

}  // namespace odl::model::linkd
