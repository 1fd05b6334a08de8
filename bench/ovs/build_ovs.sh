#!/usr/bin/env bash
# Builds Open vSwitch's userspace library, libopenvswitch.a, for bench/ovs_classifier_bench: the peer that
# runs OVS's own flow classifier (lib/classifier.c) on acl_bench's ClassBench sets and traces. Debian 12 has
# no libopenvswitch-dev, so the library is built from the source Debian ships in openvswitch-source (OVS
# 3.1.0, with a generated ./configure), outside the repository:
#
#   ${DRSIM_OVS_DIR:-/var/tmp/drsim-ovs}/
#     src/                    the OVS source tree, configured and built in place: include/ and lib/ hold the
#                             hand-written and the generated headers (include/odp-netlink.h, ...), config.h
#                             sits at the top
#     lib/libopenvswitch.a    the static library
#     BUILT                   what was built and how; present only once the build succeeded
#
# WORKSPACE binds /var/tmp/drsim-ovs as @ovs (third_party/ovs.BUILD): a build elsewhere needs a symlink
# there. OVS is built the way it builds itself for production: autoconf's default CFLAGS (-g -O2) with
# OVS's own flags, plus --enable-ndebug, OVS's switch for "max performance" (no assertions,
# -fomit-frame-pointer). Only features the classifier does not touch are left out (OpenSSL, libcap-ng,
# AF_XDP, unbound), which also fixes the libraries a program linking libopenvswitch.a needs to the ones
# third_party/ovs.BUILD names.
#
# Idempotent: does nothing when BUILT says the same source and flags were built. Otherwise installs what is
# missing (as root, or through sudo), starts from a fresh copy of the source and builds. Takes a few minutes.
set -euo pipefail

dir="$(realpath -m "${DRSIM_OVS_DIR:-/var/tmp/drsim-ovs}")"
tarball=/usr/src/openvswitch/openvswitch.tar.gz
packages=(openvswitch-source gcc make libc6-dev python3)
cflags="-g -O2"
configure_flags=(
  --enable-ndebug
  --disable-ssl
  --disable-libcapng
  --disable-afxdp
  ac_cv_lib_unbound_ub_ctx_create=no  # configure has no --disable-unbound; DNS names are not our concern
)
# The libraries third_party/ovs.BUILD links; configure must not ask for any other.
allowed_libs=(-latomic -lm -lpthread -lrt)

say() { echo "build_ovs.sh: $*" >&2; }

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo=(sudo)
  else
    say "error: need root or sudo to install: ${missing[*]}"
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  if ! "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
    "${sudo[@]}" apt-get update
    "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
  fi
fi

version="$(dpkg-query -W -f='${Version}' openvswitch-source)"
recipe="openvswitch-source ${version}; CFLAGS=${cflags}; configure ${configure_flags[*]}"
if [ -f "${dir}/BUILT" ] && [ "$(cat "${dir}/BUILT")" = "${recipe}" ] && [ -f "${dir}/lib/libopenvswitch.a" ]; then
  say "already built in ${dir} (${recipe})"
  exit 0
fi

say "building OVS (${recipe}) in ${dir}"
mkdir -p "${dir}"
rm -rf "${dir:?}/BUILT" "${dir:?}/src" "${dir:?}/lib"
tar --no-same-owner -xzf "${tarball}" -C "${dir}"
mv "${dir}/openvswitch" "${dir}/src"
cd "${dir}/src"

# Debian's python3 runs OVS's code generators (the IDL compiler), not whatever python3 is first on PATH.
python3="$(command -v /usr/bin/python3 || command -v python3)"
./configure --quiet CFLAGS="${cflags}" PYTHON3="${python3}" "${configure_flags[@]}"

libs="$(sed -n 's/^LIBS = //p' Makefile)"
for lib in ${libs}; do
  if [[ " ${allowed_libs[*]} " != *" ${lib} "* ]]; then
    say "error: configure wants ${lib} (LIBS = ${libs}); third_party/ovs.BUILD links only ${allowed_libs[*]}"
    exit 1
  fi
done

# The generated sources (BUILT_SOURCES: include/odp-netlink.h, the IDLs, ...) come first: automake makes
# them only for `make all`, and lib/*.c include them without a dependency make could follow.
jobs="$(nproc)"
# shellcheck disable=SC2016  # $(BUILT_SOURCES) is make's
built_sources="$(make --no-print-directory -s --eval='print-built-sources: ; @echo $(BUILT_SOURCES)' print-built-sources)"
# shellcheck disable=SC2086  # a list of make targets
make -s -j"${jobs}" V=0 ${built_sources}
make -s -j"${jobs}" V=0 lib/libopenvswitch.la

# libtool leaves the AVX512 code (lib/libopenvswitchavx512.la, a convenience library only the shared
# library absorbs) out of the static archive, and dpif-netdev and odp-execute refer to it: it goes in.
mkdir -p "${dir}/lib"
cp lib/.libs/libopenvswitch.a "${dir}/lib/libopenvswitch.a"
if [ -f lib/.libs/libopenvswitchavx512.a ]; then
  objects="$(mktemp -d)"
  (cd "${objects}" && ar x "${dir}/src/lib/.libs/libopenvswitchavx512.a")
  ar rs "${dir}/lib/libopenvswitch.a" "${objects}"/*.o
  rm -rf "${objects}"
fi
echo "${recipe}" >"${dir}/BUILT"
say "done: ${dir}/lib/libopenvswitch.a"
if [ "${dir}" != "$(realpath -m /var/tmp/drsim-ovs)" ]; then
  say "WORKSPACE binds /var/tmp/drsim-ovs as @ovs: ln -sfn ${dir} /var/tmp/drsim-ovs"
fi
