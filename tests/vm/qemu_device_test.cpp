// SPDX-License-Identifier: MIT
// odl-usb4-nhi in the built QEMU, driven through qtest (no guest) while this
// test plays odl-linkd: PCI identity, MMIO forwarding, DMA both ways with bus
// mastering respected, garbage from the "model", and the link going down
// (server closes, server hangs) and coming back, without QEMU dying.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "odl/wire/linkd_codec.h"

namespace {

constexpr std::uint64_t bar0 = 0xe0000000;       // where the test maps BAR0
constexpr unsigned slot = 4;                     // -device ...,addr=04.0
constexpr std::uint64_t reg_caps = 0x39640;

std::string qemu_path() {
    const char* e = std::getenv("ODL_QEMU");
    if (e && *e) return e;
    std::string cmd = std::string(ODL_SOURCE_DIR) + "/qemu-device/build-qemu.sh --print-path";
    std::FILE* p = ::popen(cmd.c_str(), "r");
    if (!p) return {};
    char buf[4096] = {};
    const bool ok = std::fgets(buf, sizeof(buf), p) != nullptr;
    ::pclose(p);
    std::string s = ok ? buf : "";
    while (!s.empty() && s.back() == '\n') s.pop_back();
    return s;
}

int listen_unix(const std::string& path, int type) {
    ::unlink(path.c_str());
    const int fd = ::socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    struct sockaddr_un sun {};
    sun.sun_family = AF_UNIX;
    std::strncpy(sun.sun_path, path.c_str(), sizeof(sun.sun_path) - 1);
    if (::bind(fd, reinterpret_cast<struct sockaddr*>(&sun), sizeof(sun)) < 0 || ::listen(fd, 4) < 0)
        return -1;
    return fd;
}

/// Accepts within @ms, giving up early when process @pid (if > 0) exits.
int accept_within(int lfd, int ms, pid_t pid = -1) {
    for (int waited = 0; waited < ms; waited += 100) {
        struct pollfd p = {lfd, POLLIN, 0};
        if (::poll(&p, 1, 100) == 1) return ::accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC);
        if (pid > 0 && ::kill(pid, 0) != 0) return -1;
    }
    return -1;
}

/// The test's side of the linkd protocol.
class fake_linkd {
public:
    int fd = -1;
    std::uint64_t seq = 0;
    int rx_fd = -1;  ///< descriptor that came with the last message, if any
    ~fake_linkd() { close(); }

