/* SPDX-License-Identifier: MIT */
/*
 * libodl: the OdinLink userspace API (stable C ABI).
 *
 * Call order: odl_open_params_init() -> odl_open() (or odl_open_pair() for
 * two endpoints in this process) -> optional odl_reg_mr() ->
 * odl_post_recv() / odl_post_send() -> odl_poll() or odl_wait() for
 * completions -> odl_close(). docs/userlib.md describes every call and error.
 *
 * Threading: a device may be used by one thread at a time; different devices
 * are independent. The library never prints; install a log callback with
 * odl_set_log_fn(). Every call returns an enum odl_status (0 ok, < 0 error);
 * the reason in words is in odl_last_error() of the calling thread.
 */
#ifndef ODL_ODL_H
#define ODL_ODL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ODL_EXPORT __attribute__((visibility("default")))
#else
#define ODL_EXPORT
#endif

/* Bumped when a call or struct field is added: 2 added odl_cancel() and the
 * local_* fields of struct odl_dev_info; 3 added odl_discard(); 4 the
 * model_* fields of struct odl_stats; 5 the retransmission fields of struct
 * odl_stats. Released fields never move. */
#define ODL_API_VERSION 5

/**
 * enum odl_status - result of every call.
 * Link or system failures: ODL_ERR_IO, ODL_ERR_PEER_LOST, ODL_ERR_PEER_CLOSED,
 * ODL_ERR_PROTO, ODL_ERR_TIMEOUT. Caller misuse: ODL_ERR_INVAL,
 * ODL_ERR_TOO_BIG, ODL_ERR_AGAIN. Configuration: ODL_ERR_NO_BACKEND,
 * ODL_ERR_NO_DEVICE, ODL_ERR_NOT_SUPPORTED.
 */
enum odl_status {
	ODL_OK = 0,
	ODL_ERR_INVAL = -1,         /* bad argument */
	ODL_ERR_NO_BACKEND = -2,    /* unknown backend name */
	ODL_ERR_NO_DEVICE = -3,     /* no such device index */
	ODL_ERR_IO = -4,            /* operating-system or link failure */
	ODL_ERR_PEER_LOST = -5,     /* peer vanished without closing */
	ODL_ERR_PEER_CLOSED = -6,   /* peer closed the link in order */
	ODL_ERR_TIMEOUT = -7,       /* deadline passed */
	ODL_ERR_AGAIN = -8,         /* queue full; poll, then retry */
	ODL_ERR_NOMEM = -9,         /* out of memory */
	ODL_ERR_TRUNCATED = -10,    /* message longer than the receive buffer */
	ODL_ERR_PROTO = -11,        /* peer sent a malformed or corrupt frame */
	ODL_ERR_TOO_BIG = -12,      /* message larger than the peer accepts */
	ODL_ERR_NOT_SUPPORTED = -13, /* backend lacks this operation */
	ODL_ERR_CANCELED = -14,     /* operation withdrawn by odl_cancel() */
};

/** odl_strerror() - short fixed text for a status. Never NULL. */
ODL_EXPORT const char *odl_strerror(int status);

/**
 * odl_last_error() - the calling thread's last error in words, e.g.
 * "no loopback device 99 (have: 0-15)". Empty string after success.
 */
ODL_EXPORT const char *odl_last_error(void);

/** odl_version() - library version string, e.g. "0.1.0". */
ODL_EXPORT const char *odl_version(void);

/* Log levels passed to the log callback. */
enum odl_log_level {
	ODL_LOG_ERROR = 0,
	ODL_LOG_WARN = 1,
	ODL_LOG_INFO = 2,
	ODL_LOG_DEBUG = 3,
};

typedef void (*odl_log_fn)(void *arg, int level, const char *msg);

/**
 * odl_set_log_fn() - route library messages to @fn (NULL: discard).
 * @max_level: messages above this level are not formatted at all.
 */
ODL_EXPORT void odl_set_log_fn(odl_log_fn fn, void *arg, int max_level);

/** odl_backends() - comma-separated list of backends in this build. */
ODL_EXPORT const char *odl_backends(void);

/**
 * odl_device_count() - devices a backend offers on this machine.
 * Return: ODL_OK with *count set, or ODL_ERR_NO_BACKEND.
 */
ODL_EXPORT int odl_device_count(const char *backend, uint32_t *count);

