/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * odl_tb5: private state of the OdinLink Thunderbolt service driver.
 */
#ifndef ODL_TB5_PRIV_H
#define ODL_TB5_PRIV_H

#include <linux/cdev.h>
#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/iosys-map.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/rwsem.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/thunderbolt.h>
#include <linux/wait.h>
#include <linux/workqueue.h>

#include "odl/wire/frame_codec.h"
#include "odl/wire/tb5_login_codec.h"
#include "uapi/odl_tb5.h"

/* Protocol timeouts in ms */
#define ODL_LOGIN_DELAY_MS 100     /* after probe, before the first login */
#define ODL_LOGIN_TIMEOUT_MS 500   /* per XDomain request */
#define ODL_LOGIN_RETRY_MS 1000    /* between login attempts */
#define ODL_LOGIN_RETRIES 60       /* then wait for the peer's login */
#define ODL_LOGIN_BACK_MS 3000     /* our LOGIN accepted, the peer's due */
#define ODL_PORT_RETRIES 5         /* open/close notice attempts */

#define ODL_MIN_HOPID ODL_XD_MIN_HOPID /* TB_PATH_MIN_HOPID, private to thunderbolt.ko */
#define ODL_RING_SIZE_MIN ODL_XD_RING_SIZE_MIN
#define ODL_RING_SIZE_MAX ODL_XD_RING_SIZE_MAX
#define ODL_RINGS_MAX ODL_XD_RINGS_MAX /* ring pairs per peer */

static_assert(ODL_RINGS_MAX == ODL_TB5_RINGS_MAX);
static_assert(ODL_RINGS_MAX <= BITS_PER_LONG); /* odl_tb5.rx_poll bits */
/* ABI 2 callers of STATS get the struct up to here (ioctl.c) */
static_assert(offsetof(struct odl_tb5_stats, rx_bad_split) == ODL_TB5_STATS_SIZE_V2);

extern unsigned int odl_ring_size;
extern unsigned int odl_rings;
extern bool odl_announce;
extern bool odl_poll_mode;
extern bool odl_split;
extern unsigned int odl_irq_throttle_us;
extern unsigned int odl_test_unplug_race_ms;
extern unsigned int odl_test_login_delay_ms;
extern const uuid_t odl_svc_uuid;

/**
 * struct odl_buf - one frame buffer (a page) and its NHI descriptor.
 * @frame: the ring frame handed to the NHI
 * @page: backing page
 * @dma: DMA address of @page (streaming mapping, IOMMU safe)
 * @odl: owner
 * @ring: Rx: the ring pair whose Rx ring this buffer always goes back to
 *	(each ring has its own ring_size - 1 buffers); Tx: unused
 * @marker: Tx: one of the kernel's GOODBYE copies (never the user's)
 * @list: on odl_tb5.tx_free, rx_queue or rx_idle (guarded by the list's lock)
 * @user: mmap mode: the user owns it (handed out through a completion
 *	queue, not yet posted back; tx_lock or rx_lock)
 */
struct odl_buf {
	struct ring_frame frame;
	struct page *page;
	dma_addr_t dma;
	struct odl_tb5 *odl;
	unsigned int ring;
	bool marker;
	struct list_head list;
	bool user;
};

/**
 * struct odl_ring - one NHI Tx/Rx ring pair with its own HopIDs.
 * @odl: owner
 * @index: position in odl_tb5.ring
 * @tx: NHI Tx ring
 * @rx: NHI Rx ring
 * @tx_hopid: our out HopID for this pair
 * @rx_hopid: the HopID the peer transmits on for this pair (its login;
 *	@odl->lock while connected)
 * @rx_hopid_alloc: @rx_hopid is allocated (@odl->lock)
 * @throttle_set: @throttle_saved holds values to restore (@odl->lock)
 * @throttle_saved: interrupt throttle values found on the Tx and Rx
 *	ring vectors, restored on disconnect
 * @split_pending: the last frame of this Rx ring was a split header
 *	(ODL_FRAME_F_SPLIT); its raw payload frame must come next (rx_lock)
 * @split_hdr: that header, kept until the payload comes (its buffer went
 *	back to the ring at once; rx_lock)
 * @rx_stopping: poll mode: the Rx ring is about to be stopped, so its
 *	interrupt must stay unmasked (odl_rx_poll_quiesce(); set under
 *	@odl->lock and io_rwsem, cleared by connect before the ring starts;
 *	read by the interrupt under the NHI's lock)
 */
