/*
 * OdinLink odl-usb4-nhi: client side of the odl-linkd protocol
 * (include/odl/wire/linkd.h). Forwards BAR0 accesses to the model server,
 * performs DMA and raises MSI-X on the model's behalf.
 *
 * Free-running mode: the vCPU blocks (BQL held) on each MMIO read until the
 * model answers; everything else the model sends is handled from a main
 * loop fd handler, or inline while a read waits (the model may need a DMA
 * answered before it can answer the read). If the server is missing, hangs
 * or dies, the link goes down: reads return 0, writes are dropped, the guest
 * keeps running and the client retries the connection.
 *
 * Deterministic mode (deterministic=on, QEMU run with -icount): no fd
 * handler. The guest runs up to the horizon the server granted; a virtual
 * clock timer there sends SYNC and waits, the vCPU stopped, taking the
 * model's DMA and interrupts as they come, until the next grant. With
 * instruction counting, a guest then meets every message at the same
 * instruction in every run.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/error-report.h"
#include "qemu/cutils.h"
#include "qemu/sockets.h"
#include "qemu/main-loop.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/msix.h"
#include "exec/address-spaces.h"
#include "exec/memory.h"
#include "exec/ramblock.h"
#include "qemu/rcu.h"
#include "sysemu/runstate.h"
#include "sysemu/sysemu.h"
#include <poll.h>
#include <sys/un.h>
#include "odl_usb4_nhi.h"
#include "odl/wire/linkd_codec.h"
#include "trace.h"

#define ODL_LINKD_SEND_TIMEOUT_S 5

static void odl_linkd_readable(void *opaque);

static uint64_t odl_linkd_now_ps(void)
{
    return (uint64_t)qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) * 1000;
}

bool odl_linkd_is_up(OdlUsb4NhiState *s)
{
    return s->link.fd >= 0;
}

static void odl_linkd_arm_reconnect(OdlUsb4NhiState *s)
{
    if (s->reconnect_ms && s->link.reconnect_timer) {
        timer_mod(s->link.reconnect_timer,
                  qemu_clock_get_ms(QEMU_CLOCK_REALTIME) + s->reconnect_ms);
    }
}

void odl_linkd_disconnect(OdlUsb4NhiState *s, const char *why)
{
    if (s->link.fd < 0) {
        return;
    }
    trace_odl_nhi_link_down(why);
    warn_report("odl-usb4-nhi: host %u: link to odl-linkd down: %s",
                s->host_id, why);
    qemu_set_fd_handler(s->link.fd, NULL, NULL, NULL);
    close(s->link.fd);
    s->link.fd = -1;
    if (s->link.sync_timer) {
        timer_del(s->link.sync_timer);
    }
    odl_linkd_arm_reconnect(s);
}

/* Send one message (+payload), with file descriptor @pass_fd if >= 0. */
static bool odl_linkd_send_fd(OdlUsb4NhiState *s, struct odl_linkd_msg *m,
                              const void *payload, uint32_t len, int pass_fd)
{
    struct iovec iov[2] = {
        { .iov_base = m, .iov_len = sizeof(*m) },
        { .iov_base = (void *)payload, .iov_len = len },
    };
    struct msghdr mh = { .msg_iov = iov, .msg_iovlen = len ? 2 : 1 };
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    ssize_t n;

    if (s->link.fd < 0) {
        return false;
    }
    if (pass_fd >= 0) {
        struct cmsghdr *c;

        memset(&ctl, 0, sizeof(ctl));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof(ctl.buf);
        c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    m->hdr.payload_len = odl_cpu_le32(len);
    trace_odl_nhi_msg_tx(odl_linkd_type_name(odl_le16(m->hdr.type)),
                         odl_le64(m->hdr.seq), odl_le64(m->hdr.ts_ps),
                         odl_le64(m->hdr.tag));
    do {
        n = sendmsg(s->link.fd, &mh, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n != (ssize_t)(sizeof(*m) + len)) {
        odl_linkd_disconnect(s, n < 0 ? strerror(errno) : "short send");
        return false;
    }
    return true;
}

static bool odl_linkd_send(OdlUsb4NhiState *s, struct odl_linkd_msg *m,
                           const void *payload, uint32_t len)
{
    return odl_linkd_send_fd(s, m, payload, len, -1);
}

static void odl_linkd_msg(OdlUsb4NhiState *s, struct odl_linkd_msg *m,
                          unsigned type, uint64_t tag)
{
    odl_linkd_msg_init(m, type, s->link.tx_seq++, odl_linkd_now_ps(), tag);
}

/*
 * Receive one datagram, waiting at most @timeout_ms.
 * Returns its length, 0 when nothing arrived in time, -1 when the link
 * went down (it is then already marked down).
 */
static ssize_t odl_linkd_recv(OdlUsb4NhiState *s, int timeout_ms)
{
    struct pollfd pfd = { .fd = s->link.fd, .events = POLLIN };
    ssize_t n;
    int r;

    if (s->link.fd < 0) {
        return -1;
    }
    do {
        r = poll(&pfd, 1, timeout_ms);
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
        return 0;
    }
    if (r < 0) {
        odl_linkd_disconnect(s, strerror(errno));
        return -1;
    }
    do {
        /* MSG_TRUNC: learn the real length of an oversized datagram. */
        n = recv(s->link.fd, s->link.buf, sizeof(s->link.buf),
                 MSG_DONTWAIT | MSG_TRUNC);
    } while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return 0;
    }
    if (n <= 0) {
        odl_linkd_disconnect(s, n == 0 ? "server closed the connection"
                                       : strerror(errno));
        return -1;
    }
    if (n > (ssize_t)sizeof(s->link.buf)) {
        /* Counted as bad by the validator through the length check. */
        return sizeof(s->link.buf) + 1;
    }
    return n;
}

/* Validate the datagram in link.buf; false (and counted) if refused. */
static bool odl_linkd_parse(OdlUsb4NhiState *s, size_t len,
                            struct odl_linkd_msg *m)
{
    enum odl_linkd_err err;
    uint64_t seq;

    if (len > sizeof(s->link.buf)) {
        err = ODL_LINKD_ERR_LEN;
    } else {
        err = odl_linkd_check(s->link.buf, len, ODL_LINKD_SIDE_MODEL, m);
    }
    if (err != ODL_LINKD_OK) {
        s->link.bad_msgs++;
        trace_odl_nhi_msg_bad(odl_linkd_err_name(err), len);
        qemu_log_mask(LOG_GUEST_ERROR, "odl-usb4-nhi: dropped malformed "
                      "message from odl-linkd (%s, %zu bytes)\n",
                      odl_linkd_err_name(err), len);
        return false;
    }
    seq = odl_le64(m->hdr.seq);
    if (seq != s->link.rx_seq) {
        qemu_log_mask(LOG_GUEST_ERROR, "odl-usb4-nhi: sequence gap from "
                      "odl-linkd: got %" PRIu64 ", expected %" PRIu64 "\n",
                      seq, s->link.rx_seq);
    }
    s->link.rx_seq = seq + 1;
    trace_odl_nhi_msg_rx(odl_linkd_type_name(odl_le16(m->hdr.type)), seq,
                         odl_le64(m->hdr.ts_ps), odl_le64(m->hdr.tag));
    return true;
}

static bool odl_linkd_bus_master(OdlUsb4NhiState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    return pci_get_word(pdev->config + PCI_COMMAND) & PCI_COMMAND_MASTER;
}

static void odl_linkd_do_dma_read(OdlUsb4NhiState *s,
                                  const struct odl_linkd_msg *req)
{
    uint64_t addr = odl_le64(req->body.dma.addr);
    uint32_t len = odl_le32(req->body.dma.len);
    uint32_t status = ODL_LINKD_ST_OK;
    uint8_t data[ODL_LINKD_MAX_PAYLOAD];
    struct odl_linkd_msg m;

    if (!odl_linkd_bus_master(s)) {
        status = ODL_LINKD_ST_ERROR;
    } else {
        s->link.in_dma = true;
        if (pci_dma_read(PCI_DEVICE(s), addr, data, len) != MEMTX_OK) {
            status = ODL_LINKD_ST_ERROR;
        }
        s->link.in_dma = false;
    }
    trace_odl_nhi_dma_read(addr, len, status);
    odl_linkd_msg(s, &m, ODL_LINKD_DMA_READ_CPL, odl_le64(req->hdr.tag));
    m.body.dma.addr = req->body.dma.addr;
    m.body.dma.len = odl_cpu_le32(len);
    m.body.dma.status = odl_cpu_le32(status);
    odl_linkd_send(s, &m, data, status == ODL_LINKD_ST_OK ? len : 0);
}

static void odl_linkd_do_dma_write(OdlUsb4NhiState *s,
                                   const struct odl_linkd_msg *req,
                                   const uint8_t *data)
{
    uint64_t addr = odl_le64(req->body.dma.addr);
    uint32_t len = odl_le32(req->body.dma.len);
    uint32_t status = ODL_LINKD_ST_OK;
    struct odl_linkd_msg m;

    if (!odl_linkd_bus_master(s)) {
        status = ODL_LINKD_ST_ERROR;
    } else {
        s->link.in_dma = true;
        if (pci_dma_write(PCI_DEVICE(s), addr, data, len) != MEMTX_OK) {
            status = ODL_LINKD_ST_ERROR;
        }
        s->link.in_dma = false;
    }
    trace_odl_nhi_dma_write(addr, len, status);
    odl_linkd_msg(s, &m, ODL_LINKD_DMA_WRITE_CPL, odl_le64(req->hdr.tag));
    m.body.dma.addr = req->body.dma.addr;
    m.body.dma.len = odl_cpu_le32(len);
    m.body.dma.status = odl_cpu_le32(status);
    odl_linkd_send(s, &m, NULL, 0);
}

static void odl_linkd_do_irq(OdlUsb4NhiState *s, const struct odl_linkd_msg *m)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    unsigned vector = odl_le16(m->body.irq.vector);

    if (vector >= ODL_NHI_MSIX_VECTORS) {
        qemu_log_mask(LOG_GUEST_ERROR, "odl-usb4-nhi: model raised MSI-X "
                      "vector %u of %u\n", vector, ODL_NHI_MSIX_VECTORS);
        return;
    }
    trace_odl_nhi_irq(vector, msix_enabled(pdev));
    /* QEMU owns masking and the PBA; a disabled MSI-X drops the event. */
    if (msix_enabled(pdev)) {
        msix_notify(pdev, vector);
    }
}

