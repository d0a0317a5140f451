#!/usr/bin/env python3
"""Generates the typed ops of the `onnx` dialect from the ONNX operator schemas.

Run it with the pinned `onnx` package (see scripts/requirements.txt):

    .venv/bin/python utils/gen_onnx_dialect.py

It writes, all checked in:
  dialects/onnx/OnnxSchemaOps<N>.td      ODS for the latest schema of every op of the
                                         default domain and ai.onnx.ml, split in shards
                                         so that the C++ compiles in parallel
  dialects/onnx/OnnxSchemaTable.inc      a plain C++ table the importer reads: inputs,
                                         outputs, attributes, since-version, the oldest
                                         opset the typed op stands for, type hints
  test/lit/dialect/all_ops_roundtrip.mlir  one instance of every typed op

Ops whose latest schema is deprecated, and the preview/training domains, are left to
the generic op `onnx.Generic`.
"""

import argparse
import os
import re
import sys

import onnx
from onnx import defs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOMAINS = {"": "", "ai.onnx.ml": "ml."}
NUM_SHARDS = 4

# TensorProto.DataType names as they appear in schema type strings.
TYPE_STR_TO_CODE = {
    "float": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6,
    "int64": 7, "string": 8, "bool": 9, "float16": 10, "double": 11,
    "uint32": 12, "uint64": 13, "complex64": 14, "complex128": 15,
    "bfloat16": 16, "float8e4m3fn": 17, "float8e4m3fnuz": 18, "float8e5m2": 19,
    "float8e5m2fnuz": 20, "uint4": 21, "int4": 22, "float4e2m1": 23,
    "float8e8m0": 24, "uint2": 25, "int2": 26, "float6e2m3": 27, "float6e3m2": 28,
}

A = defs.OpSchema.AttrType
P = defs.OpSchema.FormalParameterOption

# ONNX attribute type -> (C++ enum name, ODS attribute, has a scalar default we keep).
ATTR_KINDS = {
    A.INT: ("Int", "I64Attr"),
    A.FLOAT: ("Float", "F32Attr"),
    A.STRING: ("String", "StrAttr"),
    A.INTS: ("Ints", "DenseI64ArrayAttr"),
    A.FLOATS: ("Floats", "DenseF32ArrayAttr"),
    A.STRINGS: ("Strings", "StrArrayAttr"),
    A.TENSOR: ("Tensor", "ElementsAttr"),
    A.SPARSE_TENSOR: ("SparseTensor", "DictionaryAttr"),
    A.TYPE_PROTO: ("TypeProto", "TypeAttr"),
    A.GRAPH: ("Graph", None),  # becomes a region
}

# Sample values for required attributes in the round-trip test.
SAMPLE_ATTR = {
    "Int": "1 : i64",
    "Float": "1.000000e+00 : f32",
    "String": '"x"',
    "Ints": "array<i64: 1>",
    "Floats": "array<f32: 1.000000e+00>",
    "Strings": '["x"]',
    "Tensor": "dense<1.000000e+00> : tensor<1xf32>",
    "SparseTensor": "{values = dense<1.000000e+00> : tensor<1xf32>}",
    "TypeProto": "tensor<*xf32>",
}


def cpp_class(domain_prefix, name):
    return ("ML" if domain_prefix else "") + name + "Op"


def default_of(attr):
    """C++/ODS default value for scalar attributes, or None."""
    dv = attr.default_value
    if dv is None or not dv.ListFields():
        return None
    if attr.type == A.INT and dv.HasField("i"):
        v = dv.i
        return str(v) if -(2**31) < v < 2**31 else f"{v}ll"
    if attr.type == A.FLOAT and dv.HasField("f"):
        f = dv.f
        if f != f or f in (float("inf"), float("-inf")):
            return None
        return repr(float(f))
    if attr.type == A.STRING and dv.HasField("s"):
        return dv.s.decode("utf-8")
    return None


def default_signature(attr):
    dv = attr.default_value
    return dv.SerializeToString() if dv is not None and dv.ListFields() else b""


def is_upgradable(old, new):
    """A node of schema `old` means the same as one of `new` with the same inputs,
    outputs and attributes: `new` only adds trailing optional inputs and outputs
    and attributes that are optional, and keeps every attribute's type and
    default. (Changes of meaning without a change of signature, like the
    Softmax axis default, show up as a changed default.)"""

    def params_fit(olds, news):
        if len(olds) > len(news):
            return False
        for o, n in zip(olds, news):
            if o.name != n.name:
                return False
            if o.option != n.option and not (o.option == P.Single and n.option == P.Optional):
                return False
        return all(n.option != P.Single for n in news[len(olds):])

    if not params_fit(old.inputs, new.inputs) or not params_fit(old.outputs, new.outputs):
        return False
    for name, a in old.attributes.items():
        b = new.attributes.get(name)
        if b is None or b.type != a.type or default_signature(a) != default_signature(b):
            return False
    return all(not b.required for name, b in new.attributes.items()
               if name not in old.attributes)


