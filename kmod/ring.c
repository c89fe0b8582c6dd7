// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: NHI Tx/Rx ring pairs and their frame buffers. Each buffer is one
 * page with a streaming DMA mapping on the NHI's DMA device (the same for
 * every ring), so the rings work with the IOMMU on. Received frames are
 * checked with the shared codec before a reader sees them. Every stream is
 * pinned to one ring pair (stream % rings), so each stream stays in order;
 * frames of all rings meet in one receive queue.
 */
#include <linux/dma-mapping.h>
#include <linux/io.h>
#include <linux/slab.h>

#include "odl/wire/nhi_regs.h"
#include "odl_tb5.h"

static void odl_tx_callback(struct tb_ring *ring, struct ring_frame *frame,
			    bool canceled)
{
	struct odl_buf *b = container_of(frame, struct odl_buf, frame);
	struct odl_tb5 *odl = b->odl;
	unsigned long flags;

	if (b->marker) {
		spin_lock_irqsave(&odl->tx_lock, flags);
		__clear_bit(b - odl->tx_bufs - odl->tx_count, &odl->tx_marker_busy);
		spin_unlock_irqrestore(&odl->tx_lock, flags);
		return;
	}
	/* Free list, or the user's Tx completion queue in mmap mode. */
	odl_map_tx_done(odl, b);
}

/* Frames a ring holds for the reader: see odl_rx_capacity(). */
unsigned int odl_rx_capacity(struct odl_tb5 *odl)
{
	return odl_split ? (odl->ring_size - 1) / 2 : odl->ring_size - 1;
}

/* The peer takes split frames on the current connection. */
bool odl_split_peer(struct odl_tb5 *odl)
{
	unsigned long flags;
	bool ret;

	spin_lock_irqsave(&odl->state_lock, flags);
	ret = odl->connected && (odl->peer_features & ODL_XD_FEAT_SPLIT);
	spin_unlock_irqrestore(&odl->state_lock, flags);
	return ret;
}

/* Forget a split header that waits for its payload on ring @r. */
static void odl_rx_split_reset(struct odl_tb5 *odl, struct odl_ring *r)
{
	unsigned long flags;

	spin_lock_irqsave(&odl->rx_lock, flags);
	r->split_pending = false;
	spin_unlock_irqrestore(&odl->rx_lock, flags);
}

/*
 * A split header frame (ODL_FRAME_F_SPLIT, checked by the caller): keep the
 * header for the raw frame that must come next on this ring; the buffer
 * goes back to the ring at once. Return: false when it is refused.
 */
static bool odl_rx_split_hdr(struct odl_tb5 *odl, struct odl_ring *r,
			     const void *va, unsigned int size,
			     const struct odl_frame_info *fi)
{
	unsigned long flags;

	if (size != ODL_FRAME_HDR_BYTES || !fi->len)
		return false;
	spin_lock_irqsave(&odl->rx_lock, flags);
	memcpy(r->split_hdr, va, ODL_FRAME_HDR_BYTES);
	r->split_pending = true;
	spin_unlock_irqrestore(&odl->rx_lock, flags);
	return true;
}

/*
 * A raw frame of @size payload bytes in @va: put the pending header in
 * front of it (the payload moves up by a header, inside the page: it is at
 * most ODL_FRAME_MAX_PAYLOAD bytes), with ODL_FRAME_F_SPLIT cleared.
 * Return: the whole frame's size, or 0 when there is no matching header.
 */
static unsigned int odl_rx_split_join(struct odl_tb5 *odl, struct odl_ring *r,
				      u8 *va, unsigned int size)
{
	u8 hdr[ODL_FRAME_HDR_BYTES];
	struct odl_frame_hdr *h = (struct odl_frame_hdr *)hdr;
	unsigned long flags;
	bool pending;

	spin_lock_irqsave(&odl->rx_lock, flags);
	pending = r->split_pending;
	r->split_pending = false;
	memcpy(hdr, r->split_hdr, sizeof(hdr));
	spin_unlock_irqrestore(&odl->rx_lock, flags);
	if (!pending || size > ODL_FRAME_MAX_PAYLOAD ||
	    le16_to_cpu(h->len) != size)
		return 0;
	h->flags &= ~ODL_FRAME_F_SPLIT;
	memmove(va + ODL_FRAME_HDR_BYTES, va, size);
	memcpy(va, hdr, ODL_FRAME_HDR_BYTES);
	return ODL_FRAME_HDR_BYTES + size;
}

