// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * odl_tb5: XDomain login/logout handshake, session notices, and enabling
 * and disabling the DMA paths.
 */
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/sizes.h>

#include "odl_tb5.h"

static void odl_fill_header(struct odl_tb5 *odl, struct odl_xd_hdr *hdr,
			    u32 type, size_t size, u32 command_id)
{
	struct tb_xdomain *xd = odl->xd;
	u32 length = (size - 12) / 4;

	hdr->route_hi = upper_32_bits(xd->route);
	hdr->route_lo = lower_32_bits(xd->route);
	hdr->length_sn = length & ODL_XD_LENGTH_MASK;
	memcpy(hdr->uuid, &odl_svc_uuid, sizeof(hdr->uuid));
	memcpy(hdr->initiator_uuid, xd->local_uuid, sizeof(hdr->initiator_uuid));
	memcpy(hdr->target_uuid, xd->remote_uuid, sizeof(hdr->target_uuid));
	hdr->type = type;
	hdr->command_id = command_id;
}

/* The peer this device's packets must come from and be addressed to. */
static void odl_xd_ids(struct odl_tb5 *odl, struct odl_xd_ids *ids)
{
	ids->route = odl->xd->route;
	ids->local_uuid = (const u8 *)odl->xd->local_uuid;
	ids->remote_uuid = (const u8 *)odl->xd->remote_uuid;
}

/* A response header must answer our request: same service, addressed to us. */
static bool odl_check_reply(struct odl_tb5 *odl, const struct odl_xd_hdr *hdr,
			    size_t size, u32 type, u32 command_id)
{
	struct odl_xd_ids ids;

	odl_xd_ids(odl, &ids);
	return odl_xd_answers(hdr, size, type, command_id, &ids);
}

/**
 * odl_state() - the device's state as the opener sees it.
 * @odl: device
 *
 * Return: enum odl_tb5_state.
 */
u32 odl_state(struct odl_tb5 *odl)
{
	unsigned long flags;
	u32 st;

	spin_lock_irqsave(&odl->state_lock, flags);
	if (odl->gone)
		st = ODL_TB5_STATE_GONE;
	else if (odl->broken)
		st = ODL_TB5_STATE_BROKEN;
	else if (!odl->connected)
		st = ODL_TB5_STATE_LOGIN;
	else if (!odl->peer_open)
		st = ODL_TB5_STATE_CONNECTED;
	else
		st = ODL_TB5_STATE_SESSION;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	return st;
}

/* Caller holds state_lock. A session starts when all three are true. */
static void __odl_session_update(struct odl_tb5 *odl)
{
	if (odl->connected && odl->local_open && odl->peer_open)
		odl->session_seen = true;
}

void odl_session_update(struct odl_tb5 *odl)
{
	unsigned long flags;

	spin_lock_irqsave(&odl->state_lock, flags);
	__odl_session_update(odl);
	spin_unlock_irqrestore(&odl->state_lock, flags);
}

/* Caller holds state_lock: the open file's session ends. */
static void __odl_session_end(struct odl_tb5 *odl)
{
	if (odl->local_open && odl->session_seen)
		odl->broken = true;
}

