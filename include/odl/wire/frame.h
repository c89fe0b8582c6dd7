/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * OdinLink host-to-host frame protocol: layout only. This is the one
 * definition; docs/protocol.md walks it field by field. Encoding, decoding
 * and validation live beside it in frame_codec.h.
 *
 * A frame is one NHI ring buffer (at most 4 KiB): a 32-byte header followed
 * by at most ODL_FRAME_MAX_PAYLOAD payload bytes. Messages of any size are
 * cut into frames; each frame says where its payload sits in the message.
 */
#ifndef ODL_WIRE_FRAME_H
#define ODL_WIRE_FRAME_H

#include "odl/wire/wire_common.h"

#define ODL_FRAME_MAGIC 0x314c444fu /* "ODL1" little-endian, in HELLO */
#define ODL_PROTO_VERSION_MAJOR 1   /* incompatible changes */
#define ODL_PROTO_VERSION_MINOR 2   /* compatible additions */

#define ODL_FRAME_MAX_BYTES 4096u /* whole frame: header + payload */
#define ODL_FRAME_HDR_BYTES 32u
#define ODL_FRAME_MAX_PAYLOAD (ODL_FRAME_MAX_BYTES - ODL_FRAME_HDR_BYTES)
#define ODL_MAX_STREAMS 64u        /* stream ids 0..63 */
#define ODL_MAX_WINDOW_FRAMES 65536u /* per-stream receive credit limit */
/* HELLO.link_window limit: every stream's window at once */
#define ODL_MAX_LINK_WINDOW_FRAMES (ODL_MAX_STREAMS * ODL_MAX_WINDOW_FRAMES)

/**
 * enum odl_frame_type - what a frame carries.
 * Control types are 0x00-0x3f, data types 0x40 and up; gaps are reserved
 * and a receiver counts and drops any type it does not know.
 */
enum odl_frame_type {
	ODL_FRAME_HELLO = 0x01,   /* first frame each way: struct odl_hello */
	ODL_FRAME_CREDIT = 0x02,  /* credit return only, no payload */
	ODL_FRAME_GOODBYE = 0x03, /* orderly close; no frames follow */
	ODL_FRAME_LINK_CREDIT = 0x04, /* link-wide credit return (1.1) */
	ODL_FRAME_RNDV_DONE = 0x05, /* rendezvous finished: odl_rndv_done (1.1) */
	ODL_FRAME_RNDV_SPLIT = 0x06, /* receiver: write this part: odl_rndv_split (1.1) */
	ODL_FRAME_RNDV_WROTE = 0x07, /* sender: part written: odl_rndv_wrote (1.1) */
	ODL_FRAME_ACK = 0x08,     /* receiver: @seq next expected, @credit (1.2) */
	ODL_FRAME_NAK = 0x09,     /* receiver: @seq is missing, resend from it (1.2) */
	ODL_FRAME_PROBE = 0x0a,   /* sender: @seq next new frame; answer ACK/NAK (1.2) */
	ODL_FRAME_DATA = 0x40,    /* a piece of a tagged message */
	ODL_FRAME_RNDV = 0x41,    /* a whole message by reference: odl_rndv (1.1) */
};

/* odl_frame_hdr.flags */
#define ODL_FRAME_F_SOM (1u << 0)    /* first frame of a message */
#define ODL_FRAME_F_EOM (1u << 1)    /* last frame of a message */
#define ODL_FRAME_F_CSUM (1u << 2)   /* @csum holds CRC32C of the payload */
#define ODL_FRAME_F_CREDIT (1u << 3) /* @credit is valid */
#define ODL_FRAME_F_KNOWN (ODL_FRAME_F_SOM | ODL_FRAME_F_EOM | \
			   ODL_FRAME_F_CSUM | ODL_FRAME_F_CREDIT)
/*
 * Transport only (odl_tb5 with ODL_XD_FEAT_SPLIT, never seen by userspace):
 * a DATA header frame of exactly ODL_FRAME_HDR_BYTES whose @len payload
 * bytes follow in the next frame of the same ring, a raw frame (payload
 * only, PDFs ODL_XD_PDF_RAW_SOF/EOF). The receiving module puts the two
 * together into one ordinary frame with this flag cleared. Not in
 * ODL_FRAME_F_KNOWN: odl_frame_decode() refuses it; only
 * odl_frame_decode_opt() with ODL_FRAME_DEC_SPLIT takes it.
 */
