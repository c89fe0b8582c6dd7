// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: OdinLink Thunderbolt service driver - module init/exit, the
 * XDomain property directory, the service driver and probe/remove.
 */
#include <linux/module.h>
#include <linux/pci.h>
#include <linux/slab.h>

#include "odl_tb5.h"

/* The OdinLink service protocol; the bytes are defined in tb5_login.h. */
const uuid_t odl_svc_uuid = { .b = ODL_XD_SERVICE_UUID_BYTES };

unsigned int odl_ring_size = 1024;
module_param_named(ring_size, odl_ring_size, uint, 0444);
MODULE_PARM_DESC(ring_size,
		 "descriptors per NHI ring, power of two 64..16384 (default: 1024)");

unsigned int odl_rings = 1;
module_param_named(rings, odl_rings, uint, 0444);
MODULE_PARM_DESC(rings,
		 "NHI Tx/Rx ring pairs (and HopIDs) offered to each peer, 1..4; both use the smaller offer, streams are spread over them (default: 1)");

bool odl_poll_mode;
/* Writable: each device takes it when bound (rebind to switch a device). */
module_param_named(poll, odl_poll_mode, bool, 0644);
MODULE_PARM_DESC(poll,
		 "Rx polling mode: the ring interrupt wakes the reader, which takes frames off the ring itself (default: 0, interrupt mode); read by each device when its service is bound");

unsigned int odl_irq_throttle_us = 8;
module_param_named(irq_throttle_us, odl_irq_throttle_us, uint, 0444);
MODULE_PARM_DESC(irq_throttle_us,
		 "minimum interval between two interrupts of a ring, microseconds, 0..1000, instead of thunderbolt.ko's 128 (default: 8)");

bool odl_split;
module_param_named(split, odl_split, bool, 0444);
MODULE_PARM_DESC(split,
		 "take split frames (a header, then the payload from a peer's device memory) and offer them at login; halves the receive credit capacity (default: 0)");

bool odl_announce = true;
module_param_named(announce, odl_announce, bool, 0444);
MODULE_PARM_DESC(announce,
		 "advertise the service at load (default: 1); 0 leaves it to the first unanswered login, which reproduces a late announcement (tests)");

unsigned int odl_test_unplug_race_ms;
module_param_named(test_unplug_race_ms, odl_test_unplug_race_ms, uint, 0644);
MODULE_PARM_DESC(test_unplug_race_ms,
		 "tests only: a session reset waits up to this long for the cable to go, then for the domain lock, as a reset that just missed the unplug does (default: 0, off)");

unsigned int odl_test_login_delay_ms;
module_param_named(test_login_delay_ms, odl_test_login_delay_ms, uint, 0644);
MODULE_PARM_DESC(test_login_delay_ms,
		 "tests only: every login attempt after the first waits at least this long, as on a slow host (default: 0, off)");

static struct tb_property_dir *odl_dir;
/*
 * Runs the teardowns odl_remove() could not wait for; drained when a domain
 * goes (odl_bus_notify()) and at exit.
 */
static struct workqueue_struct *odl_remove_wq;
static DEFINE_MUTEX(odl_dir_lock);	/* guards the two flags below */
static bool odl_dir_registered;
static bool odl_exiting;

static bool odl_ring_size_valid(unsigned int n)
{
	return n >= ODL_RING_SIZE_MIN && n <= ODL_RING_SIZE_MAX &&
	       is_power_of_2(n);
}

/**
 * odl_reannounce() - advertise the property directory again.
 *
 * Registering the directory makes Linux tell the XDomains it has already
 * added that our properties changed. A peer that read our properties just
 * before the module loaded, while our side had not yet added it, is never
 * told and never binds our service. Removing and adding the directory
 * again (a new generation) makes Linux notify every known peer, which then
 * re-reads the properties and binds. Not after module exit began.
 *
 * Return: 0 or -errno of tb_register_property_dir().
 */
int odl_reannounce(void)
{
	int ret = 0;

	mutex_lock(&odl_dir_lock);
	if (!odl_exiting) {
		if (odl_dir_registered)
			tb_unregister_property_dir(ODL_XD_SERVICE_KEY, odl_dir);
		ret = tb_register_property_dir(ODL_XD_SERVICE_KEY, odl_dir);
		odl_dir_registered = !ret;
	}
	mutex_unlock(&odl_dir_lock);
	return ret;
}

