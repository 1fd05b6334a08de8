#!/bin/sh
# The software device on a real interface, end to end: in a network namespace of its own, a veth pair
# dw0/dw1; wire_echo runs on mlx5_0 with its uplink on dw0 (scripts/drsim-run --wire netdev:dw0) and
# echoes UDP port 4791 back with the MACs swapped. wire_peer.py on dw1 plays the peer: two frames to
# port 4791 come back swapped, a frame to port 80 does not. Needs root (fails, not skips, without it).
set -eu
drsim_run="$1"
libdrsim="$PWD/$2"
echo_bin="$3"
peer="$PWD/$4"
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

ip netns exec "$ns" /usr/bin/python3 "$peer" netdev dw1
wait "$pid"
pid=""
grep -c 'echoed a 74-byte frame' "$out" | grep -qx 2 || { echo "wire_echo output:"; cat "$out"; exit 1; } >&2
echo PASS