static int odl_login_request(struct odl_tb5 *odl)
{
	enum odl_xd_resp_verdict verdict;
	struct odl_xd_login_resp reply;
	struct odl_xd_login req;
	unsigned int offer, i;
	unsigned long flags;
	u32 id;
	int ret;

	memset(&req, 0, sizeof(req));
	memset(&reply, 0, sizeof(reply));
	mutex_lock(&odl->xd_lock);
	id = ++odl->command_id;
	odl_fill_header(odl, &req.hdr, ODL_XD_LOGIN, sizeof(req), id);
	req.version_major = ODL_XD_VERSION_MAJOR;
	req.version_minor = ODL_XD_VERSION_MINOR;
	/* Split frames: only when we take them (they halve rx_capacity). */
	req.features = ODL_XD_FEAT_CREDITS | ODL_XD_FEAT_PING |
		       (odl_split ? ODL_XD_FEAT_SPLIT : 0);
	req.ring_size = odl->ring_size;
	req.frame_bytes = ODL_FRAME_MAX_BYTES;
	/*
	 * One ring: the 1.0 form (rings fields zero), which a 1.0 peer takes.
	 * A 1.0 peer refuses the rings fields (reserved to it); after its
	 * refusal, later attempts offer one ring (odl->login_compat).
	 */
	offer = odl->login_compat ? 1 : odl->rings;
	if (offer > 1) {
		req.features |= ODL_XD_FEAT_RINGS;
		req.rings = offer;
	}
	for (i = 0; i < offer; i++)
		odl_xd_login_set_path(&req, i, odl->ring[i].tx_hopid);
	ret = tb_xdomain_request(odl->xd, &req, sizeof(req),
				 TB_CFG_PKG_XDOMAIN_RESP, &reply,
				 sizeof(reply), TB_CFG_PKG_XDOMAIN_RESP,
				 ODL_LOGIN_TIMEOUT_MS);
	mutex_unlock(&odl->xd_lock);
	if (ret)
		return ret;
	verdict = odl_check_reply(odl, &reply.hdr, sizeof(reply),
				  ODL_XD_LOGIN_RESP, id) ?
		  odl_xd_login_resp_check(&reply, offer, ODL_FRAME_MAX_BYTES) :
		  ODL_XD_RESP_MALFORMED;
	switch (verdict) {
	case ODL_XD_RESP_OK:
		break;
	case ODL_XD_RESP_ONE_RING:
		/* A 1.0 peer refused our rings fields: offer one ring from now on. */
		dev_info(&odl->svc->dev, "peer login version 1.0: one ring\n");
		odl->login_compat = true;
		return -EPROTO;
	case ODL_XD_RESP_REFUSED:
		dev_warn(&odl->svc->dev, "peer refused login (status %u, version %u.%u)\n",
			 reply.status, reply.version_major, reply.version_minor);
		return -EPROTO;
	default:
		odl_stat_inc(odl, xd_bad, 1);
		return -EPROTO;
	}
	spin_lock_irqsave(&odl->state_lock, flags);
	odl->peer_ver_major = reply.version_major;
	odl->peer_ver_minor = reply.version_minor;
	odl->peer_features = reply.features;
	odl->peer_ring_size = reply.ring_size;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	return 0;
}

/*
 * Queue @work unless the service is going away: odl_remove() sets gone under
 * state_lock before it cancels the work items, so nothing queued from an
 * XDomain packet, a close or another work item can outlive the device.
 */
void odl_queue_work(struct odl_tb5 *odl, struct work_struct *work)
{
	unsigned long flags;

	spin_lock_irqsave(&odl->state_lock, flags);
	if (!odl->gone)
		queue_work(system_long_wq, work);
	spin_unlock_irqrestore(&odl->state_lock, flags);
}

/*
 * The login attempt in @delay jiffies (at least test_login_delay_ms), as
 * odl_queue_work(); @rearm moves an attempt already pending, else that one
 * stays.
 */
void odl_queue_login(struct odl_tb5 *odl, unsigned long delay, bool rearm)
{
	unsigned long flags;

	delay = max(delay,
		    msecs_to_jiffies(READ_ONCE(odl_test_login_delay_ms)));
	spin_lock_irqsave(&odl->state_lock, flags);
	if (!odl->gone && rearm)
		mod_delayed_work(system_long_wq, &odl->login_work, delay);
	else if (!odl->gone)
		queue_delayed_work(system_long_wq, &odl->login_work, delay);
	spin_unlock_irqrestore(&odl->state_lock, flags);
}

/*
 * Caller holds @odl->lock; our LOGIN was accepted. Is the peer's overdue? A
 * peer replaced (its module reloaded, its host rebooted) after it accepted
 * ours never saw it and waits for it, while its own LOGIN found us with ours
 * accepted: send ours again (a connected peer takes a fresh LOGIN as a
 * restart). Not due yet: look again when it is.
 */
static bool odl_login_back_overdue(struct odl_tb5 *odl)
{
	long left;

	if (READ_ONCE(odl->login_received) || odl->login_backs <= 0)
		return false;
	left = (long)(odl->login_back_by - jiffies);
	if (left > 0) {
		odl_queue_login(odl, left, false);
		return false;
	}
	return true;
}

