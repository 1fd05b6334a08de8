#!/usr/bin/env bash
# scripts/install into a fresh prefix (from the Bazel-built files), then programs built outside Bazel
# against the install, found with pkg-config:
#   - examples/external_build/raw_steering.c, a ConnectX program (libibverbs and mlx5dv_dr_* only),
#     compiled with cc, run under the installed drsim-run and on its own (it links libdrsim.so);
#   - a program including <drsim/drsim.h>, linked with -ldrsim and with -ldrsim_mlx5dv;
#   - the CMake project examples/external_build, built and its ctest run.
# Also: a second install changes nothing; DESTDIR stages under another root. Every missing tool is a
# failure, never a skip.
set -euo pipefail
tree="$PWD"  # the runfiles: the source files and bazel-bin's, side by side
work="$TEST_TMPDIR/install_test"
rm -rf "$work"
mkdir -p "$work"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
expect() {  # expect FILE TEXT: FILE has a line containing TEXT
  grep -qF -- "$2" "$1" || {
    echo "--- $1" >&2
    cat "$1" >&2
    fail "missing from $1: $2"
  }
}
for tool in cc pkg-config cmake make readelf nm; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/setup installs it)"
done

# The compiler: the system's, or clang-14 with the sanitizer the Bazel-built files carry
# (--config=asan/ubsan/tsan), whose runtime a preloaded or linked libdrsim.so needs in the program.
cc=(cc)
undefined="$(nm -D --undefined-only soft_mlx5/libdrsim.so)"
sanitizer=""
case "$undefined" in
  *__asan_init*) sanitizer=address ;;
  *__tsan_init*) sanitizer=thread ;;
  *__ubsan_handle*) sanitizer=undefined ;;
esac
if [ -n "$sanitizer" ]; then
  command -v clang-14 >/dev/null || fail "libdrsim.so is built with -fsanitize=$sanitizer and clang-14 is missing"
  cc=(clang-14 "-fsanitize=$sanitizer")
  [ "$sanitizer" != undefined ] || cc+=(-fsanitize-link-c++-runtime)
  echo "libdrsim.so carries -fsanitize=$sanitizer: programs are built with ${cc[*]}"
fi

# Install, from nothing.
prefix="$work/prefix"
scripts/install --from "$tree" --prefix "$prefix" >"$work/install.txt"
cat "$work/install.txt"
for f in lib/libdrsim.so lib/libdrsim_mlx5dv.so bin/drctl bin/drsim-run include/drsim/drsim.h \
  lib/pkgconfig/drsim.pc; do
  [ -f "$prefix/$f" ] || fail "scripts/install did not install $f"
  expect "$work/install.txt" "installed $prefix/$f"
done
cmp -s capi/drsim.h "$prefix/include/drsim/drsim.h" || fail "include/drsim/drsim.h differs from capi/drsim.h"
cmp -s soft_mlx5/libdrsim.so "$prefix/lib/libdrsim.so" || fail "lib/libdrsim.so differs from the built one"
"$prefix/bin/drctl" --help >"$work/drctl.txt" 2>&1 || fail "bin/drctl --help failed: $(cat "$work/drctl.txt")"
expect "$work/drctl.txt" "validate"
[ -x "$prefix/bin/drsim-run" ] || fail "bin/drsim-run is not executable"
launcher=("$prefix/bin/drsim-run" --)

# Idempotent: a second install lists the same files, and they are the same.
find "$prefix" -type f -exec md5sum {} + | sort >"$work/first.md5"
scripts/install --from "$tree" --prefix "$prefix" >"$work/again.txt"
find "$prefix" -type f -exec md5sum {} + | sort >"$work/second.md5"
cmp -s "$work/first.md5" "$work/second.md5" || fail "a second install changed the prefix"
diff "$work/install.txt" "$work/again.txt" || fail "a second install said something else"

# DESTDIR: files staged under it, drsim.pc naming the final prefix.
DESTDIR="$work/stage" scripts/install --from "$tree" --prefix /opt/drsim >"$work/stage.txt"
[ -f "$work/stage/opt/drsim/lib/libdrsim.so" ] || fail "DESTDIR: no $work/stage/opt/drsim/lib/libdrsim.so"
expect "$work/stage/opt/drsim/lib/pkgconfig/drsim.pc" "prefix=/opt/drsim"
if scripts/install --from "$tree" --prefix relative/dir >"$work/bad.txt" 2>&1; then
  fail "scripts/install took a relative --prefix"
