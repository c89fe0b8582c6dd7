/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * The file service's protocol (`odl cp`, `odl files serve`, `odl pair`):
 * layout only, the one definition; docs/files.md walks it. Checks live
 * beside it in files_codec.h.
 *
 * Each message is one libodl message on stream 0 of an OdinLink device:
 * struct odl_files_hdr (32 bytes), hdr.len payload bytes, then a 16-byte
 * tag: AES-256-GCM with no plaintext over header and payload (GMAC), so
 * every bit of a message is authenticated, full length. Keys: HELLO is
 * tagged with the pair key made by `odl pair`; every later message with a
 * session key per direction, derived (HKDF-SHA256) from the pair key and
 * both sides' fresh nonces, so nothing of an earlier session can be
 * replayed. The GCM nonce is the message's @seq (and the direction): each
 * direction numbers its messages 1, 2, 3 ... and a receiver takes only
 * the next number, so a replayed, dropped or reordered message ends the
 * session. PAIR messages (pairing itself) carry a zero tag: there is no
 * key yet; the users compare a code instead (docs/files.md).
 *
 * A client (the side that ran `odl cp`) asks, the server answers; one
 * request at a time, except that DATA of the file being sent flows
 * without waiting for answers (libodl's credit window paces it).
 *   push:  PUT -> READY{offset}; DATA...; END{sha256} -> DONE | ERROR
 *   pull:  GET -> INFO; READY{offset} -> DATA...; END{sha256} | ERROR
 *   tree:  LIST -> ENTRIES... (the last flagged); MKDIR -> DONE;
 *          REMOVE -> DONE
 * A file appears under its final name only after the receiver's SHA-256
 * of every byte matched the sender's (temporary name, fsync, rename). A
 * transfer cut short resumes at READY's offset: the bytes the receiver
 * already holds, every one of them from a message whose tag verified.
 */
#ifndef ODL_WIRE_FILES_H
#define ODL_WIRE_FILES_H

#include "odl/wire/wire_common.h"

#define ODL_FILES_MAGIC 0x464c444fu /* "ODLF" little-endian */
#define ODL_FILES_VERSION 1u

#define ODL_FILES_HDR_BYTES 32u
#define ODL_FILES_TAG_BYTES 16u
#define ODL_FILES_KEY_BYTES 32u
#define ODL_FILES_NONCE_BYTES 32u
#define ODL_FILES_ID_BYTES 16u
#define ODL_FILES_SHA256_BYTES 32u

/* DATA bytes per message: a power of two in this range, HELLO settles it. */
#define ODL_FILES_CHUNK_MIN (4u << 10)
#define ODL_FILES_CHUNK_MAX (4u << 20)
#define ODL_FILES_CHUNK_DEFAULT (1u << 20)
/* Largest payload of any message (a DATA of the largest chunk). */
#define ODL_FILES_MAX_PAYLOAD (ODL_FILES_CHUNK_MAX + 8u)
#define ODL_FILES_MAX_MSG (ODL_FILES_HDR_BYTES + ODL_FILES_MAX_PAYLOAD + ODL_FILES_TAG_BYTES)

/* A path inside the served folder: relative, '/'-separated. */
#define ODL_FILES_PATH_MAX 4096u
#define ODL_FILES_NAME_MAX 255u
/* ERROR text, node names. */
#define ODL_FILES_TEXT_MAX 512u
#define ODL_FILES_NODE_MAX 64u
/* Entries of one ENTRIES message. */
#define ODL_FILES_ENTRIES_MAX 1024u

/**
 * enum odl_files_type - messages. C: sent by the client, S: by the server.
 * PAIR (both): X25519 public key and node name, pairing only.
 * HELLO (C): pair id and nonce; opens a session.
 * HELLO_ACK (S): the server's nonce; the first message under session keys.
 * PUT (C): a file follows: size, mtime, mode, path.
 * READY (either): the receiver's offset: bytes of the file it already
 *	holds (resume); the server's answer to PUT, the client's to INFO.
 * DATA (either): @offset and bytes of the file being moved.
 * END (either): SHA-256 of the whole file (sender).
 * DONE (S): the file (or directory) is in place under its final name.
 * GET (C): send me this file.
 * INFO (S): the file GET asked for: size, mtime, mode; the client's READY
 *	says from where, DATA and END follow.
 * LIST (C): every entry under a path, recursively.
 * ENTRIES (S): some of them; ODL_FILES_LAST on the last message.
 * MKDIR (C): make a directory (and its parents).
 * REMOVE (C): move a file into the served folder's .odl-trash/ (never
 *	deleted outright: `odl sync` passes deletions on this way).
 * ERROR (S): the request failed: enum odl_files_err and words. (C): in
 *	place of END, the file being pushed changed or could not be read: the
 *	server drops what it received of it and answers nothing.
 * BYE (either): orderly end of the session.
 */
enum odl_files_type {
	ODL_FILES_PAIR = 1,
	ODL_FILES_HELLO = 2,
	ODL_FILES_HELLO_ACK = 3,
	ODL_FILES_PUT = 4,
	ODL_FILES_READY = 5,
	ODL_FILES_DATA = 6,
	ODL_FILES_END = 7,
	ODL_FILES_DONE = 8,
	ODL_FILES_GET = 9,
	ODL_FILES_INFO = 10,
	ODL_FILES_LIST = 11,
	ODL_FILES_ENTRIES = 12,
	ODL_FILES_MKDIR = 13,
	ODL_FILES_ERROR = 14,
	ODL_FILES_BYE = 15,
	ODL_FILES_REMOVE = 16,
	ODL_FILES_TYPE_MAX = 16,
};

/* hdr.flags */
#define ODL_FILES_LAST (1u << 0) /* ENTRIES: the last of the listing */

/**
 * enum odl_files_err - ERROR codes.
 */
enum odl_files_err {
	ODL_FILES_E_PROTO = 1,    /* malformed or unexpected message */
	ODL_FILES_E_AUTH = 2,     /* unknown pair id or a tag that does not verify */
	ODL_FILES_E_PATH = 3,     /* path refused: '..', absolute, too long, outside the folder */
	ODL_FILES_E_NOENT = 4,    /* no such file or directory */
	ODL_FILES_E_IO = 5,       /* the receiver's disk said no (ENOSPC, EIO, ...) */
	ODL_FILES_E_HASH = 6,     /* SHA-256 of what arrived differs from the sender's */
	ODL_FILES_E_CHANGED = 7,  /* the file changed while it was sent */
	ODL_FILES_E_KIND = 8,     /* a directory where a file is wanted, or the reverse */
	ODL_FILES_E_VERSION = 9,  /* protocol version not spoken */
};

/**
 * struct odl_files_hdr - first 32 bytes of every message.
 * @magic: ODL_FILES_MAGIC
 * @version: ODL_FILES_VERSION
 * @type: enum odl_files_type
 * @len: payload bytes after the header (the tag follows them)
 * @flags: ODL_FILES_LAST on ENTRIES, else zero
 * @seq: per-direction message number, first 1 (PAIR: 0)
 * @reserved: zero
 */
struct odl_files_hdr {
	__le32 magic;
	__le16 version;
	__le16 type;
	__le32 len;
	__le32 flags;
	__le64 seq;
	__le64 reserved;
};
ODL_WIRE_SIZE(struct odl_files_hdr, 32);

/* PAIR payload. @name: NUL-padded node name. */
struct odl_files_pair {
	__u8 public_key[32];
	char name[ODL_FILES_NODE_MAX];
};
ODL_WIRE_SIZE(struct odl_files_pair, 96);

/* HELLO payload. @chunk: DATA bytes the client wants (power of two, range). */
struct odl_files_hello {
	__u8 pair_id[ODL_FILES_ID_BYTES];
	__u8 nonce[ODL_FILES_NONCE_BYTES];
	__le32 chunk;
	__le32 reserved;
};
ODL_WIRE_SIZE(struct odl_files_hello, 56);

/* HELLO_ACK payload. @chunk: what the session uses (<= the client's). */
struct odl_files_hello_ack {
	__u8 nonce[ODL_FILES_NONCE_BYTES];
	__le32 chunk;
	__le32 reserved;
};
ODL_WIRE_SIZE(struct odl_files_hello_ack, 40);

/* enum odl_files_kind - what an entry is. */
enum odl_files_kind {
	ODL_FILES_FILE = 1,
	ODL_FILES_DIR = 2,
};

/*
 * PUT payload, then @path_len path bytes (no NUL). @mode: permission bits
 * (07777 at most); @mtime_ns: the sender's modification time.
 */
struct odl_files_put {
	__le64 size;
	__le64 mtime_ns;
	__le32 mode;
	__le32 path_len;
};
ODL_WIRE_SIZE(struct odl_files_put, 24);

/* READY payload; DONE payload: the file's size (MKDIR: 0). */
struct odl_files_offset {
	__le64 offset;
};
ODL_WIRE_SIZE(struct odl_files_offset, 8);

/* DATA payload: @offset, then the bytes (1 .. chunk). */
struct odl_files_data {
	__le64 offset;
};
ODL_WIRE_SIZE(struct odl_files_data, 8);

/* END payload. */
struct odl_files_end {
	__u8 sha256[ODL_FILES_SHA256_BYTES];
};
ODL_WIRE_SIZE(struct odl_files_end, 32);

/* INFO payload: the file GET names. */
struct odl_files_info {
	__le64 size;
	__le64 mtime_ns;
	__le32 mode;
	__le32 reserved;
};
ODL_WIRE_SIZE(struct odl_files_info, 24);

/*
 * GET, LIST, MKDIR and REMOVE payload, then @path_len path bytes (LIST:
 * 0 = the served folder itself). @mode: MKDIR's permission bits; else zero.
 */
struct odl_files_path {
	__le32 mode;
	__le32 path_len;
};
ODL_WIRE_SIZE(struct odl_files_path, 8);

/*
 * ENTRIES payload: @count entries, each struct odl_files_entry then its
 * @path_len path bytes (relative to the LIST path), packed.
 */
struct odl_files_entries {
	__le32 count;
	__le32 reserved;
};
ODL_WIRE_SIZE(struct odl_files_entries, 8);

struct odl_files_entry {
	__le64 size;
	__le64 mtime_ns;
	__le32 mode;
	__le16 kind;
	__le16 path_len;
};
ODL_WIRE_SIZE(struct odl_files_entry, 24);

/* ERROR payload, then @text_len bytes of text (no NUL). */
struct odl_files_error {
	__le32 code;
	__le32 text_len;
};
ODL_WIRE_SIZE(struct odl_files_error, 8);

#endif /* ODL_WIRE_FILES_H */
