// SPDX-License-Identifier: MIT
/*
 * Guest-side checks of /dev/odl_tb5_N's user ABI (include/uapi/odl_tb5.h):
 * a table of bad ioctl, read, write, MAP_INFO, POST_SEND, POST_RECV and
 * mmap arguments, each with the errno it must give, then a bounded
 * randomized ioctl/mmap/post stress, then a leak check (a fresh open gets
 * every Tx buffer back). Prints one line per case; exit 0 only if every case
 * matched. Run it with no session (the peer's device closed).
 *
 * With "session" as third argument it runs on both hosts at once instead:
 * each waits for the session, maps the device, sends 64 frames through
 * POST_SEND, receives the peer's 64 in place (checking every byte), posts
 * them back, and checks that a buffer posted twice is refused.
 *
 * With "gone" it maps the device, prints "mapped", waits (at most 120 s)
 * until the peer service is removed under it, then checks that every
 * mapped page is still there, that the posts answer ENODEV and poll()
 * EPOLLHUP.
 *
 * With "flood" (on both hosts at once) it waits for the session, then sends
 * and receives DATA frames through read()/write() on streams 0..3 (so on
 * every ring pair in use), both ways, until the session ends or the device
 * goes (cable unplug, peer or own removal); prints "flooding" once a frame
 * of each stream came in. Exit 0 when it ended that way, 1 on anything
 * else (a bad frame, no session, still running after the time limit).
 *
 * Usage: odl_tb5_ioctl [/dev/odl_tb5_0] [stress-iterations]
 *	[session|gone|flood [seconds]]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "odl/wire/frame_codec.h"
#include "uapi/odl_tb5.h"
#include "odl_tb5_check.h"

static long post(int fd, unsigned long cmd, uint32_t count, const void *ents)
{
	struct odl_tb5_post p = { .count = count, .entries = (uintptr_t)ents };

	return ioctl(fd, cmd, &p);
}

/* A valid DATA frame on @stream of @len payload bytes, each byte @fill. */
static uint32_t make_frame_on(unsigned char *buf, uint16_t stream, uint16_t len,
			      unsigned char fill, uint8_t type)
{
	struct odl_frame_info fi = { .type = type,
				     .flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM,
				     .stream = stream, .len = len, .msg_len = len };

	odl_frame_encode((struct odl_frame_hdr *)buf, &fi);
	memset(buf + ODL_FRAME_HDR_BYTES, fill, len);
	return ODL_FRAME_HDR_BYTES + len;
}

static uint32_t make_frame(unsigned char *buf, uint16_t len, unsigned char fill,
			   uint8_t type)
{
	return make_frame_on(buf, 0, len, fill, type);
}

/* GOODBYE: stream 0, no flags, no payload. */
static uint32_t make_goodbye(unsigned char *buf)
{
	struct odl_frame_info fi = { .type = ODL_FRAME_GOODBYE };

	odl_frame_encode((struct odl_frame_hdr *)buf, &fi);
	return ODL_FRAME_HDR_BYTES;
}

/*
 * Both hosts at once: frames each way through the mmap path. The sequence
 * also checks the ordering the module keeps across ring pairs (docs/kmod.md):
 * an early frame on stream 1, then ODL_SESS_S0 frames on stream 0, then
 * ODL_SESS_SX frames on each of streams 1..3, then a GOODBYE. With several
 * rings the first frame received must be of stream 0 (ring 0 opens the
 * session); with any count the GOODBYE must come exactly once and after
 * every other frame of the sequence; each stream in order.
 */
