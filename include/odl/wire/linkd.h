/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * QEMU device (odl-usb4-nhi) <-> model server (odl-linkd) protocol: layout
 * only. This is the one definition; docs/qemu-device.md walks it field by
 * field. Encoding and validation live beside it in linkd_codec.h.
 *
 * Transport: one AF_UNIX SOCK_SEQPACKET connection per emulated NHI. Each
 * datagram is exactly one struct odl_linkd_msg (64 bytes), followed by
 * hdr.payload_len bytes of DMA data for the two message types that carry
 * data (DMA_WRITE, DMA_READ_CPL); every other type has payload_len 0.
 *
 * Every message carries a per-direction sequence number (first message 0,
 * then +1) and the sender's simulated time in picoseconds. In free-running
 * mode the stamps are informative; the deterministic mode (later) uses them
 * as "nothing earlier will follow" promises, as SimBricks does.
 */
#ifndef ODL_WIRE_LINKD_H
#define ODL_WIRE_LINKD_H

#include "odl/wire/wire_common.h"

#define ODL_LINKD_MAGIC 0x4b4c444fu /* "ODLK" little-endian, in HELLO */
#define ODL_LINKD_VERSION_MAJOR 1   /* incompatible changes */
#define ODL_LINKD_VERSION_MINOR 1   /* compatible additions: 1 = MEM_MAP */

#define ODL_LINKD_MSG_BYTES 64u      /* every message, payload excluded */
#define ODL_LINKD_MAX_PAYLOAD 4096u  /* DMA bytes per message, at most */
#define ODL_LINKD_MAX_DATAGRAM (ODL_LINKD_MSG_BYTES + ODL_LINKD_MAX_PAYLOAD)
#define ODL_LINKD_MAX_MMIO_BYTES 8u  /* MMIO access size: 1, 2, 4 or 8 */

/**
 * enum odl_linkd_type - message types.
 * 0x00-0x3f are sent both ways; 0x40-0x5f only by the QEMU device ("dev"),
 * 0x60-0x7f only by the model server ("model"). Gaps are reserved: a
 * receiver counts and drops any type it does not know or that comes from
 * the wrong side.
 */
enum odl_linkd_type {
	ODL_LINKD_HELLO = 0x01,     /* first message each way: body.hello */
	ODL_LINKD_SYNC = 0x02,      /* no body: nothing earlier than ts_ps follows;
				     * from the model with ts_ps 0: a hold */
	ODL_LINKD_TERMINATE = 0x03, /* body.terminate; the sender closes next */

	ODL_LINKD_DEV_FIRST = 0x40,
	ODL_LINKD_MMIO_READ = 0x40,     /* body.mmio; tag = request id */
	ODL_LINKD_MMIO_WRITE = 0x41,    /* body.mmio; posted, no reply */
	ODL_LINKD_DMA_READ_CPL = 0x42,  /* body.dma + data; tag = DMA_READ's */
	ODL_LINKD_DMA_WRITE_CPL = 0x43, /* body.dma; tag = DMA_WRITE's */
	ODL_LINKD_DEVCTRL = 0x44,       /* body.devctrl: PCI command/MSI-X state */
	ODL_LINKD_RESET = 0x45,         /* body.reset: system reset or FLR */
	ODL_LINKD_MEM_MAP = 0x46,       /* body.mem_map + one fd (SCM_RIGHTS) */
	ODL_LINKD_DEV_LAST = 0x46,

	ODL_LINKD_MODEL_FIRST = 0x60,
	ODL_LINKD_DEV_INFO = 0x60,      /* body.dev_info, right after HELLO */
	ODL_LINKD_MMIO_READ_CPL = 0x61, /* body.mmio; tag = MMIO_READ's */
	ODL_LINKD_DMA_READ = 0x62,      /* body.dma; tag = request id */
	ODL_LINKD_DMA_WRITE = 0x63,     /* body.dma + data; tag = request id */
	ODL_LINKD_IRQ = 0x64,           /* body.irq */
	ODL_LINKD_LINK_STATE = 0x65,    /* body.link: cable/peer state changed */
	ODL_LINKD_MODEL_LAST = 0x65,
};

/* odl_linkd_hello.mode: how the two sides keep time */
#define ODL_LINKD_MODE_FREE 0u /* free-running, model paced to wall clock */
#define ODL_LINKD_MODE_DET 1u  /* deterministic, conservative windows (later) */

