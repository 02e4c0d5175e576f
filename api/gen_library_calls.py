"""The generated calls of the CUDA libraries (the `sync`/`async` lines of
cublas.api, ...): the model's view of a library's facts (LibraryHeaders),
the client's entry points, rgpud's function tables and the dispatch rows'
style. The wire form and the rows themselves are gen_calls.py's, shared
with the driver. Format: docs/api-description.md.

Python 3 standard library only.
"""

import os
import re

from cuda_headers import GenError
import api_description
import gen_calls
import libraries

SCALARS = api_description.SCALAR_TYPES | {
    "long long int", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t"}


class LibraryHeaders:
    """What api_description.resolve asks of a header, answered from a
    library's committed facts (the client's ABI: its first soname)."""

    library = True

    def __init__(self, lib):
        self.lib = lib
        self.enums = lib.enums
        self.scalar_types = SCALARS
        self.handle_types = dict(api_description.HANDLE_TYPES, cudaStream_t="stream", cudaEvent_t="event")
        self.handle_kinds = {k: f"HandleKind::{v}" for k, v in api_description.HANDLE_KINDS.items()}
        self.handle_accepts = {}
        for ctype, (kind, number) in lib.handles.items():
            self.handle_types[ctype] = kind
            self.handle_kinds[kind] = f"static_cast<HandleKind>({number})"
            self.handle_accepts[kind] = lib.accepts.get(ctype, [])
        self.descriptors = lib.descriptors
        self.params = {}
        for name in lib.exports():
            _, params = lib.decl(name)
            self.params[name] = [_split_param(p) for p in params]


def _split_param(text):
    """'const float* alpha' -> ('const float*', 'alpha')."""
    m = re.fullmatch(r"(.*?)\s*\b([A-Za-z_]\w*)\s*(\[\s*\])?", text)
    if not m or not m.group(1) or m.group(1).strip() in ("const", "unsigned", "struct"):
        return (text, None)
    ctype = m.group(1).strip() + ("*" if m.group(3) else "")
    return (ctype.replace(" *", "*"), m.group(2))


def namespace(lib):
    return f"rgpu::apigen::{lib.name}"


def table_type(lib):
    return lib.name[:1].upper() + lib.name[1:] + "Table"


def header_of(lib):
    return {"cublas": "<cublas_api.h>", "cublasLt": "<cublasLt.h>", "cufft": "<cufftXt.h>", "cusolver": "<cusolverDn.h>"}.get(lib.name, f"<{lib.name}.h>")


def generated(lib):
    return [fn for fn in lib.functions if fn.generated]


def prepare(lib):
    """Resolves the generated functions of `lib` against its facts; gives
    them their ordinals. Returns the new lock, or None when it has none."""
    if not generated(lib):
        return None
    headers = LibraryHeaders(lib)
    for fn in lib.functions:
        # server= on a hand or local line: rgpud's hand-written row calls it through
        # the library's table (cuDNN's backend and batch norm calls).
        fn.hand_server = fn.where in ("hand", "local") and fn.server is not None
        fn.server = None  # a library's table is its own, not the driver's
    api_description.resolve(lib.functions, headers)
    default = [s for s in lib.sonames if s.default]
    for fn in generated(lib):
        # The server calls the default (newest) soname's library: the client's
        # prototype must be that one's, or the line must say how it maps.
        if default and fn.name in default[0].decls and fn.server_name is None:
            if default[0].decls[fn.name] != lib.decl(fn.name):
                raise GenError(f"{lib.rel}:{fn.lineno}: {fn.name} differs between {lib.sonames[0].name} and "
                               f"{default[0].name}; map it (as=) or refuse it (stub)")
        fn.table_name = fn.server_name or fn.name
        for p in fn.params:
            if p.kind == "hostdev":
                handle = next((q for q in fn.params if q.name == p.mode_of), None)
                if handle is not None and handle.kind == "desc":
                    if not any(a.enumerator.endswith("_POINTER_MODE") for a in handle.descriptor.attributes):
                        raise GenError(f"{lib.rel}:{fn.lineno}: {fn.name}({p.name}): {handle.ctype} has no "
                                       "pointer mode attribute")
                    continue  # the descriptor's pointer mode says host or device
                if handle is None or handle.kind != "handle":
                    raise GenError(f"{lib.rel}:{fn.lineno}: {fn.name}({p.name}): scalar={p.mode_of} is no handle")
                getter = lib.pointer_mode.get(handle.ctype)
                if not getter:
                    raise GenError(f"{lib.rel}:{fn.lineno}: {fn.name}: {handle.ctype} has no pointer_mode= getter")
        if fn.sets_mode and fn.sets_mode not in {p.name for p in fn.params}:
            raise GenError(f"{lib.rel}:{fn.lineno}: {fn.name}: sets_mode={fn.sets_mode} is not a parameter")
    lock_path = os.path.join(libraries.HERE, f"{lib.name}.lock")
    lock = api_description.read_lock(lock_path)
    return api_description.assign_ordinals(lib.functions, lock)


def server_functions(lib):
    """The names rgpud's table resolves: every generated call's, the destroy
    functions of created handles, the pointer-mode getters."""
    names = []
    for fn in generated(lib):
        names.append(fn.table_name)
        names += [p.create for p in fn.params if p.create]
    names += sorted(set(lib.pointer_mode.values()))
    names += [fn.name for fn in lib.functions if getattr(fn, "hand_server", False)]
    for d in lib.descriptors.values():  # what rgpud rebuilds descriptors with
        names += [d.create, d.set, d.destroy]
    out = []
    for n in names:
        if n not in out:
            out.append(n)
    return out


def server_decl(lib, name):
    """The declaration rgpud calls `name` by: the default soname's (the
    library it loads), else the client's."""
    for s in lib.sonames:
        if s.default and name in s.decls:
            return s.decls[name]
    return lib.decl(name)


def row_style(lib):
    codes = {k: lib.codes[k] for k in ("invalid", "not_supported")}
    t = f"::rgpu::server::{table_type(lib)}"
    return gen_calls.RowStyle(
        codes["invalid"], codes["invalid"], codes["invalid"], codes["not_supported"], "(*lib_)",
        table_setup=[f"const auto* lib_ = ::rgpu::server::library_table<{t}>(env_);",
                     f"if (!lib_) return refuse(kApi, {codes['not_supported']}, \"{lib.name}: not on this server\");"],
        missing="not in this server's library", success="0", what=lib.name)


def add_row_checks(lib):
    """The check of every scalar= parameter: the handle's pointer mode on the
    server is the one the client packed by (else the library would read a
    device address as host memory, or the reverse)."""
    for fn in generated(lib):
        checks = []
        descs = [p for p in fn.params if p.kind == "desc"]
        if descs:
            # The library's own descriptors, rebuilt from the checked bags;
            # destroyed through the table when the row returns.
            checks.append("::rgpu::server::LtDescriptors lt_(*lib_);")
        for p in descs:
            checks += [f"const auto {p.name}_r_ = lt_.{p.descriptor.name}({p.name});",
                       f"if (!{p.name}_r_) return refuse(kApi, lt_.status(), \"{fn.name}: {p.name}: the library "
                       "refused the descriptor\");"]
        for p in fn.params:
            if p.kind != "hostdev":
                continue
            handle = next(q for q in fn.params if q.name == p.mode_of)
            if handle.kind == "desc":
                checks += [f"if (::rgpu::protocol::lt::pointer_mode({handle.name}) != {p.name}_mode_)",
                           f"  return refuse(kApi, {lib.codes['invalid']}, \"{fn.name}: {p.name}: the descriptor's "
                           "pointer mode is not the one the client packed by\");"]
                continue
            getter = lib.pointer_mode[handle.ctype]
            mode_type = lib.decl(getter)[1][1].rsplit(" ", 1)[0].rstrip("*").replace("const ", "").strip()
            checks += [f"{{  // {p.name}: host or device as the handle's pointer mode says",
                       f"  {mode_type} m_{{}};",
                       f"  if (!lib_->{getter} || lib_->{getter}({handle.name}, &m_) != 0 ||",
                       f"      static_cast<uint32_t>(m_) != {p.name}_mode_)",
                       f"    return refuse(kApi, {lib.codes['invalid']}, \"{fn.name}: {p.name}: the handle's pointer "
                       "mode is not the one the client packed by\");",
                       "}"]
        fn.row_checks = checks


# --------------------------------------------------------------------------
# The client's entry points.

def emit_client(lib):
    gen = generated(lib)
    invalid, failed = lib.codes["invalid"], lib.codes["failed"]
    ns = namespace(lib)
    out = [libraries.banner(lib),
           f"// The exported {lib.name} functions whose client side is generated: argument\n"
           "// checks, the runtime's current context, client-minted handles, the pointer\n"
           "// mode of scalar= arguments, the packing into one Call.invoke record, and\n"
           "// for a sync call the round trip and the unpacking of its reply.\n",
           f"#include {header_of(lib)}\n\n#include <cstdint>\n#include <span>\n#include <vector>\n\n",
           '#include "../src/library_calls.h"\n',
           '#include "../src/cublaslt.h"\n' if lib.descriptors else "",
           f'#include "{lib.name}_pack.h"\n#include "rgpu/protocol/codec.h"\n\n',
           "namespace {\n\nnamespace wire = ::rgpu::wire;\n"
           f"namespace calls = ::{ns};\nusing ::rgpu::protocol::HandleKind;\n"
           f"constexpr auto kApi = wire::Api::{lib.wire};\n\n"
           "auto invoke(uint32_t function, const std::vector<std::byte>& args, bool sync) {\n"
           "  return [&args, function, sync](wire::Call::Builder call) {\n"
           "    ::rgpu::protocol::set_invoke(call, kApi, function, args, sync);\n"
           "  };\n}\n\n}  // namespace\n\n"]
    for fn in gen:
        out.append(_client_function(lib, fn, invalid, failed))
    return "".join(out)


def _route(fn):
    """The device router's choice for a generated call (docs/transport.md,
    "Several servers"): the server of the first library handle it names
    (one made by the call itself is made in the current context), else of
    its stream, else of the first device address, else the current
    context's."""
    handles = [p for p in fn.params
               if p.kind == "handle" and p.handle != "stream" and not p.create]
    streams = [p for p in fn.params if p.kind == "handle" and p.handle == "stream"]
    devs = [p for p in fn.params if p.kind == "dev"]
    if handles:
        how = f"shim->route_handle({handles[0].name}_w_, ctx_)"
    elif streams:
        how = f"shim->route_handle({streams[0].name}_w_, ctx_)"
    elif devs:
        how = f"shim->route_pointer(reinterpret_cast<uintptr_t>({devs[0].name}), ctx_)"
    else:
        how = "shim->route_current(ctx_)"
    return f"    const ::rgpu::shim::Route route_ = {how};"


def _client_function(lib, fn, invalid, failed):
    ret = lib.status
    params = ", ".join(f"{p.ctype} {p.name}" for p in fn.params) or "void"
    B = [f"RGPU_EXPORT {ret} {fn.name}({params}) {{", "  try {",
         "    ::rgpu::shim::Shim* shim = nullptr;", "    uint64_t ctx_ = 0;",
         f"    if (!::rgpu::shim::library_enter(&shim, &ctx_)) return {failed};"]
    wire_args, after = [], []
    for p in fn.params:
        n = p.name
        if p.kind == "desc":
            # The client's own descriptor (client-shim/src/cublaslt.cpp), sent whole.
            B.append(f"    const ::rgpu::protocol::lt::Desc* {n}_d_ = ::rgpu::shim::lt_desc({n});")
            B.append(f"    if (!{n}_d_) return {invalid};")
            wire_args.append(f"{n}_d_")
        elif p.create:
            B.append(f"    if (!{n}) return {invalid};")
            B.append(f"    const uint64_t {n}_w_ = shim->mint_handle({p.kind_expr});")
            wire_args.append(f"{n}_w_")
            after.append(f"    shim->add_handle({n}_w_, {p.kind_expr});")
            after.append(f"    *{n} = reinterpret_cast<{p.value_type}>(static_cast<uintptr_t>({n}_w_));")
        elif p.kind == "handle" and p.handle == "stream":
            B.append(f"    uint64_t {n}_w_ = 0;")
            B.append(f"    if (::rgpu::shim::stream_handle(shim, {n}, &{n}_w_) != CUDA_SUCCESS) return {invalid};")
            wire_args.append(f"{n}_w_")
        elif p.kind == "handle":
            B.append(f"    const uint64_t {n}_w_ = ::rgpu::shim::handle_of({n});")
            if p.destroy:
                B.append(f"    if (!shim->remove_handle({n}_w_, {p.kind_expr})) return {invalid};")
            wire_args.append(f"{n}_w_")
        elif p.kind == "dev":
            wire_args.append(f"reinterpret_cast<uintptr_t>({n})")
        elif p.kind == "hostdev":
            handle = next(q for q in fn.params if q.name == p.mode_of)
            length = _client_expr(p.len, fn)
            B.append(f"    if (!{n} || static_cast<uint64_t>({length}) > calls::kMaxScalarBytes) return {invalid};")
            if handle.kind == "desc":
                B.append(f"    const uint32_t {n}_mode_ = ::rgpu::protocol::lt::pointer_mode(*{handle.name}_d_);")
            else:
                B.append(f"    const uint32_t {n}_mode_ = shim->handle_mode(::rgpu::shim::handle_of({handle.name}));")
            wire_args += [n, f"{n}_mode_"]
        else:
            if p.pointer and not p.opt and p.direction != "in":
                B.append(f"    if (!{n}) return {invalid};")
            elif p.kind == "buffer" and not p.opt:
                B.append(f"    if (!{n} && ({p.len}) != 0) return {invalid};")
            wire_args.append(n)
    if fn.sets_mode:
        handle = next(p for p in fn.params if p.kind == "handle")
        after.append(f"    shim->set_handle_mode({handle.name}_w_, static_cast<uint32_t>({fn.sets_mode}));")
    B.append(_route(fn))
    B.append("    ::rgpu::protocol::ArgWriter args_;")
    B.append(f"    calls::pack_{fn.name}({', '.join(['args_'] + wire_args)});")
    if fn.where == "async":
        B.append(f"    route_.client->call_async(route_.ctx, invoke(calls::k_{fn.name}, args_.bytes(), false));")
        B += after
        B.append("    return static_cast<" + ret + ">(0);")
    else:
        B.append(f"    std::vector<std::byte> reply_(calls::kMaxReply_{fn.name});")
        B.append("    uint64_t got_ = 0;")
        B.append(f"    ::rgpu::shim::SyncResult r_ = route_.client->call_sync(route_.ctx, "
                 f"invoke(calls::k_{fn.name}, args_.bytes(), true), {{}},")
        B.append("        ::rgpu::shim::OutBuffer{reply_.data(), reply_.size(), &got_});")
        B.append(f"    if (r_.code != 0) return static_cast<{ret}>(::rgpu::shim::library_status(r_, kApi, {failed}));")
        B.append("    ::rgpu::protocol::ArgReader reply_reader_(std::span<const std::byte>(reply_.data(), got_));")
        B.append(f"    if (!calls::unpack_{fn.name}({', '.join(['reply_reader_'] + wire_args)})) return {failed};")
        B += after
        B.append("    return static_cast<" + ret + ">(0);")
    B += ["  } catch (...) {", f"    return {failed};", "  }", "}", "", ""]
    return "\n".join(B)


def _client_expr(expr, fn):
    """A length expression as the client evaluates it: a descriptor parameter
    names the client's bag (what the row's variable of that name is)."""
    for p in fn.params:
        if p.kind == "desc":
            expr = re.sub(rf"\b{p.name}\b", f"(*{p.name}_d_)", expr)
    return expr


# --------------------------------------------------------------------------
# The descriptors' attributes (@descriptor, @attribute): one table both sides
# read, the client to set and get with cuBLASLt's sizes, rgpud to decode.

def emit_descriptors_h(lib):
    out = [f"// Generated by {libraries.GENERATOR} from {lib.rel}; do not edit.\n"
           "// The attributes of the descriptors the client keeps as attribute bags\n"
           "// (rgpu/protocol/lt_desc.h): each one's value, size, signedness, default\n"
           "// and flags. Values are cublasLt.h's (CUDA 12's and 13's).\n"
           "#pragma once\n\n#include <cstdint>\n\n"
           "namespace rgpu::protocol::lt::attr {\n\n"]
    for d in lib.descriptors.values():
        out.append(f"// {d.ctype} ({d.enum})\n"
                   f"inline constexpr uint32_t k{d.name.capitalize()} = {d.number};\n")
    out.append("\n")
    for d in lib.descriptors.values():
        for a in d.attributes:
            out.append(f"inline constexpr uint32_t {a.enumerator} = {a.value};\n")
    out.append("\n}  // namespace rgpu::protocol::lt::attr\n")
    out.append("\n// X(descriptor kind, enumerator, value, bytes, signed, is float, device, refused, default)\n"
               "#define RGPU_LT_ATTRIBUTES(X) \\\n")
    rows = []
    for d in lib.descriptors.values():
        for a in d.attributes:
            size, signed = libraries.ATTRIBUTE_TYPES[a.type]
            default = a.default
            if default.startswith("-"):
                default = f"static_cast<uint64_t>(int64_t{{{default}}})"
            elif default.lower().startswith("0x") and len(default) > 10:
                default = default + "ull"
            rows.append(f"  X({d.number}, {a.enumerator}, {a.value}, {size}, {str(signed).lower()}, "
                        f"{str(a.type == 'float').lower()}, {str('device' in a.flags).lower()}, "
                        f"{str('refused' in a.flags).lower()}, {default})")
    out.append(" \\\n".join(rows) + "\n")
    return "".join(out)


# --------------------------------------------------------------------------
# rgpud's tables and the rows' lookup.

def emit_tables_h(libs):
    out = [f"// Generated by {libraries.GENERATOR} from api/*.api; do not edit.\n"
           "// The function tables of the remoted libraries: one struct per library with\n"
           "// a pointer per function its description marks server-side (generated\n"
           "// calls, the destroy functions of created handles, pointer-mode getters),\n"
           "// typed by the CUDA 13 headers, which are the ABI rgpud calls. Loaded by\n"
           "// LibraryTables (server/src/library_tables.h) on first use.\n"
           "#pragma once\n\n"]
    out += [f"#include {header_of(lib)}\n" for lib in libs]
    out.append("\n#include <cstddef>\n#include <tuple>\n#include <type_traits>\n\nnamespace rgpu::server {\n\n")
    for i, lib in enumerate(libs):
        fns = server_functions(lib)
        out.append(f"// {lib.name}: NVIDIA's {lib.server.get('cuda', '?')} with --device cuda, "
                   f"{lib.server.get('cpu', '?')} with the CPU device.\n")
        out.append(f"struct {table_type(lib)} {{\n"
                   f"  static constexpr size_t kIndex = {i};\n")
        for n in fns:
            ret, params = server_decl(lib, n)
            out.append(f"  std::add_pointer_t<{ret}({', '.join(params)})> {n} = nullptr;\n")
        out.append("\n  // dlsym's every function of `dl`; a missing one stays null.\n"
                   "  template <class Resolve>\n  void resolve(Resolve&& sym) {\n")
        out += [f"    {n} = reinterpret_cast<decltype({n})>(sym(\"{n}\"));\n" for n in fns]
        out.append("  }\n};\n\n")
    out.append("// Each library: its wire API, its name, and the file rgpud loads for it.\n"
               "struct LibraryInfo {\n  const char* name;\n  const char* cuda;  // NVIDIA's, by soname\n"
               "  const char* cpu;   // rgpu's CPU stand-in, found next to rgpud\n};\n"
               "inline constexpr LibraryInfo kLibraries[] = {\n")
    for lib in libs:
        out.append(f"    {{\"{lib.name}\", \"{lib.server.get('cuda', '')}\", \"{lib.server.get('cpu', '')}\"}},\n")
    out.append("};\ninline constexpr size_t kLibraryCount = sizeof(kLibraries) / sizeof(kLibraries[0]);\n\n")
    out.append("// The table types, by index.\nusing LibraryTableTypes = std::tuple<"
               + ", ".join(table_type(lib) for lib in libs) + ">;\n\n")
    out.append("}  // namespace rgpu::server\n")
    return "".join(out)


def emit_library_rows_h(libs):
    out = [f"// Generated by {libraries.GENERATOR} from api/*.api; do not edit.\n"
           "// The dispatch rows of the remoted libraries, by API (dispatch.cpp's find_row).\n"
           "#pragma once\n\n#include <cstddef>\n#include <cstdint>\n\n#include \"rgpu.capnp.h\"\n\n"
           "namespace rgpu::server {\n\nstruct DispatchRow;\n\n"]
    for lib in libs:
        out.append(f"const DispatchRow* find_{lib.name}_row(uint32_t function);\n"
                   f"const DispatchRow* find_{lib.name}_row_at(size_t i);\n")
    out.append("\n// The row of a library's call, or null (an API with no generated calls).\n"
               "inline const DispatchRow* find_library_row(wire::Api api, uint32_t function) {\n"
               "  switch (api) {\n")
    for lib in libs:
        out.append(f"    case wire::Api::{lib.wire}: return find_{lib.name}_row(function);\n")
    out.append("    default: return nullptr;\n  }\n}\n\n}  // namespace rgpu::server\n")
    return "".join(out)


def emit_handle_kinds(libs):
    """protocol/generated/handle_kinds.h: every library handle kind, from
    the descriptions' @handle and @kind lines; one number names one kind."""
    seen = {}
    rows = []
    for lib in libs:
        named = [(name, number, f"{ctype}") for ctype, (name, number) in lib.handles.items()]
        named += [(name, number, "minted by hand-written code") for name, number in lib.hand_kinds.items()]
        for name, number, what in named:
            if number in seen:
                raise GenError(f"{lib.rel}: handle kind {number} ({name}) is {seen[number]}'s already")
            seen[number] = name
            rows.append((number, name, what, lib.rel))
    out = [f"// Generated by {libraries.GENERATOR} from api/*.api (@handle and @kind lines);\n"
           "// do not edit. The handle kinds of the remoted libraries (the top byte of\n"
           "// a handle, rgpu/protocol/handles.h), one number per kind.\n"
           "#pragma once\n\n#include <cstdint>\n\nnamespace rgpu::protocol::handle_kinds {\n\n"]
    for number, name, what, rel in sorted(rows):
        const = "k" + name[0].upper() + name[1:]
        out.append(f"inline constexpr uint8_t {const} = {number};  // {what} ({rel})\n")
    out.append("\n}  // namespace rgpu::protocol::handle_kinds\n")
    return "".join(out)


def generate(libs):
    files = {"protocol/generated/handle_kinds.h": emit_handle_kinds(libs)}
    remoted = []
    for lib in libs:
        lock = prepare(lib)
        if lock is None:
            continue
        add_row_checks(lib)
        lib.remoted = True
        remoted.append(lib)
        source = lib.rel
        files[f"api/{lib.name}.lock"] = api_description.emit_lock(lock, source)
        pack_include = f"{lib.name}_pack.h"
        gen_calls.PACK_NAMESPACES[pack_include] = namespace(lib)
        files[f"protocol/generated/{lib.name}_pack.h"] = gen_calls.emit_pack_h(
            lib.functions, source, namespace(lib),
            includes=(header_of(lib), "<cuda.h>", '"rgpu/protocol/library_sizes.h"')
            + (('"rgpu/protocol/lt_desc.h"',) if lib.descriptors else ()))
        files[f"server/generated/{lib.name}_dispatch.cpp"] = gen_calls.emit_rows(
            lib.functions, source, pack_include, f"find_{lib.name}_row", "rgpu::server", lib.wire,
            style=row_style(lib), includes=(header_of(lib), "<cuda.h>"),
            local_includes=("library_tables.h", "rgpu/protocol/library_sizes.h")
            + (("cublaslt_descs.h",) if lib.descriptors else ())
            + (("pointer_array.h",) if any(p.ptrs for fn in generated(lib) for p in fn.params) else ())
            + (("cusolver_checks.h",) if lib.name == "cusolver" else ()))
        files[f"client-shim/generated/{lib.name}_calls.cpp"] = emit_client(lib)
        if lib.descriptors:  # one library has them: rgpu/protocol/lt_desc.h reads this file
            files["protocol/generated/lt_attributes.h"] = emit_descriptors_h(lib)
    files["server/generated/library_tables_gen.h"] = emit_tables_h(remoted)
    files["server/generated/library_rows.h"] = emit_library_rows_h(remoted)
    files["server/generated/library_rows.cmake"] = (
        f"# Generated by {libraries.GENERATOR} from api/*.api; do not edit.\n"
        "# The dispatch rows of the remoted libraries (server/CMakeLists.txt).\n"
        "set(RGPU_SERVER_LIBRARY_ROWS\n"
        + "".join(f"    ${{CMAKE_CURRENT_LIST_DIR}}/{lib.name}_dispatch.cpp\n" for lib in remoted) + ")\n")
    return files
