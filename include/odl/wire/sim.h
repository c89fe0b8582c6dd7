/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * libodl `sim` backend <-> model server (odl-linkd --sim) protocol: layout
 * only, the one definition; docs/sim.md walks it. Checks live beside it in
 * sim_codec.h.
 *
 * Two channels per program (client):
 * - a control connection, AF_UNIX SOCK_SEQPACKET: each datagram is one
 *   struct odl_sim_hdr (32 bytes) followed by hdr.len bytes (a struct
 *   odl_sim_hello for HELLO, nothing otherwise);
 * - frame rings in a memfd the client creates and hands over with its HELLO
 *   (SCM_RIGHTS): struct odl_sim_shm, then ODL_SIM_SLOTS frame slots towards
 *   the server, then ODL_SIM_SLOTS descriptors towards the client. Single
 *   producer, single consumer each; a frame costs no system call.
 *
 * The server runs the SystemC model paced to the wall clock. A client puts
 * each frame in its ring stamped with its CLOCK_MONOTONIC time; the model
 * posts it on that host's NHI at that time (or at once, when the model is
 * already past it) and decides when it reaches the peer host; the server
 * then puts a descriptor in the peer's ring, stamped with the time the frame
 * was due, and the peer reads the bytes from the sender's slot: it holds the
 * sender's rings read-only (PEER). The server never copies a frame; it
 * frees the sender's slot (to_server.tail) once the peer has taken the
 * descriptor. Frames the model loses (bit errors, unplug) are never handed
 * over; their sender gets its window back all the same (@acked).
 */
#ifndef ODL_WIRE_SIM_H
#define ODL_WIRE_SIM_H

#include "odl/wire/frame.h"
#include "odl/wire/wire_common.h"

#define ODL_SIM_MAGIC 0x4d53444fu /* "ODSM" little-endian, in HELLO and the shm */
/* 2: frames in shared rings; 3: read from the sender's; 4: links; 5: clients
 * sleep; 6: descriptors carry their hand-over time; 7: HELLO's answer_ns;
 * 8: HELLO's profile holds two profiles and a degraded cable's name */
#define ODL_SIM_VERSION 8u

#define ODL_SIM_HDR_BYTES 32u
#define ODL_SIM_MAX_DATAGRAM (ODL_SIM_HDR_BYTES + sizeof(struct odl_sim_hello)) /* HELLO, the largest */

/* Slots per ring (a power of two). */
#define ODL_SIM_SLOTS 512u
/*
 * Frames a client may have in the model (put in its ring, not yet
 * acknowledged through @acked): the model's data ring size. The server
 * drops a client that has more.
 */
#define ODL_SIM_WINDOW 256u

/**
 * enum odl_sim_type - control messages.
 * HELLO: first message each way (client: which link and end it wants, with
 *	the memfd of its rings; server: which end it got, the link's rate and
 *	profile, or, refusing, no end (ODL_SIM_END_ANY) and then BYE).
 * LINK: server -> client: @arg ODL_SIM_LINK_* bits, sent after HELLO and
 *	whenever one changes: the cable's link is up, the other end is held.
 * WAKE: client -> server: frames wait in the ring while the server sleeps
 *	(it set @server_waiting); server -> client: descriptors, acknowledged
 *	frames or freed slots wait while the client sleeps (it set
 *	@client_waiting).
 * BYE: either way: orderly close; the sender closes next.
 * PEER: server -> client, with a read-only descriptor of the other end's
 *	ring memory (SCM_RIGHTS); @arg names it (never 0) in the descriptors
 *	that point into it. Sent before any descriptor names it.
 */
enum odl_sim_type {
	ODL_SIM_HELLO = 1,
	ODL_SIM_LINK = 4,
	ODL_SIM_BYE = 5,
	ODL_SIM_WAKE = 6,
	ODL_SIM_PEER = 7,
};

/**
 * struct odl_sim_hdr - first 32 bytes of every control message.
 * @type: enum odl_sim_type
 * @flags: zero
 * @len: bytes after the header (HELLO: 64; else 0)
 * @seq: per-direction message counter, first 0
 * @stamp_ns: the sender's CLOCK_MONOTONIC time
 * @arg: LINK: ODL_SIM_LINK_* bits; PEER: the region's name; else 0
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
 *	the client got, or 0xff: refused (both ends taken, or no such link)
 * @link: the modelled link (the program's sim device index); server: the
 *	one the client asked for
 * @rate_mbps: server: the rate this end sends at, Mb/s; client: 0
 * @window: server: ODL_SIM_WINDOW; client: 0
 * @pid: sender's process id
 * @links: server: how many links it models (devices 0 .. links - 1, each
 *	its own cable between its own two hosts); client: 0
 * @answer_ns: server: the modelled completion cost of this end's host, ns.
 *	It stands for the program's own work on a received message up to its
 *	answer, which the program also does for real once the completion is
 *	due: a send it asks for after a receive completion was handed to it is
 *	stamped up to that much earlier, never before that completion's due
 *	time; a client takes at most ODL_SIM_ANSWER_MAX_NS of it. Client: zero
 * @profile: server: "<platform profile(s)> <cable>[ pipeline]", the cable as
 *	it is when the client comes, NUL-padded (at most 67 characters: up to
 *	version 7 it had 35, and "apple-tb5/intel-tb5-discrete tb4x2 2 m
 *	pipeline" lost its end); client: zero
 */
