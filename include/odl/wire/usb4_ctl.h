/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * USB4 control packets (ring 0 / HopID 0), router and adapter config-space
 * offsets and path (HopID) entries: layout only, as Linux's tb_msgs.h and
 * tb_regs.h use them (shared/research/usb4-emulation.md sections 4-8).
 *
 * On the wire every dword of a control packet is big-endian, followed by a
 * big-endian CRC-32C (Castagnoli) of those bytes. The dword layouts below
 * are CPU-order values, i.e. after the byte swap.
 */
#ifndef ODL_WIRE_USB4_CTL_H
#define ODL_WIRE_USB4_CTL_H

#include "odl/wire/wire_common.h"

/* Packet types = PDF, carried in the NHI descriptor EOF (and SOF on TX). */
enum odl_usb4_pdf {
	ODL_USB4_PDF_READ = 1,        /* config read request / response */
	ODL_USB4_PDF_WRITE = 2,       /* config write request / response */
	ODL_USB4_PDF_ERROR = 3,       /* error / notification; CM: hot-plug ACK */
	ODL_USB4_PDF_NOTIFY_ACK = 4,  /* CM acks notifications 32..39 */
	ODL_USB4_PDF_EVENT = 5,       /* hot plug / unplug */
	ODL_USB4_PDF_XDOMAIN_REQ = 6, /* host to host, forwarded */
	ODL_USB4_PDF_XDOMAIN_RESP = 7,/* host to host, forwarded */
};

#define ODL_USB4_CTL_MAX_BYTES 256u   /* payload + CRC */
#define ODL_USB4_CTL_CRC_BYTES 4u
#define ODL_USB4_CTL_HDR_DWORDS 2u
#define ODL_USB4_CTL_MAX_RW_DWORDS 60u /* Linux TB_MAX_CONFIG_RW_LENGTH */

/* Header dword 0: route bits 53:32 in 21:0; bit 31 = sent by a router. */
#define ODL_USB4_HDR0_ROUTE_HI_MASK 0x003fffffu
#define ODL_USB4_HDR0_ROUTER (1u << 31)
#define ODL_USB4_ROUTE_SHIFT 8 /* one byte (egress adapter) per depth */

/* Address dword (dword 2) of READ / WRITE packets. */
#define ODL_USB4_ADDR_OFFSET_MASK 0x00001fffu /* 12:0 in dwords */
#define ODL_USB4_ADDR_LEN_SHIFT 13           /* 18:13 length in dwords */
#define ODL_USB4_ADDR_LEN_MASK 0x3fu
#define ODL_USB4_ADDR_PORT_SHIFT 19          /* 24:19 adapter */
#define ODL_USB4_ADDR_PORT_MASK 0x3fu
#define ODL_USB4_ADDR_SPACE_SHIFT 25         /* 26:25 enum odl_usb4_space */
#define ODL_USB4_ADDR_SPACE_MASK 0x3u
#define ODL_USB4_ADDR_SEQ_SHIFT 27           /* 28:27 retry number */
#define ODL_USB4_ADDR_SEQ_MASK 0x3u
#define ODL_USB4_ADDR_ZERO_MASK 0xe0000000u  /* 31:29 must be 0 */

enum odl_usb4_space {
	ODL_USB4_SPACE_HOPS = 0,     /* path entries, 2 dwords per HopID */
	ODL_USB4_SPACE_PORT = 1,     /* adapter config space */
	ODL_USB4_SPACE_SWITCH = 2,   /* router config space */
	ODL_USB4_SPACE_COUNTERS = 3, /* not implemented: ERR_ADDR */
};

/* Error packet dword 2: 7:0 code, 13:8 port, 31:30 PG (hot-plug ACK). */
#define ODL_USB4_ERR_CODE_MASK 0xffu
#define ODL_USB4_ERR_PORT_SHIFT 8
#define ODL_USB4_ERR_PORT_MASK 0x3fu
#define ODL_USB4_ERR_PG_SHIFT 30
#define ODL_USB4_PG_PLUG 2u
#define ODL_USB4_PG_UNPLUG 3u

enum odl_usb4_err {
	ODL_USB4_ERR_CONN = 0,       /* port not connected */
	ODL_USB4_ERR_LINK = 1,       /* async */
	ODL_USB4_ERR_ADDR = 2,       /* invalid config space / offset */
	ODL_USB4_ERR_ADP = 4,        /* no such adapter */
	ODL_USB4_ERR_PLUG_ACK = 7,   /* CM -> router hot-plug ACK */
	ODL_USB4_ERR_ENUM = 8,
	ODL_USB4_ERR_NUA = 9,        /* not the upstream adapter: other domain */
	ODL_USB4_ERR_LEN = 11,       /* bad packet or request length */
	ODL_USB4_ERR_HEC = 12,       /* async */
	ODL_USB4_ERR_FC = 13,        /* async */
	ODL_USB4_ERR_PLUG = 14,
	ODL_USB4_ERR_LOCK = 15,
};

/* Hot-plug event (PDF 5) dword 2: 5:0 adapter, bit 31 unplug. */
#define ODL_USB4_EVENT_PORT_MASK 0x3fu
#define ODL_USB4_EVENT_UNPLUG (1u << 31)

/* XDomain (PDF 6/7) dword 2: 5:0 dwords after the 3 header dwords. */
#define ODL_USB4_XD_LEN_MASK 0x3fu

