"""Reads an API description (api/*.api) and its lock file, and
joins them with the prototypes the headers give: the model the call
generators (gen_calls.py) emit from. The format is specified in
docs/api-description.md.

Python 3 standard library only.
"""

import re

from cuda_headers import GenError, split_top_level

# Where a function runs (the second word of a line).
WHERE = {
    "stub": "not implemented: a generated stub answers not supported",
    "hand": "implemented by hand in client-shim/src (and server/src when remoted)",
    "local": "answered on the client by hand-written code, no call to the server",
    "sync": "generated: one round trip",
    "async": "generated: one-way, batched; an error surfaces at the next sync call",
    "extension": "not a libcuda name: rgpu's own export of the CPU device",
    "per_thread": "generated: a _ptsz/_ptds name, its plain name's entry point on the per-thread default stream",
}
GENERATED = ("sync", "async")

# Handle kinds by name, as protocol/include/rgpu/protocol/handles.h numbers them.
HANDLE_KINDS = {
    "context": "kContext", "stream": "kStream", "event": "kEvent", "module": "kModule",
    "function": "kFunction", "library": "kLibrary", "kernel": "kKernel",
}
# The C type that names each kind, for parameters left unannotated.
HANDLE_TYPES = {
    "CUcontext": "context", "CUstream": "stream", "CUevent": "event", "CUmodule": "module",
    "CUfunction": "function", "CUlibrary": "library", "CUkernel": "kernel",
}
SCALAR_TYPES = {
    "int", "unsigned int", "unsigned", "short", "unsigned short", "char", "unsigned char", "signed char",
    "long", "unsigned long", "long long", "unsigned long long", "size_t", "float", "double",
    "CUdevice", "CUdevice_v1", "cuuint32_t", "cuuint64_t", "CUdeviceptr", "CUdeviceptr_v2",
}
FUNCTION_OPTIONS = ("server", "cpu", "status", "stream", "quick", "extension", "after", "syncs")
# The driver's own options: `after=<function>` a client hook that runs once a
# sync call succeeded on the server and decides its final result
# (client-shim/src/call_hooks.h); `syncs` marks a call that reports the
# errors of earlier one-way work, as CUDA's synchronizing calls do.
# A library's own options (libraries.py): `as=` the name rgpud calls in the
# server's library, `sets_mode=` the parameter that sets the handle's pointer
# mode (the client keeps it for `scalar=` parameters).
# `check=<function>(<parameters>)` a hand-written check of the whole call that
# rgpud runs after the generated ones (cuBLASLt's pointers inside descriptors).
LIBRARY_OPTIONS = ("status", "stream", "quick", "as", "sets_mode", "check", "server")


class Api:
    """What one API's description may say: its status type (the default of
    status=), the `where` words and options its lines may use, and the
    library whose exported names it describes."""

    def __init__(self, name, library, status, wheres, options):
        self.name, self.library, self.status = name, library, status
        self.wheres, self.options = wheres, options


DRIVER = Api("driver", "libcuda.so.1", "CUresult", tuple(WHERE), FUNCTION_OPTIONS)
# The runtime is written by hand on top of the driver API: its description
# says which names are implemented (the rest are generated stubs). Generated
# runtime calls and the CPU device's options do not apply.
RUNTIME = Api("runtime", "libcudart.so.13", "cudaError_t", ("stub", "hand", "local"), ("status",))
PARAM_ATTRS = ("in", "out", "inout", "opt", "len", "cstr", "struct", "dev", "scalar", "handle", "create",
               "destroy", "parent", "refuse", "ptrs", "each", "mask", "own_context")


