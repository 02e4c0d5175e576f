"""Reads a CUDA library's headers (cuBLAS, cuDNN, NVML, ...) for
gen_api.py --refresh-library-facts: every function they declare with its
return type and parameters, and the enums. Only that refresh needs the
headers; what it learns is committed (api/<lib>.decls and
lib<lib>.exports), so regenerating and the check need no CUDA 12 headers.

Python 3 standard library only.
"""

import re

from cuda_headers import GenError, Preprocessor, balanced, parse_enums, split_params

# Words of a declaration that are calling conventions, export or deprecation
# markers, not part of the return type.
_MARKERS = re.compile(r"\b(?:CUBLASAPI|CUBLASWINAPI|CUDNNWINAPI|CUDNN_DEPRECATED\w*|CUFFTAPI|CURANDAPI|"
                      r"CUSOLVERAPI|CUSPARSEAPI|CUSPARSE_DEPRECATED\w*|DECLDIR|NVTX_DECLSPEC|NVTX_API|"
                      r"NVML_\w*DEPRECATED\w*|extern|__host__|__device__|CUDARTAPI)\b")

BASE_DEFINES = {"__LP64__": "1", "__GNUC__": "12", "__linux__": "1", "__cplusplus": "201703"}


def normalise(text):
    """One C declaration's text with single blanks and 'T* p' pointers."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"\s*\*\s*", "* ", text)
    text = re.sub(r"\*\s+\*", "**", text)
    text = re.sub(r"\*\s+\*", "**", text)
    text = re.sub(r"\s*,\s*", ", ", text)
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"\s+\)", ")", text)
    return text.replace("* )", "*)").replace("* ,", "*,").strip()


def declarations(paths, prefixes, defines_list):
    """{name: (return type, [parameter text])} of every function declared in
    `paths` whose name starts with one of `prefixes`, under each set of
    defines (NVML declares its old names only with NVML_NO_UNVERSIONED_FUNC_DEFS);
    the first declaration of a name wins."""
    name_re = "|".join(re.escape(p) for p in prefixes)
    found = {}
    for defines in defines_list:
        pp = Preprocessor(dict(BASE_DEFINES, **defines))
        for path in paths:
            text = re.sub(r"\s+", " ", pp.run(path))
            text = re.sub(r'extern "C" \{', ";", text)
            for m in re.finditer(r"(?:(?<=[;{}])|^)\s*([A-Za-z_][\w\s\*]*?)\b((?:%s)\w*)\s*\(" % name_re, text):
                ret = m.group(1)
                if re.search(r"\b(typedef|return|struct|enum|union|static|inline)\b", ret):
                    continue
                try:
                    params, end = balanced(text, m.end() - 1)
                except GenError:
                    continue
                if not re.match(r"\s*;", text[end:]):
                    continue
                ret = normalise(_MARKERS.sub(" ", ret))
                if not ret:
                    raise GenError(f"{path}: {m.group(2)}: no return type")
                plist = [normalise(p) for p in split_params(params)]
                if plist == ["void"]:
                    plist = []
                found.setdefault(m.group(2), (ret, plist))
    return found


def enums(paths, defines_list):
    """{enum typedef: {enumerator: value}} of every header in `paths`."""
    out = {}
    for defines in defines_list:
        pp = Preprocessor(dict(BASE_DEFINES, **defines))
        for path in paths:
            text = re.sub(r"\b\w+_DEPRECATED_ENUM\b", " ", pp.run(path))
            for name, values in parse_enums(text).items():
                out.setdefault(name, values)
            # enum X {...}; typedef enum X Y; (cuRAND, cuFFT's style)
            tagged = parse_enums(re.sub(r"(?<!typedef )\benum\s+(\w+)\s*(\{[^{}]*\})\s*;",
                                        r"typedef enum \1 \2 \1;", text))
            for tag, alias in re.findall(r"\btypedef\s+enum\s+(\w+)\s+(\w+)\s*;", text):
                if tag in tagged:
                    out.setdefault(alias, tagged[tag])
    return out
