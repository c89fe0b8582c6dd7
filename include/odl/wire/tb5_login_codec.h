/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Check received odl_tb5 XDomain service packets (layout in tb5_login.h).
 * Static inline C, the code the kernel module runs on a peer's packets, so
 * the userspace tests and the fuzz target cover it. Nothing here trusts a
 * field it has not checked; nothing reads past @size.
 */
#ifndef ODL_WIRE_TB5_LOGIN_CODEC_H
#define ODL_WIRE_TB5_LOGIN_CODEC_H

#include "odl/wire/tb5_login.h"

#ifndef __KERNEL__
#include <string.h>
#endif

/* Lowest HopID of a DMA path (thunderbolt.ko's TB_PATH_MIN_HOPID). */
#define ODL_XD_MIN_HOPID 8
/* A LOGIN's ring_size: a power of two in this range. */
#define ODL_XD_RING_SIZE_MIN 64
#define ODL_XD_RING_SIZE_MAX 16384

/**
 * struct odl_xd_ids - whom a packet must come from and be addressed to.
 * @route: route to the peer XDomain
 * @local_uuid: this host's domain UUID, 16 bytes
 * @remote_uuid: the peer's domain UUID, 16 bytes
 */
struct odl_xd_ids {
	__u64 route;
	const __u8 *local_uuid;
	const __u8 *remote_uuid;
};

/* enum odl_xd_verdict - what a received packet is (odl_xd_classify()). */
enum odl_xd_verdict {
	ODL_XD_FOREIGN = 0, /* another service or peer: leave it to others */
	ODL_XD_MALFORMED,   /* ours, but of no known shape or size: count it */
	ODL_XD_REQUEST,     /* a request of its type's exact size */
	ODL_XD_ANSWER,      /* LOGIN_RESP or STATUS: for a pending request */
};

static inline int odl_xd_is_service(const __u8 *uuid)
{
	static const __u8 svc[16] = ODL_XD_SERVICE_UUID_BYTES;

	return !memcmp(uuid, svc, sizeof(svc));
}

/* Bytes a request of @type must have, or 0 for no request type. */
static inline size_t odl_xd_request_size(__u32 type)
{
	switch (type) {
	case ODL_XD_LOGIN:
		return sizeof(struct odl_xd_login);
	case ODL_XD_PORT:
		return sizeof(struct odl_xd_port);
	case ODL_XD_LOGOUT:
	case ODL_XD_PING:
		return sizeof(struct odl_xd_hdr);
	default:
		return 0;
	}
}

/**
 * odl_xd_classify() - sort a received XDomain packet.
 * @buf: the packet, CPU order (the Thunderbolt core converted each dword)
 * @size: its size in bytes
 * @ids: the peer it must come from
 * @hdr: out: its header (ODL_XD_REQUEST and ODL_XD_ANSWER)
 * @sn: out: its sequence number, to repeat in the answer
 *
 * Return: enum odl_xd_verdict. Only ODL_XD_REQUEST promises that @buf holds
 * the whole struct of hdr->type.
 */
static inline enum odl_xd_verdict
odl_xd_classify(const void *buf, size_t size, const struct odl_xd_ids *ids,
		struct odl_xd_hdr *hdr, __u32 *sn)
{
	__u64 route;
	__u32 length;

	if (size < sizeof(*hdr))
		return ODL_XD_FOREIGN;
	memcpy(hdr, buf, sizeof(*hdr));
	route = ((__u64)hdr->route_hi << 32) | hdr->route_lo;
	route &= ~(1ull << 63); /* set on packets to the host's side */
	if (route != ids->route || !odl_xd_is_service(hdr->uuid) ||
	    memcmp(hdr->initiator_uuid, ids->remote_uuid, 16) ||
	    memcmp(hdr->target_uuid, ids->local_uuid, 16))
		return ODL_XD_FOREIGN;
	length = hdr->length_sn & ODL_XD_LENGTH_MASK;
	*sn = (hdr->length_sn & ODL_XD_SN_MASK) >> ODL_XD_SN_SHIFT;
	if (size % 4 || length != (size - 12) / 4)
		return ODL_XD_MALFORMED;
	if (hdr->type == ODL_XD_LOGIN_RESP || hdr->type == ODL_XD_STATUS)
		return ODL_XD_ANSWER;
	if (!odl_xd_request_size(hdr->type) ||
	    size != odl_xd_request_size(hdr->type))
		return ODL_XD_MALFORMED;
	return ODL_XD_REQUEST;
}

