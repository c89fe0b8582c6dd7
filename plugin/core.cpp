// SPDX-License-Identifier: MIT
// The plugin core: devices from libodl, non-blocking listen/connect/accept
// with the handshake state in NCCL's 128-byte handle, tagged and grouped
// receives, request limits, statistics.
#include "core.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "handle.h"
#include "link.h"
#include "log.h"
#include "stats.h"

namespace odl::plugin {
namespace {

/// How long connect waits for the rest of a device's lanes to come up.
constexpr uint64_t kLaneGraceNs = 2'000'000'000ull;

uint64_t now_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

/// One entry of ODL_NCCL_DEVICES: backend:first[-last], one NCCL device
/// whose lanes are libodl devices first..last.
struct dev_spec {
    std::string backend;
    uint32_t first, count;
};

/// An NCCL device: one or more lanes (links) to the same peer.
struct nccl_device {
    std::string name;          ///< "loopback0" or "loopback0-7"
    std::vector<link*> lanes;  ///< owned by state::links
};

struct state {
    std::mutex mu;  ///< init/finalize; links are fixed in between
    int refs = 0;
    std::vector<std::unique_ptr<link>> links;  ///< every lane of every device
    std::vector<nccl_device> devices;
    struct lane_spec {
        std::string backend;
        uint32_t index;
        int dev;
    };
    std::vector<lane_spec> wanted;  ///< how to reopen each of @links
    pid_t owner = 0;                                       ///< process that opened the links
    std::string identity;
    stats_mapping stats;
    uint64_t connect_timeout_ns = 120ull * 1000000000ull;

    std::mutex pending_mu;  ///< taken after a link's lock, never before
    std::deque<pending_connect> pending;
    std::unordered_set<uint64_t> listeners;
    std::mt19937_64 rng{std::random_device{}()};

