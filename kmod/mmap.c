// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: the zero-copy data path (include/uapi/odl_tb5.h, ABI 2). The
 * open file maps its control area (two completion queues) and the Tx and
 * Rx frame buffers; frames are posted with ioctls and completed through the
 * queues. Every buffer has one owner, user or kernel (odl_buf.user): a post
 * naming a buffer the user does not own is refused, so a buggy or hostile
 * process can neither put a buffer on a ring twice nor lose one.
 */
#include <linux/mm.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/vmalloc.h>

#include "odl_tb5.h"

#define ODL_POST_CHUNK 32 /* entries copied from the user per step */

static void odl_vma_flags(struct vm_area_struct *vma, vm_flags_t set,
			  vm_flags_t clear)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_mod(vma, set, clear);
#else
	vma->vm_flags = (vma->vm_flags | set) & ~clear;
#endif
}

static void odl_map_free(struct odl_map *map)
{
	unsigned int i;

	for (i = 0; map->tx_pages && i < map->ntx; i++)
		if (map->tx_pages[i])
			put_page(map->tx_pages[i]);
	for (i = 0; map->rx_pages && i < map->nrx; i++)
		if (map->rx_pages[i])
			put_page(map->rx_pages[i]);
	kvfree(map->tx_pages);
	kvfree(map->rx_pages);
	vfree(map->ctrl);
	kfree(map);
}

/* Caller holds io_rwsem for write and has checked ->svc. */
static struct odl_map *odl_map_alloc(struct odl_tb5 *odl)
{
	unsigned int ntx = odl->tx_count, nrx = odl->rx_count;
	struct odl_tb5_map_info *mi;
	struct odl_map *map;
	size_t cqe_bytes;
	unsigned int i;

	map = kzalloc(sizeof(*map), GFP_KERNEL);
	if (!map)
		return NULL;
	/*
	 * A power of two above the buffer counts: the queues never overflow.
	 * The Tx queue has room for as many dma-buf completions again
	 * (odl_map_tx_room()).
	 */
	mi = &map->info;
	mi->cq_entries = roundup_pow_of_two(max(2 * ntx, nrx) + 1);
	map->mask = mi->cq_entries - 1;
	cqe_bytes = (size_t)mi->cq_entries * sizeof(struct odl_tb5_cqe);
	mi->tx_count = ntx;
	mi->rx_count = nrx;
	mi->buf_size = PAGE_SIZE;
	mi->post_max = ODL_TB5_POST_MAX;
	mi->rx_cqe_offset = sizeof(struct odl_tb5_ctrl);
	mi->tx_cqe_offset = mi->rx_cqe_offset + cqe_bytes;
	mi->ctrl_offset = 0;
	mi->ctrl_size = PAGE_ALIGN(mi->tx_cqe_offset + cqe_bytes);
	mi->tx_offset = mi->ctrl_size;
	mi->tx_size = (u64)ntx * PAGE_SIZE;
	mi->rx_offset = mi->tx_offset + mi->tx_size;
	mi->rx_size = (u64)nrx * PAGE_SIZE;

	map->tx_pages = kvcalloc(ntx, sizeof(*map->tx_pages), GFP_KERNEL);
	map->rx_pages = kvcalloc(nrx, sizeof(*map->rx_pages), GFP_KERNEL);
	map->ctrl = vmalloc_user(mi->ctrl_size);
	if (!map->tx_pages || !map->rx_pages || !map->ctrl) {
		odl_map_free(map);
		return NULL;
	}
	map->rx_cqe = (void *)map->ctrl + mi->rx_cqe_offset;
	map->tx_cqe = (void *)map->ctrl + mi->tx_cqe_offset;
	map->ntx = ntx;
	map->nrx = nrx;
	for (i = 0; i < ntx; i++) {
		map->tx_pages[i] = odl->tx_bufs[i].page;
		get_page(map->tx_pages[i]);
	}
	for (i = 0; i < nrx; i++) {
		map->rx_pages[i] = odl->rx_bufs[i].page;
		get_page(map->rx_pages[i]);
	}
	return map;
}

/* Caller holds tx_lock. */
static void odl_map_tx_push(struct odl_map *map, struct odl_tb5 *odl,
			    struct odl_buf *b)
{
	struct odl_tb5_cqe *e = &map->tx_cqe[map->tx_prod & map->mask];

