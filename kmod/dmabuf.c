// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: zero-copy send from imported dma-bufs (include/uapi/odl_tb5.h,
 * DMABUF_IMPORT, DMABUF_RELEASE, POST_SEND_DMABUF, POST_SEND_SPLIT). Each
 * import is attached to the NHI's DMA device and mapped there, so the NHI
 * reads the frames through the IOMMU like any Tx buffer. When the exporter
 * allows it, it is mapped for the CPU as well: the module checks every
 * whole frame's header with the shared codec before the frame goes on a
 * ring, as POST_SEND does. Device memory without a CPU mapping is imported
 * device-only: it can only carry the payloads of split pairs, whose header
 * is in a Tx buffer (POST_SEND_SPLIT). Frames in flight use descriptors
 * of a per-device pool (as many as Tx buffers); each completes into the Tx
 * completion queue with ODL_TB5_CQE_DMABUF set.
 *
 * Lifetime: the open file's table holds each import; a frame in flight
 * counts in its @inflight. RELEASE refuses while frames are in flight;
 * closing the file orphans the imports and the last completion frees an
 * orphan. Stopping a ring (disconnect, remove) cancels its frames, so
 * remove finds none in flight and frees everything.
 */
#include <linux/dma-buf.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

#include "odl_tb5.h"

MODULE_IMPORT_NS(DMA_BUF);

void odl_dmabuf_init(struct odl_tb5 *odl)
{
	mutex_init(&odl->dmabuf_lock);
	INIT_LIST_HEAD(&odl->dmabuf_free);
}

/* 6.2 split the dma-buf locking: vmap then takes the reservation lock. */
static int odl_dmabuf_vmap(struct dma_buf *dbuf, struct iosys_map *map)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	return dma_buf_vmap_unlocked(dbuf, map);
#else
	return dma_buf_vmap(dbuf, map);
#endif
}

static void odl_dmabuf_vunmap(struct dma_buf *dbuf, struct iosys_map *map)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	dma_buf_vunmap_unlocked(dbuf, map);
#else
	dma_buf_vunmap(dbuf, map);
#endif
}

/* Undo an import; nothing of it is in flight. May sleep. */
static void odl_dmabuf_destroy(struct odl_dmabuf *imp)
{
	if (imp->va)
		odl_dmabuf_vunmap(imp->dbuf, &imp->vmap);
	if (imp->sgt)
		dma_buf_unmap_attachment_unlocked(imp->attach, imp->sgt,
						  DMA_TO_DEVICE);
	if (imp->attach)
		dma_buf_detach(imp->dbuf, imp->attach);
	dma_buf_put(imp->dbuf);
	kvfree(imp->seg);
	kfree(imp);
}

static void odl_dmabuf_tx_callback(struct tb_ring *ring,
				   struct ring_frame *frame, bool canceled)
{
	struct odl_dmabuf_slot *s =
		container_of(frame, struct odl_dmabuf_slot, frame);
	struct odl_tb5 *odl = s->odl;
	struct odl_dmabuf *imp = s->imp;
	unsigned long flags;
	bool last;

	spin_lock_irqsave(&odl->tx_lock, flags);
	/* Before the count drops: RELEASE must not miss the entry. */
	if (odl->tx_map && !imp->orphan)
		odl_map_tx_push_dmabuf(odl->tx_map,
				       ODL_TB5_CQE_DMABUF | imp->handle |
				       (canceled ? ODL_TB5_CQE_CANCELED : 0),
				       s->offset);
	imp->inflight--;
	odl->dmabuf_inflight--;
	last = imp->orphan && !imp->inflight;
	s->imp = NULL;
	list_add(&s->list, &odl->dmabuf_free);
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	wake_up_interruptible(&odl->wq);
	/* Ring completions run in process context (the ring's work). */
	if (last)
		odl_dmabuf_destroy(imp);
}

/* Caller holds io_rwsem for read (->svc set) and dmabuf_lock. */
static int odl_dmabuf_slots_alloc(struct odl_tb5 *odl)
{
	struct odl_dmabuf_slot *slots;
	unsigned long flags;
	unsigned int i;

	if (odl->dmabuf_slots)
		return 0;
	slots = kvcalloc(odl->tx_count, sizeof(*slots), GFP_KERNEL);
	if (!slots)
		return -ENOMEM;
	spin_lock_irqsave(&odl->tx_lock, flags);
	for (i = 0; i < odl->tx_count; i++) {
		slots[i].odl = odl;
		slots[i].frame.callback = odl_dmabuf_tx_callback;
		list_add_tail(&slots[i].list, &odl->dmabuf_free);
	}
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	odl->dmabuf_slots = slots;
	return 0;
}

