// SPDX-License-Identifier: MIT
// The kernel backend: devices are /dev/odl_tb5_N from the odl_tb5 module
// (include/uapi/odl_tb5.h). The module carries whole OdinLink frames between
// the two hosts and checks every header both ways; this file adapts the
// character device to the frame engine's link interface, so the kernel
// backend has the loopback backend's semantics (same engine, same frames).
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "backend.h"
#include "engine.h"
#include "error.h"
#include "link.h"
#include "odl/wire/frame_codec.h"
#include "uapi/odl_tb5.h"

namespace odl {

std::vector<uint32_t> kernel_device_indices() {
    std::vector<uint32_t> out;
    DIR* d = opendir("/dev");
    if (!d) return out;
    while (dirent* e = readdir(d)) {
        unsigned idx = 0;
        char tail = 0;
        if (std::sscanf(e->d_name, "odl_tb5_%u%c", &idx, &tail) == 1) out.push_back(idx);
    }
    closedir(d);
    std::sort(out.begin(), out.end());
    return out;
}

namespace {

/// Frames staged per write() / read per read() (syscall batching).
constexpr size_t kBatchFrames = 64;
constexpr size_t kBatchBytes = kBatchFrames * ODL_FRAME_MAX_BYTES;
/// mmap path: Tx buffers the engine may hold reserved for its send thread
/// (at most a quarter of them, so control frames and the rest still flow).
constexpr unsigned kMmapTxDepth = 64;
/// mmap path: Rx buffers the engine may hold for its receive thread to
/// copy out of (at most a quarter of them, as for Tx).
constexpr unsigned kMmapRxDepth = 64;
/// Receive frames kept free for control frames (HELLO, CREDIT, GOODBYE).
constexpr uint32_t kCtrlReserve = 16;
/// After this many empty polls in a row, wait in poll(2) for the module to
/// wake us (a frame or a free Tx buffer) instead of spinning: interrupt
/// mode. Bounded, so odl_poll() still returns promptly.
constexpr unsigned kIdleBeforeWait = 32;
constexpr int kIdleWaitMs = 1;

const char* state_name(uint32_t st) {
    switch (st) {
    case ODL_TB5_STATE_LOGIN: return "login in progress";
    case ODL_TB5_STATE_CONNECTED: return "connected, peer not open";
    case ODL_TB5_STATE_SESSION: return "session";
    case ODL_TB5_STATE_BROKEN: return "session ended";
    case ODL_TB5_STATE_GONE: return "peer service gone";
    default: return "unknown";
    }
}

/// Transmit rate of the link under /dev/odl_tb5_N in Mb/s, as the kernel
/// reports it on the parent XDomain (tx_speed "40.0 Gb/s" per lane,
/// tx_lanes; asymmetric links too); 0 when unreadable.
uint32_t sysfs_tx_rate_mbps(uint32_t index) {
    const std::string xd = fmt::format("/sys/class/odl_tb5/odl_tb5_{}/device/../", index);
    unsigned gbps = 0, lanes = 0;
    if (FILE* f = std::fopen((xd + "tx_speed").c_str(), "r")) {
        if (std::fscanf(f, "%u", &gbps) != 1) gbps = 0;
        std::fclose(f);
    }
    if (FILE* f = std::fopen((xd + "tx_lanes").c_str(), "r")) {
        if (std::fscanf(f, "%u", &lanes) != 1) lanes = 0;
        std::fclose(f);
    }
    return gbps <= 80 && lanes <= 4 ? gbps * lanes * 1000 : 0;
}

/// What both kernel links share: the device file, its state (INFO ioctl)
/// and how a failure is reported.
class kernel_link_base : public link {
public:
    kernel_link_base(int fd, uint32_t index, const odl_tb5_info& info)
        : m_fd(fd), m_index(index), m_info(info), m_rate_mbps(sysfs_tx_rate_mbps(index)) {}
    ~kernel_link_base() override { ::close(m_fd); }
    kernel_link_base(const kernel_link_base&) = delete;
    kernel_link_base& operator=(const kernel_link_base&) = delete;

