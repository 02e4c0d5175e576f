#!/usr/bin/env python3
"""Compiles the kernel corpus to PTX with an NVRTC library (through ctypes),
as CUDA 12.4's compiler front end emits it, for the PTX sweep by toolkit
(docs/ptx-interpreter.md).

  rtc_ptx.py --nvrtc LIB --out DIR --tag TAG [--include DIR]... ARCH... -- FILE.cu...

writes DIR/<stem>.<TAG>_<ARCH>.ptx for every file and architecture (ARCH as
nvcc names it: sm_80 compiles for compute_80). A file that needs a header
this NVRTC cannot find (CUDA's own headers, when no --include gives them) is
not an error: its stem goes to DIR/missing.txt with the reason, and the sweep
leaves it out. Any other compile error fails the run with NVRTC's log.
"""

import argparse
import ctypes
import os
import sys


def load_nvrtc(path):
    # NVRTC opens its builtins library by soname; load it first from the same
    # folder, so that no LD_LIBRARY_PATH (which would pull in a foreign libc
    # when the library lives in another root) is needed.
    folder = os.path.dirname(path)
    for name in sorted(os.listdir(folder)):
        if name.startswith("libnvrtc-builtins.so."):
            ctypes.CDLL(os.path.join(folder, name), mode=ctypes.RTLD_GLOBAL)
            break
    lib = ctypes.CDLL(path)
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    return lib


def compile_one(lib, source, name, options):
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), source, name.encode(), 0, None, None)
    if rc != 0:
        raise RuntimeError(f"nvrtcCreateProgram: {lib.nvrtcGetErrorString(rc).decode()}")
    try:
        opts = (ctypes.c_char_p * len(options))(*[o.encode() for o in options])
        rc = lib.nvrtcCompileProgram(prog, len(options), opts)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetProgramLog(prog, log)
        if rc != 0:
            return None, log.value.decode(errors="replace")
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, ptx)
        return ptx.value, ""
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def main():
    argv = sys.argv[1:]
    if "--" not in argv:
        sys.exit("usage: rtc_ptx.py --nvrtc LIB --out DIR --tag TAG [--include DIR]... ARCH... -- FILE.cu...")
    split = argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--nvrtc", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--tag", required=True)
    parser.add_argument("--include", action="append", default=[])
    parser.add_argument("archs", nargs="+")
    args = parser.parse_args(argv[:split])
    files = argv[split + 1:]
    lib = load_nvrtc(args.nvrtc)
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    os.makedirs(args.out, exist_ok=True)
    shims = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rtc")
    missing = []
    for path in files:
        stem = os.path.splitext(os.path.basename(path))[0]
        with open(path, "rb") as f:
            source = f.read()
        for arch in args.archs:
            options = ["--gpu-architecture=compute_" + arch.split("_")[1], "-std=c++17"]
            options += ["-I" + d for d in args.include + [shims]]
            ptx, log = compile_one(lib, source, os.path.basename(path), options)
            if ptx is None:
                if "cannot open source file" in log or "could not open source file" in log:
                    missing.append(f"{stem} {log.strip().splitlines()[0]}")
                    break
                sys.exit(f"{path} ({arch}): NVRTC {major.value}.{minor.value} failed:\n{log}")
            with open(os.path.join(args.out, f"{stem}.{args.tag}_{arch}.ptx"), "wb") as f:
                f.write(ptx)
    with open(os.path.join(args.out, "missing.txt"), "w") as f:
        f.writelines(m + "\n" for m in missing)
    print(f"NVRTC {major.value}.{minor.value}: {len(files) - len(missing)} of {len(files)} files compiled "
          f"for {', '.join(args.archs)}; left out for want of headers: "
          f"{', '.join(m.split()[0] for m in missing) or 'none'}")


if __name__ == "__main__":
    main()
