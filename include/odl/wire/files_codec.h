/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Check received file-service messages (layout in files.h) before any field
 * is used: the header, the sequence number, the payload's shape for its
 * type, every path. Static inline C like the other codecs, so the unit test
 * and the fuzz target cover exactly what the tools run. The tag is checked
 * by the caller (it needs the key); a message is used only when both pass.
 */
#ifndef ODL_WIRE_FILES_CODEC_H
#define ODL_WIRE_FILES_CODEC_H

#include "odl/wire/files.h"

#include <string.h>

/* Who sent a message: most types go one way only. */
enum odl_files_side {
	ODL_FILES_FROM_CLIENT = 0,
	ODL_FILES_FROM_SERVER = 1,
};

/**
 * odl_files_path_check() - is @p (@n bytes) a path the service accepts?
 * Relative, '/'-separated, no empty, "." or ".." component, no NUL, names
 * of at most ODL_FILES_NAME_MAX bytes, ODL_FILES_PATH_MAX in all. @n == 0
 * (the folder itself) only with @allow_empty.
 * Return: NULL, or why not in words.
 */
static inline const char *odl_files_path_check(const char *p, size_t n, int allow_empty)
{
	size_t i, start = 0;

	if (n == 0)
		return allow_empty ? NULL : "empty path";
	if (n > ODL_FILES_PATH_MAX)
		return "path longer than 4096 bytes";
	if (p[0] == '/')
		return "absolute path";
	for (i = 0; i <= n; i++) {
		size_t len;

		if (i < n && p[i] == '\0')
			return "NUL byte in path";
		if (i < n && p[i] != '/')
			continue;
		len = i - start;
		if (len == 0)
			return "empty path component";
		if (len > ODL_FILES_NAME_MAX)
			return "path component longer than 255 bytes";
		if ((len == 1 && p[start] == '.') || (len == 2 && p[start] == '.' && p[start + 1] == '.'))
			return "'.' or '..' in path";
		start = i + 1;
	}
	return NULL;
}

/* Which side may send @type (both: PAIR, READY, DATA, END, ERROR, BYE). */
static inline int odl_files_type_from(__u32 type, enum odl_files_side from)
{
	switch (type) {
	case ODL_FILES_PAIR:
	case ODL_FILES_READY:
	case ODL_FILES_DATA:
	case ODL_FILES_END:
	case ODL_FILES_ERROR:
	case ODL_FILES_BYE:
		return 1;
	case ODL_FILES_HELLO:
	case ODL_FILES_PUT:
	case ODL_FILES_GET:
	case ODL_FILES_LIST:
	case ODL_FILES_MKDIR:
	case ODL_FILES_REMOVE:
		return from == ODL_FILES_FROM_CLIENT;
	case ODL_FILES_HELLO_ACK:
	case ODL_FILES_DONE:
	case ODL_FILES_INFO:
	case ODL_FILES_ENTRIES:
		return from == ODL_FILES_FROM_SERVER;
	default:
		return 0;
	}
}

/* A power of two in the chunk range? */
static inline int odl_files_chunk_ok(__u32 chunk)
{
	return chunk >= ODL_FILES_CHUNK_MIN && chunk <= ODL_FILES_CHUNK_MAX && !(chunk & (chunk - 1));
}

/* ENTRIES: @count packed entries filling exactly @n bytes at @p. */
static inline const char *odl_files_entries_check(const __u8 *p, size_t n)
{
	struct odl_files_entries e;
	size_t off = sizeof(e);
	__u32 i, count;

	if (n < sizeof(e))
		return "ENTRIES shorter than its count";
	memcpy(&e, p, sizeof(e));
	count = odl_le32(e.count);
	if (count > ODL_FILES_ENTRIES_MAX)
		return "ENTRIES with more than 1024 entries";
	if (e.reserved)
		return "reserved field not zero";
	for (i = 0; i < count; i++) {
		struct odl_files_entry en;
		__u16 kind, plen;
		const char *why;

		if (n - off < sizeof(en))
			return "ENTRIES cut inside an entry";
		memcpy(&en, p + off, sizeof(en));
		off += sizeof(en);
		kind = odl_le16(en.kind);
		plen = odl_le16(en.path_len);
		if (kind != ODL_FILES_FILE && kind != ODL_FILES_DIR)
			return "entry of unknown kind";
		if (odl_le32(en.mode) > 07777)
			return "entry mode beyond 07777";
		if (kind == ODL_FILES_DIR && odl_le64(en.size))
			return "directory entry with a size";
		if (n - off < plen)
			return "ENTRIES cut inside a path";
		why = odl_files_path_check((const char *)p + off, plen, 0);
		if (why)
			return why;
		off += plen;
	}
	return off == n ? NULL : "bytes after the last entry";
}