/*
 * Deterministic mode: a model SYNC with ts_ps 0 is a hold, not a grant: the
 * server is alive and keeps the run stopped (its controller, `odl vm exec`,
 * has not asked for more yet). A waiting device starts its grant timeout
 * again; the server sends one at least every ODL_LINKD_HOLD_INTERVAL_MS.
 */
#define ODL_LINKD_HOLD_INTERVAL_MS 10000u

/*
 * The testbed mailbox (deterministic mode only): BAR 4 of the QEMU device,
 * forwarded to the server like BAR0 (odl_linkd_mmio.bar 4). The guest's
 * agent (qemu-device/guest/init) takes commands from it at points of
 * simulated time the server chooses, so `odl vm exec` does not make a
 * deterministic run differ: the command is there before the guest looks,
 * and the run stands still until the controller sends the next one.
 * Offsets, 32-bit little-endian registers:
 */
#define ODL_LINKD_MBOX_BAR 4u
#define ODL_LINKD_MBOX_BYTES 0x1000u
#define ODL_LINKD_MBOX_MAGIC 0x000u    /* RO: ODL_LINKD_MBOX_MAGIC_VALUE */
#define ODL_LINKD_MBOX_CMD_SEQ 0x004u  /* RO: the latest command's number, 0: none */
#define ODL_LINKD_MBOX_CMD_LEN 0x008u  /* RO: its length in bytes */
#define ODL_LINKD_MBOX_READY 0x00cu    /* WO: 1 once the agent polls */
#define ODL_LINKD_MBOX_DONE_RC 0x010u  /* WO: the finished command's exit status */
#define ODL_LINKD_MBOX_DONE_SEQ 0x014u /* WO: its number; written after DONE_RC */
#define ODL_LINKD_MBOX_CMD 0x100u      /* RO: the command's bytes */
#define ODL_LINKD_MBOX_CMD_MAX (ODL_LINKD_MBOX_BYTES - ODL_LINKD_MBOX_CMD)
#define ODL_LINKD_MBOX_MAGIC_VALUE 0x4d4c444fu /* "ODLM" */

/*
 * odl_linkd_hello.features: unknown bits are ignored. The device sets the
 * bits it offers; the model echoes those it accepts, and only accepted
 * features are used.
 */
/*
 * Shared guest RAM: the device sends MEM_MAP messages that hand the model
 * the file descriptor of guest RAM, so the model performs DMA into RAM
 * itself instead of one DMA_READ/WRITE round trip per access. Offered only
 * when the device has no IOMMU in its path and RAM is a shared fd.
 */
#define ODL_LINKD_FEAT_SHARED_RAM (1u << 0)
#define ODL_LINKD_MAX_MEM_MAPS 32u /* MEM_MAP ranges per connection */
#define ODL_LINKD_MEM_MAP_ALIGN 4096u

/* odl_linkd_body_status values (MMIO_READ_CPL, DMA_*_CPL) */
#define ODL_LINKD_ST_OK 0u
#define ODL_LINKD_ST_ERROR 1u    /* access failed (DMA: bus-master off, unmapped) */
#define ODL_LINKD_ST_BAD_REQ 2u  /* request malformed; nothing was done */

/* odl_linkd_terminate.reason */
#define ODL_LINKD_TERM_NORMAL 0u   /* orderly shutdown */
#define ODL_LINKD_TERM_REFUSED 1u  /* HELLO refused: version, host id in use */
#define ODL_LINKD_TERM_PROTOCOL 2u /* too many malformed messages */

/* odl_linkd_reset.kind */
#define ODL_LINKD_RESET_SYSTEM 0u /* machine reset: device back to power-on */
#define ODL_LINKD_RESET_FLR 1u    /* function-level reset */

/* odl_linkd_irq.kind */
#define ODL_LINKD_IRQ_MSIX 0u

/* odl_linkd_devctrl.flags */
#define ODL_LINKD_DEVCTRL_MSIX_ENABLED (1u << 0)
#define ODL_LINKD_DEVCTRL_MSIX_MASKED (1u << 1) /* function mask */

/**
 * struct odl_linkd_hdr - first 32 bytes of every message.
 * @type: enum odl_linkd_type, set by the sender
 * @flags: zero (none defined; a non-zero value makes the message invalid)
 * @payload_len: data bytes following the 64-byte message; 0 except for
 *	DMA_WRITE and DMA_READ_CPL, where it equals body.dma.len
 * @seq: per-connection, per-direction message counter, first 0, wraps at 2^64
 * @ts_ps: sender's simulated time, ps; non-decreasing per direction
 * @tag: request id tying a completion to its request; 0 where unused
 */
