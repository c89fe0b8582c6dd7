// SPDX-License-Identifier: MIT
// odl-linkd server plumbing against fake QEMU devices: handshake, MMIO
// forwarding, DMA and IRQ from the model, hostile input, and that one host
// going away leaves the server and the other hosts running.
#include "odl/model/linkd/det_control.h"
#include "odl/model/linkd/server.h"

#include <gtest/gtest.h>
#include <dirent.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "odl/wire/linkd_codec.h"

namespace odl::model::linkd {
namespace {

constexpr std::uint64_t reg_value = 0x100;   // read: returns 0x5a5a0000 | offset
constexpr std::uint64_t reg_dma = 0x200;     // write: DMA-read 16 bytes at value
constexpr std::uint64_t reg_irq = 0x204;     // write: raise MSI-X vector value
constexpr std::uint64_t reg_dma_wr = 0x208;  // write: DMA-write 16 bytes (0xc0 + i) at value

/// Test double of the model: a few magic registers that exercise host_bus.
class fake_model final : public model_backend {
public:
    class port final : public nhi_port {
    public:
        port(fake_model& m, unsigned h) : m_m(m), m_h(h) {}
        std::uint64_t mmio_read(std::uint64_t off, unsigned) override {
            return 0x5a5a0000u | off;
        }
        void mmio_write(std::uint64_t off, unsigned, std::uint64_t v) override {
            host_bus* bus = m_m.bus[m_h];
            if (!bus) return;
            if (off == reg_dma) {
                std::uint8_t buf[16] = {};
                const bool ok = bus->dma_read(v, buf, sizeof(buf));
                std::lock_guard<std::mutex> g(m_m.mu);
                m_m.dma_ok = ok;
                m_m.dma_data.assign(buf, buf + sizeof(buf));
            } else if (off == reg_dma_wr) {
                std::uint8_t buf[16];
                for (int i = 0; i < 16; i++) buf[i] = static_cast<std::uint8_t>(0xc0 + i);
                const bool ok = bus->dma_write(v, buf, sizeof(buf));
                std::lock_guard<std::mutex> g(m_m.mu);
                m_m.dma_ok = ok;
                m_m.dma_writes_done++;
            } else if (off == reg_irq) {
                bus->raise_irq(static_cast<unsigned>(v));
            }
        }
        void reset() override { m_m.resets++; }
        void devctrl(std::uint16_t, bool) override {}

    private:
        fake_model& m_m;
        unsigned m_h;
    };

    fake_model() : ports{{*this, 0}, {*this, 1}} {}
    unsigned host_count() const override { return 2; }
    device_info info(unsigned) const override { return {}; }
    nhi_port& nhi(unsigned h) override { return ports[h]; }
    void attach(unsigned h, host_bus* b) override {
        bus[h] = b;
        (b ? attaches : detaches)++;
    }
    void advance_to(std::uint64_t) override {}
    std::uint64_t next_event_ps() const override { return UINT64_MAX; }

    port ports[2];
    host_bus* bus[2] = {nullptr, nullptr};
    std::atomic<int> attaches{0}, detaches{0}, resets{0};
    std::mutex mu;
    bool dma_ok = false;
    int dma_writes_done = 0;
    std::vector<std::uint8_t> dma_data;
};

/// A fake QEMU device speaking the protocol by hand.
class device {
public:
    explicit device(const std::string& path) {
        m_fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
        struct sockaddr_un sun {};
        sun.sun_family = AF_UNIX;
        std::strncpy(sun.sun_path, path.c_str(), sizeof(sun.sun_path) - 1);
        m_ok = ::connect(m_fd, reinterpret_cast<struct sockaddr*>(&sun), sizeof(sun)) == 0;
    }
    ~device() { close(); }
    void close() {
        if (m_fd >= 0) ::close(m_fd);
        m_fd = -1;
    }
    bool ok() const { return m_ok; }
    bool send_raw(const void* p, std::size_t n) {
        return ::send(m_fd, p, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
    }
    bool send(struct odl_linkd_msg m, const void* payload = nullptr, std::uint32_t len = 0) {
        m.hdr.seq = odl_cpu_le64(m_seq++);
        m.hdr.payload_len = odl_cpu_le32(len);
        std::vector<std::uint8_t> b(sizeof(m) + len);
        std::memcpy(b.data(), &m, sizeof(m));
        if (len) std::memcpy(b.data() + sizeof(m), payload, len);
        return send_raw(b.data(), b.size());
    }
    /// Next valid message from the model; false on timeout or close.
    bool recv(struct odl_linkd_msg& m, std::vector<std::uint8_t>* payload = nullptr,
              int timeout_ms = 2000) {
        struct pollfd p = {m_fd, POLLIN, 0};
        if (::poll(&p, 1, timeout_ms) <= 0) return false;
        std::vector<std::uint8_t> b(ODL_LINKD_MAX_DATAGRAM);
        const ssize_t n = ::recv(m_fd, b.data(), b.size(), 0);
        if (n <= 0) return false;
        if (odl_linkd_check(b.data(), static_cast<std::size_t>(n), ODL_LINKD_SIDE_MODEL, &m) !=
            ODL_LINKD_OK)
            return false;
        if (payload) payload->assign(b.begin() + 64, b.begin() + n);
        return true;
    }
    /// Sends @m with the file descriptors @fds attached (SCM_RIGHTS).
    bool send_fds(struct odl_linkd_msg m, const std::vector<int>& fds) {
        m.hdr.seq = odl_cpu_le64(m_seq++);
        struct iovec iov = {&m, sizeof(m)};
        std::vector<char> ctl(CMSG_SPACE(sizeof(int) * fds.size()));
        struct msghdr mh {};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        if (!fds.empty()) {
            mh.msg_control = ctl.data();
            mh.msg_controllen = ctl.size();
            struct cmsghdr* c = CMSG_FIRSTHDR(&mh);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
            std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
        }
        return ::sendmsg(m_fd, &mh, MSG_NOSIGNAL) == static_cast<ssize_t>(sizeof(m));
    }
    bool hello(unsigned host, std::uint32_t features = 0, std::uint32_t* agreed = nullptr,
               unsigned mode = ODL_LINKD_MODE_FREE) {
        struct odl_linkd_msg m;
        odl_linkd_hello_init(&m, 0, 0, host, mode, 1);
        m.body.hello.features = odl_cpu_le32(features);
        if (!send(m)) return false;
        struct odl_linkd_msg r;
        if (!recv(r) || odl_le16(r.hdr.type) != ODL_LINKD_HELLO) return false;
        if (agreed) *agreed = odl_le32(r.body.hello.features);
        if (!recv(r) || odl_le16(r.hdr.type) != ODL_LINKD_DEV_INFO) return false;
        return odl_le32(r.body.dev_info.bar0_bytes) == 0x40000;
    }
    bool mmio_write(std::uint64_t off, std::uint64_t v, unsigned bar = 0) {
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_MMIO_WRITE, 0, 0, 0);
        m.body.mmio.bar = static_cast<__u8>(bar);
        m.body.mmio.size = 4;
        m.body.mmio.offset = odl_cpu_le64(off);
        m.body.mmio.data = odl_cpu_le64(v);
        return send(m);
    }
    /// Deterministic mode: "stopped at @ts_ps, waiting".
    bool sync(std::uint64_t ts_ps) {
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_SYNC, 0, ts_ps, 0);
        return send(m);
    }
    /// Deterministic mode: the next SYNC's time (0: a hold), or -1 when
    /// none came within @timeout_ms.
    long long next_sync(int timeout_ms) {
        struct odl_linkd_msg m;
        while (recv(m, nullptr, timeout_ms))
            if (odl_le16(m.hdr.type) == ODL_LINKD_SYNC) return static_cast<long long>(odl_le64(m.hdr.ts_ps));
        return -1;
    }
    /// Deterministic mode: the next grant's horizon, ps; 0 when none came
    /// within @timeout_ms (other messages before it are skipped).
    std::uint64_t grant(int timeout_ms = 2000) {
        struct odl_linkd_msg m;
        while (recv(m, nullptr, timeout_ms))
            if (odl_le16(m.hdr.type) == ODL_LINKD_SYNC) return odl_le64(m.hdr.ts_ps);
        return 0;
    }
    bool devctrl(std::uint16_t command) {
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_DEVCTRL, 0, 0, 0);
        m.body.devctrl.command = odl_cpu_le16(command);
        return send(m);
    }
    bool mem_map(std::uint64_t addr, std::uint64_t len, std::uint64_t off, std::vector<int> fds) {
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_MEM_MAP, 0, 0, 0);
        m.body.mem_map.addr = odl_cpu_le64(addr);
        m.body.mem_map.len = odl_cpu_le64(len);
        m.body.mem_map.fd_offset = odl_cpu_le64(off);
        return send_fds(m, fds);
    }
    /// MMIO read; returns the completion status or -1 on no answer.
    long mmio_read(std::uint64_t off, std::uint64_t& v, unsigned size = 4, unsigned bar = 0) {
        struct odl_linkd_msg m;
        odl_linkd_msg_init(&m, ODL_LINKD_MMIO_READ, 0, 0, ++m_tag);
        m.body.mmio.bar = static_cast<__u8>(bar);
        m.body.mmio.size = static_cast<__u8>(size);
        m.body.mmio.offset = odl_cpu_le64(off);
        if (!send(m)) return -1;
        struct odl_linkd_msg r;
        if (!recv(r) || odl_le16(r.hdr.type) != ODL_LINKD_MMIO_READ_CPL ||
            odl_le64(r.hdr.tag) != m_tag)
            return -1;
        v = odl_le64(r.body.mmio.data);
        return odl_le32(r.body.mmio.status);
    }