class Param:
    """One parameter of a generated function, resolved from its C type and
    its annotation."""

    def __init__(self, ctype, name):
        self.ctype, self.name = ctype, name
        self.direction = "in"
        self.kind = None        # scalar | handle | dev | buffer | cstr
        self.opt = False        # a pointer the caller may pass as NULL
        self.len = None         # C expression of the byte length (buffer, dev)
        self.handle = None      # handle kind name
        self.create = None      # destroy function of a created handle
        self.parent = None      # parameter naming the created handle's parent
        self.destroy = False
        self.refuse = None      # the code a failed check answers, when not the usual one
        self.enum = None        # {enumerator: value} when the type is a header enum
        self.value_type = ctype  # the pointee for pointer parameters
        self.kind_expr = None   # C++ HandleKind of a handle parameter
        self.mode_of = None     # scalar=: the handle parameter whose pointer mode says host or device
        self.accepts = []       # a library handle: other kind numbers it accepts (@handle accepts=)
        self.descriptor = None  # kind "desc": the library's Descriptor (a client-side attribute bag)
        self.ptrs = None        # ptrs=: (count, bytes of each) of an array of device pointers in device memory
        self.mask = None        # mask=: the flag bits an in-scalar may have (a C expression); others are refused
        self.own_context = False  # own_context: a handle of the calling context's only (rgpud checks its parent)

    @property
    def pointer(self):
        return self.ctype.endswith("*")


class Function:
    def __init__(self, name, where, lineno, status="CUresult"):
        self.name, self.where, self.lineno = name, where, lineno
        self.server = None      # required | optional | None
        self.cpu = False
        self.quick = False      # never waits for device work: may run on the transport's thread
        self.extension = where == "extension"  # rgpu's own name (rgpu/cpudev/extensions.h), not the API's
        self.status = status
        self.stream = None      # parameter that orders the call
        self.params = []        # [Param] for generated functions
        self.notes = {}         # raw annotations by parameter name
        self.ordinal = None
        self.table_name = None  # the driver-table field (the API name cuda.h maps to it)
        self.server_name = None  # a library's: the name rgpud calls (as=; default: the same)
        self.sets_mode = None   # a library's: the parameter that sets its handle's pointer mode
        self.check = None       # (function, [parameter]) of its hand-written whole-call check (rgpud)
        self.after = None       # the driver's: client hook run after the call succeeded (after=)
        self.syncs = False      # the driver's: reports earlier one-way work's errors (syncs)
        self.plain = None       # per_thread: the plain name it runs

    @property
    def generated(self):
        return self.where in GENERATED

    @property
    def per_thread(self):
        return self.name.endswith("_ptsz") or self.name.endswith("_ptds")


def _split_attrs(text):
    """'out,len=count*sizeof(float),opt' -> [('out', None), ('len', 'count*...'), ('opt', None)],
    splitting at commas outside brackets (an empty part stays, to be refused)."""
    out = []
    for p in split_top_level(text):
        key, _, value = p.partition("=")
        out.append((key.strip(), value.strip() if _ else None))
    return out


