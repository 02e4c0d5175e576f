"""The CUDA libraries librgpu.so exports (cuBLAS, cuBLASLt, cuDNN, cuSPARSE,
cuFFT, cuRAND, cuSOLVER, NCCL, NVTX, NVML): one description each
(api/<library>.api), the facts extracted from NVIDIA's headers
(<soname>.exports, <soname>.decls), and what gen_api.py makes of them: a
stub per unimplemented name, the version nodes of the linker map, the
symlinks of the sonames. The format is in docs/api-description.md.

Python 3 standard library only.
"""

import os
import re

from cuda_headers import GENERATOR, GenError, read_dynsym_exports, split_top_level
import api_description
import library_headers

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# The descriptions, in the order their nodes appear in the linker map.
LIBRARY_FILES = ("cublas.api", "cublasLt.api", "cudnn.api", "cusparse.api", "cufft.api", "curand.api",
                 "cusolver.api", "nccl.api", "nvtx.api", "nvml.api", "nvrtc.api")

# Where `from=` finds a toolkit at refresh time: include/ and the library
# folder the `check=` paths are relative to. CUDA 12's is a folder where
# Debian trixie's nvidia-cuda-dev, libnvidia-ml-dev and the libraries'
# packages are unpacked (RGPU_CUDA12_ROOT); only a refresh of the facts
# needs it, never a build or --check.
DEFAULT_ROOTS = {"cuda12": os.environ.get("RGPU_CUDA12_ROOT", "/var/cache/rgpu/cuda12/usr"),
                 "cuda13": "/usr/local/cuda"}

# Return types a stub can answer without knowing the library: a zero of the
# type (C ABI: the value comes back in the same register whatever the
# parameters were).
_ZERO_RETURNS = {"int", "unsigned", "unsigned int", "size_t", "float", "double", "int64_t", "uint64_t",
                 "long", "unsigned long", "long long", "unsigned long long"}
_COMPLEX_RETURNS = {"cuComplex": "float", "cuDoubleComplex": "double"}


class Soname:
    """One soname the library is exported under, and where its facts come from."""

    def __init__(self, name, node, default, source, headers, check, defines):
        self.name = name            # libcublas.so.12
        self.node = node            # its version node, or None: NVIDIA's names are unversioned
        self.default = default      # the node programs get without asking (name@@node)
        self.source = source        # cuda12 | cuda13
        self.headers = headers      # header files under <root>/include
        self.check = check          # NVIDIA's library, relative to <root>, for the cross-check
        self.defines = defines      # [ {macro: value} ]: each header pass
        self.enum_headers = []      # more headers whose enums the declarations use
        self.exports = []           # sorted names (the facts)
        self.decls = {}             # name -> (return type, [parameter text])
        self.enums = {}             # enum typedef -> {enumerator: value}, as this soname's headers say

    @property
    def stem(self):
        return os.path.join(HERE, self.name)


class Library:
    """One description: the library's status codes, sonames and functions."""

    def __init__(self, path):
        self.path = path
        self.name = os.path.splitext(os.path.basename(path))[0]     # cublas
        self.wire = "NONE"          # its wire::Api enumerator
        self.status = None          # cublasStatus_t
        self.codes = {}             # not_supported / invalid / failed -> enumerator
        self.prefixes = []
        self.sonames = []
        self.enums = {}             # enum typedef -> {enumerator: value}
        self.functions = []         # [api_description.Function]
        self.server = {}            # cuda / cpu -> library file rgpud loads
        self.handles = {}           # C type -> (kind name, kind number)
        self.hand_kinds = {}        # kind name -> number: handles minted by hand-written code (@kind)
        self.pointer_mode = {}      # handle C type -> the function that reads its pointer mode
        self.accepts = {}           # handle C type -> [other kind numbers a parameter of it accepts]
        self.descriptors = {}       # C type -> Descriptor (client-side attribute bags, cuBLASLt's)
        self.attributes = []        # [Attribute] of the descriptors, in file order
        self.status_aliases = set()  # other names of the status type (cublas.h's cublasStatus)
        # A front (nvrtc.api): NVIDIA's library serves the program; rgpu builds a
        # small library under its soname that forwards every name to it except
        # the hand-written ones. Not part of librgpu.so: no stubs, no map node,
        # no symlink.
        self.front = False

    @property
    def rel(self):
        return os.path.relpath(self.path, ROOT)

    def code(self, which):
        """The value of the status enumerator named for `which`."""
        name = self.codes[which]
        values = self.enums.get(self.status, {})
        if name not in values:
            raise GenError(f"{self.rel}: {which}={name} is no {self.status} value")
        return values[name]

    def exports(self):
        """Every name any soname exports, once, sorted."""
        return sorted({n for s in self.sonames for n in s.exports})

    def decl(self, name):
        """The declaration of `name`: the first soname's that has it (the
        client's ABI is the oldest soname's)."""
        for s in self.sonames:
            if name in s.decls:
                return s.decls[name]
        raise GenError(f"{self.rel}: {name}: no declaration in the facts")


