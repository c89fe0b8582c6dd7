// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: the character device /dev/odl_tb5_N - open/close, read/write of
 * whole OdinLink frames, poll. The user ABI is include/uapi/odl_tb5.h.
 */
#include <linux/fs.h>
#include <linux/idr.h>
#include <linux/module.h>
#include <linux/poll.h>
#include <linux/uaccess.h>

#include "odl_tb5.h"

#define ODL_MINORS 256

static dev_t odl_devt;
static DEFINE_IDA(odl_ida);
static struct class odl_class = {
	.name = "odl_tb5",
	.dev_groups = odl_dev_groups,
};

static int odl_open(struct inode *inode, struct file *file)
{
	struct odl_tb5 *odl = container_of(inode->i_cdev, struct odl_tb5, cdev);
	unsigned long flags;
	bool connected;
	int ret = 0;

	get_device(&odl->dev);
	mutex_lock(&odl->lock);
	spin_lock_irqsave(&odl->state_lock, flags);
	if (odl->gone) {
		ret = -ENODEV;
	} else if (odl->local_open) {
		ret = -EBUSY;
	} else {
		odl->local_open = true;
		odl->broken = false;
		odl->session_seen = false;
		odl->session++;
	}
	connected = odl->connected;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	if (!ret) {
		/* Frames left from an earlier open are not this session's. */
		down_read(&odl->io_rwsem);
		if (odl->svc)
			odl_rx_flush(odl);
		up_read(&odl->io_rwsem);
		odl_session_update(odl);
		if (connected)
			odl_queue_work(odl, &odl->port_work);
		odl_state_changed(odl);
	}
	mutex_unlock(&odl->lock);
	if (ret) {
		put_device(&odl->dev);
		return ret;
	}
	file->private_data = odl;
	return stream_open(inode, file);
}

static int odl_release(struct inode *inode, struct file *file)
{
	struct odl_tb5 *odl = file->private_data;
	unsigned long flags;
	bool connected;

	mutex_lock(&odl->lock);
	spin_lock_irqsave(&odl->state_lock, flags);
	odl->local_open = false;
	odl->session_seen = false;
	odl->broken = false;
	connected = odl->connected && !odl->gone;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	/* No mapping is left (each holds the file): buffers come back. */
	odl_map_release(odl);
	odl_dmabuf_release_all(odl);
	down_read(&odl->io_rwsem);
	if (odl->svc) {
		odl_rx_harvest(odl); /* closed now: drops what the ring holds */
		odl_rx_flush(odl);
	}
	up_read(&odl->io_rwsem);
	if (connected)
		odl_queue_work(odl, &odl->port_work);
	odl_state_changed(odl);
	mutex_unlock(&odl->lock);
	put_device(&odl->dev);
	return 0;
}

/* Why a waiting reader or writer must stop, or 0. */
static int odl_io_error(struct odl_tb5 *odl)
{
	switch (odl_state(odl)) {
	case ODL_TB5_STATE_GONE:
		return -ENODEV;
	case ODL_TB5_STATE_BROKEN:
		return -EPIPE;
	default:
		return 0;
	}
}

static ssize_t odl_read(struct file *file, char __user *ubuf, size_t count,
			loff_t *ppos)
{
	struct odl_tb5 *odl = file->private_data;
	bool drained = false;
	struct odl_buf *b;
	size_t done = 0;
	int ret;

	if (READ_ONCE(odl->map))
		return -EOPNOTSUPP;
	if (count < ODL_FRAME_MAX_BYTES)
		return -EINVAL;
	for (;;) {
		down_read(&odl->io_rwsem);
		if (!odl->svc) {
			up_read(&odl->io_rwsem);
			return -ENODEV;
		}
		if (odl->map) {
			up_read(&odl->io_rwsem);
			return -EOPNOTSUPP;
		}
		odl_rx_harvest(odl);
		while (done + ODL_FRAME_MAX_BYTES <= count) {
			unsigned int size;

			b = odl_rx_take(odl);
			if (!b)
				break;
			size = odl_frame_size(&b->frame);
			if (copy_to_user(ubuf + done, odl_buf_va(b), size)) {
				odl_rx_repost(odl, b);
				up_read(&odl->io_rwsem);
				return done ? done : -EFAULT;
			}
			odl_rx_repost(odl, b);
			done += size;
		}
		up_read(&odl->io_rwsem);
		if (done)
			return done;
		ret = odl_io_error(odl);
		if (ret && odl->poll && !drained) {
			/*
			 * The peer's close notice may overtake the interrupt
			 * of its last frames: take what the ring holds first.
			 */
			drained = true;
			odl_rx_poll_all(odl);
			continue;
		}
		if (ret)
			return ret;
		if (file->f_flags & O_NONBLOCK)
			return -EAGAIN;
		ret = wait_event_interruptible(odl->rq, odl_rx_pending(odl) ||
					       odl_rx_poll_pending(odl) ||
					       odl_io_error(odl));
		if (ret)
			return ret;
	}
}