/* Handle one validated message that is not an MMIO read completion. */
static void odl_linkd_handle(OdlUsb4NhiState *s, const struct odl_linkd_msg *m)
{
    unsigned type = odl_le16(m->hdr.type);

    switch (type) {
    case ODL_LINKD_DMA_READ:
        odl_linkd_do_dma_read(s, m);
        break;
    case ODL_LINKD_DMA_WRITE:
        odl_linkd_do_dma_write(s, m, s->link.buf + ODL_LINKD_MSG_BYTES);
        break;
    case ODL_LINKD_IRQ:
        odl_linkd_do_irq(s, m);
        break;
    case ODL_LINKD_LINK_STATE:
        trace_odl_nhi_link_state(m->body.link.up,
                                 odl_le32(m->body.link.peer_host_id));
        break;
    case ODL_LINKD_SYNC:
        break;
    case ODL_LINKD_TERMINATE:
        odl_linkd_disconnect(s, "server terminated the connection");
        break;
    default:
        /* HELLO/DEV_INFO after the handshake, a stale read completion. */
        s->link.bad_msgs++;
        trace_odl_nhi_msg_bad("unexpected", type);
        qemu_log_mask(LOG_GUEST_ERROR, "odl-usb4-nhi: unexpected %s from "
                      "odl-linkd, dropped\n", odl_linkd_type_name(type));
        break;
    }
}