/* Router config space (TB_CFG_SWITCH), dword offsets. */
#define ODL_ROUTER_CS_0 0x00  /* 15:0 vendor, 31:16 device */
#define ODL_ROUTER_CS_1 0x01  /* 7:0 cap ptr, 13:8 upstream, 19:14 max adapter */
#define ODL_ROUTER_CS_1_RO_MASK 0x000fc0ffu
#define ODL_ROUTER_CS_3 0x03  /* bit 31 V (enumerated) */
#define ODL_ROUTER_CS_3_V (1u << 31)
#define ODL_ROUTER_CS_4 0x04  /* 31:24 USB4 version (RO) */
#define ODL_ROUTER_CS_5 0x05  /* bit 0 SLP */
#define ODL_ROUTER_CS_6 0x06  /* bit 0 SLPR (RO) */
#define ODL_ROUTER_CS_7 0x07  /* UID low */
#define ODL_ROUTER_CS_8 0x08  /* UID high */
#define ODL_ROUTER_CS_26 0x1a /* 15:0 opcode, 30 ONS, 31 OV */
#define ODL_ROUTER_CS_26_OPCODE_MASK 0xffffu
#define ODL_ROUTER_CS_26_ONS (1u << 30)
#define ODL_ROUTER_CS_26_OV (1u << 31)
#define ODL_ROUTER_CAP_TMU 0x20 /* TMU capability (ID 0x03), 0x1a dwords */
#define ODL_ROUTER_TMU_DWORDS 0x1au
#define ODL_USB4_VERSION_1_0 0x20u

/* Capability header: 7:0 next, 15:8 ID. */
#define ODL_CAP_ID_SHIFT 8
#define ODL_CAP_LANE 0x01u     /* adapter */
#define ODL_CAP_TMU 0x03u      /* router and adapter */
#define ODL_CAP_USB4_PORT 0x06u

/* Adapter config space (TB_CFG_PORT), dword offsets. */
#define ODL_ADP_CS_0 0x00
#define ODL_ADP_CS_1 0x01 /* 7:0 first cap ptr */
#define ODL_ADP_CS_2 0x02 /* 23:0 adapter type */
#define ODL_ADP_CS_3 0x03 /* 25:20 adapter number */
#define ODL_ADP_CS_4 0x04 /* 29:20 total buffers, 31 LCK */
#define ODL_ADP_CS_4_LCK (1u << 31)
#define ODL_ADP_CS_5 0x05 /* 10:0 max in HopID, 21:11 max out HopID, 31 DHP */
#define ODL_ADP_CS_5_DHP (1u << 31)
#define ODL_ADP_HDR_DWORDS 8u
#define ODL_ADP_TYPE_LANE 0x000001u
#define ODL_ADP_TYPE_NHI 0x000002u

/* Lane adapter capability at ODL_LANE_CAP, USB4 port capability at ODL_PORT_CAP. */
#define ODL_LANE_CAP 0x08
#define ODL_LANE_ADP_CS_1_SPEED_SHIFT 16 /* 19:16: 8 Gen2, 4 Gen3, 2 Gen4 */
#define ODL_LANE_ADP_CS_1_WIDTH_SHIFT 20 /* 25:20: 1, 2, 4 asym TX, 8 asym RX */
#define ODL_LANE_ADP_CS_1_STATE_SHIFT 26 /* 29:26 enum odl_lane_state */
#define ODL_LANE_ADP_CS_1_LD (1u << 14)
#define ODL_LANE_SPEED_GEN2 0x8u
#define ODL_LANE_SPEED_GEN3 0x4u
#define ODL_LANE_SPEED_GEN4 0x2u
enum odl_lane_state {
	ODL_LANE_DISABLED = 0,
	ODL_LANE_TRAINING = 1,
	ODL_LANE_CL0 = 2,
	ODL_LANE_UNPLUGGED = 7,
};
#define ODL_PORT_CAP 0x10
#define ODL_PORT_CAP_DWORDS 0x14u
#define ODL_PORT_CS_1 0x01 /* relative: sideband control */
#define ODL_PORT_CS_1_TARGET_SHIFT 16
#define ODL_PORT_CS_1_NR (1u << 25)
#define ODL_PORT_CS_1_RC (1u << 26)
#define ODL_PORT_CS_1_PND (1u << 31)
#define ODL_PORT_CS_18 0x12
#define ODL_PORT_CS_19 0x13
#define ODL_PORT_CS_19_DPR (1u << 0) /* downstream port reset */
#define ODL_PORT_CS_19_PID (1u << 4) /* port is inter-domain */

/* Path entry (TB_CFG_HOPS): 2 dwords at 2*HopID of the ingress adapter. */
#define ODL_HOP0_NEXT_HOP_MASK 0x7ffu   /* 10:0 output HopID */
#define ODL_HOP0_OUT_PORT_SHIFT 11      /* 16:11 egress adapter */
#define ODL_HOP0_OUT_PORT_MASK 0x3fu
#define ODL_HOP0_CREDITS_SHIFT 17       /* 23:17 initial credits */
#define ODL_HOP0_CREDITS_MASK 0x7fu
#define ODL_HOP0_ENABLE (1u << 31)
#define ODL_HOP1_IFC (1u << 24)         /* ingress flow control */
#define ODL_HOP1_EFC (1u << 25)         /* egress flow control */
#define ODL_HOP1_PENDING (1u << 28)     /* reads 0 in the model */
#define ODL_HOP_MIN_LANE_HOPID 8u       /* 0..7 reserved on lane adapters */

#endif /* ODL_WIRE_USB4_CTL_H */