class Descriptor:
    """A descriptor type the client keeps as an attribute bag (@descriptor):
    sent whole with the calls that take it, rebuilt on the server."""

    def __init__(self, ctype, name, number, enum, create, destroy, set_fn, lineno):
        self.ctype, self.name, self.number, self.enum = ctype, name, number, enum
        self.create, self.destroy, self.set, self.lineno = create, destroy, set_fn, lineno
        self.attributes = []        # [Attribute]


# The value types an @attribute may have: (bytes, signed, C++ type).
ATTRIBUTE_TYPES = {
    "int8_t": (1, True), "int32_t": (4, True), "uint32_t": (4, False), "int64_t": (8, True),
    "uint64_t": (8, False), "float": (4, False), "pointer": (8, False),
}
ATTRIBUTE_FLAGS = ("refused", "device")


class Attribute:
    """One attribute of a descriptor (@attribute): its enumerator, value type,
    default and what rgpu does with it."""

    def __init__(self, enumerator, vtype, default, flags, lineno):
        self.enumerator, self.type, self.default, self.flags = enumerator, vtype, default, flags
        self.lineno = lineno
        self.value = None           # the enumerator's value (resolved against the facts)
        self.descriptor = None      # its Descriptor


def _options(words, where):
    out = {}
    for w in words:
        key, eq, value = w.partition("=")
        out[key] = value if eq else True
    return out


