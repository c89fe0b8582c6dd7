/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Build and validate sim-backend <-> model-server messages and use the
 * shared frame rings (layout in sim.h). Static inline C shared by libodl and
 * odl-linkd, so one unit test covers what both sides run. Everything the
 * other side wrote is checked before it is used: datagram lengths before
 * fields, the other side's ring index before any slot, a slot's length
 * read once.
 */
#ifndef ODL_WIRE_SIM_CODEC_H
#define ODL_WIRE_SIM_CODEC_H

#include "odl/wire/frame.h"
#include "odl/wire/sim.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

/* Who sent a message: some types go one way only. */
enum odl_sim_side {
	ODL_SIM_SIDE_CLIENT = 0,
	ODL_SIM_SIDE_SERVER = 1,
};

/**
 * odl_sim_check() - validates one received control datagram.
 * Return: NULL when @buf (@n bytes, sent by @from) is a well-formed
 * message, else why not, in words.
 */
static inline const char *odl_sim_check(const void *buf, size_t n, enum odl_sim_side from)
{
	struct odl_sim_hdr h;
	__u32 len;

	if (n < sizeof(h))
		return "datagram shorter than a message header";
	memcpy(&h, buf, sizeof(h));
	len = odl_le32(h.len);
	if (len != n - sizeof(h))
		return "length field does not match the datagram";
	if (odl_le16(h.flags) != 0)
		return "flags not zero";
	switch (odl_le16(h.type)) {
	case ODL_SIM_HELLO: {
		struct odl_sim_hello hello;
		__le32 magic;
		__le16 version;

		/* Magic and version first: the HELLO of another version, of
		 * another length too, is named for what it is. */
		if (len < sizeof(magic) + sizeof(version))
			return "HELLO of the wrong length";
		memcpy(&magic, (const char *)buf + sizeof(h), sizeof(magic));
		memcpy(&version, (const char *)buf + sizeof(h) + sizeof(magic), sizeof(version));
		if (odl_le32(magic) != ODL_SIM_MAGIC)
			return "HELLO with a bad magic number";
		if (odl_le16(version) != ODL_SIM_VERSION)
			return "HELLO of another protocol version";
		if (len != sizeof(hello))
			return "HELLO of the wrong length";
		memcpy(&hello, (const char *)buf + sizeof(h), sizeof(hello));
		if (from == ODL_SIM_SIDE_SERVER) {
			if (hello.end > 1 && hello.end != ODL_SIM_END_ANY)
				return "server HELLO names no end";
			if (odl_le32(hello.links) == 0)
				return "server HELLO models no link";
			if (hello.end <= 1 && hello.link >= odl_le32(hello.links))
				return "server HELLO names a link it does not model";
			if (hello.end <= 1 && odl_le32(hello.window) == 0)
				return "server HELLO gives no window";
		} else if (odl_le32(hello.links) != 0) {
			return "client HELLO with a link count";
		}
		return NULL;
	}
	case ODL_SIM_LINK:
		if (from != ODL_SIM_SIDE_SERVER)
			return "LINK from a client";
		if (len != 0 || (odl_le64(h.arg) & ~(__u64)ODL_SIM_LINK_ALL))
			return "LINK with a payload or unknown state bits";
		return NULL;
	case ODL_SIM_WAKE: /* either way (version 5) */
		return len == 0 ? NULL : "WAKE with a payload";
	case ODL_SIM_BYE:
		return len == 0 ? NULL : "BYE with a payload";
	case ODL_SIM_PEER:
		if (from != ODL_SIM_SIDE_SERVER)
			return "PEER from a client";
		if (len != 0 || odl_le64(h.arg) == 0)
			return "PEER with a payload or no region name";
		return NULL;
	default:
		return "unknown message type";
	}
}

/**
 * odl_sim_send() - one control datagram of @n parts on @sock, non-blocking,
 * with descriptor @fd passed along when it is >= 0 (SCM_RIGHTS: a HELLO's
 * rings, a PEER's view). Return: sendmsg()'s.
 */