void odl_login_work(struct work_struct *work)
{
	struct odl_tb5 *odl = container_of(work, struct odl_tb5, login_work.work);
	bool reannounce = false;
	bool received;
	int ret;

	mutex_lock(&odl->lock);
	if (odl->gone || (odl->login_sent && !odl_login_back_overdue(odl))) {
		mutex_unlock(&odl->lock);
		return;
	}
	if (odl->login_sent) {
		odl->login_sent = false;
		odl->login_backs--;
		dev_info(&odl->svc->dev, "the peer accepted our login but sent none in %u ms: logging in again\n",
			 ODL_LOGIN_BACK_MS);
	}
	mutex_unlock(&odl->lock);

	ret = odl_login_request(odl);

	mutex_lock(&odl->lock);
	if (odl->gone) {
		mutex_unlock(&odl->lock);
		return;
	}
	if (!ret) {
		odl->login_sent = true;
		odl->login_retries = ODL_LOGIN_RETRIES;
		received = READ_ONCE(odl->login_received);
		dev_dbg(&odl->svc->dev, "login accepted by peer\n");
		if (received) {
			odl_queue_work(odl, &odl->connect_work);
		} else if (odl->login_backs > 0) {
			odl->login_back_by = jiffies +
					     msecs_to_jiffies(ODL_LOGIN_BACK_MS);
			odl_queue_login(odl, msecs_to_jiffies(ODL_LOGIN_BACK_MS),
					false);
		} else {
			dev_warn(&odl->svc->dev, "the peer accepts our login but sends none, waiting for its login\n");
		}
	} else {
		odl_stat_inc(odl, login_failures, 1);
		dev_dbg(&odl->svc->dev, "login attempt failed: %d\n", ret);
		/*
		 * No answer and no LOGIN from the peer: it may hold our
		 * properties from before the module loaded (docs/kmod.md).
		 * Re-announce once; the peer re-reads them and binds.
		 */
		if (ret == -ETIMEDOUT && !odl->reannounced &&
		    !READ_ONCE(odl->login_received)) {
			odl->reannounced = true;
			reannounce = true;
		}
		if (--odl->login_retries > 0)
			odl_queue_login(odl, msecs_to_jiffies(ODL_LOGIN_RETRY_MS),
					false);
		else
			dev_warn(&odl->svc->dev, "no login answer from the peer, waiting for its login\n");
	}
	mutex_unlock(&odl->lock);

	if (reannounce) {
		/* Outside @lock: it takes the Thunderbolt core's locks. */
		ret = odl_reannounce();
		odl_stat_inc(odl, reannounces, 1);
		dev_info(&odl->svc->dev, "no answer to login, service re-announced: %d\n",
			 ret);
	}
}

/* Caller holds @odl->lock: give back the in HopIDs of every ring. */
static void odl_release_in_hopids(struct odl_tb5 *odl)
{
	struct odl_ring *r;
	unsigned int i;

	for (i = 0; i < odl->rings; i++) {
		r = &odl->ring[i];
		if (!r->rx_hopid_alloc)
			continue;
		tb_xdomain_release_in_hopid(odl->xd, r->rx_hopid);
		r->rx_hopid_alloc = false;
	}
}

/* Caller holds @odl->lock; the first @n ring pairs' paths are enabled. */
static void odl_disable_paths(struct odl_tb5 *odl, unsigned int n)
{
	struct odl_ring *r;
	unsigned int i;

	for (i = 0; i < n; i++) {
		r = &odl->ring[i];
		tb_xdomain_disable_paths(odl->xd, r->tx_hopid, r->tx->hop,
					 r->rx_hopid, r->rx->hop);
	}
}

/*
 * Caller holds @odl->lock, ->connected is false: stop the rings in use
 * (cancels what they hold), their Rx interrupts unmasked first in poll mode.
 */
static void odl_stop_rings(struct odl_tb5 *odl)
{
	unsigned int i;

	odl_rx_poll_quiesce(odl);
	for (i = 0; i < odl->nrings; i++)
		tb_ring_stop(odl->ring[i].rx);
	for (i = 0; i < odl->nrings; i++)
		tb_ring_stop(odl->ring[i].tx);
}

