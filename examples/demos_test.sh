#!/bin/sh
# Runs the demos and checks the outcomes they print (a changed outcome is a behaviour change to review).
set -eu
steering="$1"
gateway="$2"
c_steering="$3"
load_balancer="$4"
acl_firewall="$5"
megaflow_cache="$6"
ovs_ct_offload="$7"
drsim_run="$8"
libdrsim="$9"
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
"$gateway" --pcap="$TEST_TMPDIR/wire.pcap" >"$out"
expect "VNI 100 in           2 packets    236 bytes"
expect "VNI 200 in           6 packets    708 bytes"
expect "vport 1 rxq0  qp 0x100: 2 frame(s) [118B tag 0x100, 118B tag 0x100]"
expect "2 frame(s) sent out of the uplink written to $TEST_TMPDIR/wire.pcap"
test -s "$TEST_TMPDIR/wire.pcap"
if "$gateway" --bogus >/dev/null 2>&1; then
  echo "vxlan_gateway accepted an unknown argument" >&2
  exit 1
fi
# c_steering is a ConnectX program, linked against rdma-core's libraries: it runs on the software device.
DRSIM_LIBRARY="$PWD/$libdrsim" "$drsim_run" -- "$c_steering" >"$out"
expect "refused [dest_ibv_qp, tag]: Operation not supported"
expect "DNS qp 0x100: 42 bytes, flow tag 0xd15"
expect "RSS wq 0x102: 4 frame(s)"
expect "DNS counter: 3 packets, 126 bytes"
expect "11 of 13 frames sent delivered; the 2 SSH frames were dropped"
"$load_balancer" >"$out"  # exits 1 if a flow moved, a reply would land elsewhere or a stray got through
expect "0 flows changed worker between packets; 0 replies would land on another worker; 4 of 4 strays dropped"
"$acl_firewall" examples/testdata/acl_filters.txt >"$out"  # exits 1 on any difference from the linear scan
expect "61 filters -> 105 DR rules in 103 matchers"
expect "0 differ from a linear scan of the filters"
printf '@10.0.0.0/8\t1.1.1.1/32\t0 : 65535\t90 : 80\t0x06/0xFF\n' >"$TEST_TMPDIR/bad.txt"
if "$acl_firewall" "$TEST_TMPDIR/bad.txt" 2>"$out"; then
  echo "acl_firewall accepted a bad port range" >&2
  exit 1
fi
expect "bad.txt:1:34: bad port range '90 : 80'"
"$megaflow_cache" >"$out"  # exits 1 if any outcome differs from the policy
expect "0 outcomes differ from the policy"
"$ovs_ct_offload" --pcap="$TEST_TMPDIR/ct.pcap" >"$out"  # exits 1 if a verdict differs from a firewall's
expect "software committed 10.0.0.1:40000 <-> 10.0.0.2:80 after 3 handshake segments"
expect "established: 4 client and 2 server segments passed in the NIC; 2 invalid dropped"
expect "context after the FINs: TIME_WAIT"
expect "idle for 11.5 s: 2 rules aged and were evicted with the connection's CT context"
expect "13.0 s  client late ACK                 -> software"
expect "0 outcome(s) differ from a stateful firewall's"
# The conversation is a TCP conversation tshark decodes without a malformed frame. scripts/setup installs
# tshark: a machine without it fails here rather than skip the check.
command -v tshark >/dev/null 2>&1 || { echo "tshark is missing: run scripts/setup" >&2; exit 1; }
tshark -r "$TEST_TMPDIR/ct.pcap" -V >"$out" 2>/dev/null
if grep -qi "malformed" "$out"; then
  echo "tshark finds a malformed frame in ovs_ct_offload's pcap" >&2
  exit 1
fi
test "$(tshark -r "$TEST_TMPDIR/ct.pcap" -Y tcp 2>/dev/null | wc -l)" -eq 12
echo PASS