private:
    int m_fd = -1;
    bool m_ok = false;
    std::uint64_t m_seq = 0;
    std::uint64_t m_tag = 0;
};

class LinkdServer : public ::testing::Test {
protected:
    void SetUp() override {
        m_path = "/tmp/odl-linkd-test-" + std::to_string(::getpid()) + ".sock";
        server_config cfg;
        cfg.socket_path = m_path;
        cfg.max_bad_msgs = 50;
        cfg.dma_timeout_ms = 500;
        cfg.handshake_timeout_ms = 300;
        m_srv = std::make_unique<server>(cfg, m_model);
        std::string err;
        ASSERT_TRUE(m_srv->listen(err)) << err;
        m_thread = std::thread([this] { m_srv->run(); });
    }
    void TearDown() override {
        m_srv->stop();
        if (m_thread.joinable()) m_thread.join();
        m_srv.reset();
    }
    /// Waits (bounded) until @pred holds.
    template <typename F>
    bool eventually(F pred) {
        for (int i = 0; i < 200; i++) {
            if (pred()) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        return false;
    }

    std::string m_path;
    fake_model m_model;
    std::unique_ptr<server> m_srv;
    std::thread m_thread;
};

TEST_F(LinkdServer, ForwardsMmioReads) {
    device d(m_path);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE(d.hello(0));
    std::uint64_t v = 0;
    EXPECT_EQ(d.mmio_read(reg_value, v), ODL_LINKD_ST_OK);
    EXPECT_EQ(v, 0x5a5a0000u | reg_value);
}

TEST_F(LinkdServer, RefusesReadsOutsideBar0) {
    device d(m_path);
    ASSERT_TRUE(d.hello(0));
    std::uint64_t v = 0;
    EXPECT_EQ(d.mmio_read(0x40000, v), ODL_LINKD_ST_BAD_REQ);
    EXPECT_EQ(d.mmio_read(0x3fffc, v, 8), ODL_LINKD_ST_BAD_REQ);
    EXPECT_EQ(d.mmio_read(0x3fff8, v, 8), ODL_LINKD_ST_OK);
}

TEST_F(LinkdServer, RefusesDuplicateAndUnknownHostIds) {
    device a(m_path);
    ASSERT_TRUE(a.hello(1));
    device b(m_path);
    EXPECT_FALSE(b.hello(1));
    device c(m_path);
    EXPECT_FALSE(c.hello(7));
    std::uint64_t v = 0;
    EXPECT_EQ(a.mmio_read(reg_value, v), ODL_LINKD_ST_OK);  // first one unharmed
}

TEST_F(LinkdServer, ModelDmaReadsGuestMemoryThroughDevice) {
    device d(m_path);
    ASSERT_TRUE(d.hello(0));
    ASSERT_TRUE(d.mmio_write(reg_dma, 0x1234000));
    struct odl_linkd_msg req;
    ASSERT_TRUE(d.recv(req));
    ASSERT_EQ(odl_le16(req.hdr.type), ODL_LINKD_DMA_READ);
    EXPECT_EQ(odl_le64(req.body.dma.addr), 0x1234000u);
    ASSERT_EQ(odl_le32(req.body.dma.len), 16u);
    struct odl_linkd_msg cpl;
    odl_linkd_msg_init(&cpl, ODL_LINKD_DMA_READ_CPL, 0, 0, odl_le64(req.hdr.tag));
    cpl.body.dma = req.body.dma;
    std::uint8_t data[16];
    for (int i = 0; i < 16; i++) data[i] = static_cast<std::uint8_t>(i * 3);
    ASSERT_TRUE(d.send(cpl, data, 16));
    ASSERT_TRUE(eventually([&] {
        std::lock_guard<std::mutex> g(m_model.mu);
        return m_model.dma_data.size() == 16;
    }));
    std::lock_guard<std::mutex> g(m_model.mu);
    EXPECT_TRUE(m_model.dma_ok);
    EXPECT_EQ(m_model.dma_data[5], 15);
}

TEST_F(LinkdServer, MmioReadDuringDmaWaitIsAnsweredAfterwards) {
    // The vCPU may issue a read while the model waits for a DMA completion:
    // the server stashes it and answers once the DMA is done.
    device d(m_path);
    ASSERT_TRUE(d.hello(0));
    ASSERT_TRUE(d.mmio_write(reg_dma, 0x2000));
    struct odl_linkd_msg req;
    ASSERT_TRUE(d.recv(req));
    struct odl_linkd_msg rd;
    odl_linkd_msg_init(&rd, ODL_LINKD_MMIO_READ, 0, 0, 77);
    rd.body.mmio.size = 4;
    rd.body.mmio.offset = odl_cpu_le64(reg_value);
    ASSERT_TRUE(d.send(rd));
    struct odl_linkd_msg cpl;
    odl_linkd_msg_init(&cpl, ODL_LINKD_DMA_READ_CPL, 0, 0, odl_le64(req.hdr.tag));
    cpl.body.dma = req.body.dma;
    std::uint8_t data[16] = {1};
    ASSERT_TRUE(d.send(cpl, data, 16));
    struct odl_linkd_msg r;
    ASSERT_TRUE(d.recv(r));
    EXPECT_EQ(odl_le16(r.hdr.type), ODL_LINKD_MMIO_READ_CPL);
    EXPECT_EQ(odl_le64(r.hdr.tag), 77u);
}

TEST_F(LinkdServer, DmaTimeoutDropsOnlyThatHost) {
    device a(m_path), b(m_path);
    ASSERT_TRUE(a.hello(0));
    ASSERT_TRUE(b.hello(1));
    ASSERT_TRUE(a.mmio_write(reg_dma, 0x3000));  // never answered
    ASSERT_TRUE(eventually([&] { return m_model.detaches.load() == 1; }));
    std::lock_guard<std::mutex> g(m_model.mu);
    EXPECT_FALSE(m_model.dma_ok);
    std::uint64_t v = 0;
    EXPECT_EQ(b.mmio_read(reg_value, v), ODL_LINKD_ST_OK);
}

TEST_F(LinkdServer, ForwardsIrq) {
    device d(m_path);
    ASSERT_TRUE(d.hello(0));
    ASSERT_TRUE(d.mmio_write(reg_irq, 5));
    struct odl_linkd_msg r;
    ASSERT_TRUE(d.recv(r));
    EXPECT_EQ(odl_le16(r.hdr.type), ODL_LINKD_IRQ);
    EXPECT_EQ(odl_le16(r.body.irq.vector), 5u);
}

TEST_F(LinkdServer, DisconnectDetachesAndPeerKeepsWorking) {
    device b(m_path);
    ASSERT_TRUE(b.hello(1));
    {
        device a(m_path);
        ASSERT_TRUE(a.hello(0));
        ASSERT_TRUE(eventually([&] { return m_srv->attached_hosts() == 2; }));
    }  // a's QEMU "killed"
    ASSERT_TRUE(eventually([&] { return m_model.detaches.load() == 1; }));
    EXPECT_EQ(m_srv->attached_hosts(), 1u);
    std::uint64_t v = 0;
    EXPECT_EQ(b.mmio_read(reg_value, v), ODL_LINKD_ST_OK);
    device a2(m_path);  // and host 0 may come back
    EXPECT_TRUE(a2.hello(0));
}

TEST_F(LinkdServer, SurvivesGarbageAndDropsPersistentOffender) {
    device b(m_path);
    ASSERT_TRUE(b.hello(1));
    device a(m_path);
    ASSERT_TRUE(a.hello(0));
    std::uint8_t junk[300];
    std::uint32_t x = 7;
    for (int i = 0; i < 60; i++) {
        for (auto& c : junk) {
            x = x * 1103515245u + 12345u;
            c = static_cast<std::uint8_t>(x >> 16);
        }
        a.send_raw(junk, 1 + (x % sizeof(junk)));
    }
    ASSERT_TRUE(eventually([&] { return m_model.detaches.load() == 1; }));
    EXPECT_GE(m_srv->total_bad_msgs(), 50u);
    std::uint64_t v = 0;
    EXPECT_EQ(b.mmio_read(reg_value, v), ODL_LINKD_ST_OK);
}

TEST_F(LinkdServer, DropsSilentAndGarbageFirstConnections) {
    device silent(m_path);
    device junk(m_path);
    const char bad[] = "GET / HTTP/1.0\r\n\r\n";
    junk.send_raw(bad, sizeof(bad));
    struct odl_linkd_msg r;
    EXPECT_FALSE(junk.recv(r, nullptr, 1000));  // closed, no answer
    EXPECT_FALSE(silent.recv(r, nullptr, 1000));
    device ok(m_path);
    EXPECT_TRUE(ok.hello(0));
}

TEST_F(LinkdServer, ResetReachesTheNhi) {
    device d(m_path);
    ASSERT_TRUE(d.hello(0));
    struct odl_linkd_msg m;
    odl_linkd_msg_init(&m, ODL_LINKD_RESET, 0, 0, 0);
    m.body.reset.kind = odl_cpu_le32(ODL_LINKD_RESET_SYSTEM);
    ASSERT_TRUE(d.send(m));
    EXPECT_TRUE(eventually([&] { return m_model.resets.load() == 1; }));
}

/// Guest RAM as QEMU shares it: a memfd, mapped here to check what the
/// server reads and writes through its own mapping.
struct guest_ram {
    explicit guest_ram(std::size_t bytes) : len(bytes) {
        fd = ::memfd_create("odl-test-ram", MFD_CLOEXEC);
        if (fd >= 0 && ::ftruncate(fd, static_cast<off_t>(bytes)) == 0)
            p = static_cast<std::uint8_t*>(
                ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    }
    ~guest_ram() {
        if (p && p != MAP_FAILED) ::munmap(p, len);
        if (fd >= 0) ::close(fd);
    }
    bool ok() const { return fd >= 0 && p && p != MAP_FAILED; }
    int fd = -1;
    std::size_t len;
    std::uint8_t* p = nullptr;
};

int open_fds() {
    int n = 0;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (::readdir(d)) n++;
        ::closedir(d);
    }
    return n;
}

constexpr std::uint64_t ram_base = 0x100000;  // bus address of the shared range
constexpr std::uint16_t cmd_master = 0x6;     // memory space + bus master

TEST_F(LinkdServer, SharedRamServesDmaWithoutRoundTrips) {
    guest_ram ram(1 << 20);
    ASSERT_TRUE(ram.ok());
    for (int i = 0; i < 16; i++) ram.p[0x3000 + i] = static_cast<std::uint8_t>(i * 7);
    device d(m_path);
    std::uint32_t agreed = 0;
    ASSERT_TRUE(d.hello(0, ODL_LINKD_FEAT_SHARED_RAM | 0x80000000u, &agreed));
    EXPECT_EQ(agreed, ODL_LINKD_FEAT_SHARED_RAM);  // unknown bits not echoed
    ASSERT_TRUE(d.devctrl(cmd_master));
    ASSERT_TRUE(d.mem_map(ram_base, ram.len, 0, {ram.fd}));
    ASSERT_TRUE(eventually([&] { return m_srv->live_stats().mem_maps == 1; }));

    ASSERT_TRUE(d.mmio_write(reg_dma, ram_base + 0x3000));
    ASSERT_TRUE(d.mmio_write(reg_dma_wr, ram_base + ram.len - 16));  // last 16 bytes
    ASSERT_TRUE(eventually([&] {
        std::lock_guard<std::mutex> g(m_model.mu);
        return m_model.dma_writes_done == 1;
    }));
    struct odl_linkd_msg r;
    EXPECT_FALSE(d.recv(r, nullptr, 200)) << "a DMA went through the socket";
    {
        std::lock_guard<std::mutex> g(m_model.mu);
        EXPECT_TRUE(m_model.dma_ok);
        ASSERT_EQ(m_model.dma_data.size(), 16u);
        EXPECT_EQ(m_model.dma_data[5], 35);
    }
    EXPECT_EQ(ram.p[ram.len - 16], 0xc0);
    EXPECT_EQ(ram.p[ram.len - 1], 0xcf);
    const conn_stats st = m_srv->live_stats();
    EXPECT_EQ(st.dma_direct, 2u);
    EXPECT_EQ(st.dma_reads + st.dma_writes, 0u);
}

TEST_F(LinkdServer, SharedRamFallsBackToMessagesOutsideRangesOrWithoutBusMaster) {
    guest_ram ram(1 << 16);
    ASSERT_TRUE(ram.ok());
    device d(m_path);
    ASSERT_TRUE(d.hello(0, ODL_LINKD_FEAT_SHARED_RAM));
    ASSERT_TRUE(d.devctrl(cmd_master));
    ASSERT_TRUE(d.mem_map(ram_base, ram.len, 0, {ram.fd}));
    auto expect_message_dma = [&](std::uint64_t addr) {
        ASSERT_TRUE(d.mmio_write(reg_dma, addr));
        struct odl_linkd_msg req;
        ASSERT_TRUE(d.recv(req));
        ASSERT_EQ(odl_le16(req.hdr.type), ODL_LINKD_DMA_READ);
        EXPECT_EQ(odl_le64(req.body.dma.addr), addr);
        struct odl_linkd_msg cpl;
        odl_linkd_msg_init(&cpl, ODL_LINKD_DMA_READ_CPL, 0, 0, odl_le64(req.hdr.tag));
        cpl.body.dma = req.body.dma;
        cpl.body.dma.status = odl_cpu_le32(ODL_LINKD_ST_ERROR);
        ASSERT_TRUE(d.send(cpl));
    };
    expect_message_dma(ram_base - 16);             // below the range
    expect_message_dma(ram_base + ram.len - 8);    // straddles its end
    ASSERT_TRUE(d.devctrl(0x2));                   // bus mastering off
    expect_message_dma(ram_base + 0x100);          // QEMU must refuse it
    ASSERT_TRUE(eventually([&] { return m_srv->live_stats().dma_reads == 3; }));
    EXPECT_EQ(m_srv->live_stats().dma_direct, 0u);
}

TEST_F(LinkdServer, BadMemMapsAreRefusedAndLeakNoDescriptors) {
    guest_ram ram(1 << 16);
    ASSERT_TRUE(ram.ok());
    const int fds_before = open_fds();
    {
        device d(m_path);
        ASSERT_TRUE(d.hello(0, ODL_LINKD_FEAT_SHARED_RAM));
        ASSERT_TRUE(d.devctrl(cmd_master));
        EXPECT_TRUE(d.mem_map(ram_base, ram.len, 0, {}));                // no fd
        EXPECT_TRUE(d.mem_map(ram_base, ram.len, 0, {ram.fd, ram.fd}));  // two
        EXPECT_TRUE(d.mem_map(ram_base, ram.len * 2, 0, {ram.fd}));      // beyond the file
        EXPECT_TRUE(d.mem_map(ram_base, ram.len, 4096, {ram.fd}));       // offset + len beyond
        EXPECT_TRUE(d.mem_map(ram_base + 1, 4096, 0, {ram.fd}));         // unaligned (codec)
        EXPECT_TRUE(d.mem_map(ram_base, 4096, 0, {ram.fd}));             // good
        EXPECT_TRUE(d.mem_map(ram_base, 8192, 0, {ram.fd}));             // overlaps it
        ASSERT_TRUE(eventually([&] { return m_srv->total_bad_msgs() == 6; }));
        EXPECT_EQ(m_srv->live_stats().mem_maps, 1u);
        std::uint64_t v = 0;
        EXPECT_EQ(d.mmio_read(reg_value, v), ODL_LINKD_ST_OK);  // still served
    }
    ASSERT_TRUE(eventually([&] { return m_model.detaches.load() == 1; }));
    EXPECT_TRUE(eventually([&] { return open_fds() == fds_before; }))
        << "descriptors leaked: " << open_fds() << " open, " << fds_before << " before";
}

TEST_F(LinkdServer, MemMapWithoutTheFeatureIsRefused) {
    guest_ram ram(1 << 16);
    ASSERT_TRUE(ram.ok());
    device d(m_path);
    std::uint32_t agreed = 1;
    ASSERT_TRUE(d.hello(0, 0, &agreed));
    EXPECT_EQ(agreed, 0u);
    ASSERT_TRUE(d.devctrl(cmd_master));
    ASSERT_TRUE(d.mem_map(ram_base, ram.len, 0, {ram.fd}));
    ASSERT_TRUE(eventually([&] { return m_srv->total_bad_msgs() == 1; }));
    ASSERT_TRUE(d.mmio_write(reg_dma, ram_base));
    struct odl_linkd_msg req;
    ASSERT_TRUE(d.recv(req));
    EXPECT_EQ(odl_le16(req.hdr.type), ODL_LINKD_DMA_READ);
}

TEST(LinkdServerConfig, SharedRamCanBeTurnedOff) {
    const std::string path = "/tmp/odl-linkd-test-off-" + std::to_string(::getpid()) + ".sock";
    fake_model model;
    server_config cfg;
    cfg.socket_path = path;
    cfg.shared_ram = false;
    server srv(cfg, model);
    std::string err;
    ASSERT_TRUE(srv.listen(err)) << err;
    std::thread t([&] { srv.run(); });
    {
        device d(path);
        std::uint32_t agreed = 1;
        EXPECT_TRUE(d.hello(0, ODL_LINKD_FEAT_SHARED_RAM, &agreed));
        EXPECT_EQ(agreed, 0u);
    }
    srv.stop();
    t.join();
}

/// One command on a control socket; the reply ("" if none came).
std::string control(const std::string& path, const std::string& cmd) {
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un sun {};
    sun.sun_family = AF_UNIX;
    std::snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path.c_str());
    std::string reply;
    if (::connect(fd, reinterpret_cast<struct sockaddr*>(&sun), sizeof(sun)) == 0 &&
        ::send(fd, cmd.data(), cmd.size(), 0) == static_cast<ssize_t>(cmd.size())) {
        struct pollfd p = {fd, POLLIN, 0};
        char buf[1024];
        if (::poll(&p, 1, 5000) == 1) {
            const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
            if (n > 0) reply.assign(buf, static_cast<std::size_t>(n));
        }
    }
    ::close(fd);
    return reply;
}