static inline ssize_t odl_sim_send(int sock, struct iovec *iov, size_t n, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr mh;
	struct cmsghdr *cm;

	memset(&mh, 0, sizeof(mh));
	memset(&ctl, 0, sizeof(ctl));
	mh.msg_iov = iov;
	mh.msg_iovlen = n;
	if (fd >= 0) {
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
}

/**
 * odl_sim_recv() - one control datagram from @sock into @buf (@cap bytes),
 * non-blocking. *@fd gets the descriptor that came with it (close-on-exec;
 * the caller owns it) or -1; *@flags gets msg_flags (MSG_TRUNC: longer than
 * @cap; MSG_CTRUNC: more than one descriptor was sent, the rest dropped).
 * Return: recvmsg()'s.
 */
static inline ssize_t odl_sim_recv(int sock, void *buf, size_t cap, int *fd, int *flags)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { buf, cap };
	struct msghdr mh;
	struct cmsghdr *cm;
	ssize_t n;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = ctl.buf;
	mh.msg_controllen = sizeof(ctl.buf);
	*fd = -1;
	*flags = 0;
	n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	*flags = mh.msg_flags;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm))
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
		    cm->cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(fd, CMSG_DATA(cm), sizeof(int));
	return n;
}

/* odl_sim_hdr_init() - a header of @type with @len payload bytes. */
static inline void odl_sim_hdr_init(struct odl_sim_hdr *h, unsigned int type, __u32 len, __u64 seq,
				    __u64 stamp_ns, __u64 arg)
{
	memset(h, 0, sizeof(*h));
	h->type = odl_cpu_le16((__u16)type);
	h->len = odl_cpu_le32(len);
	h->seq = odl_cpu_le64(seq);
	h->stamp_ns = odl_cpu_le64(stamp_ns);
	h->arg = odl_cpu_le64(arg);
}

/* odl_sim_shm_init() - a fresh region's header (the client's job). */
static inline void odl_sim_shm_init(struct odl_sim_shm *shm)
{
	memset(shm, 0, sizeof(*shm));
	shm->magic = ODL_SIM_MAGIC;
	shm->version = ODL_SIM_VERSION;
	shm->slots = ODL_SIM_SLOTS;
}

/* odl_sim_shm_check() - NULL when the region's header is one to use. */
static inline const char *odl_sim_shm_check(const struct odl_sim_shm *shm)
{
	if (shm->magic != ODL_SIM_MAGIC || shm->version != ODL_SIM_VERSION)
		return "ring memory with a bad magic number or version";
	if (shm->slots != ODL_SIM_SLOTS)
		return "ring memory with another slot count";
	return NULL;
}

/* The frame slots towards the server. */
static inline struct odl_sim_slot *odl_sim_slots(struct odl_sim_shm *shm)
{
	return (struct odl_sim_slot *)(shm + 1);
}

/* The descriptors towards the client, after the slots. */
static inline struct odl_sim_desc *odl_sim_descs(struct odl_sim_shm *shm)
{
	return (struct odl_sim_desc *)(odl_sim_slots(shm) + ODL_SIM_SLOTS);
}

