#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the binary seed inputs of the fuzz targets (seeds/<target>/):
# well-formed messages of each kind, so the fuzzers start past the first
# checks. The YAML seeds are copies of the tree's own files. Run from the
# repository root after a wire format changes: tests/fuzz/make_seeds.py
import os
import shutil
import struct
import sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
seeds = os.path.join(root, "tests", "fuzz", "seeds")

HDR = 32
MAXB = 4096
MAXP = MAXB - HDR
SOM, EOM, CSUM, CREDIT = 1, 2, 4, 8


def frame(ftype, flags=0, stream=0, payload=b"", seq=0, tag=0, msg_len=0, offset=0, credit=0, csum=0, length=None):
    ln = len(payload) if length is None else length
    return struct.pack("<BBHHHIIIIII", ftype, flags, stream, ln, 0, seq, tag, msg_len, offset, credit, csum) + payload


def hello(streams=4, window=16, features=3, link_window=0):
    return struct.pack("<IHHIHHIIQQII64s", 0x314C444F, 1, 1, features, MAXP, streams, window, link_window,
                       1 << 20, 7, 1234, 0, b"seed")


def write(target, name, data):
    d = os.path.join(seeds, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# frame: one of each type the decoder accepts.
frames = {
    "hello": frame(0x01, payload=hello()),
    "credit": frame(0x02, CREDIT, stream=1, credit=8),
    "goodbye": frame(0x03),
    "link_credit": frame(0x04, CREDIT, credit=16),
    "rndv_done": frame(0x05, stream=1, payload=bytes(16)),
    "data_small": frame(0x40, SOM | EOM, stream=0, payload=b"hello", tag=9, msg_len=5),
    "data_first": frame(0x40, SOM, stream=2, payload=bytes(MAXP), msg_len=MAXP * 2 + 7),
    "data_last": frame(0x40, EOM | CSUM, stream=2, payload=bytes(7), seq=2, msg_len=MAXP * 2 + 7, offset=MAXP * 2),
    "data_split_hdr": frame(0x40, SOM | EOM | 0x10, stream=0, msg_len=100, length=100),
    "ack": frame(0x08, CREDIT, stream=1, seq=3, credit=2),
    "nak": frame(0x09, CREDIT, stream=1, seq=2, credit=2),
    "probe": frame(0x0A, stream=1, seq=5),
}
for n, f in frames.items():
    write("frame", n, f)

# engine: setup byte, then records [op][len16][bytes] (fuzz_engine.cpp).
def rec(op, data):
    return bytes([op]) + struct.pack("<H", len(data)) + data


def post(op, stream, tag, n):
    return bytes([op, stream, tag]) + struct.pack("<H", n)


write("engine", "one_message", bytes([0x0C]) + post(2, 0, 9, 100) +
      rec(1, frame(0x40, SOM | EOM, 0, b"x" * 50, tag=9, msg_len=50)))
write("engine", "two_frames", bytes([0x04]) + post(2, 1, 3, 9000) +
      rec(1, frame(0x40, SOM, 1, bytes(MAXP), tag=3, msg_len=MAXP + 10)) +
      rec(1, frame(0x40, EOM, 1, bytes(10), tag=3, msg_len=MAXP + 10, offset=MAXP)))
write("engine", "send_and_credit", bytes([0x18]) + post(3, 0, 1, 5000) + rec(0, frame(0x02, CREDIT, 0, credit=4)) +
      rec(0, frame(0x04, CREDIT, credit=8)) + rec(0, frame(0x03)))
# Retransmission negotiated (setup bit 0x20): a send acknowledged in part,
# resent on NAK, probed; a gap in what arrives, then the missing frame.
write("engine", "retx", bytes([0x28]) + post(3, 0, 1, 9000) + post(2, 1, 7, 200) +
      rec(0, frame(0x09, CREDIT, 0, seq=1)) + rec(0, frame(0x08, CREDIT, 0, seq=3, credit=3)) +
      rec(0, frame(0x40, SOM | EOM, 1, b"y" * 20, seq=1, tag=7, msg_len=20)) +
      rec(0, frame(0x0A, 0, 1, seq=2)) +
      rec(0, frame(0x40, SOM | EOM, 1, b"z" * 20, seq=0, tag=7, msg_len=20)))

# linkd_msg: HELLO (both sides), SYNC, an MMIO read.
def linkd(mtype, body=b"", payload=b"", seq=0, tag=0):
    body = body.ljust(32, b"\0")
    return struct.pack("<HHIQQQ", mtype, 0, len(payload), seq, 0, tag) + body + payload


write("linkd_msg", "hello", linkd(0x01, struct.pack("<IHHIIB3sIQ", 0x4B4C444F, 1, 0, 0, 1, 0, b"", 42, 0)))
write("linkd_msg", "sync", linkd(0x02))
write("linkd_msg", "mmio_read", linkd(0x40, struct.pack("<BBHIQQQ", 0, 4, 0, 0, 0x1000, 0, 0), tag=5))
write("linkd_msg", "dma_write", linkd(0x63, struct.pack("<QIIQQ", 0x10000, 8, 0, 0, 0), payload=bytes(8)))

# sim_msg: control datagrams, and ring states (own count, head, tail, ...).
def sim(mtype, payload=b"", arg=0):
    return struct.pack("<HHIQQQ", mtype, 0, len(payload), 0, 0, arg) + payload


write("sim_msg", "hello", sim(1, struct.pack("<IHBBIII I40s", 0x4D53444F, 4, 0, 0, 80000, 256, 99, 1, b"seed")))
write("sim_msg", "link", sim(4, arg=3))
write("sim_msg", "wake", sim(6))
write("sim_msg", "ring_two_frames", struct.pack("<QQQ", 10, 12, 10) + struct.pack("<I", 0x4D53444F) +
      struct.pack("<II", 64, 4096))

# usb4_ctl: a read request of 2 dwords with its CRC (big-endian dwords).
def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


body = struct.pack(">III", 0x00000000, 0x00000001, 0x00020010)
write("usb4_ctl", "read_request", body + struct.pack(">I", crc32c(body)))
write("usb4_ctl", "bad_crc", body + b"\0\0\0\0")

# login: a mode byte (ring count offered, highest HopID; fuzz_login.cpp), then
# odl_tb5 XDomain packets in CPU order from route 1, peer UUID 22.., to 11...
SVC = bytes([0x2F, 0x1A, 0x7C, 0x3E, 0x5B, 0x0D, 0x4E, 0x6A, 0x9C, 0x1B, 0x0D, 0x1E, 0x4F, 0x5A, 0x6B, 0x7C])


def xd(xtype, body=b"", sn=1, command_id=7):
    size = 68 + len(body)
    return struct.pack("<III", 0x80000000, 1, ((size - 12) // 4) | (sn << 27)) + SVC + b"\x22" * 16 + \
        b"\x11" * 16 + struct.pack("<II", xtype, command_id) + body


def xd_login(rings, ring_size=256):
    paths = [8 + 3 * i for i in range(rings)]
    ext = [0, 0]
    for i, p in enumerate(paths[1:]):
        ext[i // 2] |= p << (16 * (i % 2))
    features = 1 | 8 | (2 if rings > 1 else 0)
    return xd(1, struct.pack("<HHIIIIIII", 1, 3, features, ring_size, MAXB, paths[0], rings if rings > 1 else 0, *ext))


write("login", "login_one_ring", b"\x00" + xd_login(1))
write("login", "login_four_rings", b"\x03" + xd_login(4))
write("login", "login_resp", b"\x03" + xd(2, struct.pack("<IHHIIIIII", 0, 1, 3, 3, 512, MAXB, 4, 0, 0)))
write("login", "login_resp_1_0_refusal", b"\x01" + xd(2, struct.pack("<IHHIIIIII", 2, 1, 0, 1, 256, MAXB, 0, 0, 0)))
write("login", "port_open", b"\x00" + xd(4, struct.pack("<II", 1, 5)))
write("login", "logout", b"\x00" + xd(3))
write("login", "ping", b"\x00" + xd(6))
write("login", "status", b"\x00" + xd(5, struct.pack("<I", 0)))

# plugin_handle: the connector's clock, then a listener's handle
# (plugin/handle.h), fresh and after two connect tries.
def nccl_handle(tries=0, start=0):
    return struct.pack("<IHHQiIQ64s", 0x484C444F, 1, 0, 0x1234, 0, tries, start, b"hostA:4242:1")


write("plugin_handle", "fresh", struct.pack("<Q", 1000) + nccl_handle())
write("plugin_handle", "retry", struct.pack("<Q", 1000) + nccl_handle(2, 900))

# files_msg: a side byte (0 client, 1 server), the sequence number due (8),
# then one file-service message (header, payload, 16-byte tag).
def files(mtype, payload=b"", seq=1, flags=0):
    return struct.pack("<IHHIIQQ", 0x464C444F, 1, mtype, len(payload), flags, seq, 0) + payload + bytes(16)


def fpath(mode, path):
    return struct.pack("<II", mode, len(path)) + path


def fentry(kind, path, size=0):
    return struct.pack("<QQIHH", size, 0, 0o644, kind, len(path)) + path


files_msgs = {
    "hello": (0, files(2, bytes(16) + bytes(32) + struct.pack("<II", 1 << 20, 0))),
    "hello_ack": (1, files(3, bytes(32) + struct.pack("<II", 1 << 20, 0))),
    "pair": (0, files(1, bytes(96), seq=0)),
    "put": (0, files(4, struct.pack("<QQII", 10, 0, 0o644, 5) + b"a/b.c")),
    "ready": (1, files(5, struct.pack("<Q", 4096))),
    "data": (0, files(6, struct.pack("<Q", 0) + b"0123456789")),
    "end": (0, files(7, bytes(32))),
    "get": (0, files(9, fpath(0, b"dir/file"))),
    "info": (1, files(10, struct.pack("<QQII", 10, 0, 0o600, 0))),
    "list_root": (0, files(11, fpath(0, b""))),
    "entries": (1, files(12, struct.pack("<II", 2, 0) + fentry(2, b"d") + fentry(1, b"d/f", 3), flags=1)),
    "mkdir": (0, files(13, fpath(0o755, b"new/dir"))),
    "error": (1, files(14, struct.pack("<II", 2, 4) + b"full")),
    "bye": (0, files(15)),
    "remove": (0, files(16, fpath(0, b"old/file"))),
}
for name, (side, m) in files_msgs.items():
    write("files_msg", name, bytes([side]) + struct.pack("<Q", 1) + m)

# The YAML loaders: the tree's own files, and docs/hil.md's inventory.
def copy_yaml(src_dir, target):
    os.makedirs(os.path.join(seeds, target), exist_ok=True)
    for n in sorted(os.listdir(os.path.join(root, src_dir))):
        if n.endswith(".yaml"):
            shutil.copy(os.path.join(root, src_dir, n), os.path.join(seeds, target, n))


copy_yaml("scenarios", "scenario")
copy_yaml("tests/hil/scenarios", "scenario")
copy_yaml("model/calibration", "calibration")
with open(os.path.join(root, "docs", "hil.md")) as f:
    text = f.read()
start = text.index("inventory: 1")
write("inventory", "hil_md.yaml", text[start:text.index("```", start)].encode())
print("seeds written under", os.path.relpath(seeds, root), file=sys.stderr)