// "fault ..." control commands go to the configured handler (odl-linkd's
// fault injector) whole, after "fault "; without one they are unknown.
TEST(LinkdServerConfig, FaultCommandsReachTheirHandler) {
    const std::string base = "/tmp/odl-linkd-test-fault-" + std::to_string(::getpid());
    for (bool with : {true, false}) {
        fake_model model;
        server_config cfg;
        cfg.socket_path = base + ".sock";
        cfg.control_path = base + ".ctl";
        std::vector<std::string> seen;
        if (with)
            cfg.fault_command = [&seen](const std::string& c) {
                seen.push_back(c);
                return c == "status" ? std::string("ok injected 0 armed 0") : "error: nope";
            };
        server srv(cfg, model);
        std::string err;
        ASSERT_TRUE(srv.listen(err)) << err;
        std::thread t([&] { srv.run(); });
        const std::string st = control(cfg.control_path, "fault status");
        const std::string add = control(cfg.control_path, "fault add data:len,count=2\n");
        srv.stop();
        t.join();
        if (with) {
            EXPECT_EQ(st, "ok injected 0 armed 0");
            EXPECT_EQ(add, "error: nope");
            ASSERT_EQ(seen.size(), 2u);
            EXPECT_EQ(seen[0], "status");
            EXPECT_EQ(seen[1], "add data:len,count=2");
        } else {
            EXPECT_EQ(st.rfind("error: unknown command", 0), 0u) << st;
            EXPECT_EQ(st.find("fault"), std::string::npos) << st;
        }
    }
}

