"""Reads the CUDA driver API from the toolkit's headers and from a library's
ELF .dynsym, for gen_api.py: a small C preprocessor that follows cuda.h's
conditionals and name macros, the prototypes of every exported symbol, the
PFN typedefs of cudaTypedefs.h and the CUresult values with their comments.

Python 3 standard library only.
"""

import os
import re
import struct


class GenError(Exception):
    """Input the generator cannot make sense of; the message says where."""


# --------------------------------------------------------------------------
# ELF: the exported names of a shared library, read from .dynsym.

def read_dynsym_exports(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF":
        raise GenError(f"{path}: not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise GenError(f"{path}: only 64-bit little-endian ELF is supported")
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(e_shnum):
        off = e_shoff + i * e_shentsize
        (sh_name, sh_type, _flags, _addr, sh_offset, sh_size, sh_link, _info, _align,
         sh_entsize) = struct.unpack_from("<IIQQQQIIQQ", data, off)
        sections.append((sh_type, sh_offset, sh_size, sh_link, sh_entsize))
    SHT_DYNSYM = 11
    names = set()
    for sh_type, sh_offset, sh_size, sh_link, sh_entsize in sections:
        if sh_type != SHT_DYNSYM:
            continue
        str_off = sections[sh_link][1]
        for i in range(sh_size // sh_entsize):
            st_name, st_info, _other, st_shndx, _value, _size = struct.unpack_from(
                "<IBBHQQ", data, sh_offset + i * sh_entsize)
            bind, kind = st_info >> 4, st_info & 0xF
            STB_GLOBAL, STB_WEAK, STT_FUNC, SHN_UNDEF = 1, 2, 2, 0
            if st_shndx == SHN_UNDEF or bind not in (STB_GLOBAL, STB_WEAK) or kind != STT_FUNC:
                continue
            end = data.index(b"\0", str_off + st_name)
            names.add(data[str_off + st_name:end].decode("ascii"))
    if not names:
        raise GenError(f"{path}: no exported functions in .dynsym")
    return sorted(names)


# --------------------------------------------------------------------------
# A small C preprocessor: enough of one to follow cuda.h's conditionals and
# its name macros (#define cuMemAlloc cuMemAlloc_v2, __CUDA_API_PTDS(api)).

_COMMENT_RE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)


def strip_comments(text):
    def repl(m):
        s = m.group(0)
        if s.startswith('"'):
            return s
        return "\n" * s.count("\n") if s.startswith("/*") else ""
    return _COMMENT_RE.sub(repl, text)


class Preprocessor:
    """Keeps macro state across the files it is given, returns active text."""

    # The identifiers expanded where they stand: API function names.
    NAME_RE = re.compile(r"\bcu[A-Z]\w*")

    def __init__(self, defines):
        self.macros = {}  # name -> (params or None, body)
        self.declared = {}  # function name as written -> symbol it declares
        self.inline_functions = set()  # static inline functions defined by the header
        for name, value in defines.items():
            self.macros[name] = (None, value)

    def _eval(self, expr, where):
        def defined(m):
            return " 1 " if (m.group(1) or m.group(2)) in self.macros else " 0 "
        expr = re.sub(r"defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)", defined, expr)

        def ident(m):
            macro = self.macros.get(m.group(0))
            if macro and macro[0] is None and re.fullmatch(r"\s*\d+[uUlL]*\s*", macro[1] or ""):
                return macro[1].strip().rstrip("uUlL")
            return "0"
        expr = re.sub(r"\b[A-Za-z_]\w*\b", ident, expr)
        expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr)
        expr = expr.replace("&&", " and ").replace("||", " or ")
        expr = re.sub(r"!(?!=)", " not ", expr)
        try:
            # Only numbers, operators and parentheses are left at this point.
            return bool(eval(expr, {"__builtins__": {}}, {}))
        except Exception as exc:
            raise GenError(f"{where}: cannot evaluate #if {expr!r}: {exc}")

    def run(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read().replace("\\\n", ""))
        out = []
        stack = []  # (parent_active, branch_taken, active)
        active = True
        for lineno, line in enumerate(text.split("\n"), 1):
            where = f"{os.path.basename(path)}:{lineno}"
            m = re.match(r"\s*#\s*(\w+)\s*(.*)$", line)
            if not m:
                if active:
                    for d in re.finditer(r"\bCUDAAPI\s+(cu\w+)\s*\(", line):
                        self.declared[d.group(1)] = self.expand_name(d.group(1))
                    for d in re.finditer(r"\bstatic\s+inline\s+CUresult\s+(cu\w+)\s*\(", line):
                        self.inline_functions.add(d.group(1))
                # Function names are expanded where they stand, as the
                # compiler would: the same name means different symbols
                # before and after an #undef.
                out.append(self.NAME_RE.sub(lambda n: self.expand_name(n.group(0)), line)
                           if active else "")
                continue
            out.append("")
            d, rest = m.group(1), m.group(2).strip()
            if d in ("if", "ifdef", "ifndef"):
                if d == "if":
                    cond = self._eval(rest, where) if active else False
                elif d == "ifdef":
                    cond = rest.split()[0] in self.macros
                else:
                    cond = rest.split()[0] not in self.macros
                stack.append((active, active and cond, active and cond))
                active = active and cond
            elif d == "elif":
                parent, taken, _ = stack.pop()
                cond = parent and not taken and self._eval(rest, where)
                stack.append((parent, taken or cond, cond))
                active = cond
            elif d == "else":
                parent, taken, _ = stack.pop()
                stack.append((parent, True, parent and not taken))
                active = parent and not taken
            elif d == "endif":
                active = stack.pop()[0]
            elif not active:
                continue
            elif d == "define":
                dm = re.match(r"(\w+)(\(([^)]*)\))?\s*(.*)$", rest)
                params = None
                if dm.group(2):
                    params = [p.strip() for p in dm.group(3).split(",") if p.strip()]
                self.macros[dm.group(1)] = (params, dm.group(4).strip())
            elif d == "undef":
                self.macros.pop(rest.split()[0], None)
        if stack:
            raise GenError(f"{path}: unbalanced #if")
        return "\n".join(out)

    def expand_name(self, name, seen=None):
        """What an identifier becomes after macro expansion (names only).

        A macro is not expanded again inside its own expansion, as in C."""
        seen = set(seen or ())
        while name in self.macros and name not in seen:
            seen.add(name)
            params, body = self.macros[name]
            if params is not None:
                break
            m = re.fullmatch(r"(\w+)\s*\(\s*(\w+)\s*\)", body)
            if m and m.group(1) in self.macros and self.macros[m.group(1)][0]:
                fparams, fbody = self.macros[m.group(1)]
                arg = m.group(2)
                if "##" not in fbody:
                    arg = self.expand_name(arg, seen)
                result = re.sub(r"\b%s\b" % re.escape(fparams[0]), arg, fbody)
                name = re.sub(r"\s*##\s*", "", result).strip()
            elif re.fullmatch(r"\w+", body):
                name = body
            else:
                break
        return name


# --------------------------------------------------------------------------
# Prototypes and types.

_C_TYPE_WORDS = {"const", "volatile", "unsigned", "signed", "int", "char", "short", "long",
                 "float", "double", "void", "struct", "enum", "union"}


def balanced(text, start):
    """Returns (inside, end) of the parenthesised group starting at text[start] == '('."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i], i + 1
    raise GenError("unbalanced parentheses")


def split_top_level(text):
    """Splits `text` at the commas outside brackets; the parts as they are."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        cur += ch
    parts.append(cur)
    return parts


def split_params(params):
    return [p.strip() for p in split_top_level(params) if p.strip()]


class TypeTable:
    """Simple typedef aliases (typedef A B;) so that CUdevice == CUdevice_v1 == int."""

    def __init__(self):
        self.alias = {}

    def learn(self, text):
        for m in re.finditer(r"\btypedef\s+([^;{}()]+?)\s*;", text):
            tokens = tokenize(m.group(1))
            if len(tokens) >= 2 and re.fullmatch(r"[A-Za-z_]\w*", tokens[-1]):
                name = tokens[-1]
                if name in _C_TYPE_WORDS:
                    continue
                self.alias.setdefault(name, tokens[:-1])

    def canon(self, tokens, depth=0):
        out = []
        for t in tokens:
            if t in self.alias and depth < 20:
                out.extend(self.canon(self.alias[t], depth + 1))
            else:
                out.append(t)
        # "unsigned" alone means "unsigned int".
        fixed = []
        for i, t in enumerate(out):
            fixed.append(t)
            if t in ("unsigned", "signed") and (i + 1 == len(out) or out[i + 1] not in
                                                ("int", "char", "short", "long")):
                fixed.append("int")
        return fixed


def tokenize(text):
    return re.findall(r"[A-Za-z_]\w*|\d+|\S", text)


def param_types(params, types):
    """Normalised parameter type list (names dropped, typedefs resolved)."""
    result = []
    plist = split_params(params)
    if plist == ["void"]:
        return ()
    for p in plist:
        p = re.sub(r"\(\s*\*\s*\w+\s*\)", "(*)", p)     # function pointer parameter
        p = re.sub(r"(\w+)\s*\[[^\]]*\]", r"* \1", p)   # array parameter
        tokens = tokenize(p)
        if (len(tokens) > 1 and re.fullmatch(r"[A-Za-z_]\w*", tokens[-1])
                and tokens[-1] not in _C_TYPE_WORDS):
            tokens = tokens[:-1]
        result.append(" ".join(types.canon(tokens)))
    return tuple(result)


def parse_prototypes(text, types):
    """CUresult CUDAAPI name(...); -> {exported symbol: param types}."""
    protos = {}
    for m in re.finditer(r"\bCUresult\s+CUDAAPI\s+(\w+)\s*\(", text):
        params, end = balanced(text, m.end() - 1)
        if not re.match(r"\s*;", text[end:]):
            continue
        symbol = m.group(1)
        sig = param_types(params, types)
        if symbol in protos and protos[symbol] != sig:
            raise GenError(f"cuda.h declares {symbol} twice with different parameters")
        protos[symbol] = sig
    return protos


def parse_prototype_params(text, pattern=r"\bCUresult\s+CUDAAPI\s+(\w+)\s*\("):
    """CUresult CUDAAPI name(...); -> {exported symbol: [(C type as written, name)]}.
    (`pattern` finds the declarations: rgpu's extensions have no CUDAAPI.)

    The type keeps its typedef names (CUstream, CUdeviceptr): the generator
    decides what a parameter is from them. Unnamed parameters are an error
    for the functions a description annotates, so they are kept as None."""
    out = {}
    for m in re.finditer(pattern, text):
        params, end = balanced(text, m.end() - 1)
        if not re.match(r"\s*;", text[end:]):
            continue
        plist = split_params(params)
        if plist == ["void"]:
            plist = []
        named = []
        for p in plist:
            tokens = tokenize(re.sub(r"\(\s*\*\s*(\w+)\s*\)", r"(*) \1", p))
            if (len(tokens) > 1 and re.fullmatch(r"[A-Za-z_]\w*", tokens[-1])
                    and tokens[-1] not in _C_TYPE_WORDS):
                named.append((" ".join(tokens[:-1]).replace("* *", "**"), tokens[-1]))
            else:
                named.append((" ".join(tokens), None))
        out.setdefault(m.group(1), named)
    return out


def _eval_enum_value(expr, known):
    expr = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expr.strip())
    expr = re.sub(r"\b[A-Za-z_]\w*\b", lambda n: str(known[n.group(0)]) if n.group(0) in known else "X", expr)
    if "X" in expr or not re.fullmatch(r"[\d\sxXa-fA-F()+\-*<>|&~]+", expr):
        return None
    try:
        return int(eval(expr, {"__builtins__": {}}, {}))
    except Exception:
        return None