static inline __u64 odl_sim_load(const __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void odl_sim_store(__u64 *p, __u64 v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/*
 * odl_sim_take_flag() - after publishing (release stores: a ring's index,
 * acked), take the other side's "asleep" flag (server_waiting,
 * client_waiting): true if it was set, and the caller then sends WAKE. The
 * fence orders what was published before the look, as the sleeper sets its
 * flag before it looks at that. A look first: an exchange on every frame
 * would claim the flag's line, which the other side reads, each time.
 */
static inline int odl_sim_take_flag(__u32 *flag)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(flag, __ATOMIC_RELAXED) && __atomic_exchange_n(flag, 0u, __ATOMIC_SEQ_CST);
}

/*
 * Ring results: an entry, or why there is none. CORRUPT: the other side's
 * index is impossible (more than a ring apart from ours).
 */
enum odl_sim_ring_st {
	ODL_SIM_RING_OK = 0,
	ODL_SIM_RING_NONE = 1, /* producer: full; consumer: empty */
	ODL_SIM_RING_CORRUPT = 2,
};

/*
 * Producer: how many entries from number @head (our own count) on the
 * consumer has left free, its tail read once; -1 if the indices are
 * impossible.
 */
static inline __s64 odl_sim_ring_free(struct odl_sim_index *ix, __u64 head)
{
	__u64 tail = odl_sim_load(&ix->tail);

	return head - tail > ODL_SIM_SLOTS ? -1 : (__s64)(ODL_SIM_SLOTS - (head - tail));
}

/* Producer: may entry number @head (our own count) be filled? */
static inline enum odl_sim_ring_st odl_sim_ring_can_put(struct odl_sim_index *ix, __u64 head)
{
	__s64 n = odl_sim_ring_free(ix, head);

	if (n < 0)
		return ODL_SIM_RING_CORRUPT;
	return n == 0 ? ODL_SIM_RING_NONE : ODL_SIM_RING_OK;
}

/*
 * Consumer: how many entries from number @tail (our own count) on the
 * producer has filled, its head read once; -1 if the indices are impossible.
 */
static inline __s64 odl_sim_ring_filled(struct odl_sim_index *ix, __u64 tail)
{
	__u64 head = odl_sim_load(&ix->head);

	return head - tail > ODL_SIM_SLOTS ? -1 : (__s64)(head - tail);
}

/* Consumer: has the producer filled entry number @tail (our own count)? */
static inline enum odl_sim_ring_st odl_sim_ring_can_take(struct odl_sim_index *ix, __u64 tail)
{
	__s64 n = odl_sim_ring_filled(ix, tail);

	if (n < 0)
		return ODL_SIM_RING_CORRUPT;
	return n == 0 ? ODL_SIM_RING_NONE : ODL_SIM_RING_OK;
}

/**
 * odl_sim_ring_room() - producer: the slot for frame number @head (the
 * producer's own count), if the consumer has freed it.
 */
static inline enum odl_sim_ring_st odl_sim_ring_room(struct odl_sim_index *ix, struct odl_sim_slot *slots,
						      __u64 head, struct odl_sim_slot **slot)
{
	enum odl_sim_ring_st st = odl_sim_ring_can_put(ix, head);

	if (st == ODL_SIM_RING_OK)
		*slot = &slots[head & (ODL_SIM_SLOTS - 1)];
	return st;
}

/**
 * odl_sim_ring_next() - consumer: the slot of frame number @tail (the
 * consumer's own count), if the producer has filled it.
 */
static inline enum odl_sim_ring_st odl_sim_ring_next(struct odl_sim_index *ix, struct odl_sim_slot *slots,
						      __u64 tail, struct odl_sim_slot **slot)
{
	enum odl_sim_ring_st st = odl_sim_ring_can_take(ix, tail);

	if (st == ODL_SIM_RING_OK)
		*slot = &slots[tail & (ODL_SIM_SLOTS - 1)];
	return st;
}

/* odl_sim_slot_len() - the slot's frame length, read once; 0 if impossible. */
static inline __u32 odl_sim_slot_len(const struct odl_sim_slot *slot)
{
	__u32 len = __atomic_load_n(&slot->len, __ATOMIC_RELAXED);

	return len >= ODL_FRAME_HDR_BYTES && len <= ODL_FRAME_MAX_BYTES ? len : 0;
}

/**
 * odl_sim_desc_take() - copies descriptor @d (written by the server) to
 * @out, each field read once, and checks the copy.
 * Return: NULL when @out may be used, else why not.
 */
static inline const char *odl_sim_desc_take(const struct odl_sim_desc *d, struct odl_sim_desc *out)
{
	out->len = __atomic_load_n(&d->len, __ATOMIC_RELAXED);
	out->slot = __atomic_load_n(&d->slot, __ATOMIC_RELAXED);
	out->stamp_ns = __atomic_load_n(&d->stamp_ns, __ATOMIC_RELAXED);
	out->region = __atomic_load_n(&d->region, __ATOMIC_RELAXED);
	out->handed_ns = __atomic_load_n(&d->handed_ns, __ATOMIC_RELAXED);
	if (out->len < ODL_FRAME_HDR_BYTES || out->len > ODL_FRAME_MAX_BYTES)
		return "a descriptor with an impossible frame length";
	if (out->slot >= ODL_SIM_SLOTS)
		return "a descriptor pointing outside the sender's ring";
	if (out->region == 0)
		return "a descriptor naming no ring memory";
	if (out->handed_ns == 0)
		return "a descriptor without its hand-over time";
	return NULL;
}

#endif /* ODL_WIRE_SIM_CODEC_H */