// ------------------------------------------------------------ deterministic

/// Records what the deterministic server does with the model: when it
/// advances, and the model time of each MMIO write and cable event.
class clocked_model final : public model_backend {
public:
    class port final : public nhi_port {
    public:
        port(clocked_model& m, unsigned h) : m_m(m), m_h(h) {}
        std::uint64_t mmio_read(std::uint64_t, unsigned) override { return m_m.now; }
        void mmio_write(std::uint64_t off, unsigned, std::uint64_t) override {
            m_m.log(fmt::format("{} write host {} {:#x}", m_m.now, m_h, off));
        }
        void reset() override {}
        void devctrl(std::uint16_t, bool) override {}

    private:
        clocked_model& m_m;
        unsigned m_h;
    };
    clocked_model() : ports{{*this, 0}, {*this, 1}} {}
    unsigned host_count() const override { return 2; }
    device_info info(unsigned) const override { return {}; }
    nhi_port& nhi(unsigned h) override { return ports[h]; }
    void attach(unsigned h, host_bus* b) override { log(fmt::format("{} attach host {} {}", now, h, b ? 1 : 0)); }
    void advance_to(std::uint64_t t) override {
        log(fmt::format("advance {}", t));
        now = t;
    }
    std::uint64_t next_event_ps() const override { return UINT64_MAX; }
    unsigned cable_count() const override { return 1; }
    bool set_cable(unsigned, bool plugged) override {
        log(fmt::format("{} cable {}", now, plugged ? "plug" : "unplug"));
        return true;
    }
    void log(std::string line) {
        std::lock_guard<std::mutex> g(mu);
        lines.push_back(std::move(line));
    }
    std::vector<std::string> take() {
        std::lock_guard<std::mutex> g(mu);
        return std::exchange(lines, {});
    }

