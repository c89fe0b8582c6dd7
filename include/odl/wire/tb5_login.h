/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * odl_tb5 XDomain service messages: the login/logout handshake and session
 * notices exchanged over the Thunderbolt control channel (XDomain packets,
 * PDF 7, like ThunderboltIP's login). Layout only; the one definition.
 *
 * Unlike the other wire headers these dwords are in CPU order: the Linux
 * Thunderbolt control layer converts every dword to big-endian on the way
 * out and back on the way in. Sizes are multiples of 4 and at most 252.
 */
#ifndef ODL_WIRE_TB5_LOGIN_H
#define ODL_WIRE_TB5_LOGIN_H

#include "odl/wire/wire_common.h"

#define ODL_XD_SERVICE_KEY "odinlink" /* property directory key, <= 8 chars */
/*
 * The OdinLink service protocol UUID, 2f1a7c3e-5b0d-4e6a-9c1b-0d1e4f5a6b7c,
 * as a 16-byte initializer in uuid_t (big-endian, RFC 4122) byte order:
 * the kernel wraps it as { .b = ... }, userspace takes it as a __u8[16].
 */
#define ODL_XD_SERVICE_UUID_BYTES                                      \
	{ 0x2f, 0x1a, 0x7c, 0x3e, 0x5b, 0x0d, 0x4e, 0x6a,              \
	  0x9c, 0x1b, 0x0d, 0x1e, 0x4f, 0x5a, 0x6b, 0x7c }
#define ODL_XD_PRTCID 1               /* protocol id in the directory */
#define ODL_XD_PRTCVERS 1             /* protocol version in the directory */
#define ODL_XD_PRTCREVS 0             /* protocol revision in the directory */
#define ODL_XD_VERSION_MAJOR 1        /* login: incompatible changes */
/* login: compatible additions (1: rings, 2: split frames, 3: ping) */
#define ODL_XD_VERSION_MINOR 3

/* Frame PDFs on the DMA path: a whole OdinLink frame (header first). */
#define ODL_XD_PDF_SOF 1
#define ODL_XD_PDF_EOF 2
/*
 * (1.2, ODL_XD_FEAT_SPLIT) a raw frame: only the payload of the split DATA
 * header (ODL_FRAME_F_SPLIT) that came right before it on the same ring,
 * 1..ODL_FRAME_MAX_PAYLOAD bytes.
 */
#define ODL_XD_PDF_RAW_SOF 3
#define ODL_XD_PDF_RAW_EOF 4

/* Capability bits (odl_xd_login.features). */
#define ODL_XD_FEAT_CREDITS (1u << 0) /* OdinLink frame credits (always) */
#define ODL_XD_FEAT_RINGS (1u << 1)   /* (1.1) several ring pairs: rings fields */
/*
 * (1.2) the sender of this LOGIN / LOGIN_RESP takes split frames (a DATA
 * header with ODL_FRAME_F_SPLIT, then a raw frame) and reassembles them:
 * its peer may send them. A peer that does not know the bit ignores it
 * (1.0 and 1.1 check only ODL_XD_FEAT_CREDITS).
 */
#define ODL_XD_FEAT_SPLIT (1u << 2)
/*
 * (1.3) the sender answers ODL_XD_PING; a peer without the bit is never
 * pinged (it would count the request as malformed and not answer).
 */
#define ODL_XD_FEAT_PING (1u << 3)
#define ODL_XD_FEAT_KNOWN (ODL_XD_FEAT_CREDITS | ODL_XD_FEAT_RINGS | \
			   ODL_XD_FEAT_SPLIT | ODL_XD_FEAT_PING)

/*
 * (1.1) Ring pairs per peer: each side offers 1..ODL_XD_RINGS_MAX and both
 * use the smaller count. Ring i carries the frames of streams s with
 * s % count == i; a peer without ODL_XD_FEAT_RINGS gets one ring and its
 * rings fields are reserved (zero), as in 1.0.
 */
#define ODL_XD_RINGS_MAX 4
/* odl_xd_login.transmit_path_ext[i / 2]: HopID of ring i + 1, 16 bits each */
#define ODL_XD_PATH_EXT_BITS 16
#define ODL_XD_PATH_EXT_MASK 0xffffu

/* Length of the packet after the first 3 dwords, in dwords. */
#define ODL_XD_LENGTH_MASK 0x3fu
#define ODL_XD_SN_MASK (3u << 27)
#define ODL_XD_SN_SHIFT 27

enum odl_xd_type {
	ODL_XD_LOGIN = 1,      /* odl_xd_login; answered with ODL_XD_LOGIN_RESP */
	ODL_XD_LOGIN_RESP = 2, /* odl_xd_login_resp */
	ODL_XD_LOGOUT = 3,     /* odl_xd_hdr only; answered with ODL_XD_STATUS */
	ODL_XD_PORT = 4,       /* odl_xd_port; answered with ODL_XD_STATUS */
	ODL_XD_STATUS = 5,     /* odl_xd_status */
	ODL_XD_PING = 6,       /* (1.3) odl_xd_hdr only; answered with ODL_XD_STATUS */
};

