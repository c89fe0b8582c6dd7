// SPDX-License-Identifier: MIT
// The perf suite's phase executor. One loop drives bulk senders, bulk
// receivers and ping-pong on one device; every received byte is checked
// against the pattern of its message number, so loss, reordering and
// corruption all fail the run.
#include "perf_runner.h"

#include <time.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <memory>
#include <numeric>
#include <thread>

#include <fmt/format.h>

namespace odl::perf {
namespace {

using nlohmann::json;

constexpr uint32_t kTagReport = 0xC0DE0002;
constexpr uint32_t kTagData = 1;
constexpr uint32_t kTagPing = 2;
constexpr uint32_t kTagPingEnd = 3;
constexpr uint64_t kPatterns = 4;  ///< distinct payload patterns, by seq % 4

uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

/// Pattern k: a cheap deterministic byte sequence, cached up to the largest length asked.
const unsigned char* pattern(uint64_t k, uint64_t len) {
    static std::vector<unsigned char> cache[kPatterns];
    auto& c = cache[k];
    if (c.size() < len) {
        c.resize(len);
        uint64_t x = 0x9E3779B97F4A7C15ull * (k + 1);
        for (auto& b : c) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            b = static_cast<unsigned char>(x);
        }
    }
    return c.data();
}

std::string status_text(int st) { return fmt::format("{} ({})", odl_strerror(st), odl_last_error()); }

/// Posts or fails with the library's reason.
void check(int rc, const char* what) {
    if (rc != ODL_OK) throw perf_error(fmt::format("{}: {}", what, status_text(rc)));
}

json percentiles(std::vector<double> v) {
    if (v.empty()) return json::object();
    std::sort(v.begin(), v.end());
    auto at = [&](double q) { return v[std::min(v.size() - 1, size_t(std::ceil(q * double(v.size())) - 1))]; };
    const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
    double var = 0;
    for (double x : v) var += (x - mean) * (x - mean);
    // The whole distribution in 101 points (minimum, each percentile, maximum),
    // so a controller can plot it against the model (odl hil compare).
    json cdf = json::array();
    cdf.push_back(v.front());
    for (int q = 1; q <= 100; ++q) cdf.push_back(at(q / 100.0));
    return json{{"samples", v.size()}, {"min_us", v.front()}, {"mean_us", mean},
                {"stddev_us", std::sqrt(var / double(v.size()))}, {"p50_us", at(0.50)},
                {"p90_us", at(0.90)}, {"p99_us", at(0.99)}, {"p999_us", at(0.999)}, {"max_us", v.back()},
                {"cdf_us", std::move(cdf)}};
}

/// One phase as both ends see it (sent as JSON from client to server).
struct phase {
    std::string kind;            ///< "bulk", "ping", "end"
    uint64_t size = 0;           ///< bulk message bytes
    uint64_t count = 0;          ///< bulk messages per stream and direction
    uint32_t streams = 1;        ///< bulk streams from kBulkStream
    bool bidir = false;          ///< server sends bulk too
    uint32_t depth = 32;
    uint64_t ping_size = 0;      ///< 0: no ping-pong in this phase
    uint64_t ping_count = 0;     ///< client: pings to send (0: until bulk ends)
    uint64_t ping_warmup = 0;
    double interval_us = 0;      ///< client: gap between pings
    bool verify = true;          ///< receivers check payload bytes, not only lengths
};

json to_json(const phase& p) {
    return json{{"kind", p.kind}, {"size", p.size}, {"count", p.count}, {"streams", p.streams}, {"bidir", p.bidir},
                {"depth", p.depth}, {"ping_size", p.ping_size}, {"verify", p.verify}};
}

phase from_json(const json& j) {
    phase p;
    p.kind = j.at("kind").get<std::string>();
    p.size = j.at("size").get<uint64_t>();
    p.count = j.at("count").get<uint64_t>();
    p.streams = j.at("streams").get<uint32_t>();
    p.bidir = j.at("bidir").get<bool>();
    p.depth = j.at("depth").get<uint32_t>();
    p.ping_size = j.at("ping_size").get<uint64_t>();
    p.verify = j.value("verify", true);  // a client from before the option verifies
    if (p.streams < 1 || p.streams > kMaxBulkStreams || p.depth < 1 || p.depth > kMaxDepth || p.size > (1ull << 32))
        throw perf_error("client sent an impossible phase");
    return p;
}

/// Drives one phase on one end. Completion contexts encode (kind, stream, slot).
class executor {
public:
    executor(odl_dev* dev, uint64_t stall_ns, bool verify = true) : m_dev(dev), m_stall_ns(stall_ns), m_verify(verify) {}

