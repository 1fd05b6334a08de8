"""Runs under scripts/drsim-run (from drsim_run_test.sh) and checks what the program sees.

Usage: drsim_run_check.py views|no-views EXIT_STATUS

Expectations come from the environment the test sets before drsim-run: EXPECT_NAME, EXPECT_VFS,
EXPECT_WIRE, EXPECT_ENCAP (the eSwitch encap mode), EXPECT_LIBRARY, EXPECT_OLD_PRELOAD (LD_PRELOAD before drsim-run, may be empty) and, for
"views", OUTSIDE_PCI, OUTSIDE_CLASSES, OUTSIDE_VERBS (what the real /sys held, space separated),
OUTSIDE_LO_ADDRESS and REAL_DEVLINK_VERSION (`devlink -V` outside, or empty when devlink is missing).
Prints each failure and exits 1 on any; exits EXIT_STATUS when everything holds.
"""

import glob
import json
import os
import re
import subprocess
import sys

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def read(path):
    with open(path) as f:
        return f.read().rstrip("\n")


def check_environment():
    env = os.environ
    check(env.get("DRSIM_DEVICE") == env["EXPECT_NAME"], f"DRSIM_DEVICE={env.get('DRSIM_DEVICE')!r}")
    check(env.get("DRSIM_VFS") == env["EXPECT_VFS"], f"DRSIM_VFS={env.get('DRSIM_VFS')!r}")
    check(env.get("DRSIM_WIRE") == env["EXPECT_WIRE"], f"DRSIM_WIRE={env.get('DRSIM_WIRE')!r}")
    check(env.get("DRSIM_ESWITCH_ENCAP") == env["EXPECT_ENCAP"],
          f"DRSIM_ESWITCH_ENCAP={env.get('DRSIM_ESWITCH_ENCAP')!r}")
    check(re.fullmatch(r"[0-9a-f]{4}:[0-9a-f]{2}:[01][0-9a-f]\.[0-7]", env.get("DRSIM_PCI_ADDRESS", "")),
          f"DRSIM_PCI_ADDRESS={env.get('DRSIM_PCI_ADDRESS')!r}")
    preload = env.get("LD_PRELOAD", "").split(":")
    expected = [env["EXPECT_LIBRARY"]] + ([env["EXPECT_OLD_PRELOAD"]] if env["EXPECT_OLD_PRELOAD"] else [])
    check(preload == expected, f"LD_PRELOAD={env.get('LD_PRELOAD')!r}, expected {':'.join(expected)!r}")
    with open("/proc/self/maps") as maps:
        mapped = any(line.rstrip("\n").endswith(" " + env["EXPECT_LIBRARY"]) for line in maps)
    check(mapped, f"{env['EXPECT_LIBRARY']} is not mapped in the program")


