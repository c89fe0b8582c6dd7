/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Encode, decode and validate OdinLink frames (layout in frame.h).
 * Static inline C, shared by userlib, the model and the kernel module, so
 * the userspace tests cover the code the kernel runs. Decoders check the
 * length before anything else and never trust a field they have not checked.
 * The payload checksum (CRC32C) is computed by each side's own routine.
 */
#ifndef ODL_WIRE_FRAME_CODEC_H
#define ODL_WIRE_FRAME_CODEC_H

#include "odl/wire/frame.h"

#ifndef __KERNEL__
#include <string.h>
#endif

/**
 * struct odl_frame_info - a frame header in host byte order.
 * Field meanings are those of struct odl_frame_hdr.
 */
struct odl_frame_info {
	__u8 type;
	__u8 flags;
	__u16 stream;
	__u16 len;
	__u32 seq;
	__u32 tag;
	__u32 msg_len;
	__u32 offset;
	__u32 credit;
	__u32 csum;
};

/**
 * enum odl_frame_err - why a frame was refused. Receivers count each kind.
 */
enum odl_frame_err {
	ODL_FRAME_OK = 0,
	ODL_FRAME_ERR_SHORT,    /* buffer shorter than the header */
	ODL_FRAME_ERR_LEN,      /* @len too large or beyond the buffer */
	ODL_FRAME_ERR_TYPE,     /* unknown frame type */
	ODL_FRAME_ERR_FLAGS,    /* unknown flag bits, or flags wrong for type */
	ODL_FRAME_ERR_STREAM,   /* stream id not negotiated */
	ODL_FRAME_ERR_RESERVED, /* a reserved field is not zero */
	ODL_FRAME_ERR_RANGE,    /* offset/len/msg_len inconsistent */
	ODL_FRAME_ERR_HELLO,    /* malformed HELLO payload */
	ODL_FRAME_ERR_COUNT
};

static inline const char *odl_frame_err_name(enum odl_frame_err err)
{
	switch (err) {
	case ODL_FRAME_OK: return "ok";
	case ODL_FRAME_ERR_SHORT: return "short";
	case ODL_FRAME_ERR_LEN: return "length";
	case ODL_FRAME_ERR_TYPE: return "type";
	case ODL_FRAME_ERR_FLAGS: return "flags";
	case ODL_FRAME_ERR_STREAM: return "stream";
	case ODL_FRAME_ERR_RESERVED: return "reserved";
	case ODL_FRAME_ERR_RANGE: return "range";
	case ODL_FRAME_ERR_HELLO: return "hello";
	default: return "unknown";
	}
}

/**
 * odl_frame_encode() - write @info as a wire header into @hdr.
 * The caller places @info->len payload bytes right after the header.
 */
static inline void odl_frame_encode(struct odl_frame_hdr *hdr,
				    const struct odl_frame_info *info)
{
	hdr->type = info->type;
	hdr->flags = info->flags;
	hdr->stream = odl_cpu_le16(info->stream);
	hdr->len = odl_cpu_le16(info->len);
	hdr->reserved0 = 0;
	hdr->seq = odl_cpu_le32(info->seq);
	hdr->tag = odl_cpu_le32(info->tag);
	hdr->msg_len = odl_cpu_le32(info->msg_len);
	hdr->offset = odl_cpu_le32(info->offset);
	hdr->credit = odl_cpu_le32(info->credit);
	hdr->csum = odl_cpu_le32(info->csum);
}

/* odl_frame_decode_opt() options */
/*
 * Accept ODL_FRAME_F_SPLIT on DATA: the header's @len payload bytes are
 * not in @buf (its first ODL_FRAME_HDR_BYTES are checked; the caller checks
 * that the frame is exactly a header). Only the odl_tb5 module passes it.
 */
#define ODL_FRAME_DEC_SPLIT (1u << 0)
#define ODL_FRAME_DEC_KNOWN ODL_FRAME_DEC_SPLIT