static void odl_linkd_readable(void *opaque)
{
    OdlUsb4NhiState *s = opaque;
    struct odl_linkd_msg m;
    ssize_t n;
    int i;

    for (i = 0; i < ODL_LINKD_BATCH && s->link.fd >= 0; i++) {
        n = odl_linkd_recv(s, 0);
        if (n <= 0) {
            break;
        }
        if (odl_linkd_parse(s, n, &m)) {
            odl_linkd_handle(s, &m);
        }
    }
}

uint64_t odl_linkd_mmio_read(OdlUsb4NhiState *s, unsigned bar, hwaddr addr,
                             unsigned size)
{
    int64_t deadline;
    struct odl_linkd_msg m;
    uint64_t tag, mask;
    ssize_t n;

    if (s->link.fd < 0) {
        return 0; /* link down: an idle NHI */
    }
    if (s->link.in_dma) {
        /* The model's DMA hit our own BAR: answering would deadlock. */
        qemu_log_mask(LOG_GUEST_ERROR, "odl-usb4-nhi: DMA read of own BAR0 "
                      "at 0x%" HWADDR_PRIx " refused\n", addr);
        return 0;
    }
    tag = ++s->link.next_tag;
    odl_linkd_msg(s, &m, ODL_LINKD_MMIO_READ, tag);
    m.body.mmio.bar = bar;
    m.body.mmio.size = size;
    m.body.mmio.offset = odl_cpu_le64(addr);
    if (!odl_linkd_send(s, &m, NULL, 0)) {
        return 0;
    }

    deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
               ODL_LINKD_READ_TIMEOUT_MS;
    for (;;) {
        int64_t left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);

        if (left <= 0) {
            odl_linkd_disconnect(s, "MMIO read timed out");
            return 0;
        }
        n = odl_linkd_recv(s, left);
        if (n < 0) {
            return 0;
        }
        if (n == 0 || !odl_linkd_parse(s, n, &m)) {
            continue;
        }
        if (odl_le16(m.hdr.type) == ODL_LINKD_MMIO_READ_CPL &&
            odl_le64(m.hdr.tag) == tag) {
            break;
        }
        odl_linkd_handle(s, &m);
        if (s->link.fd < 0) {
            return 0;
        }
    }
    if (odl_le32(m.body.mmio.status) != ODL_LINKD_ST_OK) {
        qemu_log_mask(LOG_GUEST_ERROR, "odl-usb4-nhi: model refused read "
                      "of BAR%u+0x%" HWADDR_PRIx "\n", bar, addr);
        return 0;
    }
    mask = size >= 8 ? UINT64_MAX : ((1ULL << (size * 8)) - 1);
    return odl_le64(m.body.mmio.data) & mask;
}

