/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * libodl `sim` backend <-> model server (odl-linkd --sim) protocol: layout
 * only, the one definition; docs/sim.md walks it. Checks live beside it in
 * sim_codec.h.
 *
 * Transport: one AF_UNIX SOCK_SEQPACKET connection per endpoint. Each
 * datagram is one struct odl_sim_hdr (32 bytes) followed by hdr.len bytes:
 * an OdinLink frame (frame.h) for FRAME, a struct odl_sim_hello for HELLO,
 * nothing otherwise.
 *
 * The server runs the SystemC model paced to the wall clock. A client sends
 * each frame as FRAME stamped with its CLOCK_MONOTONIC time; the model
 * posts it on that host's NHI at that time (or at once, when the stamp is
 * already past in model time) and decides when it reaches the peer host;
 * the server then hands the bytes to the peer client as FRAME stamped with
 * the wall time it was due. Frames the model loses (bit errors, unplug) are
 * never handed over; their sender gets its window back all the same.
 */
#ifndef ODL_WIRE_SIM_H
#define ODL_WIRE_SIM_H

#include "odl/wire/wire_common.h"

#define ODL_SIM_MAGIC 0x4d53444fu /* "ODSM" little-endian, in HELLO */
#define ODL_SIM_VERSION 1u

#define ODL_SIM_HDR_BYTES 32u
#define ODL_SIM_MAX_FRAME 4096u /* ODL_FRAME_MAX_BYTES */
#define ODL_SIM_MAX_DATAGRAM (ODL_SIM_HDR_BYTES + ODL_SIM_MAX_FRAME)

/*
 * Frames a client may have handed to the server that were not yet
 * delivered or lost (ACKed): the model's data ring size. The server drops
 * a client that sends more.
 */
#define ODL_SIM_WINDOW 256u

/**
 * enum odl_sim_type - message types.
 * HELLO: first message each way (client: which end it wants; server: which
 *	end it got, the link's rate and profile).
 * FRAME: client -> server: a frame to send, @stamp_ns = when it was sent;
 *	server -> client: a frame that arrived, @stamp_ns = when it was due.
 * ACK: server -> client: @arg frames of this client left the window
 *	(delivered to the peer or lost in the model).
 * LINK: server -> client: @arg ODL_SIM_LINK_* bits, sent after HELLO and
 *	whenever one changes: the cable's link is up, the other end is held.
 * BYE: either way: orderly close; the sender closes next.
 */
enum odl_sim_type {
	ODL_SIM_HELLO = 1,
	ODL_SIM_FRAME = 2,
	ODL_SIM_ACK = 3,
	ODL_SIM_LINK = 4,
	ODL_SIM_BYE = 5,
};

/**
 * struct odl_sim_hdr - first 32 bytes of every message.
 * @type: enum odl_sim_type
 * @flags: zero
 * @len: bytes after the header (FRAME: 32..4096; HELLO: 64; else 0)
 * @seq: per-direction message counter, first 0
 * @stamp_ns: CLOCK_MONOTONIC ns (FRAME: sent / due; else the sender's now)
 * @arg: ACK: frames acknowledged; LINK: ODL_SIM_LINK_* bits; else 0
 */
struct odl_sim_hdr {
	__le16 type;
	__le16 flags;
	__le32 len;
	__le64 seq;
	__le64 stamp_ns;
	__le64 arg;
};
ODL_WIRE_SIZE(struct odl_sim_hdr, 32);

/**
 * struct odl_sim_hello - HELLO payload.
 * @magic: ODL_SIM_MAGIC
 * @version: ODL_SIM_VERSION; a different one is refused (BYE)
 * @end: client: 0 = A, 1 = B, 0xff = whichever is free; server: the end
 *	the client got
 * @reserved0: zero
 * @rate_mbps: server: the cable's rate each way, Mb/s; client: 0
 * @window: server: ODL_SIM_WINDOW; client: 0
 * @pid: sender's process id
 * @profile: server: "<platform profile> <cable>", NUL-padded; client: zero
 */
struct odl_sim_hello {
	__le32 magic;
	__le16 version;
	__u8 end;
	__u8 reserved0;
	__le32 rate_mbps;
	__le32 window;
	__le32 pid;
	__le32 reserved1;
	char profile[40];
};
ODL_WIRE_SIZE(struct odl_sim_hello, 64);

#define ODL_SIM_END_ANY 0xffu

/* LINK @arg bits */
#define ODL_SIM_LINK_UP (1u << 0)   /* the modelled cable's link is trained */
#define ODL_SIM_LINK_PEER (1u << 1) /* a program holds the other end */
#define ODL_SIM_LINK_ALL (ODL_SIM_LINK_UP | ODL_SIM_LINK_PEER)

#endif /* ODL_WIRE_SIM_H */