struct odl_ring {
	struct odl_tb5 *odl;
	unsigned int index;
	struct tb_ring *tx;
	struct tb_ring *rx;
	int tx_hopid;
	int rx_hopid;
	bool rx_hopid_alloc;
	bool throttle_set;
	u32 throttle_saved[2];
	bool split_pending;
	u8 split_hdr[ODL_FRAME_HDR_BYTES];
	bool rx_stopping;
};

/**
 * struct odl_map - mmap mode of the open file (mmap.c), from MAP_INFO until
 *	the file is released (mappings hold the file, so none outlives it).
 * @ctrl: control area (vmalloc_user): the two completion queue heads,
 *	then the entries; user-writable, so the kernel keeps its own producer
 *	indices and never trusts what it reads there
 * @rx_cqe: Rx queue entries in @ctrl
 * @tx_cqe: Tx queue entries in @ctrl
 * @mask: entries per queue - 1
 * @rx_prod: Rx queue producer index (rx_lock)
 * @tx_prod: Tx queue producer index (tx_lock)
 * @ntx: Tx buffers (tx_count)
 * @nrx: Rx buffers (rx_count)
 * @tx_pages: the Tx buffers' pages, each with a reference of its own, so
 *	mmap() can map them even after remove freed the buffers
 * @rx_pages: the same for Rx
 * @info: the layout MAP_INFO returns
 */
struct odl_map {
	struct odl_tb5_ctrl *ctrl;
	struct odl_tb5_cqe *rx_cqe;
	struct odl_tb5_cqe *tx_cqe;
	u32 mask;
	u32 rx_prod;
	u32 tx_prod;
	unsigned int ntx;
	unsigned int nrx;
	struct page **tx_pages;
	struct page **rx_pages;
	struct odl_tb5_map_info info;
};

/**
 * struct odl_dmabuf_seg - one DMA-contiguous piece of an imported dma-buf.
 * @start: its offset in the dma-buf
 * @len: bytes
 * @dma: its DMA address for the NHI
 */
struct odl_dmabuf_seg {
	u64 start;
	u64 len;
	dma_addr_t dma;
};

/**
 * struct odl_dmabuf - a dma-buf imported by the open file (dmabuf.c).
 * @odl: owner
 * @dbuf: the dma-buf (one reference of ours)
 * @attach: its attachment to the NHI's DMA device
 * @sgt: its DMA mapping (DMA_TO_DEVICE)
 * @vmap: its CPU mapping (the module reads each frame's header)
 * @va: @vmap's address; NULL for a device-only import (no CPU mapping:
 *	POST_SEND_SPLIT payloads only)
 * @size: bytes
 * @nseg: entries of @seg
 * @seg: the DMA segments, in dma-buf order
 * @handle: the user's name for it (table index + 1)
 * @inflight: frames of it on a ring (tx_lock)
 * @orphan: its file let go of it (released the file): the completion
 *	that brings @inflight to 0 frees it (tx_lock)
 */
struct odl_dmabuf {
	struct odl_tb5 *odl;
	struct dma_buf *dbuf;
	struct dma_buf_attachment *attach;
	struct sg_table *sgt;
	struct iosys_map vmap;
	void *va;
	u64 size;
	unsigned int nseg;
	struct odl_dmabuf_seg *seg;
	u32 handle;
	unsigned int inflight;
	bool orphan;
};