def read_description(path, exports, api=DRIVER):
    """Parses `path`, a description of `api`; returns [Function] in file order."""
    exported = set(exports) if exports is not None else None
    functions, seen = [], set()
    with open(path, encoding="ascii") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line or line.startswith("@"):  # a library's own lines (libraries.py)
                continue
            where_at = f"{path}:{lineno}"
            words = line.split()
            if len(words) < 2:
                raise GenError(f"{where_at}: expected '<function> <where> [options] [param:attrs]'")
            name, where = words[0], words[1]
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise GenError(f"{where_at}: not a C function name: {name!r}")
            if where not in api.wheres:
                raise GenError(f"{where_at}: {name}: where must be one of {', '.join(api.wheres)}"
                               f" in the {api.name} API's description")
            if name in seen:
                raise GenError(f"{where_at}: {name} described twice")
            seen.add(name)
            fn = Function(name, where, lineno, api.status)
            for w in words[2:]:
                if ":" in w:
                    pname, _, attrs = w.partition(":")
                    if pname in fn.notes:
                        raise GenError(f"{where_at}: {name}: parameter {pname} annotated twice")
                    fn.notes[pname] = (_split_attrs(attrs), where_at)
                    continue
                key, _, value = w.partition("=")
                if key not in api.options:
                    raise GenError(f"{where_at}: {name}: unknown option {key!r} in the {api.name} API's description")
                if key == "server":
                    if value not in ("required", "optional"):
                        raise GenError(f"{where_at}: {name}: server=required|optional")
                    fn.server = value
                elif key == "cpu":
                    fn.cpu = True
                elif key == "quick":
                    fn.quick = True
                elif key == "extension":
                    fn.extension = True
                elif key == "status":
                    if value != api.status:
                        raise GenError(f"{where_at}: {name}: status={value}: the {api.name} API's status "
                                       f"type is {api.status}")
                    fn.status = value
                elif key == "stream":
                    fn.stream = value
                elif key == "as":
                    fn.server_name = value
                elif key == "sets_mode":
                    fn.sets_mode = value
                elif key == "after":
                    if not re.fullmatch(r"[A-Za-z_]\w*", value):
                        raise GenError(f"{where_at}: {name}: after=<client hook function>")
                    fn.after = value
                elif key == "syncs":
                    fn.syncs = True
                elif key == "check":
                    m = re.fullmatch(r"([A-Za-z_]\w*)\(([\w,]*)\)", value)
                    if not m:
                        raise GenError(f"{where_at}: {name}: check=<function>(<parameter>,...)")
                    fn.check = (m.group(1), [a for a in m.group(2).split(",") if a])
            if exported is not None and fn.extension == (name in exported):
                raise GenError(f"{where_at}: {name}: " + (f"an extension must not be a {api.library} name"
                                                          if fn.extension else
                                                          f"not a name {api.library} exports"))
            if fn.extension and where not in ("extension", "sync"):
                raise GenError(f"{where_at}: {name}: an extension is remoted as a sync call or not at all")
            if fn.extension and fn.server:
                raise GenError(f"{where_at}: {name}: an extension is in rgpud's table as one (no server=)")
            if fn.quick and fn.where != "sync":
                raise GenError(f"{where_at}: {name}: quick is for sync functions")
            if (fn.after or fn.syncs) and fn.where != "sync":
                raise GenError(f"{where_at}: {name}: after= and syncs are for sync functions")
            if where == "per_thread":
                if not fn.per_thread:
                    raise GenError(f"{where_at}: {name}: per_thread is for a _ptsz or _ptds name")
                if len(words) > 2:
                    raise GenError(f"{where_at}: {name}: a per_thread line takes nothing more (its plain name's says it)")
                fn.plain = re.sub(r"_pt(sz|ds)$", "", name)
            if fn.notes and not fn.generated:
                raise GenError(f"{where_at}: {name}: parameter annotations only on sync/async functions")
            if fn.generated and fn.per_thread:
                raise GenError(f"{where_at}: {name}: a per-thread variant is a per_thread line (its plain name's call)")
            if fn.generated and fn.server is None and not fn.extension:
                fn.server = "optional"  # the row calls the driver through the table
            functions.append(fn)
    return functions