fi
expect "$work/bad.txt" "--prefix 'relative/dir': an absolute path"

# pkg-config.
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
version="$(pkg-config --modversion drsim)"
[ "$version" = "$(cat VERSION)" ] || fail "pkg-config --modversion drsim: '$version', VERSION says $(cat VERSION)"
[ "$(pkg-config --variable=drsim_run drsim)" = "$prefix/bin/drsim-run" ] ||
  fail "drsim_run variable: $(pkg-config --variable=drsim_run drsim)"
read -r -a drsim_flags <<<"$(pkg-config --cflags --libs drsim)"
echo "pkg-config --cflags --libs drsim: ${drsim_flags[*]}"

# The ConnectX program, compiled with cc.
cd "$work"
"${cc[@]}" -Wall -Werror "$tree/examples/external_build/raw_steering.c" -o raw_steering "${drsim_flags[@]}" \
  -libverbs -lmlx5
readelf -d raw_steering | grep -q 'NEEDED.*\[libdrsim.so\]' || fail "raw_steering does not link libdrsim.so"
check_raw_steering() {  # check_raw_steering OUTPUT
  expect "$1" "opened mlx5_0: vendor 0x2c9, part 0x101d"
  expect "$1" ": 2 of 2 sends completed"
  expect "$1" ": received 64 bytes, UDP port 4791, flow tag 0x41, the bytes sent"
  expect "$1" "1 of 2 frames steered to the server qp (expected 1: port 4791 only)"
  expect "$1" "raw_steering: OK"
}
status=0
"${launcher[@]}" ./raw_steering >launched.txt 2>&1 || status=$?
[ "$status" = 0 ] || {
  cat launched.txt >&2
  fail "raw_steering under ${launcher[*]} exited $status"
}
check_raw_steering launched.txt
echo "raw_steering under ${launcher[*]}: OK"
./raw_steering >linked.txt 2>&1 || status=$?
[ "$status" = 0 ] || {
  cat linked.txt >&2
  fail "raw_steering on its own (libdrsim.so linked) exited $status"
}
check_raw_steering linked.txt
echo "raw_steering on its own (libdrsim.so linked): OK"

# <drsim/drsim.h>: a software NIC of the C API, and an error naming its culprit; with either library.
cat >drsim_header.c <<'EOF'
#include <drsim/drsim.h>
#include <stdio.h>
#include <string.h>

int main(void) {
  struct ibv_context *ctx = drsim_open(2);
  if (ctx == NULL) return 1;
  struct ibv_context *vf = drsim_vport_context(ctx, 5);
  printf("vport 5 of a NIC with 2 VFs: %s (%s)\n", vf == NULL ? "refused" : "given", drsim_last_error());
  printf("drsim_close: %s\n", strerror(drsim_close(ctx)));
  return vf == NULL ? 0 : 1;
}
EOF
read -r -a drsim_cflags <<<"$(pkg-config --cflags drsim)"
for lib in drsim drsim_mlx5dv; do
  "${cc[@]}" -Wall -Werror drsim_header.c -o "header_$lib" "${drsim_cflags[@]}" -L"$prefix/lib" \
    -Wl,-rpath,"$prefix/lib" -l"$lib"
  "./header_$lib" >"header_$lib.txt" 2>&1 || fail "header_$lib failed: $(cat "header_$lib.txt")"
  expect "header_$lib.txt" "vport 5 of a NIC with 2 VFs: refused (drsim_vport_context: "
  expect "header_$lib.txt" "drsim_close: Success"
done

# The CMake project.
export CC="${cc[0]}"
cflags=""
[ -z "$sanitizer" ] || cflags="${cc[*]:1}"
cmake -S "$tree/examples/external_build" -B cmake_build -DCMAKE_C_FLAGS="$cflags" \
  -DCMAKE_EXE_LINKER_FLAGS="$cflags" >cmake.txt 2>&1 || {
  cat cmake.txt >&2
  fail "cmake could not configure examples/external_build"
}
cmake --build cmake_build >>cmake.txt 2>&1 || {
  cat cmake.txt >&2
  fail "cmake --build failed"
}
ctest --test-dir cmake_build --output-on-failure -V >ctest.txt 2>&1 || {
  cat ctest.txt >&2
  fail "ctest failed"
}
check_raw_steering ctest.txt
expect ctest.txt "$prefix/bin/drsim-run"
expect ctest.txt "100% tests passed, 0 tests failed out of 1"
echo "CMake project: built and its ctest passed"
echo "install_test: OK"