#define ODL_SESS_S0 64
#define ODL_SESS_SX 8
static int session_check(const char *path)
{
	const unsigned int nframes = 1 + ODL_SESS_S0 + 3 * ODL_SESS_SX + 1;
	struct odl_tb5_info info;
	struct odl_tb5_cqe ent, two[2];
	struct dev_map m;
	uint32_t free_idx[128], nfree = 0, got = 0, cons, prod, prod0, tx_seen = 0;
	uint32_t idx, held = UINT32_MAX;
	unsigned int got0 = 0, gotx[4] = { 0 }, early = 0, goodbyes = 0;
	double t0;
	unsigned int sent = 0, i, s;
	long rc;
	int fd;

	fd = open(path, O_RDWR | O_NONBLOCK);
	if (fd < 0) {
		printf("FAIL open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (wait_session(fd, &info))
		return 1;
	expect("session: map", map_all(fd, &m), 0);
	if (failures)
		return 1;
	/* Free Tx buffers from the Tx queue (all of them: none in flight). */
	cons = ctl(&m)->tx_cq.cons;
	prod = __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE);
	prod0 = prod;
	for (; cons != prod && nfree < 128; cons++)
		free_idx[nfree++] = cqe(&m, 1, cons)->index;
	__atomic_store_n(&ctl(&m)->tx_cq.cons, cons, __ATOMIC_RELEASE);
	if (nfree < nframes) {
		printf("FAIL session: only %u free Tx buffers at map\n", nfree);
		return 1;
	}
	for (sent = 0; sent < nframes; sent++) {
		unsigned char *buf;

		idx = free_idx[sent];
		buf = m.tx + (size_t)idx * m.mi.buf_size;
		ent.index = idx;
		if (sent == 0) {
			ent.len = make_frame_on(buf, 1, 200, 0xa1, ODL_FRAME_DATA);
		} else if (sent <= ODL_SESS_S0) {
			ent.len = make_frame(buf, 100 + sent - 1,
					     (unsigned char)(sent - 1), ODL_FRAME_DATA);
		} else if (sent < nframes - 1) {
			i = sent - 1 - ODL_SESS_S0;
			s = 1 + i / ODL_SESS_SX;
			ent.len = make_frame_on(buf, s, 300 + i % ODL_SESS_SX,
						(unsigned char)(16 * s + i % ODL_SESS_SX),
						ODL_FRAME_DATA);
		} else {
			ent.len = make_goodbye(buf);
		}
		rc = post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent);
		if (rc != 1) {
			expect("session: POST_SEND", rc, 0);
			return 1;
		}
	}
	printf("ok   session: %u frames posted (%u ring pair(s))\n", sent, info.rings);
	/* Receive in place; keep the first one to post it twice later. */
	cons = ctl(&m)->rx_cq.cons;
	for (t0 = now_s(); !goodbyes && now_s() - t0 < 30;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		struct odl_frame_info fi;
		const unsigned char *f;
		struct odl_tb5_cqe e;
		unsigned int k, want_len, want_fill;

		prod = __atomic_load_n(&ctl(&m)->rx_cq.prod, __ATOMIC_ACQUIRE);
		if (prod == cons) {
			poll(&pfd, 1, 100);
			continue;
		}
		e = *cqe(&m, 0, cons);
		__atomic_store_n(&ctl(&m)->rx_cq.cons, ++cons, __ATOMIC_RELEASE);
		f = m.rx + (size_t)e.index * m.mi.buf_size;
		if (e.index >= m.mi.rx_count ||
		    odl_frame_decode(f, e.len, ODL_MAX_STREAMS, &fi) != ODL_FRAME_OK ||
		    e.len != ODL_FRAME_HDR_BYTES + fi.len) {
			printf("FAIL session: frame %u: index %u len %u\n", got,
			       e.index, e.len);
			return 1;
		}
		if (got == 0 && info.rings > 1 && fi.stream != 0) {
			printf("FAIL session: first frame on stream %u with %u rings, want stream 0\n",
			       fi.stream, info.rings);
			return 1;
		}
		if (fi.type == ODL_FRAME_DATA && fi.stream == 0 && fi.len == 8 &&
		    got0 == ODL_SESS_S0) {
			/*
			 * The peer's "same buffer twice" frames, sent after its
			 * GOODBYE: on ring 0 they may pass the GOODBYE copy of
			 * another ring. Not part of the sequence.
			 */
			if (post(fd, ODL_TB5_IOC_POST_RECV, 1, &e.index) != 1) {
				expect("session: POST_RECV", -1, 0);
				return 1;
			}
			continue;
		}
		if (fi.type == ODL_FRAME_GOODBYE) {
			goodbyes++;
			want_len = 0;
			want_fill = 0;
		} else if (fi.stream == 0) {
			want_len = 100 + got0;
			want_fill = (unsigned char)got0++;
		} else if (fi.stream == 1 && !early) {
			early = 1;
			want_len = 200;
			want_fill = 0xa1;
		} else if (fi.stream <= 3) {
			k = gotx[fi.stream]++;
			want_len = 300 + k;
			want_fill = (unsigned char)(16 * fi.stream + k);
		} else {
			printf("FAIL session: frame %u on stream %u\n", got, fi.stream);
			return 1;
		}
		if (fi.len != want_len) {
			printf("FAIL session: frame %u (stream %u type %#x): len %u, want %u\n",
			       got, fi.stream, fi.type, fi.len, want_len);
			return 1;
		}
		for (k = ODL_FRAME_HDR_BYTES; k < e.len; k++)
			if (f[k] != want_fill) {
				printf("FAIL session: frame %u byte %u is %u\n",
				       got, k, f[k]);
				return 1;
			}
		if (held == UINT32_MAX) {
			held = e.index;
		} else if (post(fd, ODL_TB5_IOC_POST_RECV, 1, &e.index) != 1) {
			expect("session: POST_RECV", -1, 0);
			return 1;
		}
		got++;
	}
	if (got < nframes || got0 != ODL_SESS_S0 || !early ||
	    gotx[1] != ODL_SESS_SX || gotx[2] != ODL_SESS_SX ||
	    gotx[3] != ODL_SESS_SX) {
		struct odl_tb5_stats st;

		memset(&st, 0, sizeof(st));
		ioctl(fd, ODL_TB5_IOC_STATS, &st);
		printf("FAIL session: %u of %u frames by the GOODBYE (%u) or in 30 s: stream 0 %u, early %u, streams 1-3 %u %u %u (rx_frames %llu rx_bad[0] %llu rx_bad_pdf %llu tx_frames %llu)\n",
		       got, nframes, goodbyes, got0, early, gotx[1], gotx[2],
		       gotx[3], (unsigned long long)st.rx_frames,
		       (unsigned long long)st.rx_bad[0],
		       (unsigned long long)st.rx_bad_pdf,
		       (unsigned long long)st.tx_frames);
		return 1;
	}
	/* No second GOODBYE (a copy of another ring) may follow. */
	for (t0 = now_s(); now_s() - t0 < 0.5; usleep(10000)) {
		prod = __atomic_load_n(&ctl(&m)->rx_cq.prod, __ATOMIC_ACQUIRE);
		for (; cons != prod; cons++) {
			struct odl_tb5_cqe e = *cqe(&m, 0, cons);
			const unsigned char *f = m.rx + (size_t)e.index * m.mi.buf_size;
			struct odl_frame_info fi;

			if (e.index < m.mi.rx_count &&
			    odl_frame_decode(f, e.len, ODL_MAX_STREAMS, &fi) == ODL_FRAME_OK &&
			    fi.type == ODL_FRAME_GOODBYE) {
				printf("FAIL session: a second GOODBYE\n");
				failures++;
			}
			if (e.index < m.mi.rx_count)
				post(fd, ODL_TB5_IOC_POST_RECV, 1, &e.index);
		}
		__atomic_store_n(&ctl(&m)->rx_cq.cons, cons, __ATOMIC_RELEASE);
	}
	printf("ok   session: %u frames received in place, contents and order checked, one GOODBYE last\n", got);
	expect("session: POST_RECV held buffer", post(fd, ODL_TB5_IOC_POST_RECV, 1, &held), 0);
	expect("session: POST_RECV it again (double post)",
	       post(fd, ODL_TB5_IOC_POST_RECV, 1, &held), EINVAL);
	/*
	 * Every sent buffer comes back through the Tx queue; only then may
	 * one be written again (the NHI reads it until it has sent it).
	 */
	for (t0 = now_s(); now_s() - t0 < 30; usleep(10000)) {
		prod = __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE);
		tx_seen = prod - prod0;
		if (tx_seen >= nframes)
			break;
	}
	if (tx_seen < nframes) {
		printf("FAIL session: %u of %u Tx completions\n", tx_seen, nframes);
		return 1;
	} else {
		printf("ok   session: %u Tx completions\n", tx_seen);
	}
	/* The same buffer twice in one call: the first is taken, the second
	 * only if the NHI sent the first meanwhile (then it is ours again). */
	idx = free_idx[nframes - 1];
	for (i = 0; i < 2; i++) {
		two[i].index = idx;
		two[i].len = make_frame(m.tx + (size_t)idx * m.mi.buf_size, 8,
					0x5a, ODL_FRAME_DATA);
	}
	rc = post(fd, ODL_TB5_IOC_POST_SEND, 2, two);
	if (rc == 1 || rc == 2) {
		printf("ok   session: same Tx buffer twice in one post took %ld\n", rc);
	} else {
		printf("FAIL session: same Tx buffer twice: %ld errno %d\n", rc, errno);
		failures++;
	}
	/* Let the peer take the last frames before this side closes. */
	sleep(1);
	unmap_all(&m);
	close(fd);
	printf("%s: session, %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}

/* The service is removed while the device is mapped. */
static int gone_check(const char *path)
{
	struct odl_tb5_info info;
	struct odl_tb5_cqe ent = { 0, 64 };
	struct dev_map m;
	unsigned long sum = 0;
	uint32_t idx = 0;
	uint64_t k;
	double t0;
	int fd;

	fd = open(path, O_RDWR | O_NONBLOCK);
	if (fd < 0 || map_all(fd, &m)) {
		printf("FAIL gone: open/map %s: %s\n", path, strerror(errno));
		return 1;
	}
	printf("mapped\n");
	fflush(stdout);
	for (t0 = now_s();; usleep(50000)) {
		memset(&info, 0, sizeof(info));
		if (ioctl(fd, ODL_TB5_IOC_INFO, &info) == 0 &&
		    info.state == ODL_TB5_STATE_GONE)
			break;
		if (now_s() - t0 > 120) {
			printf("FAIL gone: still state %u after 120 s\n", info.state);
			return 1;
		}
	}
	/* Every page of every area: a freed page would fault or oops. */
	for (k = 0; k < m.mi.ctrl_size; k += 4096)
		sum += m.ctrl[k];
	for (k = 0; k < m.mi.tx_size; k += 4096) {
		sum += m.tx[k];
		m.tx[k] = 0x5a;
	}
	for (k = 0; k < m.mi.rx_size; k += 4096)
		sum += m.rx[k];
	printf("ok   gone: all %llu pages readable (sum %lu)\n",
	       (unsigned long long)((m.mi.ctrl_size + m.mi.tx_size + m.mi.rx_size) / 4096), sum);
	expect("gone: POST_SEND", post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent), ENODEV);
	expect("gone: POST_RECV", post(fd, ODL_TB5_IOC_POST_RECV, 1, &idx), ENODEV);
	expect("gone: MAP_INFO", ioctl(fd, ODL_TB5_IOC_MAP_INFO, &m.mi), ENODEV);
	{
		struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };

		expect("gone: poll", poll(&pfd, 1, 0) == 1 ? 0 : -1, 0);
		if (!(pfd.revents & POLLHUP)) {
			printf("FAIL gone: poll revents %#x, want POLLHUP\n", pfd.revents);
			failures++;
		}
	}
	unmap_all(&m);
	close(fd);
	printf("%s: gone, %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}

/*
 * Both hosts at once: frames both ways on every stream until the link goes,
 * so each Rx ring is busy (and in polling mode often masked) when it does.
 * Each frame's first 8 payload bytes carry how many frames the sender has
 * received: a sender keeps at most ODL_FLOOD_WINDOW frames beyond what the
 * peer reported, less than one ring holds, so no Rx ring runs dry; with
 * the window closed it still sends one frame when it has received more
 * since its last one (otherwise both could wait for the other's report).
 */
#define ODL_FLOOD_STREAMS 4
#define ODL_FLOOD_PAYLOAD 64
#define ODL_FLOOD_BATCH 32
#define ODL_FLOOD_WINDOW 512
static int flood(const char *path, unsigned int secs)
{
	static unsigned char rbuf[64 * ODL_FRAME_MAX_BYTES];
	unsigned char wbuf[ODL_FLOOD_BATCH * (ODL_FRAME_HDR_BYTES + ODL_FLOOD_PAYLOAD)];
	uint64_t sent = 0, got = 0, acked = 0, told = 0, v;
	uint64_t per[ODL_FLOOD_STREAMS] = { 0 };
	struct odl_tb5_info info;
	struct odl_frame_info fi;
	int fd, err = 0, said = 0;
	unsigned int i, n, s;
	size_t off, len;
	ssize_t rc;
	double t0;

	fd = open(path, O_RDWR | O_NONBLOCK);
	if (fd < 0) {
		printf("FAIL flood: open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (wait_session(fd, &info))
		return 1;
	for (t0 = now_s(); !err; ) {
		int progress = 0;

		if (now_s() - t0 > secs) {
			printf("FAIL flood: the link was still up after %u s\n", secs);
			return 1;
		}
		/* Round robin over the streams, stream 0 first. */
		for (n = 0; n < ODL_FLOOD_BATCH; n++) {
			unsigned char *f = wbuf + n * (ODL_FRAME_HDR_BYTES + ODL_FLOOD_PAYLOAD);

			if (sent + n >= acked + ODL_FLOOD_WINDOW && (n || got == told))
				break;
			make_frame_on(f, (sent + n) % ODL_FLOOD_STREAMS, ODL_FLOOD_PAYLOAD,
				      0xa5, ODL_FRAME_DATA);
			memcpy(f + ODL_FRAME_HDR_BYTES, &got, sizeof(got));
		}
		if (n) {
			rc = write(fd, wbuf, n * (ODL_FRAME_HDR_BYTES + ODL_FLOOD_PAYLOAD));
			if (rc > 0) {
				/* Whole frames only: each has the same size. */
				sent += rc / (ODL_FRAME_HDR_BYTES + ODL_FLOOD_PAYLOAD);
				told = got;
				progress = 1;
			} else if (rc < 0 && errno != EAGAIN) {
				err = errno;
				break;
			}
		}
		rc = read(fd, rbuf, sizeof(rbuf));
		if (rc < 0 && errno != EAGAIN) {
			err = errno;
			break;
		}
		for (off = 0; rc > 0 && off < (size_t)rc; off += len) {
			if (odl_frame_decode(rbuf + off, rc - off, ODL_MAX_STREAMS, &fi) ||
			    fi.type != ODL_FRAME_DATA || fi.len != ODL_FLOOD_PAYLOAD ||
			    fi.stream >= ODL_FLOOD_STREAMS) {
				printf("FAIL flood: bad frame %llu at offset %zu\n",
				       (unsigned long long)got, off);
				return 1;
			}
			len = ODL_FRAME_HDR_BYTES + fi.len;
			memcpy(&v, rbuf + off + ODL_FRAME_HDR_BYTES, sizeof(v));
			if (v > acked)
				acked = v;
			per[fi.stream]++;
			got++;
			progress = 1;
		}
		for (s = 0; !said && s < ODL_FLOOD_STREAMS && per[s]; s++)
			;
		if (!said && s == ODL_FLOOD_STREAMS) {
			said = 1;
			printf("flooding\n");
			fflush(stdout);
		}
		if (!progress) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };

			poll(&pfd, 1, 10);
		}
	}
	printf("flood: sent %llu received %llu (streams", (unsigned long long)sent,
	       (unsigned long long)got);
	for (i = 0; i < ODL_FLOOD_STREAMS; i++)
		printf(" %llu", (unsigned long long)per[i]);
	printf("), ended: %s\n", strerror(err));
	close(fd);
	/* The device went (ENODEV) or the session ended (EPIPE, ENOTCONN). */
	if (err != ENODEV && err != EPIPE && err != ENOTCONN) {
		printf("FAIL flood: unexpected end\n");
		return 1;
	}
	return 0;
}

/* The mmap/post table; @fd has no session. Leaves the file mapped in @m. */
static void mmap_table(int fd, struct dev_map *m)
{
	struct odl_tb5_map_info mi, mi2;
	struct odl_tb5_cqe ent;
	struct odl_tb5_post p;
	unsigned char buf[ODL_FRAME_MAX_BYTES];
	uint32_t idx, prod;
	void *v;

	memset(m, 0, sizeof(*m));
	ent.index = 0;
	ent.len = 64;
	idx = 0;
	expect("POST_SEND before MAP_INFO", post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent), EINVAL);
	expect("POST_RECV before MAP_INFO", post(fd, ODL_TB5_IOC_POST_RECV, 1, &idx), EINVAL);
	v = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	expect("mmap before MAP_INFO", v == MAP_FAILED ? -1 : 0, EINVAL);
	if (v != MAP_FAILED)
		munmap(v, 4096);
	memset(&mi, 0, sizeof(mi));
	mi.flags = 1;
	expect("MAP_INFO flags != 0", ioctl(fd, ODL_TB5_IOC_MAP_INFO, &mi), EINVAL);
	memset(&mi, 0, sizeof(mi));
	mi.reserved[7] = 1;
	expect("MAP_INFO reserved != 0", ioctl(fd, ODL_TB5_IOC_MAP_INFO, &mi), EINVAL);
	expect("MAP_INFO NULL", ioctl(fd, ODL_TB5_IOC_MAP_INFO, NULL), EFAULT);
	expect("read still works before MAP_INFO", read(fd, buf, sizeof(buf)), EAGAIN);

	memset(&mi, 0, sizeof(mi));
	expect("MAP_INFO valid", ioctl(fd, ODL_TB5_IOC_MAP_INFO, &mi), 0);
	if (!mi.cq_entries || (mi.cq_entries & (mi.cq_entries - 1)) ||
	    mi.cq_entries <= mi.tx_count || mi.cq_entries <= mi.rx_count ||
	    mi.buf_size < ODL_FRAME_MAX_BYTES || mi.post_max != ODL_TB5_POST_MAX ||
	    mi.tx_size != (uint64_t)mi.tx_count * mi.buf_size ||
	    mi.rx_size != (uint64_t)mi.rx_count * mi.buf_size ||
	    mi.tx_cqe_offset + (uint64_t)mi.cq_entries * 8 > mi.ctrl_size) {
		printf("FAIL MAP_INFO layout: cq %u tx %u rx %u buf %u ctrl %llu\n",
		       mi.cq_entries, mi.tx_count, mi.rx_count, mi.buf_size,
		       (unsigned long long)mi.ctrl_size);
		failures++;
	} else {
		printf("ok   MAP_INFO tx %u rx %u buf %u cq %u ctrl %llu tx@%llu rx@%llu\n",
		       mi.tx_count, mi.rx_count, mi.buf_size, mi.cq_entries,
		       (unsigned long long)mi.ctrl_size,
		       (unsigned long long)mi.tx_offset,
		       (unsigned long long)mi.rx_offset);
	}
	memset(&mi2, 0, sizeof(mi2));
	expect("MAP_INFO again", ioctl(fd, ODL_TB5_IOC_MAP_INFO, &mi2), 0);
	if (memcmp(&mi, &mi2, sizeof(mi))) {
		printf("FAIL MAP_INFO again: different layout\n");
		failures++;
	}
	m->mi = mi;
	expect("read in mmap mode", read(fd, buf, sizeof(buf)), EOPNOTSUPP);
	make_frame(buf, 100, 1, ODL_FRAME_DATA);
	expect("write in mmap mode", write(fd, buf, 132), EOPNOTSUPP);

#define MMAP_EXPECT(what, len, prot, flags, off, err)                      \
	do {                                                               \
		v = mmap(NULL, (len), (prot), (flags), fd, (off));         \
		expect(what, v == MAP_FAILED ? -1 : 0, (err));             \
		if (v != MAP_FAILED)                                       \
			munmap(v, (len));                                  \
	} while (0)
	MMAP_EXPECT("mmap ctrl too long", mi.ctrl_size + 4096, PROT_READ, MAP_SHARED, 0, EINVAL);
	/* 0 bytes when the area is one page: refused by mmap() itself. */
	MMAP_EXPECT("mmap ctrl too short", mi.ctrl_size - 4096, PROT_READ, MAP_SHARED, 0, EINVAL);
	MMAP_EXPECT("mmap Tx at +1 page", mi.tx_size - 4096, PROT_READ, MAP_SHARED,
		    mi.tx_offset + 4096, EINVAL);
	MMAP_EXPECT("mmap Tx and Rx as one", mi.tx_size + mi.rx_size, PROT_READ,
		    MAP_SHARED, mi.tx_offset, EINVAL);
	MMAP_EXPECT("mmap beyond Rx", 4096, PROT_READ, MAP_SHARED,
		    mi.rx_offset + mi.rx_size, EINVAL);
	MMAP_EXPECT("mmap huge offset", 4096, PROT_READ, MAP_SHARED,
		    (off_t)1 << 46, EINVAL);
	MMAP_EXPECT("mmap Rx writable", mi.rx_size, PROT_READ | PROT_WRITE,
		    MAP_SHARED, mi.rx_offset, EPERM);
	MMAP_EXPECT("mmap ctrl executable", mi.ctrl_size, PROT_READ | PROT_EXEC,
		    MAP_SHARED, 0, EPERM);
	MMAP_EXPECT("mmap ctrl private", mi.ctrl_size, PROT_READ, MAP_PRIVATE, 0, EINVAL);

	expect("map all three areas", map_all(fd, m), 0);
	if (m->ctrl == MAP_FAILED || m->tx == MAP_FAILED || m->rx == MAP_FAILED) {
		printf("FAIL cannot map: skipping the post table\n");
		failures++;
		exit(1);
	}
	expect("mprotect Rx writable",
	       mprotect(m->rx, mi.rx_size, PROT_READ | PROT_WRITE), EACCES);
	/* A second view of the control area sees the same queue. */
	v = mmap(NULL, mi.ctrl_size, PROT_READ, MAP_SHARED, fd, mi.ctrl_offset);
	expect("mmap ctrl twice", v == MAP_FAILED ? -1 : 0, 0);
	prod = __atomic_load_n(&ctl(m)->tx_cq.prod, __ATOMIC_ACQUIRE);
	if (v != MAP_FAILED) {
		if (((struct odl_tb5_ctrl *)v)->tx_cq.prod != prod) {
			printf("FAIL second ctrl view differs\n");
			failures++;
		}
		munmap(v, mi.ctrl_size);
	}
	/* No session: every Tx buffer is free, hence the user's. */
	if (prod != mi.tx_count) {
		printf("FAIL Tx queue holds %u entries after MAP_INFO, want %u\n",
		       prod, mi.tx_count);
		failures++;
	} else {
		printf("ok   Tx queue holds all %u Tx buffers\n", prod);
	}
	idx = cqe(m, 1, 0)->index;

	p = (struct odl_tb5_post){ .count = 0, .entries = (uintptr_t)&ent };
	expect("POST_SEND count 0", ioctl(fd, ODL_TB5_IOC_POST_SEND, &p), EINVAL);
	p.count = ODL_TB5_POST_MAX + 1;
	expect("POST_SEND count > max", ioctl(fd, ODL_TB5_IOC_POST_SEND, &p), EINVAL);
	p.count = 1;
	p.flags = 2;
	expect("POST_SEND flags != 0", ioctl(fd, ODL_TB5_IOC_POST_SEND, &p), EINVAL);
	expect("POST_SEND NULL", ioctl(fd, ODL_TB5_IOC_POST_SEND, NULL), EFAULT);
	expect("POST_SEND entries NULL", post(fd, ODL_TB5_IOC_POST_SEND, 1, NULL), EFAULT);
	expect("POST_SEND entries bad", post(fd, ODL_TB5_IOC_POST_SEND, 4, (void *)16), EFAULT);
	ent.index = mi.tx_count;
	ent.len = make_frame(m->tx + (size_t)idx * mi.buf_size, 100, 7, ODL_FRAME_DATA);
	expect("POST_SEND index out of range", post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent), EINVAL);
	ent.index = UINT32_MAX;
	expect("POST_SEND index ~0", post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent), EINVAL);
	ent.index = idx;
	ent.len = 8;
	expect("POST_SEND len < header", post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent), EINVAL);
	ent.len = ODL_FRAME_MAX_BYTES + 1;
	expect("POST_SEND len > frame", post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent), EINVAL);
	ent.len = ODL_FRAME_HDR_BYTES + 99;
	expect("POST_SEND len != header len", post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent), EINVAL);
	ent.len = make_frame(m->tx + (size_t)idx * mi.buf_size, 100, 7, 0x77);
	expect("POST_SEND bad header type", post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent), EINVAL);
	ent.len = make_frame(m->tx + (size_t)idx * mi.buf_size, 100, 7, ODL_FRAME_DATA);
	expect("POST_SEND valid, no session", post(fd, ODL_TB5_IOC_POST_SEND, 1, &ent), ENOTCONN);

	p = (struct odl_tb5_post){ .count = 0, .entries = (uintptr_t)&idx };
	expect("POST_RECV count 0", ioctl(fd, ODL_TB5_IOC_POST_RECV, &p), EINVAL);
	p.count = ODL_TB5_POST_MAX + 1;
	expect("POST_RECV count > max", ioctl(fd, ODL_TB5_IOC_POST_RECV, &p), EINVAL);
	expect("POST_RECV NULL", ioctl(fd, ODL_TB5_IOC_POST_RECV, NULL), EFAULT);
	expect("POST_RECV entries bad", post(fd, ODL_TB5_IOC_POST_RECV, 2, (void *)16), EFAULT);
	idx = mi.rx_count;
	expect("POST_RECV index out of range", post(fd, ODL_TB5_IOC_POST_RECV, 1, &idx), EINVAL);
	idx = 0;
	expect("POST_RECV buffer the ring owns", post(fd, ODL_TB5_IOC_POST_RECV, 1, &idx), EINVAL);
	{
		struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };

		expect("poll, no session", poll(&pfd, 1, 0), 0);
		if (pfd.revents & (POLLIN | POLLOUT)) {
			printf("FAIL poll revents %#x with no session\n", pfd.revents);
			failures++;
		}
	}
}

