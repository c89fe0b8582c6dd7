// SPDX-License-Identifier: MIT
/*
 * Guest-side checks of odl_tb5's dma-buf send path (DMABUF_IMPORT,
 * DMABUF_RELEASE, POST_SEND_DMABUF; include/uapi/odl_tb5.h). The dma-bufs
 * come from /dev/udmabuf (a sealed memfd).
 *
 * "table" (no session: the peer's device closed): the bad-argument table
 * (each errno of the ABI), the import limit, the segment rule (a frame
 * across two physically separate pages is refused; /proc/self/pagemap
 * tells which are), and a leak check: after close every imported dma-buf
 * is gone (debugfs dma_buf/bufinfo). Without an exporter in the guest
 * (Debian's 6.1: no CONFIG_UDMABUF, no dma heaps) only the cases that need
 * none run, and it exits 2: the dma-buf path was NOT tested.
 *
 * "session A|B" (both hosts at once): each imports a dma-buf, writes
 * ODL_DB_FRAMES frames into it with the shared codec, sends them with one
 * POST_SEND_DMABUF (RELEASE right after must be -EBUSY unless every
 * completion is already in the Tx queue), waits for one Tx completion per
 * frame, and receives the peer's frames, comparing every byte and each
 * stream's order. Then A posts ODL_DB_TAIL more frames from a second import
 * and closes at once (frames in flight on close); B receives those too,
 * before it sees the session end (as libodl, B stops at the end once the
 * module holds nothing more: A's close notice must not overtake them).
 * A then checks that both dma-bufs are freed.
 *
 * "unplug" keeps the Tx rings full of dma-buf frames while the test pulls
 * the cable (the peer runs "sink"), then checks that every frame completed
 * once (sent or cancelled) and that the service's removal released the
 * import before the file was closed.
 *
 * "split A|B" (both hosts at once, split=1 on both): each imports a
 * udmabuf device-only (ODL_TB5_DMABUF_F_DEVICE, as GPU memory without a
 * CPU mapping would be), puts ODL_SPLIT_FRAMES payloads in it (1 byte,
 * ODL_FRAME_MAX_PAYLOAD and lengths between) and sends them with
 * POST_SEND_SPLIT, headers in Tx buffers, while it receives the peer's as
 * ordinary frames (every byte and each stream's order checked). Every Tx
 * buffer and every payload must complete once; STATS must show the pairs
 * each way (tx_split, rx_split) and no rx_bad_split.
 *
 * "window S|R" (small ring_size, split=1): S sends rx_capacity pairs on one
 * stream (one ring) at once; R holds every frame it gets (no POST_RECV)
 * and must get them all, none lost, then gives them back.
 *
 * "refused" (the peer runs split=0 and "sink"): POST_SEND_SPLIT answers
 * -EOPNOTSUPP.
 *
 * "bench whole|split|recv N": throughput numbers only (not a test).
 *
 * Usage: odl_tb5_dmabuf /dev/odl_tb5_0 table|session A|B|unplug|sink|
 *	split A|B|window S|R|refused|bench whole|split|recv N
 * Exit: 0 all passed, 1 a failure, 2 no exporter (partial, not a pass).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/dma-buf.h>
#include <linux/udmabuf.h>

#include "odl/wire/frame_codec.h"
#include "uapi/odl_tb5.h"
#include "odl_tb5_check.h"

#define ODL_DB_PAGES 64
#define ODL_DB_FRAMES 64
#define ODL_DB_TAIL 32
#define ODL_SPLIT_FRAMES 320 /* split pairs each way */
#define ODL_SPLIT_SEQ 10     /* tags from here on: split payload lengths */
#define ODL_WINDOW_SEQ 13    /* "window": every frame on stream 0 */

static long page_size;

/* A dma-buf from /dev/udmabuf over a sealed memfd, mapped at *va. */
struct dbuf {
	int fd;
	int memfd;
	size_t size;
	unsigned char *va;
};

static int dbuf_create(struct dbuf *d, size_t pages)
{
	struct udmabuf_create c = { 0 };
	int dev;

	memset(d, 0, sizeof(*d));
	d->fd = d->memfd = -1;
	d->size = pages * page_size;
	dev = open("/dev/udmabuf", O_RDWR);
	if (dev < 0)
		return -1;
	d->memfd = memfd_create("odl-dmabuf", MFD_ALLOW_SEALING);
	if (d->memfd < 0 || ftruncate(d->memfd, d->size) ||
	    fcntl(d->memfd, F_ADD_SEALS, F_SEAL_SHRINK)) {
		close(dev);
		return -1;
	}
	c.memfd = d->memfd;
	c.flags = UDMABUF_FLAGS_CLOEXEC;
	c.size = d->size;
	d->fd = ioctl(dev, UDMABUF_CREATE, &c);
	close(dev);
	if (d->fd < 0)
		return -1;
	d->va = mmap(NULL, d->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		     d->memfd, 0);
	if (d->va == MAP_FAILED)
		return -1;
	/* Fault every page in, so pagemap can name them. */
	memset(d->va, 0, d->size);
	return 0;
}

static void dbuf_destroy(struct dbuf *d)
{
	if (d->va && d->va != MAP_FAILED)
		munmap(d->va, d->size);
	if (d->fd >= 0)
		close(d->fd);
	if (d->memfd >= 0)
		close(d->memfd);
	d->fd = d->memfd = -1;
	d->va = NULL;
}

static void dbuf_sync(struct dbuf *d, uint64_t flags)
{
	struct dma_buf_sync s = { .flags = flags | DMA_BUF_SYNC_WRITE };

	if (ioctl(d->fd, DMA_BUF_IOCTL_SYNC, &s))
		check("DMA_BUF_IOCTL_SYNC", 0);
}

/* Physical frame number of the page at @p, 0 if unknown. */
/*
 * A translating IOMMU (group type DMA or DMA-FQ) maps the dma-buf's pages
 * into one IOVA range, so pages apart in memory are one DMA segment and a
 * frame across them is rightly taken: the segment rule is then not visible
 * from physical addresses.
 */
static int iommu_translates(void)
{
	char path[512], buf[64];
	struct dirent *e;
	int yes = 0;
	DIR *d = opendir("/sys/bus/pci/devices");

	while (d && !yes && (e = readdir(d))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class", e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		buf[0] = 0;
		if (!fgets(buf, sizeof(buf), f) || strncmp(buf, "0x0c0340", 8)) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group/type", e->d_name);
		f = fopen(path, "r");
		if (f && fgets(buf, sizeof(buf), f))
			yes = !strncmp(buf, "DMA", 3);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return yes;
}

static uint64_t pfn_of(const void *p)
{
	uint64_t ent = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY);
	off_t off = (uintptr_t)p / page_size * 8;

	if (fd < 0)
		return 0;
	if (pread(fd, &ent, 8, off) != 8)
		ent = 0;
	close(fd);
	return (ent >> 63) & 1 ? ent & ((1ULL << 55) - 1) : 0;
}

/* Total dma-bufs in the system (debugfs), -1 if unknown. */
static long dmabuf_count(void)
{
	char line[256], c;
	long n = -1;
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");

	if (!f)
		return -1;
	/* "Total N objects, B bytes" (not "Total N devices attached"). */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Total %ld objects%c", &n, &c) == 2)
			break;
	fclose(f);
	return n;
}

/* Attachments of all dma-bufs (debugfs), -1 if unknown. */
static long dmabuf_attachments(void)
{
	char line[256];
	long n = 0, k;
	FILE *f = fopen("/sys/kernel/debug/dma_buf/bufinfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Total %ld devices attached", &k) == 1 &&
		    strstr(line, "devices attached"))
			n += k;
	fclose(f);
	return n;
}

static int import_fd(int dev, int fd, struct odl_tb5_dmabuf_import *im)
{
	memset(im, 0, sizeof(*im));
	im->fd = fd;
	return ioctl(dev, ODL_TB5_IOC_DMABUF_IMPORT, im);
}

static int release_h(int dev, uint32_t handle)
{
	struct odl_tb5_dmabuf_release r = { .handle = handle };

	return ioctl(dev, ODL_TB5_IOC_DMABUF_RELEASE, &r);
}

static long post_db(int dev, uint32_t count, const struct odl_tb5_dmabuf_entry *e)
{
	struct odl_tb5_post p = { .count = count, .entries = (uintptr_t)e };

	return ioctl(dev, ODL_TB5_IOC_POST_SEND_DMABUF, &p);
}

static long post_split(int dev, uint32_t count, const struct odl_tb5_split_entry *e)
{
	struct odl_tb5_post p = { .count = count, .entries = (uintptr_t)e };

	return ioctl(dev, ODL_TB5_IOC_POST_SEND_SPLIT, &p);
}