static void odl_rx_callback(struct tb_ring *ring, struct ring_frame *frame,
			    bool canceled)
{
	struct odl_buf *b = container_of(frame, struct odl_buf, frame);
	struct odl_tb5 *odl = b->odl;
	struct odl_ring *r = &odl->ring[b->ring];
	struct device *dma_dev = tb_ring_dma_device(ring);
	struct odl_frame_info fi;
	bool split = false, raw;
	u32 *ring_rx;
	enum odl_frame_err err;
	unsigned long flags;
	unsigned int size;

	if (canceled) {
		spin_lock_irqsave(&odl->rx_lock, flags);
		list_add_tail(&b->list, &odl->rx_idle);
		spin_unlock_irqrestore(&odl->rx_lock, flags);
		return;
	}

	/*
	 * The NHI found the frame damaged on the link (CRC) or longer than the
	 * buffer: its bytes are not to be trusted, as thunderbolt_net drops
	 * such frames too. A split header waiting for it goes with it.
	 */
	if (frame->flags & (RING_DESC_CRC_ERROR | RING_DESC_BUFFER_OVERRUN)) {
		if (READ_ONCE(r->split_pending))
			odl_rx_split_reset(odl, r);
		odl_stat_inc(odl, rx_damaged, 1);
		goto repost;
	}
	size = odl_frame_size(frame);
	dma_sync_single_for_cpu(dma_dev, b->dma, PAGE_SIZE, DMA_FROM_DEVICE);
	/*
	 * Split frames only when we offered ODL_XD_FEAT_SPLIT; with split=0
	 * a raw frame is a bad PDF and a split header an unknown flag, as
	 * before the feature.
	 */
	raw = odl_split && frame->sof == ODL_XD_PDF_RAW_SOF &&
	      frame->eof == ODL_XD_PDF_RAW_EOF;
	if (!raw && READ_ONCE(r->split_pending)) {
		/* A split header whose payload did not come next: dropped. */
		odl_rx_split_reset(odl, r);
		odl_stat_inc(odl, rx_bad_split, 1);
	}
	if (raw) {
		/* The payload of the split header right before it. */
		size = odl_rx_split_join(odl, r, odl_buf_va(b), size);
		if (!size) {
			odl_stat_inc(odl, rx_bad_split, 1);
			goto repost;
		}
		split = true;
	} else if (frame->sof != ODL_XD_PDF_SOF ||
		   frame->eof != ODL_XD_PDF_EOF) {
		odl_stat_inc(odl, rx_bad_pdf, 1);
		goto repost;
	}
	err = odl_frame_decode_opt(odl_buf_va(b), size, ODL_MAX_STREAMS,
				   !split && odl_split ? ODL_FRAME_DEC_SPLIT : 0,
				   &fi);
	if (err != ODL_FRAME_OK) {
		odl_stat_inc(odl, rx_bad[err], 1);
		goto repost;
	}
	if (fi.flags & ODL_FRAME_F_SPLIT) {
		if (!odl_rx_split_hdr(odl, r, odl_buf_va(b), size, &fi))
			odl_stat_inc(odl, rx_bad_split, 1);
		goto repost;
	}
	/* Slot 0 (ODL_FRAME_OK) counts descriptor/header size mismatches. */
	if (ODL_FRAME_HDR_BYTES + fi.len != size) {
		odl_stat_inc(odl, rx_bad[ODL_FRAME_OK], 1);
		goto repost;
	}
	if (!READ_ONCE(odl->local_open)) {
		odl_stat_inc(odl, rx_dropped_closed, 1);
		goto repost;
	}
	b->frame.size = size & 0xfff;
	ring_rx = &odl->stats.ring_rx_frames[b->ring];
	spin_lock_irqsave(&odl->stats_lock, flags);
	odl->stats.rx_split += split;
	odl->stats.rx_frames++;
	odl->stats.rx_bytes += size;
	(*ring_rx)++;
	spin_unlock_irqrestore(&odl->stats_lock, flags);
	/* For read(), or the Rx completion queue in mmap mode. */
	odl_map_rx_done(odl, b, size, fi.type);
	wake_up_interruptible(&odl->rq);
	return;

repost:
	odl_rx_repost(odl, b);
}