/* odl_open_params.flags */
#define ODL_OPEN_NONBLOCK (1u << 0) /* return before the peer is there */
#define ODL_OPEN_CHECKSUM (1u << 1) /* send CRC32C with every frame */
/*
 * A thread of the library's own copies outgoing payloads into the link, so
 * that a program sending and receiving at once (a collective) has its two
 * copies per frame on two cores. Costs a core while sending; taken only on
 * machines with at least 4 CPUs, and ignored where the link cannot reserve
 * frames ahead (the kernel backend's read/write path, ODL_KERNEL_IO=rw). The
 * environment variable ODL_TX_THREAD=on|off|auto overrides it (auto: as
 * asked).
 */
#define ODL_OPEN_TX_THREAD (1u << 2)
/*
 * The same for received payloads: a thread of the library's own copies them
 * out of the link into the receive buffers, the frames staying in the link
 * until copied. Taken only on machines with at least 4 CPUs, and ignored
 * where the link cannot hold frames (the kernel backend's read/write path,
 * ODL_KERNEL_IO=rw). ODL_RX_THREAD=on|off|auto overrides it.
 */
#define ODL_OPEN_RX_THREAD (1u << 3)

/**
 * struct odl_open_params - how to open a device. Always start from
 * odl_open_params_init(); fields may be added at the end in later versions.
 * @struct_size: sizeof(struct odl_open_params), set by init
 * @backend: "loopback" (default), "sim" or "kernel"
 * @index: device index within the backend
 * @flags: ODL_OPEN_*
 * @num_streams: independent streams, 1..64 (default 1)
 * @window_frames: receive credit per stream, frames (default 256)
 * @max_msg_bytes: largest message accepted, bytes (default 64 MiB)
 * @max_posted: posted operations per stream and direction (default 1024)
 * @connect_timeout_ns: how long odl_open() waits for the peer (default 10 s)
 * @peer_timeout_ns: silence after which a peer counts as lost (default 1 s)
 * @node_name: name told to the peer (default: the host name)
 */
struct odl_open_params {
	uint32_t struct_size;
	const char *backend;
	uint32_t index;
	uint32_t flags;
	uint32_t num_streams;
	uint32_t window_frames;
	uint64_t max_msg_bytes;
	uint32_t max_posted;
	uint64_t connect_timeout_ns;
	uint64_t peer_timeout_ns;
	const char *node_name;
};

/** odl_open_params_init() - fill @p with defaults. */
ODL_EXPORT void odl_open_params_init(struct odl_open_params *p);

struct odl_dev; /* opaque */
struct odl_mr;  /* opaque: a registered memory region */

/**
 * odl_open() - open a device and connect to its peer.
 * Without ODL_OPEN_NONBLOCK, waits up to @connect_timeout_ns for the peer
 * and its HELLO; with it, returns at once and odl_poll() completes the
 * handshake (odl_query() shows link_state). Operations may be posted before
 * the link is up; they start when it comes up.
 * Return: ODL_OK, ODL_ERR_NO_BACKEND, ODL_ERR_NO_DEVICE, ODL_ERR_INVAL,
 * ODL_ERR_TIMEOUT, ODL_ERR_PROTO (peer speaks another protocol) or ODL_ERR_IO.
 */
ODL_EXPORT int odl_open(const struct odl_open_params *p, struct odl_dev **out);

/**
 * odl_open_pair() - two connected endpoints in this process.
 * @p->backend "loopback" (or NULL; @p->index is ignored), or "sim": ends A
 * (*@a) and B (*@b) of modelled link @p->index, on the model server
 * (ODL_SIM_SOCKET=inproc: the in-process model, docs/sim.md); waits up to
 * @p->connect_timeout_ns for the link to come up.
 */
ODL_EXPORT int odl_open_pair(const struct odl_open_params *p, struct odl_dev **a,
			     struct odl_dev **b);

/**
 * odl_close() - say goodbye to the peer and free the device. Posted
 * operations that did not complete are dropped. @dev may be NULL.
 */
ODL_EXPORT int odl_close(struct odl_dev *dev);

enum odl_link_state {
	ODL_LINK_CONNECTING = 0, /* waiting for the peer or its HELLO */
	ODL_LINK_UP = 1,
	ODL_LINK_PEER_CLOSED = 2, /* peer said goodbye */
	ODL_LINK_LOST = 3,        /* peer vanished or the link failed */
};