    link_state progress() override {
        flush_all();
        if (m_lost) return link_state::lost;
        odl_tb5_info info{};
        if (::ioctl(m_fd, ODL_TB5_IOC_INFO, &info) != 0) {
            lose(fmt::format("odl_tb5_{}: info ioctl failed: {}", m_index, std::strerror(errno)));
            return link_state::lost;
        }
        m_info = info;
        switch (info.state) {
        case ODL_TB5_STATE_SESSION:
            // The link may have trained anew since open (a re-plug).
            if (!m_up) m_rate_mbps = sysfs_tx_rate_mbps(m_index);
            m_up = true;
            return link_state::up;
        case ODL_TB5_STATE_BROKEN:
        case ODL_TB5_STATE_GONE:
            // The peer's last frames may still wait: deliver them first.
            if (m_up && frames_left()) return link_state::up;
            lose(fmt::format("odl_tb5_{}: {}", m_index, state_name(info.state)));
            return link_state::lost;
        default:
            if (m_up) {
                lose(fmt::format("odl_tb5_{}: link reset ({})", m_index, state_name(info.state)));
                return link_state::lost;
            }
            return link_state::connecting;
        }
    }

    std::string failure() const override { return m_failure; }
    std::string name() const override { return fmt::format("odl_tb5_{}", m_index); }
    // The NHI drops frames that arrive damaged (rx_damaged), and a
    // retraining link loses what was on the wire. A module before ABI 4
    // refuses the frames retransmission sends (ACK, NAK, PROBE): without
    // them a lost frame ends the session, as with protocol 1.1.
    bool lossy() const override { return m_info.abi_version >= 4; }
    uint32_t rate_mbps() const override {
        if (m_rate_mbps) return m_rate_mbps;
        // INFO's link_width is a lane count on Linux 6.1 but a width code
        // (4, 8: asymmetric) on 6.12: count it as one lane beyond 2.
        const uint32_t w = m_info.link_width;
        return m_info.link_speed_gbps * (w == 2 ? 2 : 1) * 1000;
    }

protected:
    /// Sends and returns whatever is staged (before a state check).
    virtual void flush_all() = 0;
    /// After the session ended: true while received frames still wait.
    virtual bool frames_left() { return false; }

    void lose(std::string why) {
        if (!m_lost) m_failure = std::move(why);
        m_lost = true;
    }

    /// Counts an empty poll; true once kIdleBeforeWait came in a row on a
    /// live link (then wait in idle_wait()).
    bool idle_due() { return m_up && !m_lost && ++m_idle >= kIdleBeforeWait; }
    /// Waits in poll(2), at most kIdleWaitMs, for a frame or (@want_tx) a
    /// free Tx buffer, so an idle waiter is woken by the module.
    void idle_wait(bool want_tx) const {
        pollfd p{m_fd, short(POLLIN | (want_tx ? POLLOUT : 0)), 0};
        ::poll(&p, 1, kIdleWaitMs);
    }

    /// An errno from the data path that ends the link, in words.
    void lose_errno(const char* op, int e) {
        if (e == EPIPE) lose(fmt::format("odl_tb5_{}: peer closed or link reset", m_index));
        else if (e == ENODEV) lose(fmt::format("odl_tb5_{}: peer service gone", m_index));
        else lose(fmt::format("odl_tb5_{}: {}: {}", m_index, op, std::strerror(e)));
    }

    int m_fd;
    uint32_t m_index;
    odl_tb5_info m_info;
    uint32_t m_rate_mbps;
    unsigned m_idle = 0;
    bool m_up = false;
    bool m_lost = false;
    std::string m_failure;
};

/// ODL_KERNEL_IO=rw: frames copied through read(2) and write(2), batched.
class kernel_rw_link final : public kernel_link_base {
public:
    kernel_rw_link(int fd, uint32_t index, const odl_tb5_info& info)
        : kernel_link_base(fd, index, info), m_tx(kBatchBytes), m_rx(kBatchBytes) {}

    unsigned char* tx_reserve() override {
        if (m_lost) return nullptr;
        if (m_tx_len + ODL_FRAME_MAX_BYTES > m_tx.size()) flush_tx();
        if (m_tx_len + ODL_FRAME_MAX_BYTES > m_tx.size()) return nullptr;
        return m_tx.data() + m_tx_len;
    }