    /// Bulk sender on @stream: @count messages of @size, @depth in flight.
    void add_sender(uint32_t stream, uint64_t size, uint64_t count, uint32_t depth) {
        auto s = std::make_unique<bulk>();
        s->stream = stream;
        s->size = size;
        s->count = count;
        s->depth = round_depth(depth);
        for (uint32_t i = 0; i < s->depth; ++i) {
            s->bufs.emplace_back(std::max<uint64_t>(size, 1));
            if (size) std::memcpy(s->bufs.back().data(), pattern(i % kPatterns, size), size);
        }
        m_senders.push_back(std::move(s));
    }
    /// Bulk receiver on @stream, checking every message.
    void add_receiver(uint32_t stream, uint64_t size, uint64_t count, uint32_t depth) {
        auto r = std::make_unique<bulk>();
        r->stream = stream;
        r->size = size;
        r->count = count;
        r->depth = round_depth(depth);
        for (uint32_t i = 0; i < r->depth; ++i) r->bufs.emplace_back(std::max<uint64_t>(size, 1));
        m_receivers.push_back(std::move(r));
    }
    /// Client side of ping-pong: @count pings (0: until the bulk senders finish).
    void set_pinger(uint64_t size, uint64_t count, uint64_t warmup, double interval_us) {
        m_ping = std::make_unique<pinger>();
        m_ping->size = size;
        m_ping->count = count;
        m_ping->warmup = warmup;
        m_ping->interval_ns = uint64_t(interval_us * 1000.0);
        m_ping->tx.resize(std::max<uint64_t>(size, 1));
        m_ping->rx.resize(std::max<uint64_t>(size, 1));
    }
    /// Server side of ping-pong: echo until the client's end marker.
    void set_echo(uint64_t size) {
        m_echo = std::make_unique<echoer>();
        m_echo->buf.resize(std::max<uint64_t>(size, 1));
    }

    void run();

    json sender_report() const { return report(m_senders); }
    json receiver_report() const { return report(m_receivers); }
    json ping_report() const {
        if (!m_ping) return json::object();
        json j = percentiles(m_ping->samples_us);
        // Jitter as RFC 3393's IP delay variation: mean |d(i) - d(i-1)|.
        const auto& v = m_ping->samples_us;
        double ipdv = 0;
        for (size_t i = 1; i < v.size(); ++i) ipdv += std::fabs(v[i] - v[i - 1]);
        j["ipdv_us"] = v.size() > 1 ? ipdv / double(v.size() - 1) : 0.0;
        return j;
    }
    uint64_t first_ns() const { return m_first_ns; }

private:
    struct bulk {
        uint32_t stream = 0;
        uint64_t size = 0;
        uint64_t count = 0;
        uint32_t depth = 0;
        std::vector<std::vector<unsigned char>> bufs;
        uint64_t posted = 0;
        uint64_t done = 0;
        uint64_t errors = 0;
        uint64_t first_ns = 0;
        uint64_t last_ns = 0;
        bool finished() const { return done == count; }
    };
    struct pinger {
        uint64_t size = 0, count = 0, warmup = 0, interval_ns = 0;
        std::vector<unsigned char> tx, rx;
        uint64_t seq = 0;  ///< pings completed
        bool in_flight = false;
        bool send_done = false, recv_done = false;
        bool end_sent = false, end_done = false;
        uint64_t t_send = 0, next_ns = 0;
        std::vector<double> samples_us;
    };
    struct echoer {
        std::vector<unsigned char> buf;
        bool recv_posted = false, send_in_flight = false, ended = false;
        uint64_t seq = 0;
    };
    enum kind : uint64_t { k_send = 1, k_recv = 2, k_ping_tx = 3, k_ping_rx = 4, k_ping_end = 5, k_echo_rx = 6, k_echo_tx = 7 };