	b->user = true;
	WRITE_ONCE(e->index, b - odl->tx_bufs);
	WRITE_ONCE(e->len, 0);
	map->tx_prod++;
	/* Entry before index: the user reads prod with acquire. */
	smp_store_release(&map->ctrl->tx_cq.prod, map->tx_prod);
}

/* A dma-buf frame's completion (dmabuf.c); caller holds tx_lock. */
void odl_map_tx_push_dmabuf(struct odl_map *map, u32 index, u32 offset)
{
	struct odl_tb5_cqe *e = &map->tx_cqe[map->tx_prod & map->mask];

	WRITE_ONCE(e->index, index);
	WRITE_ONCE(e->len, offset);
	map->tx_prod++;
	/* Entry before index: the user reads prod with acquire. */
	smp_store_release(&map->ctrl->tx_cq.prod, map->tx_prod);
}

/**
 * odl_map_tx_room() - may one more dma-buf frame go out?
 * @map: mmap mode of the file; caller holds tx_lock
 * @pending: dma-buf frames in flight, this one included
 *
 * Entries not yet consumed, the dma-buf frames in flight and every Tx
 * buffer (each can complete once more) must fit in the queue. The user's
 * cons is not trusted: a wrong one only overwrites the user's own entries.
 */
bool odl_map_tx_room(struct odl_map *map, unsigned int pending)
{
	u32 used = map->tx_prod - READ_ONCE(map->ctrl->tx_cq.cons);

	used = min(used, map->mask + 1);
	return (u64)used + pending + map->ntx <= map->mask + 1;
}

/* Caller holds rx_lock. */
static void odl_map_rx_push(struct odl_map *map, struct odl_tb5 *odl,
			    struct odl_buf *b, unsigned int size)
{
	struct odl_tb5_cqe *e = &map->rx_cqe[map->rx_prod & map->mask];

	b->user = true;
	WRITE_ONCE(e->index, b - odl->rx_bufs);
	WRITE_ONCE(e->len, size);
	map->rx_prod++;
	/* Entry before index: the user reads prod with acquire. */
	smp_store_release(&map->ctrl->rx_cq.prod, map->rx_prod);
}

/**
 * odl_map_tx_done() - a sent (or cancelled) Tx buffer is free again.
 * @odl: device
 * @b: the buffer, owned by the kernel
 *
 * In mmap mode it goes to the user through the Tx completion queue,
 * otherwise to the free list; one lock section, so a concurrent switch to
 * mmap mode cannot strand it on the free list.
 */
void odl_map_tx_done(struct odl_tb5 *odl, struct odl_buf *b)
{
	unsigned long flags;

	spin_lock_irqsave(&odl->tx_lock, flags);
	if (odl->tx_map)
		odl_map_tx_push(odl->tx_map, odl, b);
	else
		list_add(&b->list, &odl->tx_free);
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	wake_up_interruptible(&odl->wq);
}

/* Caller holds rx_lock. */
static void odl_rx_deliver(struct odl_tb5 *odl, struct odl_buf *b,
			   unsigned int size)
{
	if (odl->rx_map)
		odl_map_rx_push(odl->rx_map, odl, b, size);
	else
		list_add_tail(&b->list, &odl->rx_queue);
}

/**
 * odl_map_rx_done() - hand a received, checked frame to the reader.
 * @odl: device
 * @b: the buffer, owned by the kernel, synced for the CPU
 * @size: frame bytes, header included
 * @type: the frame's type (checked header)
 *
 * mmap mode: the Rx completion queue; otherwise the queue read() takes
 * from. One lock section, as above.
 *
 * With several rings the peer's frames of different streams may overtake
 * each other, but the frame engine needs the peer's HELLO (its first frame,
 * stream 0, so ring 0) first and its GOODBYE last. Frames of other rings
 * wait until ring 0 has delivered one; a GOODBYE comes on every ring in
 * use (odl_tx_queue()) and only the copy that completes the set is
 * delivered, the others are given back to their rings.
 */
