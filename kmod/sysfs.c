// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: read-only sysfs attributes of /sys/class/odl_tb5/odl_tb5_N, so
 * that `odl doctor` and `odl link` can see the device without opening it
 * (an open starts a session with the peer and is exclusive).
 * The link's speed and lanes are the parent XDomain's own attributes.
 */
#include <linux/device.h>
#include <linux/sched/signal.h>
#include <linux/string.h>
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
const char *__odl_state_name(struct odl_tb5 *odl)
{
	if (odl->gone)
		return "gone";
	if (!odl->connected)
		return "login";
	if (odl->local_open && odl->peer_open)
		return "session";
	return "connected";
}

static ssize_t state_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);
	const char *name;
	unsigned long flags;

	spin_lock_irqsave(&odl->state_lock, flags);
	name = __odl_state_name(odl);
	spin_unlock_irqrestore(&odl->state_lock, flags);
	return sysfs_emit(buf, "%s\n", name);
}
static DEVICE_ATTR_RO(state);

/* The "open" attribute's bits: 1 this host, 2 the peer (logged in). */
static unsigned int __odl_open_bits(struct odl_tb5 *odl)
{
	return odl->local_open | (odl->connected && odl->peer_open) << 1;
}

/*
 * A change uevent (ODL_STATE=<state> ODL_OPEN=<local> <peer>) and sysfs
 * notifications of "state" and "open" whenever either attribute would read
 * differently: listeners such as odl-daemon wait for events instead of
 * polling, and never open the device (an open starts a session with the
 * peer). The peer opening its end while this host has not is such an
 * event: a daemon can then open this end for it. Sleeps, hence a work item.
 */
void odl_state_work(struct work_struct *work)
{
	struct odl_tb5 *odl = container_of(work, struct odl_tb5, state_work);
	char env[32], env_open[16];
	char *envp[3];
	const char *name;
	unsigned int open;
	bool changed;
	unsigned long flags;

	spin_lock_irqsave(&odl->state_lock, flags);
	name = __odl_state_name(odl);
	open = __odl_open_bits(odl);
	changed = name != odl->state_reported || open != odl->open_reported;
	odl->state_reported = name;
	odl->open_reported = open;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	if (!changed)
		return;
	snprintf(env, sizeof(env), "ODL_STATE=%s", name);
	snprintf(env_open, sizeof(env_open), "ODL_OPEN=%u %u", open & 1, open >> 1);
	envp[0] = env;
	envp[1] = env_open;
	envp[2] = NULL;
	sysfs_notify(&odl->dev.kobj, NULL, "state");
	sysfs_notify(&odl->dev.kobj, NULL, "open");
	kobject_uevent_env(&odl->dev.kobj, KOBJ_CHANGE, envp);
}

void odl_state_changed(struct odl_tb5 *odl)
{
	odl_queue_work(odl, &odl->state_work);
}

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

/*
 * The interrupt throttle of this device's rings, in us (module parameter
 * irq_throttle_us at bind): a write takes effect at once on a connected
 * link and is kept for later logins.
 */
static ssize_t irq_throttle_us_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%u\n", READ_ONCE(odl->irq_throttle_us));
}

static ssize_t irq_throttle_us_store(struct device *dev,
				     struct device_attribute *attr,
				     const char *buf, size_t count)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);
	unsigned int us;
	int ret;

	ret = kstrtouint(buf, 10, &us);
	if (ret)
		return ret;
	if (us > ODL_TB5_IRQ_THROTTLE_MAX_US)
		return -EINVAL;
	/*
	 * Not a sleeping lock: removing the device waits for this store, and
	 * the lock's holder may be a reset waiting for that removal's caller.
	 */
	if (!mutex_trylock(&odl->lock))
		return restart_syscall();
	WRITE_ONCE(odl->irq_throttle_us, us);
	if (READ_ONCE(odl->connected) && !READ_ONCE(odl->gone))
		odl_irq_throttle_set(odl);
	mutex_unlock(&odl->lock);
	return count;
}
static DEVICE_ATTR_RW(irq_throttle_us);

/* The device's Rx mode: 1 polling, 0 interrupt (module parameter at bind). */
static ssize_t poll_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);

	return sysfs_emit(buf, "%d\n", odl->poll);
}
static DEVICE_ATTR_RO(poll);