/**
 * odl_frame_decode_opt() - check and decode the frame in @buf.
 * @buf: received bytes (header first)
 * @buf_len: number of bytes actually received
 * @streams: negotiated number of streams (stream ids must be below it)
 * @opts: ODL_FRAME_DEC_* (0 for everything but the odl_tb5 transport);
 *	unknown bits refuse every frame (ODL_FRAME_ERR_FLAGS)
 * @info: filled on success
 *
 * Checks, in order: header fits, payload fits in the buffer and in a frame,
 * type known, flags known and legal for the type, reserved zero, stream in
 * range, and for DATA that offset + len lies within msg_len, SOM starts at
 * offset 0 and EOM ends at msg_len.
 *
 * Return: ODL_FRAME_OK or the first check that failed.
 */
static inline enum odl_frame_err
odl_frame_decode_opt(const void *buf, size_t buf_len, unsigned int streams,
		     unsigned int opts, struct odl_frame_info *info)
{
	struct odl_frame_hdr hdr;
	__u8 known = ODL_FRAME_F_KNOWN;
	size_t inline_len;
	__u64 end;

	if (buf_len < sizeof(hdr))
		return ODL_FRAME_ERR_SHORT;
	memcpy(&hdr, buf, sizeof(hdr));
	info->type = hdr.type;
	info->flags = hdr.flags;
	info->stream = odl_le16(hdr.stream);
	info->len = odl_le16(hdr.len);
	info->seq = odl_le32(hdr.seq);
	info->tag = odl_le32(hdr.tag);
	info->msg_len = odl_le32(hdr.msg_len);
	info->offset = odl_le32(hdr.offset);
	info->credit = odl_le32(hdr.credit);
	info->csum = odl_le32(hdr.csum);

	if (opts & ~ODL_FRAME_DEC_KNOWN)
		return ODL_FRAME_ERR_FLAGS;
	/* A split header's payload comes in the next frame. */
	if ((opts & ODL_FRAME_DEC_SPLIT) && info->type == ODL_FRAME_DATA)
		known |= ODL_FRAME_F_SPLIT;
	inline_len = (info->flags & known & ODL_FRAME_F_SPLIT) ? 0 : info->len;
	if (info->len > ODL_FRAME_MAX_PAYLOAD ||
	    sizeof(hdr) + inline_len > buf_len)
		return ODL_FRAME_ERR_LEN;
	if (info->flags & ~known)
		return ODL_FRAME_ERR_FLAGS;
	if (hdr.reserved0)
		return ODL_FRAME_ERR_RESERVED;

	switch (info->type) {
	case ODL_FRAME_HELLO:
		if (info->flags || info->stream)
			return ODL_FRAME_ERR_FLAGS;
		if (info->len != sizeof(struct odl_hello))
			return ODL_FRAME_ERR_LEN;
		return ODL_FRAME_OK;
	case ODL_FRAME_GOODBYE:
		if (info->flags || info->stream || info->len)
			return ODL_FRAME_ERR_FLAGS;
		return ODL_FRAME_OK;
	case ODL_FRAME_CREDIT:
		if (info->flags != ODL_FRAME_F_CREDIT || info->len)
			return ODL_FRAME_ERR_FLAGS;
		if (info->stream >= streams)
			return ODL_FRAME_ERR_STREAM;
		return ODL_FRAME_OK;
	case ODL_FRAME_LINK_CREDIT:
		if (info->flags != ODL_FRAME_F_CREDIT || info->stream ||
		    info->len)
			return ODL_FRAME_ERR_FLAGS;
		return ODL_FRAME_OK;
	case ODL_FRAME_ACK:
	case ODL_FRAME_NAK:
		if (info->flags != ODL_FRAME_F_CREDIT || info->len)
			return ODL_FRAME_ERR_FLAGS;
		if (info->stream >= streams)
			return ODL_FRAME_ERR_STREAM;
		return ODL_FRAME_OK;
	case ODL_FRAME_PROBE:
		if (info->flags || info->len)
			return ODL_FRAME_ERR_FLAGS;
		if (info->stream >= streams)
			return ODL_FRAME_ERR_STREAM;
		return ODL_FRAME_OK;
	case ODL_FRAME_RNDV_DONE:
		if (info->flags)
			return ODL_FRAME_ERR_FLAGS;
		if (info->len != sizeof(struct odl_rndv_done))
			return ODL_FRAME_ERR_LEN;
		if (info->stream >= streams)
			return ODL_FRAME_ERR_STREAM;
		return ODL_FRAME_OK;
	case ODL_FRAME_RNDV_SPLIT:
	case ODL_FRAME_RNDV_WROTE:
		if (info->flags)
			return ODL_FRAME_ERR_FLAGS;
		if (info->len != (info->type == ODL_FRAME_RNDV_SPLIT ?
				  sizeof(struct odl_rndv_split) :
				  sizeof(struct odl_rndv_wrote)))
			return ODL_FRAME_ERR_LEN;
		if (info->stream >= streams)
			return ODL_FRAME_ERR_STREAM;
		return ODL_FRAME_OK;
	case ODL_FRAME_RNDV:
		/* One frame standing for the whole message; never checksummed. */
		if ((info->flags & ~ODL_FRAME_F_CREDIT) !=
		    (ODL_FRAME_F_SOM | ODL_FRAME_F_EOM))
			return ODL_FRAME_ERR_FLAGS;
		if (info->len != sizeof(struct odl_rndv))
			return ODL_FRAME_ERR_LEN;
		if (info->stream >= streams)
			return ODL_FRAME_ERR_STREAM;
		if (info->offset)
			return ODL_FRAME_ERR_RANGE;
		return ODL_FRAME_OK;
	case ODL_FRAME_DATA:
		if (info->stream >= streams)
			return ODL_FRAME_ERR_STREAM;
		end = (__u64)info->offset + info->len;
		if (end > info->msg_len)
			return ODL_FRAME_ERR_RANGE;
		if ((info->flags & ODL_FRAME_F_SOM) && info->offset != 0)
			return ODL_FRAME_ERR_RANGE;
		if ((info->flags & ODL_FRAME_F_EOM) && end != info->msg_len)
			return ODL_FRAME_ERR_RANGE;
		/* Only the last frame of a message may be short. */
		if (!(info->flags & ODL_FRAME_F_EOM) &&
		    info->len != ODL_FRAME_MAX_PAYLOAD)
			return ODL_FRAME_ERR_RANGE;
		return ODL_FRAME_OK;
	default:
		return ODL_FRAME_ERR_TYPE;
	}
}