def read_library(path):
    """Parses the @ lines of a description; the function lines are read by
    api_description.read_description once the exports are known."""
    lib = Library(path)
    with open(path, encoding="ascii") as f:
        for lineno, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line.startswith("@"):
                continue
            where = f"{lib.rel}:{lineno}"
            words = line.split()
            kind, opts = words[0], _options(words[1:], where)
            if kind == "@library":
                lib.wire = opts.get("api", "NONE")
                lib.status = opts.get("status")
                lib.prefixes = opts.get("prefixes", lib.name).split(",")
                lib.status_aliases = set(opts.get("status_aliases", "").split(",")) - {""}
                lib.front = "front" in opts
                for k in ("not_supported", "invalid", "failed"):
                    if k in opts:
                        lib.codes[k] = opts[k]
                if not lib.status or ("not_supported" not in lib.codes and lib.status != "none"):
                    raise GenError(f"{where}: @library needs status= and not_supported= (status=none:"
                                   " every name is implemented)")
            elif kind == "@soname":
                if len(words) < 2 or "=" in words[1]:
                    raise GenError(f"{where}: @soname <soname> node=<node>|none from=<toolkit> headers=<h,...>")
                defines = [{}] + [{d: "1"} for d in opts.get("defines", "").split(",") if d]
                node = opts.get("node", words[1])
                lib.sonames.append(Soname(words[1], None if node == "none" else node, "default" in opts,
                                          opts.get("from", "cuda12"), opts.get("headers", "").split(","),
                                          opts.get("check"), defines))
                lib.sonames[-1].enum_headers = [h for h in opts.get("enums", "").split(",") if h]
            elif kind == "@server":
                lib.server = {k: v for k, v in opts.items() if k in ("cuda", "cpu")}
            elif kind == "@handle":
                if len(words) < 2 or "kind" not in opts or "name" not in opts:
                    raise GenError(f"{where}: @handle <C type> name=<kind name> kind=<number from 16>")
                number = int(opts["kind"])
                if number < 16 or number > 255:
                    raise GenError(f"{where}: library handle kinds are 16..255 (protocol/handles.h)")
                lib.handles[words[1]] = (opts["name"], number)
                if "pointer_mode" in opts:
                    lib.pointer_mode[words[1]] = opts["pointer_mode"]
                if "accepts" in opts:
                    others = [int(k) for k in opts["accepts"].split(",")]
                    if any(k < 16 or k > 255 or k == number for k in others):
                        raise GenError(f"{where}: accepts=<other library handle kinds, 16..255>")
                    lib.accepts[words[1]] = others
            elif kind == "@kind":
                if len(words) < 2 or "=" in words[1] or "kind" not in opts:
                    raise GenError(f"{where}: @kind <kind name> kind=<number from 16>")
                number = int(opts["kind"])
                if number < 16 or number > 255:
                    raise GenError(f"{where}: library handle kinds are 16..255 (protocol/handles.h)")
                lib.hand_kinds[words[1]] = number
            elif kind == "@descriptor":
                need = ("name", "kind", "attributes", "create", "destroy", "set")
                if len(words) < 2 or any(k not in opts for k in need):
                    raise GenError(f"{where}: @descriptor <C type> name=<name> kind=<1..255> attributes=<enum type> "
                                   "create=<fn> destroy=<fn> set=<fn>")
                number = int(opts["kind"])
                if not 1 <= number <= 255 or any(d.number == number for d in lib.descriptors.values()):
                    raise GenError(f"{where}: descriptor kinds are 1..255, one per descriptor")
                lib.descriptors[words[1]] = Descriptor(words[1], opts["name"], number, opts["attributes"],
                                                       opts["create"], opts["destroy"], opts["set"], lineno)
            elif kind == "@attribute":
                if len(words) < 3 or words[2] not in ATTRIBUTE_TYPES:
                    raise GenError(f"{where}: @attribute <enumerator> <{'|'.join(ATTRIBUTE_TYPES)}> "
                                   f"[default=<value>] [{' '.join(ATTRIBUTE_FLAGS)}]")
                flags = [w for w in words[3:] if not w.startswith("default=")]
                if any(f not in ATTRIBUTE_FLAGS for f in flags):
                    raise GenError(f"{where}: attribute flags are {', '.join(ATTRIBUTE_FLAGS)}")
                lib.attributes.append(Attribute(words[1], words[2], opts.get("default", "0"), flags, lineno))
            else:
                raise GenError(f"{where}: unknown directive {kind}")
    if lib.status is None:
        raise GenError(f"{lib.rel}: no @library line")
    if not lib.sonames:
        raise GenError(f"{lib.rel}: no @soname line")
    if sum(1 for s in lib.sonames if s.default) > 1:
        raise GenError(f"{lib.rel}: more than one default soname")
    return lib


# --------------------------------------------------------------------------
# Facts: <soname>.exports (sorted names) and <soname>.decls (one declaration
# per exported name, then the enums they use), written by --refresh-library-facts.