struct odl_linkd_hdr {
	__le16 type;
	__le16 flags;
	__le32 payload_len;
	__le64 seq;
	__le64 ts_ps;
	__le64 tag;
};
ODL_WIRE_SIZE(struct odl_linkd_hdr, 32);

/**
 * struct odl_linkd_hello - HELLO body, first message each way.
 * The device sends its host id; the model answers HELLO, then DEV_INFO, or
 * TERMINATE(REFUSED) and closes.
 * @magic: ODL_LINKD_MAGIC
 * @version_major: ODL_LINKD_VERSION_MAJOR; a different major is refused
 * @version_minor: ODL_LINKD_VERSION_MINOR
 * @features: ODL_LINKD_FEAT_* the sender supports (model: accepts)
 * @host_id: device: which host (NHI) of the model it is, 0 = A, 1 = B, ...;
 *	model: echoes the accepted id
 * @mode: ODL_LINKD_MODE_*; the model answers with the mode it runs in
 * @reserved0: zero
 * @pid: sender's process id (for logs), 0 if not meaningful
 * @reserved1: zero
 */
struct odl_linkd_hello {
	__le32 magic;
	__le16 version_major;
	__le16 version_minor;
	__le32 features;
	__le32 host_id;
	__u8 mode;
	__u8 reserved0[3];
	__le32 pid;
	__le64 reserved1;
};
ODL_WIRE_SIZE(struct odl_linkd_hello, 32);

/**
 * struct odl_linkd_dev_info - DEV_INFO body: what the model's device is.
 * QEMU owns PCI config space and MSI-X; it checks that the model's BAR0
 * size and vector count match its own and refuses the connection otherwise.
 * @vendor_id: PCI vendor id the model expects
 * @device_id: PCI device id the model expects
 * @class_code: 24-bit PCI class code (0x0c0340: USB4 host interface)
 * @revision: PCI revision id
 * @msix_vectors: MSI-X vectors the model may raise, 1..32
 * @hop_count: NHI rings per direction (REG_CAPS.HC), informative
 * @bar0_bytes: size of BAR0, bytes (power of two)
 * @link_latency_ps: modelled host-interface latency, ps (DET mode)
 * @sync_interval_ps: SYNC interval the model wants, ps; 0 in FREE mode
 */
struct odl_linkd_dev_info {
	__le16 vendor_id;
	__le16 device_id;
	__le32 class_code;
	__u8 revision;
	__u8 msix_vectors;
	__le16 hop_count;
	__le32 bar0_bytes;
	__le64 link_latency_ps;
	__le64 sync_interval_ps;
};
ODL_WIRE_SIZE(struct odl_linkd_dev_info, 32);

/**
 * struct odl_linkd_mmio - MMIO_READ, MMIO_WRITE and MMIO_READ_CPL body.
 * @bar: BAR index: 0, or ODL_LINKD_MBOX_BAR in deterministic mode
 * @size: access size in bytes: 1, 2, 4 or 8 (CPL: copied from the request)
 * @reserved0: zero
 * @status: CPL only: ODL_LINKD_ST_*; zero in requests
 * @offset: byte offset within the BAR; offset + size <= BAR size
 * @data: WRITE: value written; CPL: value read; READ: zero. Little-endian
 *	value, the low @size bytes are significant
 * @reserved1: zero
 */
struct odl_linkd_mmio {
	__u8 bar;
	__u8 size;
	__le16 reserved0;
	__le32 status;
	__le64 offset;
	__le64 data;
	__le64 reserved1;
};
ODL_WIRE_SIZE(struct odl_linkd_mmio, 32);

/**
 * struct odl_linkd_dma - DMA_READ, DMA_WRITE and their completions' body.
 * The model asks the device to read or write guest memory; the device does
 * it with pci_dma_read/write (bus mastering and the IOMMU respected).
 * @addr: guest bus address, bytes
 * @len: bytes, 1..ODL_LINKD_MAX_PAYLOAD (CPL: copied from the request)
 * @status: CPL only: ODL_LINKD_ST_*; zero in requests
 * @reserved: zero
 */
struct odl_linkd_dma {
	__le64 addr;
	__le32 len;
	__le32 status;
	__le64 reserved[2];
};
ODL_WIRE_SIZE(struct odl_linkd_dma, 32);