void odl_connect_work(struct work_struct *work)
{
	struct odl_tb5 *odl = container_of(work, struct odl_tb5, connect_work);
	int paths[ODL_RINGS_MAX];
	unsigned long flags;
	unsigned int i, n;
	struct odl_ring *r;
	bool open;
	int ret;

	mutex_lock(&odl->lock);
	if (odl->gone || odl->connected || !odl->login_sent ||
	    !odl->login_received)
		goto out_unlock;

	/* Both use the smaller offer: ring i pairs with the peer's ring i. */
	spin_lock_irqsave(&odl->state_lock, flags);
	n = min(odl->rings, odl->peer_rings);
	memcpy(paths, odl->remote_paths, sizeof(paths));
	spin_unlock_irqrestore(&odl->state_lock, flags);
	for (i = 0; i < n; i++) {
		r = &odl->ring[i];
		ret = tb_xdomain_alloc_in_hopid(odl->xd, paths[i]);
		if (ret != paths[i]) {
			dev_err(&odl->svc->dev, "cannot allocate in HopID %d: %d\n",
				paths[i], ret);
			if (ret >= 0)
				tb_xdomain_release_in_hopid(odl->xd, ret);
			odl_release_in_hopids(odl);
			goto out_unlock;
		}
		r->rx_hopid = paths[i];
		r->rx_hopid_alloc = true;
	}

	/* Polls left pending by the last connection refer to nothing. */
	WRITE_ONCE(odl->rx_poll, 0);
	WRITE_ONCE(odl->nrings, n);
	for (i = 0; i < n; i++) {
		/* Stopped: no interrupt reads it until the start. */
		WRITE_ONCE(odl->ring[i].rx_stopping, false);
		tb_ring_start(odl->ring[i].tx);
		tb_ring_start(odl->ring[i].rx);
	}
	odl_irq_throttle_set(odl);
	odl_rx_flush(odl);
	odl_rx_post_idle(odl);

	/* Paths last, so the Rx rings are primed before frames arrive. */
	for (i = 0; i < n; i++) {
		r = &odl->ring[i];
		ret = tb_xdomain_enable_paths(odl->xd, r->tx_hopid, r->tx->hop,
					      r->rx_hopid, r->rx->hop);
		if (ret)
			break;
	}
	if (ret) {
		dev_err(&odl->svc->dev, "cannot enable DMA paths of ring %u: %d\n",
			i, ret);
		odl_disable_paths(odl, i);
		odl_stop_rings(odl);
		odl_irq_throttle_restore(odl);
		odl_release_in_hopids(odl);
		goto out_unlock;
	}

	spin_lock_irqsave(&odl->state_lock, flags);
	odl->connected = true;
	odl->connect_count++;
	__odl_session_update(odl);
	open = odl->local_open;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	odl_stat_inc(odl, logins, 1);
	odl->login_backs = ODL_LOGIN_RETRIES;
	dev_dbg(&odl->svc->dev, "connected: %u ring pair(s); ring 0: tx HopID %d ring %d, rx HopID %d ring %d\n",
		n, odl->ring[0].tx_hopid, odl->ring[0].tx->hop,
		odl->ring[0].rx_hopid, odl->ring[0].rx->hop);
	if (open)
		odl_queue_work(odl, &odl->port_work);
	odl_state_changed(odl);
	wake_up_all(&odl->rq);
	wake_up_all(&odl->wq);
out_unlock:
	mutex_unlock(&odl->lock);
}

/**
 * odl_disconnect() - disable the paths, stop the rings, end the session.
 * @odl: device; caller holds @odl->lock
 *
 * Stopping the rings cancels every queued frame: Tx buffers return to the
 * free list and Rx buffers to the idle list. Waiters are woken.
 */
void odl_disconnect(struct odl_tb5 *odl)
{
	unsigned long flags;
	bool was;

	spin_lock_irqsave(&odl->state_lock, flags);
	was = odl->connected;
	odl->connected = false;
	odl->peer_open = false;
	__odl_session_end(odl);
	spin_unlock_irqrestore(&odl->state_lock, flags);
	odl_state_changed(odl);
	odl->login_sent = false;
	odl->login_received = false;

	if (was) {
		odl_disable_paths(odl, odl->nrings);
		odl_stop_rings(odl);
		odl_irq_throttle_restore(odl);
		dev_dbg(&odl->svc->dev, "disconnected\n");
	}
	odl_release_in_hopids(odl);
	wake_up_all(&odl->rq);
	wake_up_all(&odl->wq);
}

/*
 * Tests only (module parameter test_unplug_race_ms): stand where a reset is
 * when the cable goes just after tb_xdomain_disable_paths() found the XDomain
 * still plugged: waiting for the domain lock that the unplug handler holds
 * while it removes the service (tests/vm/unload_test.sh).
 */
