#!/usr/bin/env python3
"""Generates the software mlx5 device's pass-through exports and libdrsim.so's version script.

Run it by hand from the repository root, and commit what it writes:

    python3 soft_mlx5/gen_exports.py

Rerun it when soft_mlx5/hand_written_exports.txt changes (a name moves from generated to hand-written, or
back), when capi/libdrsim_mlx5dv.map's DRSIM_1.0 node changes, or when Debian's rdma-core (libibverbs1,
libmlx5-1, libibverbs-dev) is upgraded. soft_mlx5:exports_test reruns it into a temporary directory and
fails when the committed files differ.

What it reads
  - The default-version function exports (name@@VERSION) of libibverbs.so.1 and libmlx5.so.1, and their
    version nodes with their parents (readelf --dyn-syms / readelf -V).
  - The exports' prototypes, from clang-14's AST (JSON) of a C file that includes every installed
    <infiniband/*.h>; and the function-like macros those headers define (clang-14 -E -dM).
  - soft_mlx5/hand_written_exports.txt: the exports the project implements by hand.
  - capi/libdrsim_mlx5dv.map: its DRSIM_1.0 node (the drsim_* calls).

What it writes (into --out-dir, soft_mlx5/ by default)
  - exports_generated_ibverbs.cc, exports_generated_mlx5.cc: one extern "C" definition per export that is
    neither hand-written nor excluded. It fails with EOPNOTSUPP when an argument that can hold a device
    object is one of the software device's objects, and otherwise calls rdma-core's own definition.
    The exports left out, and why, are listed at the top of each file.
  - libdrsim.map: every version node of both libraries, each listing the generated and hand-written names
    of that version, the private node with the hand-written private names, and DRSIM_1.0.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import textwrap

LIBRARY_DIR = "/usr/lib/x86_64-linux-gnu"
# The libraries interposed, each with the file its generated exports go to.
LIBRARIES = [
    ("libibverbs.so.1", "exports_generated_ibverbs.cc"),
    ("libmlx5.so.1", "exports_generated_mlx5.cc"),
]
HEADER_DIR = "/usr/include/infiniband"
CLANG = "clang-14"
# clang-format's column limit in this repository (.clang-format).
COLUMN_LIMIT = 110

# How an export says "not supported" when its return type alone does not tell (pointer: NULL; int: the
# positive errno, as rdma-core's mlx5dv dispatchers and most ibv_ calls return EOPNOTSUPP when a provider
# lacks an operation; void: nothing; other scalars: 0). errno is EOPNOTSUPP in every case. Sources: rdma-core
# v44 libibverbs/verbs.c, providers/mlx5/{mlx5,verbs,qp,mlx5_vfio}.c and the man pages.
FAILURE_BY_NAME = {
    "ibv_get_pkey_index": "-1",  # the index, or -1 and errno (ibv_get_pkey_index(3))
    "ibv_init_ah_from_wc": "-1",  # 0, or -1 (ibv_create_ah_from_wc(3))
    "ibv_rate_to_mbps": "-1",  # -1: a rate it does not know
    "ibv_rate_to_mult": "-1",  # -1: a rate it does not know
    # 0 or a negative errno (verbs.c).
    "ibv_resolve_eth_l2_from_gid": "-EOPNOTSUPP",
    # The old MR stays valid and errno says why (pyverbs reads errno; ibv_rereg_mr(3)).
    "ibv_rereg_mr": "IBV_REREG_MR_ERR_INPUT",
    # 1 when the data lands in order, 0 otherwise: 0 is the answer that promises nothing.
    "ibv_query_qp_data_in_order": "0",
    "mlx5dv_devx_get_event": "-1",  # bytes read, or -1 and errno (mlx5dv_devx_get_event(3))
    "mlx5dv_qp_cancel_posted_send_wrs": "-EOPNOTSUPP",  # a count, or -errno (its man page)
    "mlx5dv_vfio_get_events_fd": "-1",  # a file descriptor
}

# Device objects that an export reaches through a struct argument rather than as an argument of its own:
# rdma-core would read the provider's private data behind them. Expressions over the header's parameter
# names.
OBJECTS_INSIDE_ARGUMENTS = {
    "mlx5dv_create_mkey": ["mkey_init_attr != nullptr ? mkey_init_attr->pd : nullptr"],
}

# Why an export is not defined by the generated files (their calls reach rdma-core untouched).
EXCLUSION_REASONS = {
    "private": "rdma-core's interface to its own providers (an IBVERBS_PRIVATE_* version); applications "
    "do not call it",
    "no-prototype": "no installed header declares it, so its exact type is unknown",
    "variadic": "variadic: its arguments cannot be forwarded",
    "static-inline": "the installed header defines it static inline, so it cannot be redefined here",
}


def run(args):
    return subprocess.run(args, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout


def read_exports(library):
    """{name: version} of the library's defined default-version (@@) functions."""
    exports = {}
    for line in run(["readelf", "--dyn-syms", "-W", library]).splitlines():
        fields = line.split()
        if len(fields) < 8 or fields[3] != "FUNC" or fields[6] == "UND" or "@@" not in fields[7]:
            continue
        name, version = fields[7].split("@@")
        exports[name] = version
    return exports


