// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Guest helper of tests/vm/hostile_peer_test.sh: prints odl_tb5's INFO state
 * and the STATS counters that judge a hostile peer (refused frames by
 * reason, XDomain packets refused, login failures) on one line:
 *
 *   state S logins N login_failures N xd_bad N rx_frames N rx_bad_pdf N
 *   rx_split N rx_bad_split N rx_dropped_closed N rx_bad N (size N short N
 *   length N ...)
 *
 * Usage: hostile_peer_stats [/dev/odl_tb5_0]. Exit 1 with a message when
 * the device cannot be opened or an ioctl fails.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "uapi/odl_tb5.h"
#include "odl/wire/frame_codec.h"

int main(int argc, char **argv)
{
	const char *dev = argc > 1 ? argv[1] : "/dev/odl_tb5_0";
	struct odl_tb5_stats st;
	struct odl_tb5_info info;
	unsigned long long bad = 0;
	unsigned int i;
	int fd;

	fd = open(dev, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "hostile_peer_stats: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	memset(&info, 0, sizeof(info));
	memset(&st, 0, sizeof(st));
	if (ioctl(fd, ODL_TB5_IOC_INFO, &info) || ioctl(fd, ODL_TB5_IOC_STATS, &st)) {
		fprintf(stderr, "hostile_peer_stats: %s: ioctl: %s\n", dev, strerror(errno));
		close(fd);
		return 1;
	}
	close(fd);
	for (i = 0; i < ODL_TB5_RX_BAD_SLOTS; i++)
		bad += st.rx_bad[i];
	printf("state %u logins %llu login_failures %llu xd_bad %llu rx_frames %llu rx_bad_pdf %llu rx_split %llu rx_bad_split %llu rx_dropped_closed %llu rx_bad %llu (size %llu",
	       info.state, (unsigned long long)st.logins,
	       (unsigned long long)st.login_failures,
	       (unsigned long long)st.xd_bad,
	       (unsigned long long)st.rx_frames,
	       (unsigned long long)st.rx_bad_pdf,
	       (unsigned long long)st.rx_split,
	       (unsigned long long)st.rx_bad_split,
	       (unsigned long long)st.rx_dropped_closed, bad,
	       (unsigned long long)st.rx_bad[0]);
	for (i = 1; i < ODL_FRAME_ERR_COUNT && i < ODL_TB5_RX_BAD_SLOTS; i++)
		printf(" %s %llu", odl_frame_err_name((enum odl_frame_err)i),
		       (unsigned long long)st.rx_bad[i]);
	printf(")\n");
	return 0;
}
