/* SPDX-License-Identifier: MIT */
/* The wire headers and the C API compile as C11 and work from C. */
#include <stdio.h>
#include <string.h>

#include "odl/odl.h"
#include "odl/wire/files_codec.h"
#include "odl/wire/frame_codec.h"
#include "odl/wire/sim_codec.h"
#include "odl/wire/spin.h"
#include "odl/wire/tb5_login_codec.h"

int main(void)
{
	unsigned char buf[ODL_FRAME_MAX_BYTES];
	struct odl_frame_info in, out;
	struct odl_open_params p;

	odl_cpu_relax(); /* the spin hint compiles as C too */
	memset(&in, 0, sizeof(in));
	in.type = ODL_FRAME_DATA;
	in.flags = ODL_FRAME_F_SOM | ODL_FRAME_F_EOM;
	in.len = 10;
	in.msg_len = 10;
	odl_frame_encode((struct odl_frame_hdr *)buf, &in);
	if (odl_frame_decode(buf, ODL_FRAME_HDR_BYTES + 10, 1, &out) != ODL_FRAME_OK || out.len != 10) {
		fprintf(stderr, "C decode failed\n");
		return 1;
	}
	odl_open_params_init(&p);
	if (p.struct_size != sizeof(p) || strcmp(p.backend, "loopback") != 0) {
		fprintf(stderr, "C params init failed\n");
		return 1;
	}
	if (strcmp(odl_strerror(ODL_ERR_PEER_LOST), "peer lost") != 0)
		return 1;
	if (odl_files_path_check("a/b", 3, 0) || !odl_files_path_check("a/../b", 6, 0))
		return 1;
	return 0;
}