static int stats(int dev, struct odl_tb5_stats *st)
{
	memset(st, 0, sizeof(*st));
	return ioctl(dev, ODL_TB5_IOC_STATS, st);
}

/* Frame @k of sequence @seq: its stream, length and payload bytes. */
static uint16_t frame_stream(unsigned int seq, unsigned int k)
{
	if (seq == ODL_WINDOW_SEQ)
		return 0;
	return k == 0 ? 0 : (uint16_t)((k + seq) % 4);
}

static uint16_t frame_len(unsigned int seq, unsigned int k)
{
	/* Split payloads: the smallest, the largest, and between. */
	if (seq >= ODL_SPLIT_SEQ)
		return k % 7 == 1 ? 1 : k % 7 == 2 ? ODL_FRAME_MAX_PAYLOAD :
		       (uint16_t)((k * 997 + seq * 131) % ODL_FRAME_MAX_PAYLOAD + 1);
	/* Some near the largest, some small; all fit in one page at offset. */
	return (uint16_t)((k * 997 + seq * 131) % (ODL_FRAME_MAX_PAYLOAD - 256) + 1);
}

static unsigned char frame_byte(unsigned int seq, unsigned int k, unsigned int j)
{
	return (unsigned char)(seq * 89 + k * 7 + j * 13 + (j >> 8));
}

/* Offset of frame @k in its dma-buf: page k, shifted a little. */
static uint64_t frame_off(unsigned int k, uint16_t len)
{
	uint64_t shift = (k * 24) % (page_size - ODL_FRAME_HDR_BYTES - len + 1);

	return (uint64_t)k * page_size + (shift & ~7ULL);
}

static uint32_t write_frame(unsigned char *p, unsigned int seq, unsigned int k)
{
	uint16_t len = frame_len(seq, k);
	struct odl_frame_info fi = { .type = ODL_FRAME_DATA,
				     .flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM,
				     .stream = frame_stream(seq, k), .len = len,
				     .seq = k, .tag = seq, .msg_len = len };
	unsigned int j;

	odl_frame_encode((struct odl_frame_hdr *)p, &fi);
	for (j = 0; j < len; j++)
		p[ODL_FRAME_HDR_BYTES + j] = frame_byte(seq, k, j);
	return ODL_FRAME_HDR_BYTES + len;
}

/* The DATA header of split frame @k of @seq, at @p (F_SPLIT left to the module). */
static void write_split_hdr(unsigned char *p, unsigned int seq, unsigned int k)
{
	uint16_t len = frame_len(seq, k);
	struct odl_frame_info fi = { .type = ODL_FRAME_DATA,
				     .flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM,
				     .stream = frame_stream(seq, k), .len = len,
				     .seq = k, .tag = seq, .msg_len = len };

	/* Half of them with the flag already set: the module takes both. */
	if (k % 2)
		fi.flags |= ODL_FRAME_F_SPLIT;
	odl_frame_encode((struct odl_frame_hdr *)p, &fi);
}

/* Payload of split frame @k of @seq, written at @p. */
static void write_split_payload(unsigned char *p, unsigned int seq, unsigned int k)
{
	uint16_t len = frame_len(seq, k), j;

	for (j = 0; j < len; j++)
		p[j] = frame_byte(seq, k, j);
}

/* Where split payload @k goes in its dma-buf: page k, shifted a little. */
static uint64_t split_off(unsigned int k, uint16_t len)
{
	uint64_t shift = (k * 40) % (page_size - len + 1);

	return (uint64_t)k * page_size + (shift & ~7ULL);
}

static uint32_t dev_state(int dev);

/* Cases that need no exporter; @dev not in mmap mode yet. */
static void table_no_exporter(int dev)
{
	struct odl_tb5_dmabuf_import im;
	struct odl_tb5_dmabuf_release rel = { 0 };
	struct odl_tb5_dmabuf_entry e = { .handle = 1, .len = 64 };
	int memfd = memfd_create("odl-not-dmabuf", 0);

	expect("IMPORT fd -1", import_fd(dev, -1, &im), EBADF);
	expect("IMPORT fd not open (999)", import_fd(dev, 999, &im), EBADF);
	expect("IMPORT a memfd (not a dma-buf)", import_fd(dev, memfd, &im), EINVAL);
	expect("IMPORT the device itself", import_fd(dev, dev, &im), EINVAL);
	memset(&im, 0, sizeof(im));
	im.fd = memfd;
	im.flags = 1;
	expect("IMPORT flags 1", ioctl(dev, ODL_TB5_IOC_DMABUF_IMPORT, &im), EINVAL);
	memset(&im, 0, sizeof(im));
	im.fd = memfd;
	im.reserved[1] = 1;
	expect("IMPORT reserved", ioctl(dev, ODL_TB5_IOC_DMABUF_IMPORT, &im), EINVAL);
	expect("IMPORT bad pointer", ioctl(dev, ODL_TB5_IOC_DMABUF_IMPORT, (void *)8), EFAULT);
	expect("RELEASE handle 0", release_h(dev, 0), EINVAL);
	expect("RELEASE handle 1 (none)", release_h(dev, 1), EINVAL);
	expect("RELEASE handle 17", release_h(dev, ODL_TB5_DMABUF_MAX + 1), EINVAL);
	rel.handle = 1;
	rel.flags = 1;
	expect("RELEASE flags 1", ioctl(dev, ODL_TB5_IOC_DMABUF_RELEASE, &rel), EINVAL);
	expect("POST_SEND_DMABUF not in mmap mode", post_db(dev, 1, &e), EINVAL);
	{
		struct odl_tb5_split_entry se = { .handle = 1, .len = 64 };

		expect("POST_SEND_SPLIT not in mmap mode", post_split(dev, 1, &se), EINVAL);
	}
	memset(&im, 0, sizeof(im));
	im.fd = memfd;
	im.flags = ODL_TB5_DMABUF_F_DEVICE << 1;
	expect("IMPORT unknown flag", ioctl(dev, ODL_TB5_IOC_DMABUF_IMPORT, &im), EINVAL);
	memset(&im, 0, sizeof(im));
	im.fd = memfd;
	im.oflags = ODL_TB5_DMABUF_DEVICE;
	expect("IMPORT oflags set on the way in", ioctl(dev, ODL_TB5_IOC_DMABUF_IMPORT, &im), EINVAL);
	close(memfd);
}

/*
 * Device-only import and the POST_SEND_SPLIT table (no session); @d is
 * imported as handle 1.. already, @m mapped (every Tx buffer the user's).
 */
