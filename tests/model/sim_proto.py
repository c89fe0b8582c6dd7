# SPDX-License-Identifier: MIT
"""The sim protocol as sim_backend_test.sh's hand-made programs speak it,
in one place for every snippet. The constants come from the one definition,
include/odl/wire/sim.h; HELLO's layout is checked against its size there."""
import mmap
import os
import re
import socket
import struct

_SIM_H = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../include/odl/wire/sim.h")).read()


def _define(name):
    return int(re.search(r"#define %s (0x[0-9a-fA-F]+|\d+)u" % name, _SIM_H).group(1), 0)


def _size(struct_name):
    expr = re.search(r"ODL_WIRE_SIZE\(struct %s, ([0-9 +]+)\)" % struct_name, _SIM_H).group(1)
    return sum(int(t) for t in expr.split("+"))


MAGIC, VERSION, SLOTS = _define("ODL_SIM_MAGIC"), _define("ODL_SIM_VERSION"), _define("ODL_SIM_SLOTS")
SLOT, DESC, HDR = _size("odl_sim_slot"), _size("odl_sim_desc"), _size("odl_sim_shm")
_HELLO_FMT = "<IHBBIII II68s"
assert struct.calcsize(_HELLO_FMT) == _size("odl_sim_hello"), "sim_proto.py's HELLO layout is not sim.h's"
SIZE = HDR + SLOTS * SLOT + SLOTS * DESC
HELLO, LINK, BYE, WAKE, PEER = 1, 4, 5, 6, 7


def hello(end=0xFF, pid=None, version=VERSION, rate=0, window=0, profile=b"", link=0, links=0, answer_ns=0):
    """A HELLO payload (struct odl_sim_hello)."""
    return struct.pack(_HELLO_FMT, MAGIC, version, end, link, rate, window,
                       os.getpid() if pid is None else pid, links, answer_ns, profile)


def msg(kind, payload=b"", seq=0, flags=0, length=None, arg=0):
    """A control datagram: header (struct odl_sim_hdr) and payload."""
    n = len(payload) if length is None else length
    return struct.pack("<HHIQQQ", kind, flags, n, seq, 0, arg) + payload


def rings(size=SIZE, name="rings"):
    """A program's ring memory: (memfd, its mapping) with the header set."""
    fd = os.memfd_create(name)
    os.ftruncate(fd, size)
    m = mmap.mmap(fd, size)
    struct.pack_into("<III", m, 0, MAGIC, VERSION, SLOTS)
    return fd, m


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s


def join(path, name, reserved=0):
    """A hand-made program: its rings (@reserved in the header's reserved
    word, to tell programs apart), connected to the server at @path, HELLO
    sent with them. Returns (socket, its ring memory)."""
    fd, m = rings(name=name)
    struct.pack_into("<I", m, 12, reserved)
    s = connect(path)
    socket.send_fds(s, [msg(HELLO, hello())], [fd])
    return s, m


def fake_server(path):
    """A server that takes one program at @path and gives it end A of a
    link that is up, with a peer's (our) rings: (connection, the program's
    ring memory, ours). The next message it sends has seq 3."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.bind(path)
    s.listen(1)
    c, _ = s.accept()
    _, fds, _, _ = socket.recv_fds(c, 256, 1)
    assert len(fds) == 1, "HELLO without ring memory"
    theirs = mmap.mmap(fds[0], SIZE)
    ours_fd, ours = rings(name="fake-peer")
    c.send(msg(HELLO, hello(end=0, rate=10000, window=256, profile=b"fake", links=1)))
    socket.send_fds(c, [msg(PEER, seq=1, arg=7)], [ours_fd])
    c.send(msg(LINK, seq=2, arg=3))
    return c, theirs, ours
