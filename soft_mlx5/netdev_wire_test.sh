#!/bin/sh
# The software device on a real interface, end to end: in a network namespace of its own, a veth pair
# dw0/dw1; wire_echo runs on mlx5_0 with its uplink on dw0 (scripts/drsim-run --wire netdev:dw0) and
# echoes UDP port 4791 back with the MACs swapped. A raw socket on dw1 plays the peer: two frames to
# port 4791 come back swapped, a frame to port 80 does not. Needs root (fails, not skips, without it).
set -eu
drsim_run="$1"
libdrsim="$PWD/$2"
echo_bin="$3"
if [ "$(id -u)" -ne 0 ]; then
  echo "netdev_wire_test needs root (a network namespace and a veth pair)" >&2
  exit 1
fi
ns="drsim-wire-$$"
ip netns add "$ns"
pid=""
cleanup() {
  [ -z "$pid" ] || kill "$pid" 2>/dev/null || true
  ip netns del "$ns"
}
trap cleanup EXIT
ip -n "$ns" link add dw0 type veth peer name dw1
ip -n "$ns" link set dw0 up
ip -n "$ns" link set dw1 up
out="$TEST_TMPDIR/echo.txt"
DRSIM_LIBRARY="$libdrsim" ip netns exec "$ns" "$drsim_run" --wire netdev:dw0 -- "$echo_bin" 2 >"$out" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  grep -q ready "$out" && break
  sleep 0.1
done
grep -q ready "$out" || { echo "wire_echo did not start:"; cat "$out"; exit 1; } >&2

ip netns exec "$ns" /usr/bin/python3 - <<'PY'
import socket, struct, time

def frame(dport, marker):
    eth = bytes.fromhex('020000000002') + bytes.fromhex('020000000001') + b'\x08\x00'
    payload = marker.ljust(32, b'.')
    udp = struct.pack('!HHHH', 5000, dport, 8 + len(payload), 0) + payload
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                     bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    return eth + ip + udp

s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
s.bind(('dw1', 0))
s.settimeout(0.2)
sent = {b'echo-1': frame(4791, b'echo-1'), b'echo-2': frame(4791, b'echo-2'), b'miss': frame(80, b'miss')}
for f in sent.values():
    s.send(f)
got = {}
deadline = time.time() + 8
while time.time() < deadline and len(got) < 2:
    try:
        data, addr = s.recvfrom(4096)
    except socket.timeout:
        continue
    if addr[2] == socket.PACKET_OUTGOING:
        continue
    for marker, f in sent.items():
        if marker in data:
            got[marker] = data
for marker in (b'echo-1', b'echo-2'):
    assert marker in got, f'no echo of {marker}'
    f, back = sent[marker], got[marker]
    assert back[:6] == f[6:12] and back[6:12] == f[:6], 'MACs not swapped'
    assert back[12:] == f[12:], 'the rest of the frame changed'
time.sleep(0.3)
assert b'miss' not in got, 'a frame to port 80 came back'
print('peer: 2 echoes, MACs swapped, port 80 not echoed')
PY
wait "$pid"
pid=""
grep -c 'echoed a 74-byte frame' "$out" | grep -qx 2 || { echo "wire_echo output:"; cat "$out"; exit 1; } >&2
echo PASS
