// SPDX-License-Identifier: MIT
/*
 * Guest-side checks of /dev/odl_tb5_N's user ABI (include/uapi/odl_tb5.h):
 * a table of bad ioctl, read and write arguments, each with the errno it
 * must give, then a bounded randomized ioctl stress. Prints one line per
 * case; exit 0 only if every case matched.
 *
 * Usage: odl_tb5_ioctl [/dev/odl_tb5_0] [stress-iterations]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "odl/wire/frame_codec.h"
#include "uapi/odl_tb5.h"

static int failures;

static void expect(const char *what, long rc, int want_errno)
{
	int got = rc < 0 ? errno : 0;

	if (got == want_errno) {
		printf("ok   %-44s errno %d\n", what, got);
	} else {
		printf("FAIL %-44s errno %d (%s), want %d\n", what, got,
		       strerror(got), want_errno);
		failures++;
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
	int fd, fd2;

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
		printf("ok   INFO state %u ring %u tx HopID %u rx HopID %u peer %s rx_poll %u irq_throttle_ns %u\n",
		       info.state, info.ring_size, info.tx_hopid, info.rx_hopid,
		       info.peer_name, info.rx_poll, info.irq_throttle_ns);
	}
	memset(&info, 0, sizeof(info));
	info.flags = 1;
	expect("INFO flags != 0", ioctl(fd, ODL_TB5_IOC_INFO, &info), EINVAL);
	memset(&info, 0, sizeof(info));
	info.reserved[5] = 1;
	expect("INFO reserved != 0", ioctl(fd, ODL_TB5_IOC_INFO, &info), EINVAL);
	expect("INFO NULL", ioctl(fd, ODL_TB5_IOC_INFO, NULL), EFAULT);
	expect("INFO bad pointer", ioctl(fd, ODL_TB5_IOC_INFO, (void *)16), EFAULT);

	memset(&st, 0, sizeof(st));
	expect("STATS valid", ioctl(fd, ODL_TB5_IOC_STATS, &st), 0);
	printf("ok   STATS logins %llu logouts %llu login_failures %llu reannounces %llu xd_bad %llu rx_frames %llu rx_poll_starts %llu\n",
	       (unsigned long long)st.logins, (unsigned long long)st.logouts,
	       (unsigned long long)st.login_failures,
	       (unsigned long long)st.reannounces,
	       (unsigned long long)st.xd_bad,
	       (unsigned long long)st.rx_frames,
	       (unsigned long long)st.rx_poll_starts);
	memset(&st, 0, sizeof(st));
	st.flags = 1u << 5;
	expect("STATS unknown flag", ioctl(fd, ODL_TB5_IOC_STATS, &st), EINVAL);
	memset(&st, 0, sizeof(st));
	st.reserved0 = 7;
	expect("STATS reserved0 != 0", ioctl(fd, ODL_TB5_IOC_STATS, &st), EINVAL);
	memset(&st, 0, sizeof(st));
	st.reserved[0] = 1;
	expect("STATS reserved != 0", ioctl(fd, ODL_TB5_IOC_STATS, &st), EINVAL);
	expect("STATS NULL", ioctl(fd, ODL_TB5_IOC_STATS, NULL), EFAULT);
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
	close(fd);
	printf("%s: %d failure(s), %lu stress iterations\n",
	       failures ? "FAIL" : "PASS", failures, iters);
	return failures ? 1 : 0;
}
