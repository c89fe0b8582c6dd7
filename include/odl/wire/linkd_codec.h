/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Build and validate QEMU device <-> odl-linkd messages (layout in linkd.h).
 * Static inline C shared by the QEMU device (C) and odl-linkd (C++), so the
 * model-label unit tests cover the code both sides run. The validator checks
 * the datagram length before anything else and never trusts a field it has
 * not checked; range checks that need context (BAR size, vector count) are
 * the receiver's.
 */
#ifndef ODL_WIRE_LINKD_CODEC_H
#define ODL_WIRE_LINKD_CODEC_H

#include "odl/wire/linkd.h"

#ifndef __KERNEL__
#include <string.h>
#endif

/**
 * enum odl_linkd_side - who sent a message.
 */
enum odl_linkd_side {
	ODL_LINKD_SIDE_DEV = 0,   /* the QEMU device */
	ODL_LINKD_SIDE_MODEL = 1, /* odl-linkd */
};

/**
 * enum odl_linkd_err - why a datagram was refused. Receivers count each kind.
 */
enum odl_linkd_err {
	ODL_LINKD_OK = 0,
	ODL_LINKD_ERR_SHORT,    /* datagram shorter than a message */
	ODL_LINKD_ERR_LEN,      /* payload_len wrong for the type or the datagram */
	ODL_LINKD_ERR_TYPE,     /* unknown type, or not allowed from this side */
	ODL_LINKD_ERR_FLAGS,    /* hdr.flags not zero */
	ODL_LINKD_ERR_RESERVED, /* a reserved field is not zero */
	ODL_LINKD_ERR_FIELD,    /* a field out of its range (size, kind, ...) */
	ODL_LINKD_ERR_HELLO,    /* bad magic or major version */
	ODL_LINKD_ERR_COUNT
};

static inline const char *odl_linkd_err_name(enum odl_linkd_err err)
{
	switch (err) {
	case ODL_LINKD_OK: return "ok";
	case ODL_LINKD_ERR_SHORT: return "short";
	case ODL_LINKD_ERR_LEN: return "length";
	case ODL_LINKD_ERR_TYPE: return "type";
	case ODL_LINKD_ERR_FLAGS: return "flags";
	case ODL_LINKD_ERR_RESERVED: return "reserved";
	case ODL_LINKD_ERR_FIELD: return "field";
	case ODL_LINKD_ERR_HELLO: return "hello";
	default: return "unknown";
	}
}

static inline const char *odl_linkd_type_name(unsigned int type)
{
	switch (type) {
	case ODL_LINKD_HELLO: return "hello";
	case ODL_LINKD_SYNC: return "sync";
	case ODL_LINKD_TERMINATE: return "terminate";
	case ODL_LINKD_MMIO_READ: return "mmio_read";
	case ODL_LINKD_MMIO_WRITE: return "mmio_write";
	case ODL_LINKD_DMA_READ_CPL: return "dma_read_cpl";
	case ODL_LINKD_DMA_WRITE_CPL: return "dma_write_cpl";
	case ODL_LINKD_DEVCTRL: return "devctrl";
	case ODL_LINKD_RESET: return "reset";
	case ODL_LINKD_MEM_MAP: return "mem_map";
	case ODL_LINKD_DEV_INFO: return "dev_info";
	case ODL_LINKD_MMIO_READ_CPL: return "mmio_read_cpl";
	case ODL_LINKD_DMA_READ: return "dma_read";
	case ODL_LINKD_DMA_WRITE: return "dma_write";
	case ODL_LINKD_IRQ: return "irq";
	case ODL_LINKD_LINK_STATE: return "link_state";
	default: return "unknown";
	}
}

/**
 * odl_linkd_msg_init() - zero a message and fill its header.
 * @msg: message to fill
 * @type: enum odl_linkd_type
 * @seq: sender's next sequence number for this connection
 * @ts_ps: sender's simulated time, ps
 * @tag: request id, 0 where unused
 */
static inline void odl_linkd_msg_init(struct odl_linkd_msg *msg,
				      unsigned int type, __u64 seq,
				      __u64 ts_ps, __u64 tag)
{
	memset(msg, 0, sizeof(*msg));
	msg->hdr.type = odl_cpu_le16((__u16)type);
	msg->hdr.seq = odl_cpu_le64(seq);
	msg->hdr.ts_ps = odl_cpu_le64(ts_ps);
	msg->hdr.tag = odl_cpu_le64(tag);
}

