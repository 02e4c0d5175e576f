#!/usr/bin/env python3
"""Generates the client library's API surface (stubs, cuGetProcAddress table,
version script, error strings) from the CUDA headers and the lists beside it.

Inputs (the one source of truth):
  client-shim/api/libcuda.exports          every name libcuda.so.1 exports, sorted
  client-shim/api/driver_implemented.txt   exported driver names implemented by hand
  client-shim/api/libcudart.exports        every name libcudart.so.13 exports, sorted
  client-shim/api/runtime_implemented.txt  exported runtime names implemented by hand
  $CUDA_HOME/include/{cuda.h,cudaTypedefs.h,cudaProfiler.h,cudaProfilerTypedefs.h}
  $CUDA_HOME/include/{cuda_runtime_api.h,driver_types.h,...} (runtime return types, cudaError_t)

Outputs, in client-shim/generated/ (checked in, never edited by hand):
  driver_unimplemented.cpp  one "not supported" stub per exported, unimplemented name
  driver_procs.h/.cpp       the (name, version) -> own symbol table for cuGetProcAddress
  driver_errors.inc         CUresult names and short descriptions
  runtime_unimplemented.cpp one "not supported" stub per exported, unimplemented runtime name
  runtime_errors.inc        cudaError_t names and short descriptions
  librgpu.map               the linker version script

Usage:
  gen_api.py [--cuda-home DIR] [--out DIR]           regenerate
  gen_api.py --check                                 fail if regenerating changes anything
                                                     (or the stub library's exports changed)
  gen_api.py --refresh-exports [STUB.so]             rewrite libcuda.exports from the
                                                     stub library's ELF .dynsym
  gen_api.py --refresh-runtime-exports [CUDART.so]   rewrite libcudart.exports from
                                                     libcudart.so.13's ELF .dynsym

The header reading (a small preprocessor, prototypes, PFN typedefs, ELF) is
in cuda_headers.py beside this file. Python 3 standard library only.
"""

import argparse
import difflib
import os
import re
import sys
import tempfile

sys.dont_write_bytecode = True  # keep the source tree clean
from cuda_headers import (GenError, Headers, parse_runtime_errors, read_dynsym_exports,  # noqa: E402
                          runtime_return_types)

HERE = os.path.dirname(os.path.abspath(__file__))
SHIM_DIR = os.path.dirname(HERE)
DEFAULT_OUT = os.path.join(SHIM_DIR, "generated")
EXPORTS_FILE = os.path.join(HERE, "libcuda.exports")
IMPLEMENTED_FILE = os.path.join(HERE, "driver_implemented.txt")
RUNTIME_EXPORTS_FILE = os.path.join(HERE, "libcudart.exports")
RUNTIME_IMPLEMENTED_FILE = os.path.join(HERE, "runtime_implemented.txt")
GENERATOR = "client-shim/api/gen_api.py"

# Exported-symbol lists that make up the library's ABI, one version node each:
# the driver API, and the runtime API under "libcudart.so.13" (programs built
# with -cudart shared import cudaMalloc@libcudart.so.13).
VERSION_NODES = [("libcuda.so.1", EXPORTS_FILE), ("libcudart.so.13", RUNTIME_EXPORTS_FILE)]

# An API whose newest form is a different base name, not a _vN suffix. cuda.h
# says so with a macro (checked below), but cudaTypedefs.h has no PFN for the
# alias, so the version where the alias starts is stated here: CUDA 12.0 gave
# cuGraphInstantiate the signature of cuGraphInstantiateWithFlags.
CROSS_NAME_ALIASES = {
    # api name: (version, symbol that implements it from that version)
    "cuGraphInstantiate": (12000, "cuGraphInstantiateWithFlags"),
}


# --------------------------------------------------------------------------
# The cuGetProcAddress table: for every API name, each variant's version and
# the exported symbol that implements it.