def resolve(functions, headers):
    """Joins generated functions with their prototypes; fills in table names."""
    by_name = {fn.name: fn for fn in functions}
    for fn in functions:
        if fn.where == "per_thread":
            plain = by_name.get(fn.plain)
            if plain is None or plain.where in ("stub", "per_thread"):
                raise GenError(f"line {fn.lineno}: {fn.name}: its plain name {fn.plain} is not implemented here")
            if fn.plain not in headers.params:
                raise GenError(f"line {fn.lineno}: {fn.name}: no prototype of {fn.plain} in cuda.h")
            fn.params = [Param(ctype, pname) for ctype, pname in headers.params[fn.plain]]
            continue
        if (fn.generated and not fn.extension and not fn.per_thread and hasattr(headers, "public")
                and api_name(fn.name, headers) is None):
            # An old name cuda.h maps to a newer variant (cuEventDestroy ->
            # cuEventDestroy_v2): rgpud serves it by the newer one.
            if fn.server == "required":
                raise GenError(f"line {fn.lineno}: {fn.name}: an old name is in rgpud's table as its newer variant")
            fn.server, fn.server_name = None, headers.public.expand_name(fn.name)
        if fn.server:
            fn.table_name = table_name(fn.name, headers)
        if not fn.generated:
            continue
        if fn.name not in headers.params:
            raise GenError(f"line {fn.lineno}: {fn.name}: no prototype in "
                           + ("rgpu/cpudev/extensions.h" if fn.extension else "cuda.h"))
        names = {n for _, n in headers.params[fn.name]}
        for pname, (_, at) in fn.notes.items():
            if pname not in names:
                raise GenError(f"{at}: {fn.name} has no parameter {pname}")
        if fn.check and any(a not in names for a in fn.check[1]):
            raise GenError(f"line {fn.lineno}: {fn.name}: check= names a parameter it does not have")
        if fn.stream and fn.stream not in names:
            raise GenError(f"line {fn.lineno}: {fn.name}: stream={fn.stream} is not a parameter")
        for ctype, pname in headers.params[fn.name]:
            if pname is None:
                raise GenError(f"line {fn.lineno}: {fn.name}: cuda.h leaves a parameter unnamed")
            fn.params.append(_resolve_param(fn, ctype, pname, headers))
        for p in fn.params:
            given = {k for k, _ in fn.notes.get(p.name, ([], None))[0]}
            if p.mask is None and "mask" in given:
                raise GenError(f"line {fn.lineno}: {fn.name}({p.name}): mask= is for an integer in-argument")
            if not p.own_context and "own_context" in given:
                raise GenError(f"line {fn.lineno}: {fn.name}({p.name}): own_context is for a handle")
            if p.parent and p.parent not in names:
                raise GenError(f"line {fn.lineno}: {fn.name}: parent={p.parent} is not a parameter")
        if fn.where == "async" and any(p.direction != "in" and not p.create for p in fn.params):
            raise GenError(f"line {fn.lineno}: {fn.name}: an async call cannot have out-arguments")
        if fn.stream and next(p for p in fn.params if p.name == fn.stream).handle != "stream":
            raise GenError(f"line {fn.lineno}: {fn.name}: stream={fn.stream} is not a CUstream")