def read_versions(library):
    """[(version, parent or None)] of the library's version definitions, in definition order."""
    versions = []
    for line in run(["readelf", "-V", "-W", library]).splitlines():
        defined = re.search(r"Flags: (\S+)\s+Index: \d+\s+Cnt: \d+\s+Name: (\S+)", line)
        if defined:
            if defined.group(1) != "BASE":
                versions.append([defined.group(2), None])
            continue
        parent = re.search(r"Parent 1: (\S+)", line)
        if parent and versions and versions[-1][1] is None:
            versions[-1][1] = parent.group(1)
        if "Version needs" in line:
            break
    return [tuple(v) for v in versions]


def read_name_list(path):
    """The names of a file with one name a line, # comments and blank lines ignored."""
    names = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def read_map_node(path, node):
    """The global names of one node of a version script."""
    with open(path) as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    block = re.search(r"\b%s\s*\{(.*?)\}" % re.escape(node), text, re.S)
    if block is None:
        sys.exit("gen_exports: %s has no %s node" % (path, node))
    globals_part = block.group(1).split("local:")[0].replace("global:", "")
    return sorted(n.strip() for n in globals_part.split(";") if n.strip())


class Prototype:
    """One function as the installed headers declare it."""

    def __init__(self, node, header):
        self.name = node["name"]
        self.header = header
        self.variadic = bool(node.get("variadic"))
        self.static = node.get("storageClass") == "static"
        function_type = node["type"]["qualType"]
        self.result = c_type(function_type[: function_type.index("(")])
        self.params = []
        params = [n for n in node.get("inner", []) if n.get("kind") == "ParmVarDecl"]
        for i, p in enumerate(params):
            self.params.append((c_type(p["type"]["qualType"]), p.get("name") or "arg%d" % i))
        # Enums passed by value (not pointers to enums), by parameter name.
        self.enum_params = set()
        for (type_, name), p in zip(self.params, params):
            spelling = p["type"].get("desugaredQualType", p["type"]["qualType"])
            if spelling.startswith("enum ") and "*" not in spelling:
                self.enum_params.add(name)


def c_type(spelling):
    """A C type spelled as this repository writes it: `struct ibv_pd*`, `const char*`."""
    spelling = spelling.strip()
    return re.sub(r"\s*\*", "*", spelling)


def read_prototypes(headers):
    """{name: Prototype} of every function the headers declare, and the set of function-like macros."""
    with tempfile.TemporaryDirectory() as tmp:
        unit = os.path.join(tmp, "headers.c")
        with open(unit, "w") as f:
            for h in headers:
                f.write("#include <infiniband/%s>\n" % h)
        flags = ["-x", "c", "-Wno-#warnings"]
        ast = json.loads(run([CLANG] + flags + ["-fsyntax-only", "-Xclang", "-ast-dump=json", unit]))
        macros = set(re.findall(r"^#define (\w+)\(", run([CLANG] + flags + ["-E", "-dM", unit]), re.M))
    prototypes = {}
    # clang writes a location's file only when it differs from the last one written, so the file of a
    # declaration is the last `file` seen before it in document order ("includedFrom" names the includer).
    state = {"file": None}

    def follow(value):
        if isinstance(value, dict):
            for key, v in value.items():
                if key == "includedFrom":
                    continue
                if key == "file" and isinstance(v, str):
                    state["file"] = v
                else:
                    follow(v)
        elif isinstance(value, list):
            for v in value:
                follow(v)

    for node in ast["inner"]:
        follow(node.get("loc"))
        header = state["file"]
        follow(node.get("range"))
        follow(node.get("inner"))
        if node.get("kind") == "FunctionDecl" and node["name"] not in prototypes:
            prototypes[node["name"]] = Prototype(node, header)
    return prototypes, macros


def include_name(header_path):
    """<infiniband/verbs.h> for /usr/include/infiniband/verbs.h."""
    return "<%s>" % os.path.relpath(header_path, os.path.dirname(HEADER_DIR))