/**
 * odl_xd_answers() - does a response header answer our request?
 * @hdr: the response's header
 * @size: the response's size (the struct of @type)
 * @type: the answer expected (ODL_XD_LOGIN_RESP or ODL_XD_STATUS)
 * @command_id: our request's
 * @ids: the peer asked
 *
 * Return: nonzero if it is the answer: same service, from that peer to us.
 */
static inline int odl_xd_answers(const struct odl_xd_hdr *hdr, size_t size,
				 __u32 type, __u32 command_id,
				 const struct odl_xd_ids *ids)
{
	__u32 length = hdr->length_sn & ODL_XD_LENGTH_MASK;

	return length == (size - 12) / 4 && hdr->type == type &&
	       hdr->command_id == command_id && odl_xd_is_service(hdr->uuid) &&
	       !memcmp(hdr->initiator_uuid, ids->remote_uuid, 16) &&
	       !memcmp(hdr->target_uuid, ids->local_uuid, 16);
}

/* Ring @i's HopID in a LOGIN (ring 0: transmit_path; @i < ODL_XD_RINGS_MAX). */
static inline __u32 odl_xd_login_path(const struct odl_xd_login *req,
				      unsigned int i)
{
	if (!i)
		return req->transmit_path;
	i--;
	return (req->transmit_path_ext[i / 2] >>
		((i % 2) * ODL_XD_PATH_EXT_BITS)) & ODL_XD_PATH_EXT_MASK;
}

/* Put ring @i's HopID into a zeroed LOGIN (the inverse of the above). */
static inline void odl_xd_login_set_path(struct odl_xd_login *req,
					 unsigned int i, __u32 hopid)
{
	if (!i) {
		req->transmit_path = hopid;
		return;
	}
	i--;
	req->transmit_path_ext[i / 2] |= (hopid & ODL_XD_PATH_EXT_MASK) <<
					 ((i % 2) * ODL_XD_PATH_EXT_BITS);
}

static inline int odl_xd_is_power_of_2(__u32 x)
{
	return x && !(x & (x - 1));
}

/*
 * The rings fields of a LOGIN: 0 and the peer's ring count (1 when it did
 * not offer ODL_XD_FEAT_RINGS: the fields are reserved then), or -1 for a
 * count out of range, a HopID out of range or used twice, or stray bits.
 */
static inline int odl_xd_login_rings(const struct odl_xd_login *req,
				     __u32 max_hopid, unsigned int *rings)
{
	unsigned int i, j, n = 1;
	__u32 p;

	if (req->features & ODL_XD_FEAT_RINGS) {
		if (!req->rings || req->rings > ODL_XD_RINGS_MAX)
			return -1;
		n = req->rings;
		/* Bits past ring n - 1's HopID must be zero. */
		for (i = n; i < ODL_XD_RINGS_MAX; i++)
			if (odl_xd_login_path(req, i))
				return -1;
		if (req->transmit_path_ext[1] >> ODL_XD_PATH_EXT_BITS)
			return -1;
	} else if (req->rings || req->transmit_path_ext[0] ||
		   req->transmit_path_ext[1]) {
		return -1;
	}
	for (i = 0; i < n; i++) {
		p = odl_xd_login_path(req, i);
		if (p < ODL_XD_MIN_HOPID || p > max_hopid)
			return -1;
		for (j = 0; j < i; j++)
			if (p == odl_xd_login_path(req, j))
				return -1;
	}
	*rings = n;
	return 0;
}