/* The DMA segments of @imp->sgt, in order. */
static int odl_dmabuf_segments(struct odl_dmabuf *imp)
{
	struct scatterlist *sg;
	u64 start = 0;
	unsigned int i;

	imp->seg = kvcalloc(imp->sgt->nents, sizeof(*imp->seg), GFP_KERNEL);
	if (!imp->seg)
		return -ENOMEM;
	for_each_sgtable_dma_sg(imp->sgt, sg, i) {
		imp->seg[i].start = start;
		imp->seg[i].len = sg_dma_len(sg);
		imp->seg[i].dma = sg_dma_address(sg);
		start += sg_dma_len(sg);
	}
	imp->nseg = imp->sgt->nents;
	/* A mapping shorter than the buffer: the tail is not addressable. */
	if (start < imp->size)
		imp->size = start;
	return 0;
}

/*
 * Attach, map for the NHI and (unless @device) for the CPU; @imp->dbuf
 * set. No CPU mapping, or only I/O memory: device-only (@imp->va NULL).
 * May sleep.
 */
static int odl_dmabuf_map(struct odl_tb5 *odl, struct odl_dmabuf *imp,
			  bool device)
{
	struct device *dma_dev = tb_ring_dma_device(odl->ring[0].tx);
	int ret;

	imp->attach = dma_buf_attach(imp->dbuf, dma_dev);
	if (IS_ERR(imp->attach)) {
		ret = PTR_ERR(imp->attach);
		imp->attach = NULL;
		return ret;
	}
	imp->sgt = dma_buf_map_attachment_unlocked(imp->attach, DMA_TO_DEVICE);
	if (IS_ERR(imp->sgt)) {
		ret = PTR_ERR(imp->sgt);
		imp->sgt = NULL;
		return ret;
	}
	/* Whole frames' headers are read by the CPU, through this mapping. */
	if (!device && !odl_dmabuf_vmap(imp->dbuf, &imp->vmap)) {
		if (imp->vmap.is_iomem)
			odl_dmabuf_vunmap(imp->dbuf, &imp->vmap);
		else
			imp->va = imp->vmap.vaddr;
	}
	return odl_dmabuf_segments(imp);
}

/* Release import @handle unless a frame of it is in flight. */
static int odl_dmabuf_drop(struct odl_tb5 *odl, u32 handle)
{
	struct odl_dmabuf *imp;
	unsigned long flags;
	bool busy;

	if (!handle || handle > ODL_TB5_DMABUF_MAX)
		return -EINVAL;
	mutex_lock(&odl->dmabuf_lock);
	imp = odl->dmabuf[handle - 1];
	if (!imp) {
		mutex_unlock(&odl->dmabuf_lock);
		return -EINVAL;
	}
	/* Posts hold dmabuf_lock: no frame of it can start meanwhile. */
	spin_lock_irqsave(&odl->tx_lock, flags);
	busy = imp->inflight;
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	if (busy) {
		mutex_unlock(&odl->dmabuf_lock);
		return -EBUSY;
	}
	odl->dmabuf[handle - 1] = NULL;
	mutex_unlock(&odl->dmabuf_lock);
	odl_dmabuf_destroy(imp);
	return 0;
}

