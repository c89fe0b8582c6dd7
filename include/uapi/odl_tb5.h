/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * odl_tb5 user ABI: the character device /dev/odl_tb5_N and its ioctls.
 * The one definition, used by the kernel module (kmod/) and by libodl's
 * kernel backend (userlib/src/backend_kernel.cpp). docs/kmod.md explains it.
 *
 * Data path (since ABI version 1): each open file carries OdinLink frames
 * (include/odl/wire/frame.h) between the two hosts.
 *  - write() takes whole frames back to back, each ODL_FRAME_HDR_BYTES plus
 *    its header's len payload bytes; every header is checked with
 *    odl_frame_decode() before it is sent (-EINVAL for the first bad one).
 *    It returns the bytes of the frames accepted (whole frames only), or
 *    -EAGAIN (O_NONBLOCK, ring full), -ENOTCONN (no session yet), -EPIPE
 *    (session ended), -ENODEV (peer service gone).
 *  - read() returns whole received frames back to back (the buffer must hold
 *    at least ODL_FRAME_MAX_BYTES), each already checked by the module; or
 *    -EAGAIN, -EPIPE once the session ended and nothing is left, -ENODEV.
 *  - poll(): EPOLLIN frames waiting, EPOLLOUT room to send, EPOLLHUP and
 *    EPOLLERR once the session ended or the device is gone.
 * One opener at a time (-EBUSY). A session is up while both hosts have
 * their device open over a logged-in link (state ODL_TB5_STATE_SESSION).
 *
 * Zero-copy data path (ABI version 2): ODL_TB5_IOC_MAP_INFO switches the
 * open file to mmap mode (until it is closed) and returns the layout of
 * three areas the file can then mmap, each whole and at its own offset:
 *  - the control area (read/write): the Rx and Tx completion queues;
 *  - the Tx buffers (read/write): tx_count buffers, buf_size bytes apart;
 *  - the Rx buffers (read-only): rx_count buffers, buf_size bytes apart.
 * Any other offset or length, a private mapping, or mmap before MAP_INFO
 * is refused with -EINVAL; a writable Rx mapping or an executable one with
 * -EPERM. Mapping an area twice gives two views of the same
 * pages. Mappings are not inherited by fork() and cannot grow.
 * Each buffer is owned by either the user or the kernel:
 *  - the Rx completion queue hands the user a received frame: the buffer
 *    index and the frame length (header included), already checked with
 *    odl_frame_decode(); the frame is read in place. ODL_TB5_IOC_POST_RECV
 *    gives buffers back to the NHI.
 *  - the Tx completion queue hands the user a free Tx buffer (at MAP_INFO
 *    every free one, later each one the NHI has sent). The user writes one
 *    whole frame into it and posts it with ODL_TB5_IOC_POST_SEND; the
 *    kernel checks its header with odl_frame_decode() and queues it.
 * Both queues are single producer (kernel) / single consumer (user) rings
 * of cq_entries entries (a power of two, more than the buffers, so they
 * never overflow): the kernel writes entries, then prod with release
 * semantics; the user reads prod with acquire semantics, the entries at
 * cons & (cq_entries - 1), then advances cons (release). Indices are free
 * running u32. A post naming a buffer the user does not own, an index out
 * of range or a bad length or header is refused (-EINVAL; the entries
 * before it were taken, the return value counts them). In mmap mode
 * read() and write() fail with -EOPNOTSUPP; poll() reports EPOLLIN while
 * the Rx queue has entries and EPOLLOUT while the Tx queue has entries (in
 * a session). In interrupt mode the kernel fills the Rx queue as frames
 * arrive (no syscall needed to see them); in polling mode (INFO rx_poll)
 * poll() and POST_RECV take completed frames off the ring.
 *
 * dma-buf send path (ABI version 2 additions; a module without them answers
 * -ENOTTY): in mmap mode the file can import up to ODL_TB5_DMABUF_MAX
 * dma-bufs (ODL_TB5_IOC_DMABUF_IMPORT) and send frames that lie in them
 * without a copy (ODL_TB5_IOC_POST_SEND_DMABUF): the NHI reads each frame
 * from the dma-buf's DMA address. The module maps the dma-buf for the CPU
 * too, because it checks every frame's header with odl_frame_decode()
 * before sending it: an exporter that cannot be mapped for the CPU (vmap)
 * is refused with -EOPNOTSUPP. Each sent (or cancelled) frame comes back
 * as one entry of the Tx completion queue with ODL_TB5_CQE_DMABUF set in
 * its index (see struct odl_tb5_cqe); only then may the user rewrite that
 * memory. The receive side is unchanged (frames arrive in the Rx buffers).
 *
 * Device memory (ABI version 3): an exporter without a CPU mapping (GPU
 * VRAM) is imported device-only (ODL_TB5_DMABUF_DEVICE in the answer; the
 * user may ask for it with ODL_TB5_DMABUF_F_DEVICE). Whole frames cannot be
 * sent from such an import (their headers could not be checked:
 * POST_SEND_DMABUF -> -EINVAL); ODL_TB5_IOC_POST_SEND_SPLIT sends a frame
 * whose 32-byte header is in one of the user's Tx buffers and whose payload
 * is in a dma-buf. On the wire that is a split pair (ODL_FRAME_F_SPLIT header
 * frame, then a raw payload frame on the same ring), which the receiving
 * module puts back together: the receiver reads ordinary frames. Only to a
 * peer that takes split frames (INFO split; its module parameter split=1),
 * otherwise -EOPNOTSUPP.
 */