def compatible_since(history):
    """Oldest since-version from which every schema up to the latest imports
    as the latest typed op without a change of meaning."""
    history = sorted(history, key=lambda s: s.since_version)
    latest = history[-1]
    since = latest.since_version
    for s in reversed(history[:-1]):
        if not is_upgradable(s, latest):
            break
        since = s.since_version
    return since


def type_hint(schema, out):
    """(same_as_input_index, fixed_elem_type_code) for one output."""
    for idx, inp in enumerate(schema.inputs):
        if inp.type_str == out.type_str:
            return idx, 0
    allowed = None
    for tc in schema.type_constraints:
        if tc.type_param_str == out.type_str:
            allowed = list(tc.allowed_type_strs)
    if allowed is None:
        allowed = [out.type_str]
    if len(allowed) == 1:
        m = re.fullmatch(r"tensor\((\w+)\)", allowed[0])
        if m and m.group(1) in TYPE_STR_TO_CODE:
            return -1, TYPE_STR_TO_CODE[m.group(1)]
    return -1, 0


def ods_ident(name):
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise SystemExit(f"schema name {name!r} is not an identifier")
    return name


def td_escape(s):
    return s.replace("\\", "\\\\").replace('"', '\\"')


def collect():
    latest = {}
    history = {}
    for s in defs.get_all_schemas_with_history():
        if s.domain not in DOMAINS:
            continue
        key = (s.domain, s.name)
        history.setdefault(key, []).append(s)
        if key not in latest or s.since_version > latest[key].since_version:
            latest[key] = s
    ops = []
    for key in sorted(latest, key=lambda k: (k[0], k[1])):
        s = latest[key]
        if s.deprecated:
            continue
        ops.append((s, compatible_since(history[key])))
    return ops


def gen_td(s, since):
    prefix = DOMAINS[s.domain]
    cls = cpp_class(prefix, s.name)
    names = set()

    def claim(n):
        if n in names:
            raise SystemExit(f"{s.name}: duplicate accessor name {n}")
        names.add(n)
        return n

    args = []
    for i in s.inputs:
        t = "Variadic<AnyType>" if i.option == P.Variadic else "AnyType"
        args.append(f"{t}:${claim(ods_ident(i.name))}")
    regions = []
    for n, a in sorted(s.attributes.items()):
        kind, ods = ATTR_KINDS[a.type]
        if kind == "Graph":
            regions.append(f"SizedRegion<1>:${claim(ods_ident(n))}")
            continue
        d = default_of(a)
        if a.required:
            t = ods
        elif d is not None and kind == "String":
            t = f'DefaultValuedStrAttr<{ods}, "{td_escape(d)}">'
        elif d is not None:
            t = f'DefaultValuedAttr<{ods}, "{d}">'
        else:
            t = f"OptionalAttr<{ods}>"
        args.append(f"{t}:${claim(ods_ident(n))}")
    results = []
    for o in s.outputs:
        t = "Variadic<AnyType>" if o.option == P.Variadic else "AnyType"
        results.append(f"{t}:${claim(ods_ident(o.name))}")
    domain = s.domain or "ai.onnx"
    lines = [
        f'def ONNX_{cls} : ONNX_Op<"{prefix}{s.name}"> {{',
        f'  let summary = "ONNX {s.name} (domain {domain}, opset {s.since_version})";',
        "  let description = [{",
        f"    Typed form of `{s.name}` from the ONNX schema since version"
        f" {s.since_version}; imported for models whose opset is at least {since}"
        " (older versions differ in signature or meaning and import as `onnx.Generic`).",
        "    Optional inputs that a node leaves out are values of type `none` from"
        " `onnx.NoValue`; outputs it leaves out have type `none`.",
        "  }];",
        "  let arguments = (ins" + ("\n    " + ",\n    ".join(args) if args else "") + ");",
        "  let results = (outs" + ("\n    " + ",\n    ".join(results) if results else "") + ");",
    ]
    if regions:
        lines.append("  let regions = (region " + ", ".join(regions) + ");")
    lines += [
        "  let extraClassDeclaration = [{",
        f"    static constexpr int kSinceVersion = {s.since_version};",
        f"    static constexpr int kCompatibleSince = {since};",
        f'    static constexpr const char *kOnnxDomain = "{s.domain}";',
        "  }];",
        "}",
        "",
    ]
    return "\n".join(lines)