    port ports[2];
    std::atomic<std::uint64_t> now{0};
    std::mutex mu;
    std::vector<std::string> lines;
};

class LinkdDeterministic : public ::testing::Test {
protected:
    void start(std::vector<std::pair<std::uint64_t, std::string>> events = {}, std::ostream* windows = nullptr) {
        const std::string base = "/tmp/odl-linkd-det-" + std::to_string(::getpid());
        m_path = base + ".sock";
        m_ctl = base + ".ctl";
        server_config cfg;
        cfg.socket_path = m_path;
        cfg.control_path = m_ctl;
        cfg.deterministic = true;
        cfg.quantum_ps = 1'000'000;
        cfg.quantum_max_ps = 8'000'000;
        cfg.sync_timeout_ms = 3000;
        cfg.timed_events = std::move(events);
        cfg.windows = windows;
        m_srv = std::make_unique<server>(cfg, m_model);
        std::string err;
        ASSERT_TRUE(m_srv->listen(err)) << err;
        m_thread = std::thread([this] { m_srv->run(); });
    }
    void TearDown() override { finish(); }
    /// Stops the server (its --windows stream may then be read).
    void finish() {
        if (m_srv) m_srv->stop();
        if (m_thread.joinable()) m_thread.join();
        m_srv.reset();
    }
    static std::vector<std::string> lines_of(const std::ostringstream& o) {
        std::vector<std::string> v;
        std::istringstream in(o.str());
        for (std::string l; std::getline(in, l);) v.push_back(l);
        return v;
    }
    /// Both hosts connect, host 1 first, and report ready at 0.
    void both_ready(device& a, device& b) {
        ASSERT_TRUE(b.hello(1, 0, nullptr, ODL_LINKD_MODE_DET));
        ASSERT_TRUE(a.hello(0, 0, nullptr, ODL_LINKD_MODE_DET));
        ASSERT_TRUE(b.sync(0));
        ASSERT_TRUE(a.sync(0));
    }
    std::string m_path, m_ctl;
    clocked_model m_model;
    std::unique_ptr<server> m_srv;
    std::thread m_thread;
};