def symbol_rank(api, symbol):
    m = re.fullmatch(re.escape(api) + r"(?:_v(\d+))?(?:_(ptds|ptsz))?", symbol)
    return (int(m.group(1)) if m.group(1) else 1, m.group(2) or "") if m else None


def assign_variants(api, flavor, pfns, candidates, prototypes):
    """Maps each PFN version (ascending) to a candidate symbol (ascending suffix).

    A PFN typedef gives the parameter list of the variant introduced at that
    version; the prototype in cuda.h gives each symbol's. A variant maps to a
    symbol with the same parameters, and later versions to later (higher _vN)
    symbols. When several assignments satisfy both rules (identical parameter
    lists, e.g. cuCtxCreate v2000/v3020), each version takes its own symbol in
    order, which needs as many symbols as versions.
    """
    versions = sorted(pfns, key=lambda p: p[0])
    cands = sorted(candidates, key=lambda s: symbol_rank(api, s)[0])
    n, m = len(versions), len(cands)

    def fits(v, s):
        return s in prototypes and prototypes[s] == v[1]

    # Strictly increasing, signature-preserving assignments.
    solutions = []

    def search(i, j, acc):
        if i == n:
            solutions.append(list(acc))
            return
        for k in range(j, m):
            if fits(versions[i], cands[k]):
                acc.append(cands[k])
                search(i + 1, k + 1, acc)
                acc.pop()
    search(0, 0, [])
    if len(solutions) != 1:
        detail = "; ".join(f"v{v[0]}{v[1]}" for v in versions)
        protos = "; ".join(f"{s}{prototypes.get(s)}" for s in cands)
        raise GenError(f"{api}{'_' + flavor if flavor else ''}: {len(solutions)} ways to match "
                       f"PFN versions [{detail}] to symbols [{protos}]")
    return [(versions[i][0], solutions[0][i]) for i in range(n)]


class ProcEntry:
    def __init__(self, api, version, symbol):
        self.api, self.version, self.symbol = api, version, symbol
        self.pt_symbol, self.pt_version = None, 0


def build_proc_table(headers, exports):
    exported = set(exports)
    by_api = {}
    for api, version, flavor, params in headers.pfns:
        by_api.setdefault(api, {}).setdefault(flavor, []).append((version, params))

    table = []
    covered = set()
    for api in sorted(by_api):
        flavors = by_api[api]
        if "" not in flavors:
            raise GenError(f"{api}: only per-thread PFN typedefs")
        cands = {}
        for s in exported:
            r = symbol_rank(api, s)
            if r:
                cands.setdefault(r[1], []).append(s)
        legacy = assign_variants(api, "", flavors[""], cands.get("", []), headers.prototypes)
        entries = [ProcEntry(api, v, s) for v, s in legacy]
        for flavor in ("ptds", "ptsz"):
            if flavor not in flavors:
                continue
            for v, s in assign_variants(api, flavor, flavors[flavor], cands.get(flavor, []),
                                        headers.prototypes):
                twin = s[:-len("_" + flavor)]
                match = [e for e in entries if e.symbol == twin]
                if not match or match[0].pt_symbol:
                    raise GenError(f"{s}: no legacy variant {twin} to pair with")
                match[0].pt_symbol, match[0].pt_version = s, v
                covered.add(s)
        for e in entries:
            covered.add(e.symbol)
        table += entries

    for api, (version, symbol) in CROSS_NAME_ALIASES.items():
        if symbol not in exported or api not in by_api:
            raise GenError(f"alias {api} -> {symbol}: unknown name")
        if any(e.api == api and e.version >= version for e in table):
            raise GenError(f"alias {api} -> {symbol}: a PFN variant is newer than {version}")
        table.append(ProcEntry(api, version, symbol))

    missing = sorted(exported - covered - {s for _, (_, s) in CROSS_NAME_ALIASES.items()})
    if missing:
        raise GenError("exported but no PFN typedef maps to it: " + ", ".join(missing))
    table.sort(key=lambda e: (e.api, e.version))
    return table