#define ODL_FRAME_F_SPLIT (1u << 4)

/**
 * struct odl_frame_hdr - header at the start of every frame.
 * @type: enum odl_frame_type, set by the sender
 * @flags: ODL_FRAME_F_*; unknown bits make the frame invalid
 * @stream: stream id, < negotiated stream count (0 for HELLO/GOODBYE)
 * @len: payload bytes following this header, <= ODL_FRAME_MAX_PAYLOAD
 *	(with ODL_FRAME_F_SPLIT: in the next frame instead)
 * @reserved0: zero
 * @seq: per-stream, per-direction frame counter, starts at 0, wraps at 2^32
 * @tag: DATA: the message's user tag; else 0
 * @msg_len: DATA: total message bytes (same in every frame of a message)
 * @offset: DATA: byte offset of this payload within the message
 * @credit: with F_CREDIT: cumulative frames the sender of this frame has
 *	consumed from the peer on @stream (the peer may send up to
 *	@credit + window frames in total); wraps at 2^32. In LINK_CREDIT
 *	(stream 0): cumulative data frames, all streams together, that the
 *	sender of this frame has taken off its transport and given back to
 *	it (the peer may have up to @credit + link_window in flight)
 * @csum: with F_CSUM: CRC32C (Castagnoli) of the payload bytes
 */
struct odl_frame_hdr {
	__u8 type;
	__u8 flags;
	__le16 stream;
	__le16 len;
	__le16 reserved0;
	__le32 seq;
	__le32 tag;
	__le32 msg_len;
	__le32 offset;
	__le32 credit;
	__le32 csum;
};
ODL_WIRE_SIZE(struct odl_frame_hdr, ODL_FRAME_HDR_BYTES);

/* odl_hello.features */
#define ODL_FEAT_CSUM (1u << 0) /* sender may set ODL_FRAME_F_CSUM */
/* 1.1: sender obeys the peer's link_window and understands LINK_CREDIT */
#define ODL_FEAT_LINK_CREDIT (1u << 1)
/*
 * 1.1: sender can take part in single-copy rendezvous (RNDV/RNDV_DONE): the
 * two ends share one kernel and each may read the other's memory (the
 * loopback backend only). Used when both HELLOs carry it.
 */
#define ODL_FEAT_RNDV (1u << 2)
/*
 * 1.1: with ODL_FEAT_RNDV, sender answers RNDV_SPLIT (writes the asked part
 * of its message into the receiver with process_vm_writev(2), answers
 * RNDV_WROTE). A receiver sends RNDV_SPLIT only to a peer that offers it.
 */
#define ODL_FEAT_RNDV_SPLIT (1u << 3)
/*
 * 1.2: frames may be lost in transit (a damaged frame the NHI drops, a link
 * that retrains): the sender keeps every DATA frame until the receiver
 * acknowledges it (ACK, NAK, or @credit) and resends from the first missing
 * one on NAK; it asks with PROBE when no acknowledgement comes. Used when
 * both HELLOs carry it; then rendezvous is not used.
 */
#define ODL_FEAT_RETX (1u << 4)

/**
 * struct odl_hello - payload of the HELLO frame, the first frame each way.
 * Each side states what it accepts; the effective values are the minimum of
 * both sides' (streams), or the receiver's own (window, link_window,
 * max_msg_bytes).
 * @magic: ODL_FRAME_MAGIC
 * @version_major: ODL_PROTO_VERSION_MAJOR; a different major is refused
 * @version_minor: ODL_PROTO_VERSION_MINOR
 * @features: ODL_FEAT_* the sender supports
 * @max_payload: largest DATA payload the sender accepts, bytes
 * @streams: number of streams the sender offers, 1..ODL_MAX_STREAMS
 * @window: frames the sender will buffer per stream (initial credit)
 * @link_window: data frames (all streams together) the sender can take in
 *	before its transport runs out of receive buffers; the peer keeps
 *	fewer in flight, counting LINK_CREDIT returns. 0: no link limit (and
 *	always 0 without ODL_FEAT_LINK_CREDIT; was reserved0 in 1.0, so a 1.0
 *	peer refuses a HELLO where it is not 0)
 * @max_msg_bytes: largest message the sender will receive, bytes
 * @host_id: sender's host identifier (opaque; shown in peer info)
 * @pid: sender's process id, 0 if not meaningful
 * @reserved1: zero
 * @name: sender's node name, NUL-padded, not necessarily NUL-terminated
 */