def _resolve_param(fn, ctype, name, headers):
    # A library's headers object (libraries.LibraryHeaders) widens what a
    # parameter may be: its own handle types, more scalar types, device
    # pointers typed as host pointers (const float* A) and scalar=.
    handle_types = getattr(headers, "handle_types", HANDLE_TYPES)
    handle_kinds = getattr(headers, "handle_kinds", {k: f"HandleKind::{v}" for k, v in HANDLE_KINDS.items()})
    scalar_types = getattr(headers, "scalar_types", SCALAR_TYPES)
    library = getattr(headers, "library", False)
    p = Param(ctype, name)
    attrs, at = fn.notes.get(name, ([], f"line {fn.lineno}"))
    where = f"{at}: {fn.name}({name})"
    keys = {}
    for key, value in attrs:
        if key not in PARAM_ATTRS:
            raise GenError(f"{where}: unknown annotation {key!r}")
        keys[key] = value
    for d in ("in", "out", "inout"):
        if d in keys:
            p.direction = d
    p.opt = "opt" in keys
    if "refuse" in keys:
        if not re.fullmatch(r"CUDA_ERROR_[A-Z_]+", keys["refuse"] or ""):
            raise GenError(f"{where}: refuse=CUDA_ERROR_...")
        p.refuse = keys["refuse"]
    if "scalar" in keys:
        if not library:
            raise GenError(f"{where}: scalar=<handle> (host-or-device scalar) is for a library's description")
        if not p.pointer or not keys["scalar"]:
            raise GenError(f"{where}: scalar=<handle parameter> is a pointer whose pointer mode the handle says")
        pointee = re.sub(r"\s*\*$", "", ctype).replace("const ", "").strip()
        p.kind, p.mode_of = "hostdev", keys["scalar"]
        p.len = keys.get("len") or (None if pointee == "void" else f"sizeof({pointee})")
        if not p.len:
            raise GenError(f"{where}: a void* scalar needs len=<bytes>")
        p.value_type = pointee
        return p
    base = ctype.replace("const ", "").strip()
    descriptors = getattr(headers, "descriptors", {})
    if base in descriptors and not p.pointer:
        # A descriptor the client keeps (cuBLASLt's): sent whole, rebuilt by rgpud.
        if set(keys) - {"in"}:
            raise GenError(f"{where}: a descriptor parameter takes no annotation")
        p.kind, p.descriptor = "desc", descriptors[base]
        return p
    if "handle" in keys or (not p.pointer and base in handle_types):
        p.kind = "handle"
        p.handle = keys.get("handle") or handle_types.get(base.rstrip(" *"))
        if p.handle not in handle_kinds:
            raise GenError(f"{where}: handle={p.handle}: kinds are {', '.join(handle_kinds)}")
        p.kind_expr = handle_kinds[p.handle]
        if "create" in keys:
            if not keys["create"]:
                raise GenError(f"{where}: create=<destroy function>")
            if not p.pointer or p.direction == "in":
                raise GenError(f"{where}: create needs an out pointer to the handle")
            p.create, p.parent = keys["create"], keys.get("parent")
        elif p.pointer:
            raise GenError(f"{where}: a handle by pointer is an out handle: say create=<destroy function>")
        p.destroy = "destroy" in keys
        p.own_context = "own_context" in keys
        if p.own_context and (p.create or p.destroy or p.handle in ("stream", "context")):
            raise GenError(f"{where}: own_context is for an in-handle a context owns")
        p.value_type = base.rstrip(" *") if p.pointer else base
        p.accepts = [] if p.destroy or p.create else getattr(headers, "handle_accepts", {}).get(p.handle, [])
        return p
    if "ptrs" in keys:
        # An array of device pointers that itself lives in device memory (a
        # batched call's Aarray): rgpud checks the array, then every pointer
        # in it (server/src/pointer_array.h).
        if not library or not p.pointer or not keys["ptrs"] or not keys.get("each") or "dev" in keys:
            raise GenError(f"{where}: ptrs=<count>,each=<bytes> is a library's array of device pointers")
        if p.opt:
            raise GenError(f"{where}: an array of device pointers is never NULL")
        p.kind, p.ptrs = "dev", (keys["ptrs"], keys["each"])
        p.len = f"rgpu_array_bytes({keys['ptrs']},8)"
        return p
    if "each" in keys:
        raise GenError(f"{where}: each= goes with ptrs=")
    if "dev" in keys:
        if (p.pointer and not library) or p.direction != "in":
            raise GenError(f"{where}: dev is an in device pointer (CUdeviceptr by value; a library's may be typed)")
        p.kind, p.len = "dev", keys["dev"] or keys.get("len") or "0"
        if p.opt and not library:
            raise GenError(f"{where}: an opt device pointer is a library's (NULL with an extent of 0)")
        return p
    if not p.pointer:
        if base in ("CUdeviceptr", "CUdeviceptr_v2"):
            p.kind, p.len = "dev", "0"  # a device address is always checked against the ledger
        elif base in scalar_types or base in headers.enums:
            p.kind = "scalar"
            p.enum = headers.enums.get(base)
        else:
            raise GenError(f"{where}: type {ctype} cannot be generated; annotate or implement by hand")
        if p.direction != "in":
            raise GenError(f"{where}: a value parameter is an in-argument")
        if "mask" in keys:
            if p.kind != "scalar" or p.enum or not keys["mask"]:
                raise GenError(f"{where}: mask=<flag bits> is for an integer in-argument")
            p.mask = keys["mask"]
        return p
    pointee = re.sub(r"\s*\*$", "", ctype).strip()
    pointee_base = pointee.replace("const ", "").strip()
    if "cstr" in keys:
        p.kind = "cstr"
        if p.direction == "in" and pointee_base != "char":
            raise GenError(f"{where}: cstr in-argument must be a const char*")
        if p.direction == "out" and pointee_base != "char *":
            raise GenError(f"{where}: cstr out-argument must be a const char**")
        if p.direction == "inout":
            raise GenError(f"{where}: cstr is in or out")
        return p
    if p.direction == "in" and "len" not in keys and "struct" not in keys:
        raise GenError(f"{where}: pointer parameter: say out/inout, len=<bytes>, struct or cstr")
    if "len" in keys or "struct" in keys:
        p.kind = "buffer"
        p.len = keys.get("len") or f"sizeof({pointee_base})"
        if "len" in keys and not keys["len"]:
            raise GenError(f"{where}: len=<C expression of the byte count>")
        p.value_type = pointee
        return p
    if pointee_base in scalar_types or pointee_base in headers.enums:
        p.kind = "scalar"
        p.value_type = pointee_base
        p.enum = headers.enums.get(pointee_base)
        return p
    raise GenError(f"{where}: out-argument of type {ctype}: say len=<bytes> or struct")