def lookup(table, api, version, per_thread):
    best = None
    for e in table:
        if e.api == api and e.version <= version:
            best = e
    if best is None:
        return None
    if per_thread and best.pt_symbol and best.pt_version <= version:
        return best.pt_symbol
    return best.symbol


def check_against_macros(headers, table):
    """The newest variant of every API must be what cuda.h's macros name."""
    problems = []
    for api in sorted({e.api for e in table}):
        for pp, per_thread, mode in ((headers.public, False, "default"),
                                     (headers.public_ptds, True, "per-thread")):
            want = pp.expand_name(api)
            got = lookup(table, api, headers.cuda_version, per_thread)
            if want == got:
                continue
            # A newer variant that the header spells out as its own public
            # name (cuCtxGetDevice_v2, cuStreamGetCtx_v2): source code keeps
            # the old one under the plain name, cuGetProcAddress follows the
            # PFN typedefs.
            if any(literal != api and symbol_rank(api, literal) and sym == got
                   for literal, sym in pp.declared.items()):
                continue
            # A header-only inline wrapper (cuGetProcAddress_v2_ptsz) is no
            # exported symbol; the driver's answer is the exported one.
            if want in pp.inline_functions and got == lookup(table, api, headers.cuda_version, False):
                continue
            problems.append(f"{api} ({mode}): cuda.h says {want}, table gives {got}")
    if problems:
        raise GenError("table disagrees with cuda.h:\n  " + "\n  ".join(problems))


# --------------------------------------------------------------------------
# Lists.

def read_exports(path):
    with open(path, encoding="ascii") as f:
        names = [ln.strip() for ln in f if ln.strip()]
    for n in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n):
            raise GenError(f"{path}: not a C function name: {n!r}")
    if names != sorted(set(names)):
        raise GenError(f"{path}: names must be sorted and unique (use --refresh-exports)")
    return names


def read_implemented(path, exports, what="driver"):
    names = []
    exported = set(exports)
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            name = line.split("#", 1)[0].strip()
            if not name:
                continue
            if name not in exported:
                raise GenError(f"{path}:{lineno}: {name} is not an exported {what} function")
            if name in names:
                raise GenError(f"{path}:{lineno}: {name} listed twice")
            names.append(name)
    return set(names)


# --------------------------------------------------------------------------
# Output.

def banner(comment, what):
    return (f"{comment} Generated by {GENERATOR} from the CUDA headers and the lists in\n"
            f"{comment} client-shim/api/; do not edit. {what}\n")


def emit_unimplemented(exports, implemented):
    out = [banner("//", "Run the generator to change it."),
           "// One stub per exported driver function that rgpu does not implement:\n"
           "// it logs its name once and returns CUDA_ERROR_NOT_SUPPORTED. cuda.h is\n"
           "// not included on purpose: a stub takes no parameters (a C caller may pass\n"
           "// any and they are ignored), so it cannot clash with cuda.h's prototype.\n",
           '#include "../src/unimplemented.h"\n\n',
           'extern "C" {\n\n']
    for name in exports:
        if name not in implemented:
            out.append(f"RGPU_SHIM_EXPORT int {name}() noexcept {{ "
                       f"return rgpu::shim::report_unimplemented(\"{name}\"); }}\n")
    out.append('}  // extern "C"\n')
    return "".join(out)


def check_runtime_stubs(runtime_exports, runtime_implemented, return_types):
    """A stub returns an int in a register: right for cudaError_t, wrong for a
    function returning a pointer, a char, a struct or nothing. Those must be
    implemented by hand. Names no header declares are NVIDIA-internal
    (__cudaGetProcAddress); their stub is never called by nvcc's code."""
    bad = [f"{n} (returns {return_types[n]})" for n in runtime_exports
           if n not in runtime_implemented and n in return_types and return_types[n] != "cudaError_t"]
    if bad:
        raise GenError("runtime functions that cannot be stubs; implement them and list them in "
                       "runtime_implemented.txt: " + ", ".join(bad))