struct odl_sim_hello {
	__le32 magic;
	__le16 version;
	__u8 end;
	__u8 link;
	__le32 rate_mbps;
	__le32 window;
	__le32 pid;
	__le32 links;
	__le32 answer_ns;
	char profile[68];
};
ODL_WIRE_SIZE(struct odl_sim_hello, 96);

#define ODL_SIM_END_ANY 0xffu

/* The most of HELLO's answer_ns a client credits: a modelled completion
 * cost, not a pause. */
#define ODL_SIM_ANSWER_MAX_NS 1000000u

/* LINK @arg bits */
#define ODL_SIM_LINK_UP (1u << 0)   /* the modelled cable's link is trained */
#define ODL_SIM_LINK_PEER (1u << 1) /* a program holds the other end */
#define ODL_SIM_LINK_ALL (ODL_SIM_LINK_UP | ODL_SIM_LINK_PEER)

/**
 * struct odl_sim_index - one ring's indices, each on its own cache line.
 * @head: slots the producer has filled (counts up, never wraps in practice)
 * @tail: slots the consumer has emptied; head - tail <= ODL_SIM_SLOTS
 * Accessed with atomic loads and stores (acquire / release) only.
 */
struct odl_sim_index {
	__u64 head;
	__u8 pad0[56];
	__u64 tail;
	__u8 pad1[56];
};
ODL_WIRE_SIZE(struct odl_sim_index, 128);

/**
 * struct odl_sim_slot - one frame from the client.
 * @len: frame bytes, ODL_FRAME_HDR_BYTES..ODL_FRAME_MAX_BYTES
 * @reserved: zero
 * @stamp_ns: when the client sent it (CLOCK_MONOTONIC)
 * @data: the frame
 */
struct odl_sim_slot {
	__u32 len;
	__u32 reserved;
	__u64 stamp_ns;
	__u8 pad[48];
	__u8 data[ODL_FRAME_MAX_BYTES];
};
ODL_WIRE_SIZE(struct odl_sim_slot, 64 + 4096);

/**
 * struct odl_sim_desc - one frame for the client: where to read it.
 * @len: frame bytes (the server read the sender's @len once and checked it)
 * @slot: the frame's slot in the sender's to_server ring, < ODL_SIM_SLOTS
 * @stamp_ns: when the model said the frame was due (CLOCK_MONOTONIC)
 * @region: the sender's ring memory, as its PEER message named it
 * @handed_ns: when the server put this descriptor in the ring
 *	(CLOCK_MONOTONIC): the frame was the client's to take from then on, so
 *	a frame handed over after @stamp_ns was late by the server's doing (the
 *	model or the machine did not keep up); one taken later still waited
 *	for its program, as on a real link
 */
struct odl_sim_desc {
	__u32 len;
	__u32 slot;
	__u64 stamp_ns;
	__u64 region;
	__u64 handed_ns;
};
ODL_WIRE_SIZE(struct odl_sim_desc, 32);

/**
 * struct odl_sim_shm - start of the shared region (host byte order: both
 * sides share one machine). ODL_SIM_SLOTS frame slots towards the server
 * follow, then ODL_SIM_SLOTS descriptors towards the client.
 * @magic: ODL_SIM_MAGIC
 * @version: ODL_SIM_VERSION
 * @slots: ODL_SIM_SLOTS
 * @reserved: zero
 * @server_waiting: set by the server before it sleeps; a client that puts
 *	a frame in its ring while it is set clears it and sends WAKE
 * @client_waiting: set by a client before it sleeps (it shares the machine's
 *	cores with the server and its peer); the server, having put
 *	descriptors, acknowledged frames or freed slots while it is set, clears
 *	it and sends WAKE
 * @acked: written by the server: frames of this client that left the model
 *	(delivered or lost); the client's window is its frames put in the
 *	ring minus @acked. Its slots come free later, when the peer has read
 *	them (@to_server.tail).
 * @to_server: frames from the client
 * @to_client: descriptors for the client
 */
struct odl_sim_shm {
	__u32 magic;
	__u32 version;
	__u32 slots;
	__u32 reserved;
	__u32 server_waiting;
	__u32 client_waiting;
	__u8 pad0[40];
	__u64 acked;
	__u8 pad1[56];
	struct odl_sim_index to_server;
	struct odl_sim_index to_client;
};
ODL_WIRE_SIZE(struct odl_sim_shm, 384);

/* Bytes of the whole region. */
#define ODL_SIM_SHM_BYTES                                                   \
	(sizeof(struct odl_sim_shm) + ODL_SIM_SLOTS * sizeof(struct odl_sim_slot) + \
	 ODL_SIM_SLOTS * sizeof(struct odl_sim_desc))

#endif /* ODL_WIRE_SIM_H */