/*
 * Unmask Rx ring @ring's interrupt: tb_ring_poll_complete() for a caller
 * that already holds the locks it takes (the ring's interrupt path holds
 * @ring->nhi->lock and @ring->lock around the start_poll callback). The
 * same read-modify-write of the ring's enable bit as thunderbolt.ko's
 * __ring_interrupt_mask() (6.1 and 6.12): Rx bits follow the hop_count Tx
 * bits.
 */
static void odl_rx_unmask_locked(struct tb_ring *ring)
{
	unsigned int bit = ring->nhi->hop_count + ring->hop;
	void __iomem *reg = ring->nhi->iobase + ODL_NHI_REG_INT_ENABLE_BASE +
			    bit / 32 * 4;

	iowrite32(ioread32(reg) | BIT(bit % 32), reg);
}

/*
 * Poll mode: the Rx ring's interrupt handler (hard IRQ, the ring's
 * interrupt now masked) calls this instead of scheduling the ring's work
 * item. The reader takes the frames itself in read() or poll(), one wakeup
 * instead of two; with nobody open, a work item drops them. While the ring
 * is being stopped the mask is undone at once (odl_rx_poll_quiesce()): the
 * stop cancels what the ring holds.
 */
static void odl_rx_start_poll(void *data)
{
	struct odl_ring *r = data;
	struct odl_tb5 *odl = r->odl;

	if (READ_ONCE(r->rx_stopping)) {
		odl_rx_unmask_locked(r->rx);
		return;
	}
	set_bit(r->index, &odl->rx_poll);
	odl_stat_inc(odl, rx_poll_starts, 1);
	if (READ_ONCE(odl->local_open))
		wake_up_interruptible(&odl->rq);
	else
		queue_work(system_highpri_wq, &odl->rx_poll_work);
}

/* Frames wait on the ring for a harvester (only while connected). */
bool odl_rx_poll_pending(struct odl_tb5 *odl)
{
	return READ_ONCE(odl->connected) && READ_ONCE(odl->rx_poll);
}

/* Poll mode: take ring @r's completed frames if its bit was pending. */
static void odl_rx_harvest_ring(struct odl_tb5 *odl, struct odl_ring *r)
{
	struct ring_frame *f;
	unsigned int n;

	if (!test_and_clear_bit(r->index, &odl->rx_poll))
		return;
	for (n = 0; n < odl->ring_size; n++) {
		f = tb_ring_poll(r->rx);
		if (!f) {
			/* Re-armed with work pending, the NHI fires again. */
			tb_ring_poll_complete(r->rx);
			return;
		}
		odl_rx_callback(r->rx, f, false);
	}
	set_bit(r->index, &odl->rx_poll);
}

/* Poll mode: have the next harvest look at every ring in use. */
void odl_rx_poll_all(struct odl_tb5 *odl)
{
	unsigned int i, n = READ_ONCE(odl->nrings);

	for (i = 0; i < n; i++)
		set_bit(i, &odl->rx_poll);
}

/**
 * odl_rx_harvest() - poll mode: move completed Rx frames off the ring.
 * @odl: device; the caller holds io_rwsem for read and has checked ->svc
 *
 * Taking a ring's pending bit makes the caller its only harvester (the
 * interrupt stays masked until the ring is empty, so it cannot set the bit
 * again meanwhile). Each frame goes through the same checks as in
 * interrupt mode. At most one ring's worth per ring and call; if more is
 * left, the bit is set again and the interrupt stays masked.
 */
void odl_rx_harvest(struct odl_tb5 *odl)
{
	unsigned int i, n;

	/* Stopped rings stay masked; connect clears the bits. */
	if (!READ_ONCE(odl->connected))
		return;
	n = READ_ONCE(odl->nrings);
	for (i = 0; i < n; i++)
		odl_rx_harvest_ring(odl, &odl->ring[i]);
}