def parse_enums(text):
    """typedef enum X_enum { A = 1, B, ... } X; -> {X: {A: 1, B: 2, ...}}.

    Enums with a value the reader cannot evaluate are left out (no range
    check is generated for them)."""
    enums = {}
    for m in re.finditer(r"\btypedef\s+enum\s+\w*\s*\{([^{}]*)\}\s*(\w+)\s*;", text):
        values, nxt, ok = {}, 0, True
        for item in split_params(m.group(1)):
            em = re.fullmatch(r"\s*(\w+)\s*(?:=\s*(.+))?", item, re.S)
            if not em:
                ok = False
                break
            if em.group(2) is not None:
                v = _eval_enum_value(em.group(2), values)
                if v is None:
                    ok = False
                    break
                nxt = v
            values[em.group(1)] = nxt
            nxt += 1
        # Sentinels are no values a caller may pass: a last, unassigned
        # *_MAX (the count) and the *_FORCE_INT padding of some enums.
        items = split_params(m.group(1))
        if ok and items and re.fullmatch(r"\s*\w+_MAX\s*", items[-1]):
            values.pop(items[-1].strip(), None)
        values = {k: v for k, v in values.items() if "FORCE_INT" not in k and "FORCE_DWORD" not in k}
        if ok and values:
            enums[m.group(2)] = values
    # Aliases of an enum typedef (typedef CUlaunchAttributeID CUstreamAttrID;)
    # take its values.
    for m in re.finditer(r"\btypedef\s+(\w+)\s+(\w+)\s*;", text):
        if m.group(1) in enums and m.group(2) not in enums:
            enums[m.group(2)] = enums[m.group(1)]
    return enums