#ifndef _UAPI_ODL_TB5_H
#define _UAPI_ODL_TB5_H

#include <linux/ioctl.h>
#include <linux/types.h>

#ifdef __KERNEL__
#include <linux/build_bug.h>
#define ODL_TB5_UAPI_SIZE(type, size) static_assert(sizeof(type) == (size), #type)
#elif defined(__cplusplus)
#define ODL_TB5_UAPI_SIZE(type, size) static_assert(sizeof(type) == (size), #type)
#else
#define ODL_TB5_UAPI_SIZE(type, size) _Static_assert(sizeof(type) == (size), #type)
#endif

/*
 * Version 4: the header check of what the user sends takes the frame types
 * of protocol 1.2 (ACK, NAK, PROBE); libodl retransmits only over such a
 * module (an older one refuses those frames with -EINVAL).
 */
#define ODL_TB5_ABI_VERSION 4
#define ODL_TB5_DEV_PREFIX "odl_tb5_" /* /dev/odl_tb5_N */
/* irq_throttle_us (module parameter and device attribute): 0..this */
#define ODL_TB5_IRQ_THROTTLE_MAX_US 1000

/**
 * enum odl_tb5_state - where one device (one bound peer service) stands,
 * seen from the file that asks.
 */
enum odl_tb5_state {
	ODL_TB5_STATE_LOGIN = 1,     /* XDomain login with the peer in progress */
	ODL_TB5_STATE_CONNECTED = 2, /* logged in, DMA paths up; peer not open */
	ODL_TB5_STATE_SESSION = 3,   /* both hosts open: frames flow */
	ODL_TB5_STATE_BROKEN = 4,    /* this file's session ended (peer closed,
				      * logged out or link reset): reopen */
	ODL_TB5_STATE_GONE = 5,      /* peer service removed (unplug, unload) */
};