/**
 * odl_linkd_hello_init() - fill a HELLO message.
 * @msg: message to fill
 * @seq: sequence number (0: HELLO is the first message)
 * @ts_ps: simulated time, ps
 * @host_id: device: host to attach to; model: accepted id
 * @mode: ODL_LINKD_MODE_*
 * @pid: sender's process id
 */
static inline void odl_linkd_hello_init(struct odl_linkd_msg *msg, __u64 seq,
					__u64 ts_ps, __u32 host_id,
					unsigned int mode, __u32 pid)
{
	odl_linkd_msg_init(msg, ODL_LINKD_HELLO, seq, ts_ps, 0);
	msg->body.hello.magic = odl_cpu_le32(ODL_LINKD_MAGIC);
	msg->body.hello.version_major = odl_cpu_le16(ODL_LINKD_VERSION_MAJOR);
	msg->body.hello.version_minor = odl_cpu_le16(ODL_LINKD_VERSION_MINOR);
	msg->body.hello.host_id = odl_cpu_le32(host_id);
	msg->body.hello.mode = (__u8)mode;
	msg->body.hello.pid = odl_cpu_le32(pid);
}

/* True when all @n bytes at @p are zero. */
static inline int odl_linkd_all_zero(const void *p, size_t n)
{
	const __u8 *b = (const __u8 *)p;
	size_t i;

	for (i = 0; i < n; i++) {
		if (b[i]) {
			return 0;
		}
	}
	return 1;
}

static inline int odl_linkd_type_from(unsigned int type,
				      enum odl_linkd_side side)
{
	if (type == ODL_LINKD_HELLO || type == ODL_LINKD_SYNC ||
	    type == ODL_LINKD_TERMINATE) {
		return 1;
	}
	if (side == ODL_LINKD_SIDE_DEV) {
		return type >= ODL_LINKD_DEV_FIRST && type <= ODL_LINKD_DEV_LAST;
	}
	return type >= ODL_LINKD_MODEL_FIRST && type <= ODL_LINKD_MODEL_LAST;
}

/**
 * odl_linkd_check() - validate one received datagram.
 * @buf: datagram bytes
 * @len: datagram length in bytes
 * @from: which side sent it
 * @out: on success, the message (copied, so @buf needs no alignment)
 *
 * Checks, in order: length, flags, type and direction, payload length,
 * reserved fields, per-type field ranges, HELLO magic and major version.
 * The payload, if any, follows at @buf + ODL_LINKD_MSG_BYTES.
 *
 * Return: ODL_LINKD_OK, or the first problem found.
 */
static inline enum odl_linkd_err odl_linkd_check(const void *buf, size_t len,
						 enum odl_linkd_side from,
						 struct odl_linkd_msg *out)
{
	struct odl_linkd_msg m;
	unsigned int type;
	__u32 plen;
	__u32 want_plen = 0;

	if (len < ODL_LINKD_MSG_BYTES) {
		return ODL_LINKD_ERR_SHORT;
	}
	memcpy(&m, buf, sizeof(m));
	type = odl_le16(m.hdr.type);
	plen = odl_le32(m.hdr.payload_len);
	if (m.hdr.flags) {
		return ODL_LINKD_ERR_FLAGS;
	}
	if (!odl_linkd_type_from(type, from)) {
		return ODL_LINKD_ERR_TYPE;
	}
	if (plen > ODL_LINKD_MAX_PAYLOAD ||
	    len != (size_t)ODL_LINKD_MSG_BYTES + plen) {
		return ODL_LINKD_ERR_LEN;
	}

