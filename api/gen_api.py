#!/usr/bin/env python3
"""Generates the client library's API surface (stubs, cuGetProcAddress table,
version script, error strings), the generated calls of the driver API (client
entry points, wire packing, the server's dispatch rows) and the lists derived
from the description (rgpud's driver table, the CPU device's exports) from the
CUDA headers and the files beside it.

Inputs (the one source of truth):
  api/libcuda.exports          every name libcuda.so.1 exports, sorted
  api/driver.api               the description of the driver API as
                                           rgpu remotes it (docs/api-description.md)
  api/driver.lock              ordinals of its generated calls (append-only;
                                           also an output: new names are appended)
  tests/apigen/apigen_test.api (+ .lock)   a description used only by tests/apigen
  api/libcudart.exports        every name libcudart.so.13 exports, sorted
  api/runtime.api              the description of the runtime API: the names
                                           implemented by hand (hand; the rest are stubs)
  api/libcudart12.exports      every name libcudart.so.12 (CUDA 12.4) exports, sorted
  api/libcudart12.abi          CUDA 12's runtime prototypes and types (facts
                                           extracted from its headers by --extract-cuda12)
  api/runtime12.api            libcudart.so.12's names that differ from 13's
  $CUDA_HOME/include/{cuda.h,cudaTypedefs.h,cudaProfiler.h,cudaProfilerTypedefs.h}
  $CUDA_HOME/include/{cuda_runtime_api.h,driver_types.h,...} (runtime return types, cudaError_t)

Outputs, in client-shim/generated/ (checked in, never edited by hand):
  driver_unimplemented.cpp  one "not supported" stub per exported, unimplemented name
  driver_procs.h/.cpp       the (name, version) -> own symbol table for cuGetProcAddress
  driver_errors.inc         CUresult names and short descriptions
  runtime_unimplemented.cpp one "not supported" stub per exported, unimplemented runtime name
  runtime_errors.inc        cudaError_t names and short descriptions
  librgpu.map               the linker version script
  driver_implemented.txt    the implemented driver names (from driver.api)
  runtime_implemented.txt   the implemented runtime names (from runtime.api)
  driver_pack.h             ordinals, pack/unpack of every generated call
  runtime12_aliases.ld      libcudart.so.12's names shared with 13, as versioned aliases
  runtime12_unimplemented.cpp  stubs of libcudart.so.12's own unimplemented names
  runtime12_implemented.txt the libcudart.so.12 names that are implemented
  cuda12_types.h            CUDA 12's structs that changed in 13 (rgpu::cuda12)
  driver_calls.cpp          the generated client entry points (sync/async)
and elsewhere:
  server/generated/driver_dispatch.cpp     the server's dispatch rows (find_driver_row)
  server/generated/driver_table.inc        RGPU_DRIVER_REQUIRED/OPTIONAL/EXTENSIONS
  cpu-device/exports.map                   the CPU device's version script
  cpu-device/generated/api_functions.inc   RGPU_CPUDEV_FUNCTIONS/EXTENSIONS: what it exports,
                                           by the names source code uses (tests/cpu-device)
  tests/apigen/generated/apigen_test_{pack.h,dispatch.cpp}  the test description's

Usage:
  gen_api.py [--cuda-home DIR] [--out DIR]           regenerate
  gen_api.py --check                                 fail if regenerating changes anything
                                                     (or the stub library's exports changed)
  gen_api.py --refresh-exports [STUB.so]             rewrite libcuda.exports from the
                                                     stub library's ELF .dynsym
  gen_api.py --refresh-runtime-exports [CUDART.so]   rewrite libcudart.exports from
                                                     libcudart.so.13's ELF .dynsym
  gen_api.py --extract-cuda12 INCLUDE_DIR [--cudart12 CUDART12.so]
                                                     rewrite libcudart12.abi from CUDA 12
                                                     headers (and libcudart12.exports from
                                                     NVIDIA's libcudart.so.12), then generate

The header reading (a small preprocessor, prototypes, PFN typedefs, ELF) is
in cuda_headers.py beside this file. Python 3 standard library only.
"""