/**
 * struct odl_tb5_info - ODL_TB5_IOC_INFO: device, peer and link facts.
 * @flags: in: must be 0
 * @abi_version: ODL_TB5_ABI_VERSION
 * @state: enum odl_tb5_state
 * @index: N of /dev/odl_tb5_N
 * @ring_size: descriptors per NHI ring (module parameter ring_size)
 * @frame_bytes: largest frame, bytes (ODL_FRAME_MAX_BYTES)
 * @rx_capacity: frames the module holds for the reader before the NHI
 *	runs out of receive buffers; a sender must keep its credit window
 *	(all streams together) below it
 * @tx_capacity: frames that can be in flight towards the peer
 * @peer_ring_size: the peer's ring size, from its login
 * @peer_version_major: the peer's login protocol major version
 * @peer_version_minor: the peer's login protocol minor version
 * @peer_features: ODL_XD_FEAT_* the peer offered
 * @features: ODL_XD_FEAT_* in use (both offered)
 * @tx_hopid: HopID this host transmits on (its out HopID)
 * @rx_hopid: HopID the peer transmits on
 * @tx_ring: NHI Tx ring number
 * @rx_ring: NHI Rx ring number
 * @link_speed_gbps: per-lane link speed, Gb/s (0 unknown)
 * @link_width: lanes (0 unknown)
 * @connect_count: logins completed since the service was bound
 * @session: number of the current open of this device (1, 2, ...)
 * @route: route string of the peer XDomain
 * @local_uuid: this host's domain UUID
 * @peer_uuid: the peer host's domain UUID
 * @peer_name: the peer's device name from its XDomain properties,
 *	NUL-terminated
 * @rx_poll: 1 when the Rx ring runs in polling mode (module parameter poll)
 * @irq_throttle_ns: minimum interval between two interrupts of this
 *	device's rings as programmed while connected (module parameter
 *	irq_throttle_us, in the NHI's 256 ns units); 0 when not programmed
 *	(not connected, or no per-ring MSI-X vector)
 * @rings: ring pairs in use with the peer (negotiated at login: the
 *	smaller of both offers); 0 while not connected
 * @local_rings: ring pairs this host offers (module parameter rings)
 * @peer_rings: ring pairs the peer offered (1 for a peer without
 *	ODL_XD_FEAT_RINGS); 0 while not connected
 * @split: 1 while connected to a peer that takes split frames
 *	(ODL_XD_FEAT_SPLIT): ODL_TB5_IOC_POST_SEND_SPLIT can send
 * @local_split: 1 when this host takes split frames (module parameter
 *	split); @rx_capacity is then halved, because each frame in flight
 *	towards us may take two receive descriptors until it is put together
 * @reserved: zero
 */
struct odl_tb5_info {
	__u32 flags;
	__u32 abi_version;
	__u32 state;
	__u32 index;
	__u32 ring_size;
	__u32 frame_bytes;
	__u32 rx_capacity;
	__u32 tx_capacity;
	__u32 peer_ring_size;
	__u16 peer_version_major;
	__u16 peer_version_minor;
	__u32 peer_features;
	__u32 features;
	__u32 tx_hopid;
	__u32 rx_hopid;
	__u32 tx_ring;
	__u32 rx_ring;
	__u32 link_speed_gbps;
	__u32 link_width;
	__u32 connect_count;
	__u32 session;
	__u64 route;
	__u8 local_uuid[16];
	__u8 peer_uuid[16];
	char peer_name[64];
	__u32 rx_poll;
	__u32 irq_throttle_ns;
	__u32 rings;
	__u32 local_rings;
	__u32 peer_rings;
	__u32 split;
	__u32 local_split;
	__u32 reserved[1];
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_info, 216);

/* odl_tb5_stats.flags */
#define ODL_TB5_STATS_F_RESET (1u << 0) /* zero the counters after reading */
#define ODL_TB5_STATS_F_KNOWN ODL_TB5_STATS_F_RESET

#define ODL_TB5_RX_BAD_SLOTS 16 /* >= ODL_FRAME_ERR_COUNT */
#define ODL_TB5_RINGS_MAX 4     /* ring pairs per peer (ODL_XD_RINGS_MAX) */