def gen_table(ops):
    out = [
        "// Generated by utils/gen_onnx_dialect.py from onnx " + onnx.__version__ + ".",
        "// Do not edit. One entry per typed op; see OnnxSchema.h for the fields.",
        "",
    ]
    entries = []
    for s, since in ops:
        prefix = DOMAINS[s.domain]
        ident = (("ml_" if prefix else "") + s.name)
        out.append(f"static const OnnxParamInfo k{ident}_in[] = {{")
        for i in s.inputs:
            out.append(f'  {{"{i.name}", ParamKind::{i.option.name}, -1, 0}},')
        out.append("  {nullptr, ParamKind::Single, -1, 0}};")
        out.append(f"static const OnnxParamInfo k{ident}_out[] = {{")
        for o in s.outputs:
            same, fixed = type_hint(s, o)
            out.append(f'  {{"{o.name}", ParamKind::{o.option.name}, {same}, {fixed}}},')
        out.append("  {nullptr, ParamKind::Single, -1, 0}};")
        out.append(f"static const OnnxAttrInfo k{ident}_attr[] = {{")
        for n, a in sorted(s.attributes.items()):
            kind = ATTR_KINDS[a.type][0]
            out.append(f'  {{"{n}", AttrKind::{kind}, {str(a.required).lower()}}},')
        out.append("  {nullptr, AttrKind::Int, false}};")
        entries.append(
            f'  {{"{s.name}", "{s.domain}", "onnx.{prefix}{s.name}", {s.since_version}, '
            f"{since}, k{ident}_in, k{ident}_out, k{ident}_attr}},")
    out.append("")
    out.append("static const OnnxOpSchema kOnnxOpSchemas[] = {")
    out += entries
    out.append("};")
    return "\n".join(out) + "\n"


def gen_roundtrip(ops):
    out = [
        "// Generated by utils/gen_onnx_dialect.py: one instance of every typed op.",
        "// RUN: ortc-opt %s > %t.1.mlir",
        "// RUN: ortc-opt %t.1.mlir > %t.2.mlir",
        "// RUN: diff %t.1.mlir %t.2.mlir",
        "// RUN: FileCheck %s --input-file=%t.2.mlir",
        "",
    ]
    for s, _ in ops:
        prefix = DOMAINS[s.domain]
        name = f"onnx.{prefix}{s.name}"
        fn = "test_" + (prefix.replace(".", "_")) + s.name
        operands = []
        for i in s.inputs:
            if i.option == P.Variadic:
                operands += ["%a", "%a"]
            else:
                operands.append("%a")
        attrs = []
        regions = []
        for n, a in sorted(s.attributes.items()):
            kind = ATTR_KINDS[a.type][0]
            if kind == "Graph":
                regions.append('{\n    "onnx.Yield"() : () -> ()\n  }')
            elif a.required:
                attrs.append(f"{n} = {SAMPLE_ATTR[kind]}")
        nres = sum(2 if o.option == P.Variadic else 1 for o in s.outputs)
        res_types = ", ".join(["tensor<*xf32>"] * nres)
        lhs = ""
        if nres == 1:
            lhs = "%r = "
        elif nres > 1:
            lhs = f"%r:{nres} = "
        attr_s = (" {" + ", ".join(attrs) + "}") if attrs else ""
        reg_s = (" (" + ", ".join(regions) + ")") if regions else ""
        in_types = ", ".join(["tensor<*xf32>"] * len(operands))
        out += [
            f"// CHECK-LABEL: func.func @{fn}",
            f'// CHECK: "{name}"',
            f"func.func @{fn}(%a: tensor<*xf32>) {{",
            f'  {lhs}"{name}"({", ".join(operands)}){reg_s}{attr_s} : '
            f"({in_types}) -> ({res_types})",
            "  return",
            "}",
            "",
        ]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true",
                    help="fail if the checked-in files differ from what would be generated")
    opts = ap.parse_args()
    ops = collect()
    shards = [[] for _ in range(NUM_SHARDS)]
    for n, (s, since) in enumerate(ops):
        shards[n * NUM_SHARDS // len(ops)].append(gen_td(s, since))
    files = {}
    for n, body in enumerate(shards):
        files[f"dialects/onnx/OnnxSchemaOps{n}.td"] = "\n".join([
            f"// Generated by utils/gen_onnx_dialect.py from onnx {onnx.__version__}"
            f" (opset {defs.onnx_opset_version()}). Do not edit.",
            f"// Shard {n} of {NUM_SHARDS} of the typed ONNX ops.",
            "",
            "#ifndef ORTC_ONNX_SCHEMA_OPS" + str(n),
            "#define ORTC_ONNX_SCHEMA_OPS" + str(n),
            "",
            'include "OnnxBase.td"',
            "",
        ] + body + ["#endif", ""])
    files["dialects/onnx/OnnxSchemaTable.inc"] = gen_table(ops)
    files["test/lit/dialect/all_ops_roundtrip.mlir"] = gen_roundtrip(ops)
    stale = []
    for rel, text in files.items():
        path = os.path.join(ROOT, rel)
        old = open(path).read() if os.path.exists(path) else None
        if old == text:
            continue
        stale.append(rel)
        if not opts.check:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
    if opts.check and stale:
        print("out of date: " + ", ".join(stale), file=sys.stderr)
        return 1
    print(f"{len(ops)} typed ops in {NUM_SHARDS} shards"
          + (f"; rewrote {len(stale)} files" if stale and not opts.check else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