/**
 * struct odl_dev_info - what odl_query() reports.
 * @struct_size: caller sets sizeof(struct odl_dev_info)
 * @backend: backend name
 * @name: device name, e.g. "loopback0" or "/dev/odl_tb5_0"
 * @index: device index
 * @link_state: enum odl_link_state
 * @link_rate_mbps: nominal link rate, Mb/s (0 if not meaningful)
 * @num_streams: negotiated streams
 * @window_frames: credit the peer grants per stream, frames
 * @max_frame_payload: payload bytes per frame
 * @max_msg_bytes: largest message the peer accepts
 * @peer_name: peer's node name
 * @peer_pid: peer's process id (loopback) or 0
 * @peer_host_id: peer's host identifier
 * @peer_version: peer's protocol version, major << 16 | minor
 * @peer_features: peer's ODL_FEAT_* bits
 * @local_name: this endpoint's node name, as told to the peer
 * @local_host_id: this endpoint's host identifier, as told to the peer
 * @local_pid: this process's id
 */
struct odl_dev_info {
	uint32_t struct_size;
	char backend[16];
	char name[64];
	uint32_t index;
	uint32_t link_state;
	uint32_t link_rate_mbps;
	uint32_t num_streams;
	uint32_t window_frames;
	uint32_t max_frame_payload;
	uint64_t max_msg_bytes;
	char peer_name[64];
	uint32_t peer_pid;
	uint64_t peer_host_id;
	uint32_t peer_version;
	uint32_t peer_features;
	char local_name[64];
	uint64_t local_host_id;
	uint32_t local_pid;
};

ODL_EXPORT int odl_query(struct odl_dev *dev, struct odl_dev_info *info);

/**
 * odl_reg_mr() - register @len bytes at @addr for sends and receives.
 * Registration is optional on the loopback backend; the kernel backend pins
 * registered memory. Operations given an @mr must lie inside it.
 */
ODL_EXPORT int odl_reg_mr(struct odl_dev *dev, void *addr, size_t len, struct odl_mr **mr);
ODL_EXPORT int odl_dereg_mr(struct odl_dev *dev, struct odl_mr *mr);

#define ODL_TAG_ANY 0xffffffffu /* odl_post_recv(): match any tag */

/**
 * odl_post_send() - send @len bytes from @buf as one message on @stream.
 * The buffer must stay untouched until the send completes. Messages on a
 * stream arrive in order; @tag must not be ODL_TAG_ANY.
 * @ctx: returned in the completion
 * Return: ODL_OK, ODL_ERR_INVAL, ODL_ERR_TOO_BIG, ODL_ERR_AGAIN (too many
 * posted), or the link's error if it is down.
 */
ODL_EXPORT int odl_post_send(struct odl_dev *dev, uint32_t stream, uint32_t tag,
			     const void *buf, size_t len, struct odl_mr *mr, uint64_t ctx);

/**
 * odl_post_recv() - receive the next message on @stream whose tag equals
 * @tag (or any tag with ODL_TAG_ANY) into @buf of @cap bytes. Receives on a
 * stream match arriving messages in posting order. A longer message
 * completes with ODL_ERR_TRUNCATED; its first @cap bytes are delivered.
 */
ODL_EXPORT int odl_post_recv(struct odl_dev *dev, uint32_t stream, uint32_t tag, void *buf,
			     size_t cap, struct odl_mr *mr, uint64_t ctx);

/**
 * odl_cancel() - withdraw a posted operation.
 * Finds the pending operation posted on @stream with @ctx (the oldest, if
 * several). Once this call returns the library never touches its buffer
 * again, and its completion says ODL_ERR_CANCELED. A receive that is
 * part-way through a message drops the rest of that message. A send whose
 * first frames already left is finished from a copy the library takes now,
 * so the peer still gets the whole message; its completion comes when the
 * last frame has left (or the link fails).
 * Return: ODL_OK, or ODL_ERR_INVAL if nothing pending matches.
 */
ODL_EXPORT int odl_cancel(struct odl_dev *dev, uint32_t stream, uint64_t ctx);

#define ODL_DISCARD_STOP (1u << 0) /* odl_discard(): deliver messages again */

/**
 * odl_discard() - drop a stream's incoming messages, selected by tag.
 * Selects the messages on @stream whose tag t has (t & @mask) == (@tag & @mask)
 * (@mask 0 selects every message). Those that arrived before a matching
 * receive and wait inside the library are freed now (one still arriving
 * loses its rest too), and later ones are dropped as they arrive, whether a
 * receive is posted or not, until the next odl_discard() on the stream: a
 * new selection replaces this one, ODL_DISCARD_STOP (@tag, @mask ignored)
 * ends it. Dropped frames give their credit back to the sender at once, so
 * a send held back by them completes. For a receiver that is done with a
 * stream (or with one tag range of it) while the peer may still be sending:
 * without this, a message nobody receives holds its sender forever.
 * Posted receives stay posted (withdraw them with odl_cancel()); a message
 * already being received into a buffer is not affected.
 * Return: ODL_OK, or ODL_ERR_INVAL (bad stream or flags).
 */