/**
 * struct odl_tb5_stats - ODL_TB5_IOC_STATS: counters since bind (or reset).
 * @flags: in: ODL_TB5_STATS_F_*; unknown bits -> -EINVAL
 * @reserved0: in: zero
 * @tx_frames: frames handed to the NHI
 * @tx_bytes: bytes of those frames, headers included
 * @rx_frames: frames received and queued for the reader
 * @rx_bytes: bytes of those frames, headers included
 * @tx_rejected: frames write() refused (bad header)
 * @tx_ring_full: times write() found no free Tx buffer
 * @rx_dropped_closed: valid frames dropped because nobody had the device open
 * @rx_bad_pdf: frames with an unexpected start/end PDF
 * @rx_bad: refused frames by enum odl_frame_err (index 0: size mismatch
 *	between the NHI descriptor and the header)
 * @logins: completed logins
 * @logouts: logouts received from the peer
 * @login_failures: login requests that failed or timed out
 * @xd_bad: XDomain packets for this service that failed validation
 * @reannounces: times the service was re-announced because a login got
 *	no answer (at most once per bound service)
 * @rx_poll_starts: polling mode: Rx ring interrupts that started a poll
 * @ring_tx_frames: frames handed to each ring pair's Tx ring (wrapping)
 * @ring_rx_frames: frames queued for the reader from each ring pair's Rx
 *	ring (wrapping)
 * @tx_split: split pairs (header + raw payload frame) handed to the NHI by
 *	POST_SEND_SPLIT (each also counts 2 in @tx_frames)
 * @rx_split: split pairs received and put together into one frame (each
 *	also counts 1 in @rx_frames)
 * @rx_bad_split: split frames dropped: a raw frame without a split header
 *	right before it on its ring, a split header followed by anything but
 *	its raw frame, a length mismatch, a split header frame longer than a
 *	header (with split=0 such frames count in @rx_bad_pdf and @rx_bad)
 * @rx_damaged: frames the NHI flagged as damaged (CRC error on the link)
 *	or longer than their buffer, dropped unread; in: zero
 * @reserved: zero
 */
struct odl_tb5_stats {
	__u32 flags;
	__u32 reserved0;
	__u64 tx_frames;
	__u64 tx_bytes;
	__u64 rx_frames;
	__u64 rx_bytes;
	__u64 tx_rejected;
	__u64 tx_ring_full;
	__u64 rx_dropped_closed;
	__u64 rx_bad_pdf;
	__u64 rx_bad[ODL_TB5_RX_BAD_SLOTS];
	__u64 logins;
	__u64 logouts;
	__u64 login_failures;
	__u64 xd_bad;
	__u64 reannounces;
	__u64 rx_poll_starts;
	__u32 ring_tx_frames[ODL_TB5_RINGS_MAX];
	__u32 ring_rx_frames[ODL_TB5_RINGS_MAX];
	__u64 tx_split;
	__u64 rx_split;
	__u64 rx_bad_split;
	__u64 rx_damaged;
	__u64 reserved[1];
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_stats, 320);
/*
 * ABI 2's struct odl_tb5_stats ended before @rx_bad_split (its last two
 * reserved words are now @tx_split and @rx_split). Its STATS command, with
 * that size, is still answered: the counters up to @ring_rx_frames, those
 * two words zero; on input they must be zero as its reserved words were.
 */
#define ODL_TB5_STATS_SIZE_V2 296
#define ODL_TB5_IOC_STATS_V2 \
	_IOC(_IOC_READ | _IOC_WRITE, ODL_TB5_IOC_MAGIC, 0x02, ODL_TB5_STATS_SIZE_V2)

/**
 * struct odl_tb5_cq - head of a completion queue in the control area.
 * @prod: entries produced (kernel writes, release)
 * @pad0: keeps @prod and @cons on separate cache lines
 * @cons: entries consumed (user writes, release); the kernel never trusts it
 *	for anything but poll()'s answer
 * @pad1: zero
 */
struct odl_tb5_cq {
	__u32 prod;
	__u32 pad0[15];
	__u32 cons;
	__u32 pad1[15];
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_cq, 128);

