/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * USB4 host interface (NHI) BAR0 register map and ring descriptor: layout
 * only, as Linux drivers/thunderbolt/nhi_regs.h lays it out (see
 * shared/research/usb4-emulation.md sections 2 and 3). The one definition
 * used by the SystemC model, odl-linkd and the QEMU device.
 *
 * All registers are 32-bit, little-endian, offsets in bytes from BAR0.
 * h = ring (HopID) number, HC = hop count read from ODL_NHI_REG_CAPS.
 */
#ifndef ODL_WIRE_NHI_REGS_H
#define ODL_WIRE_NHI_REGS_H

#include "odl/wire/wire_common.h"

#define ODL_NHI_BAR0_SIZE 0x40000u /* 256 KiB; REG_RESET is at 0x39898 */
#define ODL_NHI_MSIX_VECTORS 16u   /* Linux asks for 6..16 */
#define ODL_NHI_HOP_COUNT 16u      /* HC we report; Linux handles <= 21 */

/* Ring descriptor registers: TX ring h at +h*16, RX ring h at +h*16. */
#define ODL_NHI_TX_RING_BASE 0x00000u
#define ODL_NHI_RX_RING_BASE 0x08000u
#define ODL_NHI_RING_STRIDE 16u
#define ODL_NHI_RING_ADDR_LO 0x0u /* descriptor array base, low 32 bits */
#define ODL_NHI_RING_ADDR_HI 0x4u /* descriptor array base, high 32 bits */
#define ODL_NHI_RING_INDEX 0x8u   /* TX: prod 31:16 (SW); RX: cons 15:0 (SW) */
#define ODL_NHI_RING_SIZE 0xcu    /* 15:0 descriptors; RX 31:16 frame size */
#define ODL_NHI_RING_CONS_MASK 0x0000ffffu
#define ODL_NHI_RING_PROD_SHIFT 16
#define ODL_NHI_RING_SIZE_MASK 0x0000ffffu
#define ODL_NHI_RING_FRAME_SHIFT 16 /* RX max frame bytes; 0 means 4096 */

/* Ring options: TX ring h at +h*32, RX ring h at +h*32. */
#define ODL_NHI_TX_OPTS_BASE 0x19800u
#define ODL_NHI_RX_OPTS_BASE 0x29800u
#define ODL_NHI_OPTS_STRIDE 32u
#define ODL_NHI_OPTS_FLAGS 0x0u /* ODL_NHI_RING_FLAG_*; RX: + E2E TX HopID */
#define ODL_NHI_OPTS_PDF 0x4u   /* RX: SOF PDF mask 31:16 | EOF PDF mask 15:0 */

#define ODL_NHI_RING_FLAG_ISOCH (1u << 27)
#define ODL_NHI_RING_FLAG_E2E (1u << 28)     /* E2E flow control (RX) */
#define ODL_NHI_RING_FLAG_NO_SNOOP (1u << 29)
#define ODL_NHI_RING_FLAG_RAW (1u << 30)     /* raw mode: control ring 0 */
#define ODL_NHI_RING_FLAG_ENABLE (1u << 31)
#define ODL_NHI_RX_E2E_HOP_SHIFT 12          /* bits 22:12, not 23:13 */
#define ODL_NHI_RX_E2E_HOP_MASK 0x007ff000u

/* Interrupts. Index of a ring: TX h -> h, RX h -> HC+h, RX overflow -> 2HC+h. */
#define ODL_NHI_REG_NOTIFY_BASE 0x37800u    /* status; clear-on-read in MSI mode */
#define ODL_NHI_REG_INT_CLEAR 0x37808u      /* write-1-to-clear of status */
#define ODL_NHI_REG_INT_ENABLE_BASE 0x38200u /* enable, read-modify-write */
#define ODL_NHI_REG_INT_MASK_CLEAR 0x38208u /* write-1-to-clear of enable */
#define ODL_NHI_REG_THROTTLE_BASE 0x38c00u  /* per vector, 256 ns units */
#define ODL_NHI_THROTTLE_UNIT_NS 256u
#define ODL_NHI_THROTTLE_MASK 0x0000ffffu
#define ODL_NHI_REG_IVR_BASE 0x38c40u /* 4 bits per interrupt index */
#define ODL_NHI_IVR_BITS 4u
#define ODL_NHI_NOTIFY_REGS(hc) ((31u + 3u * (hc)) / 32u)
#define ODL_NHI_ENABLE_REGS(hc) ((31u + 2u * (hc)) / 32u)
#define ODL_NHI_IVR_REGS(hc) ((2u * (hc) + 7u) / 8u)