/* odl_xd_login_resp.status / odl_xd_status.status */
#define ODL_XD_ST_OK 0
#define ODL_XD_ST_VERSION 1 /* login major version not supported */
#define ODL_XD_ST_INVAL 2   /* request refused: malformed or out of range */

/**
 * struct odl_xd_hdr - header of every odl_tb5 XDomain packet.
 * @route_hi: route to the peer XDomain, high dword (bit 31 masked on receive)
 * @route_lo: route, low dword
 * @length_sn: bits 5:0 dwords after the first 3; bits 28:27 sequence
 * @uuid: the OdinLink service protocol UUID
 * @initiator_uuid: sender's domain UUID
 * @target_uuid: receiver's domain UUID
 * @type: enum odl_xd_type
 * @command_id: sender's request counter; a response repeats the request's
 */
struct odl_xd_hdr {
	__u32 route_hi;
	__u32 route_lo;
	__u32 length_sn;
	__u8 uuid[16];
	__u8 initiator_uuid[16];
	__u8 target_uuid[16];
	__u32 type;
	__u32 command_id;
};
ODL_WIRE_SIZE(struct odl_xd_hdr, 68);

/**
 * struct odl_xd_login - LOGIN: what the sender offers.
 * @hdr: type ODL_XD_LOGIN
 * @version_major: ODL_XD_VERSION_MAJOR
 * @version_minor: ODL_XD_VERSION_MINOR
 * @features: ODL_XD_FEAT_* the sender supports
 * @ring_size: sender's descriptors per ring, power of two
 * @frame_bytes: largest frame the sender accepts (ODL_FRAME_MAX_BYTES)
 * @transmit_path: HopID the sender transmits on (ring 0), 8..remote max HopID
 * @rings: (ODL_XD_FEAT_RINGS) ring pairs the sender offers,
 *	1..ODL_XD_RINGS_MAX; otherwise zero
 * @transmit_path_ext: (ODL_XD_FEAT_RINGS) HopIDs the sender transmits on
 *	for rings 1..@rings - 1, all different from each other and from
 *	@transmit_path: ring i + 1 in bits (i % 2) * 16 + 15..(i % 2) * 16 of
 *	word i / 2 (shifts of a dword: byte order safe); unused bits zero
 */
struct odl_xd_login {
	struct odl_xd_hdr hdr;
	__u16 version_major;
	__u16 version_minor;
	__u32 features;
	__u32 ring_size;
	__u32 frame_bytes;
	__u32 transmit_path;
	__u32 rings;
	__u32 transmit_path_ext[2];
};
ODL_WIRE_SIZE(struct odl_xd_login, 100);

/**
 * struct odl_xd_login_resp - LOGIN_RESP: the responder's terms.
 * @hdr: type ODL_XD_LOGIN_RESP
 * @status: ODL_XD_ST_*
 * @version_major: responder's ODL_XD_VERSION_MAJOR
 * @version_minor: responder's ODL_XD_VERSION_MINOR
 * @features: ODL_XD_FEAT_* the responder supports
 * @ring_size: responder's descriptors per ring
 * @frame_bytes: largest frame the responder accepts
 * @rings: ring pairs the responder offers (1..ODL_XD_RINGS_MAX) when both
 *	the LOGIN and the responder set ODL_XD_FEAT_RINGS; otherwise zero
 * @reserved: zero
 */
struct odl_xd_login_resp {
	struct odl_xd_hdr hdr;
	__u32 status;
	__u16 version_major;
	__u16 version_minor;
	__u32 features;
	__u32 ring_size;
	__u32 frame_bytes;
	__u32 rings;
	__u32 reserved[2];
};
ODL_WIRE_SIZE(struct odl_xd_login_resp, 100);

/**
 * struct odl_xd_port - PORT: the sender's device was opened or closed.
 * @hdr: type ODL_XD_PORT
 * @open: 1 opened, 0 closed
 * @session: sender's open counter
 */
struct odl_xd_port {
	struct odl_xd_hdr hdr;
	__u32 open;
	__u32 session;
};
ODL_WIRE_SIZE(struct odl_xd_port, 76);

/**
 * struct odl_xd_status - STATUS: answer to LOGOUT and PORT.
 * @hdr: type ODL_XD_STATUS
 * @status: ODL_XD_ST_*
 */
struct odl_xd_status {
	struct odl_xd_hdr hdr;
	__u32 status;
};
ODL_WIRE_SIZE(struct odl_xd_status, 72);

#endif /* ODL_WIRE_TB5_LOGIN_H */