    /// v8-v10 have no finalize: the links go when the library is unloaded
    /// (or the process exits), and their threads must stop before the
    /// statistics mapping they write to goes.
    ~state() {
        devices.clear();
        links.clear();
    }
};

state& g() {
    static state s;
    return s;
}

std::string make_identity() {
    char host[64] = {};
    gethostname(host, sizeof(host) - 1);
    host[20] = '\0';  // identity must fit libodl's 64-byte node name
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%s/%d/%08x", host, int(getpid()), unsigned(g().rng()));
    return buf;
}

constexpr const char* kDefaultDevices = "loopback:0-7";

/// ODL_NCCL_DEVICES="backend:index[-last],..." (default kDefaultDevices).
/// A range is one NCCL device striped over several libodl devices (lanes).
bool parse_devices(std::vector<dev_spec>& out, std::string& why) {
    const char* env = std::getenv("ODL_NCCL_DEVICES");
    std::stringstream ss(env && *env ? env : kDefaultDevices);
    std::string item;
    size_t lanes = 0;
    while (std::getline(ss, item, ',')) {
        const auto colon = item.find(':');
        char* end = nullptr;
        const char* num = colon == std::string::npos ? "" : item.c_str() + colon + 1;
        const unsigned long first = std::strtoul(num, &end, 10);
        unsigned long last = first;
        bool ok = colon != std::string::npos && colon != 0 && end != num && first <= 1023;
        if (ok && *end == '-') {
            const char* num2 = end + 1;
            last = std::strtoul(num2, &end, 10);
            ok = end != num2 && last >= first && last <= 1023;
        }
        if (!ok || *end) {
            why = "ODL_NCCL_DEVICES entry '" + item + "' is not backend:index or backend:first-last";
            return false;
        }
        out.push_back(dev_spec{item.substr(0, colon), uint32_t(first), uint32_t(last - first + 1)});
        lanes += last - first + 1;
    }
    if (out.empty() || lanes > kStatsMaxLinks) {
        why = "ODL_NCCL_DEVICES names " + std::to_string(lanes) + " libodl devices (1-" +
              std::to_string(kStatsMaxLinks) + " allowed)";
        return false;
    }
    return true;
}

ncclResult_t from_odl(int st) {
    switch (st) {
    case ODL_OK: return ncclSuccess;
    case ODL_ERR_INVAL:
    case ODL_ERR_TOO_BIG:
    case ODL_ERR_TRUNCATED: return ncclInternalError;
    case ODL_ERR_NO_BACKEND:
    case ODL_ERR_NO_DEVICE:
    case ODL_ERR_NOT_SUPPORTED: return ncclInvalidUsage;
    default: return ncclSystemError;
    }
}

nccl_device* device_at(int dev) {
    auto& s = g();
    return dev >= 0 && size_t(dev) < s.devices.size() ? &s.devices[size_t(dev)] : nullptr;
}

comm* as_comm(void* p, uint32_t magic) {
    auto* c = static_cast<comm*>(p);
    return c && c->magic == magic ? c : nullptr;
}

comm* as_any_comm(void* p) {
    auto* c = static_cast<comm*>(p);
    return c && (c->magic == kSendMagic || c->magic == kRecvMagic) ? c : nullptr;
}

request* take_request(comm* c) {
    const size_t n = c->reqs.size();
    for (size_t k = 0; k < n; ++k) {
        const size_t i = (c->next_req + k) % n;
        request& r = c->reqs[i];
        if (r.in_use) continue;
        r.reset(c);
        c->next_req = (i + 1) % n;
        stat_add(c->ln->stats().inflight, uint64_t(1));
        return &r;
    }
    return nullptr;
}

/// Resolves an mhandle to libodl's region; false if it is not ours.
bool mr_of(void* mhandle, odl_mr*& mr) {
    mr = nullptr;
    if (!mhandle) return true;
    auto* m = static_cast<mem_reg*>(mhandle);
    if (m->magic != kMrMagic) return false;
    mr = m->mr;
    return true;
}

}  // namespace

bool enqueue_connect(const pending_connect& p) {
    auto& s = g();
    std::lock_guard<std::mutex> lk(s.pending_mu);
    if (s.listeners.count(p.listen_id)) {
        s.pending.push_back(p);
        return true;
    }
    ODL_INFO("%s: CONNECT for a listener that is gone; its stream %u is dropped", p.ln->name().c_str(), p.stream);
    return false;
}

namespace {

/// A forked child inherits the parent's links; closing them would say
/// goodbye on the parent's behalf, so the child forgets them instead.
void forget_after_fork(state& s) {
    if (s.owner == getpid() || s.refs == 0) return;
    // Their progress threads did not survive fork(); the objects are leaked.
    for (auto& ln : s.links) (void)ln.release();
    s.links.clear();
    s.devices.clear();
    s.stats.abandon();
    std::lock_guard<std::mutex> lk(s.pending_mu);
    s.pending.clear();
    s.listeners.clear();
    s.refs = 0;
}

/// v6-v10 init once per load; NCCL >= 2.28 dlclose()s us, but the library
/// may stay mapped (libodl's thread-local storage pins it), so a later
/// init finds the old state: links whose peer went away are opened afresh.
void reopen_failed_links(state& s) {
    for (size_t i = 0; i < s.links.size(); ++i) {
        if (!s.links[i]->failed()) continue;
        auto& st = s.stats.file().links[i];
        link* old = s.links[i].get();
        s.links[i].reset();
        st = stats_link{};
        const auto& w = s.wanted[i];
        try {
            s.links[i] = std::make_unique<link>(w.dev, w.backend, w.index, s.identity, &st);
        } catch (const std::exception& e) {
            // Device numbers must stay stable: start over with a full init.
            ODL_WARN("cannot reopen %s", e.what());
            s.links.clear();
            s.devices.clear();
            s.refs = 0;
            return;
        }
        for (auto& ln : s.devices[size_t(w.dev)].lanes)
            if (ln == old) ln = s.links[i].get();
    }
}

}  // namespace

ncclResult_t core_init(void** ctx, uint64_t comm_id, ncclDebugLogger_t log) {
    set_logger(log);
    auto& s = g();
    std::lock_guard<std::mutex> lk(s.mu);
    forget_after_fork(s);
    if (s.refs > 0 && !ctx) reopen_failed_links(s);
    if (s.refs > 0 && !s.links.empty()) {
        ++s.refs;
        if (ctx) *ctx = &s;
        return ncclSuccess;
    }
    std::vector<dev_spec> want;
    std::string why;
    if (!parse_devices(want, why)) {
        ODL_WARN("%s", why.c_str());
        return ncclInvalidUsage;
    }
    if (const char* t = std::getenv("ODL_NCCL_CONNECT_TIMEOUT_S"); t && std::atof(t) > 0)
        s.connect_timeout_ns = uint64_t(std::atof(t) * 1e9);
    s.owner = getpid();
    s.identity = make_identity();
    if (!s.stats.open(s.identity, why)) ODL_WARN("statistics disabled: %s", why.c_str());
    s.links.clear();
    s.devices.clear();
    s.wanted.clear();
    for (const auto& spec : want) {
        const int dev = int(s.devices.size());
        nccl_device d;
        d.name = spec.backend + std::to_string(spec.first);
        if (spec.count > 1) d.name += "-" + std::to_string(spec.first + spec.count - 1);
        for (uint32_t k = 0; k < spec.count; ++k) {
            const size_t slot = s.links.size();
            try {
                s.links.push_back(std::make_unique<link>(dev, spec.backend, spec.first + k, s.identity,
                                                         &s.stats.file().links[slot]));
            } catch (const std::exception& e) {
                ODL_WARN("cannot open %s", e.what());
                continue;
            }
            s.wanted.push_back(state::lane_spec{spec.backend, spec.first + k, dev});
            d.lanes.push_back(s.links.back().get());
        }
        if (d.lanes.empty()) continue;
        s.devices.push_back(std::move(d));
    }
    if (s.links.empty()) {
        s.stats.close();
        ODL_WARN("no usable device (ODL_NCCL_DEVICES)");
        return ncclSystemError;
    }
    stat_store(s.stats.file().nlinks, uint32_t(s.links.size()));
    ++s.refs;
    if (ctx) *ctx = &s;
    ODL_INFO("libodl %s, %zu device(s) over %zu lane(s) with a progress thread each, process %s, comm 0x%llx",
             odl_version(), s.devices.size(), s.links.size(), s.identity.c_str(),
             static_cast<unsigned long long>(comm_id));
    return ncclSuccess;
}

ncclResult_t core_finalize(void* ctx) {
    auto& s = g();
    std::lock_guard<std::mutex> lk(s.mu);
    if (ctx != &s || s.refs <= 0) return ncclInternalError;
    if (--s.refs > 0) return ncclSuccess;
    s.devices.clear();
    s.links.clear();  // joins every progress thread
    {
        std::lock_guard<std::mutex> plk(s.pending_mu);
        s.pending.clear();
        s.listeners.clear();
    }
    s.stats.close();
    return ncclSuccess;
}

ncclResult_t core_devices(int* ndev) {
    if (!ndev) return ncclInternalError;
    *ndev = int(g().devices.size());
    return ncclSuccess;
}

/// NCCL's speed for a device whose backend knows no rate: a TB5 port.
constexpr int kDefaultSpeedMbps = 80000;

ncclResult_t core_get_properties(int dev, ncclNetProperties_v12_t* props) {
    nccl_device* d = device_at(dev);
    if (!d || !props) return ncclInternalError;
    std::memset(props, 0, sizeof(*props));
    props->name = const_cast<char*>(d->name.c_str());  // unique per device: NCCL's topology key
    props->pciPath = nullptr;                              // attach to the first CPU
    props->guid = 0x4f444c0000000000ull | uint64_t(dev);
    props->ptrSupport = NCCL_PTR_HOST;
    // The links' trained transmit rate (Mb/s), summed over the device's
    // lanes; a TB5 port's 80 Gb/s where a backend does not know it.
    uint64_t speed = 0;
    for (const link* l : d->lanes) speed += l->rate_mbps();
    props->speed = speed ? int(std::min<uint64_t>(speed, INT32_MAX)) : kDefaultSpeedMbps;
    props->port = 1;
    props->maxComms = int((kStreams - 1) * d->lanes.size());
    props->maxRecvs = kMaxRecvs;
    props->netDeviceType = NCCL_NET_DEVICE_HOST;
    props->vProps.ndevs = 1;
    props->vProps.devs[0] = dev;
    props->maxP2pBytes = props->maxCollBytes = 1ull << 30;
    props->maxMultiRequestSize = 1;
    props->railId = props->planeId = NCCL_NET_ID_UNDEF;
    return ncclSuccess;
}

ncclResult_t core_listen(int dev, void* h, void** out) {
    if (!device_at(dev) || !h || !out) return ncclInternalError;
    auto& s = g();
    auto lc = std::make_unique<listen_comm>();
    lc->dev = dev;
    {
        std::lock_guard<std::mutex> lk(s.pending_mu);
        do {
            lc->id = s.rng();
        } while (lc->id == 0 || s.listeners.count(lc->id));
        s.listeners.insert(lc->id);
    }
    write_handle(h, lc->id, dev, s.identity);
    *out = lc.release();
    return ncclSuccess;
}

ncclResult_t core_connect(int dev, void* h, void** send_comm, ncclNetDeviceHandle_v12_t** dev_comm) {
    if (!device_at(dev) || !h || !send_comm) return ncclInternalError;
    *send_comm = nullptr;
    if (dev_comm) *dev_comm = nullptr;
    const uint64_t now = now_ns();
    handle hd;
    if (const char* why = read_handle(h, now, hd)) {
        ODL_WARN("connect: a bad handle: %s", why);
        return ncclInternalError;
    }
    auto& s = g();
    if (s.identity == hd.identity) {
        ODL_WARN("connect: the listener is this process; ODL links only reach other processes");
        return ncclSystemError;
    }
    if (hd.tries++ == 0) hd.connect_start_ns = now;
    save_connect_state(h, hd);
    // Mesh: the links whose peer is the listener's process, whatever @dev
    // NCCL picked; @dev's lanes win over other devices' links to that peer.
    // Among them the lane with the fewest send comms, so NCCL's channels
    // spread over the lanes (and their progress threads).
    link* pick = nullptr;
    bool pick_pref = false;
    bool any_connecting = false, pref_connecting = false;
    for (auto& ln : s.links) {
        const bool pref = ln->index() == dev;
        if (!ln->up()) {
            const bool connecting = !ln->failed();
            any_connecting |= connecting;
            pref_connecting |= connecting && pref;
            continue;
        }
        if (ln->peer() != hd.identity) continue;
        if (!pick || (pref && !pick_pref) || (pref == pick_pref && ln->send_comms() < pick->send_comms())) {
            pick = ln.get();
            pick_pref = pref;
        }
    }
    // Lanes come up within milliseconds of each other: give the rest of
    // @dev's lanes a moment so the first connections do not all land on one.
    if (pick && pick_pref && pref_connecting && now - hd.connect_start_ns < kLaneGraceNs) pick = nullptr;
    if (!pick) {
        if (now - hd.connect_start_ns > s.connect_timeout_ns) {
            ODL_WARN("connect: no link reaches %s after %.0f s (%s)", hd.identity,
                     double(now - hd.connect_start_ns) / 1e9,
                     any_connecting ? "a link is still waiting for its peer" : "every link has another peer");
            return ncclSystemError;
        }
        return ncclSuccess;  // not yet: NCCL calls again
    }
    std::string why;
    comm* c = pick->open_send(hd.listen_id, why);
    if (!c) {
        ODL_WARN("connect: %s", why.c_str());
        return ncclSystemError;
    }
    ODL_INFO("connect: %s stream %u to listener %016llx of %s", pick->name().c_str(), c->stream,
             static_cast<unsigned long long>(hd.listen_id), hd.identity);
    *send_comm = c;
    return ncclSuccess;
}

ncclResult_t core_accept(void* lcomm, void** recv_comm, ncclNetDeviceHandle_v12_t** dev_comm) {
    auto* lc = static_cast<listen_comm*>(lcomm);
    if (!lc || lc->magic != kListenMagic || !recv_comm) return ncclInternalError;
    *recv_comm = nullptr;
    if (dev_comm) *dev_comm = nullptr;
    auto& s = g();
    pending_connect p{};
    {
        std::lock_guard<std::mutex> lk(s.pending_mu);
        auto it = s.pending.begin();
        while (it != s.pending.end() && it->listen_id != lc->id) ++it;
        if (it == s.pending.end()) return ncclSuccess;  // not yet: NCCL calls again
        p = *it;
        s.pending.erase(it);
    }
    *recv_comm = p.ln->open_recv(p.stream, p.gen);
    ODL_INFO("accept: %s stream %u from %s", p.ln->name().c_str(), p.stream, p.ln->peer().c_str());
    return ncclSuccess;
}

ncclResult_t core_reg_mr(void* cm, void* data, size_t size, int type, void** mhandle) {
    comm* c = as_any_comm(cm);
    if (!c || !mhandle || (!data && size)) return ncclInternalError;
    if (type != NCCL_PTR_HOST) {
        ODL_WARN("regMr: memory type %d; this plugin takes host memory only", type);
        return ncclInternalError;
    }
    auto m = std::make_unique<mem_reg>();
    m->owner = c;
    if (size) {
        int rc = ODL_OK;
        std::string err;
        link* ln = c->ln;
        ln->call([&] {  // the device belongs to its progress thread
            rc = odl_reg_mr(ln->dev(), data, size, &m->mr);
            if (rc != ODL_OK) err = odl_last_error();
        });
        if (rc != ODL_OK) {
            ODL_WARN("regMr %p+%zu: %s", data, size, err.c_str());
            return ncclSystemError;
        }
    }
    *mhandle = m.release();
    return ncclSuccess;
}

ncclResult_t core_reg_mr_dmabuf(void*, void*, size_t, int, uint64_t, int, void**) {
    ODL_WARN("regMrDmaBuf: not supported (ptrSupport is host only)");
    return ncclInternalError;
}

ncclResult_t core_dereg_mr(void* cm, void* mhandle) {
    comm* c = as_any_comm(cm);
    auto* m = static_cast<mem_reg*>(mhandle);
    if (!c || !m || m->magic != kMrMagic) return ncclInternalError;
    if (m->mr) {
        link* ln = m->owner->ln;
        odl_mr* mr = m->mr;
        ln->call([ln, mr] { odl_dereg_mr(ln->dev(), mr); });
    }
    m->magic = kDeadMagic;
    delete m;
    return ncclSuccess;
}

ncclResult_t core_isend(void* scomm, void* data, size_t size, int tag, void* mhandle, void*, void** request_out) {
    comm* c = as_comm(scomm, kSendMagic);
    odl_mr* mr = nullptr;
    if (!c || !request_out || (!data && size) || !mr_of(mhandle, mr)) return ncclInternalError;
    link* ln = c->ln;
    *request_out = nullptr;
    if (const int st = c->status.load(std::memory_order_acquire); st != ODL_OK) {
        ODL_WARN("isend on %s stream %u: %s", ln->name().c_str(), c->stream, odl_strerror(st));
        return from_odl(st);
    }
    if (ln->peer_max_msg() && size > ln->peer_max_msg()) {
        ODL_WARN("isend of %zu bytes: above the peer's limit %llu", size,
                 static_cast<unsigned long long>(ln->peer_max_msg()));
        return ncclInternalError;
    }
    request* r = take_request(c);
    if (!r) return ncclSuccess;  // request limit: NCCL retries later
    r->node.kind = op::kSend;
    r->is_send = true;
    r->n = 1;
    r->data[0] = data;
    r->cap[0] = size;
    r->tag[0] = tag_for(c->gen, tag);
    r->mr[0] = mr;
    r->pending.store(1, std::memory_order_relaxed);
    ln->submit(r);  // posted by the lane's progress thread
    *request_out = r;
    return ncclSuccess;
}

ncclResult_t core_irecv(void* rcomm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void**,
                        void** request_out) {
    comm* c = as_comm(rcomm, kRecvMagic);
    if (!c || !request_out || n < 1 || n > kMaxRecvs || !data || !sizes || !tags) return ncclInternalError;
    odl_mr* mrs[kMaxRecvs] = {};
    for (int i = 0; i < n; ++i)
        if ((!data[i] && sizes[i]) || !mr_of(mhandles ? mhandles[i] : nullptr, mrs[i])) return ncclInternalError;
    link* ln = c->ln;
    *request_out = nullptr;  // also clears NCCL_NET_OPTIONAL_RECV_COMPLETION
    if (const int st = c->status.load(std::memory_order_acquire); st != ODL_OK) return from_odl(st);
    request* r = take_request(c);
    if (!r) return ncclSuccess;
    r->node.kind = op::kRecv;
    r->n = n;
    for (int i = 0; i < n; ++i) {
        r->data[i] = data[i];
        r->cap[i] = sizes[i];
        r->tag[i] = tag_for(c->gen, tags[i]);
        r->mr[i] = mrs[i];
    }
    r->pending.store(n, std::memory_order_relaxed);
    ln->submit(r);
    *request_out = r;
    return ncclSuccess;
}

ncclResult_t core_iflush(void* rcomm, int, void**, int*, void**, void** request_out) {
    if (!as_comm(rcomm, kRecvMagic) || !request_out) return ncclInternalError;
    *request_out = nullptr;  // host memory: nothing to flush
    return ncclSuccess;
}

ncclResult_t core_test(void* req, int* done, int* sizes) {
    auto* r = static_cast<request*>(req);
    if (!r || !done || r->magic != kReqMagic || !r->in_use) return ncclInternalError;
    comm* c = r->owner;
    link* ln = c->ln;
    if (r->pending.load(std::memory_order_acquire) > 0) {  // the progress thread completes it
        *done = 0;
        return ncclSuccess;
    }
    *done = 1;
    auto& st = ln->stats();
    uint64_t bytes = 0;
    for (int i = 0; i < r->n; ++i) {
        bytes += r->sizes[i];
        if (sizes) sizes[i] = int(std::min<uint64_t>(r->sizes[i], INT_MAX));
    }
    const int status = r->status;
    r->in_use = false;
    r->magic = 0;
    stat_add(st.inflight, uint64_t(-1));
    if (status != ODL_OK) {
        stat_add(st.errors, uint64_t(1));
        ODL_WARN("%s on %s stream %u: %s", r->is_send ? "send" : "receive", ln->name().c_str(), c->stream,
                 status == ODL_ERR_TRUNCATED ? "message longer than the receive buffer" : odl_strerror(status));
        return from_odl(status);
    }
    stat_add(r->is_send ? st.tx_msgs : st.rx_msgs, uint64_t(r->n));
    stat_add(r->is_send ? st.tx_bytes : st.rx_bytes, bytes);
    return ncclSuccess;
}

ncclResult_t core_close_send(void* scomm) {
    comm* c = as_comm(scomm, kSendMagic);
    if (!c) return ncclInternalError;
    c->ln->close_comm(c);
    return ncclSuccess;
}

ncclResult_t core_close_recv(void* rcomm) {
    comm* c = as_comm(rcomm, kRecvMagic);
    if (!c) return ncclInternalError;
    c->ln->close_comm(c);
    return ncclSuccess;
}

ncclResult_t core_close_listen(void* lcomm) {
    auto* lc = static_cast<listen_comm*>(lcomm);
    if (!lc || lc->magic != kListenMagic) return ncclInternalError;
    auto& s = g();
    std::vector<pending_connect> unaccepted;
    {
        std::lock_guard<std::mutex> lk(s.pending_mu);
        s.listeners.erase(lc->id);
        for (auto it = s.pending.begin(); it != s.pending.end();) {
            if (it->listen_id != lc->id) {
                ++it;
                continue;
            }
            unaccepted.push_back(*it);
            it = s.pending.erase(it);
        }
    }
    // Nobody will receive on connections never accepted: their senders
    // must not wait for credit forever.
    for (const auto& p : unaccepted) p.ln->drop_stream(p.stream, p.gen);
    lc->magic = kDeadMagic;
    delete lc;
    return ncclSuccess;
}

ncclResult_t core_get_device_mr(void*, void*, void** dptr_mhandle) {
    if (dptr_mhandle) *dptr_mhandle = nullptr;  // host device type: nothing on the GPU
    return ncclSuccess;
}

ncclResult_t core_irecv_consumed(void*, int, void*) { return ncclSuccess; }

ncclResult_t core_set_net_attr(void*, ncclNetAttr_v12_t*) { return ncclSuccess; }  // hints only

}  // namespace odl::plugin