static ssize_t odl_write(struct file *file, const char __user *ubuf,
			 size_t count, loff_t *ppos)
{
	struct odl_tb5 *odl = file->private_data;
	struct odl_frame_info fi;
	struct odl_frame_hdr hdr;
	enum odl_frame_err err;
	struct odl_buf *b;
	size_t done = 0, bytes;
	int ret;

	if (READ_ONCE(odl->map))
		return -EOPNOTSUPP;
	if (count < ODL_FRAME_HDR_BYTES)
		return -EINVAL;
	while (done + ODL_FRAME_HDR_BYTES <= count) {
		if (copy_from_user(&hdr, ubuf + done, sizeof(hdr)))
			return done ? done : -EFAULT;
		bytes = ODL_FRAME_HDR_BYTES + le16_to_cpu(hdr.len);
		if (bytes > ODL_FRAME_MAX_BYTES || done + bytes > count) {
			odl_stat_inc(odl, tx_rejected, 1);
			return done ? done : -EINVAL;
		}

		ret = odl_state(odl);
		if (ret != ODL_TB5_STATE_SESSION) {
			ret = odl_io_error(odl);
			if (!ret)
				ret = -ENOTCONN;
			return done ? done : ret;
		}
		down_read(&odl->io_rwsem);
		if (odl->map) {
			up_read(&odl->io_rwsem);
			return done ? done : -EOPNOTSUPP;
		}
		b = odl->svc ? odl_tx_get(odl) : NULL;
		if (!b) {
			up_read(&odl->io_rwsem);
			if (!odl->svc)
				return done ? done : -ENODEV;
			odl_stat_inc(odl, tx_ring_full, 1);
			if (done)
				return done;
			if (file->f_flags & O_NONBLOCK)
				return -EAGAIN;
			ret = wait_event_interruptible(odl->wq,
						       odl_tx_available(odl) ||
						       odl_io_error(odl));
			if (ret)
				return ret;
			continue;
		}
		if (copy_from_user(odl_buf_va(b), ubuf + done, bytes)) {
			odl_tx_put(odl, b);
			up_read(&odl->io_rwsem);
			return done ? done : -EFAULT;
		}
		/* Check what was copied, not what was read first. */
		err = odl_frame_decode(odl_buf_va(b), bytes, ODL_MAX_STREAMS, &fi);
		if (err != ODL_FRAME_OK) {
			odl_tx_put(odl, b);
			up_read(&odl->io_rwsem);
			odl_stat_inc(odl, tx_rejected, 1);
			return done ? done : -EINVAL;
		}
		ret = odl_tx_submit(odl, b, &fi);
		up_read(&odl->io_rwsem);
		if (ret)
			return done ? done : ret;
		done += ODL_FRAME_HDR_BYTES + fi.len;
	}
	return done;
}