    static uint32_t round_depth(uint32_t d) { return std::max<uint32_t>(kPatterns, (d + kPatterns - 1) / kPatterns * kPatterns); }
    static uint64_t ctx(kind k, uint64_t idx, uint64_t slot) { return k << 56 | idx << 32 | slot; }

    static json report(const std::vector<std::unique_ptr<bulk>>& v) {
        json a = json::array();
        for (const auto& b : v)
            a.push_back(json{{"stream", b->stream}, {"size", b->size}, {"messages", b->done},
                             {"errors", b->errors}, {"first_ns", b->first_ns}, {"last_ns", b->last_ns}});
        return a;
    }

    bool all_done() const {
        for (const auto& s : m_senders)
            if (!s->finished()) return false;
        for (const auto& r : m_receivers)
            if (!r->finished()) return false;
        if (m_ping && !m_ping->end_done) return false;
        if (m_echo && !(m_echo->ended && !m_echo->send_in_flight)) return false;
        return true;
    }

    void post_more(uint64_t now);
    void on_completion(const odl_completion& c, uint64_t now);

    odl_dev* m_dev;
    uint64_t m_stall_ns;
    bool m_verify;
    std::vector<std::unique_ptr<bulk>> m_senders, m_receivers;
    std::unique_ptr<pinger> m_ping;
    std::unique_ptr<echoer> m_echo;
    uint64_t m_first_ns = 0;
};

void executor::post_more(uint64_t now) {
    for (size_t i = 0; i < m_receivers.size(); ++i) {
        bulk& r = *m_receivers[i];
        while (r.posted < r.count && r.posted - r.done < r.depth) {
            const uint64_t slot = r.posted % r.depth;
            check(odl_post_recv(m_dev, r.stream, kTagData, r.bufs[slot].data(), r.size, nullptr, ctx(k_recv, i, slot)),
                  "post receive");
            ++r.posted;
        }
    }
    for (size_t i = 0; i < m_senders.size(); ++i) {
        bulk& s = *m_senders[i];
        while (s.posted < s.count && s.posted - s.done < s.depth) {
            const uint64_t slot = s.posted % s.depth;
            // Slot i always carries pattern i % 4; only the message number changes.
            if (s.size >= 8) std::memcpy(s.bufs[slot].data(), &s.posted, 8);
            check(odl_post_send(m_dev, s.stream, kTagData, s.bufs[slot].data(), s.size, nullptr, ctx(k_send, i, slot)),
                  "post send");
            ++s.posted;
        }
    }
    if (m_ping) {
        pinger& p = *m_ping;
        const bool bulk_running = std::any_of(m_senders.begin(), m_senders.end(), [](const auto& s) { return !s->finished(); });
        const bool more = p.count ? p.seq < p.count + p.warmup : bulk_running;
        if (!p.in_flight && more && now >= p.next_ns) {
            fill_pattern(p.tx.data(), p.size, p.seq);
            check(odl_post_recv(m_dev, kPingStream, kTagPing, p.rx.data(), p.size, nullptr, ctx(k_ping_rx, 0, 0)), "post pong receive");
            p.t_send = now_ns();
            check(odl_post_send(m_dev, kPingStream, kTagPing, p.tx.data(), p.size, nullptr, ctx(k_ping_tx, 0, 0)), "post ping");
            p.in_flight = true;
            p.send_done = p.recv_done = false;
            p.next_ns = p.t_send + p.interval_ns;
        } else if (!p.in_flight && !more && !p.end_sent) {
            check(odl_post_send(m_dev, kPingStream, kTagPingEnd, nullptr, 0, nullptr, ctx(k_ping_end, 0, 0)), "post ping end");
            p.end_sent = true;
        }
    }
    if (m_echo && !m_echo->recv_posted && !m_echo->send_in_flight && !m_echo->ended) {
        check(odl_post_recv(m_dev, kPingStream, ODL_TAG_ANY, m_echo->buf.data(), m_echo->buf.size(), nullptr,
                            ctx(k_echo_rx, 0, 0)),
              "post ping receive");
        m_echo->recv_posted = true;
    }
}

void executor::on_completion(const odl_completion& c, uint64_t now) {
    if (c.status != ODL_OK) {
        // A link failure's reason in words, which odl_poll() left as the
        // thread's last error.
        const bool link = c.status == ODL_ERR_PEER_LOST || c.status == ODL_ERR_PEER_CLOSED ||
                          c.status == ODL_ERR_IO || c.status == ODL_ERR_PROTO;
        const std::string why = link ? odl_last_error() : "";
        const std::string st = odl_strerror(c.status);
        throw perf_error(fmt::format("{} on stream {} failed: {}{}", c.op == ODL_OP_SEND ? "send" : "receive", c.stream,
                                     st, why.empty() || why == st ? "" : " (" + why + ")"));
    }
    const auto k = kind(c.ctx >> 56);
    const size_t idx = (c.ctx >> 32) & 0xffffff;
    const uint64_t slot = c.ctx & 0xffffffff;
    if (!m_first_ns) m_first_ns = now;
    switch (k) {
    case k_send: {
        bulk& s = *m_senders.at(idx);
        if (!s.first_ns) s.first_ns = now;
        s.last_ns = now;
        ++s.done;
        break;
    }
    case k_recv: {
        bulk& r = *m_receivers.at(idx);
        // Completions arrive in order per stream: message number = done.
        // Without verification only the length is checked (as iperf3 checks nothing).
        const bool ok = c.len == r.size && (!m_verify || check_pattern(r.bufs[slot].data(), r.size, r.done));
        if (!ok) ++r.errors;
        if (!r.first_ns) r.first_ns = now;
        r.last_ns = now;
        ++r.done;
        if (!ok)
            throw perf_error(fmt::format("stream {}: message {} corrupt ({} bytes, expected {})", r.stream, r.done - 1, c.len, r.size));
        break;
    }
    case k_ping_tx:
        m_ping->send_done = true;
        break;
    case k_ping_rx: {
        pinger& p = *m_ping;
        if (c.len != p.size || !check_pattern(p.rx.data(), p.size, p.seq))
            throw perf_error(fmt::format("pong {} corrupt ({} bytes, expected {})", p.seq, c.len, p.size));
        p.recv_done = true;
        if (p.seq >= p.warmup) p.samples_us.push_back(double(now - p.t_send) / 2000.0);  // one way = RTT / 2
        break;
    }
    case k_ping_end:
        m_ping->end_done = true;
        break;
    case k_echo_rx: {
        echoer& e = *m_echo;
        e.recv_posted = false;
        if (c.tag == kTagPingEnd) {
            e.ended = true;
            break;
        }
        if (c.len > e.buf.size()) throw perf_error("ping larger than announced");
        check(odl_post_send(m_dev, kPingStream, kTagPing, e.buf.data(), c.len, nullptr, ctx(k_echo_tx, 0, 0)), "post pong");
        e.send_in_flight = true;
        ++e.seq;
        break;
    }
    case k_echo_tx:
        m_echo->send_in_flight = false;
        break;
    default:
        throw perf_error("completion with an unknown context");
    }
    if (m_ping && m_ping->in_flight && m_ping->send_done && m_ping->recv_done) {
        m_ping->in_flight = false;
        ++m_ping->seq;
    }
}

void executor::run() {
    odl_completion comps[64];
    uint64_t last_progress = now_ns();
    post_more(last_progress);
    uint64_t idle = 0;
    while (!all_done()) {
        size_t n = 0;
        check(odl_poll(m_dev, comps, 64, &n), "poll");
        if (n) {
            const uint64_t now = now_ns();
            for (size_t i = 0; i < n; ++i) on_completion(comps[i], now);
            last_progress = now;
            idle = 0;
            post_more(now);
            continue;
        }
        // Idle. The clock and the link state are looked at only every 256
        // empty polls (or when a paced ping waits): on some VMs a clock read
        // costs a microsecond, and this loop is the latency path.
        const bool paced = m_ping && m_ping->interval_ns && !m_ping->in_flight;
        if (!paced && (++idle & 255) != 0) continue;
        const uint64_t now = now_ns();
        if (paced) post_more(now);
        odl_dev_info info{};
        info.struct_size = sizeof(info);
        // Catches a link that failed while nothing was posted.
        if (odl_query(m_dev, &info) == ODL_OK && info.link_state != ODL_LINK_UP) {
            size_t m = 0;
            odl_poll(m_dev, comps, 64, &m);
            for (size_t i = 0; i < m; ++i) on_completion(comps[i], now_ns());
            throw perf_error(info.link_state == ODL_LINK_PEER_CLOSED ? "peer closed the link" : "peer lost");
        }
        if (now - last_progress > m_stall_ns)
            throw perf_error(fmt::format("no progress for {} ms", m_stall_ns / 1000000));
    }
}

/// Sends a JSON control message and waits for its completion.
void send_ctrl(odl_dev* dev, uint32_t tag, const json& j, uint64_t stall_ns) {
    const std::string s = j.dump();
    check(odl_post_send(dev, kCtrlStream, tag, s.data(), s.size(), nullptr, 0), "post control message");
    odl_completion c;
    size_t n = 0;
    const int rc = odl_wait(dev, &c, 1, &n, stall_ns);
    if (rc != ODL_OK) throw perf_error(fmt::format("sending control message: {}", status_text(rc)));
    if (c.status != ODL_OK) throw perf_error(fmt::format("sending control message: {}", odl_strerror(c.status)));
}

json recv_ctrl(odl_dev* dev, uint32_t tag, uint64_t timeout_ns) {
    std::string buf(kCtrlCap, '\0');
    check(odl_post_recv(dev, kCtrlStream, tag, buf.data(), buf.size(), nullptr, 0), "post control receive");
    odl_completion c;
    size_t n = 0;
    const int rc = odl_wait(dev, &c, 1, &n, timeout_ns);
    if (rc == ODL_ERR_PEER_CLOSED) return json{{"kind", "end"}};
    if (rc != ODL_OK) throw perf_error(fmt::format("waiting for the peer: {}", status_text(rc)));
    if (c.status == ODL_ERR_PEER_CLOSED) return json{{"kind", "end"}};
    if (c.status != ODL_OK) throw perf_error(fmt::format("control message: {}", odl_strerror(c.status)));
    return parse_ctrl(buf.data(), std::min<uint64_t>(c.len, kCtrlCap));
}

/// Client side of one phase; returns the server's report merged with ours.
json client_phase(odl_dev* dev, const phase& p, uint64_t stall_ns) {
    send_ctrl(dev, kTagPhase, to_json(p), stall_ns);
    executor ex(dev, stall_ns, p.verify);
    if (p.kind == "bulk") {
        for (uint32_t i = 0; i < p.streams; ++i) {
            ex.add_sender(kBulkStream + i, p.size, p.count, p.depth);
            if (p.bidir) ex.add_receiver(kBulkStream + i, p.size, p.count, p.depth);
        }
    }
    if (p.ping_size || p.kind == "ping") ex.set_pinger(p.ping_size, p.ping_count, p.ping_warmup, p.interval_us);
    const uint64_t t0 = now_ns();
    ex.run();
    json server = recv_ctrl(dev, kTagReport, stall_ns);
    const uint64_t t1 = now_ns();
    if (server.value("kind", "") == "end") throw perf_error("peer closed the link during the run");
    if (server.contains("error")) throw perf_error("server: " + server["error"].get<std::string>());
    return json{{"elapsed_s", double(t1 - t0) / 1e9}, {"sent", ex.sender_report()}, {"received", ex.receiver_report()},
                {"latency", ex.ping_report()}, {"server", server}};
}

}  // namespace

