"""The far end of the wire for netdev_wire_test.sh and pcap_wire_test.sh.

What: both tests run wire_echo, which echoes UDP frames to port 4791 with the MACs swapped and lets
others pass. This script builds the frames they send and checks what comes back.

Usage:
  wire_peer.py netdev IFACE      send the frames on IFACE (a raw socket) and check the echoes
  wire_peer.py write-pcap PATH   write the frames as a capture to play into the device
  wire_peer.py check-pcap PATH   check the capture the device wrote

How: the frames are two UDP frames to port 4791 and one to port 80 between them, each 74 bytes and
carrying a marker in its payload. An echo must be its frame with the MACs swapped and the rest byte for
byte; the frame to port 80 must not come back. Exits non-zero (an assertion) on any failure.
"""

import socket
import struct
import sys
import time

ECHO_PORT = 4791
# (destination port, payload marker), in the order sent.
FRAMES = [(ECHO_PORT, b"echo-1"), (80, b"miss"), (ECHO_PORT, b"echo-2")]


def frame(dport, marker):
    """An IPv4 UDP frame 10.0.0.1:5000 -> 10.0.0.2:dport, 02:..:01 -> 02:..:02, marker in 32 bytes."""
    eth = bytes.fromhex("020000000002") + bytes.fromhex("020000000001") + b"\x08\x00"
    payload = marker.ljust(32, b".")
    udp = struct.pack("!HHHH", 5000, dport, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return eth + ip + udp


def check_echo(sent, back):
    assert back[:6] == sent[6:12] and back[6:12] == sent[:6], "MACs not swapped"
    assert back[12:] == sent[12:], "the rest of the frame changed"


def netdev(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((iface, 0))
    s.settimeout(0.2)
    sent = {marker: frame(port, marker) for port, marker in FRAMES}
    for f in sent.values():
        s.send(f)
    echo_markers = [marker for port, marker in FRAMES if port == ECHO_PORT]
    got = {}
    # Up to 8 s for the echoes, then 0.3 s more for a frame that must not come back.
    end = time.time() + 8
    settling = False
    while time.time() < end:
        try:
            data, addr = s.recvfrom(4096)
        except socket.timeout:
            data = None
        if data is not None and addr[2] != socket.PACKET_OUTGOING:
            for marker in sent:
                if marker in data:
                    got[marker] = data
        if not settling and all(m in got for m in echo_markers):
            settling, end = True, time.time() + 0.3
    for port, marker in FRAMES:
        if port == ECHO_PORT:
            assert marker in got, f"no echo of {marker}"
            check_echo(sent[marker], got[marker])
        else:
            assert marker not in got, f"a frame to port {port} came back"
    print("peer: 2 echoes, MACs swapped, port 80 not echoed")


def write_pcap(path):
    """The capture plays at its recorded pace from the program's first poll: it opens with a frame no
    rule takes, and the test's frames come half a second later, once the program has installed its rule."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        opener = frame(9, b"before the rule")
        f.write(struct.pack("<IIII", 1000, 0, len(opener), len(opener)) + opener)
        for i, (port, marker) in enumerate(FRAMES):
            data = frame(port, marker)
            f.write(struct.pack("<IIII", 1000, 500000 + 1000 * i, len(data), len(data)) + data)


def read_pcap(path):
    data = open(path, "rb").read()
    magic = struct.unpack("<I", data[:4])[0]
    assert magic in (0xa1b2c3d4, 0xa1b23c4d), f"{path}: not a pcap file"
    off, out = 24, []
    while off < len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[off:off + 16])
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out


def check_pcap(path):
    back = read_pcap(path)
    assert len(back) == 2, f"{len(back)} frames left by the wire, expected the 2 echoes"
    echoes = [frame(port, marker) for port, marker in FRAMES if port == ECHO_PORT]
    for f, b in zip(echoes, back):
        check_echo(f, b)
    print("out.pcap: the 2 echoes, MACs swapped, byte for byte; the other frames stayed in")


if __name__ == "__main__":
    commands = {"netdev": netdev, "write-pcap": write_pcap, "check-pcap": check_pcap}
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    commands[sys.argv[1]](sys.argv[2])