/**
 * struct odl_dmabuf_slot - the descriptor of one dma-buf frame in flight.
 * @frame: the ring frame (buffer_phy inside the dma-buf)
 * @odl: owner
 * @imp: the import the frame lies in, NULL while free
 * @offset: the frame's offset in @imp
 * @list: on odl_tb5.dmabuf_free while free (tx_lock)
 */
struct odl_dmabuf_slot {
	struct ring_frame frame;
	struct odl_tb5 *odl;
	struct odl_dmabuf *imp;
	u32 offset;
	struct list_head list;
};

/**
 * struct odl_tb5 - one bound peer OdinLink service: /dev/odl_tb5_N.
 * @dev: the char device's struct device; its release frees this struct, so
 *	open files (through the cdev) keep it alive after remove
 * @cdev: /dev/odl_tb5_N
 * @index: N
 * @index_held: @index is ours in the IDA (given back at remove, so that a
 *	returning peer gets the same N while an old file is still open)
 * @svc: the bound service, set by probe once the rings and buffers exist,
 *	NULL after remove (written under @lock or in probe, and under
 *	@io_rwsem for write: the file operations check it under it)
 * @xd: the peer XDomain (valid until remove)
 * @handler: XDomain protocol handler for the OdinLink UUID
 * @lock: serializes login, connect, disconnect, open, close and remove
 * @xd_lock: one outgoing XDomain request at a time (responses match by
 *	route and UUID only)
 * @io_rwsem: held for read by read/write/ioctl while they touch buffers and
 *	rings; held for write by remove before it frees them
 * @login_work: sends LOGIN, retried (@lock)
 * @connect_work: enables the DMA paths once both logins are done
 * @reset_work: disconnects after LOGOUT or a fresh LOGIN from the peer
 * @port_work: tells the peer that the device was opened or closed
 * @login_retries: attempts left (@lock)
 * @login_back_by: jiffies by which the peer's LOGIN is due once ours was
 *	accepted (@lock)
 * @login_backs: logins left that may repeat ours for a LOGIN that did not
 *	come back (@lock)
 * @reannounced: the property directory was re-announced for this peer
 *	(@lock; at most once per bound service)
 * @login_compat: the peer refused our rings fields as a 1.0 peer; offer
 *	one ring (the 1.0 LOGIN) from now on (only the login work uses it)
 * @login_sent: our LOGIN was accepted (@lock)
 * @login_received: the peer's LOGIN was accepted (@lock, set by the handler
 *	under @state_lock)
 * @connected: DMA paths enabled (@state_lock to change, READ_ONCE to read)
 * @gone: service removed (@state_lock)
 * @local_open: a file has the device open (@state_lock)
 * @peer_open: the peer's device is open (@state_lock)
 * @session_seen: this open has had a session (@state_lock)
 * @broken: this open's session ended (@state_lock)
 * @session: open counter (@state_lock)
 * @connect_count: completed logins (@state_lock)
 * @state_lock: guards the flags above and the peer terms below
 * @remote_paths: HopIDs the peer transmits on, one per ring it offered
 *	(from its LOGIN)
 * @peer_rings: ring pairs the peer offered (1 without ODL_XD_FEAT_RINGS)
 * @nrings: ring pairs of the current or last connection (min of both
 *	offers; set by connect under @lock before @connected, READ_ONCE in
 *	the data path), 0 before the first
 * @peer_ring_size: from the peer's LOGIN
 * @peer_ver_major: from the peer's LOGIN
 * @peer_ver_minor: from the peer's LOGIN
 * @peer_features: from the peer's LOGIN
 * @command_id: counter for our requests (@xd_lock)
 * @ring: the ring pairs; the first @rings are allocated (probe)
 * @rings: ring pairs this host offers (module parameter rings)
 * @ring_size: descriptors per ring
 * @tx_count: Tx buffers shared by all rings (ring_size - 1: any ring can
 *	take all of them); then @rings - 1 GOODBYE markers
 * @rx_count: Rx buffers, ring_size - 1 per ring (ring i owns
 *	[i * (ring_size - 1), (i + 1) * (ring_size - 1)), so a ring always has
 *	room for its own and each ring can take a whole link window)
 * @tx_bufs: @tx_count user Tx buffers, then the markers
 * @rx_bufs: @rx_count Rx buffers
 * @map: mmap mode of the open file, or NULL (set under @io_rwsem for
 *	write, published with release semantics for mmap(); cleared on release)
 * @tx_map: @map as the Tx completion path sees it (@tx_lock)
 * @rx_map: @map as the Rx completion path sees it (@rx_lock)
 * @tx_ring_lock: held around every enqueue on a Tx ring, so that the two
 *	frames of a split pair go on their ring back to back
 * @tx_lock: guards @tx_free
 * @tx_free: Tx buffers not in flight
 * @rx_lock: guards @rx_queue and @rx_idle, and orders Rx reposts with
 *	ring start
 * @rx_queue: received frames waiting for the reader
 * @rx_idle: Rx buffers owned by nobody (ring stopped)
 * @rx_held: frames of rings >= 1 that came before the open's first frame
 *	of ring 0 (the peer's HELLO must reach the reader first; @rx_lock)
 * @rx_ring0_seen: this open has had a frame from ring 0 (@rx_lock)
 * @rx_goodbyes: GOODBYE copies received in this open (@rx_lock): the one
 *	that completes the set of @nrings is delivered, so it comes after
 *	every frame sent before it on any ring
 * @tx_marker_busy: bit i: marker i is on a ring (@tx_lock)
 * @rx_poll: poll mode: bit i is set by ring i's Rx interrupt (which
 *	leaves it masked) and taken by whoever harvests that ring; the taker
 *	re-arms the interrupt once the ring is empty
 * @rx_poll_work: poll mode: harvests (and drops) while nobody has the
 *	device open
 * @rq: readers wait here (frames, state changes)
 * @wq: writers wait here (free Tx buffers, state changes)
 * @stats: counters (@stats_lock)
 * @stats_lock: guards @stats
 * @dmabuf_lock: guards @dmabuf and @dmabuf_slots (taken inside io_rwsem)
 * @dmabuf: the open file's imports, by handle - 1
 * @dmabuf_slots: @tx_count frame descriptors for dma-buf frames (allocated
 *	at the first import, freed at remove)
 * @dmabuf_free: free @dmabuf_slots (@tx_lock)
 * @dmabuf_inflight: dma-buf frames on a ring (@tx_lock)
 */