static void split_table(int dev, struct dev_map *m, struct dbuf *d)
{
	struct odl_tb5_dmabuf_import im;
	struct odl_tb5_split_entry se, good;
	struct odl_tb5_dmabuf_entry e;
	struct odl_tb5_info info = { 0 };
	unsigned char *tx0 = m->tx, *tx1 = m->tx + m->mi.buf_size;
	uint32_t hd;

	memset(&im, 0, sizeof(im));
	im.fd = d->fd;
	im.flags = ODL_TB5_DMABUF_F_DEVICE;
	expect("IMPORT device-only (F_DEVICE)", ioctl(dev, ODL_TB5_IOC_DMABUF_IMPORT, &im), 0);
	hd = im.handle;
	check("IMPORT device-only answers ODL_TB5_DMABUF_DEVICE", im.oflags == ODL_TB5_DMABUF_DEVICE);
	expect("IMPORT with a CPU mapping", import_fd(dev, d->fd, &im), 0);
	check("IMPORT with a CPU mapping: no DEVICE flag", im.oflags == 0);
	expect("RELEASE it", release_h(dev, im.handle), 0);
	memset(&e, 0, sizeof(e));
	e.handle = hd;
	e.len = write_frame(d->va, 0, 1);
	expect("POST_SEND_DMABUF whole frame from a device-only import", post_db(dev, 1, &e), EINVAL);

	expect("INFO", ioctl(dev, ODL_TB5_IOC_INFO, &info), 0);
	printf("     INFO split %u local_split %u rx_capacity %u ring_size %u\n", info.split,
	       info.local_split, info.rx_capacity, info.ring_size);
	check("INFO rx_capacity is (ring_size - 1) / 2 with split=1, else ring_size - 1",
	      info.rx_capacity == (info.local_split ? (info.ring_size - 1) / 2 : info.ring_size - 1));

	write_split_hdr(tx0, ODL_SPLIT_SEQ, 3);
	good = (struct odl_tb5_split_entry){ .tx_index = 0, .handle = hd, .offset = 100,
					     .len = frame_len(ODL_SPLIT_SEQ, 3) };
	expect("POST_SEND_SPLIT valid, no session", post_split(dev, 1, &good), ENOTCONN);
	expect("POST_SEND_SPLIT again: the Tx buffer is still the user's", post_split(dev, 1, &good),
	       ENOTCONN);
	se = good;
	se.tx_index = m->mi.tx_count;
	expect("POST_SEND_SPLIT Tx index out of range", post_split(dev, 1, &se), EINVAL);
	se = good;
	se.tx_index = UINT32_MAX;
	expect("POST_SEND_SPLIT Tx index ~0", post_split(dev, 1, &se), EINVAL);
	se = good;
	se.handle = 0;
	expect("POST_SEND_SPLIT handle 0", post_split(dev, 1, &se), EINVAL);
	se.handle = ODL_TB5_DMABUF_MAX + 1;
	expect("POST_SEND_SPLIT handle 17", post_split(dev, 1, &se), EINVAL);
	se.handle = hd == ODL_TB5_DMABUF_MAX ? 1 : hd + 1;
	expect("POST_SEND_SPLIT unknown handle", post_split(dev, 1, &se), EINVAL);
	se = good;
	se.len = 0;
	expect("POST_SEND_SPLIT len 0", post_split(dev, 1, &se), EINVAL);
	se.len = ODL_FRAME_MAX_PAYLOAD + 1;
	expect("POST_SEND_SPLIT len above the largest payload", post_split(dev, 1, &se), EINVAL);
	se.len = good.len + 1;
	expect("POST_SEND_SPLIT len != header's", post_split(dev, 1, &se), EINVAL);
	se = good;
	se.reserved = 1;
	expect("POST_SEND_SPLIT reserved != 0", post_split(dev, 1, &se), EINVAL);
	se = good;
	se.offset = d->size - good.len + 1;
	expect("POST_SEND_SPLIT payload past the end", post_split(dev, 1, &se), EINVAL);
	se.offset = UINT64_MAX - 8;
	expect("POST_SEND_SPLIT offset wraps", post_split(dev, 1, &se), EINVAL);
	se = good;
	se.offset = d->size - good.len;
	expect("POST_SEND_SPLIT payload at the very end", post_split(dev, 1, &se), ENOTCONN);
	se = good;
	se.tx_index = 1;
	memset(tx1, 0xee, ODL_FRAME_HDR_BYTES);
	expect("POST_SEND_SPLIT garbage header", post_split(dev, 1, &se), EINVAL);
	{
		struct odl_frame_info fi = { .type = ODL_FRAME_CREDIT, .flags = ODL_FRAME_F_CREDIT };

		odl_frame_encode((struct odl_frame_hdr *)tx1, &fi);
		se.len = 1;
		expect("POST_SEND_SPLIT a CREDIT header", post_split(dev, 1, &se), EINVAL);
		fi = (struct odl_frame_info){ .type = ODL_FRAME_DATA,
					      .flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM,
					      .stream = ODL_MAX_STREAMS, .len = 1, .msg_len = 1 };
		odl_frame_encode((struct odl_frame_hdr *)tx1, &fi);
		expect("POST_SEND_SPLIT stream out of range", post_split(dev, 1, &se), EINVAL);
		fi.stream = 0;
		fi.msg_len = 2;
		odl_frame_encode((struct odl_frame_hdr *)tx1, &fi);
		expect("POST_SEND_SPLIT EOM short of msg_len", post_split(dev, 1, &se), EINVAL);
	}
	expect("POST_SEND_SPLIT count 0", post_split(dev, 0, &good), EINVAL);
	expect("POST_SEND_SPLIT count above post_max", post_split(dev, ODL_TB5_POST_MAX + 1, &good),
	       EINVAL);
	expect("POST_SEND_SPLIT bad entries pointer", post_split(dev, 1, (void *)8), EFAULT);
	{
		struct odl_tb5_post p = { .count = 1, .flags = 1, .entries = (uintptr_t)&good };

		expect("POST_SEND_SPLIT flags 1", ioctl(dev, ODL_TB5_IOC_POST_SEND_SPLIT, &p), EINVAL);
	}
	expect("POST_SEND_SPLIT bad post pointer", ioctl(dev, ODL_TB5_IOC_POST_SEND_SPLIT, (void *)8),
	       EFAULT);
	expect("RELEASE the device-only import", release_h(dev, hd), 0);
}

/* The table with an exporter; @dev not in mmap mode yet. */
static void table_exporter(int dev)
{
	struct odl_tb5_dmabuf_import im;
	struct odl_tb5_dmabuf_entry e;
	struct dbuf d, many[ODL_TB5_DMABUF_MAX];
	struct dev_map m;
	long base = dmabuf_count();
	unsigned int i, tested = 0, refused = 0;
	uint32_t h;

	for (i = 0; i < ODL_TB5_DMABUF_MAX; i++)
		many[i].fd = many[i].memfd = -1, many[i].va = NULL;

	if (dbuf_create(&d, 16)) {
		check("create a udmabuf", 0);
		return;
	}
	expect("IMPORT before MAP_INFO", import_fd(dev, d.fd, &im), EINVAL);
	expect("MAP_INFO", map_all(dev, &m), 0);
	check("Tx queue has room for every Tx buffer and as many dma-buf frames",
	      m.mi.cq_entries >= 2 * m.mi.tx_count + 1);
	expect("IMPORT udmabuf", import_fd(dev, d.fd, &im), 0);
	h = im.handle;
	check("IMPORT handle in 1..16 and size 16 pages",
	      h >= 1 && h <= ODL_TB5_DMABUF_MAX && im.size == d.size);
	memset(&e, 0, sizeof(e));
	e.handle = h;
	e.len = write_frame(d.va, 0, 1);
	expect("POST_SEND_DMABUF valid, no session", post_db(dev, 1, &e), ENOTCONN);
	e.handle = 0;
	expect("POST_SEND_DMABUF handle 0", post_db(dev, 1, &e), EINVAL);
	e.handle = h + 1;
	expect("POST_SEND_DMABUF unknown handle", post_db(dev, 1, &e), EINVAL);
	e.handle = h;
	e.len += 1;
	expect("POST_SEND_DMABUF len != header's", post_db(dev, 1, &e), EINVAL);
	e.len = ODL_FRAME_HDR_BYTES - 1;
	expect("POST_SEND_DMABUF len below a header", post_db(dev, 1, &e), EINVAL);
	e.len = ODL_FRAME_MAX_BYTES + 1;
	expect("POST_SEND_DMABUF len above the largest frame", post_db(dev, 1, &e), EINVAL);
	e.len = 64;
	e.offset = d.size - 32;
	expect("POST_SEND_DMABUF past the end", post_db(dev, 1, &e), EINVAL);
	e.offset = UINT64_MAX - 8;
	expect("POST_SEND_DMABUF offset wraps", post_db(dev, 1, &e), EINVAL);
	/* A valid header at the very end of the buffer. */
	e.offset = d.size - 64;
	e.len = ODL_FRAME_HDR_BYTES + 64 - ODL_FRAME_HDR_BYTES;
	{
		struct odl_frame_info fi = { .type = ODL_FRAME_DATA,
					     .flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM,
					     .len = 64 - ODL_FRAME_HDR_BYTES,
					     .msg_len = 64 - ODL_FRAME_HDR_BYTES };

		odl_frame_encode((struct odl_frame_hdr *)(d.va + e.offset), &fi);
	}
	expect("POST_SEND_DMABUF last bytes of the buffer", post_db(dev, 1, &e), ENOTCONN);
	memset(d.va, 0xee, ODL_FRAME_HDR_BYTES);
	e.offset = 0;
	expect("POST_SEND_DMABUF garbage header", post_db(dev, 1, &e), EINVAL);
	expect("POST_SEND_DMABUF count 0", post_db(dev, 0, &e), EINVAL);
	expect("POST_SEND_DMABUF bad entries pointer", post_db(dev, 1, (void *)8), EFAULT);
	split_table(dev, &m, &d);
	/* Across a page boundary: refused where the pages are apart. */
	for (i = 1; i < 16 && !iommu_translates(); i++) {
		uint64_t a = pfn_of(d.va + (i - 1) * page_size);
		uint64_t b = pfn_of(d.va + i * page_size);
		struct odl_frame_info fi = { .type = ODL_FRAME_DATA,
					     .flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM,
					     .len = 200, .msg_len = 200 };
		long rc;

		if (!a || !b || b == a + 1)
			continue;
		e.offset = (uint64_t)i * page_size - 100;
		e.len = ODL_FRAME_HDR_BYTES + 200;
		odl_frame_encode((struct odl_frame_hdr *)(d.va + e.offset), &fi);
		rc = post_db(dev, 1, &e);
		tested++;
		if (rc < 0 && errno == EINVAL)
			refused++;
	}
	if (tested)
		check("frames across two separate pages refused (EINVAL)", refused == tested);
	else if (iommu_translates())
		printf("note a translating IOMMU maps the pages into one DMA range: segment rule not exercised\n");
	else
		printf("note no separate neighbour pages found (pagemap): segment rule not exercised\n");
	printf("     %u of %u frames across separate pages refused\n", refused, tested);
	/* The limit: ODL_TB5_DMABUF_MAX imports per file. */
	for (i = 1; i < ODL_TB5_DMABUF_MAX; i++) {
		if (dbuf_create(&many[i], 1) || import_fd(dev, many[i].fd, &im)) {
			expect("IMPORT up to the limit", -1, 0);
			break;
		}
	}
	if (dbuf_create(&many[0], 1) == 0) {
		expect("IMPORT one more than the limit", import_fd(dev, many[0].fd, &im), ENOSPC);
		expect("RELEASE the first import", release_h(dev, h), 0);
		expect("RELEASE it again", release_h(dev, h), EINVAL);
		expect("IMPORT again after a release", import_fd(dev, many[0].fd, &im), 0);
	}
	/* Our fds go; the imports keep the dma-bufs alive. */
	for (i = 0; i < ODL_TB5_DMABUF_MAX; i++)
		dbuf_destroy(&many[i]);
	dbuf_destroy(&d);
	printf("     dma-bufs: %ld before, %ld with %d imports\n", base,
	       dmabuf_count(), ODL_TB5_DMABUF_MAX);
	if (base >= 0)
		check("the imports hold their dma-bufs after the user closed them",
		      dmabuf_count() == base + ODL_TB5_DMABUF_MAX);
	unmap_all(&m);
}