/**
 * odl_xd_login_check() - judge a peer's LOGIN.
 * @req: the LOGIN (classified ODL_XD_REQUEST)
 * @max_hopid: the highest HopID this host's paths take
 * @frame_bytes: the frame size this host requires (ODL_FRAME_MAX_BYTES)
 * @rings: out: the peer's ring count, 1..ODL_XD_RINGS_MAX, on ODL_XD_ST_OK
 *
 * Return: the status to answer with: ODL_XD_ST_OK, ODL_XD_ST_VERSION (other
 * major version) or ODL_XD_ST_INVAL (a field out of range).
 */
static inline __u32 odl_xd_login_check(const struct odl_xd_login *req,
				       __u32 max_hopid, __u32 frame_bytes,
				       unsigned int *rings)
{
	if (req->version_major != ODL_XD_VERSION_MAJOR)
		return ODL_XD_ST_VERSION;
	if (odl_xd_login_rings(req, max_hopid, rings) ||
	    req->frame_bytes != frame_bytes ||
	    !(req->features & ODL_XD_FEAT_CREDITS) ||
	    req->ring_size < ODL_XD_RING_SIZE_MIN ||
	    req->ring_size > ODL_XD_RING_SIZE_MAX ||
	    !odl_xd_is_power_of_2(req->ring_size))
		return ODL_XD_ST_INVAL;
	return ODL_XD_ST_OK;
}

/* enum odl_xd_resp_verdict - what a LOGIN_RESP says (odl_xd_login_resp_check()). */
enum odl_xd_resp_verdict {
	ODL_XD_RESP_OK = 0,    /* accepted, with usable terms */
	ODL_XD_RESP_MALFORMED, /* reserved bits set or terms out of range */
	ODL_XD_RESP_REFUSED,   /* the peer refused: status, version in the reply */
	ODL_XD_RESP_ONE_RING,  /* a 1.0 peer refused the rings fields: offer one */
};

/**
 * odl_xd_login_resp_check() - judge the answer to our LOGIN.
 * @resp: the LOGIN_RESP (its header checked with odl_xd_answers())
 * @offer: the ring count our LOGIN offered
 * @frame_bytes: the frame size this host requires (ODL_FRAME_MAX_BYTES)
 *
 * Return: enum odl_xd_resp_verdict.
 */
static inline enum odl_xd_resp_verdict
odl_xd_login_resp_check(const struct odl_xd_login_resp *resp,
			unsigned int offer, __u32 frame_bytes)
{
	if (resp->reserved[0] || resp->reserved[1])
		return ODL_XD_RESP_MALFORMED;
	if (resp->status == ODL_XD_ST_INVAL && offer > 1 &&
	    resp->version_major == ODL_XD_VERSION_MAJOR &&
	    resp->version_minor == 0)
		return ODL_XD_RESP_ONE_RING;
	if (resp->status != ODL_XD_ST_OK)
		return ODL_XD_RESP_REFUSED;
	if (resp->version_major != ODL_XD_VERSION_MAJOR ||
	    resp->frame_bytes != frame_bytes ||
	    !(resp->features & ODL_XD_FEAT_CREDITS))
		return ODL_XD_RESP_MALFORMED;
	/* The responder's count only answers an offer of several rings. */
	if (offer > 1 && (resp->features & ODL_XD_FEAT_RINGS) ?
	    !resp->rings || resp->rings > ODL_XD_RINGS_MAX : resp->rings)
		return ODL_XD_RESP_MALFORMED;
	return ODL_XD_RESP_OK;
}

/* A PORT notice: ODL_XD_ST_OK, or ODL_XD_ST_INVAL for an open flag above 1. */
static inline __u32 odl_xd_port_check(const struct odl_xd_port *req)
{
	return req->open > 1 ? ODL_XD_ST_INVAL : ODL_XD_ST_OK;
}

#endif /* ODL_WIRE_TB5_LOGIN_CODEC_H */