def parse_pfn_typedefs(text, types):
    """PFN_<api>_v<version>[_ptds|_ptsz] -> list of (api, version, flavor, params)."""
    pfns = []
    for m in re.finditer(r"\btypedef\s+CUresult\s*\(\s*CUDAAPI\s*\*\s*PFN_(\w+)\s*\)\s*\(", text):
        nm = re.fullmatch(r"(cu\w+?)_v(\d+)(?:_(ptds|ptsz))?", m.group(1))
        if not nm:
            raise GenError(f"unexpected typedef name PFN_{m.group(1)}")
        params, _ = balanced(text, m.end() - 1)
        pfns.append((nm.group(1), int(nm.group(2)), nm.group(3) or "", param_types(params, types)))
    return pfns


# --------------------------------------------------------------------------
# The model: what the headers say about every exported name.

class Headers:
    """Prototypes, PFN typedefs, name macros and CUresult values of one toolkit."""

    def __init__(self, cuda_home):
        inc = os.path.join(cuda_home, "include")
        files = {n: os.path.join(inc, n) for n in
                 ("cuda.h", "cudaProfiler.h", "cudaTypedefs.h", "cudaProfilerTypedefs.h")}
        for path in files.values():
            if not os.path.exists(path):
                raise GenError(f"{path} not found (set --cuda-home)")
        base_defines = {"__LP64__": "1", "__GNUC__": "12", "__linux__": "1"}

        # With __CUDA_API_VERSION_INTERNAL every exported symbol is declared,
        # each under its own name (the driver's view of the header).
        internal = Preprocessor(dict(base_defines, __CUDA_API_VERSION_INTERNAL="1"))
        self.types = TypeTable()
        self.prototypes = {}
        self.params = {}  # symbol -> [(C type as written, parameter name)]
        self.enums = {}   # enum typedef -> {enumerator: value}
        for name in ("cuda.h", "cudaProfiler.h"):
            text = internal.run(files[name])
            self.types.learn(text)
            self.prototypes.update(parse_prototypes(text, self.types))
            for sym, named in parse_prototype_params(text).items():
                self.params.setdefault(sym, named)
            self.enums.update(parse_enums(text))
        self.pfns = []
        for name in ("cudaTypedefs.h", "cudaProfilerTypedefs.h"):
            self.pfns += parse_pfn_typedefs(internal.run(files[name]), self.types)
        self.internal_macros = set(internal.macros)

        # What an application's source gets for a name, with and without
        # per-thread default stream.
        self.public = Preprocessor(dict(base_defines))
        self.public.run(files["cuda.h"])
        self.public_ptds = Preprocessor(dict(base_defines, CUDA_API_PER_THREAD_DEFAULT_STREAM="1"))
        self.public_ptds.run(files["cuda.h"])
        self.cuda_version = int(self.public.macros["CUDA_VERSION"][1])

        with open(files["cuda.h"], encoding="utf-8", errors="replace") as f:
            self.errors = parse_cuda_errors(f.read())