void odl_linkd_mmio_write(OdlUsb4NhiState *s, unsigned bar, hwaddr addr,
                          uint64_t val, unsigned size)
{
    struct odl_linkd_msg m;

    if (s->link.fd < 0) {
        return;
    }
    odl_linkd_msg(s, &m, ODL_LINKD_MMIO_WRITE, 0);
    m.body.mmio.bar = bar;
    m.body.mmio.size = size;
    m.body.mmio.offset = odl_cpu_le64(addr);
    m.body.mmio.data = odl_cpu_le64(val);
    odl_linkd_send(s, &m, NULL, 0);
    if (s->deterministic && s->link.quantum_ns > 0) {
        /* A doorbell: end the window soon, the peer's with it (odl-linkd). */
        int64_t soon = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                       s->link.quantum_ns;

        if (soon < s->link.horizon_ns) {
            s->link.horizon_ns = soon;
            timer_mod(s->link.sync_timer, soon);
        }
    }
}

void odl_linkd_send_devctrl(OdlUsb4NhiState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);
    struct odl_linkd_msg m;
    uint16_t flags = 0;

    if (s->link.fd < 0) {
        return;
    }
    if (msix_enabled(pdev)) {
        flags |= ODL_LINKD_DEVCTRL_MSIX_ENABLED;
        if (pdev->msix_function_masked) {
            flags |= ODL_LINKD_DEVCTRL_MSIX_MASKED;
        }
    }
    odl_linkd_msg(s, &m, ODL_LINKD_DEVCTRL, 0);
    m.body.devctrl.command =
        odl_cpu_le16(pci_get_word(pdev->config + PCI_COMMAND));
    m.body.devctrl.flags = odl_cpu_le16(flags);
    odl_linkd_send(s, &m, NULL, 0);
}