/* Withdraw the directory for good: no login still running may add it back. */
static void odl_announce_stop(void)
{
	mutex_lock(&odl_dir_lock);
	odl_exiting = true;
	if (odl_dir_registered)
		tb_unregister_property_dir(ODL_XD_SERVICE_KEY, odl_dir);
	odl_dir_registered = false;
	mutex_unlock(&odl_dir_lock);
}

static void odl_remove_work(struct work_struct *work);

static int odl_probe(struct tb_service *svc, const struct tb_service_id *id)
{
	struct tb_xdomain *xd = tb_service_parent(svc);
	struct odl_tb5 *odl;
	int ret;

	odl = kzalloc(sizeof(*odl), GFP_KERNEL);
	if (!odl)
		return -ENOMEM;
	odl->xd = xd;
	odl->ring_size = odl_ring_size;
	odl->rings = odl_rings;
	odl->irq_throttle_us = odl_irq_throttle_us;
	odl->poll = READ_ONCE(odl_poll_mode);
	mutex_init(&odl->lock);
	mutex_init(&odl->xd_lock);
	init_rwsem(&odl->io_rwsem);
	init_rwsem(&odl->handler_rwsem);
	spin_lock_init(&odl->state_lock);
	spin_lock_init(&odl->tx_ring_lock);
	spin_lock_init(&odl->tx_lock);
	spin_lock_init(&odl->rx_lock);
	spin_lock_init(&odl->stats_lock);
	INIT_LIST_HEAD(&odl->tx_free);
	INIT_LIST_HEAD(&odl->rx_queue);
	INIT_LIST_HEAD(&odl->rx_idle);
	INIT_LIST_HEAD(&odl->rx_held);
	odl_dmabuf_init(odl);
	init_waitqueue_head(&odl->rq);
	init_waitqueue_head(&odl->wq);
	INIT_DELAYED_WORK(&odl->login_work, odl_login_work);
	INIT_WORK(&odl->connect_work, odl_connect_work);
	INIT_WORK(&odl->reset_work, odl_reset_work);
	INIT_WORK(&odl->port_work, odl_port_work);
	INIT_WORK(&odl->state_work, odl_state_work);
	INIT_WORK(&odl->rx_poll_work, odl_rx_poll_work);
	INIT_WORK(&odl->remove_work, odl_remove_work);
	odl->login_retries = ODL_LOGIN_RETRIES;
	odl->login_backs = ODL_LOGIN_RETRIES;
	odl->stats.flags = 0;

	/* From here on the device's release frees @odl. */
	ret = odl_chardev_add(odl, svc);
	if (ret)
		return ret;

	ret = odl_rings_alloc(odl);
	if (ret)
		goto err_del_chardev;
	/*
	 * The device node is open to userspace since odl_chardev_add(), and
	 * every file operation takes ->svc as "the rings and buffers exist"
	 * (under io_rwsem): publish it only now. An INFO ioctl that came
	 * between the two once read ring 0 before it was allocated (NULL
	 * dereference, 6.1, polling INFO while the peer was replugged).
	 */
	down_write(&odl->io_rwsem);
	odl->svc = svc;
	up_write(&odl->io_rwsem);

	odl->handler.uuid = &odl_svc_uuid;
	odl->handler.callback = odl_handle_packet;
	odl->handler.data = odl;
	ret = tb_register_protocol_handler(&odl->handler);
	if (ret)
		goto err_free_rings;

	tb_service_set_drvdata(svc, odl);
	dev_dbg(&svc->dev, "odl_tb5_%d bound, %u ring pair(s) of %u, tx HopID %d\n",
		odl->index, odl->rings, odl->ring_size, odl->ring[0].tx_hopid);
	queue_delayed_work(system_long_wq, &odl->login_work,
			   msecs_to_jiffies(ODL_LOGIN_DELAY_MS));
	return 0;

err_free_rings:
	down_write(&odl->io_rwsem);
	odl->svc = NULL;
	odl_rings_free(odl);
	up_write(&odl->io_rwsem);
err_del_chardev:
	odl_chardev_del(odl);
	return ret;
}