void fill_pattern(unsigned char* buf, uint64_t len, uint64_t seq) {
    if (len == 0) return;
    std::memcpy(buf, pattern(seq % kPatterns, len), len);
    if (len >= 8) std::memcpy(buf, &seq, 8);
}

bool check_pattern(const unsigned char* buf, uint64_t len, uint64_t seq) {
    if (len == 0) return true;
    if (len >= 8) {
        uint64_t got;
        std::memcpy(&got, buf, 8);
        if (got != seq) return false;
        return std::memcmp(buf + 8, pattern(seq % kPatterns, len) + 8, len - 8) == 0;
    }
    return std::memcmp(buf, pattern(seq % kPatterns, len), len) == 0;
}

nlohmann::json parse_ctrl(const char* buf, size_t len) {
    try {
        return json::parse(buf, buf + len);
    } catch (const json::exception& e) {
        throw perf_error(fmt::format("malformed control message from the peer: {}", e.what()));
    }
}

void run_server(odl_dev* dev, uint64_t stall_timeout_ms, const nlohmann::json* first) {
    const uint64_t stall_ns = stall_timeout_ms * 1000000ull;
    for (bool given = first != nullptr;; given = false) {
        // Between phases the client may think as long as it likes: wait long.
        const json j = given ? *first : recv_ctrl(dev, kTagPhase, 3600ull * 1000000000ull);
        const phase p = from_json(j.contains("size") ? j : json{{"kind", "end"}, {"size", 0}, {"count", 0},
                                                                  {"streams", 1}, {"bidir", false}, {"depth", 1},
                                                                  {"ping_size", 0}});
        if (p.kind == "end") return;
        executor ex(dev, stall_ns, p.verify);
        if (p.kind == "bulk") {
            for (uint32_t i = 0; i < p.streams; ++i) {
                ex.add_receiver(kBulkStream + i, p.size, p.count, p.depth);
                if (p.bidir) ex.add_sender(kBulkStream + i, p.size, p.count, p.depth);
            }
        }
        if (p.ping_size || p.kind == "ping") ex.set_echo(p.ping_size);
        json report;
        try {
            ex.run();
            report = json{{"received", ex.receiver_report()}, {"sent", ex.sender_report()}};
        } catch (const perf_error& e) {
            // Tell the client why before giving up, if the link still works.
            report = json{{"error", e.what()}};
            try {
                send_ctrl(dev, kTagReport, report, stall_ns);
            } catch (const perf_error&) {
            }
            throw;
        }
        send_ctrl(dev, kTagReport, report, stall_ns);
    }
}