void odl_linkd_send_reset(OdlUsb4NhiState *s, unsigned kind)
{
    struct odl_linkd_msg m;

    if (s->link.fd < 0) {
        return;
    }
    odl_linkd_msg(s, &m, ODL_LINKD_RESET, 0);
    m.body.reset.kind = odl_cpu_le32(kind);
    odl_linkd_send(s, &m, NULL, 0);
}

/*
 * Wait for one message of @type during the handshake. Returns false when
 * the server closed, timed out, refused us or sent something else.
 */
static bool odl_linkd_expect(OdlUsb4NhiState *s, unsigned type,
                             struct odl_linkd_msg *m, int64_t deadline,
                             Error **errp)
{
    for (;;) {
        int64_t left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
        ssize_t n;

        if (left <= 0) {
            error_setg(errp, "odl-linkd handshake timed out");
            return false;
        }
        n = odl_linkd_recv(s, left);
        if (n < 0) {
            error_setg(errp, "odl-linkd closed the connection during the "
                       "handshake (host id %u in use or refused?)",
                       s->host_id);
            return false;
        }
        if (n == 0) {
            continue;
        }
        if (!odl_linkd_parse(s, n, m)) {
            error_setg(errp, "odl-linkd sent a malformed handshake message");
            return false;
        }
        if (odl_le16(m->hdr.type) == ODL_LINKD_TERMINATE) {
            error_setg(errp, "odl-linkd refused host id %u (reason %u)",
                       s->host_id, odl_le32(m->body.terminate.reason));
            return false;
        }
        if (odl_le16(m->hdr.type) != type) {
            error_setg(errp, "odl-linkd sent %s, expected %s",
                       odl_linkd_type_name(odl_le16(m->hdr.type)),
                       odl_linkd_type_name(type));
            return false;
        }
        return true;
    }
}