static int table(const char *path)
{
	long base = dmabuf_count();
	int have = access("/dev/udmabuf", R_OK | W_OK) == 0;
	int dev = open(path, O_RDWR | O_NONBLOCK);
	double t0;

	if (dev < 0) {
		printf("FAIL open %s: %s\n", path, strerror(errno));
		return 1;
	}
	table_no_exporter(dev);
	if (!have) {
		close(dev);
		printf("NOT RUN: no dma-buf exporter in this guest (/dev/udmabuf missing: CONFIG_UDMABUF off, no dma heaps); only the %s cases that need none ran (%d failure(s))\n",
		       "bad-fd/not-a-dma-buf", failures);
		return failures ? 1 : 2;
	}
	table_exporter(dev);
	close(dev);
	if (base < 0) {
		printf("FAIL no debugfs dma_buf/bufinfo: leak check cannot run\n");
		return 1;
	}
	for (t0 = now_s(); dmabuf_count() != base && now_s() - t0 < 5;)
		usleep(20000);
	printf("     dma-bufs: %ld before, %ld after close\n", base, dmabuf_count());
	check("close released every import (dma-buf count back to its start)",
	      dmabuf_count() == base);
	printf("%s: dmabuf table, %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}

/*
 * Receive @n frames of sequence @seq and @n2 of @seq2 (the frame header's
 * tag names the sequence, its seq the frame) in place, comparing every
 * byte and each stream's order, then give the buffers back. 0 on success.
 */
static int receive(int dev, struct dev_map *m, unsigned int seq, unsigned int n,
		   unsigned int seq2, unsigned int n2)
{
	int next[2][4] = { { -1, -1, -1, -1 }, { -1, -1, -1, -1 } };
	unsigned int got[2] = { 0 }, j, w;
	uint32_t cons = ctl(m)->rx_cq.cons, prod;
	double t0;

	for (t0 = now_s(); (got[0] < n || got[1] < n2) && now_s() - t0 < 60;) {
		struct pollfd pfd = { .fd = dev, .events = POLLIN };
		struct odl_tb5_post p = { .count = 1 };
		struct odl_frame_info fi;
		const unsigned char *f;
		struct odl_tb5_cqe e;

		prod = __atomic_load_n(&ctl(m)->rx_cq.prod, __ATOMIC_ACQUIRE);
		if (prod == cons && dev_state(dev) != ODL_TB5_STATE_SESSION) {
			/*
			 * The session ended: as libodl, take what the module
			 * still holds, then stop. The peer's close notice must
			 * not overtake the frames it sent before closing.
			 */
			poll(&pfd, 1, 0);
			if (__atomic_load_n(&ctl(m)->rx_cq.prod, __ATOMIC_ACQUIRE) == cons) {
				printf("FAIL receive: the session ended (state %u) with %u of %u frames of seq %u and %u of %u of seq %u\n",
				       dev_state(dev), got[0], n, seq, got[1], n2, seq2);
				return 1;
			}
			continue;
		}
		if (prod == cons) {
			poll(&pfd, 1, 100);
			continue;
		}
		e = *cqe(m, 0, cons);
		__atomic_store_n(&ctl(m)->rx_cq.cons, ++cons, __ATOMIC_RELEASE);
		f = m->rx + (size_t)e.index * m->mi.buf_size;
		if (e.index >= m->mi.rx_count ||
		    odl_frame_decode(f, e.len, ODL_MAX_STREAMS, &fi) != ODL_FRAME_OK) {
			printf("FAIL receive: index %u len %u\n", e.index, e.len);
			return 1;
		}
		w = fi.tag == seq ? 0 : fi.tag == seq2 && n2 ? 1 : 2;
		if (w == 2 || fi.seq >= (w ? n2 : n) ||
		    fi.stream != frame_stream(fi.tag, fi.seq) ||
		    fi.len != frame_len(fi.tag, fi.seq) ||
		    (int)fi.seq <= next[w][fi.stream]) {
			printf("FAIL receive: frame tag %u seq %u stream %u len %u (last on its stream %d)\n",
			       fi.tag, fi.seq, fi.stream, fi.len,
			       w < 2 ? next[w][fi.stream % 4] : -2);
			return 1;
		}
		for (j = 0; j < fi.len; j++) {
			if (f[ODL_FRAME_HDR_BYTES + j] != frame_byte(fi.tag, fi.seq, j)) {
				printf("FAIL receive: seq %u frame %u byte %u is %u, want %u\n",
				       fi.tag, fi.seq, j, f[ODL_FRAME_HDR_BYTES + j],
				       frame_byte(fi.tag, fi.seq, j));
				return 1;
			}
		}
		next[w][fi.stream] = (int)fi.seq;
		got[w]++;
		p.entries = (uintptr_t)&e.index;
		if (ioctl(dev, ODL_TB5_IOC_POST_RECV, &p) != 1) {
			expect("POST_RECV", -1, 0);
			return 1;
		}
	}
	if (got[0] < n || got[1] < n2) {
		printf("FAIL receive: %u of %u frames of seq %u, %u of %u of seq %u in 60 s\n",
		       got[0], n, seq, got[1], n2, seq2);
		return 1;
	}
	printf("ok   received %u frames of seq %u and %u of seq %u: every byte and each stream's order checked\n",
	       n, seq, n2, seq2);
	return 0;
}

/* Post frames 0..n-1 of @seq from @d (import @h) in one call. */
static long send_seq(int dev, struct dbuf *d, uint32_t h, unsigned int seq,
		     unsigned int n, struct odl_tb5_dmabuf_entry *ents)
{
	unsigned int k;

	dbuf_sync(d, DMA_BUF_SYNC_START);
	for (k = 0; k < n; k++) {
		ents[k].handle = h;
		ents[k].offset = frame_off(k, frame_len(seq, k));
		ents[k].len = write_frame(d->va + ents[k].offset, seq, k);
	}
	dbuf_sync(d, DMA_BUF_SYNC_END);
	return post_db(dev, n, ents);
}

static int session(const char *path, int closer)
{
	struct odl_tb5_dmabuf_entry ents[ODL_DB_FRAMES];
	struct odl_tb5_dmabuf_import im;
	struct odl_tb5_info info;
	struct dbuf d, tail;
	struct dev_map m;
	long base = dmabuf_count(), rc;
	unsigned int done = 0, k, bad = 0;
	uint32_t cons, prod, h;
	unsigned char seen[ODL_DB_FRAMES] = { 0 };
	double t0;
	int dev, busy;

	dev = open(path, O_RDWR | O_NONBLOCK);
	if (dev < 0) {
		printf("FAIL open %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (wait_session(dev, &info))
		return 1;
	if (map_all(dev, &m) || dbuf_create(&d, ODL_DB_PAGES) ||
	    dbuf_create(&tail, ODL_DB_PAGES)) {
		printf("FAIL map or udmabuf: %s\n", strerror(errno));
		return 1;
	}
	/* The free Tx buffers' entries: consumed, so the queue has room. */
	cons = ctl(&m)->tx_cq.cons;
	prod = __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE);
	__atomic_store_n(&ctl(&m)->tx_cq.cons, prod, __ATOMIC_RELEASE);
	cons = prod;
	expect("session: IMPORT", import_fd(dev, d.fd, &im), 0);
	h = im.handle;
	rc = send_seq(dev, &d, h, closer ? 1 : 2, ODL_DB_FRAMES, ents);
	busy = release_h(dev, h) < 0 ? errno : 0;
	if (rc != ODL_DB_FRAMES) {
		expect("session: POST_SEND_DMABUF 64 frames", rc < 0 ? rc : -1, 0);
		return 1;
	}
	printf("ok   session: %d frames posted from the dma-buf (%u ring pair(s))\n",
	       ODL_DB_FRAMES, info.rings);
	/* Completions: one per frame, by handle and offset. */
	for (t0 = now_s(); done < ODL_DB_FRAMES && now_s() - t0 < 30;) {
		struct odl_tb5_cqe e;

		prod = __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE);
		if (prod == cons) {
			usleep(2000);
			continue;
		}
		e = *cqe(&m, 1, cons);
		__atomic_store_n(&ctl(&m)->tx_cq.cons, ++cons, __ATOMIC_RELEASE);
		if (!(e.index & ODL_TB5_CQE_DMABUF) || (e.index & ODL_TB5_CQE_CANCELED) ||
		    (e.index & ODL_TB5_CQE_HANDLE_MASK) != h) {
			printf("FAIL session: Tx completion index %#x len %u\n", e.index, e.len);
			bad++;
			continue;
		}
		for (k = 0; k < ODL_DB_FRAMES && (ents[k].offset != e.len || seen[k]); k++)
			;
		if (k == ODL_DB_FRAMES) {
			printf("FAIL session: completion of unknown offset %u\n", e.len);
			bad++;
			continue;
		}
		seen[k] = 1;
		done++;
	}
	check("session: one Tx completion per dma-buf frame", done == ODL_DB_FRAMES && !bad);
	if (busy == EBUSY)
		printf("ok   session: RELEASE right after the post: EBUSY (frames in flight)\n");
	else
		check("session: RELEASE right after the post succeeded only with every completion already queued",
		      busy == 0 && done == ODL_DB_FRAMES &&
		      __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE) == cons);
	if (busy == EBUSY) {
		expect("session: RELEASE after the completions", release_h(dev, h), 0);
		expect("session: RELEASE again", release_h(dev, h), EINVAL);
	}
	if (closer && receive(dev, &m, 2, ODL_DB_FRAMES, 0, 0))
		failures++;
	if (closer) {
		/* Frames in flight on close: the module must send them. */
		expect("session: IMPORT tail", import_fd(dev, tail.fd, &im), 0);
		rc = send_seq(dev, &tail, im.handle, 3, ODL_DB_TAIL, ents);
		expect("session: POST_SEND_DMABUF tail then close", rc == ODL_DB_TAIL ? 0 : -1, 0);
		unmap_all(&m);
		close(dev);
		dbuf_destroy(&d);
		dbuf_destroy(&tail);
		for (t0 = now_s(); dmabuf_count() != base && now_s() - t0 < 10;)
			usleep(20000);
		printf("     dma-bufs: %ld before, %ld after close\n", base, dmabuf_count());
		check("session: after close every dma-buf is freed (bufinfo count)",
		      base >= 0 && dmabuf_count() == base);
	} else {
		/* A's frames, then the ones it sent as it closed. */
		if (receive(dev, &m, 1, ODL_DB_FRAMES, 3, ODL_DB_TAIL))
			failures++;
		unmap_all(&m);
		close(dev);
		dbuf_destroy(&d);
		dbuf_destroy(&tail);
	}
	printf("%s: dmabuf session %s, %d failure(s)\n", failures ? "FAIL" : "PASS",
	       closer ? "A" : "B", failures);
	return failures ? 1 : 0;
}

/*
 * Check received frame @f (@len bytes) against sequence @seq of @n frames
 * and the last seq seen per stream (@next); 0 when it is right.
 */
static int check_frame(const unsigned char *f, uint32_t len, unsigned int seq,
		       unsigned int n, int next[4])
{
	struct odl_frame_info fi;
	unsigned int j;

	if (odl_frame_decode(f, len, ODL_MAX_STREAMS, &fi) != ODL_FRAME_OK ||
	    ODL_FRAME_HDR_BYTES + fi.len != len) {
		printf("FAIL receive: a bad frame of %u bytes\n", len);
		return 1;
	}
	if (fi.tag != seq || fi.seq >= n || fi.stream >= 4 ||
	    fi.stream != frame_stream(seq, fi.seq) ||
	    fi.len != frame_len(seq, fi.seq) || (int)fi.seq <= next[fi.stream]) {
		printf("FAIL receive: frame tag %u seq %u stream %u len %u (want tag %u)\n",
		       fi.tag, fi.seq, fi.stream, fi.len, seq);
		return 1;
	}
	for (j = 0; j < fi.len; j++) {
		if (f[ODL_FRAME_HDR_BYTES + j] != frame_byte(seq, fi.seq, j)) {
			printf("FAIL receive: seq %u frame %u byte %u is %u, want %u\n", seq,
			       fi.seq, j, f[ODL_FRAME_HDR_BYTES + j], frame_byte(seq, fi.seq, j));
			return 1;
		}
	}
	next[fi.stream] = (int)fi.seq;
	return 0;
}

/* A device-only udmabuf import with the payloads of @n split frames of @seq. */
static int split_import(int dev, struct dbuf *d, unsigned int seq, unsigned int n,
			uint32_t *h)
{
	struct odl_tb5_dmabuf_import im;
	unsigned int k;

	if (dbuf_create(d, n)) {
		check("split: create a udmabuf", 0);
		return -1;
	}
	dbuf_sync(d, DMA_BUF_SYNC_START);
	for (k = 0; k < n; k++)
		write_split_payload(d->va + split_off(k, frame_len(seq, k)), seq, k);
	dbuf_sync(d, DMA_BUF_SYNC_END);
	memset(&im, 0, sizeof(im));
	im.fd = d->fd;
	im.flags = ODL_TB5_DMABUF_F_DEVICE;
	if (ioctl(dev, ODL_TB5_IOC_DMABUF_IMPORT, &im) || im.oflags != ODL_TB5_DMABUF_DEVICE) {
		expect("split: IMPORT device-only", -1, 0);
		return -1;
	}
	*h = im.handle;
	return 0;
}

/*
 * "split A|B": send ODL_SPLIT_FRAMES split pairs of our sequence from a
 * device-only import while receiving the peer's, in one bounded loop (a
 * small ring cannot hold all of them unread).
 */
static int split_session(const char *path, int a)
{
	unsigned int seq = a ? ODL_SPLIT_SEQ + 1 : ODL_SPLIT_SEQ + 2;
	unsigned int pseq = a ? ODL_SPLIT_SEQ + 2 : ODL_SPLIT_SEQ + 1;
	const unsigned int n = ODL_SPLIT_FRAMES;
	static struct odl_tb5_split_entry ents[ODL_SPLIT_FRAMES];
	static uint32_t freebuf[16384];
	static unsigned char seen[ODL_SPLIT_FRAMES];
	struct odl_tb5_stats st0, st1;
	struct odl_tb5_info info;
	struct dev_map m;
	struct dbuf d;
	unsigned int nfree = 0, sent = 0, paid = 0, hdrs = 0, got = 0, bad = 0, k, b;
	int next[4] = { -1, -1, -1, -1 };
	uint32_t txc, rxc, h;
	uint64_t eagain = 0;
	double t0;
	long rc;
	int dev = open(path, O_RDWR | O_NONBLOCK);

	if (dev < 0 || stats(dev, &st0)) {
		printf("FAIL split: open or STATS %s: %s\n", path, strerror(errno));
		return 1;
	}
	if (wait_session(dev, &info) || map_all(dev, &m))
		return 1;
	check("split: INFO split 1 (the peer takes split frames)", info.split == 1);
	if (split_import(dev, &d, seq, n, &h))
		return 1;
	txc = ctl(&m)->tx_cq.cons;
	rxc = ctl(&m)->rx_cq.cons;
	for (t0 = now_s(); (paid < n || hdrs < n || got < n) && now_s() - t0 < 120;) {
		int idle = 1;

		/* Tx queue: free Tx buffers, and each payload's completion. */
		while (txc != __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE)) {
			struct odl_tb5_cqe e = *cqe(&m, 1, txc);

			__atomic_store_n(&ctl(&m)->tx_cq.cons, ++txc, __ATOMIC_RELEASE);
			idle = 0;
			if (!(e.index & ODL_TB5_CQE_DMABUF)) {
				if (e.index >= m.mi.tx_count || nfree >= 16384) {
					bad++;
					continue;
				}
				freebuf[nfree++] = e.index;
				if (sent)
					hdrs++;
				continue;
			}
			for (k = 0; k < sent && (ents[k].offset != e.len || seen[k]); k++)
				;
			if ((e.index & ~ODL_TB5_CQE_DMABUF) != h || k == sent) {
				printf("FAIL split: Tx completion index %#x len %u\n", e.index, e.len);
				bad++;
				continue;
			}
			seen[k] = 1;
			paid++;
		}
		/* Post what the free Tx buffers allow. */
		for (b = 0; sent + b < n && b < nfree && b < 64; b++) {
			k = sent + b;
			ents[k].tx_index = freebuf[nfree - 1 - b];
			ents[k].handle = h;
			ents[k].len = frame_len(seq, k);
			ents[k].offset = split_off(k, ents[k].len);
			write_split_hdr(m.tx + (size_t)ents[k].tx_index * m.mi.buf_size, seq, k);
		}
		if (b) {
			rc = post_split(dev, b, ents + sent);
			if (rc > 0) {
				nfree -= rc;
				sent += rc;
				idle = 0;
			} else if (errno == EAGAIN) {
				eagain++;
			} else {
				expect("split: POST_SEND_SPLIT", rc, 0);
				break;
			}
		}
		/* Rx queue: the peer's frames, ordinary ones. */
		while (rxc != __atomic_load_n(&ctl(&m)->rx_cq.prod, __ATOMIC_ACQUIRE)) {
			struct odl_tb5_cqe e = *cqe(&m, 0, rxc);
			struct odl_tb5_post p = { .count = 1, .entries = (uintptr_t)&e.index };

			__atomic_store_n(&ctl(&m)->rx_cq.cons, ++rxc, __ATOMIC_RELEASE);
			idle = 0;
			if (e.index >= m.mi.rx_count ||
			    check_frame(m.rx + (size_t)e.index * m.mi.buf_size, e.len, pseq, n, next))
				bad++;
			else
				got++;
			if (ioctl(dev, ODL_TB5_IOC_POST_RECV, &p) != 1)
				bad++;
		}
		if (bad)
			break;
		if (idle) {
			struct pollfd pfd = { .fd = dev, .events = POLLIN };

			poll(&pfd, 1, 2);
		}
	}
	printf("     split %s: %u pairs posted (%llu EAGAIN), %u Tx buffers and %u payloads back, %u received, %u bad\n",
	       a ? "A" : "B", sent, (unsigned long long)eagain, hdrs, paid, got, bad);
	check("split: every pair posted, its Tx buffer and its payload completed once",
	      sent == n && paid == n && hdrs >= n && !bad);
	check("split: every frame of the peer received as an ordinary frame, bytes and order checked",
	      got == n && !bad);
	/* The peer's last Tx completions may still be coming: give it time. */
	usleep(500000);
	expect("split: STATS", stats(dev, &st1), 0);
	printf("     split %s: STATS tx_split %llu rx_split %llu rx_bad_split %llu (since open: %llu, %llu)\n",
	       a ? "A" : "B", (unsigned long long)st1.tx_split, (unsigned long long)st1.rx_split,
	       (unsigned long long)st1.rx_bad_split,
	       (unsigned long long)(st1.tx_split - st0.tx_split),
	       (unsigned long long)(st1.rx_split - st0.rx_split));
	check("split: STATS tx_split and rx_split count the pairs each way",
	      st1.tx_split - st0.tx_split == n && st1.rx_split - st0.rx_split == n);
	check("split: STATS rx_bad_split 0", st1.rx_bad_split == 0);
	expect("split: RELEASE", release_h(dev, h), 0);
	unmap_all(&m);
	close(dev);
	dbuf_destroy(&d);
	printf("%s: dmabuf split %s, %d failure(s)\n", failures ? "FAIL" : "PASS", a ? "A" : "B",
	       failures);
	return failures ? 1 : 0;
}