/**
 * struct odl_tb5_cqe - one completion queue entry.
 * @index: buffer index (Rx: < rx_count; Tx: < tx_count); a Tx entry with
 *	ODL_TB5_CQE_DMABUF set is a dma-buf frame instead: the handle in the
 *	low bits (ODL_TB5_CQE_HANDLE_MASK), ODL_TB5_CQE_CANCELED when the frame
 *	was not sent (its ring stopped: disconnect, unplug)
 * @len: Rx: frame bytes, header included; Tx: 0; dma-buf Tx entry: the
 *	frame's offset in the dma-buf (POST_SEND_SPLIT: the payload's offset)
 */
struct odl_tb5_cqe {
	__u32 index;
	__u32 len;
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_cqe, 8);

#define ODL_TB5_CQE_DMABUF (1u << 31)   /* Tx: a dma-buf frame completed */
#define ODL_TB5_CQE_CANCELED (1u << 30) /* with _DMABUF: not sent */
#define ODL_TB5_CQE_HANDLE_MASK 0xffffu /* with _DMABUF: the handle */

/*
 * The control area: the two queue heads, then the Rx queue's cq_entries
 * entries, then the Tx queue's (offsets also in struct odl_tb5_map_info).
 */
struct odl_tb5_ctrl {
	struct odl_tb5_cq rx_cq;
	struct odl_tb5_cq tx_cq;
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_ctrl, 256);

#define ODL_TB5_POST_MAX 1024 /* entries per POST_SEND / POST_RECV call */

/**
 * struct odl_tb5_map_info - ODL_TB5_IOC_MAP_INFO: switch to mmap mode and
 *	get the layout (the same answer on every call of one open).
 * @flags: in: must be 0
 * @tx_count: Tx buffers (indices 0..tx_count-1)
 * @rx_count: Rx buffers
 * @buf_size: bytes between two buffers (>= ODL_FRAME_MAX_BYTES)
 * @cq_entries: entries per completion queue (a power of two)
 * @post_max: most entries in one POST_SEND / POST_RECV (ODL_TB5_POST_MAX)
 * @ctrl_offset: mmap offset of the control area
 * @ctrl_size: its length
 * @tx_offset: mmap offset of the Tx buffers
 * @tx_size: their length
 * @rx_offset: mmap offset of the Rx buffers
 * @rx_size: their length
 * @rx_cqe_offset: offset of the Rx queue's entries in the control area
 * @tx_cqe_offset: offset of the Tx queue's entries in the control area
 * @reserved: in: zero; out: zero
 */
struct odl_tb5_map_info {
	__u32 flags;
	__u32 tx_count;
	__u32 rx_count;
	__u32 buf_size;
	__u32 cq_entries;
	__u32 post_max;
	__u64 ctrl_offset;
	__u64 ctrl_size;
	__u64 tx_offset;
	__u64 tx_size;
	__u64 rx_offset;
	__u64 rx_size;
	__u32 rx_cqe_offset;
	__u32 tx_cqe_offset;
	__u32 reserved[8];
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_map_info, 112);

/**
 * struct odl_tb5_post - ODL_TB5_IOC_POST_SEND / ODL_TB5_IOC_POST_RECV /
 *	ODL_TB5_IOC_POST_SEND_DMABUF / ODL_TB5_IOC_POST_SEND_SPLIT.
 * @count: entries at @entries, 1..ODL_TB5_POST_MAX
 * @flags: must be 0
 * @entries: user pointer: POST_SEND an array of struct odl_tb5_cqe (index
 *	and frame length, header included); POST_RECV an array of __u32
 *	buffer indices; POST_SEND_DMABUF an array of struct
 *	odl_tb5_dmabuf_entry; POST_SEND_SPLIT an array of struct
 *	odl_tb5_split_entry
 * Return (of the ioctl): entries taken (> 0), or -errno when none was:
 * -EINVAL (not in mmap mode, bad count/flags/index/length/header, a buffer
 * the user does not own), -EFAULT, POST_SEND also -ENOTCONN (no session
 * yet), -EPIPE (session ended), -ENODEV (peer service gone; POST_RECV too).
 */