def object_types(prototypes, names):
    """The struct types an export hands out as a pointer: the device objects an argument can be."""
    types = set()
    for name in names:
        p = prototypes.get(name)
        if p and "*" in p.result:
            base = re.sub(r"^const ", "", p.result.rstrip("*"))
            if base.startswith("struct "):
                types.add(base)
    return types


def failure_value(proto):
    """The expression an export returns to say "not supported"; None for void."""
    if proto.name in FAILURE_BY_NAME:
        return FAILURE_BY_NAME[proto.name]
    if proto.result == "void":
        return None
    if proto.result.endswith("*"):
        return "nullptr"
    if proto.result == "int":
        return "EOPNOTSUPP"
    return "static_cast<%s>(0)" % proto.result


def checked_objects(proto, types):
    """The arguments that may be software-device objects: the first pointer, any argument of an object
    type, and objects inside arguments."""
    checked = []
    for i, (type_, name) in enumerate(proto.params):
        if not type_.endswith("*"):
            continue
        base = re.sub(r"^const ", "", type_.rstrip("*"))
        if i == 0 or base in types:
            checked.append(name)
    return checked + OBJECTS_INSIDE_ARGUMENTS.get(proto.name, [])


def wrap(head, items, tail, indent=""):
    """`head` + items joined by ", " + `tail`, broken after commas when longer than the column limit: items
    aligned after the open parenthesis, or on a new line indented 4 more when even that does not fit
    (clang-format's bin packing)."""
    line = indent + head + ", ".join(items) + tail
    if len(line) <= COLUMN_LIMIT:
        return [line]
    pieces = [item + "," for item in items[:-1]] + [items[-1] + tail]
    lines, current = [], indent + head
    if len(current) + max(len(p) for p in pieces) > COLUMN_LIMIT:
        lines, current = [current], indent + "    "
    align, start = " " * len(current), current
    for piece in pieces:
        if current == start:
            current += piece
        elif len(current) + 1 + len(piece) <= COLUMN_LIMIT:
            current += " " + piece
        else:
            lines.append(current)
            current = align + piece
    lines.append(current)
    return lines


def definition(proto, version, types):
    """The lines of one generated export."""
    params = ["%s %s" % (t, n) for t, n in proto.params] or ["void"]
    lines = ["// %s@@%s" % (proto.name, version)]
    lines += wrap("%s %s(" % (proto.result, proto.name), params, ") {")
    failure = failure_value(proto)
    failure_args = "__func__" + ("" if failure is None else ", " + failure)
    checked = checked_objects(proto, types)
    if checked:
        check = wrap("if (AnySoftwareObject(", checked, ")) return Unsupported(%s);" % failure_args, "  ")
        if len(check) > 1:
            check = wrap("if (AnySoftwareObject(", checked, ")) {", "  ")
            check += ["    return Unsupported(%s);" % failure_args, "  }"]
        lines += check
    real = 'DRSIM_REAL_FUNCTION(%s, "%s")' % (proto.name, version)
    if proto.enum_params:
        real = "WithRawEnums(%s)" % real
    lines += ["  auto* real = %s;" % real]
    lines += ["  if (real == nullptr) return Missing(%s);" % failure_args]
    args = ["RawEnum(%s)" % n if n in proto.enum_params else n for _, n in proto.params]
    lines += wrap("return real(", args, ");", "  ")
    lines += ["}"]
    return lines


def comment_block(text, prefix, hanging="  "):
    """`text` as comment lines within the column limit, continuation lines indented by `hanging`."""
    return textwrap.wrap(text, COLUMN_LIMIT, initial_indent=prefix, subsequent_indent=prefix + hanging,
                         break_on_hyphens=False)