void odl_map_rx_done(struct odl_tb5 *odl, struct odl_buf *b, unsigned int size,
		     u8 type)
{
	unsigned int nrings = READ_ONCE(odl->nrings);
	struct odl_buf *h, *tmp;
	unsigned long flags;
	bool drop = false;

	spin_lock_irqsave(&odl->rx_lock, flags);
	if (nrings <= 1) {
		odl_rx_deliver(odl, b, size);
	} else if (type == ODL_FRAME_GOODBYE &&
		   ++odl->rx_goodbyes < nrings) {
		drop = true;
	} else if (b->ring && !odl->rx_ring0_seen) {
		list_add_tail(&b->list, &odl->rx_held);
	} else {
		odl_rx_deliver(odl, b, size);
		if (!b->ring && !odl->rx_ring0_seen) {
			odl->rx_ring0_seen = true;
			list_for_each_entry_safe(h, tmp, &odl->rx_held, list) {
				list_del(&h->list);
				odl_rx_deliver(odl, h, odl_frame_size(&h->frame));
			}
		}
	}
	spin_unlock_irqrestore(&odl->rx_lock, flags);
	if (drop)
		odl_rx_repost(odl, b);
}

int odl_ioctl_map_info(struct odl_tb5 *odl, void __user *uarg)
{
	struct odl_tb5_map_info mi;
	struct odl_map *map;
	struct odl_buf *b, *tmp;
	unsigned long flags;

	if (copy_from_user(&mi, uarg, sizeof(mi)))
		return -EFAULT;
	if (mi.flags || memchr_inv(mi.reserved, 0, sizeof(mi.reserved)))
		return -EINVAL;

	/* No read(), write() or post runs while the file changes mode. */
	down_write(&odl->io_rwsem);
	if (!odl->svc || READ_ONCE(odl->gone)) {
		up_write(&odl->io_rwsem);
		return -ENODEV;
	}
	map = odl->map;
	if (!map) {
		map = odl_map_alloc(odl);
		if (!map) {
			up_write(&odl->io_rwsem);
			return -ENOMEM;
		}
		/* Every free Tx buffer and every waiting frame is the user's. */
		spin_lock_irqsave(&odl->tx_lock, flags);
		list_for_each_entry_safe(b, tmp, &odl->tx_free, list) {
			list_del(&b->list);
			odl_map_tx_push(map, odl, b);
		}
		odl->tx_map = map;
		spin_unlock_irqrestore(&odl->tx_lock, flags);
		spin_lock_irqsave(&odl->rx_lock, flags);
		list_for_each_entry_safe(b, tmp, &odl->rx_queue, list) {
			list_del(&b->list);
			odl_map_rx_push(map, odl, b, odl_frame_size(&b->frame));
		}
		odl->rx_map = map;
		spin_unlock_irqrestore(&odl->rx_lock, flags);
		/* mmap() reads it without io_rwsem (mmap_lock is held there). */
		smp_store_release(&odl->map, map);
	}
	mi = map->info;
	up_write(&odl->io_rwsem);
	wake_up_interruptible(&odl->rq);
	wake_up_interruptible(&odl->wq);

	if (copy_to_user(uarg, &mi, sizeof(mi)))
		return -EFAULT;
	return 0;
}

/**
 * odl_map_release() - leave mmap mode when the file is released.
 * @odl: device; caller holds @odl->lock, and no mapping is left (each holds
 *	the file)
 *
 * Buffers the user still owns go back: Tx to the free list, Rx to the ring.
 */
void odl_map_release(struct odl_tb5 *odl)
{
	struct odl_map *map = odl->map;
	struct odl_buf *b, *tmp;
	unsigned long flags;
	LIST_HEAD(rx);
	unsigned int i;

	if (!map)
		return;
	down_read(&odl->io_rwsem);
	spin_lock_irqsave(&odl->tx_lock, flags);
	odl->tx_map = NULL;
	for (i = 0; odl->svc && i < map->ntx; i++) {
		b = &odl->tx_bufs[i];
		if (b->user) {
			b->user = false;
			list_add(&b->list, &odl->tx_free);
		}
	}
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	spin_lock_irqsave(&odl->rx_lock, flags);
	odl->rx_map = NULL;
	for (i = 0; odl->svc && i < map->nrx; i++) {
		b = &odl->rx_bufs[i];
		if (b->user) {
			b->user = false;
			list_add_tail(&b->list, &rx);
		}
	}
	spin_unlock_irqrestore(&odl->rx_lock, flags);
	list_for_each_entry_safe(b, tmp, &rx, list) {
		list_del(&b->list);
		odl_rx_repost(odl, b);
	}
	up_read(&odl->io_rwsem);
	odl->map = NULL;
	odl_map_free(map);
}