def refresh_facts(lib, roots):
    """Reads the headers (and NVIDIA's library) of every soname of `lib`
    and writes its facts files; returns a line of what changed."""
    notes = []
    for s in lib.sonames:
        root = roots.get(s.source)
        if not root:
            raise GenError(f"{lib.rel}: no toolkit for from={s.source}")
        inc = os.path.join(root, "include")
        paths = [os.path.join(inc, h) for h in s.headers]
        for p in paths:
            if not os.path.exists(p):
                raise GenError(f"{p} not found (--cuda12-root / --cuda-home)")
        decls = library_headers.declarations(paths, lib.prefixes, s.defines)
        names = set(decls)
        header_only, library_only = [], []
        if s.check:
            real = set(read_dynsym_exports(os.path.join(root, s.check)))
            header_only = sorted(names - real)
            library_only = sorted(n for n in real - names if any(n.startswith(p) for p in lib.prefixes))
            names &= real
        types = set()
        for n in names:
            ret, params = decls[n]
            types.add(ret)
            types.update(re.sub(r"\bconst\b|\*|\b\w+$", " ", p).strip() for p in params)
            types.update(p.replace("const", "").replace("*", " ").split()[0] for p in params if p.split())
        enum_paths = paths + [os.path.join(inc, h) for h in ["library_types.h"] + s.enum_headers]
        enums = {k: v for k, v in library_headers.enums(enum_paths, s.defines).items()
                 if k in types or k == lib.status}
        head = [f"# Facts of {s.name}, extracted by {GENERATOR} --refresh-library-facts\n"
                f"# from {', '.join(s.headers)} ({s.source}); do not edit.\n"]
        if s.check:
            head.append(f"# Cross-checked with the .dynsym of NVIDIA's {os.path.basename(s.check)}: names\n"
                        "# the headers declare but the library does not export are left out, names it\n"
                        "# exports that no header declares (internal ones) are not exported.\n")
            if header_only:
                head.append("# Declared, not exported: " + " ".join(header_only) + "\n")
            if library_only:
                head.append(f"# Exported, not declared: {len(library_only)} names, e.g. "
                            + " ".join(library_only[:8]) + "\n")
        body = [f"{decls[n][0]} {n}({', '.join(decls[n][1])});\n" for n in sorted(names)]
        for name in sorted(enums):
            values = " ".join(f"{k}={v}" for k, v in enums[name].items())
            body.append(f"enum {name} {values}\n")
        with open(s.stem + ".decls", "w", encoding="ascii", newline="\n") as f:
            f.write("".join(head + body))
        with open(s.stem + ".exports", "w", encoding="ascii", newline="\n") as f:
            f.write("".join(n + "\n" for n in sorted(names)))
        notes.append(f"{s.name}: {len(names)} names")
    return "; ".join(notes)


_DECL_RE = re.compile(r"(.+?)\b([A-Za-z_]\w*)\((.*)\);$")


def read_facts(lib):
    for s in lib.sonames:
        try:
            with open(s.stem + ".exports", encoding="ascii") as f:
                s.exports = [ln.strip() for ln in f if ln.strip()]
            with open(s.stem + ".decls", encoding="ascii") as f:
                lines = f.readlines()
        except FileNotFoundError as exc:
            raise GenError(f"{exc.filename}: missing; run {GENERATOR} --refresh-library-facts")
        if s.exports != sorted(set(s.exports)):
            raise GenError(f"{s.name}.exports: names must be sorted and unique")
        for ln in lines:
            ln = ln.strip()
            if not ln or ln.startswith("#"):
                continue
            if ln.startswith("enum "):
                words = ln.split()
                values = {k: int(v) for k, _, v in (w.partition("=") for w in words[2:])}
                lib.enums.setdefault(words[1], values)
                s.enums[words[1]] = values
                continue
            m = _DECL_RE.match(ln)
            if not m:
                raise GenError(f"{s.name}.decls: cannot read {ln!r}")
            params = [p.strip() for p in m.group(3).split(", ")] if m.group(3).strip() else []
            s.decls[m.group(2)] = (m.group(1).strip(), params)
        missing = [n for n in s.exports if n not in s.decls]
        if missing:
            raise GenError(f"{s.name}.decls lacks {', '.join(missing[:5])}")


def load_all(names=LIBRARY_FILES):
    """Every library with its facts and its function lines."""
    libs = []
    for name in names:
        lib = read_library(os.path.join(HERE, name))
        read_facts(lib)
        api = api_description.Api(lib.name, " / ".join(s.name for s in lib.sonames), lib.status,
                                  ("stub", "hand", "local", "sync", "async"), api_description.LIBRARY_OPTIONS)
        lib.functions = api_description.read_description(lib.path, lib.exports(), api)
        resolve_attributes(lib)
        libs.append(lib)
    kinds = {}
    for lib in libs:
        for ctype, (_, number) in lib.handles.items():
            if number in kinds:
                raise GenError(f"{lib.rel}: handle kind {number} of {ctype} is also {kinds[number]}'s")
            kinds[number] = ctype
    return libs