static void odl_test_unplug_race(struct odl_tb5 *odl)
{
	unsigned int ms = READ_ONCE(odl_test_unplug_race_ms);
	struct tb_xdomain *xd = odl->xd;
	unsigned long end;

	if (!ms || !odl->connected)
		return;
	dev_info(&odl->svc->dev, "test: reset waits for the cable to go\n");
	end = jiffies + msecs_to_jiffies(ms);
	while (!READ_ONCE(xd->is_unplugged) && time_before(jiffies, end))
		usleep_range(10000, 20000);
	if (!READ_ONCE(xd->is_unplugged))
		return;
	dev_info(&odl->svc->dev, "test: reset waits for the domain lock\n");
	mutex_lock(&xd->tb->lock);
	mutex_unlock(&xd->tb->lock);
}

void odl_reset_work(struct work_struct *work)
{
	struct odl_tb5 *odl = container_of(work, struct odl_tb5, reset_work);
	unsigned long flags;
	bool relogin;

	mutex_lock(&odl->lock);
	if (odl->gone) {
		mutex_unlock(&odl->lock);
		return;
	}
	/* A LOGIN that arrived after the reset was queued is kept. */
	spin_lock_irqsave(&odl->state_lock, flags);
	relogin = odl->login_received;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	odl_test_unplug_race(odl);
	odl_disconnect(odl);
	odl->login_received = relogin;
	odl->login_retries = ODL_LOGIN_RETRIES;
	odl_queue_login(odl, msecs_to_jiffies(relogin ? 0 : ODL_LOGIN_RETRY_MS),
			true);
	mutex_unlock(&odl->lock);
}

static int odl_simple_request(struct odl_tb5 *odl, void *req, size_t size)
{
	struct odl_xd_hdr *hdr = req;
	struct odl_xd_status reply;
	int ret;

	memset(&reply, 0, sizeof(reply));
	mutex_lock(&odl->xd_lock);
	hdr->command_id = ++odl->command_id;
	ret = tb_xdomain_request(odl->xd, req, size, TB_CFG_PKG_XDOMAIN_RESP,
				 &reply, sizeof(reply), TB_CFG_PKG_XDOMAIN_RESP,
				 ODL_LOGIN_TIMEOUT_MS);
	mutex_unlock(&odl->xd_lock);
	if (ret)
		return ret;
	if (!odl_check_reply(odl, &reply.hdr, sizeof(reply), ODL_XD_STATUS,
			     hdr->command_id))
		return -EPROTO;
	return reply.status == ODL_XD_ST_OK ? 0 : -EPROTO;
}

/*
 * Best effort: the peer may already be gone. Sent whenever a login went
 * either way, not only when connected: a peer whose LOGIN we accepted, or
 * that accepted ours, counts on us and would otherwise take our successor's
 * LOGIN for the answer to its own.
 */
void odl_send_logout(struct odl_tb5 *odl)
{
	struct odl_xd_hdr req;

	if (!READ_ONCE(odl->connected) && !READ_ONCE(odl->login_sent) &&
	    !READ_ONCE(odl->login_received))
		return;
	memset(&req, 0, sizeof(req));
	odl_fill_header(odl, &req, ODL_XD_LOGOUT, sizeof(req), 0);
	odl_simple_request(odl, &req, sizeof(req));
}

/**
 * odl_ping() - one PING over the control channel, answered by the peer's
 * odl_tb5 (not by a program): the link and the peer module are alive.
 * @odl: the device; the caller holds io_rwsem for reading with ->svc set
 * @rtt_ns: the round trip, on success
 *
 * Return: 0, -ENOTCONN (not logged in), -EOPNOTSUPP (the peer predates
 * 1.3), or the request's error (-ETIMEDOUT when nothing came back).
 */
int odl_ping(struct odl_tb5 *odl, u64 *rtt_ns)
{
	struct odl_xd_hdr req;
	unsigned long flags;
	bool up, feat;
	ktime_t start;
	int ret;

	spin_lock_irqsave(&odl->state_lock, flags);
	up = odl->connected && !odl->gone;
	feat = odl->peer_features & ODL_XD_FEAT_PING;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	if (!up)
		return -ENOTCONN;
	if (!feat)
		return -EOPNOTSUPP;
	memset(&req, 0, sizeof(req));
	odl_fill_header(odl, &req, ODL_XD_PING, sizeof(req), 0);
	start = ktime_get();
	ret = odl_simple_request(odl, &req, sizeof(req));
	*rtt_ns = ktime_to_ns(ktime_sub(ktime_get(), start));
	return ret;
}