import argparse
import difflib
import os
import re
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
from cuda_headers import (GENERATOR, GenError, Headers, banner, parse_prototype_params,  # noqa: E402
                          parse_runtime_errors, read_dynsym_exports, read_exports, runtime_return_types,
                          strip_comments, x_macro)
import api_description  # noqa: E402
import gen_calls  # noqa: E402
import libraries  # noqa: E402
import gen_library_calls  # noqa: E402
import runtime_abi  # noqa: E402
from runtime12 import RUNTIME12_NODE, extract_cuda12, runtime12_files  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHIM_DIR = os.path.join(ROOT, "client-shim")
DEFAULT_OUT = os.path.join(SHIM_DIR, "generated")
EXPORTS_FILE = os.path.join(HERE, "libcuda.exports")
DRIVER_API_FILE = os.path.join(HERE, "driver.api")
RUNTIME_EXPORTS_FILE = os.path.join(HERE, "libcudart.exports")
RUNTIME_API_FILE = os.path.join(HERE, "runtime.api")

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




# --------------------------------------------------------------------------
# Output.



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
        raise GenError("runtime functions that cannot be stubs; implement them and mark them hand in "
                       "runtime.api: " + ", ".join(bad))


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


def emit_map(node_lists, unversioned=()):
    out = [f"/* Generated by {GENERATOR} from the lists in api/;\n"
           "   do not edit. Linker version script of librgpu.so: exactly the listed\n"
           "   API names are exported, one version node per API; all else is local. */\n"]
    if unversioned:
        out.append(library_map_comment(unversioned))
    for i, (node, names) in enumerate(node_lists):
        out.append(f"\n{node} {{\n")
        if names:
            out.append("  global:\n")
        out += [f"    {n};\n" for n in names]
        if i == 0:
            out.append(library_map_locals(unversioned))
        out.append("};\n")
    return "".join(out)


def library_map_comment(unversioned):
    return ("/* The names NVIDIA exports unversioned (NCCL, NVML: "
            f"{len(unversioned)} names, listed in\n"
            "   api/libnccl.so.2.exports and libnvidia-ml.so.1.exports) are in\n"
            "   no node: nothing here makes them local, and the library is linked with\n"
            "   -fvisibility=hidden and --exclude-libs,ALL, so every other symbol is\n"
            "   hidden already; the C++ names and rgpu's own (rgpu_cudart12_*) are made\n"
            "   local. */\n")


def library_map_locals(unversioned):
    if not unversioned:
        return "  local:\n    *;\n"
    return "  local:\n    _Z*;\n    rgpu_*;\n"


DESCRIPTIONS = [
    dict(source="api/driver.api", lock="api/driver.lock",
         pack="protocol/generated/driver_pack.h", pack_include="driver_pack.h",
         namespace="rgpu::apigen::driver", client="client-shim/generated/driver_calls.cpp",
         rows="server/generated/driver_dispatch.cpp", find="find_driver_row", rows_namespace="rgpu::server"),
    dict(source="tests/apigen/apigen_test.api", lock="tests/apigen/apigen_test.lock",
         pack="tests/apigen/generated/apigen_test_pack.h", pack_include="apigen_test_pack.h",
         namespace="rgpu::apigen::test", client=None,
         rows="tests/apigen/generated/apigen_test_dispatch.cpp", find="find_test_row",
         rows_namespace="rgpu::server::apigen_test"),
]