def resolve_attributes(lib):
    """Gives each @attribute its descriptor and value from the facts. An
    enumerator the default soname (the library rgpud calls) lacks must be
    `refused`: the server could not set it."""
    if lib.attributes and not lib.descriptors:
        raise GenError(f"{lib.rel}: @attribute lines need @descriptor lines")
    default = next((s for s in lib.sonames if s.default), lib.sonames[-1])
    for a in lib.attributes:
        where = f"{lib.rel}:{a.lineno}"
        for d in lib.descriptors.values():
            for s in lib.sonames:
                if a.enumerator in s.enums.get(d.enum, {}):
                    a.descriptor, a.value = d, s.enums[d.enum][a.enumerator]
            if a.descriptor:
                break
        if a.descriptor is None:
            raise GenError(f"{where}: {a.enumerator} is no enumerator of a descriptor's attributes")
        if a.enumerator not in default.enums.get(a.descriptor.enum, {}) and "refused" not in a.flags:
            raise GenError(f"{where}: {a.enumerator} is not in {default.name}: mark it refused")
        if not 0 <= a.value < 64 or any(b.value == a.value for b in a.descriptor.attributes):
            raise GenError(f"{where}: {a.enumerator}: attribute values must be unique and below 64")
        if not re.fullmatch(r"-?(0x[0-9a-fA-F]+|\d+)", a.default):
            raise GenError(f"{where}: default=<integer>")
        a.descriptor.attributes.append(a)
    for d in lib.descriptors.values():
        for fn_name in (d.create, d.destroy, d.set):
            if fn_name not in default.decls:
                raise GenError(f"{lib.rel}:{d.lineno}: {fn_name} is not in {default.name}")


# --------------------------------------------------------------------------
# Outputs.

def banner(lib):
    return (f"// Generated by {GENERATOR} from {lib.rel} and the facts of\n"
            f"// {', '.join(s.name for s in lib.sonames)} (api/); do not edit.\n")


def _stub(lib, name, code, code_name):
    ret, _ = lib.decl(name)
    report = f"::rgpu::shim::report_unimplemented(\"{name}\", {code}, \"{code_name}\")"
    base = ret.replace("const ", "").strip()
    if ret == lib.status or ret in lib.status_aliases or base in lib.enums and not base.endswith("*"):
        if ret != lib.status and ret not in lib.status_aliases:
            return f"RGPU_SHIM_EXPORT int {name}() noexcept {{ {report}; return 0; }}\n"
        return f"RGPU_SHIM_EXPORT int {name}() noexcept {{ return {report}; }}\n"
    if ret == "void":
        return f"RGPU_SHIM_EXPORT void {name}() noexcept {{ {report}; }}\n"
    if base in _ZERO_RETURNS:
        return f"RGPU_SHIM_EXPORT {base} {name}() noexcept {{ {report}; return 0; }}\n"
    if base in _COMPLEX_RETURNS:
        return (f"RGPU_SHIM_EXPORT Complex<{_COMPLEX_RETURNS[base]}> {name}() noexcept "
                f"{{ {report}; return {{}}; }}\n")
    if base == "char*":
        return (f"RGPU_SHIM_EXPORT const char* {name}() noexcept "
                f"{{ {report}; return \"{name}: not supported by rgpu\"; }}\n")
    if ret.endswith("*") or ret in lib.handles:
        return f"RGPU_SHIM_EXPORT void* {name}() noexcept {{ {report}; return nullptr; }}\n"
    raise GenError(f"{lib.rel}: {name} returns {ret}: no stub can answer it; implement it (hand)")


def emit_stubs(lib):
    if lib.front:
        return None
    implemented = {fn.name for fn in lib.functions if fn.where != "stub"}
    names = [n for n in lib.exports() if n not in implemented]
    if lib.status == "none":
        if names:
            raise GenError(f"{lib.rel}: status=none, yet {', '.join(names[:5])} are not implemented")
        return None
    code = lib.code("not_supported")
    out = [banner(lib),
           f"// One stub per exported {lib.name} name rgpu does not implement: it logs its\n"
           f"// name once and answers {lib.codes['not_supported']} ({code}); a function that\n"
           "// returns no status returns nothing, zero or a constant text. No header is\n"
           "// included on purpose: a stub takes no parameters (the caller's are ignored).\n",
           '#include <cstddef>\n#include <cstdint>\n\n#include "../src/unimplemented.h"\n\n']
    if any(lib.decl(n)[0] in _COMPLEX_RETURNS for n in names):
        out.append("namespace {\ntemplate <class T>\nstruct Complex {  // cuComplex / cuDoubleComplex\n"
                   "  T x, y;\n};\n}  // namespace\n\n")
    out.append('extern "C" {\n\n')
    out += [_stub(lib, n, code, lib.codes["not_supported"]) for n in names]
    out.append('\n}  // extern "C"\n')
    return "".join(out)