/*
 * Everything after the protocol handler is gone but the device node: the
 * work items, the session, the rings. Waits for the work items, so only
 * where none of them can wait for the caller.
 */
static void odl_teardown(struct odl_tb5 *odl, struct tb_service *svc)
{
	cancel_delayed_work_sync(&odl->login_work);
	cancel_work_sync(&odl->connect_work);
	cancel_work_sync(&odl->reset_work);
	cancel_work_sync(&odl->port_work);
	cancel_work_sync(&odl->state_work);

	mutex_lock(&odl->lock);
	odl_disconnect(odl);
	mutex_unlock(&odl->lock);
	/* The rings are stopped: no interrupt queues it again. */
	cancel_work_sync(&odl->rx_poll_work);

	/* Wait for readers and writers inside the data path, then free. */
	down_write(&odl->io_rwsem);
	/* The stopped rings gave every dma-buf frame back (cancelled). */
	odl_dmabuf_remove(odl);
	odl_rings_free(odl);
	odl->svc = NULL;
	up_write(&odl->io_rwsem);
	dev_dbg(&svc->dev, "odl_tb5_%d unbound\n", odl->index);
}

static void odl_remove_work(struct work_struct *work)
{
	struct odl_tb5 *odl = container_of(work, struct odl_tb5, remove_work);
	struct tb_service *svc = odl->svc;
	struct tb_xdomain *xd = odl->xd;

	odl_teardown(odl, svc);
	/* Taken by odl_remove() for the teardown; @odl may be freed now. */
	put_device(&odl->dev);
	put_device(&svc->dev);
	tb_xdomain_put(xd);
}

/*
 * May odl_remove() wait for the work items? An unplug (or the domain's
 * removal) calls it with the domain lock held, and says so by marking the
 * XDomain unplugged first. A reset or connect holds @odl->lock while it
 * enables or disables paths, which takes the domain lock unless it saw the
 * mark: one that looked just before the unplug waits for the lock our caller
 * holds until we return. If nobody holds @odl->lock, whoever takes it next
 * sees ->gone (set before) and stays out of the domain.
 */
static bool odl_remove_may_wait(struct odl_tb5 *odl)
{
	if (!READ_ONCE(odl->xd->is_unplugged))
		return true;
	if (!mutex_trylock(&odl->lock))
		return false;
	mutex_unlock(&odl->lock);
	return true;
}

static void odl_remove(struct tb_service *svc)
{
	struct odl_tb5 *odl = tb_service_get_drvdata(svc);
	unsigned long flags;

	/* Tell the peer first, while the XDomain still answers. */
	odl_send_logout(odl);

	spin_lock_irqsave(&odl->state_lock, flags);
	odl->gone = true;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	wake_up_all(&odl->rq);
	wake_up_all(&odl->wq);

	tb_unregister_protocol_handler(&odl->handler);
	/* Handlers in flight are done; with gone set nothing queues work. */
	down_write(&odl->handler_rwsem);
	up_write(&odl->handler_rwsem);

	if (odl_remove_may_wait(odl)) {
		odl_teardown(odl, svc);
		odl_chardev_del(odl);
		return;
	}
	/*
	 * A work item is inside the session, perhaps waiting for the domain
	 * lock: tear down after it, keeping @odl, the service and the XDomain.
	 * The device node goes now, before its parent the service does.
	 */
	dev_dbg(&svc->dev, "odl_tb5_%d: a session change is running, unbinding after it\n",
		odl->index);
	get_device(&odl->dev);
	get_device(&svc->dev);
	tb_xdomain_get(odl->xd);
	odl_chardev_del(odl);
	queue_work(odl_remove_wq, &odl->remove_work);
}

/*
 * A domain goes (its NHI unbound): the teardowns left to odl_remove_wq stop
 * and free their rings before thunderbolt.ko shuts the NHI down. The domain
 * lock is free by then (tb_domain_remove() drops it before the device goes),
 * so the work items they wait for can finish. The domain is the one device
 * of the bus whose parent is a PCI device.
 */
static int odl_bus_notify(struct notifier_block *nb, unsigned long action,
			  void *data)
{
	struct device *dev = data;

	if (action == BUS_NOTIFY_DEL_DEVICE && dev->parent &&
	    dev_is_pci(dev->parent))
		flush_workqueue(odl_remove_wq);
	return NOTIFY_DONE;
}

