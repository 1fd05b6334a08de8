#!/bin/sh
# The software device with a pcap pair as its wire, end to end: wire_echo runs on mlx5_0 under
# scripts/drsim-run --wire pcap:IN,OUT. IN holds two UDP frames to port 4791 and one to port 80; OUT must
# hold the two echoes, MACs swapped and the rest byte for byte, and nothing else. The capture plays at its
# recorded pace from the program's first poll, so it opens with a frame no rule takes, and the test's
# frames come half a second later, once the program has installed its rule.
set -eu
drsim_run="$1"
libdrsim="$PWD/$2"
echo_bin="$3"
in="$TEST_TMPDIR/in.pcap"
out="$TEST_TMPDIR/out.pcap"
/usr/bin/python3 - "$in" <<'PY'
import struct, sys

def frame(dport, marker):
    eth = bytes.fromhex('020000000002') + bytes.fromhex('020000000001') + b'\x08\x00'
    payload = marker.ljust(32, b'.')
    udp = struct.pack('!HHHH', 5000, dport, 8 + len(payload), 0) + payload
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return eth + ip + udp

with open(sys.argv[1], 'wb') as f:
    f.write(struct.pack('<IHHiIII', 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    opener = frame(9, b'before the rule')
    f.write(struct.pack('<IIII', 1000, 0, len(opener), len(opener)) + opener)
    for i, (port, marker) in enumerate([(4791, b'echo-1'), (80, b'miss'), (4791, b'echo-2')]):
        data = frame(port, marker)
        f.write(struct.pack('<IIII', 1000, 500000 + 1000 * i, len(data), len(data)) + data)
PY
DRSIM_LIBRARY="$libdrsim" "$drsim_run" --wire "pcap:$in,$out" -- "$echo_bin" 2 >"$TEST_TMPDIR/echo.txt" 2>&1 ||
  { echo "wire_echo failed:"; cat "$TEST_TMPDIR/echo.txt"; exit 1; } >&2
/usr/bin/python3 - "$in" "$out" <<'PY'
import struct, sys

def frames(path):
    data = open(path, 'rb').read()
    magic = struct.unpack('<I', data[:4])[0]
    assert magic in (0xa1b2c3d4, 0xa1b23c4d), f'{path}: not a pcap file'
    off, out = 24, []
    while off < len(data):
        _, _, incl, _ = struct.unpack('<IIII', data[off:off + 16])
        out.append(data[off + 16:off + 16 + incl])
        off += 16 + incl
    return out

sent, back = frames(sys.argv[1])[1:], frames(sys.argv[2])
assert len(back) == 2, f'{len(back)} frames left by the wire, expected the 2 echoes'
for f, b in zip([sent[0], sent[2]], back):
    assert b[:6] == f[6:12] and b[6:12] == f[:6], 'MACs not swapped'
    assert b[12:] == f[12:], 'the rest of the frame changed'
print('out.pcap: the 2 echoes, MACs swapped, byte for byte; the other frames stayed in')
PY
echo PASS