// The hosts take turns in host order, whatever order they connected in;
// the model stands still during a window and advances when all have
// reached the horizon. The model meets the hosts in host order too.
TEST_F(LinkdDeterministic, TurnsInHostOrderModelAdvancesAfterAll) {
    start();
    device b(m_path);  // host 1 connects first
    device a(m_path);
    both_ready(a, b);
    EXPECT_EQ(a.grant(), 1'000'000u);
    EXPECT_EQ(b.grant(200), 0u) << "B ran while A had the turn";
    ASSERT_TRUE(a.mmio_write(0x40, 1));
    std::uint64_t v = 0;
    EXPECT_EQ(a.mmio_read(0x10, v), 0);
    EXPECT_EQ(v, 0u) << "the model moved during A's window";
    ASSERT_TRUE(a.sync(1'000'000));
    EXPECT_EQ(b.grant(), 1'000'000u);
    ASSERT_TRUE(b.mmio_write(0x44, 1));
    ASSERT_TRUE(b.sync(1'000'000));
    // Something moved: the next window is one quantum again.
    EXPECT_EQ(a.grant(), 2'000'000u);
    const std::vector<std::string> want = {"0 attach host 0 1", "0 attach host 1 1", "0 write host 0 0x40",
                                           "0 write host 1 0x44", "advance 1000000"};
    EXPECT_EQ(m_model.take(), want);
}

// Idle windows double up to the longest; one MMIO write brings them back
// to a quantum.
TEST_F(LinkdDeterministic, IdleWindowsGrowActivityShrinksThem) {
    start();
    device a(m_path), b(m_path);
    both_ready(a, b);
    std::vector<std::uint64_t> got;
    for (int i = 0; i < 6; i++) {
        const std::uint64_t h = a.grant();
        ASSERT_NE(h, 0u);
        ASSERT_TRUE(a.sync(h));
        ASSERT_EQ(b.grant(), h);
        if (i == 5) {
            ASSERT_TRUE(b.mmio_write(0x48, 1));
        }
        ASSERT_TRUE(b.sync(h));
        got.push_back(h);
    }
    // 1, then doubling: +2, +4, +8 (the longest), +8, +8 with B's write in
    // it, then one quantum.
    const std::uint64_t next = a.grant();
    std::vector<std::uint64_t> steps;
    std::uint64_t prev = 0;
    for (auto h : got) {
        steps.push_back(h - prev);
        prev = h;
    }
    steps.push_back(next - prev);
    const std::vector<std::uint64_t> want = {1'000'000, 2'000'000, 4'000'000, 8'000'000,
                                             8'000'000, 8'000'000, 1'000'000};
    EXPECT_EQ(steps, want);
}

// A host that stops early (after a doorbell) holds the hosts after it to
// its time, and the model advances only that far.
TEST_F(LinkdDeterministic, EarlyStopHoldsTheOthers) {
    start();
    device a(m_path), b(m_path);
    both_ready(a, b);
    ASSERT_EQ(a.grant(), 1'000'000u);
    ASSERT_TRUE(a.sync(1'000'000));
    ASSERT_EQ(b.grant(), 1'000'000u);
    ASSERT_TRUE(b.sync(1'000'000));
    const std::uint64_t h = a.grant();
    ASSERT_EQ(h, 3'000'000u);  // idle: twice the quantum
    ASSERT_TRUE(a.mmio_write(0x40, 1));
    ASSERT_TRUE(a.sync(1'400'000));
    EXPECT_EQ(b.grant(), 1'400'000u);
    ASSERT_TRUE(b.sync(1'400'000));
    EXPECT_EQ(a.grant(), 2'400'000u);
    const auto lines = m_model.take();
    EXPECT_NE(std::find(lines.begin(), lines.end(), "advance 1400000"), lines.end());
    EXPECT_EQ(std::find(lines.begin(), lines.end(), "advance 3000000"), lines.end());
}

// --windows: one line per finished turn (the window, where each host
// stopped, how far the model ran, what moved), in picoseconds.
TEST_F(LinkdDeterministic, WindowsAccountOfEveryTurn) {
    std::ostringstream windows;
    start({}, &windows);
    device a(m_path), b(m_path);
    both_ready(a, b);
    ASSERT_EQ(a.grant(), 1'000'000u);
    ASSERT_TRUE(a.sync(1'000'000));
    ASSERT_EQ(b.grant(), 1'000'000u);
    ASSERT_TRUE(b.sync(1'000'000));
    ASSERT_EQ(a.grant(), 3'000'000u);
    ASSERT_TRUE(a.mmio_write(0x40, 1));
    ASSERT_TRUE(a.sync(1'400'000));
    ASSERT_EQ(b.grant(), 1'400'000u);
    ASSERT_TRUE(b.sync(1'400'000));
    ASSERT_EQ(a.grant(), 2'400'000u);  // a turn under way: not written
    finish();
    // Grants and SYNCs are 2 messages a host; A's write the fifth.
    const std::vector<std::string> want = {"0 1000000 due - 0:1000000 1:1000000 to 1000000 msgs 4",
                                           "1000000 3000000 due - 0:1400000 1:1400000 to 1400000 msgs 5"};
    EXPECT_EQ(lines_of(windows), want);
}

// Refused: a device in the other mode, a host coming back after the run
// started, and cable events on the control socket (they come as timed
// events, applied at their model time).
TEST_F(LinkdDeterministic, RefusalsAndTimedEvents) {
    start({{2'500'000, "cable unplug"}});
    {
        device f(m_path);
        EXPECT_FALSE(f.hello(0)) << "a free-running device was accepted";
    }
    EXPECT_EQ(control(m_ctl, "cable unplug").rfind("error: deterministic mode", 0), 0u);
    EXPECT_EQ(control(m_ctl, "status").rfind("ok hosts 0", 0), 0u);
    device a(m_path);
    auto b = std::make_unique<device>(m_path);
    both_ready(a, *b);
    std::uint64_t h = 0;
    for (int i = 0; i < 4 && h < 2'500'000; i++) {
        h = a.grant();
        ASSERT_NE(h, 0u);
        ASSERT_TRUE(a.sync(h));
        ASSERT_EQ(b->grant(), h);
        ASSERT_TRUE(b->sync(h));
    }
    EXPECT_EQ(h, 2'500'000u) << "a window ran past the timed event";
    h = a.grant();
    ASSERT_NE(h, 0u);
    const auto lines = m_model.take();
    EXPECT_NE(std::find(lines.begin(), lines.end(), "2500000 cable unplug"), lines.end());
    // B leaves; a new host 1 may not join the run under way: its HELLO is
    // answered with TERMINATE between A's turns.
    b.reset();
    device late(m_path);
    struct odl_linkd_msg m;
    odl_linkd_hello_init(&m, 0, 0, 1, ODL_LINKD_MODE_DET, 1);
    ASSERT_TRUE(late.send(m));
    bool refused = false;
    for (int i = 0; i < 20 && !refused; i++) {
        ASSERT_TRUE(a.sync(h));
        h = a.grant();
        ASSERT_NE(h, 0u);
        struct odl_linkd_msg r;
        refused = late.recv(r, nullptr, 10) && odl_le16(r.hdr.type) == ODL_LINKD_TERMINATE;
    }
    EXPECT_TRUE(refused) << "a host joined a run under way";
}