def version_nodes(libs):
    """[(node, [names])] for the linker map, each library's default node
    first; and the names NVIDIA exports unversioned (in no node)."""
    nodes, unversioned = [], []
    for lib in libs:
        if lib.front:
            continue
        for s in sorted(lib.sonames, key=lambda s: not s.default):
            if s.node is None:
                unversioned += s.exports
            elif s.default or len(lib.sonames) == 1:
                nodes.append((s.node, list(s.exports)))
            else:
                # Shared names are aliases (emit_aliases); a name the default
                # soname no longer has (cuSOLVER 11's cusolverRf*, gone from
                # 12) is defined under the older node itself.
                default = next(d for d in lib.sonames if d.default)
                nodes.append((s.node, sorted(set(s.exports) - set(default.exports))))
    return nodes, sorted(unversioned)


def older_nodes(lib):
    """{name: [older node, ...]} for the names a library's older sonames share
    with its default one (cublasSgemm_v2@libcublas.so.12 beside
    cublasSgemm_v2@@libcublas.so.13)."""
    default = [s for s in lib.sonames if s.default]
    out = {}
    if not default:
        return out
    for s in lib.sonames:
        if s.default or s.node is None:
            continue
        for n in s.exports:
            if n in default[0].exports:  # the rest are the older node's own (version_nodes)
                out.setdefault(n, []).append(s.node)
    return out


def emit_aliases(libs):
    """The linker script that binds each name an older soname shares with the
    default one to the older node too, as the same code: one entry point
    serves cublasSgemm_v2@@libcublas.so.13 and cublasSgemm_v2@libcublas.so.12
    (as runtime12_aliases.ld does for libcudart.so.12)."""
    out = [f"/* Generated by {GENERATOR} from api/*.api and the\n"
           "   libraries' facts; do not edit. Linker script (an input of librgpu.so's\n"
           "   link): the names a library's older soname shares with its default one,\n"
           "   as versioned aliases of the default one's entry points. */\n"]
    for lib in libs:
        if lib.front:
            continue
        for name, nodes in sorted(older_nodes(lib).items()):
            out += [f'"{name}@{node}" = {name};\n' for node in nodes]
    return "".join(out)


def emit_sonames_cmake(libs):
    names = [s.name for lib in libs if not lib.front for s in lib.sonames]
    return (f"# Generated by {GENERATOR} from api/*.api; do not edit.\n"
            "# The library sonames librgpu.so answers for (a symlink each in lib/rgpu/).\n"
            "set(RGPU_SHIM_LIBRARY_SONAMES\n" + "".join(f"    {n}\n" for n in names) + ")\n"
            "set(RGPU_SHIM_LIBRARY_SOURCES\n"
            + "".join(f"    ${{_rgpu_shim_dir}}/generated/{lib.name}_unimplemented.cpp\n" for lib in libs
                      if lib.status != "none" and not lib.front)
            + "".join(f"    ${{_rgpu_shim_dir}}/generated/{lib.name}_calls.cpp\n" for lib in libs
                      if getattr(lib, "remoted", False))
            + ")\n"
            "set(RGPU_SHIM_LIBRARY_EXPORT_LISTS\n"
            + "".join(f"    ${{_rgpu_api_dir}}/{s.name}.exports\n" for lib in libs if not lib.front
                      for s in lib.sonames)
            + ")\n")


def emit_implemented(libs):
    out = [f"# Generated by {GENERATOR} from api/*.api; do not edit.\n"
           "# The library names rgpu implements (not stubs).\n"]
    for lib in libs:
        if lib.front:
            continue
        out += [f"{fn.name}\n" for fn in sorted(lib.functions, key=lambda f: f.name) if fn.where != "stub"]
    return "".join(out)