static bool odl_linkd_handshake(OdlUsb4NhiState *s, Error **errp)
{
    int64_t deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                       ODL_LINKD_HELLO_TIMEOUT_MS;
    struct odl_linkd_msg m;
    const struct odl_linkd_dev_info *di = &m.body.dev_info;

    odl_linkd_hello_init(&m, s->link.tx_seq++, odl_linkd_now_ps(),
                         s->host_id, s->deterministic ? ODL_LINKD_MODE_DET :
                         ODL_LINKD_MODE_FREE, getpid());
    m.body.hello.features =
        odl_cpu_le32(s->shared_ram ? ODL_LINKD_FEAT_SHARED_RAM : 0);
    if (!odl_linkd_send(s, &m, NULL, 0)) {
        error_setg(errp, "cannot send HELLO to odl-linkd");
        return false;
    }
    if (!odl_linkd_expect(s, ODL_LINKD_HELLO, &m, deadline, errp)) {
        return false;
    }
    s->link.features = odl_le32(m.body.hello.features) &
                       (s->shared_ram ? ODL_LINKD_FEAT_SHARED_RAM : 0);
    if (m.body.hello.mode != (s->deterministic ? ODL_LINKD_MODE_DET :
                              ODL_LINKD_MODE_FREE)) {
        error_setg(errp, "odl-linkd runs %s, this device deterministic=%s",
                   m.body.hello.mode == ODL_LINKD_MODE_DET ? "deterministic"
                                                           : "free",
                   s->deterministic ? "on" : "off");
        return false;
    }
    if (odl_le32(m.body.hello.host_id) != s->host_id) {
        error_setg(errp, "odl-linkd answered for host id %u, asked %u",
                   odl_le32(m.body.hello.host_id), s->host_id);
        return false;
    }
    if (!odl_linkd_expect(s, ODL_LINKD_DEV_INFO, &m, deadline, errp)) {
        return false;
    }
    s->link.quantum_ns = odl_le64(di->sync_interval_ps) / 1000;
    if (odl_le32(di->bar0_bytes) != ODL_NHI_BAR0_SIZE ||
        di->msix_vectors > ODL_NHI_MSIX_VECTORS) {
        error_setg(errp, "odl-linkd model has BAR0 %u bytes, %u MSI-X "
                   "vectors; this device has %u bytes, %u vectors",
                   odl_le32(di->bar0_bytes), di->msix_vectors,
                   ODL_NHI_BAR0_SIZE, ODL_NHI_MSIX_VECTORS);
        return false;
    }
    return true;
}

/*
 * MEM_MAP: hand the model each shared, fd-backed RAM range of the system
 * address space, so that it serves DMA there from its own mapping instead
 * of a DMA_READ/WRITE round trip per access (the co-simulation's main
 * cost). Only without an IOMMU (bus address == guest physical address);
 * the first MiB is left out because chipset shadowing (PAM) may remap it.
 */
static bool odl_linkd_map_range(Int128 start, Int128 len,
                                const MemoryRegion *cmr, hwaddr offset,
                                void *opaque)
{
    OdlUsb4NhiState *s = opaque;
    MemoryRegion *mr = (MemoryRegion *)cmr;
    const uint64_t align = ODL_LINKD_MEM_MAP_ALIGN;
    uint64_t addr = int128_get64(start);
    uint64_t end = addr + int128_get64(len);
    struct odl_linkd_msg m;
    int fd;

    if (!memory_region_is_ram(mr) || memory_region_is_ram_device(mr) ||
        memory_region_is_rom(mr) || mr->readonly || !mr->ram_block ||
        !qemu_ram_is_shared(mr->ram_block)) {
        return false;
    }
    fd = memory_region_get_fd(mr);
    if (fd < 0) {
        return false;
    }
    if (addr < 0x100000) {
        offset += 0x100000 - addr;
        addr = 0x100000;
    }
    if (end <= addr || (addr | offset) % align) {
        return false;
    }
    end = addr + QEMU_ALIGN_DOWN(end - addr, align);
    if (end == addr) {
        return false;
    }
    if (s->link.ram_maps >= ODL_LINKD_MAX_MEM_MAPS) {
        return true;
    }
    odl_linkd_msg(s, &m, ODL_LINKD_MEM_MAP, 0);
    m.body.mem_map.addr = odl_cpu_le64(addr);
    m.body.mem_map.len = odl_cpu_le64(end - addr);
    m.body.mem_map.fd_offset = odl_cpu_le64(offset);
    trace_odl_nhi_mem_map(addr, end - addr, offset);
    if (!odl_linkd_send_fd(s, &m, NULL, 0, fd)) {
        return true;
    }
    s->link.ram_maps++;
    return false;
}