/* odl_frame_decode_opt() without options: what every endpoint uses. */
static inline enum odl_frame_err
odl_frame_decode(const void *buf, size_t buf_len, unsigned int streams,
		 struct odl_frame_info *info)
{
	return odl_frame_decode_opt(buf, buf_len, streams, 0, info);
}

/**
 * odl_hello_check() - validate a HELLO payload of sizeof(struct odl_hello).
 * Return: ODL_FRAME_OK, or ODL_FRAME_ERR_HELLO for a bad magic, a foreign
 * major version, out-of-range limits (a link_window without
 * ODL_FEAT_LINK_CREDIT among them) or non-zero reserved fields.
 */
static inline enum odl_frame_err odl_hello_check(const struct odl_hello *h)
{
	__u16 streams = odl_le16(h->streams);
	__u32 window = odl_le32(h->window);
	__u32 link_window = odl_le32(h->link_window);

	if (odl_le32(h->magic) != ODL_FRAME_MAGIC ||
	    odl_le16(h->version_major) != ODL_PROTO_VERSION_MAJOR)
		return ODL_FRAME_ERR_HELLO;
	if (streams == 0 || streams > ODL_MAX_STREAMS)
		return ODL_FRAME_ERR_HELLO;
	if (window == 0 || window > ODL_MAX_WINDOW_FRAMES)
		return ODL_FRAME_ERR_HELLO;
	if (odl_le16(h->max_payload) != ODL_FRAME_MAX_PAYLOAD)
		return ODL_FRAME_ERR_HELLO;
	if (link_window > ODL_MAX_LINK_WINDOW_FRAMES ||
	    (link_window && !(odl_le32(h->features) & ODL_FEAT_LINK_CREDIT)))
		return ODL_FRAME_ERR_HELLO;
	if (h->reserved1)
		return ODL_FRAME_ERR_HELLO;
	return ODL_FRAME_OK;
}

/**
 * odl_msg_frames() - number of frames a message of @msg_len bytes takes.
 * A zero-length message still takes one frame.
 */
static inline __u64 odl_msg_frames(__u64 msg_len)
{
	if (msg_len == 0)
		return 1;
	return (msg_len + ODL_FRAME_MAX_PAYLOAD - 1) / ODL_FRAME_MAX_PAYLOAD;
}

#endif /* ODL_WIRE_FRAME_CODEC_H */