struct odl_tb5_post {
	__u32 count;
	__u32 flags;
	__u64 entries;
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_post, 16);

#define ODL_TB5_DMABUF_MAX 16 /* imports per open file */

/* odl_tb5_dmabuf_import.flags (in) */
#define ODL_TB5_DMABUF_F_DEVICE (1u << 0) /* import device-only: no CPU mapping */
#define ODL_TB5_DMABUF_F_KNOWN ODL_TB5_DMABUF_F_DEVICE
/* odl_tb5_dmabuf_import.oflags (out) */
#define ODL_TB5_DMABUF_DEVICE (1u << 0) /* device-only: POST_SEND_SPLIT only */

/**
 * struct odl_tb5_dmabuf_import - ODL_TB5_IOC_DMABUF_IMPORT: import a dma-buf
 *	for POST_SEND_DMABUF (mmap mode only).
 * @fd: in: the dma-buf's file descriptor (the file may close it afterwards:
 *	the import holds its own reference until released)
 * @flags: in: ODL_TB5_DMABUF_F_*: ODL_TB5_DMABUF_F_DEVICE imports it
 *	device-only even when the exporter could map it for the CPU
 * @handle: out: 1..ODL_TB5_DMABUF_MAX; a released handle may be reused
 * @oflags: in: zero; out: ODL_TB5_DMABUF_DEVICE when the import is
 *	device-only (asked for, or the exporter gives no CPU mapping or only
 *	an I/O-memory one): POST_SEND_DMABUF refuses it (-EINVAL),
 *	POST_SEND_SPLIT takes payloads from it
 * @size: out: the dma-buf's size in bytes
 * @reserved: in: zero
 * The module attaches the dma-buf to the NHI's DMA device, maps it
 * (DMA_TO_DEVICE) and, unless device-only, maps it for the CPU (it checks
 * the headers of whole frames there). Return: 0, or -EBADF (@fd is not
 * open), -EINVAL (@fd is not a dma-buf, unknown flags, @oflags or reserved
 * not zero, not in mmap mode, a dma-buf above 4 GiB), -ENOSPC
 * (ODL_TB5_DMABUF_MAX imports already), an error of the exporter's attach
 * or map, -EFAULT, -ENODEV. (ABI 2 refused an exporter without a CPU
 * mapping with -EOPNOTSUPP.)
 */
struct odl_tb5_dmabuf_import {
	__s32 fd;
	__u32 flags;
	__u32 handle;
	__u32 oflags;
	__u64 size;
	__u64 reserved[2];
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_dmabuf_import, 40);

/**
 * struct odl_tb5_dmabuf_release - ODL_TB5_IOC_DMABUF_RELEASE.
 * @handle: in: from DMABUF_IMPORT
 * @flags: in: must be 0
 * Return: 0, -EBUSY while a frame of it is in flight (its completion is
 * still to come), -EINVAL (unknown handle, flags not zero). Closing the
 * file releases every import (after the frames in flight, which still go
 * out or are cancelled).
 */
struct odl_tb5_dmabuf_release {
	__u32 handle;
	__u32 flags;
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_dmabuf_release, 8);

/**
 * struct odl_tb5_dmabuf_entry - one frame of ODL_TB5_IOC_POST_SEND_DMABUF,
 *	whose struct odl_tb5_post.entries points to an array of these.
 * @handle: the import holding the frame
 * @len: frame bytes, header included (ODL_FRAME_HDR_BYTES plus the header's
 *	len, at most ODL_FRAME_MAX_BYTES)
 * @offset: where the frame starts in the dma-buf; the frame must lie in
 *	one DMA-contiguous segment of the dma-buf's mapping (never across
 *	one: a frame that does not cross a page boundary always qualifies)
 * Return (of the ioctl): as POST_SEND; also -EAGAIN when no dma-buf slot is
 * free: every slot is in flight, or the Tx completion queue could not take
 * one more completion (consume its entries: the module counts unconsumed
 * entries from tx_cq.cons); -EINVAL for a device-only import.
 */