/**
 * odl_rx_poll_quiesce() - poll mode: keep the Rx interrupts of the rings in
 *	use unmasked until they are stopped.
 * @odl: device; caller holds @odl->lock, ->connected is false (no harvester
 *	starts again) and the rings in use are running
 *
 * tb_ring_stop() warns when the ring's interrupt is already disabled
 * (ring_interrupt_active(), 6.1 and 6.12), and the poll mask clears that
 * same enable bit. Unmasking each masked ring once before the stop is not
 * enough: the NHI keeps the status of frames that completed while masked
 * and interrupts again as soon as the ring is unmasked (so does a frame
 * still in flight), and __ring_interrupt() masks the ring again before it
 * calls odl_rx_start_poll(). The stop of ring N comes after the stops of
 * rings 0..N-1, each of which waits for a work item, so that interrupt had
 * time to land in between (issue 13: "interrupt for RX ring 3 is already
 * disabled" in tb_ring_stop() on an unplug in polling mode, 6.1).
 *
 * So: wait out harvesters (io_rwsem; one finishing after the stop would
 * unmask a stopped ring, and tb_ring_start() would then warn), set
 * ->rx_stopping, which makes odl_rx_start_poll() undo the mask itself, and
 * unmask every ring. tb_ring_poll_complete() takes the NHI lock that the
 * interrupt path holds: an interrupt before it is undone by it, one after
 * it sees the flag. tb_ring_stop() then finds every ring unmasked, and
 * after it the interrupt path no longer calls start_poll (the ring is not
 * running). The stop cancels the frames the rings hold, as in interrupt
 * mode.
 */
void odl_rx_poll_quiesce(struct odl_tb5 *odl)
{
	struct odl_ring *r;
	unsigned int i;

	if (!odl->poll)
		return;
	down_write(&odl->io_rwsem);
	for (i = 0; i < odl->nrings; i++) {
		r = &odl->ring[i];
		WRITE_ONCE(r->rx_stopping, true);
		tb_ring_poll_complete(r->rx);
	}
	/* Nothing to poll: the stop cancels what the rings hold. */
	WRITE_ONCE(odl->rx_poll, 0);
	up_write(&odl->io_rwsem);
}

void odl_rx_poll_work(struct work_struct *work)
{
	struct odl_tb5 *odl = container_of(work, struct odl_tb5, rx_poll_work);

	down_read(&odl->io_rwsem);
	if (odl->svc)
		odl_rx_harvest(odl);
	up_read(&odl->io_rwsem);
	/* Opened meanwhile: the reader may be waiting for these. */
	if (READ_ONCE(odl->local_open))
		wake_up_interruptible(&odl->rq);
}

/*
 * thunderbolt.ko programs every MSI-X vector with a 128 us minimum interval
 * (nhi.c: nhi_enable_int_throttling()), a latency floor for small
 * messages. Program the vectors of the rings in use with irq_throttle_us
 * while connected and put the old values back after. Without MSI-X (shared
 * interrupt) there is no per-ring vector to program.
 */
static void __iomem *odl_throttle_reg(struct tb_ring *ring)
{
	return ring->nhi->iobase + ODL_NHI_REG_THROTTLE_BASE + ring->vector * 4;
}

static void odl_ring_throttle_set(struct odl_ring *r, u32 val)
{
	struct tb_ring *rings[2] = { r->tx, r->rx };
	int i;

	/* A second call (the knob changed) keeps the values saved by the first. */
	if (!r->throttle_set) {
		for (i = 0; i < 2; i++)
			if (rings[i]->irq <= 0 ||
			    rings[i]->vector >= ODL_NHI_MSIX_VECTORS)
				return;
		for (i = 0; i < 2; i++)
			r->throttle_saved[i] =
				ioread32(odl_throttle_reg(rings[i]));
	}
	for (i = 0; i < 2; i++)
		iowrite32(val & ODL_NHI_THROTTLE_MASK,
			  odl_throttle_reg(rings[i]));
	r->throttle_set = true;
}

/* Caller holds odl->lock; the rings in use (nrings) are started. */
void odl_irq_throttle_set(struct odl_tb5 *odl)
{
	u32 val = DIV_ROUND_UP(READ_ONCE(odl->irq_throttle_us) * NSEC_PER_USEC,
			       ODL_NHI_THROTTLE_UNIT_NS);
	unsigned int i;

	for (i = 0; i < odl->nrings; i++)
		odl_ring_throttle_set(&odl->ring[i], val);
}

void odl_irq_throttle_restore(struct odl_tb5 *odl)
{
	struct odl_ring *r;
	unsigned int i;

	for (i = 0; i < odl->rings; i++) {
		r = &odl->ring[i];
		if (!r->throttle_set)
			continue;
		iowrite32(r->throttle_saved[0], odl_throttle_reg(r->tx));
		iowrite32(r->throttle_saved[1], odl_throttle_reg(r->rx));
		r->throttle_set = false;
	}
}

/* All rings in use have their vectors programmed (INFO irq_throttle_ns). */
bool odl_irq_throttle_active(struct odl_tb5 *odl)
{
	unsigned int i, n = READ_ONCE(odl->nrings);

	for (i = 0; i < n; i++)
		if (!READ_ONCE(odl->ring[i].throttle_set))
			return false;
	return n > 0;
}