static struct attribute *odl_dev_attrs[] = {
	&dev_attr_abi_version.attr,
	&dev_attr_state.attr,
	&dev_attr_open.attr,
	&dev_attr_rings.attr,
	&dev_attr_connect_count.attr,
	&dev_attr_peer_version.attr,
	&dev_attr_ping.attr,
	&dev_attr_irq_throttle_us.attr,
	&dev_attr_poll.attr,
	NULL,
};

static const struct attribute_group odl_dev_group = {
	.attrs = odl_dev_attrs,
};

/* One u64 counter of struct odl_tb5_stats at byte @off (ioctl STATS too). */
static ssize_t odl_stat_show(struct odl_tb5 *odl, size_t off, char *buf)
{
	unsigned long flags;
	u64 v;

	spin_lock_irqsave(&odl->stats_lock, flags);
	v = *(u64 *)((u8 *)&odl->stats + off);
	spin_unlock_irqrestore(&odl->stats_lock, flags);
	return sysfs_emit(buf, "%llu\n", v);
}

/* The counters by name: one show function looks its attribute up here. */
struct odl_stat_field {
	const char *name;
	size_t off;
};

#define ODL_STAT(f) { #f, offsetof(struct odl_tb5_stats, f) }
static const struct odl_stat_field odl_stat_fields[] = {
	ODL_STAT(tx_frames),
	ODL_STAT(tx_bytes),
	ODL_STAT(rx_frames),
	ODL_STAT(rx_bytes),
	ODL_STAT(tx_ring_full),
	ODL_STAT(rx_dropped_closed),
	ODL_STAT(rx_bad_pdf),
	ODL_STAT(rx_damaged),
	ODL_STAT(logins),
	ODL_STAT(logouts),
	ODL_STAT(login_failures),
	ODL_STAT(xd_bad),
};

static ssize_t odl_stat_attr_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(odl_stat_fields); i++)
		if (!strcmp(attr->attr.name, odl_stat_fields[i].name))
			return odl_stat_show(dev_get_drvdata(dev),
					     odl_stat_fields[i].off, buf);
	return -EINVAL;
}

#define ODL_STAT_ATTR(f) \
	static struct device_attribute dev_attr_##f = \
		__ATTR(f, 0444, odl_stat_attr_show, NULL)

ODL_STAT_ATTR(tx_frames);
ODL_STAT_ATTR(tx_bytes);
ODL_STAT_ATTR(rx_frames);
ODL_STAT_ATTR(rx_bytes);
ODL_STAT_ATTR(tx_ring_full);
ODL_STAT_ATTR(rx_dropped_closed);
ODL_STAT_ATTR(rx_bad_pdf);
ODL_STAT_ATTR(rx_damaged);
ODL_STAT_ATTR(logins);
ODL_STAT_ATTR(logouts);
ODL_STAT_ATTR(login_failures);
ODL_STAT_ATTR(xd_bad);

/* All refused frames, every enum odl_frame_err together. */
static ssize_t rx_bad_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct odl_tb5 *odl = dev_get_drvdata(dev);
	unsigned long flags;
	u64 sum = 0;
	int i;

	spin_lock_irqsave(&odl->stats_lock, flags);
	for (i = 0; i < ODL_TB5_RX_BAD_SLOTS; i++)
		sum += odl->stats.rx_bad[i];
	spin_unlock_irqrestore(&odl->stats_lock, flags);
	return sysfs_emit(buf, "%llu\n", sum);
}
static DEVICE_ATTR_RO(rx_bad);

static struct attribute *odl_stat_attrs[] = {
	&dev_attr_tx_frames.attr,
	&dev_attr_tx_bytes.attr,
	&dev_attr_rx_frames.attr,
	&dev_attr_rx_bytes.attr,
	&dev_attr_tx_ring_full.attr,
	&dev_attr_rx_dropped_closed.attr,
	&dev_attr_rx_bad_pdf.attr,
	&dev_attr_rx_bad.attr,
	&dev_attr_rx_damaged.attr,
	&dev_attr_logins.attr,
	&dev_attr_logouts.attr,
	&dev_attr_login_failures.attr,
	&dev_attr_xd_bad.attr,
	NULL,
};

/* statistics/: the ioctl's main counters, readable without an open. */
static const struct attribute_group odl_stat_group = {
	.name = "statistics",
	.attrs = odl_stat_attrs,
};

const struct attribute_group *odl_dev_groups[] = {
	&odl_dev_group,
	&odl_stat_group,
	NULL,
};
