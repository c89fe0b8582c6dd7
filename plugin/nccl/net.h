/* SPDX-License-Identifier: MIT */
/* Every supported plugin ABI version; the core works on v12's types. */
#ifndef ODL_NCCL_NET_H
#define ODL_NCCL_NET_H

#include "net_v8.h"
#include "net_v9.h"
#include "net_v10.h"
#include "net_v11.h"
#include "net_v12.h"

#endif /* ODL_NCCL_NET_H */