static __poll_t odl_poll(struct file *file, poll_table *wait)
{
	struct odl_tb5 *odl = file->private_data;
	__poll_t mask = 0;
	u32 st;

	poll_wait(file, &odl->rq, wait);
	poll_wait(file, &odl->wq, wait);
	st = odl_state(odl);
	down_read(&odl->io_rwsem);
	if (odl->svc) {
		/*
		 * mmap mode has no read() to drain the ring once more after
		 * the session ended (the peer's close notice may overtake
		 * the interrupt of its last frames): poll() does it.
		 */
		if (odl->map && odl->poll && st == ODL_TB5_STATE_BROKEN)
			odl_rx_poll_all(odl);
		odl_rx_harvest(odl);
	}
	if (odl->map) {
		mask = odl_map_poll(odl, st);
		up_read(&odl->io_rwsem);
		if (st == ODL_TB5_STATE_BROKEN || st == ODL_TB5_STATE_GONE)
			mask |= EPOLLHUP | EPOLLERR;
		return mask;
	}
	up_read(&odl->io_rwsem);
	if (odl_rx_pending(odl))
		mask |= EPOLLIN | EPOLLRDNORM;
	if (st == ODL_TB5_STATE_SESSION && odl_tx_available(odl))
		mask |= EPOLLOUT | EPOLLWRNORM;
	if (st == ODL_TB5_STATE_BROKEN || st == ODL_TB5_STATE_GONE)
		mask |= EPOLLHUP | EPOLLERR;
	return mask;
}

static const struct file_operations odl_fops = {
	.owner = THIS_MODULE,
	.open = odl_open,
	.release = odl_release,
	.read = odl_read,
	.write = odl_write,
	.poll = odl_poll,
	.mmap = odl_mmap,
	.unlocked_ioctl = odl_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
};

static void odl_dev_release(struct device *dev)
{
	struct odl_tb5 *odl = container_of(dev, struct odl_tb5, dev);

	if (odl->index_held)
		ida_free(&odl_ida, odl->index);
	kfree(odl);
}

/**
 * odl_chardev_add() - create /dev/odl_tb5_N for a newly bound service.
 * @odl: device being probed (->svc not set yet)
 * @svc: the service, the device's parent
 *
 * On success and on failure alike, @odl is freed by the device's release
 * once the last reference is dropped (odl_chardev_del() drops the first).
 *
 * Return: 0 or -errno (then @odl is already freed).
 */
int odl_chardev_add(struct odl_tb5 *odl, struct tb_service *svc)
{
	int ret;

	ret = ida_alloc_max(&odl_ida, ODL_MINORS - 1, GFP_KERNEL);
	if (ret < 0) {
		kfree(odl);
		return ret;
	}
	odl->index = ret;
	odl->index_held = true;
	device_initialize(&odl->dev);
	odl->dev.class = &odl_class;
	odl->dev.parent = &svc->dev;
	odl->dev.devt = MKDEV(MAJOR(odl_devt), odl->index);
	odl->dev.release = odl_dev_release;
	dev_set_drvdata(&odl->dev, odl);
	ret = dev_set_name(&odl->dev, ODL_TB5_DEV_PREFIX "%d", odl->index);
	if (ret)
		goto err_put;
	cdev_init(&odl->cdev, &odl_fops);
	odl->cdev.owner = THIS_MODULE;
	ret = cdev_device_add(&odl->cdev, &odl->dev);
	if (ret)
		goto err_put;
	return 0;

err_put:
	put_device(&odl->dev);
	return ret;
}

/*
 * The device goes now; a file still open keeps the structure (not the name)
 * until it is closed. The index is free at once, so that the peer's service
 * coming back while an old file is still open gets /dev/odl_tb5_N again,
 * not N + 1: a peer's module reload must not rename our device under the
 * programs that open it by index (seen in vm_unload: A's device became
 * odl_tb5_1 when B reloaded before A's flood had closed odl_tb5_0).
 */
void odl_chardev_del(struct odl_tb5 *odl)
{
	cdev_device_del(&odl->cdev, &odl->dev);
	ida_free(&odl_ida, odl->index);
	odl->index_held = false;
	put_device(&odl->dev);
}

int odl_chardev_init(void)
{
	int ret;

	ret = alloc_chrdev_region(&odl_devt, 0, ODL_MINORS, "odl_tb5");
	if (ret)
		return ret;
	ret = class_register(&odl_class);
	if (ret)
		unregister_chrdev_region(odl_devt, ODL_MINORS);
	return ret;
}

void odl_chardev_exit(void)
{
	class_unregister(&odl_class);
	unregister_chrdev_region(odl_devt, ODL_MINORS);
	ida_destroy(&odl_ida);
}