int odl_ioctl_dmabuf_import(struct odl_tb5 *odl, void __user *uarg)
{
	struct odl_tb5_dmabuf_import arg;
	struct odl_dmabuf *imp;
	unsigned int i;
	int ret;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if ((arg.flags & ~ODL_TB5_DMABUF_F_KNOWN) || arg.oflags ||
	    memchr_inv(arg.reserved, 0, sizeof(arg.reserved)))
		return -EINVAL;
	imp = kzalloc(sizeof(*imp), GFP_KERNEL);
	if (!imp)
		return -ENOMEM;
	/* -EBADF for a closed fd, -EINVAL for a file that is no dma-buf. */
	imp->dbuf = dma_buf_get(arg.fd);
	if (IS_ERR(imp->dbuf)) {
		ret = PTR_ERR(imp->dbuf);
		kfree(imp);
		return ret;
	}
	imp->odl = odl;
	imp->size = imp->dbuf->size;

	down_read(&odl->io_rwsem);
	mutex_lock(&odl->dmabuf_lock);
	ret = -ENODEV;
	if (!odl->svc)
		goto err_unlock;
	/* Completions go to the Tx queue: mmap mode only. */
	ret = -EINVAL;
	if (!odl->map || imp->size > (u64)U32_MAX + 1)
		goto err_unlock;
	for (i = 0; i < ODL_TB5_DMABUF_MAX && odl->dmabuf[i]; i++)
		;
	ret = -ENOSPC;
	if (i == ODL_TB5_DMABUF_MAX)
		goto err_unlock;
	ret = odl_dmabuf_slots_alloc(odl);
	if (ret)
		goto err_unlock;
	ret = odl_dmabuf_map(odl, imp, arg.flags & ODL_TB5_DMABUF_F_DEVICE);
	if (ret)
		goto err_unlock;
	imp->handle = i + 1;
	odl->dmabuf[i] = imp;
	arg.handle = imp->handle;
	arg.size = imp->size;
	arg.oflags = imp->va ? 0 : ODL_TB5_DMABUF_DEVICE;
	mutex_unlock(&odl->dmabuf_lock);
	up_read(&odl->io_rwsem);

	if (copy_to_user(uarg, &arg, sizeof(arg))) {
		/* Nobody learnt the handle: undo (-EBUSY if it was guessed). */
		odl_dmabuf_drop(odl, arg.handle);
		return -EFAULT;
	}
	return 0;

err_unlock:
	mutex_unlock(&odl->dmabuf_lock);
	up_read(&odl->io_rwsem);
	odl_dmabuf_destroy(imp);
	return ret;
}

int odl_ioctl_dmabuf_release(struct odl_tb5 *odl, void __user *uarg)
{
	struct odl_tb5_dmabuf_release arg;

	if (copy_from_user(&arg, uarg, sizeof(arg)))
		return -EFAULT;
	if (arg.flags)
		return -EINVAL;
	return odl_dmabuf_drop(odl, arg.handle);
}

/* The segment of @imp holding [@off, @off + @len), or NULL. */
static const struct odl_dmabuf_seg *
odl_dmabuf_find(const struct odl_dmabuf *imp, u64 off, u32 len)
{
	unsigned int lo = 0, hi = imp->nseg, mid;
	const struct odl_dmabuf_seg *sg;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		sg = &imp->seg[mid];
		if (off < sg->start)
			hi = mid;
		else if (off - sg->start >= sg->len)
			lo = mid + 1;
		else
			return len <= sg->len - (off - sg->start) ? sg : NULL;
	}
	return NULL;
}

/*
 * One dma-buf frame onto its stream's ring; caller holds io_rwsem (->svc
 * set). The entry and the header are checked first, so a bad one is
 * -EINVAL in any state, as with POST_SEND.
 */
/*
 * A free dma-buf slot for a frame at @offset of @imp, counted in flight, or
 * NULL (counted in tx_ring_full) when none is free or the Tx completion
 * queue could not take one more completion.
 */
static struct odl_dmabuf_slot *odl_dmabuf_slot_get(struct odl_tb5 *odl,
						   struct odl_dmabuf *imp,
						   u32 offset)
{
	struct odl_dmabuf_slot *s;
	unsigned long flags;

	spin_lock_irqsave(&odl->tx_lock, flags);
	s = list_first_entry_or_null(&odl->dmabuf_free, struct odl_dmabuf_slot,
				     list);
	if (!s || !odl->tx_map ||
	    !odl_map_tx_room(odl->tx_map, odl->dmabuf_inflight + 1)) {
		spin_unlock_irqrestore(&odl->tx_lock, flags);
		odl_stat_inc(odl, tx_ring_full, 1);
		return NULL;
	}
	list_del(&s->list);
	s->imp = imp;
	s->offset = offset;
	imp->inflight++;
	odl->dmabuf_inflight++;
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	return s;
}