struct odl_tb5_dmabuf_entry {
	__u32 handle;
	__u32 len;
	__u64 offset;
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_dmabuf_entry, 16);

/**
 * struct odl_tb5_split_entry - one frame of ODL_TB5_IOC_POST_SEND_SPLIT
 *	(ABI 3), whose struct odl_tb5_post.entries points to an array of these:
 *	header in a Tx buffer, payload in a dma-buf (any import, device-only
 *	or not).
 * @tx_index: the Tx buffer holding the frame's ODL_FRAME_HDR_BYTES-byte
 *	DATA header (a buffer the user owns, as for POST_SEND); checked with
 *	the shared codec as the header of a @len-byte payload. The module
 *	sets ODL_FRAME_F_SPLIT in it (the user need not)
 * @handle: the import holding the payload
 * @offset: where the payload starts in the dma-buf; @len bytes from there
 *	must lie in one DMA-contiguous segment (as for POST_SEND_DMABUF)
 * @len: payload bytes, 1..ODL_FRAME_MAX_PAYLOAD, equal to the header's len
 * @reserved: zero
 * Both frames go on the stream's ring back to back. Completions: the Tx
 * buffer comes back as an ordinary Tx queue entry (its index) once the
 * header frame was sent (or cancelled); the payload range as a dma-buf
 * entry (ODL_TB5_CQE_DMABUF | handle, ODL_TB5_CQE_CANCELED if not sent,
 * len = @offset) after the payload frame. The dma-buf range may be
 * rewritten after its entry, the Tx buffer after its own.
 * Return (of the ioctl): entries taken, or -errno when none was: -EINVAL
 * (bad index, a Tx buffer the user does not own, bad header, @len not the
 * header's or out of range, unknown handle, outside the dma-buf or across a
 * segment, reserved not zero, not in mmap mode), -EFAULT, -ENOTCONN,
 * -EPIPE, -ENODEV, -EOPNOTSUPP (the peer does not take split frames: INFO
 * split is 0), -EAGAIN (as POST_SEND_DMABUF).
 */
struct odl_tb5_split_entry {
	__u32 tx_index;
	__u32 handle;
	__u64 offset;
	__u32 len;
	__u32 reserved;
};
ODL_TB5_UAPI_SIZE(struct odl_tb5_split_entry, 24);

#define ODL_TB5_IOC_MAGIC 0xB5
#define ODL_TB5_IOC_INFO _IOWR(ODL_TB5_IOC_MAGIC, 0x01, struct odl_tb5_info)
#define ODL_TB5_IOC_STATS _IOWR(ODL_TB5_IOC_MAGIC, 0x02, struct odl_tb5_stats)
#define ODL_TB5_IOC_MAP_INFO _IOWR(ODL_TB5_IOC_MAGIC, 0x03, struct odl_tb5_map_info)
#define ODL_TB5_IOC_POST_SEND _IOW(ODL_TB5_IOC_MAGIC, 0x04, struct odl_tb5_post)
#define ODL_TB5_IOC_POST_RECV _IOW(ODL_TB5_IOC_MAGIC, 0x05, struct odl_tb5_post)
#define ODL_TB5_IOC_DMABUF_IMPORT \
	_IOWR(ODL_TB5_IOC_MAGIC, 0x06, struct odl_tb5_dmabuf_import)
#define ODL_TB5_IOC_DMABUF_RELEASE \
	_IOW(ODL_TB5_IOC_MAGIC, 0x07, struct odl_tb5_dmabuf_release)
#define ODL_TB5_IOC_POST_SEND_DMABUF \
	_IOW(ODL_TB5_IOC_MAGIC, 0x08, struct odl_tb5_post)
#define ODL_TB5_IOC_POST_SEND_SPLIT \
	_IOW(ODL_TB5_IOC_MAGIC, 0x09, struct odl_tb5_post)

#endif /* _UAPI_ODL_TB5_H */