def emit_runtime_unimplemented(exports, implemented):
    out = [banner("//", "Run the generator to change it."),
           "// One stub per exported runtime function that rgpu does not implement:\n"
           "// it logs its name once and returns cudaErrorNotSupported (801, the same\n"
           "// value as CUDA_ERROR_NOT_SUPPORTED). The runtime headers are not included\n"
           "// on purpose: a stub takes no parameters and returns int, which is how a\n"
           "// cudaError_t is returned; the generator only stubs functions that return one.\n",
           '#include "../src/unimplemented.h"\n\n',
           'extern "C" {\n\n']
    for name in exports:
        if name not in implemented:
            out.append(f"RGPU_SHIM_EXPORT int {name}() noexcept {{ "
                       f"return rgpu::shim::report_unimplemented(\"{name}\"); }}\n")
    out.append('}  // extern "C"\n')
    return "".join(out)


# Descriptions whose exact text programs compare against (cudart's own string
# for success is "no error"); every other one is the header's first sentence.
RUNTIME_DESCRIPTION_OVERRIDES = {"cudaSuccess": "no error"}


def emit_runtime_errors(errors):
    errors = sorted(errors, key=lambda e: e[1])
    values = [e[1] for e in errors]
    if len(values) != len(set(values)):
        raise GenError("driver_types.h: two cudaError_t names share a value")
    out = [banner("//", "cudaError_t names and descriptions."),
           "// One {value, name, description} per cudaError enumerator, sorted by value;\n"
           "// the description is the first sentence of driver_types.h's comment on it.\n"
           "// Included inside an array initializer.\n"]
    for name, value, doc in errors:
        text = RUNTIME_DESCRIPTION_OVERRIDES.get(name) or short_description(doc)
        out.append(f"{{{value}, {c_string(name)}, {c_string(text)}}},\n")
    return "".join(out)


def emit_procs_h(headers):
    return banner("//", "The table behind cuGetProcAddress.") + f"""#pragma once

#include <cstddef>

namespace rgpu::shim {{

// The CUDA version (CUDA_VERSION of the headers) that the table describes.
inline constexpr int kDriverProcsCudaVersion = {headers.cuda_version};

// One variant of a driver API: for callers asking for `api` with a CUDA
// version >= `version` (and below the next entry's), `fn` (this library's own
// exported function `symbol`) implements it. Where the API has a per-thread
// default stream twin (_ptds/_ptsz) of this variant, `per_thread_fn` is it,
// introduced at `per_thread_version`. Immutable static data; any thread.
struct DriverProc {{
  const char* api;
  int version;
  const char* symbol;
  void (*fn)();
  const char* per_thread_symbol;
  void (*per_thread_fn)();
  int per_thread_version;
}};

// Sorted by (api as strcmp orders it, version).
extern const DriverProc kDriverProcs[];
extern const std::size_t kDriverProcCount;

}}  // namespace rgpu::shim
"""


def emit_procs_cpp(headers, table, exports):
    # Names the driver's view of cuda.h still defines as macros at its end.
    still_macros = sorted(n for n in exports if n in headers.internal_macros)
    out = [banner("//", "The table behind cuGetProcAddress."),
           "// Each variant comes from a PFN_<api>_v<version>[_ptds|_ptsz] typedef in\n"
           "// cudaTypedefs.h, matched to the exported symbol whose cuda.h prototype has\n"
           "// the same parameters. The driver's view of cuda.h\n"
           "// (__CUDA_API_VERSION_INTERNAL) declares every exported symbol under its\n"
           "// own name, so each address below is taken with its real type.\n",
           "#define __CUDA_API_VERSION_INTERNAL 1\n",
           "#include <cuda.h>\n#include <cudaProfiler.h>\n\n",
           '#include "driver_procs.h"\n\n']
    for n in still_macros:
        out.append(f"#undef {n}\n")
    out.append("#define RGPU_PROC(f) reinterpret_cast<void (*)()>(&f)\n\n")
    out.append("namespace rgpu::shim {\n\nconst DriverProc kDriverProcs[] = {\n")
    for e in table:
        if e.pt_symbol:
            pt = f'"{e.pt_symbol}", RGPU_PROC({e.pt_symbol}), {e.pt_version}'
        else:
            pt = "nullptr, nullptr, 0"
        out.append(f'    {{"{e.api}", {e.version}, "{e.symbol}", RGPU_PROC({e.symbol}), {pt}}},\n')
    out.append("};\n\nconst std::size_t kDriverProcCount = sizeof(kDriverProcs) / sizeof(kDriverProcs[0]);\n\n"
               "}  // namespace rgpu::shim\n")
    return "".join(out)