def emit_table_inc(functions):
    required, optional, seen = [], [], {}
    for fn in functions:
        if not fn.server:
            continue
        if fn.table_name in seen:
            raise GenError(f"{fn.name} and {seen[fn.table_name]} are both the table's {fn.table_name}")
        seen[fn.table_name] = fn.name
        (required if fn.server == "required" else optional).append(fn.table_name)
    extensions = [fn.name for fn in functions if fn.extension]
    return (banner("//", "The functions of rgpud's driver table (server=).") +
            "// Included by server/include/rgpu/server/driver_table.h. Each name is the one\n"
            "// cuda.h maps to the exported symbol, so X(cuMemAlloc) resolves cuMemAlloc_v2.\n"
            "// A missing required function fails the load; an optional one is null, as\n"
            "// are the CPU device's extensions (declared in rgpu/cpudev/extensions.h)\n"
            "// with any other driver.\n\n" +
            x_macro("RGPU_DRIVER_REQUIRED", required) + "\n" + x_macro("RGPU_DRIVER_OPTIONAL", optional) +
            "\n" + x_macro("RGPU_DRIVER_EXTENSIONS", extensions))


def emit_cpu_functions_inc(functions, headers):
    """The CPU device's exports by the names source code uses: each cu* symbol
    marked cpu under the API name cuda.h maps to it, once (cuDeviceGetUuid_v2
    as cuDeviceGetUuid; the older cuDeviceGetUuid, which no name reaches, is
    left out), and the extensions."""
    names, extensions = [], []
    for fn in functions:
        if not fn.cpu:
            continue
        if fn.extension:
            extensions.append(fn.name)
            continue
        name = api_description.api_name(fn.name, headers)
        if name is not None and name not in names:
            names.append(name)
    return (banner("//", "The CPU device's exported functions (cpu).") +
            "// RGPU_CPUDEV_FUNCTIONS: by the names cuda.h maps to the exported symbols, so\n"
            "// X(cuMemAlloc) stands for cuMemAlloc_v2 wherever cuda.h is included;\n"
            "// RGPU_CPUDEV_EXTENSIONS: rgpu's own (rgpu/cpudev/extensions.h). Used by\n"
            "// tests/cpu-device/cuda_lib.h to resolve the library as rgpud does.\n\n" +
            x_macro("RGPU_CPUDEV_FUNCTIONS", names) + "\n" + x_macro("RGPU_CPUDEV_EXTENSIONS", extensions))


def emit_cpu_map(functions):
    out = [f"/* Generated by {GENERATOR} from api/driver.api (the\n"
           "   functions marked cpu); do not edit. The CPU device exports exactly the\n"
           "   driver API entry points it implements, under the names libcuda.so.1 uses\n"
           "   for the default (legacy stream) ABI, and rgpu's own extensions. */\n{\n  global:\n"]
    out += [f"    {fn.name};\n" for fn in functions if fn.cpu]
    out.append("  local: *;\n};\n")
    return "".join(out)


def emit_implemented(functions, api="driver"):
    return (banner("#", f"Implemented {api} names (not stubs), from {api}.api.") +
            "".join(f"{fn.name}\n" for fn in sorted(functions, key=lambda f: f.name)
                    if fn.where != "stub" and not fn.extension))


EXTENSIONS_HEADER = os.path.join(ROOT, "cpu-device", "include", "rgpu", "cpudev", "extensions.h")


def learn_extensions(headers):
    """Adds the prototypes of rgpu's own extensions (extensions.h) to those
    of cuda.h, for `extension` options on generated lines."""
    with open(EXTENSIONS_HEADER, encoding="utf-8") as f:
        text = strip_comments(f.read())
    for sym, named in parse_prototype_params(text, r"\bCUresult\s+(rgpu\w+)\s*\(").items():
        if sym in headers.params:
            raise GenError(f"{EXTENSIONS_HEADER}: {sym} is also a cuda.h name")
        headers.params[sym] = named