def emit_stub_codes(libs):
    """name code, for every stub that answers a status: what tests/shim checks."""
    out = [f"# Generated by {GENERATOR} from api/*.api; do not edit.\n"
           "# <name> <code>: every library stub that returns its library's not-supported status.\n"]
    for lib in libs:
        if lib.status == "none" or lib.front:
            continue
        implemented = {fn.name for fn in lib.functions if fn.where != "stub"}
        code = lib.code("not_supported")
        for n in lib.exports():
            ret = lib.decl(n)[0]
            if n not in implemented and (ret == lib.status or ret in lib.status_aliases):
                out.append(f"{n} {code}\n")
    return "".join(out)


def generate(libs):
    """{path relative to the repository: text} of the libraries' outputs."""
    files = {}
    for lib in libs:
        stubs = emit_stubs(lib)
        if stubs is not None:
            files[f"client-shim/generated/{lib.name}_unimplemented.cpp"] = stubs
    files["client-shim/generated/library_sonames.cmake"] = emit_sonames_cmake(libs)
    files["client-shim/generated/library_implemented.txt"] = emit_implemented(libs)
    files["client-shim/generated/library_aliases.ld"] = emit_aliases(libs)
    files["client-shim/generated/library_stubs.txt"] = emit_stub_codes(libs)
    for lib in libs:
        if lib.front:
            files.update(emit_front(lib))
    return files


def _split_param(text):
    """(type, name) of one parameter: ("const char* const*", "options") from
    "const char* const* options", ("int (*)(void*, void*)", "callback") from
    "int (*callback)(void*, void*)"."""
    text = text.strip()
    m = re.match(r"(.*\(\s*\*\s*)([A-Za-z_]\w*)(\s*\).*)$", text)
    if m:
        return m.group(1) + m.group(3), m.group(2)
    m = re.match(r"(.*?)\b([A-Za-z_]\w*)$", text)
    if not m or not m.group(1).strip():
        raise GenError(f"cannot split parameter {text!r}")
    return m.group(1).strip(), m.group(2)


def emit_front(lib):
    """A front's forwarders (one file for all its sonames) and one linker map
    per soname: every exported name that is not hand-written calls the same
    name in NVIDIA's library, found by rgpu_front_real() (the front's
    hand-written part)."""
    hand = {fn.name for fn in lib.functions if fn.where == "hand"}
    failed = lib.codes["not_supported"]
    out = [banner(lib),
           f"// The {lib.name} front's forwarders: each looks its name up once in\n"
           f"// NVIDIA's library (rgpu_front_real) and calls it; {failed} when that\n"
           "// library or name is missing.\n",
           f'#include <cstddef>\n\n#include <{lib.sonames[-1].headers[0]}>\n\n'
           'extern "C" void* rgpu_front_real(const char* name);\n\n'
           "// The one text a string-returning function answers without its library.\n"
           'static const char kMissing[] = "rgpu: NVIDIA\'s library was not found";\n\n'
           'extern "C" {\n\n']
    for name in lib.exports():
        if name in hand:
            continue
        ret, params = lib.decl(name)
        params = [p.strip() for p in split_top_level(", ".join(params))]  # the facts split inside a callback type too
        split = [_split_param(p) for p in params if p.strip() not in ("void", "")]
        types = ", ".join(t for t, _ in split)
        proto = ", ".join(params)
        args = ", ".join(n for _, n in split)
        fail = "kMissing" if ret.replace(" ", "") == "constchar*" else failed
        out.append(f"__attribute__((visibility(\"default\"))) {ret} {name}({proto}) {{\n"
                   f"  using Fn = {ret} (*)({types});\n"
                   f"  static Fn fn = reinterpret_cast<Fn>(rgpu_front_real(\"{name}\"));\n"
                   f"  if (!fn) return {fail};\n"
                   f"  return fn({args});\n"
                   "}\n\n")
    out.append('}  // extern "C"\n')
    files = {f"client-shim/generated/{lib.name}_front.cpp": "".join(out)}
    for so in lib.sonames:
        body = "".join(f"    {n};\n" for n in so.exports)
        files[f"client-shim/generated/{lib.name}_front_{so.name}.map"] = (
            f"/* Generated by {GENERATOR} from {lib.rel} and {so.name}.exports; do not edit.\n"
            f"   The {so.name} front's exports, in NVIDIA's version node. */\n"
            f"{so.node} {{\n  global:\n{body}  local:\n    *;\n}};\n")
    return files