def c_string(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def short_description(doc):
    text = doc.rstrip(".")
    for prefix in ("This error indicates that ", "This indicates that ", "This error indicates ",
                   "This indicates ", "Indicates that ", "Indiciates "):
        if text.startswith(prefix):
            text = text[len(prefix):]
            break
    return text[:1].lower() + text[1:] if text else "no description"


def emit_errors(headers):
    errors = sorted(headers.errors, key=lambda e: e[1])
    values = [e[1] for e in errors]
    if len(values) != len(set(values)):
        raise GenError("cuda.h: two CUresult names share a value")
    out = [banner("//", "CUresult names and descriptions."),
           "// One {value, name, description} per CUresult enumerator, sorted by value;\n"
           "// the description is the first sentence of cuda.h's comment on it.\n"
           "// Included inside an array initializer.\n"]
    for name, value, doc in errors:
        out.append(f"{{{name}, {c_string(name)}, {c_string(short_description(doc))}}},\n")
    return "".join(out)


def emit_map(node_lists):
    out = [f"/* Generated by {GENERATOR} from the lists in client-shim/api/;\n"
           "   do not edit. Linker version script of librgpu.so: exactly the listed\n"
           "   API names are exported, one version node per API; all else is local. */\n"]
    for i, (node, names) in enumerate(node_lists):
        out.append(f"\n{node} {{\n  global:\n")
        out += [f"    {n};\n" for n in names]
        if i == 0:
            out.append("  local:\n    *;\n")
        out.append("};\n")
    return "".join(out)


def generate(cuda_home, implemented_file=IMPLEMENTED_FILE, runtime_implemented_file=RUNTIME_IMPLEMENTED_FILE):
    headers = Headers(cuda_home)
    exports = read_exports(EXPORTS_FILE)
    implemented = read_implemented(implemented_file, exports)
    runtime_exports = read_exports(RUNTIME_EXPORTS_FILE)
    runtime_implemented = read_implemented(runtime_implemented_file, runtime_exports, "runtime")
    check_runtime_stubs(runtime_exports, runtime_implemented, runtime_return_types(cuda_home))
    missing = [n for n in exports if n not in headers.prototypes]
    if missing:
        raise GenError("exported names with no prototype in cuda.h: " + ", ".join(missing))
    table = build_proc_table(headers, exports)
    check_against_macros(headers, table)
    node_lists = [(node, read_exports(path)) for node, path in VERSION_NODES]
    return {
        "driver_unimplemented.cpp": emit_unimplemented(exports, implemented),
        "driver_procs.h": emit_procs_h(headers),
        "driver_procs.cpp": emit_procs_cpp(headers, table, exports),
        "driver_errors.inc": emit_errors(headers),
        "runtime_unimplemented.cpp": emit_runtime_unimplemented(runtime_exports, runtime_implemented),
        "runtime_errors.inc": emit_runtime_errors(parse_runtime_errors(cuda_home)),
        "librgpu.map": emit_map(node_lists),
    }


def write_files(files, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    for name, text in files.items():
        path = os.path.join(out_dir, name)
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old != text:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)


def check_files(files, out_dir, scratch_dir=None):
    """Regenerates into a scratch folder and compares with out_dir."""
    with tempfile.TemporaryDirectory(dir=scratch_dir) as tmp:
        write_files(files, tmp)
        stale = []
        for name in sorted(files):
            with open(os.path.join(tmp, name), encoding="utf-8") as f:
                fresh = f.read()
            path = os.path.join(out_dir, name)
            old = ""
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    old = f.read()
            if old != fresh:
                stale.append(name)
                diff = difflib.unified_diff(old.splitlines(True), fresh.splitlines(True),
                                            f"checked-in/{name}", f"regenerated/{name}")
                sys.stdout.writelines(list(diff)[:60])
    if stale:
        print(f"gen_api: out of date in {out_dir}: {', '.join(stale)}; run {GENERATOR}")
        return 1
    print(f"gen_api: {out_dir} is up to date ({len(files)} files)")
    return 0


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME") or "/usr/local/cuda")
    ap.add_argument("--out", default=DEFAULT_OUT, help="folder of the generated files")
    ap.add_argument("--implemented", default=IMPLEMENTED_FILE,
                    help="list of hand-implemented names (default: driver_implemented.txt)")
    ap.add_argument("--runtime-implemented", default=RUNTIME_IMPLEMENTED_FILE,
                    help="list of hand-implemented runtime names (default: runtime_implemented.txt)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary folder; fail if --out differs")
    ap.add_argument("--scratch", default=None, help="where --check makes its temporary folder")
    ap.add_argument("--refresh-exports", nargs="?", const="", metavar="STUB_SO",
                    help="rewrite libcuda.exports from a libcuda.so's .dynsym "
                         "(default: CUDA_HOME/lib64/stubs/libcuda.so), then generate")
    ap.add_argument("--refresh-runtime-exports", nargs="?", const="", metavar="CUDART_SO",
                    help="rewrite libcudart.exports from a libcudart.so's .dynsym "
                         "(default: CUDA_HOME/lib64/libcudart.so.13), then generate")
    args = ap.parse_args(argv)
    try:
        if args.refresh_runtime_exports is not None:
            cudart = args.refresh_runtime_exports or os.path.join(args.cuda_home, "lib64", "libcudart.so.13")
            names = read_dynsym_exports(cudart)
            with open(RUNTIME_EXPORTS_FILE, "w", encoding="ascii", newline="\n") as f:
                f.write("".join(n + "\n" for n in names))
            print(f"gen_api: {len(names)} names from {cudart} -> {RUNTIME_EXPORTS_FILE}")
        if args.refresh_exports is not None:
            stub = args.refresh_exports or os.path.join(args.cuda_home, "lib64", "stubs", "libcuda.so")
            names = read_dynsym_exports(stub)
            with open(EXPORTS_FILE, "w", encoding="ascii", newline="\n") as f:
                f.write("".join(n + "\n" for n in names))
            print(f"gen_api: {len(names)} names from {stub} -> {EXPORTS_FILE}")
        files = generate(args.cuda_home, args.implemented, args.runtime_implemented)
        if args.check:
            rc = check_files(files, args.out, args.scratch)
            stub = os.path.join(args.cuda_home, "lib64", "stubs", "libcuda.so")
            if os.path.exists(stub) and read_dynsym_exports(stub) != read_exports(EXPORTS_FILE):
                print(f"gen_api: {EXPORTS_FILE} differs from {stub}; run {GENERATOR} --refresh-exports")
                rc = 1
            cudart = os.path.join(args.cuda_home, "lib64", "libcudart.so.13")
            if os.path.exists(cudart) and read_dynsym_exports(cudart) != read_exports(RUNTIME_EXPORTS_FILE):
                print(f"gen_api: {RUNTIME_EXPORTS_FILE} differs from {cudart}; "
                      f"run {GENERATOR} --refresh-runtime-exports")
                rc = 1
            return rc
        write_files(files, args.out)
        return 0
    except (GenError, OSError) as exc:
        print(f"gen_api: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