void odl_port_work(struct work_struct *work)
{
	struct odl_tb5 *odl = container_of(work, struct odl_tb5, port_work);
	struct odl_xd_port req;
	unsigned long flags;
	int i, ret = -ENOTCONN;

	for (i = 0; i < ODL_PORT_RETRIES; i++) {
		if (!READ_ONCE(odl->connected) || READ_ONCE(odl->gone))
			return;
		memset(&req, 0, sizeof(req));
		odl_fill_header(odl, &req.hdr, ODL_XD_PORT, sizeof(req), 0);
		spin_lock_irqsave(&odl->state_lock, flags);
		req.open = odl->local_open;
		req.session = odl->session;
		spin_unlock_irqrestore(&odl->state_lock, flags);
		ret = odl_simple_request(odl, &req, sizeof(req));
		if (!ret)
			return;
	}
	dev_warn(&odl->svc->dev, "peer did not take the open/close notice: %d\n",
		 ret);
}

static void odl_respond(struct odl_tb5 *odl, void *resp, size_t size, u32 type,
			u32 command_id, u32 sn)
{
	struct odl_xd_hdr *hdr = resp;

	odl_fill_header(odl, hdr, type, size, command_id);
	hdr->length_sn |= (sn << ODL_XD_SN_SHIFT) & ODL_XD_SN_MASK;
	tb_xdomain_response(odl->xd, resp, size, TB_CFG_PKG_XDOMAIN_RESP);
}

static void odl_respond_status(struct odl_tb5 *odl, u32 command_id, u32 sn,
			       u32 status)
{
	struct odl_xd_status resp;

	memset(&resp, 0, sizeof(resp));
	resp.status = status;
	odl_respond(odl, &resp, sizeof(resp), ODL_XD_STATUS, command_id, sn);
}

/* The LOGIN that answers the peer's; tests see when they delay it. */
static void odl_login_back(struct odl_tb5 *odl)
{
	unsigned int ms = READ_ONCE(odl_test_login_delay_ms);

	if (ms)
		dev_info(&odl->svc->dev, "test: login back in %u ms\n", ms);
	odl_queue_login(odl, 0, true);
}

static void odl_handle_login(struct odl_tb5 *odl, const struct odl_xd_login *req,
			     u32 sn)
{
	struct odl_xd_login_resp resp;
	unsigned int rings = 0, i;
	unsigned long flags;
	bool reset = false;
	u32 status;

	status = odl_xd_login_check(req, odl->xd->local_max_hopid,
				    ODL_FRAME_MAX_BYTES, &rings);

	memset(&resp, 0, sizeof(resp));
	resp.status = status;
	resp.version_major = ODL_XD_VERSION_MAJOR;
	resp.version_minor = ODL_XD_VERSION_MINOR;
	/*
	 * A 1.0 requester refuses anything in the (to it) reserved words;
	 * unknown feature bits it ignores.
	 */
	resp.features = ODL_XD_FEAT_CREDITS | ODL_XD_FEAT_PING |
			(odl_split ? ODL_XD_FEAT_SPLIT : 0);
	if (req->features & ODL_XD_FEAT_RINGS) {
		resp.features |= ODL_XD_FEAT_RINGS;
		resp.rings = odl->rings;
	}
	resp.ring_size = odl->ring_size;
	resp.frame_bytes = ODL_FRAME_MAX_BYTES;
	odl_respond(odl, &resp, sizeof(resp), ODL_XD_LOGIN_RESP,
		    req->hdr.command_id, sn);
	dev_dbg(&odl->svc->dev, "login from the peer answered: status %u\n",
		status);
	if (status != ODL_XD_ST_OK) {
		odl_stat_inc(odl, xd_bad, 1);
		return;
	}

	spin_lock_irqsave(&odl->state_lock, flags);
	/* A fresh LOGIN while connected: the peer restarted; start over. */
	if (odl->connected)
		reset = true;
	for (i = 0; i < ODL_RINGS_MAX; i++)
		odl->remote_paths[i] = i < rings ? odl_xd_login_path(req, i) : 0;
	odl->peer_rings = rings;
	odl->peer_ring_size = req->ring_size;
	odl->peer_ver_major = req->version_major;
	odl->peer_ver_minor = req->version_minor;
	odl->peer_features = req->features;
	odl->login_received = true;
	spin_unlock_irqrestore(&odl->state_lock, flags);

	dev_dbg(&odl->svc->dev, "peer logged in: %s\n",
		reset ? "was connected, starting over" :
		READ_ONCE(odl->login_sent) ? "connecting" : "logging in back");
	if (reset)
		odl_queue_work(odl, &odl->reset_work);
	else if (READ_ONCE(odl->login_sent))
		odl_queue_work(odl, &odl->connect_work);
	else
		odl_login_back(odl);
}

