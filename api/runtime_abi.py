"""The CUDA runtime's ABI as its headers state it (each exported symbol's
prototype, the types those prototypes reach, CUDART_VERSION), the committed
facts file that keeps CUDA 12's ABI for machines without CUDA 12 headers, and
the comparison of two ABIs that tells which libcudart.so.12 names may share
an implementation with libcudart.so.13 and which may not.

Python 3 standard library only.
"""

import re

from cuda_headers import GenError, Preprocessor, split_params, strip_comments

# Headers that declare exported runtime functions, and headers that define
# the types their parameters use.
FUNCTION_HEADERS = ("cuda_runtime_api.h", "cuda_profiler_api.h", "cuda_gl_interop.h", "cuda_egl_interop.h",
                    "cuda_vdpau_interop.h")
TYPE_HEADERS = ("vector_types.h", "driver_types.h", "surface_types.h", "texture_types.h",
                "library_types.h", "cuda_runtime_api.h")
BASE_DEFINES = {"__LP64__": "1", "__GNUC__": "12", "__linux__": "1"}
IGNORED_WORDS = re.compile(r"\b(?:__device_builtin__|__cudart_builtin__|__host__|__device__|"
                           r"__CUDA_DEPRECATED|CUDARTAPI|CUDARTAPI_CDECL|extern)\b")


class RuntimePreprocessor(Preprocessor):
    """Expands runtime names (cudaMemcpy -> cudaMemcpy_ptds) where they stand."""
    NAME_RE = re.compile(r"\bcu(?:da)?[A-Z]\w*")

    def _eval(self, expr, where):
        # `#if __CUDART_API_VERSION >= 11030`: a macro whose value is another
        # macro's name (CUDART_VERSION) is followed to its number first.
        def follow(m):
            name, seen = m.group(0), set()
            while name in self.macros and self.macros[name][0] is None and name not in seen:
                seen.add(name)
                body = (self.macros[name][1] or "").strip()
                if not re.fullmatch(r"[A-Za-z_]\w*", body):
                    break
                name = body
            return name
        expr = re.sub(r"(?<!defined )(?<!defined\()\b[A-Za-z_]\w*\b", follow, expr)
        return super()._eval(expr, where)