// The testbed mailbox's registers as an agent sees them, and what the
// controller refuses.
TEST(LinkdDetControl, MailboxAndRefusals) {
    det_control c(2);
    EXPECT_EQ(c.mbox_read(0, ODL_LINKD_MBOX_MAGIC, 4), ODL_LINKD_MBOX_MAGIC_VALUE);
    EXPECT_EQ(c.mbox_read(0, ODL_LINKD_MBOX_MAGIC + 1, 2), (ODL_LINKD_MBOX_MAGIC_VALUE >> 8) & 0xffff);
    EXPECT_TRUE(c.may_run(0)) << "a booting run must go on by itself";
    EXPECT_NE(c.exec(0, 1000, "true", 0), "") << "a command before the agents are ready";
    EXPECT_EQ(c.mbox_write(0, ODL_LINKD_MBOX_READY, 4, 1), "");
    EXPECT_FALSE(c.controlled());
    EXPECT_EQ(c.mbox_write(1, ODL_LINKD_MBOX_READY, 4, 1), "");
    EXPECT_TRUE(c.controlled());
    EXPECT_FALSE(c.may_run(0)) << "held, no request";
    EXPECT_NE(c.mbox_write(1, ODL_LINKD_MBOX_READY, 2, 1), "") << "a 16-bit register write";
    EXPECT_NE(c.mbox_write(1, ODL_LINKD_MBOX_CMD, 4, 1), "") << "a write to the command";
    EXPECT_NE(c.exec(2, 1000, "true", 0), "") << "no host 2";
    EXPECT_NE(c.exec(0, 0, "true", 0), "") << "timeout 0";
    EXPECT_NE(c.exec(0, 1000, std::string(ODL_LINKD_MBOX_CMD_MAX + 1, 'x'), 0), "") << "too long";
    EXPECT_NE(c.exec(0, 1000, std::string("a\0b", 3), 0), "") << "a NUL byte";
    ASSERT_EQ(c.exec(1, 5000, "uname -a", 100), "");
    EXPECT_NE(c.advance(10, 100), "") << "a second request while one runs";
    EXPECT_EQ(c.limit(), 5100u);
    EXPECT_EQ(c.mbox_read(1, ODL_LINKD_MBOX_CMD_SEQ, 4), 1u);
    EXPECT_EQ(c.mbox_read(1, ODL_LINKD_MBOX_CMD_LEN, 4), 8u);
    EXPECT_EQ(c.mbox_read(0, ODL_LINKD_MBOX_CMD_SEQ, 4), 0u) << "host 0's mailbox changed";
    EXPECT_EQ(c.mbox_read(1, ODL_LINKD_MBOX_CMD, 4), 0x6d616e75u);  // "unam"
    EXPECT_EQ(c.mbox_read(1, ODL_LINKD_MBOX_CMD + 6, 4), 0x612du) << "zero past the end";
    EXPECT_TRUE(c.may_run(200));
    EXPECT_FALSE(c.finished(200));
    EXPECT_NE(c.mbox_write(1, ODL_LINKD_MBOX_DONE_SEQ, 4, 7), "") << "done with a command never given";
    EXPECT_EQ(c.mbox_write(1, ODL_LINKD_MBOX_DONE_RC, 4, 3), "");
    EXPECT_EQ(c.mbox_write(1, ODL_LINKD_MBOX_DONE_SEQ, 4, 1), "");
    EXPECT_FALSE(c.may_run(300)) << "the run went on after the command finished";
    EXPECT_EQ(c.finished(300).value_or(""), "ok rc 3 seq 1 at 0 ns");
    EXPECT_FALSE(c.busy());
    // A command that does not finish: the answer says so when its time is up,
    // and the host takes no other until it does.
    ASSERT_EQ(c.exec(0, 2'000'000'000, "sleep 9", 1000), "");
    EXPECT_FALSE(c.finished(1000 + 1'999'999'999));
    EXPECT_EQ(c.finished(1000 + 2'000'000'000).value_or("").rfind("error: timeout: command 1 of host 0", 0), 0u);
    EXPECT_NE(c.exec(0, 1000, "true", 3'000'000'000), "") << "a host still running its last command";
    ASSERT_EQ(c.advance(500, 3'000'000'000), "");
    EXPECT_FALSE(c.finished(3'000'000'499));
    EXPECT_EQ(c.finished(3'000'000'500).value_or(""), "ok at 3000000 ns");
    // A host that leaves while its command runs: answered at once.
    ASSERT_EQ(c.exec(1, 1'000'000'000, "poweroff -f", 4'000'000'000), "");
    c.host_left(1);
    EXPECT_FALSE(c.may_run(4'000'000'100));
    EXPECT_EQ(c.finished(4'000'000'100).value_or("").rfind("error: host 1 left the run", 0), 0u);
    EXPECT_NE(c.exec(1, 1000, "true", 4'000'000'100), "") << "a command for a host that left";
}

// Once both agents are ready the run stands still (holds, no grants) until
// a request; an exec goes on until the agent is done, and its answer names
// the exit status; cable events are taken while the run stands; an advance
// ends at its time exactly.
// odl-linkd --event and the `at` request take the same event words.
TEST(LinkdDetControl, KnownCableEvents) {
    using odl::model::linkd::cable_event_word;
    using odl::model::linkd::known_cable_event;
    for (const char* e : {"plug", "unplug", "1 retrain", "0 degrade 3 2", "ber 1e-9"}) EXPECT_TRUE(known_cable_event(e)) << e;
    for (const char* e : {"", "0", "explode", "1 nope", "plugged", "stats"}) EXPECT_FALSE(known_cable_event(e)) << e;
    EXPECT_EQ(cable_event_word("1 nope 3"), "nope");
    EXPECT_EQ(cable_event_word("  ber 1e-9"), "ber");
}

TEST_F(LinkdDeterministic, ControllerHoldsTheRunBetweenRequests) {
    std::ostringstream windows;
    start({}, &windows);
    // (The control socket is read between windows: before the run, then
    // once it stands still.)
    EXPECT_EQ(control(m_ctl, "exec 0 1000 true").rfind("error: the guests' agents are not all ready", 0), 0u);
    device a(m_path), b(m_path);
    both_ready(a, b);
    // One window: each agent finds its mailbox and says it is ready.
    std::uint64_t h = a.grant();
    ASSERT_NE(h, 0u);
    std::uint64_t v = 0;
    ASSERT_EQ(a.mmio_read(ODL_LINKD_MBOX_MAGIC, v, 4, ODL_LINKD_MBOX_BAR), 0);
    EXPECT_EQ(v, ODL_LINKD_MBOX_MAGIC_VALUE);
    ASSERT_TRUE(a.mmio_write(ODL_LINKD_MBOX_READY, 1, ODL_LINKD_MBOX_BAR));
    ASSERT_TRUE(a.sync(h));
    ASSERT_EQ(b.grant(), h);
    ASSERT_TRUE(b.mmio_write(ODL_LINKD_MBOX_READY, 1, ODL_LINKD_MBOX_BAR));
    ASSERT_TRUE(b.sync(h));
    EXPECT_EQ(a.next_sync(1000), 0) << "no hold, or a grant, after both agents were ready";
    EXPECT_EQ(b.next_sync(1000), 0) << "no hold, or a grant, after both agents were ready";
    // The next grant, holds skipped (one comes every few seconds); -1: none.
    const auto grant_of = [](device& d, int timeout_ms) {
        long long g = 0;
        while (g == 0) g = d.next_sync(timeout_ms);
        return g;
    };
    EXPECT_EQ(grant_of(a, 300), -1) << "a grant while the run stands";
    EXPECT_EQ(control(m_ctl, "time"), fmt::format("ok {} ns ready 0,1 held", h / 1000));
    EXPECT_EQ(control(m_ctl, "cable unplug"), "ok");
    // Words apart by more than one space ("cable  plug" was an unknown event 'plug').
    EXPECT_EQ(control(m_ctl, "cable   plug"), "ok");
    EXPECT_EQ(control(m_ctl, "cable  0  unplug"), "ok");
    EXPECT_EQ(control(m_ctl, fmt::format("at {} cable plug", h / 1000)).rfind("error: at", 0), 0u) << "an event in the past";
    EXPECT_EQ(control(m_ctl, "at 99 cable explode").rfind("error: usage: at NS", 0), 0u);
    EXPECT_EQ(control(m_ctl, fmt::format("at {} cable plug", h / 1000 + 1000)), fmt::format("ok at {} ns", h / 1000 + 1000));
    EXPECT_EQ(control(m_ctl, "exec 0 x true").rfind("error: usage: exec", 0), 0u);
    EXPECT_EQ(control(m_ctl, "advance 99999999999999999999").rfind("error: usage: advance", 0), 0u);
    EXPECT_EQ(control(m_ctl, "exec 99999999999999999999 10 true").rfind("error: usage: exec", 0), 0u);
    // An exec: answered once A's agent wrote it done.
    std::string reply;
    std::thread asker([&] { reply = control(m_ctl, "exec 0 5000 echo hi"); });
    std::uint64_t t = h;
    bool done = false;
    for (int i = 0; i < 50 && !done; i++) {
        const long long g = grant_of(a, 2000);
        ASSERT_GT(g, 0) << "no grant for the exec";
        if (!done) {
            ASSERT_EQ(a.mmio_read(ODL_LINKD_MBOX_CMD_SEQ, v, 4, ODL_LINKD_MBOX_BAR), 0);
            if (v == 1) {
                ASSERT_EQ(a.mmio_read(ODL_LINKD_MBOX_CMD, v, 4, ODL_LINKD_MBOX_BAR), 0);
                EXPECT_EQ(v, 0x6f686365u);  // "echo"
                ASSERT_TRUE(a.mmio_write(ODL_LINKD_MBOX_DONE_RC, 3, ODL_LINKD_MBOX_BAR));
                ASSERT_TRUE(a.mmio_write(ODL_LINKD_MBOX_DONE_SEQ, 1, ODL_LINKD_MBOX_BAR));
                done = true;
            }
        }
        t = static_cast<std::uint64_t>(g);
        ASSERT_TRUE(a.sync(t));
        ASSERT_EQ(grant_of(b, 2000), static_cast<long long>(t));
        ASSERT_TRUE(b.sync(t));
    }
    asker.join();
    EXPECT_EQ(reply, fmt::format("ok rc 3 seq 1 at {} ns", t / 1000));
    EXPECT_EQ(grant_of(a, 300), -1) << "the run went on after the exec's answer";
    // An advance of 2.5 us ends there exactly.
    std::thread adv([&] { reply = control(m_ctl, "advance 2500"); });
    std::uint64_t end = t;
    for (int i = 0; i < 50 && end < t + 2'500'000; i++) {
        const long long g = grant_of(a, 2000);
        ASSERT_GT(g, 0);
        end = static_cast<std::uint64_t>(g);
        ASSERT_TRUE(a.sync(end));
        ASSERT_EQ(grant_of(b, 2000), g);
        ASSERT_TRUE(b.sync(end));
    }
    adv.join();
    EXPECT_EQ(end, t + 2'500'000);
    EXPECT_EQ(reply, fmt::format("ok at {} ns", end / 1000));
    const auto lines = m_model.take();
    EXPECT_NE(std::find(lines.begin(), lines.end(), fmt::format("{} cable unplug", h)), lines.end());
    EXPECT_NE(std::find(lines.begin(), lines.end(), fmt::format("{} cable plug", h + 1'000'000)), lines.end())
        << "the event handed over with 'at' did not apply at its time";
    // --windows names what the run took, when; queries and refusals not.
    finish();
    std::vector<std::string> ctl;
    for (const auto& l : lines_of(windows))
        if (l.find(" ctl ") != std::string::npos) ctl.push_back(l);
    const std::vector<std::string> want = {fmt::format("{} ctl cable unplug", h),
                                           fmt::format("{} ctl cable   plug", h),
                                           fmt::format("{} ctl cable  0  unplug", h),
                                           fmt::format("{} ctl at {} cable plug", h, h / 1000 + 1000),
                                           fmt::format("{} ctl exec 0 5000 echo hi", h),
                                           fmt::format("{} ctl advance 2500", t)};
    EXPECT_EQ(ctl, want);
}

}  // namespace
}  // namespace odl::model::linkd