def generated_file(library, exports, generated, excluded, prototypes, types, macros):
    """The text of one generated .cc file."""
    out = comment_block(
        "GENERATED by soft_mlx5/gen_exports.py from %s and the installed rdma-core headers: do not "
        "edit; rerun the script (its header says when)." % library, "// ", "")
    out += ["//"] + comment_block(
        "The exports of %s that the software mlx5 device does not implement by hand. Each fails with "
        "EOPNOTSUPP (the export's own way of saying so, with errno) when an argument that can hold a device "
        "object is one of the software device's objects, whose private data rdma-core would read; and "
        "otherwise calls rdma-core's own definition, so real devices pass through untouched." % library,
        "// ", "")
    if excluded:
        out += ["//", "// Exports not defined here (their calls reach rdma-core), by reason:"]
        for reason in sorted(set(excluded.values())):
            out += ["//"] + comment_block("%s: %s." % (reason, EXCLUSION_REASONS[reason]), "// ")
            for name in sorted(n for n in excluded if excluded[n] == reason):
                out.append("//   excluded: %s@@%s (%s)" % (name, exports[name], reason))
    headers = sorted({include_name(prototypes[n].header) for n in generated})
    out += [""] + ["#include %s" % h for h in headers]
    out += [
        "",
        "#include <cerrno>",
        "",
        '#include "capi/real_symbol.h"',
        '#include "soft_mlx5/generated_export.h"',
        "",
    ]
    helpers = ["AnySoftwareObject", "Missing", "Unsupported"]
    if any(prototypes[n].enum_params for n in generated):
        helpers += ["RawEnum", "WithRawEnums"]
    out += ["using drsim::soft_mlx5::%s;" % h for h in sorted(helpers)]
    shadowing = sorted(n for n in generated if n in macros)
    if shadowing:
        out += ["", "// The headers' function-like macros named like the exports defined here."]
        out += ["#undef %s" % n for n in shadowing]
    out += ["", 'extern "C" {']
    for name in sorted(generated):
        out += [""] + definition(prototypes[name], exports[name], types)
    out += ["", '}  // extern "C"', ""]
    return "\n".join(out)


def version_script(versions, names_by_version, drsim_names):
    """The text of libdrsim.map."""
    out = [
        "/* GENERATED by soft_mlx5/gen_exports.py: do not edit. The version script of libdrsim.so: every",
        " * version node of libibverbs.so.1 and libmlx5.so.1 with the names libdrsim.so defines (generated",
        " * and hand-written), and DRSIM_1.0. Linked with -Wl,--no-undefined-version, a name listed here",
        " * but defined nowhere fails the link. */",
    ]
    first = True
    for version, parent in versions + [("DRSIM_1.0", None)]:
        names = drsim_names if version == "DRSIM_1.0" else names_by_version.get(version, [])
        out += ["%s {" % version]
        if names:
            out += ["\tglobal:"] + ["\t\t%s;" % n for n in sorted(names)]
        if first:
            out += ["\tlocal: *;"]
            first = False
        out += ["}%s;" % (" " + parent if parent else ""), ""]
    return "\n".join(out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out-dir", default=here, help="where to write the generated files")
    parser.add_argument("--hand-written", default=os.path.join(here, "hand_written_exports.txt"))
    parser.add_argument("--drsim-map", default=os.path.join(root, "capi", "libdrsim_mlx5dv.map"))
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)

    hand_written = read_name_list(args.hand_written)
    drsim_names = read_map_node(args.drsim_map, "DRSIM_1.0")
    headers = sorted(h for h in os.listdir(HEADER_DIR) if h.endswith(".h"))
    prototypes, macros = read_prototypes(headers)

    all_exports, versions, per_library = {}, [], []
    for library, _ in LIBRARIES:
        path = os.path.join(LIBRARY_DIR, library)
        exports = read_exports(path)
        all_exports.update(exports)
        versions += read_versions(path)
        per_library.append(exports)

    unknown = sorted(set(hand_written) - set(all_exports))
    if unknown:
        sys.exit("gen_exports: %s names no default-version export: %s"
                 % (args.hand_written, " ".join(unknown)))
    stale = sorted(set(FAILURE_BY_NAME) | set(OBJECTS_INSIDE_ARGUMENTS))
    stale = [n for n in stale if n not in all_exports or n in hand_written]
    if stale:
        sys.exit("gen_exports: the tables name exports that are not generated: " + " ".join(stale))

    types = object_types(prototypes, all_exports)
    names_by_version = {}
    for name in hand_written:
        names_by_version.setdefault(all_exports[name], []).append(name)
    for (library, filename), exports in zip(LIBRARIES, per_library):
        generated, excluded = [], {}
        for name, version in exports.items():
            proto = prototypes.get(name)
            if name in hand_written:
                continue
            if "PRIVATE" in version:
                excluded[name] = "private"
            elif proto is None:
                excluded[name] = "no-prototype"
            elif proto.variadic:
                excluded[name] = "variadic"
            elif proto.static:
                excluded[name] = "static-inline"
            elif "(" in proto.result or any("(" in t for t, _ in proto.params):
                sys.exit("gen_exports: %s has a function-pointer result or parameter, which this script "
                         "cannot spell yet" % name)
            else:
                generated.append(name)
                names_by_version.setdefault(version, []).append(name)
        text = generated_file(library, exports, generated, excluded, prototypes, types, macros)
        with open(os.path.join(args.out_dir, filename), "w") as f:
            f.write(text)
    with open(os.path.join(args.out_dir, "libdrsim.map"), "w") as f:
        f.write(version_script(versions, names_by_version, drsim_names))


if __name__ == "__main__":
    main()
