/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Shared basics for every OdinLink wire format: fixed-width little-endian
 * types and a size check per struct. Compiles unchanged in the kernel,
 * in QEMU (C) and in C++.
 */
#ifndef ODL_WIRE_COMMON_H
#define ODL_WIRE_COMMON_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/build_bug.h>
#include <asm/byteorder.h>
#define ODL_WIRE_SIZE(type, size) static_assert(sizeof(type) == (size), #type)
#define odl_le16(x) le16_to_cpu(x)
#define odl_le32(x) le32_to_cpu(x)
#define odl_le64(x) le64_to_cpu(x)
#define odl_cpu_le16(x) cpu_to_le16(x)
#define odl_cpu_le32(x) cpu_to_le32(x)
#define odl_cpu_le64(x) cpu_to_le64(x)
#else
#include <linux/types.h>
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#ifdef __cplusplus
#define ODL_WIRE_SIZE(type, size) static_assert(sizeof(type) == (size), #type)
#else
#define ODL_WIRE_SIZE(type, size) _Static_assert(sizeof(type) == (size), #type)
#endif
#define odl_le16(x) ((__u16)le16toh(x))
#define odl_le32(x) ((__u32)le32toh(x))
#define odl_le64(x) ((__u64)le64toh(x))
#define odl_cpu_le16(x) ((__le16)htole16(x))
#define odl_cpu_le32(x) ((__le32)htole32(x))
#define odl_cpu_le64(x) ((__le64)htole64(x))
#endif

#endif /* ODL_WIRE_COMMON_H */