/**
 * odl_rx_repost() - give an Rx buffer back to the ring, or to the idle list
 * while the ring is stopped.
 * @odl: device
 * @b: buffer owned by the caller
 */
void odl_rx_repost(struct odl_tb5 *odl, struct odl_buf *b)
{
	struct tb_ring *ring = odl->ring[b->ring].rx;
	unsigned long flags;

	dma_sync_single_for_device(tb_ring_dma_device(ring), b->dma,
				   PAGE_SIZE, DMA_FROM_DEVICE);
	spin_lock_irqsave(&odl->rx_lock, flags);
	/* A ring not in use with this peer is stopped: tb_ring_rx() refuses. */
	if (tb_ring_rx(ring, &b->frame))
		list_add_tail(&b->list, &odl->rx_idle);
	spin_unlock_irqrestore(&odl->rx_lock, flags);
}

/* Post every idle buffer of the rings in use; they have been started. */
void odl_rx_post_idle(struct odl_tb5 *odl)
{
	unsigned int nrings = odl->nrings;
	struct odl_buf *b, *n;
	unsigned long flags;

	spin_lock_irqsave(&odl->rx_lock, flags);
	list_for_each_entry_safe(b, n, &odl->rx_idle, list) {
		if (b->ring >= nrings || tb_ring_rx(odl->ring[b->ring].rx, &b->frame))
			continue;
		list_del(&b->list);
	}
	spin_unlock_irqrestore(&odl->rx_lock, flags);
}

/*
 * Drop frames nobody read, held ones included (a new open or a new
 * connection starts clean), and start the ring 0 / GOODBYE bookkeeping of
 * a new session.
 */
void odl_rx_flush(struct odl_tb5 *odl)
{
	struct odl_buf *b;
	unsigned long flags;
	unsigned int i;
	LIST_HEAD(held);

	spin_lock_irqsave(&odl->rx_lock, flags);
	list_splice_init(&odl->rx_held, &held);
	odl->rx_ring0_seen = false;
	odl->rx_goodbyes = 0;
	for (i = 0; i < ODL_RINGS_MAX; i++)
		odl->ring[i].split_pending = false;
	spin_unlock_irqrestore(&odl->rx_lock, flags);
	while (!list_empty(&held)) {
		b = list_first_entry(&held, struct odl_buf, list);
		list_del(&b->list);
		odl_rx_repost(odl, b);
	}
	for (;;) {
		b = odl_rx_take(odl);
		if (!b)
			break;
		odl_rx_repost(odl, b);
	}
}

struct odl_buf *odl_rx_take(struct odl_tb5 *odl)
{
	struct odl_buf *b;
	unsigned long flags;

	spin_lock_irqsave(&odl->rx_lock, flags);
	b = list_first_entry_or_null(&odl->rx_queue, struct odl_buf, list);
	if (b)
		list_del(&b->list);
	spin_unlock_irqrestore(&odl->rx_lock, flags);
	return b;
}

bool odl_rx_pending(struct odl_tb5 *odl)
{
	unsigned long flags;
	bool ret;

	spin_lock_irqsave(&odl->rx_lock, flags);
	ret = !list_empty(&odl->rx_queue);
	spin_unlock_irqrestore(&odl->rx_lock, flags);
	return ret;
}

struct odl_buf *odl_tx_get(struct odl_tb5 *odl)
{
	struct odl_buf *b;
	unsigned long flags;

	spin_lock_irqsave(&odl->tx_lock, flags);
	b = list_first_entry_or_null(&odl->tx_free, struct odl_buf, list);
	if (b)
		list_del(&b->list);
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	return b;
}

void odl_tx_put(struct odl_tb5 *odl, struct odl_buf *b)
{
	unsigned long flags;

	spin_lock_irqsave(&odl->tx_lock, flags);
	list_add(&b->list, &odl->tx_free);
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	wake_up_interruptible(&odl->wq);
}

bool odl_tx_available(struct odl_tb5 *odl)
{
	unsigned long flags;
	bool ret;

	spin_lock_irqsave(&odl->tx_lock, flags);
	ret = !list_empty(&odl->tx_free);
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	return ret;
}