/* Why a post cannot send now, or 0 (the same answers as write()). */
int odl_send_state(struct odl_tb5 *odl)
{
	switch (odl_state(odl)) {
	case ODL_TB5_STATE_SESSION:
		return 0;
	case ODL_TB5_STATE_GONE:
		return -ENODEV;
	case ODL_TB5_STATE_BROKEN:
		return -EPIPE;
	default:
		return -ENOTCONN;
	}
}

static int odl_post_args(struct odl_tb5 *odl, void __user *uarg,
			 struct odl_tb5_post *p)
{
	if (copy_from_user(p, uarg, sizeof(*p)))
		return -EFAULT;
	if (p->flags || !p->count || p->count > ODL_TB5_POST_MAX)
		return -EINVAL;
	/* Not in mmap mode: nothing is the user's to post. */
	if (!READ_ONCE(odl->map))
		return -EINVAL;
	return 0;
}

/*
 * One checked Tx buffer onto the ring; caller holds io_rwsem, ->svc set.
 * The entry is checked first, so a bad one is -EINVAL in any state.
 */
static int odl_post_send_one(struct odl_tb5 *odl, const void *entry)
{
	const struct odl_tb5_cqe *e = entry;
	struct odl_frame_info fi;
	enum odl_frame_err err;
	unsigned long flags;
	struct odl_buf *b;
	int ret;

	if (e->index >= odl->tx_count || e->len < ODL_FRAME_HDR_BYTES ||
	    e->len > ODL_FRAME_MAX_BYTES)
		goto bad;
	b = &odl->tx_bufs[e->index];
	spin_lock_irqsave(&odl->tx_lock, flags);
	if (!b->user) {
		spin_unlock_irqrestore(&odl->tx_lock, flags);
		goto bad;
	}
	b->user = false;
	spin_unlock_irqrestore(&odl->tx_lock, flags);
	/*
	 * The user can still change the frame until the NHI has sent it; the
	 * descriptor carries the checked length, and the peer checks every
	 * frame it receives anyway.
	 */
	err = odl_frame_decode(odl_buf_va(b), e->len, ODL_MAX_STREAMS, &fi);
	if (err != ODL_FRAME_OK || ODL_FRAME_HDR_BYTES + fi.len != e->len) {
		odl_stat_inc(odl, tx_rejected, 1);
		ret = -EINVAL;
	} else {
		ret = odl_send_state(odl);
		if (!ret)
			ret = odl_tx_queue(odl, b, &fi);
	}
	if (ret) {
		spin_lock_irqsave(&odl->tx_lock, flags);
		b->user = true; /* still the user's */
		spin_unlock_irqrestore(&odl->tx_lock, flags);
	}
	return ret;
bad:
	odl_stat_inc(odl, tx_rejected, 1);
	return -EINVAL;
}

/* One Rx buffer back to the NHI; caller holds io_rwsem, ->svc set. */
static int odl_post_recv_one(struct odl_tb5 *odl, const void *entry)
{
	u32 idx = *(const u32 *)entry;
	unsigned long flags;
	struct odl_buf *b;
	bool mine;

	if (idx >= odl->rx_count)
		return -EINVAL;
	b = &odl->rx_bufs[idx];
	spin_lock_irqsave(&odl->rx_lock, flags);
	mine = b->user;
	b->user = false;
	spin_unlock_irqrestore(&odl->rx_lock, flags);
	if (!mine)
		return -EINVAL;
	odl_rx_repost(odl, b);
	return 0;
}

/*
 * POST_SEND, POST_RECV, POST_SEND_DMABUF and POST_SEND_SPLIT: the entries, @esize bytes
 * each, in chunks; @one takes each. Returns entries taken, or -errno when none was.
 */
