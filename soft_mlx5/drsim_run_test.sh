#!/usr/bin/env bash
# scripts/drsim-run with a stand-in library: the sysfs and devlink views from inside (drsim_run_check.py),
# the environment, the exit status and PID, cleanup, the install layout, running without root, and bad
# options. Needs root for the mount namespace: it fails, rather than skips, without it.
set -euo pipefail
run="$(readlink -f "$1")"
# The stand-in is built here with the system compiler, not by Bazel: it is preloaded into python3, which
# has no sanitizer runtime, so it must stay uninstrumented whatever config the test runs under.
library="$TEST_TMPDIR/drsim_run_test_preload.so"
cc -shared -fPIC -o "$library" "$2"
check="$(readlink -f "$3")"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
[ "$(id -u)" -eq 0 ] || fail "drsim-run's views need root (a mount namespace): run this test as root"

# Temporary directories of drsim-run land here; each run must leave it empty.
export TMPDIR="$TEST_TMPDIR/runs"
mkdir -p "$TMPDIR"
expect_clean() {
  for _ in $(seq 100); do
    [ -n "$(ls -A "$TMPDIR")" ] || return 0
    sleep 0.1  # the watcher polls every 0.2 s
  done
  fail "drsim-run left $(ls -A "$TMPDIR") in $TMPDIR"
}

# What the real /sys and devlink show, for the checker to compare with.
OUTSIDE_PCI="$(ls /sys/bus/pci/devices)"
OUTSIDE_CLASSES="$(ls /sys/class)"
OUTSIDE_VERBS="$(ls /sys/class/infiniband_verbs 2>/dev/null || true)"
OUTSIDE_LO_ADDRESS="$(cat /sys/class/net/lo/address)"
REAL_DEVLINK_PATH="$(PATH="$PATH:/usr/sbin:/sbin" command -v devlink || true)"
REAL_DEVLINK_VERSION=""
[ -z "$REAL_DEVLINK_PATH" ] || REAL_DEVLINK_VERSION="$("$REAL_DEVLINK_PATH" -V)"
export OUTSIDE_PCI OUTSIDE_CLASSES OUTSIDE_VERBS OUTSIDE_LO_ADDRESS REAL_DEVLINK_PATH REAL_DEVLINK_VERSION

# The views, the environment and the exit status: the checker exits 7 when everything holds.
capture="$TEST_TMPDIR/in.pcap"
: >"$capture"
status=0
EXPECT_NAME=mlx5_7 EXPECT_VFS=2 EXPECT_WIRE="pcap:$capture,$TEST_TMPDIR/out.pcap" EXPECT_ENCAP=basic \
  EXPECT_LIBRARY="$library" EXPECT_OLD_PRELOAD=/nonexistent/earlier.so LD_PRELOAD=/nonexistent/earlier.so \
  DRSIM_LIBRARY="$library" "$run" --vfs 2 --wire "pcap:$capture,$TEST_TMPDIR/out.pcap" --eswitch-encap basic \
  --name mlx5_7 -- python3 "$check" views 7 \
  2>"$TEST_TMPDIR/stderr" || status=$?
# ld.so warns about the missing earlier.so; anything else on stderr is a failure of the views.
if grep -v "earlier.so" "$TEST_TMPDIR/stderr" >&2; then fail "unexpected output on stderr (above)"; fi
[ "$status" -eq 7 ] || fail "drsim-run exited $status, not the program's 7"
expect_clean

# Defaults (--equals forms too), and the real /sys is untouched afterwards. On a machine with a real
# mlx5_0, drsim-run refuses the default name instead.
default_name=mlx5_0
if [ -e /sys/class/infiniband/mlx5_0 ]; then
  status=0
  DRSIM_LIBRARY="$library" "$run" -- true 2>"$TEST_TMPDIR/stderr" || status=$?
  if [ "$status" -ne 2 ] || ! grep -q "a real RDMA device is named 'mlx5_0'" "$TEST_TMPDIR/stderr"; then
    fail "drsim-run took the name of the real mlx5_0"
  fi
  default_name=drsim_test_0
fi
had_infiniband="$(ls /sys/class/infiniband 2>/dev/null || true)"
status=0
EXPECT_NAME="$default_name" EXPECT_VFS=0 EXPECT_WIRE=loopback EXPECT_ENCAP=none EXPECT_LIBRARY="$library" \
  EXPECT_OLD_PRELOAD='' DRSIM_LIBRARY="$library" "$run" --vfs=0 --wire=loopback --eswitch-encap=none \
  "--name=$default_name" -- python3 "$check" views 0 ||
  status=$?
[ "$status" -eq 0 ] || fail "drsim-run with defaults exited $status"
[ "$(ls /sys/class/infiniband 2>/dev/null || true)" = "$had_infiniband" ] ||
  fail "the view leaked into /sys/class/infiniband"
[ "$(ls /sys/bus/pci/devices)" = "$OUTSIDE_PCI" ] || fail "the view leaked into /sys/bus/pci/devices"
expect_clean

# PROGRAM keeps drsim-run's PID, so a signal to drsim-run reaches it; the status says which signal.
# shellcheck disable=SC2016  # $$ and $0 are the program's
DRSIM_LIBRARY="$library" "$run" -- sh -c 'echo $$ >"$0"; exec sleep 120' "$TEST_TMPDIR/pid" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 300); do  # the views take a few seconds on a loaded machine
  [ ! -s "$TEST_TMPDIR/pid" ] || break
  sleep 0.1
