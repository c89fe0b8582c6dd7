// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: read-only sysfs attributes of /sys/class/odl_tb5/odl_tb5_N, so
 * that `odl doctor` and `odl link` can see the device without opening it
 * (an open starts a session with the peer and is exclusive).
 * The link's speed and lanes are the parent XDomain's own attributes.
 */
#include <linux/device.h>
#include <linux/sysfs.h>

#include "odl_tb5.h"

static ssize_t abi_version_show(struct device *dev,
				struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", ODL_TB5_ABI_VERSION);
}
static DEVICE_ATTR_RO(abi_version);

/*
 * The device's state seen from the host, not from one file:
 * login (no login with the peer yet), connected (logged in, not both open),
 * session (both hosts have the device open), gone (peer service removed).
 */
static ssize_t state_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);
	const char *name;
	unsigned long flags;

	spin_lock_irqsave(&odl->state_lock, flags);
	if (odl->gone)
		name = "gone";
	else if (!odl->connected)
		name = "login";
	else if (odl->local_open && odl->peer_open)
		name = "session";
	else
		name = "connected";
	spin_unlock_irqrestore(&odl->state_lock, flags);
	return sysfs_emit(buf, "%s\n", name);
}
static DEVICE_ATTR_RO(state);

/* "local peer": 1 where that side has the device open. */
static ssize_t open_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);
	unsigned long flags;
	bool local, peer;

	spin_lock_irqsave(&odl->state_lock, flags);
	local = odl->local_open;
	peer = odl->connected && odl->peer_open;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	return sysfs_emit(buf, "%d %d\n", local, peer);
}
static DEVICE_ATTR_RO(open);

/* Ring pairs in use (0 before login) and offered by this host. */
static ssize_t rings_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);
	unsigned int used = 0;
	unsigned long flags;

	spin_lock_irqsave(&odl->state_lock, flags);
	if (odl->connected)
		used = odl->nrings;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	return sysfs_emit(buf, "%u %u\n", used, odl->rings);
}
static DEVICE_ATTR_RO(rings);

static ssize_t connect_count_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(odl->connect_count));
}
static DEVICE_ATTR_RO(connect_count);

/* The peer's protocol version (major.minor), 0.0 before login. */
static ssize_t peer_version_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);
	unsigned int major = 0, minor = 0;
	unsigned long flags;

	spin_lock_irqsave(&odl->state_lock, flags);
	if (odl->connected) {
		major = odl->peer_ver_major;
		minor = odl->peer_ver_minor;
	}
	spin_unlock_irqrestore(&odl->state_lock, flags);
	return sysfs_emit(buf, "%u.%u\n", major, minor);
}
static DEVICE_ATTR_RO(peer_version);

/*
 * Each read pings the peer's odl_tb5 over the control channel and shows the
 * round trip in ns (bounded by the login timeout). Root only: a read costs
 * a request on the peer.
 */
static ssize_t ping_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);
	u64 rtt = 0;
	int ret;

	down_read(&odl->io_rwsem);
	ret = odl->svc ? odl_ping(odl, &rtt) : -ENODEV;
	up_read(&odl->io_rwsem);
	if (ret)
		return ret;
	return sysfs_emit(buf, "%llu\n", rtt);
}
static DEVICE_ATTR_ADMIN_RO(ping);

static struct attribute *odl_dev_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_state.attr,
	&dev_attr_open.attr,
	&dev_attr_rings.attr,
	&dev_attr_connect_count.attr,
	&dev_attr_peer_version.attr,
	&dev_attr_ping.attr,
	NULL,
};

static const struct attribute_group odl_dev_group = {
	.attrs = odl_dev_attrs,
};

const struct attribute_group *odl_dev_groups[] = {
	&odl_dev_group,
	NULL,
};