static void odl_linkd_share_ram(OdlUsb4NhiState *s)
{
    PCIDevice *pdev = PCI_DEVICE(s);

    s->link.ram_maps = 0;
    if (!(s->link.features & ODL_LINKD_FEAT_SHARED_RAM) ||
        pci_device_iommu_address_space(pdev) != &address_space_memory) {
        return;
    }
    WITH_RCU_READ_LOCK_GUARD() {
        flatview_for_each_range(address_space_to_flatview(&address_space_memory),
                                odl_linkd_map_range, s);
    }
}

bool odl_linkd_connect(OdlUsb4NhiState *s, Error **errp)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    struct timeval tv = { .tv_sec = ODL_LINKD_SEND_TIMEOUT_S };
    Error *local_err = NULL;
    int fd;

    if (strlen(s->socket_path) >= sizeof(sun.sun_path)) {
        error_setg(errp, "odl-usb4-nhi: socket path too long: %s",
                   s->socket_path);
        return false;
    }
    pstrcpy(sun.sun_path, sizeof(sun.sun_path), s->socket_path);

    fd = qemu_socket(AF_UNIX, SOCK_SEQPACKET, 0);
    if (fd < 0) {
        error_setg_errno(errp, errno, "odl-usb4-nhi: socket");
        return false;
    }
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
        /* Server not there (yet): link down, not a setup error. */
        trace_odl_nhi_connect_failed(s->socket_path, errno);
        close(fd);
        odl_linkd_arm_reconnect(s);
        return true;
    }
    /* A hung server must not hang the vCPU forever in send(). */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));

    s->link.fd = fd;
    s->link.tx_seq = 0;
    s->link.rx_seq = 0;
    s->link.in_dma = false;
    s->link.features = 0;
    if (!odl_linkd_handshake(s, &local_err)) {
        if (s->link.fd >= 0) {
            close(s->link.fd);
            s->link.fd = -1;
        }
        if (errp) {
            error_propagate_prepend(errp, local_err, "odl-usb4-nhi: %s: ",
                                    s->socket_path);
            return false;
        }
        /* Reconnect attempt: log, stay down, retry later. */
        warn_reportf_err(local_err, "odl-usb4-nhi: %s: ", s->socket_path);
        odl_linkd_arm_reconnect(s);
        return false;
    }
    trace_odl_nhi_link_up(s->socket_path, s->host_id);
    odl_linkd_send_devctrl(s);
    odl_linkd_share_ram(s);
    if (s->deterministic) {
        /* The first SYNC, when the guest starts: "ready, at 0". */
        s->link.horizon_ns = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
        timer_mod(s->link.sync_timer, s->link.horizon_ns);
    } else {
        qemu_set_fd_handler(fd, odl_linkd_readable, NULL, s);
    }
    return true;
}

/* An orderly goodbye: TERMINATE (normal), then the link closed for good. */
static void odl_linkd_leave(OdlUsb4NhiState *s)
{
    struct odl_linkd_msg m;

    if (s->link.fd < 0) {
        return;
    }
    odl_linkd_msg(s, &m, ODL_LINKD_TERMINATE, 0);
    m.body.terminate.reason = odl_cpu_le32(ODL_LINKD_TERM_NORMAL);
    odl_linkd_send(s, &m, NULL, 0);
    if (s->link.fd >= 0) {
        qemu_set_fd_handler(s->link.fd, NULL, NULL, NULL);
        close(s->link.fd);
        s->link.fd = -1;
    }
}

/*
 * Deterministic mode: the guest reached the horizon. Tell the server and
 * wait for the next grant, taking the model's DMA and interrupts meanwhile.
 */