struct odl_tb5 {
	struct device dev;
	struct cdev cdev;
	int index;
	bool index_held;
	struct tb_service *svc;
	struct tb_xdomain *xd;
	struct tb_protocol_handler handler;

	struct mutex lock;		/* login, connect, open, close, remove */
	struct mutex xd_lock;		/* one outgoing XDomain request */
	struct rw_semaphore io_rwsem;
	/* held for reading by odl_handle_packet(); remove waits it out */
	struct rw_semaphore handler_rwsem;
	struct delayed_work login_work;
	struct work_struct connect_work;
	struct work_struct reset_work;
	struct work_struct port_work;
	/* tells udev listeners (odl-daemon) that the state attribute changed */
	struct work_struct state_work;
	/* the teardown, when odl_remove() may not wait for the work items */
	struct work_struct remove_work;
	const char *state_reported;	/* the state the last uevent named */
	unsigned int open_reported;	/* and its "open" bits */
	int login_retries;
	unsigned long login_back_by;
	int login_backs;
	bool reannounced;
	bool login_compat;
	bool login_sent;
	bool login_received;

	spinlock_t state_lock;		/* the flags and peer terms below */
	bool connected;
	bool gone;
	bool local_open;
	bool peer_open;
	bool session_seen;
	bool broken;
	u32 session;
	u32 connect_count;
	int remote_paths[ODL_RINGS_MAX];
	unsigned int peer_rings;
	unsigned int nrings;
	u32 peer_ring_size;
	u16 peer_ver_major;
	u16 peer_ver_minor;
	u32 peer_features;
	u32 command_id;