def _clean_doc(doc):
    lines = [re.sub(r"^\s*\*+ ?", "", ln).strip() for ln in doc.split("\n")]
    text = " ".join(ln for ln in lines if ln)
    deprecated = "\\deprecated" in text
    text = text.replace("\\deprecated", "")
    text = re.sub(r"\\(p|e|ref|b|c)\s+", "", text)
    text = text.replace("::", "")
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    # First sentence ("e.g." and "i.e." do not end one).
    m = re.search(r"(?<!e\.g)(?<!i\.e)(?<!etc)\.(\s|$)", text)
    sentence = text[:m.start() + 1] if m else text
    sentence = sentence.replace("\\", "").replace('"', "'")
    if deprecated and "deprecated" not in sentence.lower():
        sentence = "Deprecated: " + sentence
    return sentence


def parse_cuda_errors(raw):
    m = re.search(r"typedef\s+enum\s+cudaError_enum\s*\{(.*?)\}\s*CUresult\s*;", raw, re.S)
    if not m:
        raise GenError("cuda.h: CUresult enum not found")
    body = m.group(1)
    errors = []
    pending_doc = None
    token_re = re.compile(r"/\*\*<(.*?)\*/|/\*\*(.*?)\*/|/\*.*?\*/|(CUDA_\w+)\s*=\s*(\d+)\s*,?", re.S)
    for t in token_re.finditer(body):
        if t.group(1) is not None:       # trailing /**< */ doc for the previous value
            if errors and not errors[-1][2]:
                errors[-1] = (errors[-1][0], errors[-1][1], _clean_doc(t.group(1)))
        elif t.group(2) is not None:
            pending_doc = t.group(2)
        elif t.group(3):
            errors.append((t.group(3), int(t.group(4)), _clean_doc(pending_doc) if pending_doc else ""))
            pending_doc = None
    if len(errors) < 50:
        raise GenError(f"cuda.h: only {len(errors)} CUresult values found")
    return errors