/*
 * "window S|R": S sends rx_capacity split pairs at once, all on stream 0
 * (one ring); R holds every frame (no POST_RECV) and must get all of them:
 * two descriptors per pair in flight must fit the ring (docs/kmod.md).
 */
static int window(const char *path, int sender)
{
	static struct odl_tb5_split_entry ents[8192];
	static uint32_t held[8192];
	struct odl_tb5_stats st0, st1;
	struct odl_tb5_info info;
	struct dev_map m;
	struct dbuf d;
	unsigned int c, k, got = 0, bad = 0, paid = 0, hdrs = 0;
	int next[4] = { -1, -1, -1, -1 };
	uint32_t cons, h;
	double t0, tfull;
	long rc;
	int dev = open(path, O_RDWR | O_NONBLOCK);

	if (dev < 0 || stats(dev, &st0) || wait_session(dev, &info) || map_all(dev, &m)) {
		printf("FAIL window: open, session or map: %s\n", strerror(errno));
		return 1;
	}
	/* Both hosts run the same parameters: the peer's capacity is ours. */
	c = info.rx_capacity;
	printf("     window %s: ring_size %u rx_capacity %u local_split %u rings %u\n",
	       sender ? "S" : "R", info.ring_size, c, info.local_split, info.rings);
	if (c > 8192 || c > m.mi.tx_count) {
		printf("FAIL window: rx_capacity %u too large for this test\n", c);
		return 1;
	}
	if (sender) {
		if (split_import(dev, &d, ODL_WINDOW_SEQ, c, &h))
			return 1;
		cons = ctl(&m)->tx_cq.cons;
		/* Every Tx buffer is ours after MAP_INFO: take the first c. */
		for (k = 0; k < c; k++) {
			struct odl_tb5_cqe e = *cqe(&m, 1, cons + k);

			ents[k].tx_index = e.index;
			ents[k].handle = h;
			ents[k].len = frame_len(ODL_WINDOW_SEQ, k);
			ents[k].offset = split_off(k, ents[k].len);
			write_split_hdr(m.tx + (size_t)e.index * m.mi.buf_size, ODL_WINDOW_SEQ, k);
		}
		cons += m.mi.tx_count;
		__atomic_store_n(&ctl(&m)->tx_cq.cons, cons, __ATOMIC_RELEASE);
		rc = post_split(dev, c, ents);
		check("window S: rx_capacity pairs posted in one call", rc == (long)c);
		for (t0 = now_s(); (paid < c || hdrs < c) && now_s() - t0 < 60;) {
			if (cons == __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE)) {
				usleep(2000);
				continue;
			}
			if (cqe(&m, 1, cons)->index & ODL_TB5_CQE_CANCELED)
				bad++;
			else if (cqe(&m, 1, cons)->index & ODL_TB5_CQE_DMABUF)
				paid++;
			else
				hdrs++;
			__atomic_store_n(&ctl(&m)->tx_cq.cons, ++cons, __ATOMIC_RELEASE);
		}
		check("window S: every pair sent (Tx buffer and payload completed)",
		      paid == c && hdrs == c && !bad);
		/* Stay until R has them all: our close would end its session. */
		for (t0 = now_s(); dev_state(dev) == ODL_TB5_STATE_SESSION && now_s() - t0 < 60;)
			usleep(20000);
		release_h(dev, h);
		dbuf_destroy(&d);
	} else {
		cons = ctl(&m)->rx_cq.cons;
		/* Until all came, then 2 s more: nothing else may come. */
		for (t0 = now_s(), tfull = 0; now_s() - t0 < 60 &&
		     !(tfull && now_s() - tfull > 2);) {
			struct odl_tb5_cqe e;

			if (got >= c && !tfull)
				tfull = now_s();

			if (cons == __atomic_load_n(&ctl(&m)->rx_cq.prod, __ATOMIC_ACQUIRE)) {
				struct pollfd pfd = { .fd = dev, .events = POLLIN };

				poll(&pfd, 1, 50);
				continue;
			}
			e = *cqe(&m, 0, cons);
			__atomic_store_n(&ctl(&m)->rx_cq.cons, ++cons, __ATOMIC_RELEASE);
			if (e.index >= m.mi.rx_count || got >= c ||
			    check_frame(m.rx + (size_t)e.index * m.mi.buf_size, e.len,
					ODL_WINDOW_SEQ, c, next))
				bad++;
			else
				held[got] = e.index;
			got++;
		}
		printf("     window R: holding %u of %u frames, %u bad\n", got, c, bad);
		check("window R: all rx_capacity frames arrived while held, none lost, bytes checked",
		      got == c && !bad);
		expect("window R: STATS", stats(dev, &st1), 0);
		printf("     window R: rx_split %llu rx_bad_split %llu rx_bad_pdf %llu\n",
		       (unsigned long long)(st1.rx_split - st0.rx_split),
		       (unsigned long long)st1.rx_bad_split, (unsigned long long)st1.rx_bad_pdf);
		check("window R: STATS rx_split counts them, rx_bad_split 0",
		      st1.rx_split - st0.rx_split == c && st1.rx_bad_split == 0);
		for (k = 0; k < got && k < c; k++) {
			struct odl_tb5_post p = { .count = 1, .entries = (uintptr_t)&held[k] };

			if (ioctl(dev, ODL_TB5_IOC_POST_RECV, &p) != 1)
				bad++;
		}
		check("window R: every held buffer given back", !bad);
	}
	unmap_all(&m);
	close(dev);
	printf("%s: dmabuf window %s, %d failure(s)\n", failures ? "FAIL" : "PASS",
	       sender ? "S" : "R", failures);
	return failures ? 1 : 0;
}

