#!/bin/sh
# The software device with a pcap pair as its wire, end to end: wire_echo runs on mlx5_0 under
# scripts/drsim-run --wire pcap:IN,OUT. IN (written by wire_peer.py) holds two UDP frames to port 4791 and
# one to port 80, half a second after an opener no rule takes; OUT must hold the two echoes, MACs swapped
# and the rest byte for byte, and nothing else.
set -eu
drsim_run="$1"
libdrsim="$PWD/$2"
echo_bin="$3"
peer="$4"
in="$TEST_TMPDIR/in.pcap"
out="$TEST_TMPDIR/out.pcap"
/usr/bin/python3 "$peer" write-pcap "$in"
DRSIM_LIBRARY="$libdrsim" "$drsim_run" --wire "pcap:$in,$out" -- "$echo_bin" 2 >"$TEST_TMPDIR/echo.txt" 2>&1 ||
  { echo "wire_echo failed:"; cat "$TEST_TMPDIR/echo.txt"; exit 1; } >&2
/usr/bin/python3 "$peer" check-pcap "$out"
echo PASS
