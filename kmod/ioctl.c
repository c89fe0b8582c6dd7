// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: ioctls of /dev/odl_tb5_N (include/uapi/odl_tb5.h). Every input
 * field is checked: unknown flags or non-zero reserved fields -> -EINVAL,
 * bad pointers -> -EFAULT, unknown commands -> -ENOTTY.
 */
#include <linux/uaccess.h>

#include "odl/wire/nhi_regs.h"
#include "odl_tb5.h"

static bool odl_all_zero(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

static int odl_ioctl_info(struct odl_tb5 *odl, void __user *uarg)
{
	struct odl_tb5_info info;
	struct tb_xdomain *xd;
	unsigned long flags;

	if (copy_from_user(&info, uarg, sizeof(info)))
		return -EFAULT;
	if (info.flags || !odl_all_zero(info.reserved, sizeof(info.reserved)))
		return -EINVAL;

	memset(&info, 0, sizeof(info));
	info.abi_version = ODL_TB5_ABI_VERSION;
	info.state = odl_state(odl);
	info.index = odl->index;
	info.ring_size = odl->ring_size;
	info.frame_bytes = ODL_FRAME_MAX_BYTES;
	info.rx_capacity = odl_rx_capacity(odl);
	info.tx_capacity = odl->ring_size - 1;

	down_read(&odl->io_rwsem);
	if (odl->svc) {
		xd = odl->xd;
		info.route = xd->route;
		memcpy(info.local_uuid, xd->local_uuid, sizeof(info.local_uuid));
		if (xd->remote_uuid)
			memcpy(info.peer_uuid, xd->remote_uuid,
			       sizeof(info.peer_uuid));
		if (xd->device_name)
			strscpy(info.peer_name, xd->device_name,
				sizeof(info.peer_name));
		info.link_speed_gbps = xd->link_speed;
		info.link_width = (u32)xd->link_width;
		/* Ring pair 0's; the others follow the same pattern. */
		info.tx_hopid = odl->ring[0].tx_hopid;
		info.tx_ring = odl->ring[0].tx->hop;
		info.rx_ring = odl->ring[0].rx->hop;
	}
	up_read(&odl->io_rwsem);

	spin_lock_irqsave(&odl->state_lock, flags);
	info.local_rings = odl->rings;
	info.local_split = odl_split;
	if (odl->connected) {
		info.rings = odl->nrings;
		info.peer_rings = odl->peer_rings;
		info.rx_hopid = odl->remote_paths[0];
		info.peer_ring_size = odl->peer_ring_size;
		info.peer_version_major = odl->peer_ver_major;
		info.peer_version_minor = odl->peer_ver_minor;
		info.peer_features = odl->peer_features;
		info.features = odl->peer_features & ODL_XD_FEAT_KNOWN;
		info.split = !!(odl->peer_features & ODL_XD_FEAT_SPLIT);
	}
	info.connect_count = odl->connect_count;
	info.session = odl->session;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	info.rx_poll = odl->poll;
	/* Racy against connect/disconnect, like the rest: a snapshot. */
	if (odl_irq_throttle_active(odl))
		info.irq_throttle_ns =
			DIV_ROUND_UP(READ_ONCE(odl->irq_throttle_us) * NSEC_PER_USEC,
				     ODL_NHI_THROTTLE_UNIT_NS) *
			ODL_NHI_THROTTLE_UNIT_NS;

	if (copy_to_user(uarg, &info, sizeof(info)))
		return -EFAULT;
	return 0;
}

/* @size: sizeof(struct odl_tb5_stats), or ABI 2's ODL_TB5_STATS_SIZE_V2 */
static int odl_ioctl_stats(struct odl_tb5 *odl, void __user *uarg, size_t size)
{
	struct odl_tb5_stats in = {}, out;
	bool v2 = size == ODL_TB5_STATS_SIZE_V2;
	unsigned long flags;

	if (copy_from_user(&in, uarg, size))
		return -EFAULT;
	if ((in.flags & ~ODL_TB5_STATS_F_KNOWN) || in.reserved0 ||
	    in.rx_damaged || !odl_all_zero(in.reserved, sizeof(in.reserved)) ||
	    (v2 && (in.tx_split || in.rx_split)))
		return -EINVAL;

	spin_lock_irqsave(&odl->stats_lock, flags);
	out = odl->stats;
	if (in.flags & ODL_TB5_STATS_F_RESET)
		memset(&odl->stats, 0, sizeof(odl->stats));
	spin_unlock_irqrestore(&odl->stats_lock, flags);
	out.flags = 0;
	out.reserved0 = 0;
	memset(out.reserved, 0, sizeof(out.reserved));
	if (v2) {
		/* reserved (zero) in ABI 2 */
		out.tx_split = 0;
		out.rx_split = 0;
	}
	if (copy_to_user(uarg, &out, size))
		return -EFAULT;
	return 0;
}

long odl_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	struct odl_tb5 *odl = file->private_data;
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case ODL_TB5_IOC_INFO:
		return odl_ioctl_info(odl, uarg);
	case ODL_TB5_IOC_STATS:
		return odl_ioctl_stats(odl, uarg, sizeof(struct odl_tb5_stats));
	case ODL_TB5_IOC_STATS_V2:
		return odl_ioctl_stats(odl, uarg, ODL_TB5_STATS_SIZE_V2);
	case ODL_TB5_IOC_MAP_INFO:
		return odl_ioctl_map_info(odl, uarg);
	case ODL_TB5_IOC_POST_SEND:
		return odl_ioctl_post_send(odl, uarg);
	case ODL_TB5_IOC_POST_RECV:
		return odl_ioctl_post_recv(odl, uarg);
	case ODL_TB5_IOC_DMABUF_IMPORT:
		return odl_ioctl_dmabuf_import(odl, uarg);
	case ODL_TB5_IOC_DMABUF_RELEASE:
		return odl_ioctl_dmabuf_release(odl, uarg);
	case ODL_TB5_IOC_POST_SEND_DMABUF:
		return odl_ioctl_post_send_dmabuf(odl, uarg);
	case ODL_TB5_IOC_POST_SEND_SPLIT:
		return odl_ioctl_post_send_split(odl, uarg);
	default:
		return -ENOTTY;
	}
}