	switch (type) {
	case ODL_LINKD_HELLO:
		if (m.body.hello.reserved0[0] || m.body.hello.reserved0[1] ||
		    m.body.hello.reserved0[2] || m.body.hello.reserved1) {
			return ODL_LINKD_ERR_RESERVED;
		}
		if (odl_le32(m.body.hello.magic) != ODL_LINKD_MAGIC ||
		    odl_le16(m.body.hello.version_major) !=
			    ODL_LINKD_VERSION_MAJOR) {
			return ODL_LINKD_ERR_HELLO;
		}
		if (m.body.hello.mode > ODL_LINKD_MODE_DET) {
			return ODL_LINKD_ERR_FIELD;
		}
		break;
	case ODL_LINKD_SYNC:
		if (!odl_linkd_all_zero(m.body.raw, sizeof(m.body.raw))) {
			return ODL_LINKD_ERR_RESERVED;
		}
		break;
	case ODL_LINKD_TERMINATE:
		if (!odl_linkd_all_zero(m.body.terminate.reserved,
					sizeof(m.body.terminate.reserved))) {
			return ODL_LINKD_ERR_RESERVED;
		}
		break;
	case ODL_LINKD_MMIO_READ:
	case ODL_LINKD_MMIO_WRITE:
	case ODL_LINKD_MMIO_READ_CPL: {
		unsigned int sz = m.body.mmio.size;

		if (m.body.mmio.reserved0 || m.body.mmio.reserved1 ||
		    (type != ODL_LINKD_MMIO_READ_CPL && m.body.mmio.status) ||
		    (type == ODL_LINKD_MMIO_READ && m.body.mmio.data)) {
			return ODL_LINKD_ERR_RESERVED;
		}
		if ((sz != 1 && sz != 2 && sz != 4 && sz != 8) ||
		    m.body.mmio.bar > 5) {
			return ODL_LINKD_ERR_FIELD;
		}
		break;
	}
	case ODL_LINKD_DMA_READ:
	case ODL_LINKD_DMA_WRITE:
	case ODL_LINKD_DMA_READ_CPL:
	case ODL_LINKD_DMA_WRITE_CPL: {
		__u32 dlen = odl_le32(m.body.dma.len);

		if (m.body.dma.reserved[0] || m.body.dma.reserved[1] ||
		    ((type == ODL_LINKD_DMA_READ || type == ODL_LINKD_DMA_WRITE) &&
		     m.body.dma.status)) {
			return ODL_LINKD_ERR_RESERVED;
		}
		if (dlen == 0 || dlen > ODL_LINKD_MAX_PAYLOAD) {
			return ODL_LINKD_ERR_FIELD;
		}
		if (type == ODL_LINKD_DMA_WRITE) {
			want_plen = dlen;
		} else if (type == ODL_LINKD_DMA_READ_CPL &&
			   odl_le32(m.body.dma.status) == ODL_LINKD_ST_OK) {
			want_plen = dlen;
		}
		break;
	}
	case ODL_LINKD_DEVCTRL:
		if (!odl_linkd_all_zero(m.body.devctrl.reserved,
					sizeof(m.body.devctrl.reserved))) {
			return ODL_LINKD_ERR_RESERVED;
		}
		break;
	case ODL_LINKD_RESET:
		if (!odl_linkd_all_zero(m.body.reset.reserved,
					sizeof(m.body.reset.reserved))) {
			return ODL_LINKD_ERR_RESERVED;
		}
		if (odl_le32(m.body.reset.kind) > ODL_LINKD_RESET_FLR) {
			return ODL_LINKD_ERR_FIELD;
		}
		break;
	case ODL_LINKD_MEM_MAP: {
		__u64 addr = odl_le64(m.body.mem_map.addr);
		__u64 mlen = odl_le64(m.body.mem_map.len);
		__u64 off = odl_le64(m.body.mem_map.fd_offset);

		if (m.body.mem_map.reserved) {
			return ODL_LINKD_ERR_RESERVED;
		}
		if (mlen == 0 || (addr | mlen | off) % ODL_LINKD_MEM_MAP_ALIGN ||
		    addr + mlen < addr || off + mlen < off) {
			return ODL_LINKD_ERR_FIELD;
		}
		break;
	}
	case ODL_LINKD_DEV_INFO:
		if (m.body.dev_info.msix_vectors == 0 ||
		    m.body.dev_info.msix_vectors > 32) {
			return ODL_LINKD_ERR_FIELD;
		}
		break;
	case ODL_LINKD_IRQ:
		if (m.body.irq.reserved0 ||
		    !odl_linkd_all_zero(m.body.irq.reserved1,
					sizeof(m.body.irq.reserved1))) {
			return ODL_LINKD_ERR_RESERVED;
		}
		if (m.body.irq.kind != ODL_LINKD_IRQ_MSIX) {
			return ODL_LINKD_ERR_FIELD;
		}
		break;
	case ODL_LINKD_LINK_STATE:
		if (m.body.link.reserved0[0] || m.body.link.reserved0[1] ||
		    m.body.link.reserved0[2] ||
		    !odl_linkd_all_zero(m.body.link.reserved1,
					sizeof(m.body.link.reserved1))) {
			return ODL_LINKD_ERR_RESERVED;
		}
		if (m.body.link.up > 1) {
			return ODL_LINKD_ERR_FIELD;
		}
		break;
	default:
		return ODL_LINKD_ERR_TYPE;
	}
	if (plen != want_plen) {
		return ODL_LINKD_ERR_LEN;
	}
	if (out) {
		*out = m;
	}
	return ODL_LINKD_OK;
}

#endif /* ODL_WIRE_LINKD_CODEC_H */