int odl_post_entries(struct odl_tb5 *odl, void __user *uarg, size_t esize,
		     int (*one)(struct odl_tb5 *, const void *), bool harvest)
{
	/* The largest entry (POST_SEND_SPLIT's), aligned for all. */
	u64 buf[ODL_POST_CHUNK * sizeof(struct odl_tb5_split_entry) / 8];
	struct odl_tb5_post p;
	unsigned int done = 0, k, i;
	int ret;

	static_assert(sizeof(struct odl_tb5_split_entry) >=
		      sizeof(struct odl_tb5_dmabuf_entry));
	if (WARN_ON_ONCE(esize > sizeof(struct odl_tb5_split_entry)))
		return -EINVAL;
	ret = odl_post_args(odl, uarg, &p);
	if (ret)
		return ret;
	while (done < p.count) {
		k = min_t(unsigned int, p.count - done, ODL_POST_CHUNK);
		/* Copied before io_rwsem: a fault may take mmap_lock. */
		if (copy_from_user(buf, u64_to_user_ptr(p.entries) +
				   (u64)done * esize, k * esize))
			return done ? done : -EFAULT;
		down_read(&odl->io_rwsem);
		/* Gone as soon as INFO says so, not once removal is done. */
		if (!odl->svc || READ_ONCE(odl->gone)) {
			up_read(&odl->io_rwsem);
			return done ? done : -ENODEV;
		}
		for (i = 0; i < k; i++) {
			ret = one(odl, (const u8 *)buf + i * esize);
			if (ret) {
				up_read(&odl->io_rwsem);
				return done ? done : ret;
			}
			done++;
		}
		/* Polling mode: room on the ring, take what completed. */
		if (harvest)
			odl_rx_harvest(odl);
		up_read(&odl->io_rwsem);
	}
	return done;
}

int odl_ioctl_post_send(struct odl_tb5 *odl, void __user *uarg)
{
	return odl_post_entries(odl, uarg, sizeof(struct odl_tb5_cqe),
				odl_post_send_one, false);
}

int odl_ioctl_post_recv(struct odl_tb5 *odl, void __user *uarg)
{
	return odl_post_entries(odl, uarg, sizeof(u32), odl_post_recv_one,
				true);
}

/* poll() in mmap mode; caller has harvested the ring. */
__poll_t odl_map_poll(struct odl_tb5 *odl, u32 state)
{
	struct odl_map *map = odl->map;
	__poll_t mask = 0;

	if (READ_ONCE(map->rx_prod) != READ_ONCE(map->ctrl->rx_cq.cons))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (state == ODL_TB5_STATE_SESSION &&
	    READ_ONCE(map->tx_prod) != READ_ONCE(map->ctrl->tx_cq.cons))
		mask |= EPOLLOUT | EPOLLWRNORM;
	return mask;
}

/*
 * Each area is mapped whole at its own offset. The Rx buffers are
 * read-only (the NHI writes them while the kernel owns them); nothing is
 * executable, private, inherited by a child or expandable.
 */
int odl_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct odl_tb5 *odl = file->private_data;
	/* Pairs with MAP_INFO's release: the map is complete when seen. */
	struct odl_map *map = smp_load_acquire(&odl->map);
	unsigned long len = vma->vm_end - vma->vm_start;
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	const struct odl_tb5_map_info *mi;
	int ret;

	if (!map)
		return -EINVAL;
	mi = &map->info;
	if (vma->vm_flags & VM_EXEC)
		return -EPERM;
	/* A private copy of a queue or buffer would see no completion. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	odl_vma_flags(vma, VM_DONTEXPAND | VM_DONTCOPY | VM_DONTDUMP,
		      VM_MAYEXEC);
	if (off == mi->ctrl_offset && len == mi->ctrl_size) {
		ret = remap_vmalloc_range(vma, map->ctrl, 0);
	} else if (off == mi->tx_offset && len == mi->tx_size) {
		ret = vm_map_pages_zero(vma, map->tx_pages, map->ntx);
	} else if (off == mi->rx_offset && len == mi->rx_size) {
		if (vma->vm_flags & VM_WRITE)
			return -EPERM;
		odl_vma_flags(vma, 0, VM_MAYWRITE);
		ret = vm_map_pages_zero(vma, map->rx_pages, map->nrx);
	} else {
		ret = -EINVAL;
	}
	return ret;
}
