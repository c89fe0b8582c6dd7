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
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
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

class kernel_link final : public link {
public:
    kernel_link(int fd, uint32_t index, const odl_tb5_info& info)
        : m_fd(fd), m_index(index), m_info(info), m_tx(kBatchBytes), m_rx(kBatchBytes) {}
    ~kernel_link() override { ::close(m_fd); }
    kernel_link(const kernel_link&) = delete;
    kernel_link& operator=(const kernel_link&) = delete;

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
        if (m_rx_off >= m_rx_len && m_up && !m_lost && ++m_idle >= kIdleBeforeWait) {
            pollfd p{m_fd, short(POLLIN | (m_tx_len ? POLLOUT : 0)), 0};
            ::poll(&p, 1, kIdleWaitMs);
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

    link_state progress() override {
        flush_tx();
        if (m_lost) return link_state::lost;
        odl_tb5_info info{};
        if (::ioctl(m_fd, ODL_TB5_IOC_INFO, &info) != 0) {
            lose(fmt::format("odl_tb5_{}: info ioctl failed: {}", m_index, std::strerror(errno)));
            return link_state::lost;
        }
        m_info = info;
        switch (info.state) {
        case ODL_TB5_STATE_SESSION:
            m_up = true;
            return link_state::up;
        case ODL_TB5_STATE_BROKEN:
        case ODL_TB5_STATE_GONE:
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
    uint32_t rate_mbps() const override {
        return m_info.link_speed_gbps * std::max<uint32_t>(1, m_info.link_width) * 1000;
    }

private:
    void lose(std::string why) {
        if (!m_lost) m_failure = std::move(why);
        m_lost = true;
    }

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
            lose(fmt::format("odl_tb5_{}: write: {}", m_index, n < 0 ? std::strerror(errno) : "short"));
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
            if (n < 0 && (errno == EPIPE || errno == ENODEV)) {
                lose(fmt::format("odl_tb5_{}: {}", m_index, errno == EPIPE ? "peer closed or link reset" : "peer service gone"));
                return;
            }
            lose(fmt::format("odl_tb5_{}: read: {}", m_index, n < 0 ? std::strerror(errno) : "end of file"));
            return;
        }
    }

    int m_fd;
    uint32_t m_index;
    odl_tb5_info m_info;
    std::vector<unsigned char> m_tx;
    size_t m_tx_len = 0;
    std::vector<unsigned char> m_rx;
    size_t m_rx_len = 0;
    size_t m_rx_off = 0;
    size_t m_cur = 0;
    unsigned m_idle = 0;
    bool m_up = false;
    bool m_lost = false;
    std::string m_failure;
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
    const std::string path = fmt::format("/dev/" ODL_TB5_DEV_PREFIX "{}", cfg.index);
    const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        const int e = errno;
        throw error(e == ENOENT || e == ENODEV ? ODL_ERR_NO_DEVICE : ODL_ERR_IO,
                    fmt::format("{}: {}{}", path, std::strerror(e), e == EBUSY ? " (another process has it open)" : ""));
    }
    odl_tb5_info info{};
    if (::ioctl(fd, ODL_TB5_IOC_INFO, &info) != 0 || info.abi_version != ODL_TB5_ABI_VERSION) {
        const int e = errno;
        ::close(fd);
        throw error(ODL_ERR_NOT_SUPPORTED,
                    fmt::format("{}: module ABI mismatch ({}; want version {})", path,
                                info.abi_version ? fmt::format("version {}", info.abi_version) : std::string(std::strerror(e)),
                                ODL_TB5_ABI_VERSION));
    }
    // The module holds rx_capacity frames for us; every stream's credit
    // window together must fit, or the NHI would run out of buffers.
    open_config c = cfg;
    const uint32_t room = info.rx_capacity > kCtrlReserve + 2 * c.num_streams
                              ? info.rx_capacity - kCtrlReserve - 2 * c.num_streams
                              : c.num_streams;
    c.window_frames = std::max<uint32_t>(1, std::min<uint32_t>(c.window_frames, room / c.num_streams));
    return std::make_unique<engine>(std::make_unique<kernel_link>(fd, cfg.index, info), c);
}

}  // namespace odl