    bool send(struct odl_linkd_msg m, const void* payload = nullptr, std::uint32_t len = 0) {
        m.hdr.seq = odl_cpu_le64(seq++);
        m.hdr.payload_len = odl_cpu_le32(len);
        std::vector<std::uint8_t> b(sizeof(m) + len);
        std::memcpy(b.data(), &m, sizeof(m));
        if (len) std::memcpy(b.data() + sizeof(m), payload, len);
        return ::send(fd, b.data(), b.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(b.size());
    }
    bool send_raw(const void* p, std::size_t n) {
        return ::send(fd, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
    }
    /// Next valid message from the device; with @skip, DEVCTRL and RESET
    /// (sent on config writes and machine reset) are passed over.
    bool recv(struct odl_linkd_msg& m, std::vector<std::uint8_t>* payload = nullptr,
              int ms = 3000, bool skip = false) {
        for (;;) {
            struct pollfd p = {fd, POLLIN, 0};
            if (::poll(&p, 1, ms) != 1) return false;
            std::vector<std::uint8_t> b(ODL_LINKD_MAX_DATAGRAM);
            union {
                struct cmsghdr align;
                char buf[CMSG_SPACE(sizeof(int))];
            } ctl;
            struct iovec iov = {b.data(), b.size()};
            struct msghdr mh {};
            mh.msg_iov = &iov;
            mh.msg_iovlen = 1;
            mh.msg_control = ctl.buf;
            mh.msg_controllen = sizeof(ctl.buf);
            const ssize_t n = ::recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
            if (n <= 0) return false;
            drop_fd();
            if (struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
                c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
                std::memcpy(&rx_fd, CMSG_DATA(c), sizeof(int));
            if (odl_linkd_check(b.data(), static_cast<std::size_t>(n), ODL_LINKD_SIDE_DEV, &m) !=
                ODL_LINKD_OK)
                return false;
            const unsigned t = odl_le16(m.hdr.type);
            if (skip && (t == ODL_LINKD_DEVCTRL || t == ODL_LINKD_RESET)) continue;
            if (payload) payload->assign(b.begin() + 64, b.begin() + n);
            return true;
        }
    }
    void drop_fd() {
        if (rx_fd >= 0) ::close(rx_fd);
        rx_fd = -1;
    }
    /// Answers the device's HELLO like odl-linkd does, accepting the
    /// offered features in @accept.
    bool handshake(unsigned expect_host, std::uint32_t accept = 0) {
        struct odl_linkd_msg m;
        if (!recv(m) || odl_le16(m.hdr.type) != ODL_LINKD_HELLO) return false;
        if (odl_le32(m.body.hello.host_id) != expect_host) return false;
        offered = odl_le32(m.body.hello.features);
        seq = 0;
        struct odl_linkd_msg h;
        odl_linkd_hello_init(&h, 0, 0, expect_host, ODL_LINKD_MODE_FREE, 1);
        h.body.hello.features = odl_cpu_le32(offered & accept);
        struct odl_linkd_msg d;
        odl_linkd_msg_init(&d, ODL_LINKD_DEV_INFO, 0, 0, 0);
        d.body.dev_info.msix_vectors = 16;
        d.body.dev_info.hop_count = odl_cpu_le16(16);
        d.body.dev_info.bar0_bytes = odl_cpu_le32(0x40000);
        d.body.dev_info.vendor_id = odl_cpu_le16(0x1af4);
        d.body.dev_info.device_id = odl_cpu_le16(0x10f0);
        d.body.dev_info.class_code = odl_cpu_le32(0x0c0340);
        return send(h) && send(d);
    }
    void close() {
        drop_fd();
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    std::uint32_t offered = 0;  ///< features in the device's HELLO
};

/// qtest text protocol over a unix stream socket.
class qtest {
public:
    int fd = -1;
    std::string cmd(const std::string& c, int ms = 20000) {
        const std::string line = c + "\n";
        if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) < 0) return "ERR send";
        std::string out;
        char ch;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (std::chrono::steady_clock::now() < deadline) {
            struct pollfd p = {fd, POLLIN, 0};
            if (::poll(&p, 1, 100) != 1) continue;
            if (::recv(fd, &ch, 1, 0) != 1) return "ERR closed";
            if (ch == '\n') {
                if (out.rfind("IRQ", 0) == 0) {  // asynchronous, not our answer
                    out.clear();
                    continue;
                }
                return out;
            }
            out += ch;
        }
        return "ERR timeout";
    }
    std::uint64_t val(const std::string& c) {
        const std::string r = cmd(c);
        if (r.rfind("OK ", 0) != 0) return ~std::uint64_t{0};
        return std::stoull(r.substr(3), nullptr, 0);
    }
    std::uint32_t cfg_read(unsigned reg) {
        cmd(fmt_cf8(reg));
        return static_cast<std::uint32_t>(val("inl 0xcfc"));
    }
    void cfg_write(unsigned reg, std::uint32_t v) {
        cmd(fmt_cf8(reg));
        cmd("outl 0xcfc 0x" + hex(v));
    }
    static std::string hex(std::uint64_t v) {
        char b[32];
        std::snprintf(b, sizeof(b), "%llx", static_cast<unsigned long long>(v));
        return b;
    }

private:
    static std::string fmt_cf8(unsigned reg) {
        return "outl 0xcf8 0x" + hex(0x80000000u | (slot << 11) | (reg & 0xfcu));
    }
};

class QemuDevice : public ::testing::Test {
protected:
    /// Guest RAM in a shared memfd (as the testbed runs it).
    bool m_shared_ram = false;
    /// Features the fake server accepts.
    std::uint32_t m_accept = 0;

    void SetUp() override {
        const std::string qemu = qemu_path();
        ASSERT_FALSE(qemu.empty()) << "no QEMU (qemu-device/build-qemu.sh)";
        ASSERT_EQ(::access(qemu.c_str(), X_OK), 0) << qemu << " not built";
        m_dir = "/tmp/odl-qdev-" + std::to_string(::getpid());
        ::mkdir(m_dir.c_str(), 0700);
        m_link_lfd = listen_unix(m_dir + "/linkd.sock", SOCK_SEQPACKET);
        const int qlfd = listen_unix(m_dir + "/qtest.sock", SOCK_STREAM);
        ASSERT_GE(m_link_lfd, 0);
        ASSERT_GE(qlfd, 0);
        // The device handshakes during realize: answer it from a thread.
        bool shook = false;
        std::thread t([&] {
            link.fd = accept_within(m_link_lfd, 20000);
            shook = link.fd >= 0 && link.handshake(0, m_accept);
        });
        m_pid = ::fork();
        if (m_pid == 0) {
            const std::string dev = "odl-usb4-nhi,socket=" + m_dir +
                                    "/linkd.sock,host-id=0,addr=04.0,reconnect-ms=500";
            const std::string qt = "unix:" + m_dir + "/qtest.sock";
            const std::string log = m_dir + "/qemu.log";
            std::freopen(log.c_str(), "w", stderr);
            const char* obj = "memory-backend-memfd,id=ram,size=64M,share=on";
            const char* mach = m_shared_ram ? "q35,memory-backend=ram" : "q35";
            // With private RAM the -object is still created but not used.
            ::execl(qemu.c_str(), qemu.c_str(), "-L", "/usr/share/seabios", "-L", "/usr/share/qemu",
                    "-object", obj, "-machine", mach, "-accel", "qtest", "-qtest",
                    qt.c_str(), "-display", "none", "-nodefaults", "-m", "64", "-device",
                    dev.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        q.fd = accept_within(qlfd, 20000, m_pid);
        ::close(qlfd);
        t.join();
        ASSERT_GE(q.fd, 0) << "QEMU did not connect to qtest";
        ASSERT_TRUE(shook) << "no handshake from the device";
        // Map BAR0 (64-bit) and enable memory space + bus mastering.
        q.cfg_write(0x10, static_cast<std::uint32_t>(bar0));
        q.cfg_write(0x14, 0);
        q.cfg_write(0x04, 0x6);
    }
    void TearDown() override {
        link.close();
        if (m_pid > 0) {
            ::kill(m_pid, SIGTERM);
            int st;
            for (int i = 0; i < 50 && ::waitpid(m_pid, &st, WNOHANG) == 0; i++)
                std::this_thread::sleep_for(std::chrono::milliseconds(100));
            ::kill(m_pid, SIGKILL);
            ::waitpid(m_pid, &st, 0);
        }
        if (q.fd >= 0) ::close(q.fd);
        if (m_link_lfd >= 0) ::close(m_link_lfd);
        if (!std::getenv("ODL_KEEP")) std::system(("rm -rf " + m_dir).c_str());
    }
    bool qemu_alive() { return ::waitpid(m_pid, nullptr, WNOHANG) == 0; }

    /// Reads BAR0+@off through qtest while answering the MMIO_READ with @v.
    std::uint64_t read_answered(std::uint64_t off, std::uint64_t v) {
        std::uint64_t got = 0;
        std::thread t([&] { got = q.val("readl 0x" + qtest::hex(bar0 + off)); });
        struct odl_linkd_msg m;
        bool ok = link.recv(m, nullptr, 12000, true);
        if (ok && odl_le16(m.hdr.type) == ODL_LINKD_MMIO_READ &&
            odl_le64(m.body.mmio.offset) == off && m.body.mmio.size == 4) {
            struct odl_linkd_msg r;
            odl_linkd_msg_init(&r, ODL_LINKD_MMIO_READ_CPL, 0, 0, odl_le64(m.hdr.tag));
            r.body.mmio = m.body.mmio;
            r.body.mmio.data = odl_cpu_le64(v);
            link.send(r);
        }
        t.join();
        return got;
    }
    struct odl_linkd_msg dma(unsigned type, std::uint64_t addr, std::uint32_t len,
                             const void* data, std::vector<std::uint8_t>* out) {
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, type, 0, 0, 42);
        m.body.dma.addr = odl_cpu_le64(addr);
        m.body.dma.len = odl_cpu_le32(len);
        link.send(m, data, data ? len : 0);
        struct odl_linkd_msg r{};
        link.recv(r, out, 5000, true);
        return r;
    }

    qtest q;
    fake_linkd link;
    pid_t m_pid = -1;
    int m_link_lfd = -1;
    std::string m_dir;
};

TEST_F(QemuDevice, PciIdentityAndBars) {
    EXPECT_EQ(q.cfg_read(0x00), 0x10f01af4u);
    EXPECT_EQ(q.cfg_read(0x08) >> 8, 0x0c0340u);
    q.cfg_write(0x18, 0xffffffffu);  // BAR2 (MSI-X) must be a memory BAR
    EXPECT_EQ(q.cfg_read(0x18) & 1u, 0u);
}

TEST_F(QemuDevice, ForwardsMmio) {
    EXPECT_EQ(read_answered(reg_caps, 0x10), 0x10u);
    q.cmd("writel 0x" + qtest::hex(bar0 + 0x38208) + " 0xffffffff");
    struct odl_linkd_msg m;
    ASSERT_TRUE(link.recv(m, nullptr, 3000, true));
    EXPECT_EQ(odl_le16(m.hdr.type), ODL_LINKD_MMIO_WRITE);
    EXPECT_EQ(odl_le64(m.body.mmio.offset), 0x38208u);
    EXPECT_EQ(odl_le64(m.body.mmio.data), 0xffffffffu);
}

TEST_F(QemuDevice, DmaBothWaysRespectsBusMastering) {
    const std::uint8_t pattern[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    auto r = dma(ODL_LINKD_DMA_WRITE, 0x100000, 8, pattern, nullptr);
    ASSERT_EQ(odl_le16(r.hdr.type), ODL_LINKD_DMA_WRITE_CPL);
    EXPECT_EQ(odl_le32(r.body.dma.status), ODL_LINKD_ST_OK);
    EXPECT_EQ(q.val("readl 0x100000"), 0x04030201u);

    q.cmd("writel 0x100010 0xcafef00d");
    std::vector<std::uint8_t> data;
    r = dma(ODL_LINKD_DMA_READ, 0x100010, 4, nullptr, &data);
    ASSERT_EQ(odl_le16(r.hdr.type), ODL_LINKD_DMA_READ_CPL);
    ASSERT_EQ(odl_le32(r.body.dma.status), ODL_LINKD_ST_OK);
    ASSERT_EQ(data.size(), 4u);
    EXPECT_EQ(data[0], 0x0d);

    q.cfg_write(0x04, 0x2);  // memory space only: no bus mastering
    r = dma(ODL_LINKD_DMA_READ, 0x100010, 4, nullptr, &data);
    EXPECT_EQ(odl_le32(r.body.dma.status), ODL_LINKD_ST_ERROR);
    r = dma(ODL_LINKD_DMA_WRITE, 0x100000, 8, pattern, nullptr);
    EXPECT_EQ(odl_le32(r.body.dma.status), ODL_LINKD_ST_ERROR);
}

TEST_F(QemuDevice, SurvivesGarbageFromTheModel) {
    std::mt19937 rng(7);
    std::vector<std::uint8_t> junk(5000);
    for (int i = 0; i < 300; i++) {
        for (auto& c : junk) c = static_cast<std::uint8_t>(rng());
        if (i % 2) junk[0] = static_cast<std::uint8_t>(0x60 + rng() % 8), junk[1] = 0;
        link.send_raw(junk.data(), 1 + rng() % junk.size());
    }
    // Well-formed but hostile: bad vectors, unmapped DMA, stale completion.
    struct odl_linkd_msg m;
    odl_linkd_msg_init(&m, ODL_LINKD_IRQ, 0, 0, 0);
    m.body.irq.vector = odl_cpu_le16(999);
    link.send(m);
    odl_linkd_msg_init(&m, ODL_LINKD_MMIO_READ_CPL, 0, 0, 12345);
    m.body.mmio.size = 4;
    link.send(m);
    auto r = dma(ODL_LINKD_DMA_READ, 0xfffffffff000ull, 4096, nullptr, nullptr);
    EXPECT_EQ(odl_le16(r.hdr.type), ODL_LINKD_DMA_READ_CPL);
    EXPECT_EQ(odl_le32(r.body.dma.status), ODL_LINKD_ST_ERROR);
    // Still alive and still forwarding.
    EXPECT_TRUE(qemu_alive());
    EXPECT_EQ(read_answered(reg_caps, 0x10), 0x10u);
}

TEST_F(QemuDevice, LinkDownThenReconnect) {
    link.close();  // the server dies
    EXPECT_EQ(q.val("readl 0x" + qtest::hex(bar0 + reg_caps)), 0u);  // idle NHI, no hang
    EXPECT_TRUE(qemu_alive());
    // The device retries (reconnect-ms=500) and handshakes again.
    link.fd = accept_within(m_link_lfd, 5000);
    ASSERT_GE(link.fd, 0);
    ASSERT_TRUE(link.handshake(0));
    EXPECT_EQ(read_answered(reg_caps, 0x10), 0x10u);
}

TEST_F(QemuDevice, HungServerTimesOutAndLinkDrops) {
    const auto t0 = std::chrono::steady_clock::now();
    // Nobody answers this read: after the device's 10 s timeout it reads 0.
    EXPECT_EQ(q.val("readl 0x" + qtest::hex(bar0 + reg_caps)), 0u);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(s, 9.0);
    EXPECT_LT(s, 20.0);
    EXPECT_TRUE(qemu_alive());
}

/// The testbed's configuration: RAM in a shared memfd, the server accepts.
class QemuDeviceSharedRam : public QemuDevice {
protected:
    QemuDeviceSharedRam() {
        m_shared_ram = true;
        m_accept = ODL_LINKD_FEAT_SHARED_RAM;
    }
};

TEST_F(QemuDeviceSharedRam, MapsGuestRamThatMatchesWhatTheGuestSees) {
    struct range {
        std::uint64_t addr, len, off;
        int fd;
    };
    std::vector<range> ranges;
    struct odl_linkd_msg m;
    while (link.recv(m, nullptr, 1000)) {
        if (odl_le16(m.hdr.type) != ODL_LINKD_MEM_MAP) continue;
        ASSERT_GE(link.rx_fd, 0) << "MEM_MAP without a file descriptor";
        ranges.push_back({odl_le64(m.body.mem_map.addr), odl_le64(m.body.mem_map.len),
                          odl_le64(m.body.mem_map.fd_offset), ::dup(link.rx_fd)});
    }
    ASSERT_FALSE(ranges.empty()) << "no MEM_MAP from the device";
    std::uint64_t total = 0;
    const range* low = nullptr;
    for (const range& r : ranges) {
        EXPECT_GE(r.addr, 0x100000u) << "the first MiB is never shared";
        total += r.len;
        if (r.addr <= 0x200000 && 0x200000 + 8 <= r.addr + r.len) low = &r;
    }
    EXPECT_EQ(total, (64u << 20) - 0x100000u);  // all RAM above 1 MiB
    ASSERT_NE(low, nullptr) << "guest address 0x200000 is not shared";
    void* p = ::mmap(nullptr, low->len, PROT_READ | PROT_WRITE, MAP_SHARED, low->fd,
                     static_cast<off_t>(low->off));
    ASSERT_NE(p, MAP_FAILED);
    auto* at = static_cast<volatile std::uint32_t*>(p) + (0x200000 - low->addr) / 4;
    q.cmd("writel 0x200000 0x12345678");      // the guest writes ...
    EXPECT_EQ(at[0], 0x12345678u);            // ... the server sees it
    at[1] = 0xfeedbeefu;                      // the server writes ...
    EXPECT_EQ(q.val("readl 0x200004"), 0xfeedbeefu);  // ... the guest sees it
    ::munmap(p, low->len);
    for (const range& r : ranges) ::close(r.fd);
}

/// Shared RAM offered, but the server does not accept the feature.
class QemuDeviceSharedRamRefused : public QemuDevice {
protected:
    QemuDeviceSharedRamRefused() { m_shared_ram = true; }
};

TEST_F(QemuDeviceSharedRamRefused, OffersSharedRamButSendsNoMemMap) {
    EXPECT_EQ(link.offered, ODL_LINKD_FEAT_SHARED_RAM);
    struct odl_linkd_msg m;
    int msgs = 0;
    while (link.recv(m, nullptr, 500)) {
        msgs++;
        EXPECT_NE(odl_le16(m.hdr.type), ODL_LINKD_MEM_MAP);
    }
    EXPECT_GE(msgs, 1);  // the DEVCTRL of SetUp's config writes did arrive
}

}  // namespace