/*
 * The peer logged out: its LOGIN is void (the reset keeps only one that comes
 * after this), so no session forms on it with the peer's successor.
 */
static void odl_handle_logout(struct odl_tb5 *odl)
{
	unsigned long flags;

	spin_lock_irqsave(&odl->state_lock, flags);
	odl->login_received = false;
	spin_unlock_irqrestore(&odl->state_lock, flags);
	odl_queue_work(odl, &odl->reset_work);
}

static void odl_handle_port(struct odl_tb5 *odl, const struct odl_xd_port *req,
			    u32 sn)
{
	unsigned long flags;

	if (odl_xd_port_check(req) != ODL_XD_ST_OK) {
		odl_stat_inc(odl, xd_bad, 1);
		odl_respond_status(odl, req->hdr.command_id, sn, ODL_XD_ST_INVAL);
		return;
	}
	spin_lock_irqsave(&odl->state_lock, flags);
	odl->peer_open = req->open;
	if (!req->open)
		__odl_session_end(odl);
	__odl_session_update(odl);
	spin_unlock_irqrestore(&odl->state_lock, flags);
	odl_state_changed(odl);
	odl_respond_status(odl, req->hdr.command_id, sn, ODL_XD_ST_OK);
	wake_up_all(&odl->rq);
	wake_up_all(&odl->wq);
}

/**
 * odl_handle_request() - an XDomain packet for the OdinLink UUID.
 * @odl: the device whose protocol handler got it
 * @buf: the packet, CPU order
 * @size: its size in bytes
 *
 * Every field is checked before use (odl_xd_classify() and the checks of
 * tb5_login_codec.h); packets for another XDomain or of an unknown shape are
 * left to others, the unknown shapes counted.
 *
 * Return: 1 if the packet was a request for this device and was handled,
 * 0 to let the Thunderbolt core match it against pending requests.
 */
static int odl_handle_request(struct odl_tb5 *odl, const void *buf, size_t size)
{
	struct odl_xd_ids ids;
	struct odl_xd_hdr hdr;
	u32 sn;

	odl_xd_ids(odl, &ids);
	switch (odl_xd_classify(buf, size, &ids, &hdr, &sn)) {
	case ODL_XD_FOREIGN:
		return 0;
	case ODL_XD_ANSWER:
		return 0; /* the core matches it to our pending request */
	case ODL_XD_REQUEST:
		break;
	default:
		odl_stat_inc(odl, xd_bad, 1);
		return 0;
	}
	switch (hdr.type) {
	case ODL_XD_LOGIN:
		odl_handle_login(odl, buf, sn);
		break;
	case ODL_XD_LOGOUT:
		odl_respond_status(odl, hdr.command_id, sn, ODL_XD_ST_OK);
		odl_stat_inc(odl, logouts, 1);
		odl_handle_logout(odl);
		break;
	case ODL_XD_PORT:
		odl_handle_port(odl, buf, sn);
		break;
	default: /* ODL_XD_PING: odl_xd_classify() knows no other request */
		odl_respond_status(odl, hdr.command_id, sn, ODL_XD_ST_OK);
		break;
	}
	return 1;
}

/*
 * thunderbolt.ko calls a protocol handler without holding anything that
 * tb_unregister_protocol_handler() waits for, so odl_remove() waits out the
 * handlers in flight through @handler_rwsem.
 */
int odl_handle_packet(const void *buf, size_t size, void *data)
{
	struct odl_tb5 *odl = data;
	int ret = 0;

	down_read(&odl->handler_rwsem);
	if (!READ_ONCE(odl->gone))
		ret = odl_handle_request(odl, buf, size);
	up_read(&odl->handler_rwsem);
	return ret;
}
