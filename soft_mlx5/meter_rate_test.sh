#!/bin/sh
# Meters on the wall clock, end to end: meter_rate runs on mlx5_0 under scripts/drsim-run (loopback wire),
# sends UDP frames through an ASO flow meter well above and well below its committed rate, and checks the
# green frames against the token bucket for the time it really took (see meter_rate.c).
set -eu
drsim_run="$1"
libdrsim="$PWD/$2"
meter_bin="$3"
status=0
DRSIM_LIBRARY="$libdrsim" "$drsim_run" -- "$meter_bin" >"$TEST_TMPDIR/meter.txt" 2>&1 || status=$?
cat "$TEST_TMPDIR/meter.txt"
[ "$status" -eq 0 ] || { echo "FAIL: meter_rate exited $status" >&2; exit 1; }
echo PASS
