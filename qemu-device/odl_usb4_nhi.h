/*
 * OdinLink emulated USB4 host interface (odl-usb4-nhi): the seam between
 * the QOM/PCI glue (odl_usb4_nhi.c) and the odl-linkd client
 * (odl_linkd_client.c) that forwards BAR0 to the model server.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_MISC_ODL_USB4_NHI_H
#define HW_MISC_ODL_USB4_NHI_H

#include "hw/pci/pci.h"
#include "qemu/notify.h"
#include "qemu/timer.h"
#include "qom/object.h"

#define TYPE_ODL_USB4_NHI "odl-usb4-nhi"
OBJECT_DECLARE_SIMPLE_TYPE(OdlUsb4NhiState, ODL_USB4_NHI)

/* PCI identity: a neutral vendor keeps Linux off the Intel/ICM paths. */
/* 1af4:10f0..10ff: experimental range of QEMU docs/specs/pci-ids.txt */
#define ODL_NHI_VENDOR_ID 0x1af4
#define ODL_NHI_DEVICE_ID 0x10f0
#define ODL_NHI_REVISION 0x01
#define ODL_NHI_CLASS 0x0c0340      /* serial bus / USB / USB4 host interface */

#define ODL_NHI_BAR0 0
#define ODL_NHI_BAR0_SIZE 0x40000   /* 256 KiB: REG_RESET at 0x39898 fits */
#define ODL_NHI_MSIX_BAR 2          /* MSI-X table and PBA, owned by QEMU */
#define ODL_NHI_MSIX_VECTORS 16     /* thunderbolt.ko asks for 6..16 */
#define ODL_NHI_PCIE_CAP_OFFSET 0xa0

/*
 * How long a vCPU waits for an MMIO read answer before the link drops;
 * longer than odl-linkd's own DMA timeout, which may delay the answer.
 */
#define ODL_LINKD_READ_TIMEOUT_MS 10000
/* Handshake budget at connect time. */
#define ODL_LINKD_HELLO_TIMEOUT_MS 2000
/*
 * Deterministic mode: how long the device waits at its horizon for the next
 * grant (the other hosts run their windows and the model advances first).
 * A hold from the server (a SYNC stamped 0) starts the wait again.
 */
#define ODL_LINKD_SYNC_TIMEOUT_MS 120000
/* How often a wait for a grant looks for a shutdown request. */
#define ODL_LINKD_SHUTDOWN_CHECK_MS 100
/* Messages handled per fd-handler call, so the main loop stays responsive. */
#define ODL_LINKD_BATCH 64

/**
 * OdlLinkdClient: one connection to odl-linkd.
 * @fd: SOCK_SEQPACKET socket, -1 while the link is down
 * @tx_seq: sequence number of the next message we send
 * @rx_seq: sequence number we expect next from the model
 * @next_tag: request id of the next MMIO read
 * @in_dma: set while we perform a DMA for the model (re-entrancy guard)
 * @reconnect_timer: retries the connection while the link is down
 * @bad_msgs: malformed or unexpected messages received (never trusted)
 * @features: ODL_LINKD_FEAT_* both sides agreed on at the handshake
 * @ram_maps: guest RAM ranges handed to the model (MEM_MAP)
 * @sync_timer: deterministic mode: fires at the granted horizon
 * @horizon_ns: deterministic mode: end of the window granted, virtual ns
 * @quantum_ns: deterministic mode: a window ends this soon after an MMIO
 *     write (the model's SYNC interval), so that what the write started
 *     is modelled before the guest runs far past it
 * @exit_notifier: says goodbye (TERMINATE) when QEMU exits, which does
 *     not unrealize its devices
 * @buf: receive buffer for one datagram
 */
typedef struct OdlLinkdClient {
    int fd;
    uint64_t tx_seq;
    uint64_t rx_seq;
    uint64_t next_tag;
    bool in_dma;
    QEMUTimer *reconnect_timer;
    uint64_t bad_msgs;
    uint32_t features;
    uint32_t ram_maps;
    QEMUTimer *sync_timer;
    int64_t horizon_ns;
    int64_t quantum_ns;
    Notifier exit_notifier;
    uint8_t buf[64 + 4096];
} OdlLinkdClient;

struct OdlUsb4NhiState {
    PCIDevice parent_obj;

    MemoryRegion bar0;
    MemoryRegion mbox;      /* deterministic mode: the testbed mailbox */
    OdlLinkdClient link;

    /* properties */
    char *socket_path;
    uint32_t host_id;
    uint16_t vendor_id;
    uint16_t device_id;
    uint32_t reconnect_ms;
    bool shared_ram;
    bool deterministic;
};

/* odl_linkd_client.c */
void odl_linkd_init(OdlUsb4NhiState *s);
bool odl_linkd_connect(OdlUsb4NhiState *s, Error **errp);
void odl_linkd_disconnect(OdlUsb4NhiState *s, const char *why);
void odl_linkd_cleanup(OdlUsb4NhiState *s);
bool odl_linkd_is_up(OdlUsb4NhiState *s);
uint64_t odl_linkd_mmio_read(OdlUsb4NhiState *s, unsigned bar, hwaddr addr,
                             unsigned size);
void odl_linkd_mmio_write(OdlUsb4NhiState *s, unsigned bar, hwaddr addr,
                          uint64_t val, unsigned size);
void odl_linkd_send_devctrl(OdlUsb4NhiState *s);
void odl_linkd_send_reset(OdlUsb4NhiState *s, unsigned kind);

#endif /* HW_MISC_ODL_USB4_NHI_H */