static struct notifier_block odl_bus_nb = {
	.notifier_call = odl_bus_notify,
};

static const struct tb_service_id odl_ids[] = {
	{ TB_SERVICE(ODL_XD_SERVICE_KEY, ODL_XD_PRTCID) },
	{ },
};
MODULE_DEVICE_TABLE(tbsvc, odl_ids);

static struct tb_service_driver odl_driver = {
	.driver = {
		.owner = THIS_MODULE,
		.name = "odl_tb5",
	},
	.probe = odl_probe,
	.remove = odl_remove,
	.id_table = odl_ids,
};

/* thunderbolt.ko's bus (not exported; const from 6.4 on), once registered */
static typeof(odl_driver.driver.bus) odl_bus;

static int __init odl_init(void)
{
	int ret;

	if (!odl_ring_size_valid(odl_ring_size)) {
		pr_err("odl_tb5: ring_size %u is not a power of two in %u..%u\n",
		       odl_ring_size, ODL_RING_SIZE_MIN, ODL_RING_SIZE_MAX);
		return -EINVAL;
	}
	if (odl_rings < 1 || odl_rings > ODL_RINGS_MAX) {
		pr_err("odl_tb5: rings %u is not in 1..%u\n", odl_rings,
		       ODL_RINGS_MAX);
		return -EINVAL;
	}
	if (odl_irq_throttle_us > ODL_TB5_IRQ_THROTTLE_MAX_US) {
		pr_err("odl_tb5: irq_throttle_us %u is above %u\n",
		       odl_irq_throttle_us, ODL_TB5_IRQ_THROTTLE_MAX_US);
		return -EINVAL;
	}

	odl_dir = tb_property_create_dir(&odl_svc_uuid);
	if (!odl_dir)
		return -ENOMEM;
	tb_property_add_immediate(odl_dir, "prtcid", ODL_XD_PRTCID);
	tb_property_add_immediate(odl_dir, "prtcvers", ODL_XD_PRTCVERS);
	tb_property_add_immediate(odl_dir, "prtcrevs", ODL_XD_PRTCREVS);
	tb_property_add_immediate(odl_dir, "prtcstns", 0);

	odl_remove_wq = alloc_workqueue("odl_tb5_remove", 0, 0);
	if (!odl_remove_wq) {
		ret = -ENOMEM;
		goto err_free_dir;
	}

	ret = odl_chardev_init();
	if (ret)
		goto err_destroy_wq;

	ret = tb_register_service_driver(&odl_driver);
	if (ret)
		goto err_chardev_exit;
	odl_bus = odl_driver.driver.bus;
	ret = bus_register_notifier(odl_bus, &odl_bus_nb);
	if (ret)
		goto err_unregister_driver;

	if (odl_announce) {
		ret = tb_register_property_dir(ODL_XD_SERVICE_KEY, odl_dir);
		if (ret)
			goto err_unregister;
		odl_dir_registered = true;
	}
	return 0;

err_unregister:
	odl_announce_stop();
	bus_unregister_notifier(odl_bus, &odl_bus_nb);
err_unregister_driver:
	tb_unregister_service_driver(&odl_driver);
err_chardev_exit:
	odl_chardev_exit();
err_destroy_wq:
	destroy_workqueue(odl_remove_wq);
err_free_dir:
	tb_property_free_dir(odl_dir);
	return ret;
}
module_init(odl_init);

static void __exit odl_exit(void)
{
	odl_announce_stop();
	tb_unregister_service_driver(&odl_driver);
	bus_unregister_notifier(odl_bus, &odl_bus_nb);
	/* Teardowns left by unplugs finish before the code goes. */
	destroy_workqueue(odl_remove_wq);
	odl_chardev_exit();
	tb_property_free_dir(odl_dir);
}
module_exit(odl_exit);

MODULE_DESCRIPTION("OdinLink host-to-host interconnect over Thunderbolt/USB4");
MODULE_AUTHOR("OdinLink");
MODULE_LICENSE("Dual MIT/GPL");
/* Also makes modpost record a srcversion: hosts compare both. */
MODULE_VERSION(ODL_TB5_VERSION);