#define ODL_NHI_REG_CAPS 0x39640u /* 9:0 hop count, 23:16 version (RO) */
#define ODL_NHI_CAPS_HC_MASK 0x000003ffu
#define ODL_NHI_CAPS_VERSION_SHIFT 16
#define ODL_NHI_REG_DMA_MISC 0x39864u
#define ODL_NHI_DMA_MISC_INT_AUTO_CLEAR (1u << 2)   /* Intel only */
#define ODL_NHI_DMA_MISC_DISABLE_AUTO_CLEAR (1u << 17) /* non-Intel */
#define ODL_NHI_REG_RESET 0x39898u
#define ODL_NHI_RESET_HRR (1u << 0) /* host router reset (CAPS version >= 0x40) */

/*
 * Model extension, never touched by Linux: sticky record of guest misuse,
 * write-1-to-clear. Each bit pairs with a warning under the NHI's name.
 */
#define ODL_NHI_REG_MODEL_ERR 0x3fff0u
#define ODL_NHI_ERR_UNKNOWN_REG (1u << 0) /* access outside the register map */
#define ODL_NHI_ERR_RO_WRITE (1u << 1)    /* write to a read-only register */
#define ODL_NHI_ERR_UNALIGNED (1u << 2)   /* offset not a multiple of 4 */
#define ODL_NHI_ERR_RING_CONFIG (1u << 3) /* ring enabled with size 0 or base 0 */
#define ODL_NHI_ERR_DOORBELL (1u << 4)    /* index beyond the ring size */
#define ODL_NHI_ERR_DMA (1u << 5)         /* host memory access failed */
#define ODL_NHI_ERR_RX_OVERFLOW (1u << 6) /* frame dropped: no RX descriptor */

/**
 * struct odl_nhi_ring_desc - one 16-byte ring descriptor in host memory.
 * @phys: buffer DMA address, set by software
 * @len_flags: 11:0 length in bytes (0 = 4096 in frame mode; RX: written by
 *	the NHI), 15:12 EOF PDF, 19:16 SOF PDF, 31:20 ODL_NHI_DESC_F_* flags
 * @time: software writes 0
 */
struct odl_nhi_ring_desc {
	__le64 phys;
	__le32 len_flags;
	__le32 time;
};
ODL_WIRE_SIZE(struct odl_nhi_ring_desc, 16);

#define ODL_NHI_DESC_LEN_MASK 0x00000fffu
#define ODL_NHI_DESC_EOF_SHIFT 12
#define ODL_NHI_DESC_SOF_SHIFT 16
#define ODL_NHI_DESC_PDF_MASK 0xfu
#define ODL_NHI_DESC_FLAGS_SHIFT 20
/* flag values inside the 12-bit field (add 20 for the dword bit) */
#define ODL_NHI_DESC_F_CRC_ERROR 0x1u  /* RX: frame CRC error; TX: ISOCH */
#define ODL_NHI_DESC_F_COMPLETED 0x2u  /* set by the NHI */
#define ODL_NHI_DESC_F_POSTED 0x4u     /* TX: set by SW; RX write-back: overrun */
#define ODL_NHI_DESC_F_INTERRUPT 0x8u  /* raise the ring interrupt on completion */
#define ODL_NHI_DESC_F_BUFFER_OVERRUN ODL_NHI_DESC_F_POSTED

#define ODL_NHI_FRAME_MAX_BYTES 4096u /* frame mode; length 0 encodes it */
#define ODL_NHI_RAW_FRAME_BYTES 256u  /* raw (control) ring buffers */

#endif /* ODL_WIRE_NHI_REGS_H */