/* Random posts and mappings; none may crash, leak or WARN. */
static void mmap_stress(int fd, struct dev_map *m, unsigned long iters)
{
	const uint64_t offs[] = { m->mi.ctrl_offset, m->mi.tx_offset, m->mi.rx_offset };
	const uint64_t lens[] = { m->mi.ctrl_size, m->mi.tx_size, m->mi.rx_size };
	struct odl_tb5_cqe ents[8];
	uint32_t idx[8];
	unsigned long i;
	unsigned int k, n;

	for (i = 0; i < iters; i++) {
		n = 1 + rand() % 8;
		for (k = 0; k < n; k++) {
			ents[k].index = rand() % 3 ? rand() % (m->mi.tx_count + 2) : (uint32_t)rand();
			ents[k].len = rand() % 3 ? rand() % (ODL_FRAME_MAX_BYTES + 2) : (uint32_t)rand();
			idx[k] = rand() % 3 ? rand() % (m->mi.rx_count + 2) : (uint32_t)rand();
			if (rand() % 4 == 0 && ents[k].index < m->mi.tx_count)
				make_frame(m->tx + (size_t)ents[k].index * m->mi.buf_size,
					   rand() % 200, 0, rand() % 2 ? ODL_FRAME_DATA : rand());
		}
		switch (rand() % 5) {
		case 0:
			post(fd, ODL_TB5_IOC_POST_SEND, rand() % 4 ? n : (uint32_t)rand(),
			     rand() % 8 ? (void *)ents : (void *)(uintptr_t)rand());
			break;
		case 1:
			post(fd, ODL_TB5_IOC_POST_RECV, rand() % 4 ? n : (uint32_t)rand(),
			     rand() % 8 ? (void *)idx : (void *)(uintptr_t)rand());
			break;
		case 2: {
			int a = rand() % 3;
			uint64_t off = rand() % 4 ? offs[a] : offs[a] + 4096 * (uint64_t)(rand() % 3);
			uint64_t len = rand() % 4 ? lens[a] : 4096 * (uint64_t)(1 + rand() % 4);
			void *v = mmap(NULL, len, rand() % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
				       MAP_SHARED, fd, off);

			if (v != MAP_FAILED) {
				/* Touch it: the pages must be there. */
				(void)*(volatile unsigned char *)v;
				munmap(v, len);
			}
			break;
		}
		case 3:
			ioctl(fd, ODL_TB5_IOC_MAP_INFO, rand() % 2 ? (void *)&m->mi : (void *)(uintptr_t)rand());
			break;
		default: {
			struct pollfd pfd = { .fd = fd, .events = POLLIN | POLLOUT };

			poll(&pfd, 1, 0);
			break;
		}
		}
	}
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/dev/odl_tb5_0";
	unsigned long iters = argc > 2 ? strtoul(argv[2], NULL, 0) : 20000;
	struct odl_tb5_stats st;
	struct odl_tb5_info info;
	unsigned char buf[2 * ODL_FRAME_MAX_BYTES];
	struct odl_frame_info fi;
	unsigned long i;
	struct dev_map m;
	uint32_t prod;
	int fd, fd2;

	if (argc > 3 && !strcmp(argv[3], "session"))
		return session_check(path);
	if (argc > 3 && !strcmp(argv[3], "gone"))
		return gone_check(path);
	if (argc > 3 && !strcmp(argv[3], "flood"))
		return flood(path, argc > 4 ? strtoul(argv[4], NULL, 0) : 120);
	fd = open(path, O_RDWR | O_NONBLOCK);
	if (fd < 0) {
		printf("FAIL open %s: %s\n", path, strerror(errno));
		return 1;
	}
	fd2 = open(path, O_RDWR | O_NONBLOCK);
	expect("second open", fd2, EBUSY);
	if (fd2 >= 0)
		close(fd2);

	memset(&info, 0, sizeof(info));
	expect("INFO valid", ioctl(fd, ODL_TB5_IOC_INFO, &info), 0);
	if (info.abi_version != ODL_TB5_ABI_VERSION || info.ring_size < 64 ||
	    info.frame_bytes != ODL_FRAME_MAX_BYTES) {
		printf("FAIL INFO contents: abi %u ring %u frame %u\n",
		       info.abi_version, info.ring_size, info.frame_bytes);
		failures++;
	} else {
		printf("ok   INFO state %u ring %u tx HopID %u rx HopID %u peer %s rx_poll %u irq_throttle_ns %u rings %u local_rings %u peer_rings %u split %u local_split %u rx_capacity %u\n",
		       info.state, info.ring_size, info.tx_hopid, info.rx_hopid,
		       info.peer_name, info.rx_poll, info.irq_throttle_ns,
		       info.rings, info.local_rings, info.peer_rings,
		       info.split, info.local_split, info.rx_capacity);
	}
	memset(&info, 0, sizeof(info));
	info.flags = 1;
	expect("INFO flags != 0", ioctl(fd, ODL_TB5_IOC_INFO, &info), EINVAL);
	memset(&info, 0, sizeof(info));
	info.reserved[0] = 1;
	expect("INFO reserved != 0", ioctl(fd, ODL_TB5_IOC_INFO, &info), EINVAL);
	expect("INFO NULL", ioctl(fd, ODL_TB5_IOC_INFO, NULL), EFAULT);
	expect("INFO bad pointer", ioctl(fd, ODL_TB5_IOC_INFO, (void *)16), EFAULT);

	memset(&st, 0, sizeof(st));
	expect("STATS valid", ioctl(fd, ODL_TB5_IOC_STATS, &st), 0);
	printf("ok   STATS logins %llu logouts %llu login_failures %llu reannounces %llu xd_bad %llu rx_frames %llu rx_poll_starts %llu ring_tx %u,%u,%u,%u ring_rx %u,%u,%u,%u tx_split %llu rx_split %llu rx_bad_split %llu\n",
	       (unsigned long long)st.logins, (unsigned long long)st.logouts,
	       (unsigned long long)st.login_failures,
	       (unsigned long long)st.reannounces,
	       (unsigned long long)st.xd_bad,
	       (unsigned long long)st.rx_frames,
	       (unsigned long long)st.rx_poll_starts,
	       st.ring_tx_frames[0], st.ring_tx_frames[1],
	       st.ring_tx_frames[2], st.ring_tx_frames[3],
	       st.ring_rx_frames[0], st.ring_rx_frames[1],
	       st.ring_rx_frames[2], st.ring_rx_frames[3],
	       (unsigned long long)st.tx_split,
	       (unsigned long long)st.rx_split,
	       (unsigned long long)st.rx_bad_split);
	memset(&st, 0, sizeof(st));
	st.flags = 1u << 5;
	expect("STATS unknown flag", ioctl(fd, ODL_TB5_IOC_STATS, &st), EINVAL);
	memset(&st, 0, sizeof(st));
	st.reserved0 = 7;
	expect("STATS reserved0 != 0", ioctl(fd, ODL_TB5_IOC_STATS, &st), EINVAL);
	memset(&st, 0, sizeof(st));
	st.reserved[0] = 1;
	expect("STATS reserved != 0", ioctl(fd, ODL_TB5_IOC_STATS, &st), EINVAL);
	memset(&st, 0, sizeof(st));
	st.rx_damaged = 1;
	expect("STATS rx_damaged != 0 on input", ioctl(fd, ODL_TB5_IOC_STATS, &st), EINVAL);
	expect("STATS NULL", ioctl(fd, ODL_TB5_IOC_STATS, NULL), EFAULT);
	{
		/* ABI 2's smaller STATS: answered, bytes past it untouched */
		unsigned char v2[sizeof(st)];
		struct odl_tb5_stats now;

		memset(v2, 0xa5, sizeof(v2));
		memset(v2, 0, ODL_TB5_STATS_SIZE_V2);
		memset(&now, 0, sizeof(now));
		expect("STATS of ABI 2 size", ioctl(fd, ODL_TB5_IOC_STATS_V2, v2), 0);
		expect("STATS after it", ioctl(fd, ODL_TB5_IOC_STATS, &now), 0);
		memcpy(&st, v2, sizeof(st));
		if (v2[ODL_TB5_STATS_SIZE_V2] != 0xa5 || v2[sizeof(v2) - 1] != 0xa5 ||
		    st.tx_split || st.rx_split || st.logins != now.logins ||
		    st.rx_frames > now.rx_frames) {
			printf("FAIL STATS of ABI 2 size: wrote past %d bytes or wrong counters (logins %llu/%llu)\n",
			       ODL_TB5_STATS_SIZE_V2, (unsigned long long)st.logins,
			       (unsigned long long)now.logins);
			failures++;
		} else {
			printf("ok   STATS of ABI 2 size: logins %llu, nothing past %d bytes\n",
			       (unsigned long long)st.logins, ODL_TB5_STATS_SIZE_V2);
		}
		memset(v2, 0, sizeof(v2));
		v2[ODL_TB5_STATS_SIZE_V2 - 16] = 1; /* ABI 2's reserved[0] */
		expect("STATS of ABI 2 size, reserved != 0",
		       ioctl(fd, ODL_TB5_IOC_STATS_V2, v2), EINVAL);
	}
	expect("unknown command", ioctl(fd, _IO(ODL_TB5_IOC_MAGIC, 0x7f), 0), ENOTTY);
	expect("INFO with wrong size",
	       ioctl(fd, _IOWR(ODL_TB5_IOC_MAGIC, 0x01, uint32_t), &info), ENOTTY);

	expect("read buffer < one frame", read(fd, buf, 100), EINVAL);
	expect("read with nothing waiting", read(fd, buf, sizeof(buf)), EAGAIN);
	expect("write < header", write(fd, buf, 8), EINVAL);
	memset(buf, 0, sizeof(buf));
	fi = (struct odl_frame_info){ .type = ODL_FRAME_DATA,
				      .flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM,
				      .len = 100, .msg_len = 100 };
	odl_frame_encode((struct odl_frame_hdr *)buf, &fi);
	expect("write len beyond buffer", write(fd, buf, 64), EINVAL);
	fi.len = 5000;
	odl_frame_encode((struct odl_frame_hdr *)buf, &fi);
	expect("write len > frame", write(fd, buf, sizeof(buf)), EINVAL);
	{
		/* An unmapped address the compiler cannot see through. */
		volatile uintptr_t bad = 16;

		expect("write bad pointer", write(fd, (const void *)bad, 64), EFAULT);
	}
	/* Header checks in the module: only when a session is up do frames get
	 * that far; without one the answer is ENOTCONN. */
	fi.len = 100;
	fi.type = 0x77;
	odl_frame_encode((struct odl_frame_hdr *)buf, &fi);
	expect("write unknown type (no session)", write(fd, buf, 132), ENOTCONN);

	/* Bounded randomized stress: random commands and bytes, no crash. */
	srand(12345);
	for (i = 0; i < iters; i++) {
		unsigned char junk[512];
		unsigned int cmd;
		size_t k;

		for (k = 0; k < sizeof(junk); k++)
			junk[k] = rand();
		switch (rand() % 4) {
		case 0: cmd = ODL_TB5_IOC_INFO; break;
		case 1: cmd = ODL_TB5_IOC_STATS; break;
		case 2: cmd = _IOC(rand() % 4, ODL_TB5_IOC_MAGIC, rand() % 8, rand() % 600); break;
		default: cmd = rand(); break;
		}
		ioctl(fd, cmd, (rand() % 8) ? (void *)junk : (void *)(uintptr_t)rand());
		if (rand() % 16 == 0)
			(void)write(fd, junk, rand() % sizeof(junk));
	}
	memset(&info, 0, sizeof(info));
	expect("INFO after stress", ioctl(fd, ODL_TB5_IOC_INFO, &info), 0);
	if (iters) {
		mmap_table(fd, &m);
		/* Each mapping of a buffer area inserts every page: fewer. */
		mmap_stress(fd, &m, iters < 5000 ? iters : 5000);
		expect("INFO after mmap stress", ioctl(fd, ODL_TB5_IOC_INFO, &info), 0);
		/* Closing while mapped: the file lives until the mappings go. */
		close(fd);
		unmap_all(&m);
		/* A fresh open starts clean: every Tx buffer is the user's. */
		fd = open(path, O_RDWR | O_NONBLOCK);
		expect("reopen after mmap", fd, 0);
		if (fd >= 0 && map_all(fd, &m) == 0) {
			prod = __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE);
			if (prod != m.mi.tx_count) {
				printf("FAIL after reopen the Tx queue holds %u, want %u (leak)\n",
				       prod, m.mi.tx_count);
				failures++;
			} else {
				printf("ok   after reopen all %u Tx buffers are back\n", prod);
			}
			unmap_all(&m);
		} else {
			expect("map after reopen", -1, 0);
		}
	}
	close(fd);
	printf("%s: %d failure(s), %lu stress iterations\n",
	       failures ? "FAIL" : "PASS", failures, iters);
	return failures ? 1 : 0;
}
