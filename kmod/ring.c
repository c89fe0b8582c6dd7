// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: NHI Tx/Rx rings and their frame buffers. Each buffer is one page
 * with a streaming DMA mapping on the ring's DMA device, so the rings work
 * with the IOMMU on. Received frames are checked with the shared codec
 * before a reader sees them.
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

	/* Free list, or the user's Tx completion queue in mmap mode. */
	odl_map_tx_done(b->odl, b);
}

static void odl_rx_callback(struct tb_ring *ring, struct ring_frame *frame,
			    bool canceled)
{
	struct odl_buf *b = container_of(frame, struct odl_buf, frame);
	struct odl_tb5 *odl = b->odl;
	struct device *dma_dev = tb_ring_dma_device(ring);
	struct odl_frame_info fi;
	enum odl_frame_err err;
	unsigned long flags;
	unsigned int size;

	if (canceled) {
		spin_lock_irqsave(&odl->rx_lock, flags);
		list_add_tail(&b->list, &odl->rx_idle);
		spin_unlock_irqrestore(&odl->rx_lock, flags);
		return;
	}

	size = odl_frame_size(frame);
	dma_sync_single_for_cpu(dma_dev, b->dma, PAGE_SIZE, DMA_FROM_DEVICE);
	if (frame->sof != ODL_XD_PDF_SOF || frame->eof != ODL_XD_PDF_EOF) {
		odl_stat_inc(odl, rx_bad_pdf, 1);
		goto repost;
	}
	err = odl_frame_decode(odl_buf_va(b), size, ODL_MAX_STREAMS, &fi);
	if (err != ODL_FRAME_OK) {
		odl_stat_inc(odl, rx_bad[err], 1);
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
	/* For read(), or the Rx completion queue in mmap mode. */
	odl_map_rx_done(odl, b, size);
	spin_lock_irqsave(&odl->stats_lock, flags);
	odl->stats.rx_frames++;
	odl->stats.rx_bytes += size;
	spin_unlock_irqrestore(&odl->stats_lock, flags);
	wake_up_interruptible(&odl->rq);
	return;

repost:
	odl_rx_repost(odl, b);
}

/*
 * Poll mode: the Rx ring's interrupt handler (hard IRQ, the ring's
 * interrupt now masked) calls this instead of scheduling the ring's work
 * item. The reader takes the frames itself in read() or poll(), one wakeup
 * instead of two; with nobody open, a work item drops them.
 */
static void odl_rx_start_poll(void *data)
{
	struct odl_tb5 *odl = data;

	set_bit(ODL_RX_POLL_PENDING, &odl->rx_poll);
	odl_stat_inc(odl, rx_poll_starts, 1);
	if (READ_ONCE(odl->local_open))
		wake_up_interruptible(&odl->rq);
	else
		queue_work(system_highpri_wq, &odl->rx_poll_work);
}

/* Frames wait on the ring for a harvester (only while connected). */
bool odl_rx_poll_pending(struct odl_tb5 *odl)
{
	return READ_ONCE(odl->connected) &&
	       test_bit(ODL_RX_POLL_PENDING, &odl->rx_poll);
}

/**
 * odl_rx_harvest() - poll mode: move completed Rx frames off the ring.
 * @odl: device; the caller holds io_rwsem for read and has checked ->svc
 *
 * Taking the pending bit makes the caller the only harvester (the
 * interrupt stays masked until the ring is empty, so it cannot set the bit
 * again meanwhile). Each frame goes through the same checks as in
 * interrupt mode. At most one ring's worth per call; if more is left, the
 * bit is set again and the interrupt stays masked.
 */
void odl_rx_harvest(struct odl_tb5 *odl)
{
	struct ring_frame *f;
	unsigned int n;

	/* Stopped rings stay masked; connect clears the bit. */
	if (!READ_ONCE(odl->connected) ||
	    !test_and_clear_bit(ODL_RX_POLL_PENDING, &odl->rx_poll))
		return;
	for (n = 0; n < odl->ring_size; n++) {
		f = tb_ring_poll(odl->rx_ring);
		if (!f) {
			/* Re-armed with work pending, the NHI fires again. */
			tb_ring_poll_complete(odl->rx_ring);
			return;
		}
		odl_rx_callback(odl->rx_ring, f, false);
	}
	set_bit(ODL_RX_POLL_PENDING, &odl->rx_poll);
}

/**
 * odl_rx_poll_quiesce() - poll mode: unmask the Rx interrupt before a stop.
 * @odl: device; caller holds @odl->lock, the paths are disabled and
 *	->connected is false (so no harvester starts again)
 *
 * A pending poll leaves the ring's interrupt masked, and stopping a ring
 * whose interrupt is already off warns (ring_interrupt_active() on 6.1).
 * Wait for a running harvester, return what the ring still holds to the
 * idle list (as the stop would) and re-arm, as thunderbolt_net completes
 * its NAPI poll before tb_ring_stop().
 */
void odl_rx_poll_quiesce(struct odl_tb5 *odl)
{
	struct ring_frame *f;
	unsigned int n;

	if (!odl_poll_mode)
		return;
	down_write(&odl->io_rwsem);
	if (test_and_clear_bit(ODL_RX_POLL_PENDING, &odl->rx_poll)) {
		for (n = 0; n < odl->ring_size; n++) {
			f = tb_ring_poll(odl->rx_ring);
			if (!f)
				break;
			odl_rx_callback(odl->rx_ring, f, true);
		}
		tb_ring_poll_complete(odl->rx_ring);
	}
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
 * messages. Program our two rings' vectors with irq_throttle_us while
 * connected and put the old values back after. Without MSI-X (shared
 * interrupt) there is no per-ring vector to program.
 */
static void __iomem *odl_throttle_reg(struct tb_ring *ring)
{
	return ring->nhi->iobase + ODL_NHI_REG_THROTTLE_BASE + ring->vector * 4;
}

void odl_irq_throttle_set(struct odl_tb5 *odl)
{
	u32 val = DIV_ROUND_UP(odl_irq_throttle_us * NSEC_PER_USEC,
			       ODL_NHI_THROTTLE_UNIT_NS);
	struct tb_ring *rings[2] = { odl->tx_ring, odl->rx_ring };
	int i;

	if (odl->throttle_set)
		return;
	for (i = 0; i < 2; i++)
		if (rings[i]->irq <= 0 || rings[i]->vector >= ODL_NHI_MSIX_VECTORS)
			return;
	for (i = 0; i < 2; i++) {
		odl->throttle_saved[i] = ioread32(odl_throttle_reg(rings[i]));
		iowrite32(val & ODL_NHI_THROTTLE_MASK, odl_throttle_reg(rings[i]));
	}
	odl->throttle_set = true;
}

void odl_irq_throttle_restore(struct odl_tb5 *odl)
{
	struct tb_ring *rings[2] = { odl->tx_ring, odl->rx_ring };
	int i;

	if (!odl->throttle_set)
		return;
	for (i = 0; i < 2; i++)
		iowrite32(odl->throttle_saved[i], odl_throttle_reg(rings[i]));
	odl->throttle_set = false;
}

/**
 * odl_rx_repost() - give an Rx buffer back to the ring, or to the idle list
 * while the ring is stopped.
 * @odl: device
 * @b: buffer owned by the caller
 */
void odl_rx_repost(struct odl_tb5 *odl, struct odl_buf *b)
{
	unsigned long flags;

	dma_sync_single_for_device(tb_ring_dma_device(odl->rx_ring), b->dma,
				   PAGE_SIZE, DMA_FROM_DEVICE);
	spin_lock_irqsave(&odl->rx_lock, flags);
	if (tb_ring_rx(odl->rx_ring, &b->frame))
		list_add_tail(&b->list, &odl->rx_idle);
	spin_unlock_irqrestore(&odl->rx_lock, flags);
}

/* Post every idle buffer; the ring has been started. */
void odl_rx_post_idle(struct odl_tb5 *odl)
{
	struct odl_buf *b, *n;
	unsigned long flags;

	spin_lock_irqsave(&odl->rx_lock, flags);
	list_for_each_entry_safe(b, n, &odl->rx_idle, list) {
		if (tb_ring_rx(odl->rx_ring, &b->frame))
			break;
		list_del(&b->list);
	}
	spin_unlock_irqrestore(&odl->rx_lock, flags);
}

/* Drop frames nobody read (a new open or a new connection starts clean). */
void odl_rx_flush(struct odl_tb5 *odl)
{
	struct odl_buf *b;

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

/**
 * odl_tx_queue() - put a checked frame on the Tx ring.
 * @odl: device
 * @b: Tx buffer holding the frame, owned by the caller
 * @bytes: frame size, header included
 *
 * Return: 0, or -EPIPE when the ring is stopped (@b stays the caller's).
 */
int odl_tx_queue(struct odl_tb5 *odl, struct odl_buf *b, size_t bytes)
{
	unsigned long flags;

	dma_sync_single_for_device(tb_ring_dma_device(odl->tx_ring), b->dma,
				   bytes, DMA_TO_DEVICE);
	b->frame.size = bytes & 0xfff; /* 0 means 4096 */
	b->frame.sof = ODL_XD_PDF_SOF;
	b->frame.eof = ODL_XD_PDF_EOF;
	if (tb_ring_tx(odl->tx_ring, &b->frame))
		return -EPIPE;
	spin_lock_irqsave(&odl->stats_lock, flags);
	odl->stats.tx_frames++;
	odl->stats.tx_bytes += bytes;
	spin_unlock_irqrestore(&odl->stats_lock, flags);
	return 0;
}

/* odl_tx_queue(), and @b back to the free list when the ring is stopped. */
int odl_tx_submit(struct odl_tb5 *odl, struct odl_buf *b, size_t bytes)
{
	int ret = odl_tx_queue(odl, b, bytes);

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

/**
 * odl_rings_alloc() - allocate both rings, the out HopID and the buffers.
 * @odl: device being probed
 *
 * Return: 0 or -errno.
 */
int odl_rings_alloc(struct odl_tb5 *odl)
{
	struct tb_nhi *nhi = odl->xd->tb->nhi;
	unsigned int n = odl->ring_size - 1;
	int ret;

	odl->tx_ring = tb_ring_alloc_tx(nhi, -1, odl->ring_size, RING_FLAG_FRAME);
	if (!odl->tx_ring)
		return -ENOMEM;
	odl->rx_ring = tb_ring_alloc_rx(nhi, -1, odl->ring_size, RING_FLAG_FRAME,
					odl->tx_ring->hop, BIT(ODL_XD_PDF_SOF),
					BIT(ODL_XD_PDF_EOF),
					odl_poll_mode ? odl_rx_start_poll : NULL,
					odl_poll_mode ? odl : NULL);
	if (!odl->rx_ring) {
		ret = -ENOMEM;
		goto err_free_tx_ring;
	}
	ret = tb_xdomain_alloc_out_hopid(odl->xd, -1);
	if (ret < 0)
		goto err_free_rx_ring;
	odl->tx_hopid = ret;

	ret = -ENOMEM;
	odl->tx_bufs = odl_bufs_alloc(odl, tb_ring_dma_device(odl->tx_ring), n,
				      DMA_TO_DEVICE, odl_tx_callback,
				      &odl->tx_free);
	if (!odl->tx_bufs)
		goto err_release_hopid;
	odl->rx_bufs = odl_bufs_alloc(odl, tb_ring_dma_device(odl->rx_ring), n,
				      DMA_FROM_DEVICE, odl_rx_callback,
				      &odl->rx_idle);
	if (!odl->rx_bufs)
		goto err_free_tx_bufs;
	return 0;

err_free_tx_bufs:
	odl_bufs_free(tb_ring_dma_device(odl->tx_ring), odl->tx_bufs, n,
		      DMA_TO_DEVICE);
	odl->tx_bufs = NULL;
	INIT_LIST_HEAD(&odl->tx_free);
err_release_hopid:
	tb_xdomain_release_out_hopid(odl->xd, odl->tx_hopid);
	odl->tx_hopid = -1;
err_free_rx_ring:
	tb_ring_free(odl->rx_ring);
	odl->rx_ring = NULL;
err_free_tx_ring:
	tb_ring_free(odl->tx_ring);
	odl->tx_ring = NULL;
	return ret;
}

/* The rings are stopped (odl_disconnect()); nobody touches the buffers. */
void odl_rings_free(struct odl_tb5 *odl)
{
	unsigned int n = odl->ring_size - 1;

	if (!odl->tx_ring)
		return;
	INIT_LIST_HEAD(&odl->tx_free);
	INIT_LIST_HEAD(&odl->rx_queue);
	INIT_LIST_HEAD(&odl->rx_idle);
	odl_bufs_free(tb_ring_dma_device(odl->tx_ring), odl->tx_bufs, n,
		      DMA_TO_DEVICE);
	odl_bufs_free(tb_ring_dma_device(odl->rx_ring), odl->rx_bufs, n,
		      DMA_FROM_DEVICE);
	odl->tx_bufs = NULL;
	odl->rx_bufs = NULL;
	tb_xdomain_release_out_hopid(odl->xd, odl->tx_hopid);
	odl->tx_hopid = -1;
	tb_ring_free(odl->rx_ring);
	tb_ring_free(odl->tx_ring);
	odl->rx_ring = NULL;
	odl->tx_ring = NULL;
}