/**
 * struct odl_linkd_irq - IRQ body: raise one interrupt (edge).
 * QEMU owns the MSI-X table, masking and pending bits.
 * @vector: MSI-X vector, < DEV_INFO.msix_vectors
 * @kind: ODL_LINKD_IRQ_MSIX
 * @reserved0: zero
 * @reserved1: zero
 */
struct odl_linkd_irq {
	__le16 vector;
	__u8 kind;
	__u8 reserved0;
	__le32 reserved1[7];
};
ODL_WIRE_SIZE(struct odl_linkd_irq, 32);

/**
 * struct odl_linkd_devctrl - DEVCTRL body, sent on every change.
 * @command: PCI command register (bit 1 memory space, bit 2 bus master)
 * @flags: ODL_LINKD_DEVCTRL_*
 * @reserved: zero
 */
struct odl_linkd_devctrl {
	__le16 command;
	__le16 flags;
	__le32 reserved[7];
};
ODL_WIRE_SIZE(struct odl_linkd_devctrl, 32);

/**
 * struct odl_linkd_mem_map - MEM_MAP body: one range of guest RAM.
 * Sent by the device after the handshake when the model accepted
 * ODL_LINKD_FEAT_SHARED_RAM, one message per range, each with exactly one
 * file descriptor (SCM_RIGHTS) holding that RAM. The model maps
 * [@fd_offset, @fd_offset + @len) of the fd at bus addresses
 * [@addr, @addr + @len) and serves DMA inside a range from the mapping
 * while bus mastering is on; DMA elsewhere still uses DMA_READ/WRITE.
 * @addr: guest bus address of the range, ODL_LINKD_MEM_MAP_ALIGN aligned
 * @len: bytes, non-zero, ODL_LINKD_MEM_MAP_ALIGN aligned
 * @fd_offset: offset of the range in the fd, ODL_LINKD_MEM_MAP_ALIGN aligned
 * @reserved: zero
 */
struct odl_linkd_mem_map {
	__le64 addr;
	__le64 len;
	__le64 fd_offset;
	__le64 reserved;
};
ODL_WIRE_SIZE(struct odl_linkd_mem_map, 32);

/**
 * struct odl_linkd_reset - RESET body.
 * @kind: ODL_LINKD_RESET_*
 * @reserved: zero
 */
struct odl_linkd_reset {
	__le32 kind;
	__le32 reserved[7];
};
ODL_WIRE_SIZE(struct odl_linkd_reset, 32);

/**
 * struct odl_linkd_terminate - TERMINATE body.
 * @reason: ODL_LINKD_TERM_*
 * @reserved: zero
 */
struct odl_linkd_terminate {
	__le32 reason;
	__le32 reserved[7];
};
ODL_WIRE_SIZE(struct odl_linkd_terminate, 32);

/**
 * struct odl_linkd_link - LINK_STATE body: the cable or the peer changed.
 * Informative for the device (traces, link-down handling); the guest learns
 * about it through the NHI's own hot-plug packets.
 * @up: 1 when this host's USB4 port has a live peer, else 0
 * @reserved0: zero
 * @peer_host_id: host id at the other end of the cable, when @up
 * @reserved1: zero
 */
struct odl_linkd_link {
	__u8 up;
	__u8 reserved0[3];
	__le32 peer_host_id;
	__le64 reserved1[3];
};
ODL_WIRE_SIZE(struct odl_linkd_link, 32);

/**
 * struct odl_linkd_msg - one message: header plus a 32-byte body.
 * @hdr: common header
 * @body: interpretation chosen by @hdr.type; unused bytes zero
 */
struct odl_linkd_msg {
	struct odl_linkd_hdr hdr;
	union {
		struct odl_linkd_hello hello;
		struct odl_linkd_dev_info dev_info;
		struct odl_linkd_mmio mmio;
		struct odl_linkd_dma dma;
		struct odl_linkd_irq irq;
		struct odl_linkd_devctrl devctrl;
		struct odl_linkd_reset reset;
		struct odl_linkd_mem_map mem_map;
		struct odl_linkd_terminate terminate;
		struct odl_linkd_link link;
		__u8 raw[32];
	} body;
};
ODL_WIRE_SIZE(struct odl_linkd_msg, ODL_LINKD_MSG_BYTES);

#endif /* ODL_WIRE_LINKD_H */
