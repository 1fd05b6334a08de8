#!/usr/bin/env bash
# Checks the interposer's export list against the rdma-core installed here:
#  (a) gen_exports.py, rerun into a temporary directory, writes exactly the committed files;
#  (b) every default-version function export of libibverbs.so.1 and libmlx5.so.1 is hand-written or
#      generated (defined once in exports_generated_*.cc), and then listed in libdrsim.map under its
#      version, or else excluded with one of the generator's reasons and not listed; the map lists nothing
#      else but DRSIM_1.0's drsim_* calls, and has every version node of both libraries with its parent.
# Usage: exports_test.sh gen_exports.py hand_written_exports.txt libdrsim_mlx5dv.map libdrsim.map
#        exports_generated_ibverbs.cc exports_generated_mlx5.cc
set -euo pipefail

gen=$1
hand_written=$2
drsim_map=$3
map=$4
shift 4
generated_files=("$@")
libdir=/usr/lib/x86_64-linux-gnu
libraries=("$libdir/libibverbs.so.1" "$libdir/libmlx5.so.1")
tmp=${TEST_TMPDIR:-$(mktemp -d)}
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

if ! command -v clang-14 >/dev/null; then
  echo "FAIL: clang-14 is missing (scripts/setup installs it); gen_exports.py needs its AST" >&2
  exit 1
fi

# (a) The committed outputs are current.
mkdir -p "$tmp/out"
python3 "$gen" --out-dir "$tmp/out" --hand-written "$hand_written" --drsim-map "$drsim_map"
for committed in "$map" "${generated_files[@]}"; do
  if ! diff -u "$committed" "$tmp/out/$(basename "$committed")"; then
    fail "$committed is stale: rerun python3 soft_mlx5/gen_exports.py and commit its outputs"
  fi
done

# (b) Every export is accounted for. The facts, one a line, tagged, for one awk pass:
#   hand NAME | defined NAME | excluded NAME VERSION REASON | listed NODE NAME | closes NODE TEXT |
#   version NODE PARENT | export NAME VERSION
{
  sed 's/#.*//; s/[[:space:]]//g; /^$/d; s/^/hand /' "$hand_written"
  # A definition starts at column 0 with its return type, then the function's name and "(".
  cat "${generated_files[@]}" | awk '
    /^[a-z]/ && /\(/ { name = $0; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name); print "defined", name }
    /^\/\/   excluded: / {
      split($3, symbol, "@@"); reason = $4; gsub(/[()]/, "", reason)
      print "excluded", symbol[1], symbol[2], reason
    }'
  awk '/^[A-Za-z0-9_.]+ \{/ { node = $1 }
       /^\t\t[A-Za-z0-9_]+;$/ { sub(/;/, "", $1); print "listed", node, $1 }
       /^}/ { print "closes", node, $0 }' "$map"
  for lib in "${libraries[@]}"; do
    readelf -V -W "$lib" | awk '
      /Version definition/ { defs = 1 }
      /Version needs/ { defs = 0 }
      defs && /Name:/ && !/Flags: BASE/ {
        if (node != "") print "version", node, parent
        node = $NF; parent = "-"
      }
      defs && /Parent 1:/ { parent = $NF }
      END { if (node != "") print "version", node, parent }'
    readelf --dyn-syms -W "$lib" | awk '$4 == "FUNC" && $7 != "UND" && $8 ~ /@@/ {
      split($8, symbol, "@@"); print "export", symbol[1], symbol[2]
    }'
  done
} >"$tmp/facts"

awk '
  function fail(message) { print "FAIL: " message; failures++ }
  $1 == "hand" { hand[$2] = 1 }
  $1 == "defined" { defined[$2]++ }
  $1 == "excluded" { excluded_version[$2] = $3; reason[$2] = $4 }
  $1 == "listed" {
    listed[$2 " " $3] = 1; listed_name[$3] = 1
    n_listed++; listed_node[n_listed] = $2; listed_what[n_listed] = $3
  }
  $1 == "closes" { closing[$2] = substr($0, length($1 " " $2 " ") + 1) }
  $1 == "version" { n_versions++; parent[$2] = $3; version_order[n_versions] = $2 }
  $1 == "export" { n_exports++; export_version[$2] = $3; export_order[n_exports] = $2 }
  END {
    if (n_exports == 0) fail("no exports read from libibverbs.so.1 and libmlx5.so.1")
    for (i = 1; i <= n_exports; i++) {
      name = export_order[i]; version = export_version[name]; symbol = name "@@" version
      if (name in hand) {
        n_hand++
        if (name in defined) fail(name " is hand-written and generated")
      } else if (defined[name] == 1) {
        n_generated++
      } else if (name in reason && excluded_version[name] == version) {
        n_excluded++
        r = reason[name]
        if (r == "private" && version !~ /PRIVATE/) fail(symbol " excluded as private, yet public")
        else if (r == "no-prototype") print "NO_PROTOTYPE " name
        else if (r != "private" && r != "variadic" && r != "static-inline") fail(symbol " excluded: " r "?")
        if (name in listed_name) fail(symbol " is excluded but libdrsim.map lists it")
        continue
      } else {
        fail(symbol " is neither hand-written, generated (defined once) nor excluded with a reason")
        continue
      }
      if (!((version " " name) in listed)) fail("libdrsim.map does not list " name " in its node " version)
    }
    for (i = 1; i <= n_listed; i++) {
      node = listed_node[i]; name = listed_what[i]
      if (node == "DRSIM_1.0") {
        if (name !~ /^drsim_/) fail("DRSIM_1.0 lists " name)
      } else if (!(name in hand) && defined[name] != 1) {
        fail("libdrsim.map lists " name " (" node "), which is neither hand-written nor generated")
      }
    }
    for (i = 1; i <= n_versions; i++) {
      node = version_order[i]
      expected = parent[node] == "-" ? "};" : "} " parent[node] ";"
      if (closing[node] != expected) fail("libdrsim.map node " node " ends " closing[node] ", not " expected)
    }
    if (closing["DRSIM_1.0"] != "};") fail("libdrsim.map has no DRSIM_1.0 node")
    printf "COUNTS exports %d: hand-written %d, generated %d, excluded %d; version nodes %d\n",
           n_exports, n_hand, n_generated, n_excluded, n_versions
  }' "$tmp/facts" >"$tmp/verdict"

while read -r tag rest; do
  case "$tag" in
    FAIL:) fail "$rest" ;;
    COUNTS) echo "$rest" ;;
    # No installed header may name an export excluded for having no prototype.
    NO_PROTOTYPE)
      ! grep -rqw "$rest" /usr/include/infiniband || fail "$rest: no prototype, yet a header has it"
      ;;
  esac
done <"$tmp/verdict"
grep -q "^COUNTS" "$tmp/verdict" || fail "the export check did not run to its end"

if [ "$failures" -ne 0 ]; then
  echo "$failures failures" >&2
  exit 1
fi
echo PASS
