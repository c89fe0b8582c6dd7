/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What the guest-side odl_tb5 checkers (odl_tb5_ioctl.c, odl_tb5_dmabuf.c)
 * share: counting results, a clock, the mmapped device and waiting for a
 * session. Header only: each checker is one static binary.
 */
#ifndef ODL_TB5_CHECK_H
#define ODL_TB5_CHECK_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "uapi/odl_tb5.h"

static int failures;

/* @rc from a call that sets errno: ok when it failed with @want_errno (0: succeeded). */
static inline void expect(const char *what, long rc, int want_errno)
{
	int got = rc < 0 ? errno : 0;

	if (got == want_errno) {
		printf("ok   %-50s errno %d\n", what, got);
	} else {
		printf("FAIL %-50s errno %d (%s), want %d\n", what, got,
		       strerror(got), want_errno);
		failures++;
	}
}

static inline void check(const char *what, int ok)
{
	printf("%s %s\n", ok ? "ok  " : "FAIL", what);
	if (!ok)
		failures++;
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* One mmapped device: the layout and the three areas. */
struct dev_map {
	struct odl_tb5_map_info mi;
	unsigned char *ctrl, *tx, *rx;
};

static inline struct odl_tb5_ctrl *ctl(struct dev_map *m)
{
	return (struct odl_tb5_ctrl *)m->ctrl;
}

static inline struct odl_tb5_cqe *cqe(struct dev_map *m, int tx, uint32_t i)
{
	uint32_t off = tx ? m->mi.tx_cqe_offset : m->mi.rx_cqe_offset;

	return (struct odl_tb5_cqe *)(m->ctrl + off) + (i & (m->mi.cq_entries - 1));
}

/* MAP_INFO, then all three areas; -1 if any step failed. */
static inline int map_all(int fd, struct dev_map *m)
{
	memset(m, 0, sizeof(*m));
	if (ioctl(fd, ODL_TB5_IOC_MAP_INFO, &m->mi))
		return -1;
	m->ctrl = mmap(NULL, m->mi.ctrl_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       fd, m->mi.ctrl_offset);
	m->tx = mmap(NULL, m->mi.tx_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		     fd, m->mi.tx_offset);
	m->rx = mmap(NULL, m->mi.rx_size, PROT_READ, MAP_SHARED, fd,
		     m->mi.rx_offset);
	if (m->ctrl == MAP_FAILED || m->tx == MAP_FAILED || m->rx == MAP_FAILED)
		return -1;
	return 0;
}

/* Mappings hold the file: without this, close() would release nothing. */
static inline void unmap_all(struct dev_map *m)
{
	munmap(m->ctrl, m->mi.ctrl_size);
	munmap(m->tx, m->mi.tx_size);
	munmap(m->rx, m->mi.rx_size);
}

/* Polls INFO until the device is in a session, at most 60 s. */
static inline int wait_session(int fd, struct odl_tb5_info *info)
{
	double t0;

	for (t0 = now_s();; usleep(20000)) {
		memset(info, 0, sizeof(*info));
		if (ioctl(fd, ODL_TB5_IOC_INFO, info) == 0 &&
		    info->state == ODL_TB5_STATE_SESSION)
			return 0;
		/* A device that went never gets a session: say so now. */
		if (info->state == ODL_TB5_STATE_GONE) {
			printf("FAIL the device went while waiting for a session\n");
			return -1;
		}
		if (now_s() - t0 > 60) {
			printf("FAIL no session within 60 s (state %u)\n", info->state);
			return -1;
		}
	}
}

#endif /* ODL_TB5_CHECK_H */