ODL_EXPORT int odl_discard(struct odl_dev *dev, uint32_t stream, uint32_t tag, uint32_t mask,
			   uint32_t flags);

enum odl_op {
	ODL_OP_SEND = 1,
	ODL_OP_RECV = 2,
};

/**
 * struct odl_completion - one finished operation.
 * @ctx: the caller's @ctx from the post
 * @status: ODL_OK or the operation's error
 * @op: enum odl_op
 * @stream: stream it was posted on
 * @tag: receives: the message's tag; sends: the tag sent
 * @len: bytes sent, or the message's full length for receives
 */
struct odl_completion {
	uint64_t ctx;
	int32_t status;
	uint32_t op;
	uint32_t stream;
	uint32_t tag;
	uint64_t len;
};

/**
 * odl_poll() - make progress and collect up to @max completions.
 * Does not block on the loopback backend; on the kernel backend an idle
 * poll may wait up to 1 ms for the module to wake it; on the sim backend a
 * poll with nothing else to return waits up to 2 us for a completion due
 * that soon (docs/sim.md). Return: ODL_OK with *n set (possibly 0); a link failure
 * shows as completions with an error status, then as the return value of
 * later posts. odl_poll() itself fails only on bad arguments.
 */
ODL_EXPORT int odl_poll(struct odl_dev *dev, struct odl_completion *comps, size_t max,
			size_t *n);

/**
 * odl_wait() - like odl_poll(), but waits up to @timeout_ns for at least one
 * completion (spinning first, then sleeping briefly).
 * Return: ODL_OK (with *n >= 1), ODL_ERR_TIMEOUT (with *n == 0), or the
 * link's error once it failed and every completion was collected.
 */
ODL_EXPORT int odl_wait(struct odl_dev *dev, struct odl_completion *comps, size_t max,
			size_t *n, uint64_t timeout_ns);

/**
 * struct odl_stats - counters since open (all cumulative).
 * @struct_size: caller sets sizeof(struct odl_stats)
 * @tx_msgs, @rx_msgs: messages completed
 * @tx_bytes, @rx_bytes: payload bytes
 * @tx_frames, @rx_frames: data frames
 * @tx_ctrl_frames, @rx_ctrl_frames: HELLO/CREDIT/GOODBYE frames
 * @credit_stalls: times a send waited for credit
 * @link_full_stalls: times the link had no room for a frame
 * @rx_unexpected_msgs: messages that arrived before a matching receive
 * @rx_bad_frames: frames refused by validation (any reason)
 * @rx_csum_errors: frames whose payload checksum did not match
 * @model_frames: sim backend: frames the model delivered here (0 elsewhere)
 * @model_late_frames: of those, frames the model server handed over later
 *	than the model said they were due by more than ODL_SIM_LATE_NS
 *	(default 50000 ns): the model or the machine could not keep up with the
 *	wall clock (a frame that then waited for the program to take it, as it
 *	would on a real link, is not late for that)
 * @model_lag_max_ns: the largest delay past due of any of them, as handed over
 * @tx_resent_frames: data frames sent again because the peer missed one
 *	(only on links that may lose frames: kernel, sim)
 * @rx_lost_frames: data frames found missing on arrival of a later one (or
 *	the sender's PROBE); each was asked for again
 * @rx_dropped_frames: data frames dropped on arrival: after a missing one,
 *	or a second copy of one already taken
 * Callers built against API version 3 pass the shorter struct; they get
 * the fields they know.
 */
struct odl_stats {
	uint32_t struct_size;
	uint64_t tx_msgs;
	uint64_t rx_msgs;
	uint64_t tx_bytes;
	uint64_t rx_bytes;
	uint64_t tx_frames;
	uint64_t rx_frames;
	uint64_t tx_ctrl_frames;
	uint64_t rx_ctrl_frames;
	uint64_t credit_stalls;
	uint64_t link_full_stalls;
	uint64_t rx_unexpected_msgs;
	uint64_t rx_bad_frames;
	uint64_t rx_csum_errors;
	uint64_t model_frames;
	uint64_t model_late_frames;
	uint64_t model_lag_max_ns;
	uint64_t tx_resent_frames;
	uint64_t rx_lost_frames;
	uint64_t rx_dropped_frames;
};

ODL_EXPORT int odl_get_stats(struct odl_dev *dev, struct odl_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* ODL_ODL_H */