static void odl_linkd_sync(void *opaque)
{
    OdlUsb4NhiState *s = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    int64_t deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                       ODL_LINKD_SYNC_TIMEOUT_MS;
    struct odl_linkd_msg m;

    if (s->link.fd < 0) {
        return;
    }
    if (qemu_shutdown_requested_get() != SHUTDOWN_CAUSE_NONE) {
        /*
         * The guest powered off inside this window; the stopped vCPU's clock
         * jumped here. Leave now, in this window, rather than when the main
         * loop gets to the shutdown: a SYNC would let the run go on without
         * us for a wall-clock-dependent while, and the others would see us
         * leave at another simulated time in every run.
         */
        odl_linkd_leave(s);
        return;
    }
    odl_linkd_msg(s, &m, ODL_LINKD_SYNC, 0);
    if (!odl_linkd_send(s, &m, NULL, 0)) {
        return;
    }
    for (;;) {
        int64_t left = deadline - qemu_clock_get_ms(QEMU_CLOCK_REALTIME);
        ssize_t n;

        if (left <= 0) {
            odl_linkd_disconnect(s, "no grant from odl-linkd in time");
            return;
        }
        /*
         * Waiting here holds the main loop, so a SIGTERM or a QMP quit
         * would wait for the next grant, which never comes while the run
         * is held: look for one between slices and leave at this SYNC.
         */
        n = odl_linkd_recv(s, MIN(left, ODL_LINKD_SHUTDOWN_CHECK_MS));
        if (n < 0) {
            return;
        }
        if (n == 0 &&
            qemu_shutdown_requested_get() != SHUTDOWN_CAUSE_NONE) {
            odl_linkd_leave(s);
            return;
        }
        if (n == 0 || !odl_linkd_parse(s, n, &m)) {
            continue;
        }
        if (odl_le16(m.hdr.type) == ODL_LINKD_SYNC) {
            if (odl_le64(m.hdr.ts_ps) != 0) {
                break;
            }
            /* A hold: odl-linkd is alive and keeps the run stopped. */
            deadline = qemu_clock_get_ms(QEMU_CLOCK_REALTIME) +
                       ODL_LINKD_SYNC_TIMEOUT_MS;
            continue;
        }
        odl_linkd_handle(s, &m);
        if (s->link.fd < 0) {
            return;
        }
    }
    s->link.horizon_ns = odl_le64(m.hdr.ts_ps) / 1000;
    trace_odl_nhi_sync(now, s->link.horizon_ns);
    if (s->link.horizon_ns <= now) {
        odl_linkd_disconnect(s, "odl-linkd granted a window in the past");
        return;
    }
    timer_mod(s->link.sync_timer, s->link.horizon_ns);
}

static void odl_linkd_reconnect(void *opaque)
{
    OdlUsb4NhiState *s = opaque;

    if (s->link.fd < 0) {
        odl_linkd_connect(s, NULL);
        if (s->link.fd >= 0) {
            info_report("odl-usb4-nhi: host %u: link to odl-linkd up",
                        s->host_id);
        }
    }
}

static void odl_linkd_at_exit(Notifier *n, void *data)
{
    odl_linkd_leave(container_of(n, OdlUsb4NhiState, link.exit_notifier));
}

void odl_linkd_init(OdlUsb4NhiState *s)
{
    s->link.fd = -1;
    s->link.exit_notifier.notify = odl_linkd_at_exit;
    qemu_add_exit_notifier(&s->link.exit_notifier);
    s->link.reconnect_timer = timer_new_ms(QEMU_CLOCK_REALTIME,
                                           odl_linkd_reconnect, s);
    if (s->deterministic) {
        s->link.sync_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL,
                                          odl_linkd_sync, s);
    }
}

void odl_linkd_cleanup(OdlUsb4NhiState *s)
{
    odl_linkd_leave(s);
    if (s->link.exit_notifier.notify) {
        qemu_remove_exit_notifier(&s->link.exit_notifier);
        s->link.exit_notifier.notify = NULL;
    }
    if (s->link.reconnect_timer) {
        timer_free(s->link.reconnect_timer);
        s->link.reconnect_timer = NULL;
    }
    if (s->link.sync_timer) {
        timer_free(s->link.sync_timer);
        s->link.sync_timer = NULL;
    }
}