def _norm(text):
    text = IGNORED_WORDS.sub(" ", text)
    text = re.sub(r"__dv\([^()]*\)", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*([*,;(){}\[\]=])\s*", r"\1", text)


class Abi:
    """One runtime's ABI: version, {symbol: (return type, params)} and
    {type name: normalized definition}."""

    def __init__(self, version, functions, types):
        self.version, self.functions, self.types = version, functions, types

    def reached(self, name):
        """The type names a function's prototype reaches, transitively."""
        ret, params = self.functions[name]
        todo = re.findall(r"[A-Za-z_]\w*", ret + " " + params)
        seen = set()
        while todo:
            word = todo.pop()
            if word in seen or word not in self.types:
                continue
            seen.add(word)
            todo += re.findall(r"[A-Za-z_]\w*", self.types[word])
        return seen


def _brace_end(text, at):
    depth = 0
    for i in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise GenError("unbalanced braces")


def _parse_types(text):
    """{name: normalized definition} of the struct/union/enum bodies and the
    typedefs in preprocessed header text."""
    types = {}
    pos = 0
    body_re = re.compile(r"\b(typedef\s+)?(struct|union|enum)\s+(?:__align__\s*\(\s*\d+\s*\)\s*)?(\w*)\s*\{")
    while True:
        m = body_re.search(text, pos)
        if not m:
            break
        end = _brace_end(text, m.end() - 1)
        body = _norm(f"{m.group(2)}{{{text[m.end():end]}}}")
        if m.group(3):
            types.setdefault(m.group(3), body)
        pos = end + 1
        if m.group(1):
            t = re.match(r"\s*([^;{}]*);", text[pos:])
            if t:
                for alias in split_params(t.group(1)):
                    alias = alias.strip()
                    if re.fullmatch(r"\w+", alias):
                        types.setdefault(alias, body if not m.group(3) else f"{m.group(2)} {m.group(3)}")
    for m in re.finditer(r"\btypedef\s+([^;{}()]+?)\s*\b(\w+)\s*;", text):
        types.setdefault(m.group(2), _norm(m.group(1)))
    for m in re.finditer(r"\btypedef\s+([^;{}()]+?)\(\s*\*\s*(\w+)\s*\)\s*\(([^;{}]*)\)\s*;", text):
        types.setdefault(m.group(2), _norm(f"{m.group(1)}(*)({m.group(3)})"))
    return types


def read_headers(include_dir):
    """The ABI the runtime headers in include_dir declare."""
    import os
    path = lambda n: os.path.join(include_dir, n)  # noqa: E731
    if not os.path.exists(path("cuda_runtime_api.h")):
        raise GenError(f"{path('cuda_runtime_api.h')} not found")
    # With __CUDA_API_VERSION_INTERNAL every exported symbol is declared under
    # its own name (cudaMemcpy and cudaMemcpy_ptds, cudaGetDeviceProperties and
    # cudaGetDeviceProperties_v2), as for the driver.
    internal = RuntimePreprocessor(dict(BASE_DEFINES, __CUDA_API_VERSION_INTERNAL="1"))
    functions = {}
    decl_re = re.compile(r"\bextern\s+([\w\s\*]*?)\s*\bCUDARTAPI\s+(\w+)\s*\(")
    for name in FUNCTION_HEADERS:
        if not os.path.exists(path(name)):
            continue
        text = internal.run(path(name))
        for m in decl_re.finditer(text):
            start = m.end() - 1
            depth, i = 0, start
            for i in range(start, len(text)):
                depth += {"(": 1, ")": -1}.get(text[i], 0)
                if depth == 0:
                    break
            params = _norm(text[start + 1:i])
            # The last declaration wins: the internal block at the end of
            # cuda_runtime_api.h redeclares the old variants under their names.
            functions[m.group(2)] = (_norm(m.group(1)), params)
    public = RuntimePreprocessor(dict(BASE_DEFINES))
    types = {}
    for name in TYPE_HEADERS:
        if os.path.exists(path(name)):
            for k, v in _parse_types(IGNORED_WORDS.sub(" ", public.run(path(name)))).items():
                types.setdefault(k, v)
    version = public.macros.get("CUDART_VERSION", (None, ""))[1].strip()
    if not version.isdigit():
        raise GenError(f"{include_dir}: no CUDART_VERSION")
    return Abi(int(version), functions, types)


# --------------------------------------------------------------------------
# The facts file.

def write_facts(abi, exports, source):
    """The committed facts of `abi` for the exported names: their prototypes
    and the types they reach."""
    out = [f"# The CUDA runtime ABI of {source} (CUDART_VERSION {abi.version}), extracted by\n"
           "# api/gen_api.py --extract-cuda12 from its headers; do not edit.\n"
           "# function <name> <return type> (<parameters>) | type <name> <definition>\n",
           f"version {abi.version}\n"]
    reached = set()
    for name in exports:
        if name in abi.functions:
            ret, params = abi.functions[name]
            out.append(f"function {name} {ret} ({params})\n")
            reached |= abi.reached(name)
    out += [f"type {t} {abi.types[t]}\n" for t in sorted(reached)]
    return "".join(out)


def read_facts(path):
    version, functions, types = None, {}, {}
    with open(path, encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            kind, _, rest = line.partition(" ")
            if kind == "version":
                version = int(rest)
            elif kind == "function":
                m = re.fullmatch(r"(\w+) (.*?) ?\((.*)\)", rest)
                if not m:
                    raise GenError(f"{path}:{lineno}: expected 'function <name> <type> (<params>)'")
                functions[m.group(1)] = (m.group(2), m.group(3))
            elif kind == "type":
                name, _, body = rest.partition(" ")
                types[name] = body
            else:
                raise GenError(f"{path}:{lineno}: unknown line {kind!r}")
    if version is None:
        raise GenError(f"{path}: no version line")
    return Abi(version, functions, types)


# --------------------------------------------------------------------------
# Comparison.

def _enum_values(body):
    m = re.fullmatch(r"enum\{(.*)\}", body)
    if not m:
        return None
    values, nxt = {}, 0
    for item in split_params(m.group(1)):
        em = re.fullmatch(r"(\w+)(?:=(.+))?", item.strip())
        if not em:
            return None
        if em.group(2) is not None:
            v = em.group(2).rstrip("uUlL")
            if v in values:
                nxt = values[v]
            else:
                try:
                    nxt = int(v, 0)
                except ValueError:
                    return None
        values[em.group(1)] = nxt
        nxt += 1
    return values


def _type_compatible(old, new):
    """An enum may gain enumerators; anything else must read the same."""
    if old == new:
        return True
    a, b = _enum_values(old), _enum_values(new)
    return a is not None and b is not None and all(b.get(k) == v for k, v in a.items())


def difference(old, new, name):
    """Why `name` in ABI `old` cannot share an implementation with `name` in
    `new`, or None when the headers declare the same thing."""
    if name not in old.functions or name not in new.functions:
        return None  # not declared (__cuda* registration entry points): not compared
    if old.functions[name] != new.functions[name]:
        return "prototype differs"
    changed = sorted(t for t in old.reached(name)
                     if t in new.types and not _type_compatible(old.types[t], new.types[t]))
    gone = sorted(t for t in old.reached(name) if t not in new.types)
    if changed or gone:
        return "type differs: " + ", ".join(changed + gone)
    return None


# --------------------------------------------------------------------------
# A C++ declaration of one of the old ABI's structs.

def members(body):
    """[(declaration, member name)] of a normalized struct body."""
    out = []
    for member in body[len("struct{"):-1].split(";"):
        if member:
            m = re.search(r"(\w+)\s*(?:\[[^\]]*\])*$", member)
            if not m:
                raise GenError(f"cannot name the member {member!r}")
            out.append((member, m.group(1)))
    return out


def emit_struct(abi, name, cxx_name=None):
    """`struct <cxx_name> {...};` with the members the facts give; the member
    types are the current headers' (the caller checks they did not change)."""
    body = abi.types.get(name)
    if not body or not body.startswith("struct{"):
        raise GenError(f"{name}: not a struct in the facts")
    lines = [f"struct {cxx_name or name} {{\n"]
    for member, _ in members(body):
        member = re.sub(r"(\w)\*", r"\1 *", member)
        lines.append(f"  {member};\n")
    lines.append("};\n")
    return "".join(lines)