static int odl_post_send_dmabuf_one(struct odl_tb5 *odl, const void *entry)
{
	const struct odl_tb5_dmabuf_entry *e = entry;
	const struct odl_dmabuf_seg *sg;
	struct odl_dmabuf_slot *s;
	struct odl_frame_info fi;
	struct odl_dmabuf *imp;
	enum odl_frame_err err;
	unsigned long flags;
	int ret;

	if (!e->handle || e->handle > ODL_TB5_DMABUF_MAX ||
	    e->len < ODL_FRAME_HDR_BYTES || e->len > ODL_FRAME_MAX_BYTES)
		goto bad;
	mutex_lock(&odl->dmabuf_lock);
	imp = odl->dmabuf[e->handle - 1];
	/* A device-only import: no header the module could check. */
	if (!imp || !imp->va || e->offset > imp->size ||
	    e->len > imp->size - e->offset)
		goto bad_unlock;
	sg = odl_dmabuf_find(imp, e->offset, e->len);
	if (!sg)
		goto bad_unlock;
	/*
	 * As with Tx buffers the user can still change the frame until the
	 * NHI has sent it; the descriptor carries the checked length and the
	 * peer checks every frame it receives.
	 */
	err = odl_frame_decode(imp->va + e->offset, e->len, ODL_MAX_STREAMS,
			       &fi);
	if (err != ODL_FRAME_OK || ODL_FRAME_HDR_BYTES + fi.len != e->len)
		goto bad_unlock;
	ret = odl_send_state(odl);
	if (ret)
		goto out_unlock;

	s = odl_dmabuf_slot_get(odl, imp, e->offset);
	if (!s) {
		ret = -EAGAIN;
		goto out_unlock;
	}

	s->frame.buffer_phy = sg->dma + (e->offset - sg->start);
	ret = odl_tx_frame(odl, &s->frame, imp->va + e->offset, &fi);
	if (ret) {
		/* The ring is stopped: nothing was queued, no completion. */
		spin_lock_irqsave(&odl->tx_lock, flags);
		imp->inflight--;
		odl->dmabuf_inflight--;
		s->imp = NULL;
		list_add(&s->list, &odl->dmabuf_free);
		spin_unlock_irqrestore(&odl->tx_lock, flags);
	}
out_unlock:
	mutex_unlock(&odl->dmabuf_lock);
	return ret;

bad_unlock:
	mutex_unlock(&odl->dmabuf_lock);
bad:
	odl_stat_inc(odl, tx_rejected, 1);
	return -EINVAL;
}

int odl_ioctl_post_send_dmabuf(struct odl_tb5 *odl, void __user *uarg)
{
	return odl_post_entries(odl, uarg, sizeof(struct odl_tb5_dmabuf_entry),
				odl_post_send_dmabuf_one, false);
}

/* Tx buffer @idx back to the user (a refused or unsent split entry). */
static void odl_split_unclaim(struct odl_tb5 *odl, struct odl_buf *b)
{
	unsigned long flags;

	spin_lock_irqsave(&odl->tx_lock, flags);
	b->user = true;
	spin_unlock_irqrestore(&odl->tx_lock, flags);
}

/*
 * Check a split entry: its Tx buffer is the user's (claimed for the
 * kernel on success), its header (ODL_FRAME_F_SPLIT set here) passes the
 * codec as a DATA header of @e->len payload bytes, written back so the
 * peer gets what was checked. 0 or -EINVAL.
 */
static int odl_split_claim(struct odl_tb5 *odl,
			   const struct odl_tb5_split_entry *e,
			   struct odl_buf **bp, struct odl_frame_info *fi)
{
	u8 hdr[ODL_FRAME_HDR_BYTES];
	unsigned long flags;
	struct odl_buf *b;

	if (e->tx_index >= odl->tx_count || e->reserved || !e->len ||
	    e->len > ODL_FRAME_MAX_PAYLOAD || !e->handle ||
	    e->handle > ODL_TB5_DMABUF_MAX)
		return -EINVAL;
	b = &odl->tx_bufs[e->tx_index];
	spin_lock_irqsave(&odl->tx_lock, flags);
	if (!b->user) {
		spin_unlock_irqrestore(&odl->tx_lock, flags);
		return -EINVAL;
	}
	b->user = false;
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	memcpy(hdr, odl_buf_va(b), sizeof(hdr));
	hdr[offsetof(struct odl_frame_hdr, flags)] |= ODL_FRAME_F_SPLIT;
	if (odl_frame_decode_opt(hdr, sizeof(hdr), ODL_MAX_STREAMS,
				 ODL_FRAME_DEC_SPLIT, fi) != ODL_FRAME_OK ||
	    !(fi->flags & ODL_FRAME_F_SPLIT) || fi->len != e->len) {
		odl_split_unclaim(odl, b);
		return -EINVAL;
	}
	memcpy(odl_buf_va(b), hdr, sizeof(hdr));
	*bp = b;
	return 0;
}

