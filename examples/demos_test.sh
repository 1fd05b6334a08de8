#!/bin/sh
# Runs both demos and checks the outcomes they print (a changed outcome is a behaviour change to review).
set -eu
steering="$1"
eswitch="$2"
c_steering="$3"
out="$TEST_TMPDIR/out.txt"
expect() {
  if ! grep -qF -- "$1" "$out"; then
    echo "missing from the demo's output: $1" >&2
    cat "$out" >&2
    exit 1
  fi
}
"$steering" >"$out"
expect "-> queue web (qp 0x100), flow tag 0x50"
expect "-> dropped"
expect "NIC: 9 frames, 5 queued, 1 dropped by rules, 3 by the NIC_RX default"
"$eswitch" --pcap="$TEST_TMPDIR/wire.pcap" >"$out"
expect "VNI 100 in           2 packets    236 bytes"
expect "VNI 200 in           6 packets    708 bytes"
expect "vport 1 rxq0  qp 0x100: 2 frame(s) [118B tag 0x100, 118B tag 0x100]"
expect "2 frame(s) sent out of the uplink written to $TEST_TMPDIR/wire.pcap"
test -s "$TEST_TMPDIR/wire.pcap"
if "$eswitch" --bogus >/dev/null 2>&1; then
  echo "eswitch_demo accepted an unknown argument" >&2
  exit 1
fi
"$c_steering" >"$out"
expect "refused [dest_ibv_qp, tag]: Operation not supported"
expect "DNS qp 0x100: 42 bytes, flow tag 0xd15"
expect "DNS counter: 3 packets, 126 bytes"
expect "11 of 13 frames delivered; the 2 SSH frames were dropped"
echo PASS