/* Caller holds tx_ring_lock. @raw: a split pair's payload frame. */
static int __odl_tx_ring_frame(struct odl_tb5 *odl, struct ring_frame *f,
			       size_t bytes, unsigned int ring, bool raw)
{
	struct tb_ring *tx = odl->ring[ring].tx;
	unsigned long flags;

	f->size = bytes & 0xfff; /* 0 means 4096 */
	f->sof = raw ? ODL_XD_PDF_RAW_SOF : ODL_XD_PDF_SOF;
	f->eof = raw ? ODL_XD_PDF_RAW_EOF : ODL_XD_PDF_EOF;
	if (tb_ring_tx(tx, f))
		return -EPIPE;
	spin_lock_irqsave(&odl->stats_lock, flags);
	odl->stats.tx_frames++;
	odl->stats.tx_bytes += bytes;
	odl->stats.ring_tx_frames[ring]++;
	spin_unlock_irqrestore(&odl->stats_lock, flags);
	return 0;
}

static int odl_tx_ring_frame(struct odl_tb5 *odl, struct ring_frame *f,
			     size_t bytes, unsigned int ring)
{
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&odl->tx_ring_lock, flags);
	ret = __odl_tx_ring_frame(odl, f, bytes, ring, false);
	spin_unlock_irqrestore(&odl->tx_ring_lock, flags);
	return ret;
}

static int odl_tx_ring(struct odl_tb5 *odl, struct odl_buf *b, size_t bytes,
		       unsigned int ring)
{
	dma_sync_single_for_device(tb_ring_dma_device(odl->ring[ring].tx),
				   b->dma, bytes, DMA_TO_DEVICE);
	return odl_tx_ring_frame(odl, &b->frame, bytes, ring);
}

/*
 * GOODBYE ends the peer's session ("nothing follows"), but frames of other
 * streams sent before it may still be on other rings. Copies go on every
 * other ring in use, after what each already holds; the peer delivers the
 * copy that completes the set. Best effort: a ring whose marker is still
 * in flight (or stopped) gets none, and the peer then sees the session end
 * through the close notice instead.
 */
static void odl_tx_goodbye_copies(struct odl_tb5 *odl, const void *src,
				  size_t bytes, unsigned int nrings)
{
	struct odl_buf *m;
	unsigned long flags;
	unsigned int i;
	bool busy;

	for (i = 1; i < nrings; i++) {
		m = &odl->tx_bufs[odl->tx_count + i - 1];
		spin_lock_irqsave(&odl->tx_lock, flags);
		busy = __test_and_set_bit(i - 1, &odl->tx_marker_busy);
		spin_unlock_irqrestore(&odl->tx_lock, flags);
		if (busy)
			continue;
		memcpy(odl_buf_va(m), src, bytes);
		if (odl_tx_ring(odl, m, bytes, i)) {
			spin_lock_irqsave(&odl->tx_lock, flags);
			__clear_bit(i - 1, &odl->tx_marker_busy);
			spin_unlock_irqrestore(&odl->tx_lock, flags);
		}
	}
}

/**
 * odl_tx_frame() - put a checked frame on its stream's Tx ring.
 * @odl: device
 * @f: the frame's descriptor (buffer_phy and callback set), owned by the
 *	caller; the memory it points at is ready for the device
 * @va: the frame as the CPU sees it (a GOODBYE is copied from there)
 * @fi: the frame's checked header
 *
 * Stream s goes on ring s % nrings, so each stream stays in order.
 *
 * Return: 0, or -EPIPE when the ring is stopped (@f stays the caller's).
 */
int odl_tx_frame(struct odl_tb5 *odl, struct ring_frame *f, const void *va,
		 const struct odl_frame_info *fi)
{
	size_t bytes = ODL_FRAME_HDR_BYTES + fi->len;
	unsigned int nrings = READ_ONCE(odl->nrings);

	/* Never connected: ring 0 is stopped and refuses the frame. */
	if (!nrings)
		nrings = 1;
	if (fi->type == ODL_FRAME_GOODBYE && nrings > 1)
		odl_tx_goodbye_copies(odl, va, bytes, nrings);
	return odl_tx_ring_frame(odl, f, bytes, fi->stream % nrings);
}

/**
 * odl_tx_split() - put a split pair on its stream's Tx ring, back to back.
 * @odl: device
 * @b: Tx buffer holding the checked split header (ODL_FRAME_F_SPLIT set),
 *	owned by the caller
 * @raw: the payload's descriptor (buffer_phy and callback set), owned by
 *	the caller
 * @fi: the header as checked (DATA, @fi->len payload bytes)
 *
 * Return: 0 (both queued), -EPIPE when the ring is stopped and nothing was
 * queued (both stay the caller's), or -ESTALE when the header was queued
 * but the ring stopped before the payload (@b completes through the ring,
 * @raw stays the caller's).
 */