/* The payload of @type, @n bytes at @p; @chunk: the session's DATA size. */
static inline const char *odl_files_payload_check(__u32 type, const __u8 *p, size_t n, __u32 chunk)
{
	switch (type) {
	case ODL_FILES_PAIR:
		return n == sizeof(struct odl_files_pair) ? NULL : "PAIR of the wrong size";
	case ODL_FILES_HELLO: {
		struct odl_files_hello h;

		if (n != sizeof(h))
			return "HELLO of the wrong size";
		memcpy(&h, p, sizeof(h));
		if (!odl_files_chunk_ok(odl_le32(h.chunk)))
			return "HELLO chunk not a power of two in 4 KiB..4 MiB";
		return h.reserved ? "reserved field not zero" : NULL;
	}
	case ODL_FILES_HELLO_ACK: {
		struct odl_files_hello_ack h;

		if (n != sizeof(h))
			return "HELLO_ACK of the wrong size";
		memcpy(&h, p, sizeof(h));
		if (!odl_files_chunk_ok(odl_le32(h.chunk)))
			return "HELLO_ACK chunk not a power of two in 4 KiB..4 MiB";
		return h.reserved ? "reserved field not zero" : NULL;
	}
	case ODL_FILES_PUT: {
		struct odl_files_put h;

		if (n < sizeof(h))
			return "PUT shorter than its fields";
		memcpy(&h, p, sizeof(h));
		if (odl_le32(h.mode) > 07777)
			return "PUT mode beyond 07777";
		if (odl_le64(h.size) > (1ull << 62))
			return "PUT size out of range";
		if (odl_le32(h.path_len) != n - sizeof(h))
			return "PUT path length does not match the message";
		return odl_files_path_check((const char *)p + sizeof(h), n - sizeof(h), 0);
	}
	case ODL_FILES_READY:
	case ODL_FILES_DONE:
		return n == sizeof(struct odl_files_offset) ? NULL : "READY/DONE of the wrong size";
	case ODL_FILES_DATA: {
		struct odl_files_data h;

		if (n <= sizeof(h))
			return "DATA without bytes";
		if (n - sizeof(h) > chunk)
			return "DATA larger than the session's chunk";
		memcpy(&h, p, sizeof(h));
		if (odl_le64(h.offset) > (1ull << 62))
			return "DATA offset out of range";
		return NULL;
	}
	case ODL_FILES_END:
		return n == sizeof(struct odl_files_end) ? NULL : "END of the wrong size";
	case ODL_FILES_INFO: {
		struct odl_files_info h;

		if (n != sizeof(h))
			return "INFO of the wrong size";
		memcpy(&h, p, sizeof(h));
		if (odl_le32(h.mode) > 07777 || h.reserved)
			return "INFO mode beyond 07777 or reserved field not zero";
		return odl_le64(h.size) > (1ull << 62) ? "INFO size out of range" : NULL;
	}
	case ODL_FILES_GET:
	case ODL_FILES_LIST:
	case ODL_FILES_MKDIR:
	case ODL_FILES_REMOVE: {
		struct odl_files_path h;

		if (n < sizeof(h))
			return "GET/LIST/MKDIR/REMOVE shorter than its fields";
		memcpy(&h, p, sizeof(h));
		if (odl_le32(h.mode) > 07777 || (type != ODL_FILES_MKDIR && h.mode))
			return "mode beyond 07777, or a mode where none belongs";
		if (odl_le32(h.path_len) != n - sizeof(h))
			return "path length does not match the message";
		return odl_files_path_check((const char *)p + sizeof(h), n - sizeof(h),
					    type == ODL_FILES_LIST);
	}
	case ODL_FILES_ENTRIES:
		return odl_files_entries_check(p, n);
	case ODL_FILES_ERROR: {
		struct odl_files_error h;

		if (n < sizeof(h))
			return "ERROR shorter than its fields";
		memcpy(&h, p, sizeof(h));
		if (odl_le32(h.text_len) != n - sizeof(h) || n - sizeof(h) > ODL_FILES_TEXT_MAX)
			return "ERROR text length wrong or over 512 bytes";
		return NULL;
	}
	case ODL_FILES_BYE:
		return n == 0 ? NULL : "BYE with a payload";
	default:
		return "unknown message type";
	}
}

/**
 * odl_files_check() - validates one received message but for its tag.
 * @buf, @n: the whole message (header, payload, tag)
 * @from: who sent it
 * @want_seq: the sequence number it must carry (PAIR: 0)
 * @chunk: the session's DATA size (before HELLO_ACK: ODL_FILES_CHUNK_MAX)
 * @hdr: out: its header, in wire order
 * Return: NULL when well formed, else why not, in words.
 */
static inline const char *odl_files_check(const void *buf, size_t n, enum odl_files_side from,
					  __u64 want_seq, __u32 chunk, struct odl_files_hdr *hdr)
{
	const __u8 *p = (const __u8 *)buf;
	struct odl_files_hdr h;
	__u32 type, flags;

	if (n < ODL_FILES_HDR_BYTES + ODL_FILES_TAG_BYTES)
		return "message shorter than a header and tag";
	memcpy(&h, p, sizeof(h));
	if (odl_le32(h.magic) != ODL_FILES_MAGIC)
		return "not a file-service message (magic)";
	if (odl_le16(h.version) != ODL_FILES_VERSION)
		return "file-service protocol version not spoken";
	type = odl_le16(h.type);
	if (!odl_files_type_from(type, from))
		return "message type unknown or from the wrong side";
	if (odl_le32(h.len) != n - ODL_FILES_HDR_BYTES - ODL_FILES_TAG_BYTES)
		return "payload length does not match the message";
	if (odl_le32(h.len) > ODL_FILES_MAX_PAYLOAD)
		return "payload over the protocol's limit";
	flags = odl_le32(h.flags);
	if (flags & ~(type == ODL_FILES_ENTRIES ? ODL_FILES_LAST : 0u))
		return "unknown flags";
	if (h.reserved)
		return "reserved field not zero";
	if (odl_le64(h.seq) != (type == ODL_FILES_PAIR ? 0 : want_seq))
		return "sequence number out of order (replayed, lost or forged)";
	if (hdr)
		*hdr = h;
	return odl_files_payload_check(type, p + ODL_FILES_HDR_BYTES, odl_le32(h.len), chunk);
}

#endif /* ODL_WIRE_FILES_CODEC_H */