nlohmann::json run_client(odl_dev* dev, const options& opt, const progress_fn& progress) {
    const uint64_t stall_ns = opt.stall_timeout_ms * 1000000ull;
    json results = json::array();
    auto bulk_phase = [&](uint64_t size, uint32_t streams, bool bidir) {
        phase p;
        p.kind = "bulk";
        p.size = size;
        p.streams = streams;
        p.bidir = bidir;
        p.depth = opt.depth;
        p.verify = opt.verify;
        p.count = std::clamp<uint64_t>(opt.bytes / std::max<uint64_t>(size, 1) / streams, 16, opt.max_msgs);
        return p;
    };
    auto bandwidth_row = [](const json& r, uint64_t size) {
        uint64_t bytes = 0, msgs = 0;
        for (const auto& s : r["sent"]) bytes += s["messages"].get<uint64_t>() * size, msgs += s["messages"].get<uint64_t>();
        for (const auto& s : r["received"]) bytes += s["messages"].get<uint64_t>() * size, msgs += s["messages"].get<uint64_t>();
        const double secs = r["elapsed_s"].get<double>();
        return json{{"size", size}, {"messages", msgs}, {"bytes", bytes}, {"seconds", secs},
                    {"gbps", double(bytes) * 8 / secs / 1e9}, {"mib_s", double(bytes) / secs / (1 << 20)},
                    {"msgs_per_s", double(msgs) / secs}};
    };

    size_t step = 0;
    const size_t steps = opt.test == "latency-load" || opt.test == "mimo" ? 1 + (opt.test == "latency-load") : opt.sizes.size();
    auto tell = [&](const std::string& what) { progress(fmt::format("[{}/{}] {}", ++step, steps, what)); };

    if (opt.test == "bandwidth") {
        for (uint64_t size : opt.sizes) {
            tell(fmt::format("bandwidth {} B{}", size, opt.bidir ? " bidirectional" : ""));
            const json r = client_phase(dev, bulk_phase(size, 1, opt.bidir), stall_ns);
            results.push_back(bandwidth_row(r, size));
        }
    } else if (opt.test == "latency" || opt.test == "jitter") {
        for (uint64_t size : opt.sizes) {
            tell(fmt::format("{} {} B", opt.test, size));
            phase p;
            p.kind = "ping";
            p.ping_size = size;
            p.ping_count = opt.iterations;
            p.ping_warmup = opt.warmup;
            p.interval_us = opt.test == "jitter" ? opt.interval_us : 0;
            const json r = client_phase(dev, p, stall_ns);
            json row = r["latency"];
            row["size"] = size;
            results.push_back(row);
        }
    } else if (opt.test == "latency-load") {
        const uint64_t ping = opt.sizes.empty() ? 64 : opt.sizes.front();
        tell(fmt::format("latency {} B, idle", ping));
        phase idle;
        idle.kind = "ping";
        idle.ping_size = ping;
        idle.ping_count = opt.iterations;
        idle.ping_warmup = opt.warmup;
        const json ri = client_phase(dev, idle, stall_ns);
        tell(fmt::format("latency {} B under a {} B bulk stream", ping, opt.load_size));
        phase load = bulk_phase(opt.load_size, 1, false);
        load.ping_size = ping;
        load.ping_count = 0;  // ping for as long as the bulk stream runs
        const json rl = client_phase(dev, load, stall_ns);
        json row_idle = ri["latency"], row_load = rl["latency"];
        row_idle["load"] = "idle";
        row_load["load"] = "bulk";
        row_load["bulk"] = bandwidth_row(rl, opt.load_size);
        results.push_back(row_idle);
        results.push_back(row_load);
    } else if (opt.test == "mimo") {
        const uint64_t size = opt.sizes.empty() ? (1 << 20) : opt.sizes.front();
        tell(fmt::format("{} streams of {} B", opt.streams, size));
        const json r = client_phase(dev, bulk_phase(size, opt.streams, false), stall_ns);
        json row = bandwidth_row(r, size);
        json per = json::array();
        const double secs = r["elapsed_s"].get<double>();
        for (const auto& s : r["sent"]) {
            const double bytes = double(s["messages"].get<uint64_t>() * size);
            per.push_back(json{{"stream", s["stream"]}, {"messages", s["messages"]}, {"gbps", bytes * 8 / secs / 1e9}});
        }
        row["streams"] = per;
        results.push_back(row);
    } else {
        throw perf_error(fmt::format("unknown test '{}' (have: bandwidth, latency, jitter, latency-load, mimo)", opt.test));
    }
    phase end;
    end.kind = "end";
    send_ctrl(dev, kTagPhase, to_json(end), stall_ns);
    return results;
}

}  // namespace odl::perf