/*
 * "refused" (in a session with a peer that runs split=0; the peer runs
 * "sink"): INFO split is 0 and a valid POST_SEND_SPLIT answers -EOPNOTSUPP,
 * twice (the Tx buffer stays the user's).
 */
static int refused(const char *path)
{
	struct odl_tb5_split_entry se = { 0 };
	struct odl_tb5_dmabuf_import im;
	struct odl_tb5_info info;
	struct dev_map m;
	struct dbuf d;
	int dev = open(path, O_RDWR | O_NONBLOCK);

	if (dev < 0 || wait_session(dev, &info) || map_all(dev, &m) || dbuf_create(&d, 1)) {
		printf("FAIL refused: open, session, map or udmabuf: %s\n", strerror(errno));
		return 1;
	}
	check("refused: INFO split 0 (the peer runs split=0)", info.split == 0);
	memset(&im, 0, sizeof(im));
	im.fd = d.fd;
	im.flags = ODL_TB5_DMABUF_F_DEVICE;
	expect("refused: IMPORT device-only", ioctl(dev, ODL_TB5_IOC_DMABUF_IMPORT, &im), 0);
	se.tx_index = cqe(&m, 1, ctl(&m)->tx_cq.cons)->index;
	se.handle = im.handle;
	se.len = frame_len(ODL_SPLIT_SEQ, 5);
	write_split_hdr(m.tx + (size_t)se.tx_index * m.mi.buf_size, ODL_SPLIT_SEQ, 5);
	expect("refused: POST_SEND_SPLIT to a peer without split", post_split(dev, 1, &se),
	       EOPNOTSUPP);
	expect("refused: again (the Tx buffer is still the user's)", post_split(dev, 1, &se),
	       EOPNOTSUPP);
	expect("refused: RELEASE", release_h(dev, im.handle), 0);
	unmap_all(&m);
	close(dev);
	dbuf_destroy(&d);
	printf("%s: dmabuf refused, %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}

/*
 * "bench whole|split N" (sender) and "bench recv N" (receiver): N frames of
 * ODL_FRAME_MAX_PAYLOAD bytes on stream 0, whole frames from a dma-buf
 * (POST_SEND_DMABUF) or split pairs from a device-only import
 * (POST_SEND_SPLIT), up to 256 in flight; the receiver times its first to
 * its last frame. Not a test: numbers for docs (payloads not checked).
 */
static int bench(const char *path, const char *mode, unsigned int n)
{
	static struct odl_tb5_split_entry se[256];
	static struct odl_tb5_dmabuf_entry de[256];
	static uint32_t freebuf[16384];
	struct odl_tb5_dmabuf_import im;
	struct odl_tb5_info info;
	struct dev_map m;
	struct dbuf d;
	unsigned int sent = 0, done = 0, nfree = 0, b, k, got = 0;
	int split = !strcmp(mode, "split"), recv = !strcmp(mode, "recv");
	uint32_t txc, rxc, h;
	double t0 = 0, t1 = 0, tstart;
	long rc;
	int dev = open(path, O_RDWR | O_NONBLOCK);

	if (dev < 0 || wait_session(dev, &info) || map_all(dev, &m))
		return 1;
	if (recv) {
		rxc = ctl(&m)->rx_cq.cons;
		for (tstart = now_s(); got < n && now_s() - tstart < 300;) {
			struct odl_tb5_cqe e;
			struct odl_tb5_post p = { .count = 1 };

			if (rxc == __atomic_load_n(&ctl(&m)->rx_cq.prod, __ATOMIC_ACQUIRE)) {
				struct pollfd pfd = { .fd = dev, .events = POLLIN };

				poll(&pfd, 1, 10);
				continue;
			}
			e = *cqe(&m, 0, rxc);
			__atomic_store_n(&ctl(&m)->rx_cq.cons, ++rxc, __ATOMIC_RELEASE);
			p.entries = (uintptr_t)&e.index;
			if (ioctl(dev, ODL_TB5_IOC_POST_RECV, &p) != 1)
				return 1;
			if (!got++)
				t0 = now_s();
			t1 = now_s();
		}
		printf("bench recv: %u frames of %u payload bytes in %.3f s: %.3f Gb/s\n", got,
		       ODL_FRAME_MAX_PAYLOAD, t1 - t0,
		       got > 1 ? (got - 1) * (double)ODL_FRAME_MAX_PAYLOAD * 8 / (t1 - t0) / 1e9 : 0);
		unmap_all(&m);
		close(dev);
		return got == n ? 0 : 1;
	}
	if (dbuf_create(&d, ODL_DB_PAGES) || import_fd(dev, d.fd, &im))
		return 1;
	h = im.handle;
	/* Whole frames: one per page, headers written once; split: payloads. */
	for (k = 0; k < ODL_DB_PAGES; k++) {
		struct odl_frame_info fi = { .type = ODL_FRAME_DATA,
					     .flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM,
					     .len = ODL_FRAME_MAX_PAYLOAD,
					     .msg_len = ODL_FRAME_MAX_PAYLOAD };

		odl_frame_encode((struct odl_frame_hdr *)(d.va + (size_t)k * page_size), &fi);
	}
	txc = ctl(&m)->tx_cq.cons;
	for (tstart = now_s(); done < n && now_s() - tstart < 300;) {
		while (txc != __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE)) {
			struct odl_tb5_cqe e = *cqe(&m, 1, txc);

			__atomic_store_n(&ctl(&m)->tx_cq.cons, ++txc, __ATOMIC_RELEASE);
			if (e.index & ODL_TB5_CQE_DMABUF)
				done++;
			else if (nfree < 16384)
				freebuf[nfree++] = e.index;
		}
		b = n - sent < 64 ? n - sent : 64;
		if (sent - done + b > 256)
			b = 256 - (sent - done);
		if (split && b > nfree)
			b = nfree;
		for (k = 0; k < b; k++) {
			unsigned int page = (sent + k) % ODL_DB_PAGES;

			if (split) {
				struct odl_frame_info fi = { .type = ODL_FRAME_DATA,
							     .flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM,
							     .len = ODL_FRAME_MAX_PAYLOAD,
							     .msg_len = ODL_FRAME_MAX_PAYLOAD };

				se[k] = (struct odl_tb5_split_entry){ .tx_index = freebuf[nfree - 1 - k],
								      .handle = h,
								      .offset = (uint64_t)page * page_size,
								      .len = ODL_FRAME_MAX_PAYLOAD };
				odl_frame_encode((struct odl_frame_hdr *)(m.tx + (size_t)se[k].tx_index *
									  m.mi.buf_size), &fi);
			} else {
				de[k] = (struct odl_tb5_dmabuf_entry){ .handle = h,
								       .len = ODL_FRAME_MAX_BYTES,
								       .offset = (uint64_t)page * page_size };
			}
		}
		if (!b) {
			usleep(100);
			continue;
		}
		rc = split ? post_split(dev, b, se) : post_db(dev, b, de);
		if (rc > 0) {
			sent += rc;
			if (split)
				nfree -= rc;
		} else if (errno != EAGAIN) {
			expect("bench: post", rc, 0);
			break;
		}
	}
	printf("bench %s: %u of %u frames sent\n", mode, done, n);
	/* Stay until the receiver closes: our close would end its session. */
	for (tstart = now_s(); dev_state(dev) == ODL_TB5_STATE_SESSION && now_s() - tstart < 60;)
		usleep(20000);
	release_h(dev, h);
	unmap_all(&m);
	close(dev);
	dbuf_destroy(&d);
	return done == n ? 0 : 1;
}

static uint32_t dev_state(int dev)
{
	struct odl_tb5_info info = { 0 };

	return ioctl(dev, ODL_TB5_IOC_INFO, &info) ? 0 : info.state;
}

/*
 * "unplug": keep the Tx rings full of dma-buf frames until the peer goes
 * away (the test unplugs the cable), then check that every frame posted
 * completed exactly once (sent or ODL_TB5_CQE_CANCELED), that the module
 * let go of the dma-buf when the service was removed (before our close),
 * and that the handle is gone. "sink": receive until the session ends.
 */
static int unplug(const char *path)
{
	struct odl_tb5_dmabuf_entry ents[ODL_DB_FRAMES];
	struct odl_tb5_dmabuf_import im;
	struct odl_tb5_info info;
	struct dbuf d;
	struct dev_map m;
	long base = dmabuf_count(), rc;
	uint64_t posted = 0, sent = 0, canceled = 0;
	uint32_t cons, prod, h, st = ODL_TB5_STATE_SESSION;
	unsigned int k, next = 0, bad = 0;
	double t0, tend = 0;
	int dev;

	dev = open(path, O_RDWR | O_NONBLOCK);
	if (dev < 0 || wait_session(dev, &info) || map_all(dev, &m) ||
	    dbuf_create(&d, ODL_DB_PAGES)) {
		printf("FAIL open, session, map or udmabuf: %s\n", strerror(errno));
		return 1;
	}
	prod = __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE);
	__atomic_store_n(&ctl(&m)->tx_cq.cons, prod, __ATOMIC_RELEASE);
	cons = prod;
	expect("unplug: IMPORT", import_fd(dev, d.fd, &im), 0);
	h = im.handle;
	dbuf_sync(&d, DMA_BUF_SYNC_START);
	for (k = 0; k < ODL_DB_FRAMES; k++) {
		ents[k].handle = h;
		ents[k].offset = frame_off(k, frame_len(4, k));
		ents[k].len = write_frame(d.va + ents[k].offset, 4, k);
	}
	dbuf_sync(&d, DMA_BUF_SYNC_END);
	printf("sending\n");
	for (t0 = now_s(); now_s() - t0 < 150;) {
		while (cons != __atomic_load_n(&ctl(&m)->tx_cq.prod, __ATOMIC_ACQUIRE)) {
			struct odl_tb5_cqe e = *cqe(&m, 1, cons);

			__atomic_store_n(&ctl(&m)->tx_cq.cons, ++cons, __ATOMIC_RELEASE);
			if (!(e.index & ODL_TB5_CQE_DMABUF) ||
			    (e.index & ODL_TB5_CQE_HANDLE_MASK) != h)
				bad++;
			else if (e.index & ODL_TB5_CQE_CANCELED)
				canceled++;
			else
				sent++;
		}
		if (st == ODL_TB5_STATE_SESSION) {
			st = dev_state(dev);
			if (st != ODL_TB5_STATE_SESSION)
				tend = now_s();
		}
		if (st != ODL_TB5_STATE_SESSION) {
			if (sent + canceled + bad >= posted || now_s() - tend > 10)
				break;
			usleep(10000);
			continue;
		}
		/* Up to ODL_DB_FRAMES in flight, from where the last post ended. */
		k = ODL_DB_FRAMES - (unsigned int)(posted - sent - canceled - bad);
		if (k > ODL_DB_FRAMES - next)
			k = ODL_DB_FRAMES - next;
		if (!k) {
			usleep(2000);
			continue;
		}
		rc = post_db(dev, k, ents + next);
		if (rc > 0) {
			posted += rc;
			next = (next + rc) % ODL_DB_FRAMES;
		} else if (errno != EAGAIN && errno != EPIPE && errno != ENODEV) {
			expect("unplug: POST_SEND_DMABUF", rc, 0);
			break;
		}
	}
	printf("     unplug: %llu posted, %llu sent, %llu cancelled, %u bad, state %u\n",
	       (unsigned long long)posted, (unsigned long long)sent,
	       (unsigned long long)canceled, bad, st);
	check("unplug: the session ended within 150 s", st != ODL_TB5_STATE_SESSION);
	check("unplug: every frame posted completed once (sent or cancelled)",
	      posted > 0 && !bad && sent + canceled == posted);
	ents[0].handle = h;
	rc = post_db(dev, 1, ents);
	check("unplug: POST_SEND_DMABUF after: EINVAL (import gone) or ENODEV/EPIPE",
	      rc < 0 && (errno == EINVAL || errno == ENODEV || errno == EPIPE));
	if (st == ODL_TB5_STATE_GONE) {
		/* GONE comes first; the removal detaches the import later. */
		for (t0 = now_s(); dmabuf_attachments() != 0 && now_s() - t0 < 10;)
			usleep(20000);
		printf("     dma-buf attachments after the removal: %ld\n",
		       dmabuf_attachments());
		check("unplug: the removal detached the import before close",
		      dmabuf_attachments() == 0);
		expect("unplug: RELEASE after the removal", release_h(dev, h), EINVAL);
	}
	unmap_all(&m);
	close(dev);
	dbuf_destroy(&d);
	for (t0 = now_s(); dmabuf_count() != base && now_s() - t0 < 10;)
		usleep(20000);
	check("unplug: every dma-buf freed after close", base >= 0 && dmabuf_count() == base);
	printf("%s: dmabuf unplug, %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
	return failures ? 1 : 0;
}

static int sink(const char *path)
{
	struct odl_tb5_info info;
	struct dev_map m;
	uint32_t cons;
	uint64_t got = 0;
	double t0;
	int dev = open(path, O_RDWR | O_NONBLOCK);

	if (dev < 0)
		return 1;
	/*
	 * A peer that only checks a refusal ("refused") opens, closes and is
	 * gone within a few ms: this file's session may have come and ended
	 * (BROKEN) before the first look. That is the end wait_session() would
	 * otherwise wait 60 s past.
	 */
	for (t0 = now_s(); dev_state(dev) == ODL_TB5_STATE_CONNECTED && now_s() - t0 < 60;)
		usleep(20000);
	if (dev_state(dev) == ODL_TB5_STATE_BROKEN) {
		printf("sink: 0 frames (the peer's session ended before the first look)\n");
		close(dev);
		return 0;
	}
	if (wait_session(dev, &info) || map_all(dev, &m))
		return 1;
	cons = ctl(&m)->rx_cq.cons;
	for (t0 = now_s(); now_s() - t0 < 150 && dev_state(dev) == ODL_TB5_STATE_SESSION;) {
		struct pollfd pfd = { .fd = dev, .events = POLLIN };
		struct odl_tb5_post p = { .count = 1 };
		struct odl_tb5_cqe e;

		if (cons == __atomic_load_n(&ctl(&m)->rx_cq.prod, __ATOMIC_ACQUIRE)) {
			poll(&pfd, 1, 100);
			continue;
		}
		e = *cqe(&m, 0, cons);
		__atomic_store_n(&ctl(&m)->rx_cq.cons, ++cons, __ATOMIC_RELEASE);
		p.entries = (uintptr_t)&e.index;
		if (ioctl(dev, ODL_TB5_IOC_POST_RECV, &p) != 1)
			break;
		got++;
	}
	printf("sink: %llu frames\n", (unsigned long long)got);
	unmap_all(&m);
	close(dev);
	return 0;
}

int main(int argc, char **argv)
{
	page_size = sysconf(_SC_PAGESIZE);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 2 && !strcmp(argv[2], "table"))
		return table(argv[1]);
	if (argc > 3 && !strcmp(argv[2], "session"))
		return session(argv[1], !strcmp(argv[3], "A"));
	if (argc > 2 && !strcmp(argv[2], "unplug"))
		return unplug(argv[1]);
	if (argc > 2 && !strcmp(argv[2], "sink"))
		return sink(argv[1]);
	if (argc > 3 && !strcmp(argv[2], "split"))
		return split_session(argv[1], !strcmp(argv[3], "A"));
	if (argc > 3 && !strcmp(argv[2], "window"))
		return window(argv[1], !strcmp(argv[3], "S"));
	if (argc > 2 && !strcmp(argv[2], "refused"))
		return refused(argv[1]);
	if (argc > 4 && !strcmp(argv[2], "bench"))
		return bench(argv[1], argv[3], (unsigned int)strtoul(argv[4], NULL, 0));
	fprintf(stderr, "usage: %s /dev/odl_tb5_0 table|session A|B|unplug|sink|split A|B|window S|R|refused|bench whole|split|recv N\n",
		argv[0]);
	return 1;
}