/*
 * One split pair: header from a Tx buffer, payload from a dma-buf; caller
 * holds io_rwsem (->svc set). Checks first (-EINVAL in any state), then the
 * state, then the peer's consent (-EOPNOTSUPP).
 */
static int odl_post_send_split_one(struct odl_tb5 *odl, const void *entry)
{
	const struct odl_tb5_split_entry *e = entry;
	const struct odl_dmabuf_seg *sg;
	struct odl_dmabuf_slot *s;
	struct odl_frame_info fi;
	struct odl_dmabuf *imp;
	unsigned long flags;
	struct odl_buf *b;
	int ret;

	if (odl_split_claim(odl, e, &b, &fi)) {
		odl_stat_inc(odl, tx_rejected, 1);
		return -EINVAL;
	}
	mutex_lock(&odl->dmabuf_lock);
	imp = odl->dmabuf[e->handle - 1];
	ret = -EINVAL;
	if (!imp || e->offset > imp->size || e->len > imp->size - e->offset)
		goto out_rejected;
	sg = odl_dmabuf_find(imp, e->offset, e->len);
	if (!sg)
		goto out_rejected;
	ret = odl_send_state(odl);
	if (ret)
		goto out_unclaim;
	ret = -EOPNOTSUPP;
	if (!odl_split_peer(odl))
		goto out_unclaim;

	s = odl_dmabuf_slot_get(odl, imp, e->offset);
	if (!s) {
		ret = -EAGAIN;
		goto out_unclaim;
	}

	s->frame.buffer_phy = sg->dma + (e->offset - sg->start);
	ret = odl_tx_split(odl, b, &s->frame, &fi);
	if (ret == -ESTALE) {
		/*
		 * The header went out, the ring stopped before the payload:
		 * the entry counts as taken and completes cancelled, like a
		 * pair the stop caught on the ring.
		 */
		odl_dmabuf_tx_callback(NULL, &s->frame, true);
		ret = 0;
	} else if (ret) {
		/* The ring is stopped: nothing was queued, no completion. */
		spin_lock_irqsave(&odl->tx_lock, flags);
		imp->inflight--;
		odl->dmabuf_inflight--;
		s->imp = NULL;
		list_add(&s->list, &odl->dmabuf_free);
		b->user = true;
		spin_unlock_irqrestore(&odl->tx_lock, flags);
	}
	mutex_unlock(&odl->dmabuf_lock);
	return ret;

out_rejected:
	odl_stat_inc(odl, tx_rejected, 1);
out_unclaim:
	mutex_unlock(&odl->dmabuf_lock);
	odl_split_unclaim(odl, b);
	return ret;
}

int odl_ioctl_post_send_split(struct odl_tb5 *odl, void __user *uarg)
{
	return odl_post_entries(odl, uarg, sizeof(struct odl_tb5_split_entry),
				odl_post_send_split_one, false);
}

/**
 * odl_dmabuf_release_all() - the file is released: let go of its imports.
 * @odl: device; caller holds @odl->lock
 *
 * Idle imports are freed now; one with frames in flight is orphaned and
 * freed by its last completion (a stopping ring cancels them).
 */
void odl_dmabuf_release_all(struct odl_tb5 *odl)
{
	struct odl_dmabuf *imp;
	unsigned long flags;
	unsigned int i;
	bool idle;

	mutex_lock(&odl->dmabuf_lock);
	for (i = 0; i < ODL_TB5_DMABUF_MAX; i++) {
		imp = odl->dmabuf[i];
		if (!imp)
			continue;
		odl->dmabuf[i] = NULL;
		spin_lock_irqsave(&odl->tx_lock, flags);
		imp->orphan = true;
		idle = !imp->inflight;
		spin_unlock_irqrestore(&odl->tx_lock, flags);
		if (idle)
			odl_dmabuf_destroy(imp);
	}
	mutex_unlock(&odl->dmabuf_lock);
}

/**
 * odl_dmabuf_remove() - the service is removed: free every import and the
 *	slot pool.
 * @odl: device; caller holds io_rwsem for write, the rings are stopped
 *	(so every frame came back, cancelled)
 */
void odl_dmabuf_remove(struct odl_tb5 *odl)
{
	odl_dmabuf_release_all(odl);
	mutex_lock(&odl->dmabuf_lock);
	WARN_ON(odl->dmabuf_inflight);
	INIT_LIST_HEAD(&odl->dmabuf_free);
	kvfree(odl->dmabuf_slots);
	odl->dmabuf_slots = NULL;
	mutex_unlock(&odl->dmabuf_lock);
}