done
[ "$(cat "$TEST_TMPDIR/pid")" = "$pid" ] || fail "PROGRAM runs as PID $(cat "$TEST_TMPDIR/pid"), not $pid"
kill -TERM "$pid"
status=0
wait "$pid" || status=$?
[ "$status" -eq 143 ] || fail "a TERMed program gave status $status, not 143"
expect_clean

# An install: PREFIX/bin/drsim-run finds PREFIX/lib/libdrsim.so. The prefix is world-readable so that
# an unprivileged user can run it below.
prefix="$(mktemp -d /tmp/drsim_run_test.XXXXXX)"
trap 'rm -rf "$prefix"' EXIT  # the sleeper above has ended
mkdir "$prefix/bin" "$prefix/lib"
cp "$run" "$prefix/bin/drsim-run"
cp "$library" "$prefix/lib/libdrsim.so"
cp "$check" "$prefix/check.py"
chmod -R a+rX "$prefix"
status=0
EXPECT_NAME="$default_name" EXPECT_VFS=1 EXPECT_WIRE=loopback EXPECT_ENCAP=none \
  EXPECT_LIBRARY="$prefix/lib/libdrsim.so" \
  EXPECT_OLD_PRELOAD='' env -u DRSIM_LIBRARY "$prefix/bin/drsim-run" --vfs 1 --name "$default_name" -- \
  python3 "$prefix/check.py" views 3 || status=$?
[ "$status" -eq 3 ] || fail "the installed drsim-run exited $status, not 3"
expect_clean

# Not root: a note on stderr, the environment all the same, no views.
if command -v setpriv >/dev/null; then
  status=0
  (cd / && EXPECT_NAME=mlx5_0 EXPECT_VFS=0 EXPECT_WIRE=loopback EXPECT_ENCAP=none \
    EXPECT_LIBRARY="$prefix/lib/libdrsim.so" \
    EXPECT_OLD_PRELOAD='' env -u DRSIM_LIBRARY setpriv --reuid=65534 --regid=65534 --clear-groups -- \
    "$prefix/bin/drsim-run" -- python3 "$prefix/check.py" no-views 4) 2>"$TEST_TMPDIR/stderr" || status=$?
  [ "$status" -eq 4 ] || { cat "$TEST_TMPDIR/stderr" >&2; fail "drsim-run as nobody exited $status, not 4"; }
  grep -q "drsim-run: not root: running without the sysfs and devlink views of mlx5_0" "$TEST_TMPDIR/stderr" ||
    fail "no 'not root' note: $(cat "$TEST_TMPDIR/stderr")"
else
  fail "setpriv (util-linux) is missing: cannot check drsim-run without root"
fi

# --help, and bad options: status 2 and a message naming the culprit.
"$run" --help | grep -q "^Usage: drsim-run \[--vfs N\]" || fail "--help prints no usage"
expect_refusal() {  # expect_refusal MESSAGE ARGS...
  local message="$1" status=0
  shift
  DRSIM_LIBRARY="$library" "$run" "$@" >/dev/null 2>"$TEST_TMPDIR/stderr" || status=$?
  [ "$status" -eq 2 ] || fail "drsim-run $* exited $status, not 2"
  grep -qF -- "$message" "$TEST_TMPDIR/stderr" || fail "drsim-run $*: said '$(cat "$TEST_TMPDIR/stderr")'"
}
expect_refusal "drsim-run: unknown option '--bogus'" --bogus -- true
expect_refusal "drsim-run: --vfs needs a value" --vfs
expect_refusal "drsim-run: --vfs 'two': a number of VFs" --vfs two -- true
expect_refusal "drsim-run: --wire 'foo': loopback, pcap:IN,OUT or netdev:IF" --wire foo -- true
expect_refusal "drsim-run: --wire 'pcap:x': loopback, pcap:IN,OUT or netdev:IF" --wire pcap:x -- true
expect_refusal "drsim-run: --wire 'pcap:/nonexistent.pcap,o': cannot read the capture '/nonexistent.pcap'" \
  --wire pcap:/nonexistent.pcap,o -- true
expect_refusal "drsim-run: --wire 'netdev:nosuch9': no network interface 'nosuch9'" --wire netdev:nosuch9 -- true
expect_refusal "drsim-run: --name 'a/b'" --name a/b -- true
expect_refusal "drsim-run: --eswitch-encap 'full': none or basic" --eswitch-encap full -- true
expect_refusal "drsim-run: --eswitch-encap needs a value" --eswitch-encap
expect_refusal "drsim-run: no program to run" --vfs 1
status=0
DRSIM_LIBRARY=/nonexistent.so "$run" -- true 2>"$TEST_TMPDIR/stderr" || status=$?
if [ "$status" -ne 2 ] || ! grep -qF "drsim-run: DRSIM_LIBRARY='/nonexistent.so': no such file" "$TEST_TMPDIR/stderr"; then
  fail "a missing DRSIM_LIBRARY: status $status, said '$(cat "$TEST_TMPDIR/stderr")'"
fi
expect_clean
echo PASS