	struct odl_ring ring[ODL_RINGS_MAX];
	unsigned int rings;
	unsigned int ring_size;
	unsigned int irq_throttle_us;	/* sysfs knob; module parameter at bind */
	bool poll;			/* Rx polling mode, module parameter at bind */
	unsigned int tx_count;
	unsigned int rx_count;
	struct odl_buf *tx_bufs;
	struct odl_buf *rx_bufs;
	struct odl_map *map;
	struct odl_map *tx_map;
	struct odl_map *rx_map;
	spinlock_t tx_ring_lock;	/* enqueues: split pairs back to back */
	spinlock_t tx_lock;		/* tx_free, Tx ownership, dma-buf slots */
	struct list_head tx_free;
	spinlock_t rx_lock;		/* Rx lists, ownership, split state */
	struct list_head rx_queue;
	struct list_head rx_idle;
	struct list_head rx_held;
	bool rx_ring0_seen;
	unsigned int rx_goodbyes;
	unsigned long tx_marker_busy;
	unsigned long rx_poll;
	struct work_struct rx_poll_work;
	wait_queue_head_t rq;
	wait_queue_head_t wq;

	spinlock_t stats_lock;		/* stats */
	struct odl_tb5_stats stats;

	struct mutex dmabuf_lock;	/* the import table */
	struct odl_dmabuf *dmabuf[ODL_TB5_DMABUF_MAX];
	struct odl_dmabuf_slot *dmabuf_slots;
	struct list_head dmabuf_free;
	unsigned int dmabuf_inflight;
};

/* Add @n to the u64 counter at byte @off of odl->stats. */
static inline void odl_stat_add(struct odl_tb5 *odl, size_t off, u64 n)
{
	unsigned long flags;

	spin_lock_irqsave(&odl->stats_lock, flags);
	*(u64 *)((u8 *)&odl->stats + off) += n;
	spin_unlock_irqrestore(&odl->stats_lock, flags);
}

/* @field: a u64 member of struct odl_tb5_stats (an rx_bad[] slot too). */
#define odl_stat_inc(odl, field, n) \
	odl_stat_add((odl), offsetof(struct odl_tb5_stats, field), (n))

/* main.c */
int odl_reannounce(void);

/* login.c */
int odl_handle_packet(const void *buf, size_t size, void *data);
void odl_queue_work(struct odl_tb5 *odl, struct work_struct *work);
void odl_queue_login(struct odl_tb5 *odl, unsigned long delay, bool rearm);
void odl_login_work(struct work_struct *work);
void odl_connect_work(struct work_struct *work);
void odl_reset_work(struct work_struct *work);
void odl_port_work(struct work_struct *work);
void odl_state_work(struct work_struct *work);
const char *__odl_state_name(struct odl_tb5 *odl);
void odl_state_changed(struct odl_tb5 *odl);
void odl_disconnect(struct odl_tb5 *odl);
int odl_ping(struct odl_tb5 *odl, u64 *rtt_ns);
void odl_send_logout(struct odl_tb5 *odl);
void odl_session_update(struct odl_tb5 *odl);
u32 odl_state(struct odl_tb5 *odl);

/* sysfs.c */
extern const struct attribute_group *odl_dev_groups[];