def check_views():
    env = os.environ
    name, addr, encap = env["EXPECT_NAME"], env["DRSIM_PCI_ADDRESS"], env["EXPECT_ENCAP"]
    check(addr not in env["OUTSIDE_PCI"].split(), f"{addr} is a real device's address")

    # rdma-core's tests/utils.py eswitch_mode_check and encap_mode_check, step by step.
    hits = glob.glob(f"/sys/bus/pci/devices/*/infiniband/{name}")
    check(len(hits) == 1, f"glob found {hits}")
    if hits:
        check(hits[0].split("/")[5] == addr, f"path component [5] of {hits[0]} is not {addr}")
    out = subprocess.run(["devlink", "dev", "eswitch", "show", f"pci/{addr}"], capture_output=True, text=True)
    check(out.returncode == 0 and out.stdout == f"pci/{addr}: mode switchdev inline-mode none encap-mode {encap}\n",
          f"devlink eswitch show: {out}")
    out = subprocess.run(["devlink", "-j", "dev", "eswitch", "show", f"pci/{addr}"], capture_output=True, text=True)
    try:
        answer = json.loads(out.stdout)
    except ValueError:
        answer = None
    check(answer == {"dev": {f"pci/{addr}": {"mode": "switchdev", "inline-mode": "none", "encap-mode": encap}}},
          f"devlink -j eswitch show: {out}")
    out = subprocess.run(["devlink", "-j", "-p", "dev", "eswitch", "show", f"pci/{addr}"], capture_output=True,
                         text=True)
    check(out.returncode == 0 and json.loads(out.stdout) == answer and "\n    " in out.stdout,
          f"devlink -jp eswitch show: {out}")
    out = subprocess.run(["devlink", "dev", "eswitch", "set", f"pci/{addr}", "mode", "legacy"], capture_output=True,
                         text=True)
    check(out.returncode == 1 and f"pci/{addr} is drsim's software device" in out.stderr,
          f"devlink eswitch set: {out}")
    version = env["REAL_DEVLINK_VERSION"]
    if version:
        # Absolute paths reach the wrapper too, and other commands reach the real devlink.
        real = env["REAL_DEVLINK_PATH"]
        out = subprocess.run([real, "dev", "eswitch", "show", f"pci/{addr}"], capture_output=True, text=True)
        check("mode switchdev" in out.stdout, f"{real} dev eswitch show: {out}")
        out = subprocess.run([real, "-V"], capture_output=True, text=True)
        check(out.returncode == 0 and out.stdout.strip() == version, f"{real} -V: {out}, expected {version!r}")

    # The device's sysfs files.
    dev = f"/sys/bus/pci/devices/{addr}"
    check(read(f"{dev}/vendor") == "0x15b3", "vendor")
    check(read(f"{dev}/device") == "0x101d", "device")
    check(read(f"{dev}/sriov_numvfs") == env["EXPECT_VFS"], "sriov_numvfs")
    check(re.fullmatch(r"-?\d+", read(f"{dev}/numa_node")) is not None, "numa_node")
    with open(f"{dev}/config", "rb") as f:
        config = f.read()
    check(len(config) == 64 and config[:4] == b"\xb3\x15\x1d\x10" and config[11] == 2, f"config {config[:12]!r}")
    ib = f"/sys/class/infiniband/{name}"
    check(os.path.realpath(ib) == os.path.realpath(f"{dev}/infiniband/{name}"), f"{ib} -> {os.path.realpath(ib)}")
    check(os.path.realpath(f"{ib}/device") == os.path.realpath(dev), f"{ib}/device -> {os.path.realpath(ib + '/device')}")
    check(read(f"{ib}/node_type") == "1: CA", "node_type")
    check(re.fullmatch(r"[0-9a-f]{4}(:[0-9a-f]{4}){3}", read(f"{ib}/node_guid")) is not None, "node_guid")
    check(read(f"{ib}/ports/1/state") == "4: ACTIVE", "ports/1/state")
    check(read(f"{ib}/ports/1/link_layer") == "Ethernet", "ports/1/link_layer")
    guid = read(f"{ib}/node_guid").replace(":", "")
    gid = read(f"{ib}/ports/1/gids/0").replace(":", "")
    # The link-local GID is fe80::/64 and the node GUID with the universal/local bit flipped.
    check(gid == "fe80000000000000" + format(int(guid[:2], 16) ^ 2, "02x") + guid[2:], f"gids/0 {gid} vs {guid}")

    # No uverbs entry: libibverbs' own scan must not see the device.
    verbs = sorted(os.listdir("/sys/class/infiniband_verbs")) if os.path.isdir("/sys/class/infiniband_verbs") else []
    check(verbs == sorted(env["OUTSIDE_VERBS"].split()), f"/sys/class/infiniband_verbs holds {verbs}")

    # The real entries stay visible, and resolve where they did.
    inside_pci = set(os.listdir("/sys/bus/pci/devices"))
    for pci in env["OUTSIDE_PCI"].split():
        check(pci in inside_pci, f"real PCI device {pci} is hidden")
        check(os.path.realpath(f"/sys/bus/pci/devices/{pci}").startswith("/sys/devices/"),
              f"{pci} resolves to {os.path.realpath('/sys/bus/pci/devices/' + pci)}")
        check(os.path.exists(f"/sys/bus/pci/devices/{pci}/vendor"), f"{pci}/vendor is unreadable")
    check(inside_pci == set(env["OUTSIDE_PCI"].split()) | {addr}, f"extra PCI entries: {inside_pci}")
    inside_classes = set(os.listdir("/sys/class"))
    for cls in env["OUTSIDE_CLASSES"].split():
        check(cls in inside_classes, f"/sys/class/{cls} is hidden")
    check(read("/sys/class/net/lo/address") == env["OUTSIDE_LO_ADDRESS"], "/sys/class/net/lo/address")
    check(os.path.realpath("/sys/class/net/lo") == "/sys/devices/virtual/net/lo",
          f"/sys/class/net/lo -> {os.path.realpath('/sys/class/net/lo')}")


def check_no_views():
    name = os.environ["EXPECT_NAME"]
    check(not glob.glob(f"/sys/bus/pci/devices/*/infiniband/{name}"), "a sysfs view without root")


def main():
    mode, status = sys.argv[1], int(sys.argv[2])
    check_environment()
    if mode == "views":
        check_views()
    else:
        check_no_views()
    sys.exit(1 if failures else status)


if __name__ == "__main__":
    main()