def generate_calls(headers, exports):
    """{path relative to the repository: text} of every description's outputs."""
    files = {}
    driver = None
    learn_extensions(headers)
    for d in DESCRIPTIONS:
        functions = api_description.read_description(os.path.join(ROOT, d["source"]), exports)
        api_description.resolve(functions, headers)
        lock = api_description.read_lock(os.path.join(ROOT, d["lock"]))
        lock = api_description.assign_ordinals(functions, lock)
        files[d["lock"]] = api_description.emit_lock(lock, d["source"])
        gen_calls.PACK_NAMESPACES[d["pack_include"]] = d["namespace"]
        files[d["pack"]] = gen_calls.emit_pack_h(functions, d["source"], d["namespace"])
        # The extents' helpers (rgpu_pitch_bytes, ...) that dev= expressions name.
        files[d["rows"]] = gen_calls.emit_rows(functions, d["source"], d["pack_include"], d["find"],
                                               d["rows_namespace"], "DRIVER",
                                               local_includes=("rgpu/protocol/library_sizes.h",))
        if d["client"]:
            try:
                files[d["client"]] = gen_calls.emit_client(functions, d["source"], d["namespace"],
                                                           "driver_pack.h", headers.public.macros)
            except ValueError as exc:
                raise GenError(f"{d['source']}: {exc}")
        if driver is None:
            driver = functions
            table = {fn.table_name for fn in functions if fn.server}
        else:
            for fn in functions:
                if fn.generated and api_description.table_name(fn.name, headers) not in table:
                    raise GenError(f"{d['source']}: {fn.name} is not in the driver table (server= in driver.api)")
    files["server/generated/driver_table.inc"] = emit_table_inc(driver)
    files["cpu-device/exports.map"] = emit_cpu_map(driver)
    files["cpu-device/generated/api_functions.inc"] = emit_cpu_functions_inc(driver, headers)
    files["client-shim/generated/driver_implemented.txt"] = emit_implemented(driver)
    return files, {fn.name for fn in driver if fn.where != "stub" and not fn.extension}


def generate(cuda_home):
    headers = Headers(cuda_home)
    exports = read_exports(EXPORTS_FILE)
    call_files, implemented = generate_calls(headers, exports)
    runtime_exports = read_exports(RUNTIME_EXPORTS_FILE)
    runtime = api_description.read_description(RUNTIME_API_FILE, runtime_exports, api_description.RUNTIME)
    runtime_implemented = {fn.name for fn in runtime if fn.where != "stub"}
    check_runtime_stubs(runtime_exports, runtime_implemented, runtime_return_types(cuda_home))
    missing = [n for n in exports if n not in headers.prototypes]
    if missing:
        raise GenError("exported names with no prototype in cuda.h: " + ", ".join(missing))
    table = build_proc_table(headers, exports)
    check_against_macros(headers, table)
    runtime12, node12 = runtime12_files(cuda_home, runtime_exports, runtime_implemented)
    node_lists = [(node, read_exports(path)) for node, path in VERSION_NODES] + [(RUNTIME12_NODE, node12)]
    libs = libraries.load_all()
    library_nodes, unversioned = libraries.version_nodes(libs)
    shim = {
        "driver_unimplemented.cpp": emit_unimplemented(exports, implemented),
        "driver_procs.h": emit_procs_h(headers),
        "driver_procs.cpp": emit_procs_cpp(headers, table, exports),
        "driver_errors.inc": emit_errors(headers),
        "runtime_unimplemented.cpp": emit_runtime_unimplemented(runtime_exports, runtime_implemented),
        "runtime_errors.inc": emit_runtime_errors(parse_runtime_errors(cuda_home)),
        "librgpu.map": emit_map(node_lists + library_nodes, unversioned),
        "runtime_implemented.txt": emit_implemented(runtime, "runtime"),
    }
    files = {f"client-shim/generated/{n}": t for n, t in shim.items()}
    files.update(call_files)
    files.update(runtime12)
    files.update(generate_library_calls(libs))
    return files


def generate_library_calls(libs):
    """The libraries' generated calls first (they settle what is implemented),
    then their stubs, lists and sonames."""
    files = gen_library_calls.generate(libs)
    files.update(libraries.generate(libs))
    return files