    void tx_commit(size_t bytes) override {
        m_idle = 0;
        m_tx_len += bytes;
        if (m_tx_len + ODL_FRAME_MAX_BYTES > m_tx.size()) flush_tx();
    }

    void tx_flush() override { flush_tx(); }

    rx_frame rx_peek() override {
        flush_tx();
        if (m_rx_off >= m_rx_len) fill_rx();
        if (m_rx_off >= m_rx_len && idle_due()) {
            idle_wait(m_tx_len != 0);
            flush_tx();
            fill_rx();
        }
        if (m_rx_off >= m_rx_len) return {};
        m_idle = 0;
        const size_t left = m_rx_len - m_rx_off;
        const unsigned char* p = m_rx.data() + m_rx_off;
        size_t len = 0;
        if (left >= ODL_FRAME_HDR_BYTES) {
            odl_frame_hdr h;
            std::memcpy(&h, p, sizeof(h));
            len = ODL_FRAME_HDR_BYTES + odl_le16(h.len);
            if (len > left) len = 0;
        }
        // A bad length cannot be skipped reliably: hand it over as length 0
        // (the engine refuses it) and drop the rest of this batch.
        m_cur = len ? len : left;
        return {p, len};
    }

    void rx_release() override { m_rx_off += m_cur; }

private:
    void flush_all() override { flush_tx(); }

    void flush_tx() {
        while (m_tx_len && !m_lost) {
            const ssize_t n = ::write(m_fd, m_tx.data(), m_tx_len);
            if (n > 0) {
                const size_t done = size_t(n);
                std::memmove(m_tx.data(), m_tx.data() + done, m_tx_len - done);
                m_tx_len -= done;
                m_idle = 0;
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && (errno == EAGAIN || errno == ENOTCONN)) return;
            if (n < 0) lose_errno("write", errno);
            else lose(fmt::format("odl_tb5_{}: write: short", m_index));
        }
    }

    void fill_rx() {
        m_rx_off = m_rx_len = 0;
        if (m_lost) return;
        for (;;) {
            const ssize_t n = ::read(m_fd, m_rx.data(), m_rx.size());
            if (n > 0) {
                m_rx_len = size_t(n);
                return;
            }
            if (n < 0 && errno == EINTR) continue;
            if (n < 0 && errno == EAGAIN) return;
            if (n < 0) lose_errno("read", errno);
            else lose(fmt::format("odl_tb5_{}: read: end of file", m_index));
            return;
        }
    }