def api_name(symbol, headers):
    """The name source code calls `symbol` by: the API name that cuda.h
    maps to it (cuMemAlloc for cuMemAlloc_v2), else itself; None when cuda.h
    maps its own name to a newer variant (cuCtxDestroy -> cuCtxDestroy_v2)."""
    base = re.sub(r"_v\d+$", "", symbol)
    if base != symbol and headers.public.expand_name(base) == symbol:
        return base
    if headers.public.expand_name(symbol) == symbol:
        return symbol
    return None


def table_name(symbol, headers):
    """The name the server's driver table uses for `symbol` (api_name)."""
    name = api_name(symbol, headers)
    if name is None:
        raise GenError(f"{symbol}: cuda.h maps no API name to it; the driver table cannot name it")
    return name


# --------------------------------------------------------------------------
# The lock file: name -> ordinal, append-only.

def read_lock(path):
    """[(name, ordinal)]; ordinals must run 1, 2, 3, ... in file order, so a
    removed, moved or renumbered line is an error, never a silent change."""
    entries = []
    try:
        f = open(path, encoding="ascii")
    except FileNotFoundError:
        return entries
    with f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.fullmatch(r"([A-Za-z_]\w*)\s+(\d+)", line)
            if not m:
                raise GenError(f"{path}:{lineno}: expected '<name> <ordinal>'")
            name, ordinal = m.group(1), int(m.group(2))
            if ordinal != len(entries) + 1:
                raise GenError(f"{path}:{lineno}: {name} has ordinal {ordinal}, expected {len(entries) + 1}: "
                               "the lock is append-only (never remove, move or renumber a line)")
            if any(n == name for n, _ in entries):
                raise GenError(f"{path}:{lineno}: {name} locked twice")
            entries.append((name, ordinal))
    return entries


def assign_ordinals(functions, lock):
    """Gives every generated function its locked ordinal, appending new
    names at the end; returns the new lock."""
    lock = list(lock)
    by_name = dict(lock)
    for fn in functions:
        if not fn.generated:
            continue
        if fn.name not in by_name:
            by_name[fn.name] = len(lock) + 1
            lock.append((fn.name, by_name[fn.name]))
        fn.ordinal = by_name[fn.name]
    return lock


def emit_lock(lock, description):
    out = [f"# Ordinals of the generated calls of {description} (Call.invoke.function).\n"
           "# Maintained by api/gen_api.py: a new name is appended; a line\n"
           "# is never removed, moved or renumbered, so old clients and servers agree.\n"]
    out += [f"{name} {ordinal}\n" for name, ordinal in lock]
    return "".join(out)