struct odl_hello {
	__le32 magic;
	__le16 version_major;
	__le16 version_minor;
	__le32 features;
	__le16 max_payload;
	__le16 streams;
	__le32 window;
	__le32 link_window;
	__le64 max_msg_bytes;
	__le64 host_id;
	__le32 pid;
	__le32 reserved1;
	char name[64];
};
ODL_WIRE_SIZE(struct odl_hello, 112);

/**
 * struct odl_rndv - payload of RNDV: a whole message left in the sender's
 * memory for the receiver to copy (process_vm_readv(2)). The header is a
 * DATA header of one frame (SOM|EOM, offset 0, @msg_len the message's size,
 * seq and credits counted as one DATA frame).
 * @addr: the message's address in the sender's address space
 * @cookie_addr: address of a 64-bit word in the sender that holds @cookie
 *	while the message may be read; the sender changes it when the send is
 *	canceled, and a receiver that sees another value after copying must
 *	not use the copy
 * @cookie: names this rendezvous; RNDV_DONE repeats it
 */
struct odl_rndv {
	__le64 addr;
	__le64 cookie_addr;
	__le64 cookie;
};
ODL_WIRE_SIZE(struct odl_rndv, 24);

/* odl_rndv_done.status */
enum odl_rndv_status {
	ODL_RNDV_COPIED = 0,     /* copied, or dropped by the receiver: done */
	ODL_RNDV_RESEND = 1,     /* not copied: send it as DATA frames next */
	ODL_RNDV_RESEND_OFF = 2, /* as RESEND, and send no more RNDV */
};

/**
 * struct odl_rndv_done - payload of RNDV_DONE, the receiver's answer to an
 * RNDV on the same stream (the sender sends nothing more on that stream
 * until it comes).
 * @cookie: the RNDV's cookie
 * @status: enum odl_rndv_status
 * @reserved: zero
 */
struct odl_rndv_done {
	__le64 cookie;
	__le32 status;
	__le32 reserved;
};
ODL_WIRE_SIZE(struct odl_rndv_done, 16);

/**
 * struct odl_rndv_split - payload of RNDV_SPLIT, a receiver's first answer
 * to an RNDV it matched (instead of RNDV_DONE, which still ends the
 * rendezvous): it copies [0, @split) itself and asks the sender to write
 * [@split, @end) of the message to @addr + @split in the receiver at once.
 * The sender answers RNDV_WROTE once it wrote or failed, and writes nothing
 * after that.
 * @cookie: the RNDV's cookie
 * @addr: the receive buffer's address in the receiver's address space
 * @split: first byte the sender writes, <= @end
 * @end: bytes of the message that fit the receive buffer, <= msg_len
 */
struct odl_rndv_split {
	__le64 cookie;
	__le64 addr;
	__le32 split;
	__le32 end;
};
ODL_WIRE_SIZE(struct odl_rndv_split, 24);

/* odl_rndv_wrote.status */
enum odl_rndv_wrote_status {
	ODL_RNDV_WROTE_OK = 0,     /* all of [split, end) written */
	ODL_RNDV_WROTE_FAILED = 1, /* not (or partly) written: receiver copies it */
};

/**
 * struct odl_rndv_wrote - payload of RNDV_WROTE, the sender's answer to
 * RNDV_SPLIT; the rendezvous then waits for RNDV_DONE as before.
 * @cookie: the RNDV's cookie
 * @status: enum odl_rndv_wrote_status
 * @reserved: zero
 */
struct odl_rndv_wrote {
	__le64 cookie;
	__le32 status;
	__le32 reserved;
};
ODL_WIRE_SIZE(struct odl_rndv_wrote, 16);

#endif /* ODL_WIRE_FRAME_H */
