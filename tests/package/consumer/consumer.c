// SPDX-License-Identifier: MIT
// Installed-package consumer: the C API, the wire headers and the uapi
// header from the development package; prints what libodl says it is.
#include <stdio.h>
#include <string.h>

#include <odl/odl.h>
#include <odl/uapi/odl_tb5.h>
#include <odl/wire/frame_codec.h>

int main(void) {
    struct odl_frame_hdr hdr;
    memset(&hdr, 0, sizeof hdr);
    printf("odl_version=%s api=%d frame_hdr=%zu strerror=%s\n", odl_version(), ODL_API_VERSION,
           sizeof hdr, odl_strerror(ODL_ERR_INVAL));
    return 0;
}