int odl_tx_split(struct odl_tb5 *odl, struct odl_buf *b, struct ring_frame *raw,
		 const struct odl_frame_info *fi)
{
	unsigned int nrings = READ_ONCE(odl->nrings);
	unsigned long flags;
	unsigned int ring;
	int ret;

	if (!nrings)
		nrings = 1;
	ring = fi->stream % nrings;
	dma_sync_single_for_device(tb_ring_dma_device(odl->ring[0].tx), b->dma,
				   ODL_FRAME_HDR_BYTES, DMA_TO_DEVICE);
	spin_lock_irqsave(&odl->tx_ring_lock, flags);
	ret = __odl_tx_ring_frame(odl, &b->frame, ODL_FRAME_HDR_BYTES, ring,
				  false);
	if (!ret && __odl_tx_ring_frame(odl, raw, fi->len, ring, true))
		ret = -ESTALE;
	spin_unlock_irqrestore(&odl->tx_ring_lock, flags);
	if (!ret)
		odl_stat_inc(odl, tx_split, 1);
	return ret;
}

/* odl_tx_frame() for a Tx buffer @b, owned by the caller. */
int odl_tx_queue(struct odl_tb5 *odl, struct odl_buf *b,
		 const struct odl_frame_info *fi)
{
	dma_sync_single_for_device(tb_ring_dma_device(odl->ring[0].tx), b->dma,
				   ODL_FRAME_HDR_BYTES + fi->len,
				   DMA_TO_DEVICE);
	return odl_tx_frame(odl, &b->frame, odl_buf_va(b), fi);
}

/* odl_tx_queue(), and @b back to the free list when the ring is stopped. */
int odl_tx_submit(struct odl_tb5 *odl, struct odl_buf *b,
		  const struct odl_frame_info *fi)
{
	int ret = odl_tx_queue(odl, b, fi);

	if (ret)
		odl_tx_put(odl, b);
	return ret;
}

static void odl_bufs_free(struct device *dma_dev, struct odl_buf *bufs,
			  unsigned int n, enum dma_data_direction dir)
{
	unsigned int i;

	if (!bufs)
		return;
	for (i = 0; i < n; i++) {
		if (!bufs[i].page)
			continue;
		dma_unmap_page(dma_dev, bufs[i].dma, PAGE_SIZE, dir);
		__free_page(bufs[i].page);
	}
	kvfree(bufs);
}

static struct odl_buf *odl_bufs_alloc(struct odl_tb5 *odl,
				      struct device *dma_dev, unsigned int n,
				      enum dma_data_direction dir,
				      ring_cb callback, struct list_head *list)
{
	struct odl_buf *bufs;
	unsigned int i;

	bufs = kvcalloc(n, sizeof(*bufs), GFP_KERNEL);
	if (!bufs)
		return NULL;
	for (i = 0; i < n; i++) {
		struct odl_buf *b = &bufs[i];

		b->odl = odl;
		b->page = alloc_page(GFP_KERNEL | __GFP_ZERO);
		if (!b->page)
			goto err_free;
		b->dma = dma_map_page(dma_dev, b->page, 0, PAGE_SIZE, dir);
		if (dma_mapping_error(dma_dev, b->dma)) {
			__free_page(b->page);
			b->page = NULL;
			goto err_free;
		}
		b->frame.buffer_phy = b->dma;
		b->frame.callback = callback;
		list_add_tail(&b->list, list);
	}
	return bufs;

err_free:
	INIT_LIST_HEAD(list);
	odl_bufs_free(dma_dev, bufs, n, dir);
	return NULL;
}

static void odl_ring_free(struct odl_tb5 *odl, struct odl_ring *r)
{
	if (r->tx_hopid >= 0)
		tb_xdomain_release_out_hopid(odl->xd, r->tx_hopid);
	r->tx_hopid = -1;
	if (r->rx)
		tb_ring_free(r->rx);
	if (r->tx)
		tb_ring_free(r->tx);
	r->rx = NULL;
	r->tx = NULL;
}