def place(files, out_dir):
    """Maps repository paths to where they are written: client-shim/generated/
    goes to out_dir (--out), everything else to its place in the tree."""
    placed = {}
    for rel, text in files.items():
        if rel.startswith("client-shim/generated/"):
            placed[os.path.join(out_dir, rel[len("client-shim/generated/"):])] = text
        else:
            placed[os.path.join(ROOT, rel)] = text
    return placed


def write_files(placed):
    for path, text in placed.items():
        os.makedirs(os.path.dirname(path), exist_ok=True)
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old != text:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)


def check_files(placed):
    """Compares what regenerating would write with what is there."""
    stale = []
    for path in sorted(placed):
        fresh = placed[path]
        old = ""
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                old = f.read()
        if old != fresh:
            rel = os.path.relpath(path, ROOT)
            stale.append(rel)
            diff = difflib.unified_diff(old.splitlines(True), fresh.splitlines(True),
                                        f"checked-in/{rel}", f"regenerated/{rel}")
            sys.stdout.writelines(list(diff)[:60])
    if stale:
        print(f"gen_api: out of date: {', '.join(stale)}; run {GENERATOR}")
        return 1
    print(f"gen_api: up to date ({len(placed)} files)")
    return 0


def refresh_library_facts(cuda12_root, cuda13_root):
    roots = {"cuda12": cuda12_root, "cuda13": cuda13_root}
    for name in libraries.LIBRARY_FILES:
        lib = libraries.read_library(os.path.join(HERE, name))
        print(f"gen_api: {name}: {libraries.refresh_facts(lib, roots)}")


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuda-home", default=os.environ.get("CUDA_HOME") or "/usr/local/cuda")
    ap.add_argument("--out", default=DEFAULT_OUT, help="folder of the generated files")
    ap.add_argument("--check", action="store_true",
                    help="regenerate into a temporary folder; fail if --out differs")
    ap.add_argument("--scratch", default=None, help="unused; kept for existing callers")
    ap.add_argument("--refresh-exports", nargs="?", const="", metavar="STUB_SO",
                    help="rewrite libcuda.exports from a libcuda.so's .dynsym "
                         "(default: CUDA_HOME/lib64/stubs/libcuda.so), then generate")
    ap.add_argument("--refresh-runtime-exports", nargs="?", const="", metavar="CUDART_SO",
                    help="rewrite libcudart.exports from a libcudart.so's .dynsym "
                         "(default: CUDA_HOME/lib64/libcudart.so.13), then generate")
    ap.add_argument("--refresh-library-facts", action="store_true",
                    help="rewrite the libraries' <soname>.exports and .decls from their headers "
                         "(CUDA 12: --cuda12-root; CUDA 13: --cuda-home), then generate")
    ap.add_argument("--cuda12-root", default=libraries.DEFAULT_ROOTS["cuda12"],
                    help="a CUDA 12 tree with include/ and the libraries (Debian's nvidia-cuda-dev)")
    ap.add_argument("--extract-cuda12", metavar="INCLUDE_DIR",
                    help="rewrite libcudart12.abi from a directory of CUDA 12 headers "
                         "(cuda_runtime_api.h, driver_types.h, ...), then generate")
    ap.add_argument("--cudart12", metavar="CUDART12_SO",
                    help="with --extract-cuda12: also rewrite libcudart12.exports from "
                         "NVIDIA's libcudart.so.12's .dynsym")
    args = ap.parse_args(argv)
    try:
        if args.refresh_library_facts:
            refresh_library_facts(args.cuda12_root, args.cuda_home)
        if args.extract_cuda12:
            extract_cuda12(args.extract_cuda12, args.cudart12)
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
        placed = place(generate(args.cuda_home), args.out)
        if args.check:
            rc = check_files(placed)
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
        write_files(placed)
        return 0
    except (GenError, OSError) as exc:
        print(f"gen_api: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
