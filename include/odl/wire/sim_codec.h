/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Build and validate sim-backend <-> model-server messages (layout in
 * sim.h). Static inline C shared by libodl and odl-linkd, so one unit test
 * covers what both sides run. The length is checked before any field.
 */
#ifndef ODL_WIRE_SIM_CODEC_H
#define ODL_WIRE_SIM_CODEC_H

#include "odl/wire/frame.h"
#include "odl/wire/sim.h"

#include <string.h>

/* Who sent a message: some types go one way only. */
enum odl_sim_side {
	ODL_SIM_SIDE_CLIENT = 0,
	ODL_SIM_SIDE_SERVER = 1,
};

/**
 * odl_sim_check() - validates one received datagram.
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

		if (len != sizeof(hello))
			return "HELLO of the wrong length";
		memcpy(&hello, (const char *)buf + sizeof(h), sizeof(hello));
		if (odl_le32(hello.magic) != ODL_SIM_MAGIC)
			return "HELLO with a bad magic number";
		if (odl_le16(hello.version) != ODL_SIM_VERSION)
			return "HELLO of another protocol version";
		if (from == ODL_SIM_SIDE_SERVER && hello.end > 1)
			return "server HELLO names no end";
		return NULL;
	}
	case ODL_SIM_FRAME:
		if (len < ODL_FRAME_HDR_BYTES || len > ODL_SIM_MAX_FRAME)
			return "FRAME shorter than a frame header or longer than a frame";
		return NULL;
	case ODL_SIM_ACK:
		if (from != ODL_SIM_SIDE_SERVER)
			return "ACK from a client";
		if (len != 0 || odl_le64(h.arg) == 0 || odl_le64(h.arg) > ODL_SIM_WINDOW)
			return "ACK with a payload or a count outside 1..window";
		return NULL;
	case ODL_SIM_LINK:
		if (from != ODL_SIM_SIDE_SERVER)
			return "LINK from a client";
		if (len != 0 || (odl_le64(h.arg) & ~(__u64)ODL_SIM_LINK_ALL))
			return "LINK with a payload or unknown state bits";
		return NULL;
	case ODL_SIM_BYE:
		return len == 0 ? NULL : "BYE with a payload";
	default:
		return "unknown message type";
	}
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

#endif /* ODL_WIRE_SIM_CODEC_H */