static int odl_ring_alloc(struct odl_tb5 *odl, struct odl_ring *r)
{
	struct tb_nhi *nhi = odl->xd->tb->nhi;
	int ret;

	r->tx = tb_ring_alloc_tx(nhi, -1, odl->ring_size, RING_FLAG_FRAME);
	if (!r->tx)
		return -ENOMEM;
	r->rx = tb_ring_alloc_rx(nhi, -1, odl->ring_size, RING_FLAG_FRAME,
				 r->tx->hop,
				 BIT(ODL_XD_PDF_SOF) | BIT(ODL_XD_PDF_RAW_SOF),
				 BIT(ODL_XD_PDF_EOF) | BIT(ODL_XD_PDF_RAW_EOF),
				 odl->poll ? odl_rx_start_poll : NULL,
				 odl->poll ? r : NULL);
	if (!r->rx) {
		odl_ring_free(odl, r);
		return -ENOMEM;
	}
	ret = tb_xdomain_alloc_out_hopid(odl->xd, -1);
	if (ret < 0) {
		odl_ring_free(odl, r);
		return ret;
	}
	r->tx_hopid = ret;
	return 0;
}

/**
 * odl_rings_alloc() - allocate the ring pairs, their out HopIDs and the
 *	buffers.
 * @odl: device being probed; @odl->rings set
 *
 * Return: 0 or -errno.
 */
int odl_rings_alloc(struct odl_tb5 *odl)
{
	unsigned int per = odl->ring_size - 1;
	struct device *dma_dev;
	unsigned int i;
	int ret;

	for (i = 0; i < ODL_RINGS_MAX; i++) {
		odl->ring[i].odl = odl;
		odl->ring[i].index = i;
		odl->ring[i].tx_hopid = -1;
	}
	for (i = 0; i < odl->rings; i++) {
		ret = odl_ring_alloc(odl, &odl->ring[i]);
		if (ret)
			goto err_free_rings;
	}
	/* Every ring of one NHI has the NHI's DMA device. */
	dma_dev = tb_ring_dma_device(odl->ring[0].tx);
	odl->tx_count = per;
	odl->rx_count = per * odl->rings;

	ret = -ENOMEM;
	/* The markers (GOODBYE copies) follow the user's buffers. */
	odl->tx_bufs = odl_bufs_alloc(odl, dma_dev,
				      odl->tx_count + odl->rings - 1,
				      DMA_TO_DEVICE, odl_tx_callback,
				      &odl->tx_free);
	if (!odl->tx_bufs)
		goto err_free_rings;
	for (i = odl->tx_count; i < odl->tx_count + odl->rings - 1; i++) {
		odl->tx_bufs[i].marker = true;
		list_del(&odl->tx_bufs[i].list);
	}
	odl->rx_bufs = odl_bufs_alloc(odl, dma_dev, odl->rx_count,
				      DMA_FROM_DEVICE, odl_rx_callback,
				      &odl->rx_idle);
	if (!odl->rx_bufs)
		goto err_free_tx_bufs;
	for (i = 0; i < odl->rx_count; i++)
		odl->rx_bufs[i].ring = i / per;
	return 0;

err_free_tx_bufs:
	odl_bufs_free(dma_dev, odl->tx_bufs, odl->tx_count + odl->rings - 1,
		      DMA_TO_DEVICE);
	odl->tx_bufs = NULL;
	INIT_LIST_HEAD(&odl->tx_free);
err_free_rings:
	for (i = 0; i < odl->rings; i++)
		odl_ring_free(odl, &odl->ring[i]);
	return ret;
}

/* The rings are stopped (odl_disconnect()); nobody touches the buffers. */
void odl_rings_free(struct odl_tb5 *odl)
{
	struct device *dma_dev;
	unsigned int i;

	if (!odl->ring[0].tx)
		return;
	dma_dev = tb_ring_dma_device(odl->ring[0].tx);
	INIT_LIST_HEAD(&odl->tx_free);
	INIT_LIST_HEAD(&odl->rx_queue);
	INIT_LIST_HEAD(&odl->rx_idle);
	INIT_LIST_HEAD(&odl->rx_held);
	odl_bufs_free(dma_dev, odl->tx_bufs, odl->tx_count + odl->rings - 1,
		      DMA_TO_DEVICE);
	odl_bufs_free(dma_dev, odl->rx_bufs, odl->rx_count, DMA_FROM_DEVICE);
	odl->tx_bufs = NULL;
	odl->rx_bufs = NULL;
	for (i = 0; i < odl->rings; i++)
		odl_ring_free(odl, &odl->ring[i]);
}