    std::vector<unsigned char> m_tx;
    size_t m_tx_len = 0;
    std::vector<unsigned char> m_rx;
    size_t m_rx_len = 0;
    size_t m_rx_off = 0;
    size_t m_cur = 0;
};

/// One mmap(2)ed area of the device; unmapped on destruction.
class mapping {
public:
    mapping() = default;
    mapping(int fd, uint64_t offset, uint64_t size, int prot, const std::string& what) : m_len(size) {
        void* p = ::mmap(nullptr, m_len, prot, MAP_SHARED, fd, off_t(offset));
        if (p == MAP_FAILED)
            throw error(ODL_ERR_IO, fmt::format("mmap of the {} ({} bytes at {}): {}", what, size, offset, std::strerror(errno)));
        m_p = static_cast<unsigned char*>(p);
    }
    ~mapping() {
        if (m_p) ::munmap(m_p, m_len);
    }
    mapping(mapping&& o) noexcept : m_p(std::exchange(o.m_p, nullptr)), m_len(o.m_len) {}
    mapping& operator=(mapping&& o) noexcept {
        std::swap(m_p, o.m_p);
        std::swap(m_len, o.m_len);
        return *this;
    }
    mapping(const mapping&) = delete;
    mapping& operator=(const mapping&) = delete;
    unsigned char* data() const { return m_p; }

private:
    unsigned char* m_p = nullptr;
    size_t m_len = 0;
};

/// Free-running u32 queue index shared with the kernel.
uint32_t load_acquire(const uint32_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void store_release(uint32_t* p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

/// The default: frames written and read in place in the module's mmapped
/// buffers, posted with one ioctl per batch; completions come through
/// shared queues, so a busy sender or receiver needs no syscall to see them.
class kernel_mmap_link final : public kernel_link_base {
public:
    kernel_mmap_link(int fd, uint32_t index, const odl_tb5_info& info) : kernel_link_base(fd, index, info) {
        odl_tb5_map_info mi{};
        if (::ioctl(m_fd, ODL_TB5_IOC_MAP_INFO, &mi) != 0)
            throw error(ODL_ERR_IO, fmt::format("odl_tb5_{}: MAP_INFO: {}", m_index, std::strerror(errno)));
        // The module is trusted, but a layout we cannot use is an error, not
        // a crash.
        const bool pow2 = mi.cq_entries && !(mi.cq_entries & (mi.cq_entries - 1));
        if (!pow2 || mi.buf_size < ODL_FRAME_MAX_BYTES || !mi.tx_count || !mi.rx_count || !mi.post_max ||
            uint64_t(mi.tx_cqe_offset) + uint64_t(mi.cq_entries) * sizeof(odl_tb5_cqe) > mi.ctrl_size ||
            uint64_t(mi.rx_cqe_offset) + uint64_t(mi.cq_entries) * sizeof(odl_tb5_cqe) > mi.ctrl_size ||
            uint64_t(mi.tx_count) * mi.buf_size > mi.tx_size || uint64_t(mi.rx_count) * mi.buf_size > mi.rx_size)
            throw error(ODL_ERR_NOT_SUPPORTED, fmt::format("odl_tb5_{}: unusable mmap layout", m_index));
        m_mi = mi;
        m_ctrl_map = mapping(m_fd, mi.ctrl_offset, mi.ctrl_size, PROT_READ | PROT_WRITE, "control area");
        m_tx_map = mapping(m_fd, mi.tx_offset, mi.tx_size, PROT_READ | PROT_WRITE, "Tx buffers");
        m_rx_map = mapping(m_fd, mi.rx_offset, mi.rx_size, PROT_READ, "Rx buffers");
        m_ctrl = reinterpret_cast<odl_tb5_ctrl*>(m_ctrl_map.data());
        m_rx_cqe = reinterpret_cast<const odl_tb5_cqe*>(m_ctrl_map.data() + mi.rx_cqe_offset);
        m_tx_cqe = reinterpret_cast<const odl_tb5_cqe*>(m_ctrl_map.data() + mi.tx_cqe_offset);
        m_mask = mi.cq_entries - 1;
        m_free.reserve(mi.tx_count);
        m_send.reserve(mi.tx_count);
        m_recv.reserve(mi.rx_count);
        m_rx_cons = load_acquire(&m_ctrl->rx_cq.cons);
        m_tx_cons = load_acquire(&m_ctrl->tx_cq.cons);
    }
    ~kernel_mmap_link() override = default;  // unmaps before the base closes

    unsigned char* tx_reserve() override { return tx_reserve_at(0); }
    unsigned tx_depth() const override { return std::max<unsigned>(1, std::min<unsigned>(kMmapTxDepth, m_mi.tx_count / 4)); }
    unsigned char* tx_reserve_at(unsigned ahead) override {
        if (m_lost || ahead >= tx_depth()) return nullptr;
        while (m_res.size() <= ahead) {
            if (m_free.empty()) take_tx();
            if (m_free.empty() && !m_send.empty()) {
                flush_tx();
                take_tx();
            }
            if (m_free.empty()) return nullptr;
            m_res.push_back(m_free.back());
            m_free.pop_back();
        }
        return m_tx_map.data() + size_t(m_res[ahead]) * m_mi.buf_size;
    }

    void tx_commit(size_t bytes) override {
        if (m_res.empty()) return;
        m_idle = 0;
        m_send.push_back({m_res.front(), uint32_t(bytes)});
        m_res.pop_front();
        if (m_send.size() >= kBatchFrames) flush_tx();
    }

    void tx_flush() override { flush_tx(); }

    rx_frame rx_peek() override { return rx_peek_at(0); }
    unsigned rx_depth() const override { return std::max<unsigned>(1, std::min<unsigned>(kMmapRxDepth, m_mi.rx_count / 4)); }
    rx_frame rx_peek_at(unsigned ahead) override {
        flush_tx();
        if (ahead > m_held.size()) return {};  // never skips one
        if (ahead == m_held.size() && !next_rx()) {
            // Frames held (ahead > 0) are being copied out: no wait now.
            if (ahead != 0 || !idle_due()) return {};
            flush_rx();
            idle_wait(m_free.empty() || !m_send.empty());
            flush_tx();
            if (!next_rx()) return {};
        }
        m_idle = 0;
        const odl_tb5_cqe& e = m_held[ahead];
        return {m_rx_map.data() + size_t(e.index) * m_mi.buf_size, e.len};
    }

    void rx_release() override {
        if (m_held.empty()) return;
        m_recv.push_back(m_held.front().index);
        m_held.pop_front();
        if (m_recv.size() >= kBatchFrames) flush_rx();
    }

    void rx_flush() override { flush_rx(); }

private:
    void flush_all() override {
        flush_tx();
        flush_rx();
    }

    // read() drains the ring before it reports the end; here poll(2) does
    // (polling mode), then the Rx queue tells.
    bool frames_left() override {
        if (!m_held.empty()) return true;
        pollfd p{m_fd, POLLIN, 0};
        ::poll(&p, 1, 0);
        return load_acquire(&m_ctrl->rx_cq.prod) != m_rx_cons;
    }

    /// Free Tx buffers from the Tx completion queue.
    void take_tx() {
        const uint32_t prod = load_acquire(&m_ctrl->tx_cq.prod);
        if (prod - m_tx_cons > m_mi.cq_entries) {
            lose(fmt::format("odl_tb5_{}: Tx completion queue corrupt", m_index));
            return;
        }
        for (; m_tx_cons != prod; ++m_tx_cons) {
            const uint32_t idx = m_tx_cqe[m_tx_cons & m_mask].index;
            if (idx < m_mi.tx_count) m_free.push_back(idx);
        }
        store_release(&m_ctrl->tx_cq.cons, m_tx_cons);
    }

    /// The next received frame onto m_held; false when none waits.
    bool next_rx() {
        if (m_lost) return false;
        const uint32_t prod = load_acquire(&m_ctrl->rx_cq.prod);
        if (prod == m_rx_cons) return false;
        if (prod - m_rx_cons > m_mi.cq_entries) {
            lose(fmt::format("odl_tb5_{}: Rx completion queue corrupt", m_index));
            return false;
        }
        const odl_tb5_cqe e = m_rx_cqe[m_rx_cons & m_mask];
        store_release(&m_ctrl->rx_cq.cons, ++m_rx_cons);
        if (e.index >= m_mi.rx_count) {
            lose(fmt::format("odl_tb5_{}: Rx completion for buffer {} of {}", m_index, e.index, m_mi.rx_count));
            return false;
        }
        m_held.push_back(e);
        // A length the buffer cannot hold goes to the engine as 0 (refused).
        if (e.len > m_mi.buf_size || e.len > ODL_FRAME_MAX_BYTES) m_held.back().len = 0;
        return true;
    }

    /// Posts m_send (or m_recv) in order, at most post_max per ioctl.
    template <typename T>
    void post(unsigned long cmd, std::vector<T>& v, const char* what, bool tx) {
        size_t off = 0;
        while (off < v.size() && !m_lost) {
            odl_tb5_post p{};
            p.count = uint32_t(std::min<size_t>(v.size() - off, m_mi.post_max));
            p.entries = reinterpret_cast<uintptr_t>(v.data() + off);
            const int n = ::ioctl(m_fd, cmd, &p);
            if (n > 0) {
                off += size_t(n);
                m_idle = 0;
                continue;
            }
            if (n < 0 && errno == EINTR) continue;
            // No session yet: keep the frames for later.
            if (tx && n < 0 && (errno == EAGAIN || errno == ENOTCONN)) break;
            if (n < 0) lose_errno(what, errno);
            else lose(fmt::format("odl_tb5_{}: {}: nothing taken", m_index, what));
        }
        v.erase(v.begin(), v.begin() + std::ptrdiff_t(off));
    }

    void flush_tx() {
        if (!m_send.empty()) post(ODL_TB5_IOC_POST_SEND, m_send, "post send", true);
    }
    void flush_rx() {
        if (!m_recv.empty()) post(ODL_TB5_IOC_POST_RECV, m_recv, "post recv", false);
    }

    odl_tb5_map_info m_mi{};
    mapping m_ctrl_map, m_tx_map, m_rx_map;
    odl_tb5_ctrl* m_ctrl = nullptr;
    const odl_tb5_cqe* m_rx_cqe = nullptr;
    const odl_tb5_cqe* m_tx_cqe = nullptr;
    uint32_t m_mask = 0;
    uint32_t m_rx_cons = 0;
    uint32_t m_tx_cons = 0;
    std::vector<uint32_t> m_free;       ///< Tx buffers we own, unwritten
    std::deque<uint32_t> m_res;         ///< Tx buffers handed out by tx_reserve_at(), oldest first
    std::vector<odl_tb5_cqe> m_send;    ///< written frames not yet posted
    std::vector<uint32_t> m_recv;       ///< read Rx buffers not yet posted back
    std::deque<odl_tb5_cqe> m_held;     ///< received frames taken off the queue, not yet released, oldest first
};

}  // namespace

std::unique_ptr<backend> open_kernel_backend(const open_config& cfg) {
    const auto have = kernel_device_indices();
    if (std::find(have.begin(), have.end(), cfg.index) == have.end()) {
        if (have.empty())
            throw error(ODL_ERR_NO_DEVICE,
                        fmt::format("no kernel device {} (have: none; is the odl_tb5 module loaded and a peer connected?)", cfg.index));
        throw error(ODL_ERR_NO_DEVICE,
                    fmt::format("no kernel device {} (have: {})", cfg.index, fmt::join(have, ", ")));
    }
    // ODL_KERNEL_IO: mmap (default, zero-copy) or rw (read/write copies).
    const char* io_env = std::getenv("ODL_KERNEL_IO");
    const std::string io = io_env && *io_env ? io_env : "mmap";
    if (io != "mmap" && io != "rw")
        throw error(ODL_ERR_INVAL, fmt::format("ODL_KERNEL_IO={}: want mmap or rw", io));
    const std::string path = fmt::format("/dev/" ODL_TB5_DEV_PREFIX "{}", cfg.index);
    const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        throw error(e == ENOENT || e == ENODEV ? ODL_ERR_NO_DEVICE : ODL_ERR_IO,
                    fmt::format("{}: {}{}", path, std::strerror(e), e == EBUSY ? " (another process has it open)" : ""));
    }
    // Module ABI versions only add (docs/kmod.md), so any module from the
    // version whose calls this backend makes (2: the mmap data path) on will do.
    constexpr uint32_t abi_needed = 2;
    odl_tb5_info info{};
    if (::ioctl(fd, ODL_TB5_IOC_INFO, &info) != 0 || info.abi_version < abi_needed) {
        const int e = errno;
        ::close(fd);
        throw error(ODL_ERR_NOT_SUPPORTED,
                    fmt::format("{}: module ABI {}; this libodl needs version {} or later", path,
                                info.abi_version ? fmt::format("version {}", info.abi_version) : std::string(std::strerror(e)),
                                abi_needed));
    }
    // The module holds rx_capacity frames for us; the data frames in flight
    // towards us, all streams together, must fit or the NHI would run out of
    // buffers. A link-wide credit limit (HELLO link_window, returned as soon
    // as we give buffers back) keeps the sum below it, so one stream may use
    // the whole room instead of room / num_streams (odl perf opens 34
    // streams: 27 frames each, too few for a bulk stream). A protocol 1.0
    // peer refuses a HELLO with a link window, so mixed versions fail at
    // connect instead of overrunning the ring.
    open_config c = cfg;
    const uint32_t room = info.rx_capacity > kCtrlReserve + 2 * c.num_streams
                              ? info.rx_capacity - kCtrlReserve - 2 * c.num_streams
                              : c.num_streams;
    c.link_window_frames = std::max<uint32_t>(1, room);
    c.window_frames = std::max<uint32_t>(1, std::min<uint32_t>(c.window_frames, room));
    std::unique_ptr<link> l;
    if (io == "rw") {
        l = std::make_unique<kernel_rw_link>(fd, cfg.index, info);
    } else {
        // Throws with fd closed (the base class owns it once constructed).
        l = std::make_unique<kernel_mmap_link>(fd, cfg.index, info);
    }
    return std::make_unique<engine>(std::move(l), c);
}

}  // namespace odl