# --------------------------------------------------------------------------
# The runtime API (libcudart.so.13): return types and cudaError_t values.

# Headers that declare functions libcudart exports.
RUNTIME_HEADERS = ("cuda_runtime_api.h", "cuda_gl_interop.h", "cuda_egl_interop.h",
                   "cuda_vdpau_interop.h", "cuda_profiler_api.h", "crt/host_runtime.h",
                   "crt/device_functions.h")


def runtime_return_types(cuda_home):
    """{function name: its return type as written} for the runtime headers.

    A generated stub returns an int; that is only right for functions whose
    result is cudaError_t, so the generator needs to know the others."""
    inc = os.path.join(cuda_home, "include")
    out = {}
    decl_re = re.compile(r"\bextern\s+(?:\"C\"\s+)?((?:[\w\*]+\s+|\*\s*)+?)\s*"
                         r"(?:CUDARTAPI|CUDARTAPI_CDECL)\s+(\w+)\s*\(")
    for name in RUNTIME_HEADERS:
        path = os.path.join(inc, name)
        if not os.path.exists(path):
            raise GenError(f"{path} not found (set --cuda-home)")
        with open(path, encoding="utf-8", errors="replace") as f:
            text = strip_comments(f.read())
        for m in decl_re.finditer(text):
            words = [w for w in m.group(1).split()
                     if w not in ("__host__", "__device__", "__cudart_builtin__", "__CUDA_DEPRECATED",
                                  "extern", "CUDARTAPI")]
            out.setdefault(m.group(2), " ".join(words))
    if len(out) < 300:
        raise GenError(f"runtime headers: only {len(out)} prototypes found")
    return out


def parse_runtime_errors(cuda_home):
    """[(name, value, first sentence of its comment)] of enum cudaError."""
    path = os.path.join(cuda_home, "include", "driver_types.h")
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read()
    m = re.search(r"enum\s+__device_builtin__\s+cudaError\s*\{(.*?)\}\s*;", raw, re.S)
    if not m:
        raise GenError(f"{path}: enum cudaError not found")
    errors = []
    pending_doc = None
    token_re = re.compile(r"/\*\*(.*?)\*/|/\*.*?\*/|(cuda\w+)\s*=\s*(\d+)\s*,?", re.S)
    for t in token_re.finditer(m.group(1)):
        if t.group(1) is not None:
            pending_doc = t.group(1)
        elif t.group(2):
            errors.append((t.group(2), int(t.group(3)), _clean_doc(pending_doc) if pending_doc else ""))
            pending_doc = None
    if len(errors) < 50:
        raise GenError(f"{path}: only {len(errors)} cudaError values found")
    return errors