/* ring.c */
int odl_rings_alloc(struct odl_tb5 *odl);
void odl_rings_free(struct odl_tb5 *odl);
void odl_rx_post_idle(struct odl_tb5 *odl);
void odl_rx_flush(struct odl_tb5 *odl);
void odl_rx_repost(struct odl_tb5 *odl, struct odl_buf *b);
struct odl_buf *odl_rx_take(struct odl_tb5 *odl);
bool odl_rx_pending(struct odl_tb5 *odl);
struct odl_buf *odl_tx_get(struct odl_tb5 *odl);
void odl_tx_put(struct odl_tb5 *odl, struct odl_buf *b);
bool odl_tx_available(struct odl_tb5 *odl);
void odl_rx_harvest(struct odl_tb5 *odl);
void odl_rx_poll_work(struct work_struct *work);
bool odl_rx_poll_pending(struct odl_tb5 *odl);
void odl_rx_poll_quiesce(struct odl_tb5 *odl);
void odl_rx_poll_all(struct odl_tb5 *odl);
void odl_irq_throttle_set(struct odl_tb5 *odl);
void odl_irq_throttle_restore(struct odl_tb5 *odl);
bool odl_irq_throttle_active(struct odl_tb5 *odl);
int odl_tx_submit(struct odl_tb5 *odl, struct odl_buf *b,
		  const struct odl_frame_info *fi);
int odl_tx_queue(struct odl_tb5 *odl, struct odl_buf *b,
		 const struct odl_frame_info *fi);
int odl_tx_frame(struct odl_tb5 *odl, struct ring_frame *f, const void *va,
		 const struct odl_frame_info *fi);
int odl_tx_split(struct odl_tb5 *odl, struct odl_buf *b, struct ring_frame *raw,
		 const struct odl_frame_info *fi);
unsigned int odl_rx_capacity(struct odl_tb5 *odl);
bool odl_split_peer(struct odl_tb5 *odl);
static inline void *odl_buf_va(struct odl_buf *b)
{
	return page_address(b->page);
}

static inline unsigned int odl_frame_size(const struct ring_frame *f)
{
	return f->size ? f->size : ODL_FRAME_MAX_BYTES;
}

/* chardev.c */
int odl_chardev_init(void);
void odl_chardev_exit(void);
int odl_chardev_add(struct odl_tb5 *odl, struct tb_service *svc);
void odl_chardev_del(struct odl_tb5 *odl);

/* mmap.c */
int odl_ioctl_map_info(struct odl_tb5 *odl, void __user *uarg);
int odl_ioctl_post_send(struct odl_tb5 *odl, void __user *uarg);
int odl_ioctl_post_recv(struct odl_tb5 *odl, void __user *uarg);
int odl_mmap(struct file *file, struct vm_area_struct *vma);
void odl_map_tx_done(struct odl_tb5 *odl, struct odl_buf *b);
void odl_map_rx_done(struct odl_tb5 *odl, struct odl_buf *b, unsigned int size,
		     u8 type);
__poll_t odl_map_poll(struct odl_tb5 *odl, u32 state);
void odl_map_release(struct odl_tb5 *odl);
void odl_map_tx_push_dmabuf(struct odl_map *map, u32 index, u32 offset);
bool odl_map_tx_room(struct odl_map *map, unsigned int pending);
int odl_send_state(struct odl_tb5 *odl);
int odl_post_entries(struct odl_tb5 *odl, void __user *uarg, size_t esize,
		     int (*one)(struct odl_tb5 *, const void *), bool harvest);

/* dmabuf.c */
void odl_dmabuf_init(struct odl_tb5 *odl);
int odl_ioctl_dmabuf_import(struct odl_tb5 *odl, void __user *uarg);
int odl_ioctl_dmabuf_release(struct odl_tb5 *odl, void __user *uarg);
int odl_ioctl_post_send_dmabuf(struct odl_tb5 *odl, void __user *uarg);
int odl_ioctl_post_send_split(struct odl_tb5 *odl, void __user *uarg);
void odl_dmabuf_release_all(struct odl_tb5 *odl);
void odl_dmabuf_remove(struct odl_tb5 *odl);

/* ioctl.c */
long odl_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

#endif /* ODL_TB5_PRIV_H */
